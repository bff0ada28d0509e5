-- The gate: changes to a site's robots.txt that a gateway held because they
-- break a pin or the floor, and their releases. One row per site and
-- outcome: `outcome` is the held body's SHA-256 (its revision's `hash`), or
-- `status:NNN` for a status that means "no file". While a row is not
-- released, no gateway takes its body as a good copy from `revisions`; a
-- release (by `robots-monitor release`, the console or the API) lets every
-- gateway of the fleet adopt exactly that outcome at its next refresh.
CREATE TABLE gate_holds (
    site TEXT NOT NULL,
    outcome TEXT NOT NULL,
    status INTEGER,
    breaks TEXT NOT NULL,
    first_held BIGINT NOT NULL,
    last_held BIGINT NOT NULL,
    released_at BIGINT,
    released_by TEXT,
    PRIMARY KEY (site, outcome)
);
