-- Every other place crawlers look for a site's robots.txt (issue #61): its
-- host variants (`https://www.shop.example`) and the edge (a cache's
-- public copy against the origin's), each judged by rules::coverage.
--
-- `places`: the current judgement of each place. `state` changes when
-- what the place serves or its findings change; `trouble_since` is when
-- its findings began (NULL when it is what it must be), the start of the
-- episode that alerts once its grace is over.
CREATE TABLE places (
    site          TEXT NOT NULL,
    place         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    must          TEXT NOT NULL,
    state         TEXT NOT NULL,
    serves        TEXT NOT NULL,
    summary       TEXT NOT NULL,
    findings      TEXT NOT NULL,
    flips         TEXT NOT NULL,
    status        BIGINT,
    hops          BIGINT NOT NULL,
    body_hash     TEXT,
    origin_hash   TEXT,
    cache         TEXT NOT NULL,
    since         BIGINT NOT NULL,
    trouble_since BIGINT,
    checked_at    BIGINT NOT NULL,
    PRIMARY KEY (site, place)
);
-- Every state a place left, from when it began (`at`); the current one is
-- its `places` row.
CREATE TABLE place_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    site        TEXT NOT NULL,
    place       TEXT NOT NULL,
    at          BIGINT NOT NULL,
    state       TEXT NOT NULL,
    summary     TEXT NOT NULL,
    findings    TEXT NOT NULL,
    status      BIGINT,
    body_hash   TEXT,
    origin_hash TEXT,
    cache       TEXT NOT NULL
);
CREATE INDEX place_events_by_site ON place_events (site, place, at);
-- The bodies places served that are not the site's own revisions: a
-- variant's file of its own, the origin's copy behind an edge.
CREATE TABLE place_bodies (
    site       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    body       BLOB NOT NULL,
    first_seen BIGINT NOT NULL,
    PRIMARY KEY (site, hash)
);
-- One row per episode that alerted: claimed in the transaction that
-- queues the alert (`alerts.state_id` = -id, kind `place`; the resolved
-- notice is kind `place-resolved`), so monitors sharing a database raise
-- it once. At most one episode of a place is open at a time (the partial
-- index): a monitor that judged the place from an older read, and so
-- dated the episode otherwise, cannot open a second one beside it.
CREATE TABLE place_alerts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    site        TEXT NOT NULL,
    place       TEXT NOT NULL,
    episode     BIGINT NOT NULL,
    raised_at   BIGINT NOT NULL,
    resolved_at BIGINT,
    UNIQUE (site, place, episode)
);
CREATE UNIQUE INDEX place_alerts_open ON place_alerts (site, place) WHERE resolved_at IS NULL;
