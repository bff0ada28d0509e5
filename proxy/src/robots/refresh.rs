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
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use robotsgate_config::SiteProxy;
use robotsgate_fetch::{Observation, Validators};
use rules::lint::{Code, Severity};
use rules::{Policy, Reason};

use super::gate::Outcome;
use super::hold::{Hold, outcome_key};
use super::refresher::{Refresher, SiteRobots};
use crate::robots::shared::Shared;
use crate::robots::store::{Health, Origin, State};

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
                let merged = memchr::memmem::find(body, rules::merge::MARK).is_some();
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
            Some(b) => (outcome_key(b), Policy::Rules(rules::Robots::parse(b))),
            None => {
                let status = status.unwrap_or(404);
                (robotsgate_history::gate::outcome_of_status(status), Policy::AllowAll(Reason::ClientError(status)))
            }
        };
        let breaches = rules::gate::breaches(
            &Policy::Rules(served.robots.clone()),
            &new,
            &site.declared.pins,
            &site.declared.floor(),
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
            self.read_sitemaps(site);
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
                    let key = outcome_key(&body);
                    let judged = Outcome { key: &key, status: outcome.status, body: Some(&body), new: &new };
                    if self.holds(site, &judged, &mut health, now).await {
                        break 'good "held";
                    }
                    health.lint = (
                        findings.iter().filter(|d| d.severity == Severity::Error).count(),
                        findings.iter().filter(|d| d.severity == Severity::Warning).count(),
                    );
                    if let Some(groups) = &site.proxy.managed_groups {
                        health.contested = rules::merge::contested(&outcome.body, groups);
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
                let new = Policy::AllowAll(reason);
                let judged = Outcome { key: &key, status: Some(status), body: None, new: &new };
                if self.holds(site, &judged, &mut health, now).await {
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

    async fn fetch(&self, site: &SiteRobots) -> Observation {
        let p = &site.proxy;
        let host = p.sni.as_deref().unwrap_or(&p.hosts[0]);
        let at = robotsgate_fetch::origin::OriginAddress { origin: &p.origin, host, tls: p.origin_tls };
        self.origins.fetch(&site.name, at, &Validators::default()).await
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

/// The static robots.txt a site serves instead of its origin's: its
/// `robots_static` text, or its `robots_file` read now.
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
