-- An outage that outlasts `critical_after` gets one critical alert: the
-- monitor that sets `escalated_at` (only while it is NULL) queues it, so
-- monitors sharing the database escalate a state once.
ALTER TABLE states ADD COLUMN escalated_at BIGINT;
-- A state now has up to two alerts: its change, and its escalation. The
-- key that allowed one alert per state becomes one per state and kind.
ALTER TABLE alerts ADD COLUMN kind TEXT NOT NULL DEFAULT 'change';
ALTER TABLE alerts DROP CONSTRAINT alerts_state_id_key;
ALTER TABLE alerts ADD CONSTRAINT alerts_state_kind UNIQUE (state_id, kind);
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
