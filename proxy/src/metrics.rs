//! The gateway's Prometheus counters, in a registry of its own that the
//! admin listener serves at `/metrics`.

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

use crate::identity::feeds::FeedStatus;

/// All counters.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// The registry `/metrics` renders.
    pub registry: Registry,
    /// Requests from recognised crawlers, by crawler (a catalogued or
    /// configured token: a bounded set), verdict and verification answer
    /// (`verified`, `spoofed`, `unverifiable`, `pending`, or `off`).
    pub crawler_requests: IntCounterVec,
    /// Signed crawler requests by how they wrote `Signature-Agent`
    /// (`dictionary`, the current draft's; `legacy`, a quoted URL;
    /// `malformed`; `none`).
    pub signature_agent: IntCounterVec,
    /// Requests answered 403, by site, crawler and reason (`robots` or
    /// `spoofed`).
    pub enforced: IntCounterVec,
    /// Crawler requests over a crawl budget, answered 429.
    pub throttled: IntCounterVec,
    /// Prefixes in each IP-range feed's copy in use.
    pub feed_prefixes: IntGaugeVec,
    /// Seconds since each feed's copy in use was fetched (-1: none yet).
    pub feed_age: IntGaugeVec,
    /// 1 when a feed's last refresh failed.
    pub feed_failing: IntGaugeVec,
    /// `/robots.txt` answers from the store, by site and source.
    pub robots_served: IntCounterVec,
    /// Origin robots.txt refreshes, by site and outcome.
    pub refresh: IntCounterVec,
    /// Times the origin's robots.txt was unusable, by site and reason.
    pub fallback: IntCounterVec,
    /// Bytes of the origin's robots.txt left out so that the managed
    /// groups land inside 500 KiB, by site (0: none; -1: the groups alone
    /// do not fit, and are not served).
    pub managed_cut: IntGaugeVec,
    /// 1 while the gate holds a change to a site's robots.txt (the last
    /// good copy is served instead), by site.
    pub robots_held: IntGaugeVec,
    /// 1 while a site in `gate: warn` serves a change the gate would have held.
    pub robots_would_hold: IntGaugeVec,
    /// Crawler requests the compliance ledger could not count (its queue
    /// or its rows in memory full, the database down too long).
    pub ledger_dropped: IntCounter,
    /// Ledger rows in memory, waiting to be written.
    pub ledger_rows: IntGauge,
    /// Ledger writes to the database, by outcome (`ok`, `error`).
    pub ledger_writes: IntCounterVec,
    /// Crawler requests the ledger judged violations, by site, crawler
    /// (a catalogue token) and identity answer.
    pub ledger_violations: IntCounterVec,
    /// Responses, by request path (`own`, `pipeline`), protocol (`http1`,
    /// `http2`) and status class (`1xx` to `5xx`; `none` when the client
    /// left first).
    pub responses: IntCounterVec,
    /// The same counters, looked up once: `[path][protocol][status / 100]`.
    by_class: [[[IntCounter; 6]; 2]; 2],
    /// Responses the gateway made itself because the origin failed (502,
    /// 504), by site and status: its own 5xx, apart from the origin's.
    pub origin_failures: IntCounterVec,
    /// Seconds from a request's complete head to its response's end, by
    /// path (`own`, `pipeline`), protocol (`http1`, `http2`) and `robots`
    /// (`true`: robots.txt answered from the store).
    pub duration: HistogramVec,
    /// The same histograms, looked up once: `[path][protocol][robots]`.
    by_route: [[[Histogram; 2]; 2]; 2],
    /// Seconds the own path waited on the origin, by phase: `connect` (a
    /// new connection) and `response` (request sent to response head).
    pub upstream: HistogramVec,
    /// `upstream{phase="connect"}`, looked up once.
    pub upstream_connect: Histogram,
    /// `upstream{phase="response"}`, looked up once.
    pub upstream_response: Histogram,
    /// Failed TLS handshakes on the listeners (scanners, old clients),
    /// synced from [`robotsgate_config::telemetry::TLS_HANDSHAKE_FAILURES`]
    /// at each render.
    pub tls_handshake_failures: IntCounter,
    /// Seconds until each TLS listener's certificate expires, by listener
    /// and certificate file.
    pub tls_expiry: IntGaugeVec,
}

/// Which of the gateway's two request paths served a request: the
/// `path` label of [`Metrics::responses`] and [`Metrics::duration`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The gateway's own path (`own`): HTTP/1.x read in `own`, HTTP/2 in
    /// `own::streams`.
    Own = 0,
    /// Pingora's pipeline (`pipeline`): what the own path hands over, and
    /// everything with `fast_path: false`.
    Pipeline = 1,
}

/// The HTTP version the client spoke: the `protocol` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.0 or HTTP/1.1 (`http1`).
    Http1 = 0,
    /// HTTP/2 (`http2`).
    Http2 = 1,
}

/// The path and protocol a request went by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Which path served it.
    pub path: Path,
    /// Which HTTP version the client spoke.
    pub protocol: Protocol,
}

impl Route {
    /// HTTP/1.x on the own path.
    pub const OWN_HTTP1: Route = Route { path: Path::Own, protocol: Protocol::Http1 };
    /// HTTP/2 on the own path.
    pub const OWN_HTTP2: Route = Route { path: Path::Own, protocol: Protocol::Http2 };
    /// HTTP/1.x on Pingora's pipeline.
    pub const PIPELINE_HTTP1: Route = Route { path: Path::Pipeline, protocol: Protocol::Http1 };
    /// HTTP/2 on Pingora's pipeline.
    pub const PIPELINE_HTTP2: Route = Route { path: Path::Pipeline, protocol: Protocol::Http2 };
}

/// The values of the `path` label, in [`Path`] order.
pub const PATHS: [&str; 2] = ["own", "pipeline"];
/// The values of the `protocol` label, in [`Protocol`] order.
pub const PROTOCOLS: [&str; 2] = ["http1", "http2"];

/// Latency buckets, in seconds: from a cached robots.txt (tens of µs) to
/// an origin at its timeout.
const BUCKETS: [f64; 14] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0];

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()), labels)
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    let _ = registry.register(Box::new(h.clone()));
    h
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("metric {name}: {e}"));
    // Names are fixed and distinct, so registration cannot collide.
    let _ = registry.register(Box::new(c.clone()));
    c
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), &["feed"]).unwrap_or_else(|e| panic!("metric {name}: {e}"));
    let _ = registry.register(Box::new(g.clone()));
    g
}

/// The status classes of [`Metrics::responses`], by `status / 100`.
const CLASSES: [&str; 6] = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"];

impl Metrics {
    /// Counts a response of `status` (0: none) that went by `route`.
    pub fn response(&self, route: Route, status: u16) {
        let class = usize::from(status / 100).min(5);
        self.by_class[route.path as usize][route.protocol as usize][class].inc();
    }

    /// Records how long a request that went by `route` took, from `began`;
    /// `robots` when it was robots.txt answered from the store.
    pub fn took(&self, route: Route, robots: bool, began: std::time::Instant) {
        self.by_route[route.path as usize][route.protocol as usize][usize::from(robots)]
            .observe(began.elapsed().as_secs_f64());
    }

    /// Creates and registers the counters.
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let responses = counter(
            &registry,
            "robotsgate_responses_total",
            "Responses, by request path, protocol and status class",
            &["path", "protocol", "class"],
        );
        let by_class = PATHS.map(|path| {
            PROTOCOLS.map(|protocol| CLASSES.map(|class| responses.with_label_values(&[path, protocol, class])))
        });
        let duration = histogram(
            &registry,
            "robotsgate_request_duration_seconds",
            "Seconds from a request's head to its response's end, by path, protocol and whether it was robots.txt from the store",
            &["path", "protocol", "robots"],
        );
        let by_route = PATHS.map(|path| {
            PROTOCOLS
                .map(|protocol| ["false", "true"].map(|robots| duration.with_label_values(&[path, protocol, robots])))
        });
        let upstream = histogram(
            &registry,
            "robotsgate_upstream_duration_seconds",
            "Seconds the own path waited on the origin, by phase",
            &["phase"],
        );
        let (upstream_connect, upstream_response) =
            (upstream.with_label_values(&["connect"]), upstream.with_label_values(&["response"]));
        let build = IntGaugeVec::new(
            Opts::new("robotsgate_build_info", "1, labelled with the running build's version"),
            &["daemon", "version"],
        )
        .unwrap_or_else(|e| panic!("metric robotsgate_build_info: {e}"));
        build.with_label_values(&["robots-proxy", env!("CARGO_PKG_VERSION")]).set(1);
        let _ = registry.register(Box::new(build));
        // CPU seconds, resident memory, open files and start time of this
        // process (Linux /proc), under Prometheus's usual `process_` names.
        #[cfg(target_os = "linux")]
        let _ = registry.register(Box::new(prometheus::process_collector::ProcessCollector::for_self()));
        Metrics {
            responses,
            by_class,
            duration,
            by_route,
            upstream,
            upstream_connect,
            upstream_response,
            tls_expiry: {
                let g = IntGaugeVec::new(
                    Opts::new(
                        "robotsgate_tls_certificate_expiry_seconds",
                        "Seconds until a TLS listener's certificate expires",
                    ),
                    &["listener", "cert"],
                )
                .unwrap_or_else(|e| panic!("metric robotsgate_tls_certificate_expiry_seconds: {e}"));
                let _ = registry.register(Box::new(g.clone()));
                g
            },
            tls_handshake_failures: {
                let c = IntCounter::new(
                    "robotsgate_tls_handshake_failures_total",
                    "Failed TLS handshakes on the listeners (logged at debug)",
                )
                .unwrap_or_else(|e| panic!("metric robotsgate_tls_handshake_failures_total: {e}"));
                let _ = registry.register(Box::new(c.clone()));
                c
            },
            origin_failures: counter(
                &registry,
                "robotsgate_origin_failures_total",
                "Responses the gateway made itself because the origin failed",
                &["site", "status"],
            ),
            crawler_requests: counter(
                &registry,
                "robotsgate_crawler_requests_total",
                "Requests from recognised crawlers",
                &["crawler", "verdict", "identity"],
            ),
            signature_agent: {
                let c = counter(
                    &registry,
                    "robotsgate_signature_agent_total",
                    "Signed crawler requests by the form of their Signature-Agent header",
                    &["form"],
                );
                // Every form from the start, so a rule sees 0, not nothing.
                for form in ["dictionary", "legacy", "malformed", "none"] {
                    c.with_label_values(&[form]);
                }
                c
            },
            enforced: counter(
                &registry,
                "robotsgate_enforced_total",
                "Crawler requests refused with 403",
                &["site", "crawler", "reason"],
            ),
            // Bounded: the config's sites, catalogue tokens, purposes and
            // four identity labels.
            throttled: counter(
                &registry,
                "robotsgate_throttled_total",
                "Crawler requests over a crawl budget, answered 429 with Retry-After",
                &["site", "crawler", "purpose", "identity"],
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
            managed_cut: {
                let g = IntGaugeVec::new(
                    Opts::new(
                        "robotsgate_managed_cut_bytes",
                        "Origin robots.txt bytes left out so the managed groups fit in 500 KiB",
                    ),
                    &["site"],
                )
                .unwrap_or_else(|e| panic!("metric robotsgate_managed_cut_bytes: {e}"));
                let _ = registry.register(Box::new(g.clone()));
                g
            },
            robots_held: {
                let g = IntGaugeVec::new(
                    Opts::new("robotsgate_robots_held", "1 while the gate holds a change to the site's robots.txt"),
                    &["site"],
                )
                .unwrap_or_else(|e| panic!("metric robotsgate_robots_held: {e}"));
                let _ = registry.register(Box::new(g.clone()));
                g
            },
            robots_would_hold: {
                let g = IntGaugeVec::new(
                    Opts::new(
                        "robotsgate_robots_would_have_held",
                        "1 while a site in gate: warn serves a change the gate would have held",
                    ),
                    &["site"],
                )
                .unwrap_or_else(|e| panic!("metric robotsgate_robots_would_have_held: {e}"));
                let _ = registry.register(Box::new(g.clone()));
                g
            },
            fallback: counter(
                &registry,
                "robotsgate_robots_fallback_total",
                "Origin robots.txt unusable",
                &["site", "reason"],
            ),
            feed_prefixes: gauge(&registry, "robotsgate_identity_feed_prefixes", "Prefixes in an IP-range feed"),
            feed_age: gauge(&registry, "robotsgate_identity_feed_age_seconds", "Age of an IP-range feed's copy"),
            feed_failing: gauge(
                &registry,
                "robotsgate_identity_feed_failing",
                "An IP-range feed's last refresh failed",
            ),
            ledger_dropped: {
                let c =
                    IntCounter::new("robotsgate_ledger_dropped_total", "Crawler requests the ledger could not count")
                        .unwrap_or_else(|e| panic!("metric robotsgate_ledger_dropped_total: {e}"));
                let _ = registry.register(Box::new(c.clone()));
                c
            },
            ledger_rows: {
                let g = IntGauge::new("robotsgate_ledger_pending_rows", "Ledger rows in memory, not yet written")
                    .unwrap_or_else(|e| panic!("metric robotsgate_ledger_pending_rows: {e}"));
                let _ = registry.register(Box::new(g.clone()));
                g
            },
            ledger_writes: counter(
                &registry,
                "robotsgate_ledger_writes_total",
                "Ledger writes to the database",
                &["outcome"],
            ),
            ledger_violations: counter(
                &registry,
                "robotsgate_gateway_violations_total",
                "Crawler requests judged violations of the robots.txt they could hold",
                &["site", "crawler", "identity"],
            ),
            registry,
        }
    }

    /// Creates every series whose labels are known at start, for each of
    /// `sites`: a rule or a dashboard that names one then reads 0 from the
    /// first scrape, not nothing (Prometheus' instrumentation advice).
    /// Series labelled by crawler appear with the first crawler request.
    pub fn prepare(&self, sites: &[&str], ledger: bool) {
        const SOURCES: [&str; 5] = ["origin", "last-good", "held", "static", "managed"];
        const FAILURES: [&str; 6] = ["429", "timeout", "unreachable", "5xx", "oversize", "html"];
        const OUTCOMES: [&str; 4] = ["ok", "held", "no-file", "redirects"];
        for site in sites {
            self.robots_held.with_label_values(&[site]).set(0);
            self.robots_would_hold.with_label_values(&[site]).set(0);
            self.managed_cut.with_label_values(&[site]);
            for source in SOURCES {
                self.robots_served.with_label_values(&[site, source]);
            }
            for reason in FAILURES {
                self.fallback.with_label_values(&[site, reason]);
                self.refresh.with_label_values(&[site, reason]);
            }
            for outcome in OUTCOMES {
                self.refresh.with_label_values(&[site, outcome]);
            }
            for status in ["502", "504"] {
                self.origin_failures.with_label_values(&[site, status]);
            }
        }
        if ledger {
            for outcome in ["ok", "error"] {
                self.ledger_writes.with_label_values(&[outcome]);
            }
        }
    }

    /// Sets the feed gauges from the feeds' status, before a render.
    pub fn set_feeds(&self, feeds: &[FeedStatus], now: u64) {
        for f in feeds {
            let labels = [f.source.as_str()];
            self.feed_prefixes.with_label_values(&labels).set(f.prefixes as i64);
            self.feed_age.with_label_values(&labels).set(f.fetched_at.map_or(-1, |t| now.saturating_sub(t) as i64));
            self.feed_failing.with_label_values(&labels).set(i64::from(f.last_error.is_some()));
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let failed = robotsgate_config::telemetry::TLS_HANDSHAKE_FAILURES.load(std::sync::atomic::Ordering::Relaxed);
        self.tls_handshake_failures.inc_by(failed.saturating_sub(self.tls_handshake_failures.get()));
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
