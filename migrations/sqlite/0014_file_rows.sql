-- What each imported access log added to the ledger, row by row, written
-- in the same transaction as the ledger rows: `ingest --forget FILE`
-- subtracts a file's counts and forgets how far it was read, so the file
-- can be imported again (with the right --format, say) and nothing is
-- counted twice. Pruned with the ledger, by day.
CREATE TABLE log_file_rows (
    site TEXT NOT NULL,
    file_id TEXT NOT NULL,
    crawler TEXT NOT NULL,
    identity TEXT NOT NULL,
    revision_id BIGINT NOT NULL,
    line BIGINT NOT NULL,
    status BIGINT NOT NULL,
    class TEXT NOT NULL,
    day BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    stale BIGINT NOT NULL,
    PRIMARY KEY (site, file_id, crawler, identity, revision_id, line, status, class, day)
);
CREATE INDEX log_file_rows_day ON log_file_rows (day);
