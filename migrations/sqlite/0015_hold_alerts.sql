-- The hold raises the alert. A gateway's hold (a `gate_holds` row) gives
-- one critical alert and its end one resolved notice, whichever monitor of
-- a fleet sees it first, and whether or not any monitor polled the change.
--
-- A hold ends when a release lets it through (`released_at`) or when the
-- gateway stops holding it for another reason (`ended_at`, `ended_why`:
-- the origin serves a file that breaks nothing, or the good copy outlived
-- max_staleness). The same outcome held again after it ended is a new
-- episode, and a new alert.
ALTER TABLE gate_holds ADD COLUMN ended_at BIGINT;
ALTER TABLE gate_holds ADD COLUMN ended_why TEXT;
ALTER TABLE gate_holds ADD COLUMN episode BIGINT NOT NULL DEFAULT 0;
-- The sentence the alert opens with, as the gateway judged it.
ALTER TABLE gate_holds ADD COLUMN summary TEXT;
-- One row per alert raised for a hold: claimed in the transaction that
-- queues the alert (its `alerts.state_id` is -id, kind `hold`; the
-- resolved notice is kind `hold-resolved`), so a monitor killed at any
-- moment neither loses nor doubles it. A monitor that polled the held
-- change itself claims the same row, so its own alert is the hold's.
CREATE TABLE gate_alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    outcome TEXT NOT NULL,
    episode BIGINT NOT NULL,
    raised_at BIGINT NOT NULL,
    resolved_at BIGINT,
    UNIQUE (site, outcome, episode)
);
