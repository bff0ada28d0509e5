-- The console counts each site's undelivered alerts on every listing.
CREATE INDEX alerts_site ON alerts (site, sent_at);
