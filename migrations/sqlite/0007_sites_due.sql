-- The scheduler asks for the sites due next on every round; at 100,000
-- sites a scan of the table per round was the daemon's ceiling.
CREATE INDEX sites_due ON sites (next_poll_at);
