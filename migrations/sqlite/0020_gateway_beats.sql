-- Gateways alive on this database, per site each fronts: a gateway writes
-- its row every `proxy.fleet.heartbeat`, and each site's crawl budgets are
-- shared among the gateways heard from within `proxy.fleet.dead_after`.
-- `seen_at` is the writer's clock (Unix ms); a fleet's clocks must agree
-- to well within `dead_after` (NTP does). Rows of gateways gone for a day
-- are deleted by whichever gateway beats next.
CREATE TABLE gateway_beats (
    gateway TEXT NOT NULL,
    site TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    PRIMARY KEY (gateway, site)
);
CREATE INDEX gateway_beats_by_site ON gateway_beats (site, seen_at);
