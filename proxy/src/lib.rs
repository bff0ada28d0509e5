//! robots-proxy: a Pingora gateway in front of websites that owns
//! `/robots.txt` (validated, last-known-good kept in memory, on disk and,
//! with `database:`, in the database the fleet shares; served while the
//! origin fails), passes everything else through, and
//! knows which crawler is asking. `main.rs` wires these parts into a
//! Pingora server.

pub mod admin;
pub mod crawlers;
pub mod gateway;
pub mod http;
pub use robotsgate_identity as identity;
pub mod metrics;
pub mod origin;
pub mod own;
pub mod pipeline;
pub mod robots;
pub mod upgrade;
