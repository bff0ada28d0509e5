//! The gateway's Prometheus counters, in a registry of its own that the
//! admin listener serves at `/metrics`.

use prometheus::{IntCounterVec, Opts, Registry};

/// All counters.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// The registry `/metrics` renders.
    pub registry: Registry,
    /// Requests from recognised crawlers, by crawler and verdict.
    pub crawler_requests: IntCounterVec,
    /// Requests answered 403 by enforcement, by site and crawler.
    pub enforced: IntCounterVec,
    /// `/robots.txt` answers from the store, by site and source.
    pub robots_served: IntCounterVec,
    /// Origin robots.txt refreshes, by site and outcome.
    pub refresh: IntCounterVec,
    /// Times the origin's robots.txt was unusable, by site and reason.
    pub fallback: IntCounterVec,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("metric {name}: {e}"));
    // Names are fixed and distinct, so registration cannot collide.
    let _ = registry.register(Box::new(c.clone()));
    c
}

impl Metrics {
    /// Creates and registers the counters.
    pub fn new() -> Metrics {
        let registry = Registry::new();
        Metrics {
            crawler_requests: counter(
                &registry,
                "robotsgate_crawler_requests_total",
                "Requests from recognised crawlers",
                &["crawler", "verdict"],
            ),
            enforced: counter(
                &registry,
                "robotsgate_enforced_total",
                "Crawler requests refused with 403",
                &["site", "crawler"],
            ),
            robots_served: counter(
                &registry,
                "robotsgate_robots_served_total",
                "robots.txt answers from the store",
                &["site", "source"],
            ),
            refresh: counter(
                &registry,
                "robotsgate_robots_refresh_total",
                "Origin robots.txt refreshes",
                &["site", "outcome"],
            ),
            fallback: counter(
                &registry,
                "robotsgate_robots_fallback_total",
                "Origin robots.txt unusable",
                &["site", "reason"],
            ),
            registry,
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let encoder = prometheus::TextEncoder::new();
        let _ = encoder.encode_utf8(&self.registry.gather(), &mut out);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
