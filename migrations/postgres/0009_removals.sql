-- When each site's origin last said it has no robots.txt (a 4xx: every
-- URL allowed). A revision last seen before that is no good copy any more:
-- a gateway that restarts during a later outage, or another replica, must
-- not bring a deleted file back from the shared revisions.
CREATE TABLE removals (
    site TEXT PRIMARY KEY,
    at BIGINT NOT NULL,
    status INTEGER NOT NULL
);
