-- When each revision was last fetched as the file a site served, so a
-- gateway starting during an outage can pick the newest good copy (a site
-- that goes A -> B -> A serves A again, which `first_seen` cannot tell).
ALTER TABLE revisions ADD COLUMN last_seen BIGINT;
UPDATE revisions SET last_seen = first_seen;
CREATE INDEX revisions_site_last_seen ON revisions (site, last_seen);
