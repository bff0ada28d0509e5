//! The counters of what this process did (polls, deliveries) and how long
//! its database reads take: kept in memory, registered once, and rendered
//! with the gauges read from the database at each scrape (`metrics`). The
//! daemon counts into them; they depend on nothing of it.

use std::sync::OnceLock;

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry};

/// The process's counters.
#[derive(Debug)]
pub struct Counters {
    pub(crate) registry: Registry,
    /// Polls by outcome (`rules`, `allow-all`, `disallow-all`, `error`).
    pub polls: IntCounterVec,
    /// Delivery attempts by channel and result (`sent`, `failed`).
    pub deliveries: IntCounterVec,
    /// Seconds the scrape's database reads took.
    pub db_seconds: Histogram,
}

/// The process's counters, made on first use.
pub fn counters() -> &'static Counters {
    static C: OnceLock<Counters> = OnceLock::new();
    C.get_or_init(|| {
        let registry = Registry::new();
        let polls = IntCounterVec::new(Opts::new("robotsgate_monitor_polls_total", "Polls by outcome"), &["outcome"])
            .unwrap_or_else(|e| panic!("{e}"));
        let deliveries = IntCounterVec::new(
            Opts::new("robotsgate_monitor_delivery_attempts_total", "Alert delivery attempts by channel and result"),
            &["channel", "result"],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let db_seconds = Histogram::with_opts(
            HistogramOpts::new("robotsgate_monitor_db_seconds", "Database read latency (the scrape's queries)")
                .buckets(vec![0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // Fixed names: registration cannot collide.
        let _ = registry.register(Box::new(polls.clone()));
        let _ = registry.register(Box::new(deliveries.clone()));
        let _ = registry.register(Box::new(db_seconds.clone()));
        Counters { registry, polls, deliveries, db_seconds }
    })
}
