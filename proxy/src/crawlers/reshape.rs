//! Keeps each site's crawl budgets shaped to the fleet and to the file,
//! off the request path: every `proxy.fleet.heartbeat` this gateway says
//! it is alive in the shared database (`gateway_beats`), counts the
//! gateways heard from within `proxy.fleet.dead_after` for each site it
//! fronts, and takes 1/N of the site's budgets; and, for a site with
//! `crawl_delay: budget`, holds each crawler the catalogue says honours
//! `Crawl-delay` to the delay the served copy states for it.
//!
//! What the database being down means: the last share is kept (the
//! others cannot see the fleet either, so they keep theirs), and the
//! request path never notices. A gateway is named by a file in its
//! `state_dir`, so an upgrade's new process is the same gateway and a
//! fleet never counts one machine twice.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use robotsgate_config::FleetSettings;
use robotsgate_config::budgets::CrawlDelay;
use robotsgate_crawlers::Catalogue;
use rules::delay::Delays;

use super::budget::{Budgets, Delayed};
use crate::robots::shared::{CALL_TIMEOUT, Shared};
use crate::robots::store::{RobotsStore, State};

/// One site whose budgets are kept in shape.
#[derive(Debug)]
pub struct Shaped {
    /// The site.
    pub name: String,
    /// Its budgets, as both request paths hold them.
    pub budgets: Arc<Budgets>,
    /// Whether its `Crawl-delay` lines are budgets.
    pub crawl_delay: CrawlDelay,
}

/// The background service.
#[derive(Debug)]
pub struct Reshape {
    sites: Vec<Shaped>,
    store: Arc<RobotsStore>,
    /// The crawlers that honour `Crawl-delay`.
    delayed: Vec<String>,
    shared: Option<Arc<Shared>>,
    fleet: FleetSettings,
    /// This gateway's name in `gateway_beats`.
    pub gateway: String,
    started: i64,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// This gateway's name: read from `state_dir/gateway-id`, written there
/// on first start. An upgrade's new process reads the same name.
pub fn gateway_id(state_dir: &Path) -> String {
    let path = state_dir.join("gateway-id");
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Some(id) = text.lines().next().map(str::trim).filter(|t| !t.is_empty() && t.len() <= 64)
    {
        return id.to_string();
    }
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let host: String = host.trim().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(32).collect();
    let id = format!("{}-{:x}{:x}", if host.is_empty() { "gateway" } else { &host }, nanos, std::process::id());
    // A state folder that cannot be written loses only the name's
    // stability across restarts: the old row expires after `dead_after`.
    let _ = std::fs::create_dir_all(state_dir).and_then(|()| std::fs::write(&path, format!("{id}\n")));
    id
}

/// The share of a site's budgets one of `alive` gateways takes.
pub fn share_of(alive: i64) -> f64 {
    1.0 / alive.max(1) as f64
}

/// For `--check`: per site, how many gateways `database` has heard from
/// within `dead_after`, `gateway` counted as one of them.
pub async fn count(
    database: &str,
    base: &Path,
    gateway: &str,
    dead_after: Duration,
) -> Result<HashMap<String, i64>, String> {
    let options = robotsgate_history::Options { max_connections: 1, acquire_timeout: CALL_TIMEOUT };
    let call = async {
        let db = robotsgate_history::open(database, base, options).await.map_err(|e| e.to_string())?;
        let since = now_ms() - dead_after.as_millis() as i64;
        let rows = robotsgate_history::beats::alive(&db.pool, gateway, since).await.map_err(|e| e.to_string());
        db.pool.close().await;
        rows
    };
    match tokio::time::timeout(CALL_TIMEOUT * 2, call).await {
        Ok(rows) => Ok(rows?.into_iter().collect()),
        Err(_) => Err("the database did not answer".into()),
    }
}

impl Reshape {
    /// The service for `sites`, sharing through `shared` when a database
    /// is configured.
    pub fn new(
        sites: Vec<Shaped>,
        store: Arc<RobotsStore>,
        catalogue: &Catalogue,
        shared: Option<Arc<Shared>>,
        fleet: FleetSettings,
        state_dir: &Path,
    ) -> Reshape {
        let delayed = catalogue.crawlers().iter().filter(|c| c.crawl_delay).map(|c| c.token.clone()).collect();
        Reshape { sites, store, delayed, shared, fleet, gateway: gateway_id(state_dir), started: now_ms() }
    }

    /// Whether there is anything to keep in shape.
    pub fn is_needed(&self) -> bool {
        self.sites.iter().any(|s| !s.budgets.is_empty() || s.crawl_delay == CrawlDelay::Budget)
    }

    /// Beats, and the live count of each site's gateways; `None` when the
    /// database is off, down or slow.
    async fn fleet(&self) -> Option<HashMap<String, i64>> {
        let shared = self.shared.as_ref()?;
        let db = shared.db().await?;
        let names: Vec<&str> = self.sites.iter().map(|s| s.name.as_str()).collect();
        let now = now_ms();
        let since = now - self.fleet.dead_after.as_millis() as i64;
        let call = async {
            robotsgate_history::beats::beat(&db.pool, &self.gateway, self.started, &names, now).await?;
            robotsgate_history::beats::alive(&db.pool, &self.gateway, since).await
        };
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(rows)) => Some(rows.into_iter().collect()),
            Ok(Err(e)) => {
                tracing::warn!(
                    "crawl budgets: database error while counting the fleet: {e}; keeping this gateway's shares"
                );
                None
            }
            Err(_) => {
                tracing::warn!("crawl budgets: the database did not answer; keeping this gateway's shares");
                None
            }
        }
    }

    /// The crawlers held to the `Crawl-delay` of what `site` serves now.
    fn delays(&self, site: &str, cache: &mut HashMap<String, (String, Vec<Delayed>)>) -> Vec<Delayed> {
        let State::Serve(served) = &*self.store.state(site) else { return Vec::new() };
        if let Some((etag, delays)) = cache.get(site)
            && *etag == served.etag
        {
            return delays.clone();
        }
        let lines = Delays::read(&served.body);
        let delays: Vec<Delayed> = self
            .delayed
            .iter()
            .filter_map(|token| {
                let d = lines.of(&served.robots, token)?;
                Some(Delayed { token: token.clone(), delay: d.delay, line: d.line })
            })
            .filter(|d| !d.delay.is_zero())
            .collect();
        cache.insert(site.to_string(), (served.etag.clone(), delays.clone()));
        delays
    }

    /// One round: the fleet, then each site's shape.
    async fn round(&self, cache: &mut HashMap<String, (String, Vec<Delayed>)>) {
        let alive = self.fleet().await;
        for site in &self.sites {
            let share = match &alive {
                Some(counts) => share_of(counts.get(&site.name).copied().unwrap_or(1)),
                None => site.budgets.share(),
            };
            let delays =
                if site.crawl_delay == CrawlDelay::Budget { self.delays(&site.name, cache) } else { Vec::new() };
            let was = site.budgets.share();
            if site.budgets.reshape(share, delays) && (was - share).abs() > 1e-9 {
                tracing::info!(site = %site.name, share, "crawl budgets: this gateway's share of the fleet changed");
            }
        }
    }
}

#[async_trait]
impl BackgroundService for Reshape {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut tick = tokio::time::interval(self.fleet.heartbeat.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut cache = HashMap::new();
        loop {
            tokio::select! {
                _ = tick.tick() => self.round(&mut cache).await,
                _ = shutdown.changed() => return,
            }
        }
    }
}
