-- The sitemaps a site's robots.txt names, checked against it (issue #62).
-- One row per check whose outcome differed from the one before (a new
-- robots.txt revision, a sitemap that changed, other conflicts); an
-- unchanged check only moves the latest row's checked_at. Counts, the
-- conflicts with their deciding lines and a few sample URLs, and each
-- file's hash and validators are kept; never every URL.
CREATE TABLE sitemap_checks (
    id            BIGSERIAL PRIMARY KEY,
    site          TEXT NOT NULL,
    at            BIGINT NOT NULL,
    robots_hash   TEXT NOT NULL,
    state         TEXT NOT NULL,
    listed        BIGINT NOT NULL,
    closed        BIGINT NOT NULL,
    complete      BIGINT NOT NULL,
    conflicts     TEXT NOT NULL,
    files         TEXT NOT NULL,
    trouble_since BIGINT,
    checked_at    BIGINT NOT NULL
);
CREATE INDEX sitemap_checks_site ON sitemap_checks (site, id);
-- One row per episode of conflicts that alerted, claimed in the
-- transaction that queues the alert (`alerts.state_id` = -id, kind
-- `sitemap`; its end is kind `sitemap-resolved`), so monitors sharing a
-- database raise it once; one episode of a site open at a time.
CREATE TABLE sitemap_alerts (
    id          BIGSERIAL PRIMARY KEY,
    site        TEXT NOT NULL,
    episode     BIGINT NOT NULL,
    raised_at   BIGINT NOT NULL,
    resolved_at BIGINT,
    UNIQUE (site, episode)
);
CREATE UNIQUE INDEX sitemap_alerts_open ON sitemap_alerts (site) WHERE resolved_at IS NULL;
