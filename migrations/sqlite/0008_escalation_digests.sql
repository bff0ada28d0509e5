-- An outage that outlasts `critical_after` gets one critical alert: the
-- monitor that sets `escalated_at` (only while it is NULL) queues it, so
-- monitors sharing the database escalate a state once.
ALTER TABLE states ADD COLUMN escalated_at BIGINT;
-- A state now has up to two alerts: its change, and its escalation. The
-- key that allowed one alert per state becomes one per state and kind;
-- SQLite changes a constraint by rebuilding the table.
CREATE TABLE alerts_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    site            TEXT NOT NULL,
    state_id        BIGINT NOT NULL,
    kind            TEXT NOT NULL DEFAULT 'change',
    created_at      BIGINT NOT NULL,
    subject         TEXT NOT NULL,
    body_text       TEXT NOT NULL,
    body_html       TEXT NOT NULL,
    sent_at         BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    severity        TEXT NOT NULL DEFAULT 'warning',
    UNIQUE (state_id, kind)
);
INSERT INTO alerts_new (id, site, state_id, created_at, subject, body_text, body_html, sent_at, attempts, next_attempt_at, last_error, severity)
    SELECT id, site, state_id, created_at, subject, body_text, body_html, sent_at, attempts, next_attempt_at, last_error, severity FROM alerts;
DROP TABLE alerts;
ALTER TABLE alerts_new RENAME TO alerts;
CREATE INDEX alerts_pending ON alerts (sent_at, next_attempt_at);
CREATE INDEX alerts_site ON alerts (site, sent_at);
-- A digest channel's daily message: one row per channel and day, inserted
-- by whichever monitor gets there first (the key makes a second insert
-- impossible), then claimed, sent and retried like a delivery. It covers
-- the alerts created in [window_from, window_to).
CREATE TABLE digests (
    channel         TEXT NOT NULL,
    day             BIGINT NOT NULL,
    window_from     BIGINT NOT NULL,
    window_to       BIGINT NOT NULL,
    sent_at         BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    PRIMARY KEY (channel, day)
);
CREATE INDEX alerts_created ON alerts (created_at);
