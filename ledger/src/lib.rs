//! The compliance ledger: access logs imported and judged
//! (`robots-monitor ingest`), against the site's history of served
//! outcomes ([`timeline`]), into rows that grow with distinct facts, never
//! with requests ([`ledger`]); and the report of what each crawler did
//! (`robots-monitor compliance`). The judgement itself is
//! `robotsgate-compliance`'s, the same the gateway would make.

use monitor::store::Store;
use robotsgate_config::Config;
use robotsgate_crawlers::Catalogue;

pub mod alerts;
pub mod ingest;
pub mod ledger;
pub mod prefetch;
pub mod report;
pub mod tail;
pub mod timeline;

/// What the ledger needs from the program it runs in: the database, the
/// config, and the crawler catalogue. The monitor is one such host; the
/// ledger never reaches for the rest of it (polling, mail, holds).
pub trait Host: Send + Sync {
    /// The database the ledger's rows live in.
    fn store(&self) -> &Store;
    /// The loaded config: sites, their logs, retention, verification.
    fn config(&self) -> &Config;
    /// The crawlers the ledger names requests by.
    fn catalogue(&self) -> &Catalogue;
    /// The configured site of this name.
    fn site(&self, name: &str) -> Option<&robotsgate_config::Site> {
        self.config().site(name)
    }
}

impl Host for monitor::Monitor {
    fn store(&self) -> &Store {
        monitor::Monitor::store(self)
    }
    fn config(&self) -> &Config {
        monitor::Monitor::config(self)
    }
    fn catalogue(&self) -> &Catalogue {
        monitor::Monitor::catalogue(self)
    }
}

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
pub fn upkeep(m: &std::sync::Arc<dyn Host>) -> tokio::task::JoinHandle<()> {
    let m = std::sync::Arc::clone(m);
    tokio::spawn(async move {
        let mut pruned: Option<std::time::Instant> = None;
        loop {
            if let Err(e) = alerts::raise(&*m).await {
                tracing::error!("raising violation alerts: {e:#}");
            }
            if pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                pruned = Some(std::time::Instant::now());
                if let Err(e) = ingest::prune(&*m).await {
                    tracing::error!("pruning the compliance ledger: {e:#}");
                }
            }
            tokio::time::sleep(RAISE_EVERY).await;
        }
    })
}
