-- The compliance ledger: what crawlers did, judged against the robots.txt
-- each could hold. Rows grow with distinct facts, never with requests: one
-- row per (site, crawler, identity answer, revision, deciding line, status,
-- class, UTC day) holds a count, the first and last time and up to five
-- sample URLs. `revision_id`, `line` and `status` are 0 when absent, so the
-- key has no NULLs.
CREATE TABLE ledger (
    site TEXT NOT NULL,
    crawler TEXT NOT NULL,
    identity TEXT NOT NULL,
    revision_id BIGINT NOT NULL,
    line BIGINT NOT NULL,
    status BIGINT NOT NULL,
    class TEXT NOT NULL,
    day BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    stale BIGINT NOT NULL,
    first_at BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    samples TEXT NOT NULL,
    sample_count BIGINT NOT NULL,
    PRIMARY KEY (site, crawler, identity, revision_id, line, status, class, day)
);
CREATE INDEX ledger_site_day ON ledger (site, day);

-- Per site and crawler: its last robots.txt fetch, and what it got.
CREATE TABLE crawler_reads (
    site TEXT NOT NULL,
    crawler TEXT NOT NULL,
    at BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    revision_id BIGINT NOT NULL,
    status BIGINT NOT NULL,
    PRIMARY KEY (site, crawler)
);

-- Access logs imported: each file by the hash of its first bytes (so a
-- rotated or compressed copy is the same file), and how far it was read,
-- written in the same transaction as the ledger rows it produced.
CREATE TABLE log_files (
    site TEXT NOT NULL,
    file_id TEXT NOT NULL,
    path TEXT NOT NULL,
    read_bytes BIGINT NOT NULL,
    lines BIGINT NOT NULL,
    judged BIGINT NOT NULL,
    not_http BIGINT NOT NULL,
    malformed BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (site, file_id)
);

-- A sample of the lines an import could not read, with their numbers.
CREATE TABLE log_bad_lines (
    site TEXT NOT NULL,
    file_id TEXT NOT NULL,
    line_no BIGINT NOT NULL,
    reason TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (site, file_id, line_no)
);
