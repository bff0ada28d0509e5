//! The monitor's core: keeps every robots.txt revision in SQL, re-tests
//! saved URL sets against every change with the `rules` engine, holds and
//! releases the gate's changes, and alerts through its channels when
//! crawling would change. The compliance ledger (`ledger`) and the web
//! console (`console`) are crates of their own over this one; the
//! `robots-monitor` binary (its own package) is the command line over all
//! three, and tests drive the steps here directly.

pub mod batch;
pub mod change;
pub mod channels;
pub mod clock;
pub mod counters;
pub mod digest;
pub mod excerpt;
pub mod holds;
pub mod import_history;
pub mod letter;
pub mod links;
pub mod mail;
pub mod metrics;
pub mod monitor;
pub mod overview;
pub mod places;
pub mod release;
pub mod report;
pub mod sitemaps;
pub mod store;
pub mod watch;
pub mod words;

pub use monitor::{Monitor, PollOutcome};
/// Fetching, shared with the gateway.
pub use robotsgate_fetch as source;
