-- One `violation` alert per (site, crawler, identity answer, deciding rule,
-- UTC day): the row is claimed before the alert is queued, in the same
-- transaction, so monitors sharing the database raise it once. The alert
-- it queued has `state_id` = -id (alerts are keyed by state and kind; a
-- violation belongs to no state, and real state ids are positive).
CREATE TABLE violation_alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    crawler TEXT NOT NULL,
    identity TEXT NOT NULL,
    revision_id BIGINT NOT NULL,
    line BIGINT NOT NULL,
    status BIGINT NOT NULL,
    day BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (site, crawler, identity, revision_id, line, status, day)
);
