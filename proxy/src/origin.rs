//! Where a site's origin is, for proxied requests.
//!
//! Pingora's `HttpPeer::new` resolves a `host:port` with the blocking system
//! resolver on every call and panics when the name does not resolve. The
//! gateway instead resolves names here: asynchronously, at most once per
//! [`TTL`] per site, and through a DNS failure it keeps using the last
//! address that worked, so a resolver outage does not take sites down and no
//! request waits on a blocking lookup. An address literal is parsed once.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a resolved address is used before the name is looked up again.
pub const TTL: Duration = Duration::from_secs(30);
/// A lookup that takes longer counts as failed.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// A site's origin `host:port` and what it last resolved to.
#[derive(Debug)]
pub struct Origin {
    spec: String,
    literal: Option<SocketAddr>,
    /// The last address a lookup returned, and when the name was last
    /// looked up (successfully or not).
    resolved: Mutex<Option<(SocketAddr, Instant)>>,
}

impl Origin {
    /// An origin as configured: `host:port` or `ip:port`.
    pub fn new(spec: &str) -> Origin {
        Origin { spec: spec.to_string(), literal: spec.parse().ok(), resolved: Mutex::new(None) }
    }

    /// The address to connect to. Errors only when the name has never
    /// resolved; the message names the origin and the cause.
    pub async fn addr(&self) -> Result<SocketAddr, String> {
        if let Some(addr) = self.literal {
            return Ok(addr);
        }
        let last = *self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((addr, at)) = last
            && at.elapsed() < TTL
        {
            return Ok(addr);
        }
        let looked_up = match tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host(&self.spec)).await {
            Ok(Ok(mut addrs)) => addrs.next().ok_or_else(|| "the name has no addresses".to_string()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {LOOKUP_TIMEOUT:?}")),
        };
        let mut slot = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        match (looked_up, last) {
            (Ok(addr), _) => {
                *slot = Some((addr, Instant::now()));
                Ok(addr)
            }
            (Err(e), Some((addr, _))) => {
                tracing::warn!(origin = %self.spec, error = %e, %addr, "origin lookup failed; using the last address");
                // Try the name again only after another TTL.
                *slot = Some((addr, Instant::now()));
                Ok(addr)
            }
            (Err(e), None) => Err(format!("origin {} does not resolve: {e}", self.spec)),
        }
    }

    #[cfg(test)]
    fn remember(&self, addr: SocketAddr, at: Instant) {
        *self.resolved.lock().unwrap() = Some((addr, at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn literals_are_not_looked_up() {
        let o = Origin::new("127.0.0.1:8080");
        assert_eq!(o.addr().await.unwrap(), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(Origin::new("[::1]:80").addr().await.unwrap(), "[::1]:80".parse().unwrap());
    }

    #[tokio::test]
    async fn a_name_that_never_resolved_is_an_error_naming_it() {
        let err = Origin::new("nonexistent.invalid:80").addr().await.unwrap_err();
        assert!(err.contains("nonexistent.invalid:80"), "{err}");
    }

    #[tokio::test]
    async fn the_last_address_outlives_a_failed_lookup() {
        let o = Origin::new("nonexistent.invalid:80");
        let old: SocketAddr = "192.0.2.7:80".parse().unwrap();
        o.remember(old, Instant::now() - TTL * 2);
        assert_eq!(o.addr().await.unwrap(), old, "expired, lookup fails, last address kept");
        assert_eq!(o.addr().await.unwrap(), old, "and not looked up again at once");
    }
}
