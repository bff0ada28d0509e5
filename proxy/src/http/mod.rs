//! HTTP plumbing, knowing nothing of robots.txt or crawlers: where a
//! message body ends, what the origin is told of the client, deadlines,
//! the PROXY protocol, stream wrappers for Pingora, keep-alive connections
//! to origins, and the certificates a TLS listener serves.

pub mod certs;
pub mod coalesce;
pub mod deadline;
pub mod forwarded;
pub mod framing;
pub mod noted;
pub mod proxied;
pub mod upstream;
pub(crate) mod wrapped;
