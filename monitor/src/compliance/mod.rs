//! The compliance ledger in the monitor: access logs imported and judged
//! (`robots-monitor ingest`), against the site's history of served
//! outcomes ([`timeline`]), into rows that grow with distinct facts, never
//! with requests ([`ledger`]); and the report of what each crawler did
//! (`robots-monitor compliance`). The judgement itself is
//! `robotsgate-compliance`'s, the same the gateway would make.

pub mod alerts;
pub mod ingest;
pub mod ledger;
pub mod report;
pub mod tail;
pub mod timeline;

/// Milliseconds in a UTC day: the ledger's rows are per day.
pub const DAY_MS: i64 = 86_400_000;
