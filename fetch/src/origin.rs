//! Fetching robots.txt from a site's origin the way robots-proxy sees it:
//! connect to the configured `host:port` while naming the site's host, so
//! that virtual hosting and SNI see the real name. The gateway's refresher
//! and the monitor (for a site only gateways front) both fetch through
//! [`Origins`], so they cannot read one origin two ways.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use rules::TransportError;

use crate::{Observation, Validators, fetch_remote, unreachable};

/// Where and how to ask an origin for robots.txt.
#[derive(Clone, Copy, Debug)]
pub struct OriginAddress<'a> {
    /// The origin as `host:port` (resolved at each fetch).
    pub origin: &'a str,
    /// The name sent as `Host` and SNI.
    pub host: &'a str,
    /// Connect over TLS.
    pub tls: bool,
}

impl OriginAddress<'_> {
    /// The URL asked for: the site's host on the origin's port.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let port = self.origin.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
        let port = port.unwrap_or(if self.tls { 443 } else { 80 });
        format!("{scheme}://{}:{port}/robots.txt", self.host)
    }
}

/// The CA certificates in the PEM file `path` (`proxy.origin_ca_file`), for
/// TLS origins signed by a private CA; why not, naming the file.
pub fn ca_file(path: &std::path::Path) -> Result<reqwest::Certificate, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read origin_ca_file {}: {e}", path.display()))?;
    reqwest::Certificate::from_pem(&pem).map_err(|e| format!("origin_ca_file {} is not PEM: {e}", path.display()))
}

/// HTTP clients for origins, one per site and resolved address.
#[derive(Debug)]
pub struct Origins {
    timeout: Duration,
    user_agent: String,
    ca: Option<reqwest::Certificate>,
    /// Building a client loads the CA bundle, which costs far more CPU than
    /// the fetch, so one is rebuilt only when the site's address changes.
    clients: Mutex<HashMap<String, (SocketAddr, reqwest::Client)>>,
}

impl Origins {
    /// Clients with a whole-request `timeout`, sending `user_agent`, and
    /// trusting `ca` alone for TLS origins when given (else the system's).
    pub fn new(timeout: Duration, user_agent: &str, ca: Option<reqwest::Certificate>) -> Origins {
        Origins { timeout, user_agent: user_agent.to_string(), ca, clients: Mutex::default() }
    }

    /// Fetches `at`'s robots.txt for the site called `site`. A name that
    /// does not resolve is the origin unreachable, never some other address;
    /// a client that cannot be built is a TLS failure (ours, not the
    /// origin's answer), so a kept copy keeps serving.
    pub async fn fetch(&self, site: &str, at: OriginAddress<'_>, validators: &Validators) -> Observation {
        let Some(addr) = tokio::net::lookup_host(at.origin).await.ok().and_then(|mut a| a.next()) else {
            tracing::warn!(site, origin = at.origin, "the origin does not resolve");
            return unreachable(TransportError::Dns);
        };
        match self.client(site, at.host, addr) {
            Ok(client) => fetch_remote(&client, &at.url(), validators).await,
            Err(e) => {
                tracing::error!(site, "cannot build the HTTP client: {e}");
                unreachable(TransportError::Tls)
            }
        }
    }

    fn client(&self, site: &str, host: &str, addr: SocketAddr) -> reqwest::Result<reqwest::Client> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, client)) = clients.get(site)
            && *at == addr
        {
            return Ok(client.clone());
        }
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = &self.ca {
            builder = builder.tls_certs_only([ca.clone()]);
        }
        let client = builder
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(Duration::from_secs(10)))
            .user_agent(&self.user_agent)
            .resolve(host, addr)
            .build()?;
        clients.insert(site.to_string(), (addr, client.clone()));
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_the_site_on_the_origins_port() {
        let at = OriginAddress { origin: "127.0.0.1:8081", host: "shop.test", tls: false };
        assert_eq!(at.url(), "http://shop.test:8081/robots.txt");
        let at = OriginAddress { origin: "lb.internal", host: "shop.test", tls: true };
        assert_eq!(at.url(), "https://shop.test:443/robots.txt");
    }
}
