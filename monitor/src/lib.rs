//! robots-monitor: keeps every robots.txt revision in SQL, re-tests saved
//! URL sets against every change with the `rules` engine, and emails when
//! crawling would change. `main.rs` is the command line; this library holds
//! the steps, so tests can drive them too.

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
pub mod release;
pub mod report;
pub mod store;
pub mod watch;
pub mod words;

pub use monitor::{Monitor, PollOutcome};
/// Fetching, shared with the gateway.
pub use robotsgate_fetch as source;
