//! The compliance ledger in the monitor: access logs imported and judged
//! (`robots-monitor ingest`), against the site's history of served
//! outcomes ([`timeline`]), into rows that grow with distinct facts, never
//! with requests ([`ledger`]); and the report of what each crawler did
//! (`robots-monitor compliance`). The judgement itself is
//! `robotsgate-compliance`'s, the same the gateway would make.

pub mod alerts;
pub mod ingest;
pub mod ledger;
pub mod prefetch;
pub mod report;
pub mod tail;
pub mod timeline;

/// Milliseconds in a UTC day: the ledger's rows are per day.
pub const DAY_MS: i64 = 86_400_000;

/// A UTC day (days since 1970-01-01) as `YYYY-MM-DD`.
pub fn date_of_day(day: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(day.max(0) * 86_400).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()[..10].to_string()
}

/// How often the daemon raises violation alerts from the ledger.
const RAISE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);
/// How often it applies the ledger's retention.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// The daemon's upkeep of the ledger, until aborted: violations its
/// writers (gateways, tails, imports) recorded become `violation` alerts,
/// and rows past `compliance_retention` go (gateways write to the ledger
/// without any import, so retention cannot wait for one).
pub fn upkeep(m: &std::sync::Arc<crate::monitor::Monitor>) -> tokio::task::JoinHandle<()> {
    let m = std::sync::Arc::clone(m);
    tokio::spawn(async move {
        let mut pruned: Option<std::time::Instant> = None;
        loop {
            if let Err(e) = alerts::raise(&m).await {
                tracing::error!("raising violation alerts: {e:#}");
            }
            if pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                pruned = Some(std::time::Instant::now());
                if let Err(e) = ingest::prune(&m).await {
                    tracing::error!("pruning the compliance ledger: {e:#}");
                }
            }
            tokio::time::sleep(RAISE_EVERY).await;
        }
    })
}
