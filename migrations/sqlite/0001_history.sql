-- The monitor's history (SQLite). Times are Unix milliseconds; flags are 0/1.
-- Keep in step with ../postgres/0001_history.sql: the same code runs on both.

-- One row per configured site: scheduling, leases and the current state.
CREATE TABLE sites (
    name          TEXT PRIMARY KEY,
    next_poll_at  BIGINT NOT NULL DEFAULT 0,
    leased_until  BIGINT NOT NULL DEFAULT 0,
    leased_by     TEXT,
    etag          TEXT,
    last_modified TEXT,
    state_id      BIGINT,
    state_key     TEXT
);

-- Every distinct robots.txt body a site has served, kept forever.
CREATE TABLE revisions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    site       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    body       BLOB NOT NULL,
    size       BIGINT NOT NULL,
    first_seen BIGINT NOT NULL,
    UNIQUE (site, hash)
);

-- Every fetch, successful or not; pruned by `fetch_retention`.
CREATE TABLE fetches (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    site        TEXT NOT NULL,
    at          BIGINT NOT NULL,
    status      BIGINT,
    error       TEXT,
    latency_ms  BIGINT NOT NULL,
    redirects   BIGINT NOT NULL,
    truncated   BIGINT NOT NULL,
    revision_id BIGINT
);
CREATE INDEX fetches_site_at ON fetches (site, at);

-- Every change of what crawlers obey: a new revision, or a status that
-- changes the policy (200 -> 503 -> 200).
CREATE TABLE states (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    site        TEXT NOT NULL,
    at          BIGINT NOT NULL,
    state_key   TEXT NOT NULL,
    revision_id BIGINT,
    policy      TEXT NOT NULL,
    reason      TEXT
);
CREATE INDEX states_site_at ON states (site, at);

-- The verdict of every saved URL x crawler in every state.
CREATE TABLE verdicts (
    state_id BIGINT NOT NULL,
    url      TEXT NOT NULL,
    agent    TEXT NOT NULL,
    allowed  BIGINT NOT NULL,
    line     BIGINT,
    rule     TEXT,
    PRIMARY KEY (state_id, url, agent)
);

-- The outbox: written in the same transaction as the state it reports.
CREATE TABLE alerts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    site            TEXT NOT NULL,
    state_id        BIGINT NOT NULL UNIQUE,
    created_at      BIGINT NOT NULL,
    subject         TEXT NOT NULL,
    body_text       TEXT NOT NULL,
    body_html       TEXT NOT NULL,
    sent_at         BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT
);
CREATE INDEX alerts_pending ON alerts (sent_at, next_attempt_at);
