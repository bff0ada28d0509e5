//! The refresher: the sites it keeps fresh, the parts it works with (the
//! store, the fleet's database, the origins' clients, the metrics), and how
//! it makes a servable copy of a body (the site's managed groups and AI
//! policy appended). The refresh itself is in `refresh`, the gate's
//! judgement in `gate`; both are `impl Refresher` over what is here.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use robotsgate_config::SiteProxy;

use super::hold::Declared;
use super::shared::Shared;
use super::store::{Origin, RobotsStore, Served};
use crate::metrics::Metrics;

/// One site as the refresher sees it.
#[derive(Clone, Debug)]
pub struct SiteRobots {
    /// The site's name.
    pub name: String,
    /// How it is fronted.
    pub proxy: SiteProxy,
    /// What its owner declared: the gate's pins, floor and mode.
    pub declared: Declared,
}

/// The background service.
#[derive(Debug)]
pub struct Refresher {
    pub(super) sites: Vec<SiteRobots>,
    pub(super) store: Arc<RobotsStore>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) interval: Duration,
    pub(super) max_staleness: Duration,
    /// Wakes the refresher before its interval ends (`POST /refresh`).
    pub(super) now: Arc<tokio::sync::Notify>,
    /// The origins' HTTP clients (the monitor fetches a gateway-only
    /// site through the same code).
    pub(super) origins: robotsgate_fetch::origin::Origins,
    /// Last good copies shared with other gateways and the monitor, when
    /// the config names a database.
    pub(super) shared: Option<Arc<Shared>>,
    /// The crawler catalogue, for the groups an enforcing site cannot enforce.
    pub(super) catalogue: robotsgate_crawlers::Catalogue,
    /// How sitemaps are read for the gate: the public URLs, through `http`.
    /// `None` when no client could be built (said once, at the start).
    pub(super) sitemap_fetcher: Option<robotsgate_fetch::Fetcher>,
}

impl Refresher {
    /// A refresher for `sites`.
    pub fn new(
        sites: Vec<SiteRobots>,
        store: Arc<RobotsStore>,
        metrics: Arc<Metrics>,
        settings: &robotsgate_config::ProxySettings,
        http: &robotsgate_config::Http,
        now: Arc<tokio::sync::Notify>,
    ) -> Refresher {
        Refresher {
            sites,
            store,
            metrics,
            interval: settings.refresh,
            max_staleness: settings.max_staleness,
            now,
            shared: None,
            catalogue: robotsgate_crawlers::Catalogue::builtin().clone(),
            origins: robotsgate_fetch::origin::Origins::new(
                http.timeout,
                &http.user_agent.replace("monitor", "proxy"),
                settings
                    .origin_ca_file
                    .as_ref()
                    .and_then(|path| robotsgate_fetch::origin::ca_file(path).map_err(|e| tracing::error!("{e}")).ok()),
            ),
            sitemap_fetcher: sitemap_fetcher(http),
        }
    }

    /// Uses `catalogue` (the built-in one with the config's entries).
    pub fn with_catalogue(mut self, catalogue: robotsgate_crawlers::Catalogue) -> Refresher {
        self.catalogue = catalogue;
        self
    }

    /// Shares last good copies through `shared` too.
    pub fn with_shared(mut self, shared: Arc<Shared>) -> Refresher {
        self.shared = Some(shared);
        self
    }

    /// The copy `served` again, labelled `source` (`held`, `last-good`):
    /// the same bytes, rules, origin body and cut, a new header.
    pub(super) fn relabelled(&self, site: &str, served: &Served, source: Origin) -> Served {
        let robots = Some(served.robots.clone());
        let mut kept = self.served_parsed(site, served.body.clone(), robots, source, served.good_at);
        kept.origin = served.origin.clone();
        kept.cut = served.cut;
        kept
    }

    /// A servable copy of `body` for `site`.
    pub(super) fn served(&self, site: &str, body: Bytes, source: Origin, good_at: SystemTime) -> Served {
        self.served_parsed(site, body, None, source, good_at)
    }

    /// [`Refresher::served`] for a body already compiled as `robots`, so a
    /// refresh parses the origin's file once.
    pub(super) fn served_parsed(
        &self,
        site: &str,
        body: Bytes,
        robots: Option<rules::Robots>,
        source: Origin,
        good_at: SystemTime,
    ) -> Served {
        let counter = self.metrics.robots_served.with_label_values(&[site, source.as_str()]);
        let robots = robots.unwrap_or_else(|| rules::Robots::parse(&body));
        Served::new(body, robots, source, good_at, self.interval, counter)
    }

    /// The served form of a good origin body: as is, or with the managed
    /// groups appended.
    pub(super) fn serve_good(
        &self,
        site: &SiteRobots,
        body: Bytes,
        robots: Option<rules::Robots>,
        good_at: SystemTime,
        source: Origin,
    ) -> Served {
        let cut_gauge = self.metrics.managed_cut.with_label_values(&[&site.name]);
        match self.managed(site, &body).as_deref() {
            Some(groups) => match rules::merge::fit(&body, groups) {
                Some((merged, cut)) => {
                    cut_gauge.set(cut.map_or(0, |c| i64::try_from(c.bytes).unwrap_or(i64::MAX)));
                    if let Some(c) = cut {
                        tracing::error!(site = %site.name, from_line = c.from_line, bytes = c.bytes, "the managed groups would push robots.txt past 500 KiB; the origin's lines from {} on are left out so that Google reads the policy", c.from_line);
                    }
                    let source = if source == Origin::LastGood { source } else { Origin::Managed };
                    let mut served = self.served(&site.name, Bytes::from(merged), source, good_at);
                    served.cut = cut;
                    served.origin = body;
                    served
                }
                None => {
                    // The groups alone pass 500 KiB: a config no file can carry.
                    cut_gauge.set(-1);
                    tracing::error!(site = %site.name, "the managed groups alone pass 500 KiB; serving the origin's file alone");
                    self.served_parsed(&site.name, body, robots, source, good_at)
                }
            },
            None => {
                cut_gauge.set(0);
                self.served_parsed(&site.name, body, robots, source, good_at)
            }
        }
    }

    /// What is appended to the origin's file: the groups the site's AI
    /// policy compiles to, then its `managed_groups`.
    pub(super) fn managed(&self, site: &SiteRobots, origin: &[u8]) -> Option<String> {
        let policy = site.proxy.ai_policy.as_ref().map(|p| self.ai_compiled(p, origin).groups);
        match (policy, &site.proxy.managed_groups) {
            (None, None) => None,
            (Some(p), None) => Some(p),
            (None, Some(g)) => Some(g.clone()),
            (Some(p), Some(g)) => Some(format!("{}\n\n{g}", p.trim_end())),
        }
    }

    /// The site's AI policy compiled onto `origin`, with the catalogue's
    /// tokens for each denied purpose.
    pub fn ai_compiled(
        &self,
        settings: &robotsgate_config::AiPolicySettings,
        origin: &[u8],
    ) -> rules::ai_policy::Compiled {
        let policy = crate::crawlers::ai::policy(settings);
        let denied = crate::crawlers::ai::denied_tokens(&policy, &self.catalogue);
        policy.compile(&denied, origin)
    }
}

/// The client sitemaps are read with for the gate: `http`'s timeout,
/// `connect_to` and `ca_file`, as the monitor reads them.
fn sitemap_fetcher(http: &robotsgate_config::Http) -> Option<robotsgate_fetch::Fetcher> {
    let ca = http
        .ca_file
        .as_ref()
        .and_then(|p| robotsgate_fetch::origin::ca_file(p).map_err(|e| tracing::error!("{e}")).ok());
    let agent = http.user_agent.replace("monitor", "proxy");
    robotsgate_fetch::Fetcher::new(http.timeout, &agent, &http.connect_to(), ca)
        .map_err(|e| tracing::error!("building the client that reads sitemaps for the gate: {e}"))
        .ok()
}
