-- Alerts carry a severity, and reach webhook and Slack channels through
-- the same outbox as mail: one delivery row per alert and channel, written
-- in the transaction that queues the alert, retried until sent.
ALTER TABLE alerts ADD COLUMN severity TEXT NOT NULL DEFAULT 'warning';
CREATE TABLE deliveries (
    alert_id        BIGINT NOT NULL,
    channel         TEXT NOT NULL,
    sent_at         BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    PRIMARY KEY (alert_id, channel)
);
CREATE INDEX deliveries_due ON deliveries (sent_at, next_attempt_at);
