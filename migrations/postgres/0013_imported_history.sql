-- History from before monitoring: a site's robots.txt as it stood at
-- earlier times, imported from where people keep it (a git repository, a
-- folder of dated copies, the Internet Archive). Each state carries its
-- source. The compliance timeline takes them before the site's first
-- monitored state; the monitor's own states stand from then on.
CREATE TABLE imported_states (
    site TEXT NOT NULL,
    at BIGINT NOT NULL,
    revision_id BIGINT,
    status INTEGER,
    source TEXT NOT NULL,
    PRIMARY KEY (site, at)
);
-- Per log file: the time before which its requests were judged with no
-- known state (unjudged). A later import of history moves the timeline's
-- start back, and the next import of the file judges those requests again.
ALTER TABLE log_files ADD COLUMN unjudged_before BIGINT;
