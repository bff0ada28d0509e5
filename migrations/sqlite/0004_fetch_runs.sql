-- Fetches grow with changes, not with polls: a row is a run of identical
-- outcomes (same status, error, revision, redirects and truncation), from
-- `at` to `last_at`, `polls` long. What people read per day (Search Console
-- keeps 30 days: how many fetches, which statuses, the slowest) is kept in
-- `fetch_days`, one row per site, UTC day and outcome.
ALTER TABLE fetches ADD COLUMN last_at BIGINT;
ALTER TABLE fetches ADD COLUMN polls BIGINT NOT NULL DEFAULT 1;
ALTER TABLE fetches ADD COLUMN max_latency_ms BIGINT;
UPDATE fetches SET last_at = at, max_latency_ms = latency_ms;
-- The site's current run, so a poll lengthens it without looking it up.
ALTER TABLE sites ADD COLUMN run_id BIGINT;
ALTER TABLE sites ADD COLUMN run_key TEXT;

CREATE TABLE fetch_days (
    site           TEXT NOT NULL,
    day            BIGINT NOT NULL,
    outcome        TEXT NOT NULL,
    fetches        BIGINT NOT NULL,
    max_latency_ms BIGINT NOT NULL,
    PRIMARY KEY (site, day, outcome)
);
INSERT INTO fetch_days (site, day, outcome, fetches, max_latency_ms)
    SELECT site, at / 86400000, COALESCE(CAST(status AS TEXT), error, 'error'), COUNT(*), MAX(latency_ms)
    FROM fetches GROUP BY site, at / 86400000, COALESCE(CAST(status AS TEXT), error, 'error');
