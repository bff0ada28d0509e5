-- Each state names the state it follows (0 before a site's first), and no
-- two states of one site may follow the same state. Of several monitors that
-- observe one change, exactly one can record it: the others' inserts hit
-- this key inside their transaction and roll back with their alert.
ALTER TABLE states ADD COLUMN previous_id BIGINT;
UPDATE states SET previous_id = COALESCE(
    (SELECT MAX(p.id) FROM states p WHERE p.site = states.site AND p.id < states.id), 0);
CREATE UNIQUE INDEX states_site_previous ON states (site, previous_id);
