//! The gateway's decisions, shared by both request paths: which site a
//! Host names, what `/robots.txt` is answered with, and what a crawler's
//! request is judged. The fast HTTP/1.1 path (`forward`) and Pingora's full
//! pipeline (`pipeline`) both call these, so they cannot disagree. The proxy
//! parses no robots.txt itself: verdicts come from `rules`.

use std::collections::HashMap;
use std::sync::Arc;

use robotsgate_config::SiteProxy;
use rules::normal::Slashes;
use serde_json::json;

use crate::crawler::Crawlers;
use crate::metrics::Metrics;
use crate::origin::Origin;
use crate::store::{RobotsStore, State};
use crate::upstream::Upstream;

/// A site the gateway fronts.
#[derive(Debug)]
pub struct FrontedSite {
    /// Its name.
    pub name: String,
    /// How it is fronted.
    pub proxy: SiteProxy,
    /// Where proxied requests go.
    pub origin: Origin,
    /// Idle keep-alive connections to a plain-HTTP origin (fast path only).
    pub upstream: Upstream,
}

impl FrontedSite {
    /// A site as configured.
    pub fn new(name: &str, proxy: SiteProxy) -> FrontedSite {
        FrontedSite { name: name.to_string(), origin: Origin::new(&proxy.origin), proxy, upstream: Upstream::default() }
    }
}

/// Shared state, for the life of the process.
#[derive(Debug)]
pub struct Gateway {
    /// Host (lower case, no port) to site.
    pub hosts: HashMap<String, Arc<FrontedSite>>,
    /// robots.txt per site.
    pub store: Arc<RobotsStore>,
    /// Crawler recognition.
    pub crawlers: Crawlers,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Status for unknown hosts.
    pub unknown_host_status: u16,
    /// How long a proxied request waits on the origin (`proxy.origin_timeout`).
    pub origin_timeout: std::time::Duration,
    /// How long a request head may take, and a request body pause
    /// (`proxy.client_timeout`).
    pub client_timeout: std::time::Duration,
}

/// The body sent to a Host no site is configured for.
pub const UNKNOWN_HOST_BODY: &[u8] = b"robots-proxy: no site is configured for this host\n";

/// A declared crawler's request and what the site's robots.txt says of it.
#[derive(Debug, Clone)]
pub struct Visit {
    /// The crawler's product token, as the crawler list spells it.
    pub crawler: String,
    /// The verdict.
    pub allowed: bool,
    /// The deciding line, if a rule decided.
    pub line: Option<u32>,
    /// Whether the gateway refuses the request (403).
    pub refused: bool,
}

impl Gateway {
    /// The site a `Host` header value names; a port is ignored, and so is case.
    pub fn site(&self, host: &str) -> Option<&Arc<FrontedSite>> {
        let host = host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host });
        if host.bytes().any(|b| b.is_ascii_uppercase()) {
            self.hosts.get(&host.to_ascii_lowercase())
        } else {
            self.hosts.get(host)
        }
    }

    /// Judges a request by its User-Agent and origin-form target (path
    /// and query) against the site's current robots.txt, and counts it.
    /// `None` when the User-Agent is no declared crawler.
    ///
    /// The target is judged as the origin will serve it: refused when
    /// Google's matcher disallows it as sent or in its normal form
    /// ([`rules::normal`]), so no re-spelling walks around a rule.
    pub fn visit(&self, site: &FrontedSite, user_agent: &str, target: &[u8]) -> Option<Visit> {
        let crawler = self.crawlers.identify(user_agent)?;
        let state = self.store.state(&site.name);
        let slashes = if site.proxy.merge_slashes { Slashes::Merged } else { Slashes::Strict };
        let (allowed, line) = match &*state {
            State::Serve(served) => {
                let v = served.robots.crawler(crawler).check_request(target, slashes);
                (v.allowed, v.rule.map(|r| r.line))
            }
            // No file (4xx) or no good copy yet: nothing restricts crawling.
            State::NoFile(_) | State::Unknown => (true, None),
        };
        self.metrics.crawler_requests.with_label_values(&[crawler, if allowed { "allow" } else { "disallow" }]).inc();
        let refused = !allowed && site.proxy.enforce;
        if refused {
            self.metrics.enforced.with_label_values(&[&site.name, crawler]).inc();
        }
        Some(Visit { crawler: crawler.to_string(), allowed, line, refused })
    }

    /// The body of the 403 a refused crawler gets.
    pub fn refusal(visit: &Visit) -> String {
        format!("robots.txt of this site disallows this URL for {}\n", visit.crawler)
    }

    /// Writes the structured log line of a crawler's request, once its
    /// response status is known.
    pub fn log_visit(site: &FrontedSite, visit: &Visit, method: &str, target: &str, status: u16) {
        let line = json!({
            "site": site.name,
            "crawler": visit.crawler,
            "method": method,
            "url": target,
            "verdict": if visit.allowed { "allow" } else { "disallow" },
            "line": visit.line,
            "status": status,
        });
        println!("{line}");
    }
}
