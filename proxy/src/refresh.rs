//! Keeping each site's robots.txt fresh: a Pingora background service that
//! fetches the origin's file on an interval, validates it with `rules`, and
//! decides what crawlers get.
//!
//! - A good 2xx (parsable text, at most 500 KiB, not an HTML page) becomes
//!   the served copy and the new last-known-good, on disk too.
//! - A 4xx (there is no file) is honoured: `/robots.txt` is proxied through.
//! - Anything unusable (5xx, 429, timeouts, resets, HTML or oversized 200s)
//!   keeps the last-known-good copy while it is younger than the configured
//!   staleness; with no such copy, the origin's answer passes through.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use robotsgate_config::SiteProxy;
use robotsgate_fetch::{Observation, Validators};
use rules::lint::{Code, Severity};
use rules::{Policy, Reason};

use crate::gate::{Declared, Hold};
use crate::metrics::Metrics;
use crate::shared::Shared;
use crate::store::{Health, Origin, RobotsStore, Served, State};

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
    sites: Vec<SiteRobots>,
    store: Arc<RobotsStore>,
    metrics: Arc<Metrics>,
    interval: Duration,
    max_staleness: Duration,
    /// Wakes the refresher before its interval ends (`POST /refresh`).
    now: Arc<tokio::sync::Notify>,
    /// The origins' HTTP clients (the monitor fetches a gateway-only
    /// site through the same code).
    origins: robotsgate_fetch::origin::Origins,
    /// Last good copies shared with other gateways and the monitor, when
    /// the config names a database.
    shared: Option<Arc<Shared>>,
    /// The crawler catalogue, for the groups an enforcing site cannot enforce.
    catalogue: robotsgate_crawlers::Catalogue,
}

/// Whether a stored body may be served: what a fetch of it would pass.
fn servable(body: &[u8]) -> bool {
    body.len() <= rules::parse::MAX_FILE_BYTES && !rules::lint(body).iter().any(|d| d.code == Code::Html)
}

/// Why a fetched body is not served.
fn unusable(outcome: &rules::FetchOutcome, findings: &[rules::Diagnostic]) -> Option<&'static str> {
    if outcome.truncated || outcome.body.len() > rules::parse::MAX_FILE_BYTES {
        return Some("oversize");
    }
    if findings.iter().any(|d| d.code == Code::Html) {
        return Some("html");
    }
    None
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

    /// Takes the newest good copy the database holds for `site` when it is
    /// newer than the one served, and while it is younger than the
    /// staleness limit; a copy fresh from the origin is never replaced.
    pub async fn adopt_shared(&self, site: &SiteRobots) {
        if let Some(shared) = &self.shared {
            self.adopt_from(shared, site).await;
        }
    }

    /// Takes every site's copy from the fleet's database through `shared`
    /// before the gateway accepts traffic, so that its first answer already
    /// serves (and enforces) what the fleet serves. `shared` is a link of
    /// its own, opened and closed on the runtime that calls this.
    pub async fn adopt_before_start(&self, shared: &Shared) {
        for site in &self.sites {
            self.adopt_from(shared, site).await;
        }
    }

    async fn adopt_from(&self, shared: &Shared, site: &SiteRobots) {
        if static_text(&site.proxy).is_some() {
            return;
        }
        let held = match &*self.store.state(&site.name) {
            State::Serve(s) if s.source != Origin::LastGood => return,
            State::Serve(s) => Some(s.good_at),
            _ => None,
        };
        let now = SystemTime::now();
        let candidates: Vec<(Vec<u8>, SystemTime)> = shared
            .latest(&site.name)
            .await
            .into_iter()
            .filter(|(body, good_at)| {
                // A copy with our managed groups in it is what a gateway served
                // (the monitor polling through one): merging again would double them.
                let merged = memchr::memmem::find(body, MANAGED_MARK).is_some();
                now.duration_since(*good_at).unwrap_or_default() <= self.max_staleness && servable(body) && !merged
            })
            .collect();
        let Some(pick) = self.first_unheld(shared, site, &candidates).await else { return };
        let (body, good_at) = candidates[pick].clone();
        if held.is_some_and(|held| held >= good_at) {
            return;
        }
        if let Err(e) = self.store.persist(&site.name, &body, good_at) {
            tracing::warn!(site = %site.name, "cannot keep the good copy on disk: {e}");
        }
        let age = now.duration_since(good_at).unwrap_or_default();
        let served = self.serve_good(site, Bytes::from(body), None, good_at, Origin::LastGood);
        self.store.set(&site.name, State::Serve(Arc::new(served)));
        tracing::info!(site = %site.name, age_secs = age.as_secs(), "took the last good robots.txt from the database");
        // A replica with nothing of its own holds what the fleet holds.
        if self.store.restore_hold(&site.name).is_none()
            && let Some((status, body, since)) = shared.held_now(&site.name).await
        {
            self.store.persist_hold(&site.name, status, body.as_deref(), since);
        }
        self.restore_hold(site);
    }

    /// Which of `candidates` (newest first) a gateway may take: the newest
    /// that the gate would not hold against the copy it would replace (the
    /// one served now, or for a gateway with none, the next older
    /// candidate), or that was released. A copy another process recorded
    /// before any gateway held it (the monitor polling the origin, say) is
    /// so judged as a fetch would be, and a cold gateway never starts on a
    /// deploy of `Disallow: /` that its fleet would hold.
    async fn first_unheld(
        &self,
        shared: &Shared,
        site: &SiteRobots,
        candidates: &[(Vec<u8>, SystemTime)],
    ) -> Option<usize> {
        if site.declared.mode != rules::gate::Mode::Hold {
            return (!candidates.is_empty()).then_some(0);
        }
        let current = match &*self.store.state(&site.name) {
            State::Serve(s) => Some(Policy::Rules(s.robots.clone())),
            _ => None,
        };
        for (i, (body, _)) in candidates.iter().enumerate() {
            let old = match (&current, candidates.get(i + 1)) {
                (Some(current), _) => current.clone(),
                (None, Some((older, _))) => Policy::Rules(rules::Robots::parse(older)),
                // The oldest copy there is: nothing to judge it against.
                (None, None) => return Some(i),
            };
            let new = Policy::Rules(rules::Robots::parse(body));
            let key = crate::gate::outcome_key(body);
            if rules::gate::breaches(&old, &new, &site.declared.pins, &site.declared.floor).is_empty()
                || self.store.is_released(&site.name, &key)
                || shared.released(&site.name, &key).await
            {
                return Some(i);
            }
            if current.is_some() {
                return None;
            }
        }
        None
    }

    /// The copy `served` again, labelled `source` (`held`, `last-good`):
    /// the same bytes, rules, origin body and cut, a new header.
    fn relabelled(&self, site: &str, served: &Served, source: Origin) -> Served {
        let robots = Some(served.robots.clone());
        let mut kept = self.served_parsed(site, served.body.clone(), robots, source, served.good_at);
        kept.origin = served.origin.clone();
        kept.cut = served.cut;
        kept
    }

    /// A servable copy of `body` for `site`.
    fn served(&self, site: &str, body: Bytes, source: Origin, good_at: SystemTime) -> Served {
        self.served_parsed(site, body, None, source, good_at)
    }

    /// [`Refresher::served`] for a body already compiled as `robots`, so a
    /// refresh parses the origin's file once.
    fn served_parsed(
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

    /// Loads the disk copies, so a restart during an outage serves them
    /// before the first fetch even ends.
    pub fn restore(&self) {
        for site in &self.sites {
            if let Some(text) = static_text(&site.proxy) {
                self.store.set(
                    &site.name,
                    State::Serve(Arc::new(self.served(&site.name, text, Origin::Static, SystemTime::now()))),
                );
                continue;
            }
            if let Some((body, good_at)) = self.store.restore(&site.name) {
                let age = SystemTime::now().duration_since(good_at).unwrap_or_default();
                if age <= self.max_staleness {
                    let served = self.serve_good(site, Bytes::from(body), None, good_at, Origin::LastGood);
                    self.store.set(&site.name, State::Serve(Arc::new(served)));
                    tracing::info!(site = %site.name, age_secs = age.as_secs(), "restored last-known-good robots.txt from disk");
                    self.restore_hold(site);
                }
            }
        }
    }

    /// Takes back the change this gateway held before it stopped (kept on
    /// disk), when it still breaks what is declared against the copy
    /// restored: crawlers get the copy labelled `held`, and `/status` says
    /// what is held, through an outage that outlasts the restart.
    fn restore_hold(&self, site: &SiteRobots) {
        let Some((status, body, since)) = self.store.restore_hold(&site.name) else { return };
        let current = self.store.state(&site.name);
        let State::Serve(served) = &*current else { return };
        if site.declared.mode != rules::gate::Mode::Hold {
            return;
        }
        let (key, new) = match &body {
            Some(b) => (crate::gate::outcome_key(b), Policy::Rules(rules::Robots::parse(b))),
            None => {
                let status = status.unwrap_or(404);
                (robotsgate_history::gate::outcome_of_status(status), Policy::AllowAll(Reason::ClientError(status)))
            }
        };
        let breaches = rules::gate::breaches(
            &Policy::Rules(served.robots.clone()),
            &new,
            &site.declared.pins,
            &site.declared.floor,
        );
        if breaches.is_empty() {
            self.store.forget_hold(&site.name);
            return;
        }
        let hold = Arc::new(Hold { key, status, body: body.map(Bytes::from), breaches, since });
        let kept = self.relabelled(&site.name, served, Origin::Held);
        self.store.set(&site.name, State::Serve(Arc::new(kept)));
        self.metrics.robots_held.with_label_values(&[&site.name]).set(1);
        let health = Health { held: Some(hold), ..Health::clone(&self.store.health(&site.name)) };
        self.store.set_health(&site.name, health);
        tracing::info!(site = %site.name, "restored the change held before the restart; crawlers keep the last good copy");
    }

    /// Refreshes every site once.
    pub async fn refresh_all(&self) {
        for site in &self.sites {
            self.refresh(site).await;
        }
    }

    /// Refreshes one site.
    pub async fn refresh(&self, site: &SiteRobots) {
        if let Some(text) = static_text(&site.proxy) {
            let current = self.store.state(&site.name);
            let same = matches!(&*current, State::Serve(s) if s.body == text);
            if !same {
                self.store.set(
                    &site.name,
                    State::Serve(Arc::new(self.served(&site.name, text, Origin::Static, SystemTime::now()))),
                );
            }
            return;
        }
        let obs = self.fetch(site).await;
        let outcome = &obs.outcome;
        let now = SystemTime::now();
        let mut health = Health {
            last_status: outcome.status,
            last_error: outcome.error.map(|e| e.to_string()),
            last_fetch: now.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_millis() as u64),
            ..Health::clone(&self.store.health(&site.name))
        };
        // One parse compiles the file and lints it: the findings both
        // reject HTML pages and fill /status, and the compiled rules are
        // served as they are unless managed groups are added.
        let (policy, findings) = Policy::from_fetch_linted(outcome);
        let label = match policy {
            Policy::Rules(robots) => match unusable(outcome, &findings) {
                None => 'good: {
                    let body = Bytes::from(outcome.body.clone());
                    let served = self.serve_good(site, body.clone(), Some(robots), now, Origin::Origin);
                    let new = Policy::Rules(served.robots.clone());
                    let key = crate::gate::outcome_key(&body);
                    if self.holds(site, &key, outcome.status, Some(&body), &new, &mut health, now).await {
                        break 'good "held";
                    }
                    health.lint = (
                        findings.iter().filter(|d| d.severity == Severity::Error).count(),
                        findings.iter().filter(|d| d.severity == Severity::Warning).count(),
                    );
                    if let Some(groups) = &site.proxy.managed_groups {
                        health.contested = contested_agents(&outcome.body, groups);
                        if !health.contested.is_empty() {
                            tracing::warn!(site = %site.name, agents = %health.contested.join(", "), "the origin's robots.txt names agents the managed groups name too; Google merges them, so the origin's rules can outweigh the managed ones");
                        }
                    }
                    if let Some(p) = &site.proxy.ai_policy {
                        health.ai_conflicts = self.ai_compiled(p, &outcome.body).conflicts;
                        if !health.ai_conflicts.is_empty() {
                            tracing::warn!(site = %site.name, conflicts = %health.ai_conflicts.join("; "), "the origin's robots.txt says otherwise than the site's AI policy; the origin's lines stand");
                        }
                    }
                    if site.proxy.enforce {
                        let found =
                            robotsgate_crawlers::lint::unenforceable(served.robots.named_agents(), &self.catalogue);
                        if !found.is_empty() && found != health.unenforceable {
                            tracing::warn!(site = %site.name, tokens = %found.join(", "), "robots.txt has groups for usage tokens, which no request carries: enforcement cannot apply them");
                        }
                        health.unenforceable = found;
                    }
                    if let Err(e) = self.store.persist(&site.name, &outcome.body, now) {
                        tracing::warn!(site = %site.name, "cannot keep the good copy on disk: {e}");
                    }
                    if let Some(shared) = &self.shared {
                        // Off the refresh loop: a slow database delays no site.
                        let (shared, name, body) = (Arc::clone(shared), site.name.clone(), outcome.body.clone());
                        tokio::spawn(async move { shared.save(&name, &body, now).await });
                    }
                    self.store.set(&site.name, State::Serve(Arc::new(served)));
                    "ok"
                }
                Some(why) => self.fall_back(site, why),
            },
            Policy::AllowAll(reason) => {
                // A 4xx, or too many redirects (Google treats the file as
                // missing then too): everything is allowed, unless the gate
                // holds the deletion back.
                let status = rules::gate::no_file_status(&Policy::AllowAll(reason), outcome.status).unwrap_or(404);
                let key = robotsgate_history::gate::outcome_of_status(status);
                if self.holds(site, &key, Some(status), None, &Policy::AllowAll(reason), &mut health, now).await {
                    "held"
                } else {
                    if matches!(reason, Reason::ClientError(_)) {
                        tracing::info!(site = %site.name, status, "origin has no robots.txt; honouring it");
                    }
                    self.remove(site, status, now);
                    health.ai_conflicts = no_file_conflicts(site, status);
                    if matches!(reason, Reason::ClientError(_)) { "no-file" } else { "redirects" }
                }
            }
            Policy::DisallowAll(reason) => self.fall_back(
                site,
                match reason {
                    Reason::TooManyRequests => "429",
                    Reason::Unreachable(rules::TransportError::Timeout) => "timeout",
                    Reason::Unreachable(_) => "unreachable",
                    _ => "5xx",
                },
            ),
        };
        self.metrics.refresh.with_label_values(&[&site.name, label]).inc();
        let failing = !matches!(label, "ok" | "no-file" | "redirects" | "held");
        if failing {
            self.end_released_hold(site, &mut health).await;
        }
        self.store.set_health(&site.name, health);
        if failing && !matches!(&*self.store.state(&site.name), State::Serve(_)) {
            self.adopt_shared(site).await;
        }
    }

    /// Whether the gate holds back the origin's new outcome `key` (policy
    /// `new`; `body` when it is a file): true when it breaks a pin or the
    /// floor that the copy served now keeps, and nobody released it. The
    /// copy served now is then kept, labelled `held`, and the hold is
    /// recorded in `health` and, for the fleet, in the database. A site in
    /// `gate: warn` is never held; what would have been is recorded.
    ///
    /// A hold that ends here for any reason but a release (which records
    /// itself) is recorded as ended in the fleet's database, so that the
    /// monitor resolves its alert; a change `gate: warn` would have held
    /// stays reported for as long as it is served.
    #[allow(clippy::too_many_arguments)]
    async fn holds(
        &self,
        site: &SiteRobots,
        key: &str,
        status: Option<u16>,
        body: Option<&Bytes>,
        new: &Policy,
        health: &mut Health,
        at: SystemTime,
    ) -> bool {
        let (previous, would) = (health.held.clone(), health.would_hold.clone());
        let stale = matches!(&*self.store.state(&site.name), State::Serve(s) if s.age() > self.max_staleness);
        let replaced = outcome_served(&self.store.state(&site.name));
        let held = self.judge(site, key, status, body, new, health, at).await;
        if !held && previous.is_some() {
            self.store.forget_hold(&site.name);
        }
        // The outcome served until now gives way to another: a release that
        // let it through is spent, on this gateway and in the fleet, so the
        // same bytes coming back later are a new change, judged afresh.
        if !held && let Some(replaced) = replaced.filter(|r| r != key) {
            self.store.spend(&site.name, &replaced);
            if let Some(shared) = &self.shared {
                shared.spend(&site.name, &replaced, at).await;
            }
        }
        // The served file is the one warned of until another comes.
        if health.would_hold.is_none()
            && let Some(w) = would.filter(|w| w.key == key)
        {
            health.would_hold = Some(w);
        }
        self.metrics.robots_would_hold.with_label_values(&[&site.name]).set(i64::from(health.would_hold.is_some()));
        if let Some(previous) = previous
            && health.held.as_ref().is_none_or(|h| h.key != previous.key)
            && let Some(shared) = &self.shared
        {
            let why = if health.held.is_some() {
                "another change that the gate holds replaced it"
            } else if stale {
                "the last good copy outlived max_staleness, so the origin's answer is served"
            } else {
                "the origin's next answer breaks nothing declared"
            };
            let (shared, name) = (Arc::clone(shared), site.name.clone());
            tokio::spawn(async move { shared.end_hold(&name, &previous.key, why, at).await });
        }
        held
    }

    /// Ends the hold of a change released while the origin fails. A held
    /// file is the good copy from then on, served through the failure
    /// (`last-good`), on disk too, as a gateway starting now would take it
    /// from the fleet's database; a held deletion leaves the good copy
    /// served, as `last-good` (a failure passed through would read as
    /// "disallow all").
    async fn end_released_hold(&self, site: &SiteRobots, health: &mut Health) {
        let Some(hold) = health.held.clone() else { return };
        let key = &hold.key;
        if !(self.store.is_released(&site.name, key) || self.released_in_fleet(&site.name, key).await) {
            return;
        }
        health.held = None;
        self.metrics.robots_held.with_label_values(&[&site.name]).set(0);
        self.store.forget_hold(&site.name);
        let current = self.store.state(&site.name);
        let State::Serve(served) = &*current else { return };
        let kept = match &hold.body {
            Some(body) => {
                if let Err(e) = self.store.persist(&site.name, body, hold.since) {
                    tracing::warn!(site = %site.name, "cannot keep the good copy on disk: {e}");
                }
                self.serve_good(site, body.clone(), None, hold.since, Origin::LastGood)
            }
            None => self.relabelled(&site.name, served, Origin::LastGood),
        };
        self.store.set(&site.name, State::Serve(Arc::new(kept)));
        tracing::info!(site = %site.name, outcome = %key, "the held change was released while the origin fails; serving it as the last good copy until the origin answers");
    }

    /// The judgement behind [`Refresher::holds`].
    #[allow(clippy::too_many_arguments)]
    async fn judge(
        &self,
        site: &SiteRobots,
        key: &str,
        status: Option<u16>,
        body: Option<&Bytes>,
        new: &Policy,
        health: &mut Health,
        at: SystemTime,
    ) -> bool {
        let previous = health.held.take();
        health.would_hold = None;
        let gauge = self.metrics.robots_held.with_label_values(&[&site.name]);
        gauge.set(0);
        let declared = &site.declared;
        if declared.mode == rules::gate::Mode::Off {
            return false;
        }
        // With no good copy (a cold start, or the origin had no file) there
        // is nothing to keep serving: the origin's answer passes.
        let current = self.store.state(&site.name);
        let State::Serve(served) = &*current else { return false };
        if body.is_some_and(|b| *b == served.origin) {
            return false;
        }
        if served.age() > self.max_staleness {
            if previous.is_some() {
                tracing::warn!(site = %site.name, age_secs = served.age().as_secs(), "the held change passes: the last good copy is older than max_staleness");
            }
            return false;
        }
        let old = Policy::Rules(served.robots.clone());
        let breaches = rules::gate::breaches(&old, new, &declared.pins, &declared.floor);
        if breaches.is_empty() {
            return false;
        }
        if self.store.is_released(&site.name, key) || self.released_in_fleet(&site.name, key).await {
            tracing::info!(site = %site.name, outcome = key, "the change was released; serving it");
            return false;
        }
        let since = match &previous {
            Some(h) if h.key == key => h.since,
            _ => SystemTime::now(),
        };
        let hold = Arc::new(Hold { key: key.to_string(), status, body: body.cloned(), breaches, since });
        if declared.mode == rules::gate::Mode::Warn {
            tracing::warn!(site = %site.name, "gate: warn: serving a change that would have been held: {}", hold.summary());
            health.would_hold = Some(hold);
            return false;
        }
        if served.source != Origin::Held {
            let kept = self.relabelled(&site.name, served, Origin::Held);
            self.store.set(&site.name, State::Serve(Arc::new(kept)));
        }
        if previous.as_ref().is_none_or(|h| h.key != key) {
            tracing::warn!(site = %site.name, outcome = key, "a change to robots.txt is held; crawlers keep the last good copy: {}", hold.summary());
        }
        gauge.set(1);
        if previous.as_ref().is_none_or(|h| h.key != key) {
            self.store.persist_hold(&site.name, status, body.map(|b| &b[..]), hold.since);
        }
        if let Some(shared) = &self.shared {
            // Off the refresh loop, as saving is.
            let (shared, name, hold) = (Arc::clone(shared), site.name.clone(), Arc::clone(&hold));
            tokio::spawn(async move { shared.hold(&name, &hold, at).await });
        }
        health.held = Some(hold);
        true
    }

    /// Whether the fleet's database says `key` of `site` was released
    /// (false when there is none, or it cannot say now).
    async fn released_in_fleet(&self, site: &str, key: &str) -> bool {
        match &self.shared {
            Some(shared) => shared.released(site, key).await,
            None => false,
        }
    }

    /// The origin has no file (it answered `status`): the good copy goes
    /// from memory, from disk and, for every gateway sharing it, from the
    /// database, so that neither a restart nor a replica brings it back.
    fn remove(&self, site: &SiteRobots, status: u16, at: SystemTime) {
        self.store.forget(&site.name);
        self.store.set(&site.name, State::NoFile(status));
        if let Some(shared) = &self.shared {
            // Off the refresh loop, as saving is: a slow database delays no site.
            let (shared, name) = (Arc::clone(shared), site.name.clone());
            tokio::spawn(async move { shared.remove(&name, status, at).await });
        }
    }

    /// Keeps the last good copy if it is fresh enough, else lets the
    /// origin's answers through.
    fn fall_back(&self, site: &SiteRobots, why: &'static str) -> &'static str {
        self.metrics.fallback.with_label_values(&[&site.name, why]).inc();
        let current = self.store.state(&site.name);
        match &*current {
            State::Serve(served) if served.age() <= self.max_staleness => {
                if !matches!(served.source, Origin::LastGood | Origin::Held) {
                    let kept = self.relabelled(&site.name, served, Origin::LastGood);
                    self.store.set(&site.name, State::Serve(Arc::new(kept)));
                }
                tracing::warn!(site = %site.name, reason = why, age_secs = served.age().as_secs(), "origin robots.txt unusable; serving last-known-good");
            }
            State::Serve(served) => {
                tracing::warn!(site = %site.name, reason = why, age_secs = served.age().as_secs(), "last-known-good is too old; passing the origin's answer through");
                self.store.set(&site.name, State::Unknown);
            }
            _ => {
                tracing::warn!(site = %site.name, reason = why, "origin robots.txt unusable and no good copy; passing through")
            }
        }
        why
    }

    /// The served form of a good origin body: as is, or with the managed
    /// groups appended.
    fn serve_good(
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
    fn managed(&self, site: &SiteRobots, origin: &[u8]) -> Option<String> {
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
        let policy = crate::ai::policy(settings);
        let denied = crate::ai::denied_tokens(&policy, &self.catalogue);
        policy.compile(&denied, origin)
    }

    async fn fetch(&self, site: &SiteRobots) -> Observation {
        let p = &site.proxy;
        let host = p.sni.as_deref().unwrap_or(&p.hosts[0]);
        let at = robotsgate_fetch::origin::OriginAddress { origin: &p.origin, host, tls: p.origin_tls };
        self.origins.fetch(&site.name, at, &Validators::default()).await
    }
}

/// The outcome a site's state stands for, keyed as holds and releases are:
/// the origin's body served now, or the 4xx that means "no file".
fn outcome_served(state: &State) -> Option<String> {
    match state {
        State::Serve(s) if s.source != Origin::Static => Some(crate::gate::outcome_key(&s.origin)),
        State::NoFile(status) => Some(robotsgate_history::gate::outcome_of_status(*status)),
        _ => None,
    }
}

/// What `/status` says of an AI policy while the origin has no file: the
/// origin's 4xx passes through, so crawlers read no policy groups, while
/// enforcement (if on) still refuses the crawlers the policy denies.
fn no_file_conflicts(site: &SiteRobots, status: u16) -> Vec<String> {
    match &site.proxy.ai_policy {
        Some(p) if p.enforce != robotsgate_config::AiEnforce::Off => vec![format!(
            "the origin has no robots.txt ({status}), so crawlers read none of the policy's groups; enforcement refuses the crawlers it denies all the same"
        )],
        _ => Vec::new(),
    }
}

/// The line that opens the managed groups in a served file.
const MANAGED_MARK: &[u8] = rules::merge::MARK;

/// Appends managed groups so Google reads them as written (see
/// [`rules::merge`]). `None` when the result would pass 500 KiB.
pub fn merge_managed(origin: &[u8], groups: &str) -> Option<Bytes> {
    rules::merge::append(origin, groups).map(Bytes::from)
}

/// The agents (lower-cased product tokens, or `*`) that both the managed
/// groups and the origin's file name. Google merges every group naming one
/// agent, so for these the origin's rules join the managed ones, and an
/// origin `Allow` as long as a managed `Disallow` wins over it: the managed
/// rule can silently stop working.
pub fn contested_agents(origin: &[u8], groups: &str) -> Vec<String> {
    let ours = agents_named(groups.as_bytes());
    let theirs = agents_named(origin);
    ours.into_iter().filter(|a| theirs.contains(a)).collect()
}

fn agents_named(body: &[u8]) -> Vec<String> {
    #[derive(Default)]
    struct Agents(Vec<String>);
    impl rules::parse::Handler for Agents {
        fn directive(&mut self, d: &rules::parse::Directive<'_>) {
            if d.kind != rules::KeyKind::UserAgent {
                return;
            }
            let name = rules::parse::agent_key(d.value)
                .map_or_else(|| "*".to_string(), |t| String::from_utf8_lossy(&t).into_owned());
            if !name.is_empty() && !self.0.contains(&name) {
                self.0.push(name);
            }
        }
    }
    let mut agents = Agents::default();
    rules::parse::parse(body, &mut agents);
    agents.0
}

/// Whether the last group of `body` has `user-agent` lines but no rule yet,
/// so that a following `user-agent` line would join it.
fn static_text(p: &SiteProxy) -> Option<Bytes> {
    if let Some(text) = &p.robots_static {
        return Some(Bytes::from(text.clone().into_bytes()));
    }
    let path = p.robots_file.as_ref()?;
    match std::fs::read(path) {
        Ok(body) => Some(Bytes::from(body)),
        Err(e) => {
            tracing::error!(file = %path.display(), "cannot read the static robots.txt: {e}");
            None
        }
    }
}

#[async_trait]
impl BackgroundService for Refresher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        // Before the first fetch: a site with no copy on this disk (a new
        // replica) serves the fleet's while its origin is failing.
        for site in &self.sites {
            self.adopt_shared(site).await;
        }
        loop {
            self.refresh_all().await;
            tokio::select! {
                _ = shutdown.changed() => return,
                () = tokio::time::sleep(self.interval) => {}
                () = self.now.notified() => tracing::info!("refresh requested"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contested_agents_are_found() {
        let origin = b"User-agent: *\nDisallow: /admin\n\nUser-agent: gptbot/1.0\nAllow: /\n";
        let groups = "User-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\n";
        assert_eq!(contested_agents(origin, groups), vec!["gptbot"]);
        // Why it matters: the origin's `Allow: /` joins the managed group and wins the tie.
        let merged = merge_managed(origin, groups).unwrap();
        assert!(rules::Robots::parse(&merged).is_allowed("GPTBot", "https://s/page"));
        assert!(contested_agents(origin, "User-agent: *\nDisallow: /x\n") == vec!["*"]);
        assert!(contested_agents(b"User-agent: Foo\nDisallow: /\n", groups).is_empty());
    }

    #[test]
    fn managed_groups_stay_separate() {
        let origin = b"User-agent: *\nDisallow: /admin\nUser-agent: Foo";
        let merged = merge_managed(origin, "User-agent: GPTBot\nDisallow: /\n").unwrap();
        let robots = rules::Robots::parse(&merged);
        assert!(!robots.is_allowed("GPTBot", "https://s/"));
        assert!(robots.is_allowed("Foo", "https://s/anything"), "Foo keeps its empty group");
        assert!(!robots.is_allowed("other", "https://s/admin"));
        let plain = merge_managed(b"User-agent: *\nDisallow: /x\n", "User-agent: CCBot\nDisallow: /").unwrap();
        assert!(!std::str::from_utf8(&plain).unwrap().contains("Disallow:\n\n"));
        let big = vec![b'#'; rules::parse::MAX_FILE_BYTES];
        assert!(merge_managed(&big, "User-agent: x\nDisallow: /").is_none());
    }
}
