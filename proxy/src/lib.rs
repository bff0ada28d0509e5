//! robots-proxy: a Pingora gateway in front of websites that owns
//! `/robots.txt` (validated, last-known-good kept in memory, on disk and,
//! with `database:`, in the database the fleet shares; served while the
//! origin fails), passes everything else through, and
//! knows which crawler is asking. `main.rs` wires these parts into a
//! Pingora server.

pub mod admin;
pub mod ai;
pub mod certs;
pub mod coalesce;
pub mod crawler;
pub mod deadline;
pub mod forwarded;
pub mod framing;
pub mod gate;
pub mod gateway;
pub mod own;
pub use robotsgate_identity as identity;
pub mod journal;
pub mod ledger;
pub mod metrics;
pub mod noted;
pub mod origin;
pub mod pipeline;
pub mod proxied;
pub mod refresh;
pub mod shared;
pub mod store;
pub mod upgrade;
pub mod upstream;
pub mod verify;
mod wrapped;
