//! The monitor: two public steps and a loop around them.
//!
//! `poll_once` turns one fetch into an `Observation`, records it, and when
//! what crawlers obey changed (new bytes, or a status that changes the
//! policy) re-tests every URL set under the old and the new `Policy`,
//! records the verdicts and queues one alert, all in one transaction.
//! `deliver_once` sends queued alerts. `run_until_stopped` schedules both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use robotsgate_config::{Config, Site, Source};
use rules::Policy;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::change::{self, Change, Target};
use crate::clock::now_ms;
use crate::mail::Mailer;
use crate::source::{self, Observation, Validators};
use crate::store::{NewState, PollRecord, Store, StoreError, body_hash};

/// How long a lease on a site outlives the fetch timeout. A poll is one
/// bounded fetch and a few writes, so a monitor killed mid-poll holds the
/// site back for about this long, and a live one never loses its lease.
const LEASE_MARGIN: Duration = Duration::from_secs(30);
/// How long a claim on an alert lasts. A monitor killed mid-send leaves
/// its claim behind, so this is kept short: just past the longest a send
/// may take, after which no other monitor can still be sending it.
const ALERT_LEASE: Duration = Duration::from_secs(crate::mail::SEND_LIMIT.as_secs() + 5);
/// How often one poll decides again after other monitors recorded states
/// of its site first. Leases make even one retry rare.
const CONTENDED_TRIES: usize = 4;
/// How often an unchanged file's revision has its `last_seen` moved
/// forward: what a gateway starting cold needs to pick the newest copy,
/// without a write per poll.
const TOUCH_EVERY_MS: i64 = 15 * 60 * 1000;
/// Most polls running at once.
const CONCURRENT_POLLS: usize = 64;
/// Free poll slots that make the scheduler look for due sites.
const REFILL: usize = CONCURRENT_POLLS / 4;
/// How often the daemon looks for alerts to deliver.
const DELIVERY_EVERY_MS: i64 = 500;

/// What crawlers obeyed at the last recorded state of a site. The
/// database holds the truth; this is a parsed copy of one state row, used
/// only while the site's row still points at that state.
#[derive(Clone, Debug)]
struct Known {
    state_id: i64,
    /// When the state began (Unix ms).
    at: i64,
    key: String,
    policy: Policy,
    body: Option<Vec<u8>>,
    /// The state's revision and its hash, when it is a file's rules.
    revision: Option<(i64, String)>,
    /// When this monitor last moved the revision's `last_seen` forward.
    touched: i64,
    /// The outage's critical alert was queued (see `critical_after`).
    escalated: bool,
}

/// What one poll did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollOutcome {
    /// The site.
    pub site: String,
    /// The policy label after the poll.
    pub policy: &'static str,
    /// A new revision was stored.
    pub new_revision: bool,
    /// The state changed.
    pub changed: bool,
    /// Verdicts that flipped.
    pub flips: usize,
    /// An alert was queued.
    pub alerted: bool,
}

/// How old a site's last fetch may be before the site is stale: three of
/// the longest configured intervals, and a minute.
pub fn stale_ms(config: &Config) -> i64 {
    let longest = config.sites.iter().map(|s| config.interval_of(s)).max().unwrap_or_default();
    3 * longest.as_millis() as i64 + 60_000
}

/// The running monitor.
#[derive(Debug)]
pub struct Monitor {
    config: Config,
    store: Store,
    client: reqwest::Client,
    mailer: Option<Mailer>,
    owner: String,
    known: Mutex<HashMap<String, Known>>,
    catalogue: robotsgate_crawlers::Catalogue,
    /// Clients for the origins of sites only gateways front.
    origins: source::origin::Origins,
    /// Where polls take their leases and write, together ([`crate::batch`]).
    batch: crate::batch::Batcher,
    /// Fetches of robots.txt URLs, with `http.connect_to` and `http.ca_file`.
    fetcher: source::Fetcher,
    /// When each site's sitemaps were last checked, against which file.
    sitemap_schedule: crate::sitemaps::Schedule,
}

impl Monitor {
    /// Opens the store, registers the sites and builds the HTTP and SMTP
    /// clients. `base` is the directory relative database paths are under.
    pub async fn build(mut config: Config, base: &Path) -> anyhow::Result<Monitor> {
        use anyhow::Context;
        // A site only gateways front is polled at its origin (`Source::Origin`);
        // only a site with nothing at all to read is left out.
        config.sites.retain(|s| s.source() != Source::None);
        let store = Store::open(config.database(), base).await?;
        let names: Vec<&str> = config.sites.iter().map(|s| s.name.as_str()).collect();
        store.ensure_sites(&names).await?;
        let client =
            source::client(config.http.timeout, &config.http.user_agent).context("building the HTTP client")?;
        let mailer = config.email.as_ref().map(Mailer::new).transpose()?;
        let owner = format!("{}:{}", std::process::id(), now_ms());
        // Checked when the config was loaded.
        let catalogue = config.catalogue().context("crawlers")?;
        let ca = match config.proxy.as_ref().and_then(|p| p.origin_ca_file.as_ref()) {
            Some(path) => Some(source::origin::ca_file(path).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let origins = source::origin::Origins::new(config.http.timeout, &config.http.user_agent, ca);
        let http_ca = match &config.http.ca_file {
            Some(path) => Some(source::origin::ca_file(path).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let fetcher =
            source::Fetcher::new(config.http.timeout, &config.http.user_agent, &config.http.connect_to(), http_ca)
                .context("building the HTTP client")?;
        let batch = crate::batch::Batcher::start(store.pool().clone());
        Ok(Monitor {
            config,
            store,
            client,
            mailer,
            owner,
            known: Mutex::new(HashMap::new()),
            catalogue,
            origins,
            batch,
            fetcher,
            sitemap_schedule: Default::default(),
        })
    }

    /// This process's lease owner id (`PID:START_MS`), as `sites.leased_by` holds it.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The store, for reports and tests.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The crawler catalogue: the built-in one with the config's `crawlers:`.
    pub fn catalogue(&self) -> &robotsgate_crawlers::Catalogue {
        &self.catalogue
    }

    /// Lints a robots.txt body: the engine's findings and the catalogue's
    /// (token typos, usage tokens), by line.
    pub fn lint(&self, body: &[u8]) -> Vec<rules::Diagnostic> {
        robotsgate_crawlers::lint::all(body, &self.catalogue)
    }

    /// Where polls write together.
    pub(crate) fn batch(&self) -> &crate::batch::Batcher {
        &self.batch
    }

    /// The fetcher of robots.txt URLs.
    pub(crate) fn fetcher(&self) -> &source::Fetcher {
        &self.fetcher
    }

    /// When each site's sitemaps were last checked.
    pub(crate) fn sitemap_schedule(&self) -> &crate::sitemaps::Schedule {
        &self.sitemap_schedule
    }

    /// The clients for sites' origins.
    pub(crate) fn origins(&self) -> &source::origin::Origins {
        &self.origins
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The site called `name`.
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.config.site(name)
    }

    /// Every URL the site tests, once each, with its pin.
    pub fn targets(site: &Site) -> Vec<Target> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for entry in site.url_sets.values().flatten() {
            if seen.insert(entry.url().to_string()) {
                out.push(Target { url: entry.url().to_string(), expect: entry.expect().cloned() });
            }
        }
        out
    }

    /// What the reports judge a change by ([`crate::report::diff`], `test`):
    /// the saved URLs, then the root, which the gate's floor guards for
    /// every site, saved or not. A change that disallows `/` is then never
    /// "0 verdict flips".
    pub fn judged(site: &Site) -> Vec<Target> {
        let mut out = Monitor::targets(site);
        if !out.iter().any(|t| t.url == "/") {
            out.insert(0, Target { url: "/".to_string(), expect: None });
        }
        out
    }

    /// Fetches a site's robots.txt now, without recording anything.
    pub async fn observe(&self, site: &Site, validators: &Validators) -> Observation {
        match site.source() {
            Source::Url(url) => self.fetcher.fetch(&url, validators).await,
            Source::File(path) => source::read_local(&path).await,
            Source::Origin { origin, host, tls } => {
                let at = source::origin::OriginAddress { origin: &origin, host: &host, tls };
                self.origins.fetch(&site.name, at, validators).await
            }
            Source::Static(text) => source::given(text.as_bytes()),
            // Such sites are dropped in `build`; should one get here, say
            // so as a failure rather than invent an answer.
            Source::None => source::unreachable(rules::TransportError::Other),
        }
    }

    /// Polls `site` if it is due (or `force`) and no other monitor holds
    /// it; `Ok(None)` when it was not ours to poll.
    #[tracing::instrument(skip_all, fields(site = %site.name))]
    pub async fn poll_once(&self, site: &Site, force: bool) -> Result<Option<PollOutcome>, StoreError> {
        let lease = (self.config.http.timeout + LEASE_MARGIN).as_millis() as i64;
        let claim = crate::batch::Claim {
            site: site.name.clone(),
            owner: self.owner.clone(),
            now: now_ms(),
            lease_ms: lease,
            force,
        };
        let Some(row) = self.batch.claim(claim).await? else {
            return Ok(None);
        };
        let result = self.poll_claimed(site, row).await;
        let outcome = result.as_ref().map_or("error", |o| o.policy);
        crate::counters::counters().polls.with_label_values(&[outcome]).inc();
        if result.is_err() {
            // Try again after a short pause rather than after a full interval.
            let _ = self.store.release(&site.name, now_ms() + 30_000).await;
        }
        result.map(Some)
    }

    async fn poll_claimed(&self, site: &Site, row: crate::store::SiteRow) -> Result<PollOutcome, StoreError> {
        // Never polled before: no place of it is on record either.
        let first_sight = row.state_id.is_none();
        let mut known = self.known(site, &row).await?;
        let validators = Validators { etag: row.etag.clone(), last_modified: row.last_modified.clone() };
        let mut obs = self.observe(site, &validators).await;
        if obs.not_modified {
            match known.as_ref().and_then(|k| k.body.clone()) {
                Some(body) => {
                    let mut outcome = obs.outcome.clone();
                    outcome.status = Some(200);
                    outcome.body = body;
                    obs.outcome = outcome;
                }
                // A 304 for a body we do not have: ask again, unconditionally.
                None => obs = self.observe(site, &Validators::default()).await,
            }
        }
        let outcome = &obs.outcome;
        let policy = Policy::from_fetch(outcome);
        let body = matches!(policy, Policy::Rules(_)).then(|| outcome.body.clone());
        let hash = body.as_deref().map(body_hash).unwrap_or_default();
        let key = change::state_key(&policy, &hash);
        let at = outcome.fetched_at.duration_since(UNIX_EPOCH).map_or_else(|_| now_ms(), |d| d.as_millis() as i64);
        let agents = self.config.agents_of(site).to_vec();
        let targets = Monitor::targets(site);
        let urls: Vec<&str> = targets.iter().map(|t| t.url.as_str()).collect();
        let mut record = PollRecord {
            site: site.name.clone(),
            at,
            status: outcome.status.map(i64::from),
            error: outcome.error.map(|e| e.to_string()),
            latency_ms: obs.latency.as_millis() as i64,
            redirects: outcome.redirects.len() as i64,
            truncated: outcome.truncated,
            body: body.clone(),
            etag: obs.etag.clone(),
            last_modified: obs.last_modified.clone(),
            next_poll_at: now_ms() + jittered(self.config.interval_of(site)).as_millis() as i64,
            run: row.run.clone(),
            known_revision: None,
        };

        // The decision is made against the state the database holds, and
        // committed only if it still holds it; when another monitor moved
        // the site on meanwhile, decide again against the new state.
        for _ in 0..CONTENDED_TRIES {
            // A state that began after this fetch is newer news than it.
            let changed = match &known {
                None => true,
                Some(k) => k.key != key && k.at <= at,
            };
            let flips = match (&known, changed) {
                (Some(k), true) => rules::flips(&k.policy, &policy, &urls, &agents),
                _ => Vec::new(),
            };
            let new_state = changed.then(|| {
                // The site's pins, expanded once a change: the broken-pin
                // list and the gate both judge them.
                let pins = site.pins(&agents, &self.catalogue);
                let location = location(site);
                let change = Change {
                    site: &site.name,
                    location: &location,
                    old: known.as_ref().map(|k| &k.policy),
                    new: &policy,
                    old_body: known.as_ref().and_then(|k| k.body.as_deref()),
                    new_body: body.as_deref(),
                    redirects: outcome.redirects.len(),
                    truncated: outcome.truncated,
                    flips: &flips,
                    broken: change::broken(&policy, &pins),
                    outage_critical: self.config.critical_after.is_zero(),
                    console: self.console_url(),
                    gate: change::gate_note(site, &pins, &self.catalogue, known.as_ref().map(|k| &k.policy), &policy),
                    ai_policy: change::ai_contradictions(
                        site.proxy.as_ref().and_then(|p| p.ai_policy.as_ref()),
                        &self.catalogue,
                        known.as_ref().and_then(|k| k.body.as_deref()),
                        body.as_deref(),
                    ),
                };
                let alert = change::alert(&change);
                let severity = change::severity(&change);
                // Keyed as the gateway keys what it holds.
                let held_outcome = change.gate.as_ref().filter(|g| g.held).map(|_| {
                    rules::gate::no_file_status(&policy, outcome.status)
                        .map_or_else(|| hash.clone(), robotsgate_history::gate::outcome_of_status)
                });
                let channels = match alert {
                    Some(_) => self.channels_for(&site.name, severity),
                    None => Vec::new(),
                };
                NewState {
                    severity: severity.as_str(),
                    channels,
                    previous: known.as_ref().map(|k| k.state_id),
                    key: key.clone(),
                    with_revision: body.is_some(),
                    policy: policy.label().to_string(),
                    reason: match &policy {
                        Policy::Rules(_) => None,
                        Policy::AllowAll(r) | Policy::DisallowAll(r) => Some(r.to_string()),
                    },
                    verdicts: change::verdicts(&policy, &targets, &agents),
                    alert,
                    held_outcome,
                }
            });
            // The bytes of the current state's revision need no write, but
            // for moving its `last_seen` forward now and then.
            record.known_revision = known.as_ref().and_then(|k| match &k.revision {
                Some((id, h)) if body.is_some() && *h == hash && at - k.touched < TOUCH_EVERY_MS => Some(*id),
                _ => None,
            });
            let Some(committed) = self.batch.commit(record.clone(), new_state.clone()).await? else {
                tracing::info!(site = %site.name, "another monitor recorded a state first; deciding again");
                let row = self.store.site(&site.name).await?;
                record.run = row.run.clone();
                known = self.known(site, &row).await?;
                continue;
            };
            // Only what was queued: a held change whose alert the hold
            // raises (or raised) queues none here.
            if let Some(state) = &new_state
                && let Some((subject, _, _)) = &state.alert
            {
                if committed.alerted {
                    tracing::warn!(site = %site.name, %subject, flips = flips.len(), "alert queued");
                } else {
                    tracing::info!(site = %site.name, %subject, "no alert queued: the hold at the edge raises this change's alert");
                }
            }
            tracing::info!(
                site = %site.name,
                // Numbers and words, not Rust's debug text: a field that
                // does not apply is left out.
                status = outcome.status.map(i64::from),
                error = outcome.error.map(|e| e.to_string()),
                policy = policy.label(),
                changed,
                new_revision = committed.new_revision,
                "polled"
            );
            let label = policy.label();
            {
                let mut cache = self.known.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(state_id) = committed.state_id {
                    let now_known = Known {
                        state_id,
                        at,
                        key: key.clone(),
                        policy: policy.clone(),
                        body: body.clone(),
                        revision: committed.revision_id.filter(|_| body.is_some()).map(|id| (id, hash.clone())),
                        touched: at,
                        escalated: false,
                    };
                    cache.insert(site.name.clone(), now_known);
                } else if record.known_revision.is_none()
                    && body.is_some()
                    && let Some(k) = cache.get_mut(&site.name)
                    && k.revision.as_ref().is_some_and(|(_, h)| *h == hash)
                {
                    k.touched = at;
                }
            }
            if !changed && let Some(k) = &known {
                self.escalate(site, k, at).await?;
            }
            // The other places crawlers look, judged against this answer;
            // their trouble never fails the poll of the site itself.
            if let Err(e) = self.check_places(site, &obs, first_sight).await {
                tracing::error!(site = %site.name, "checking the site's variants and edge: {e}");
            }
            // The sitemaps it names, when due; as with the places, their
            // trouble never fails the poll.
            if let Err(e) = self.check_sitemaps(site, &obs).await {
                tracing::error!(site = %site.name, "checking the site's sitemaps: {e}");
            }
            return Ok(PollOutcome {
                site: site.name.clone(),
                policy: label,
                new_revision: committed.new_revision,
                changed,
                flips: flips.len(),
                alerted: committed.alerted,
            });
        }
        Err(StoreError::Contended(site.name.clone()))
    }

    /// The console's public address, for links in alerts.
    pub(crate) fn console_url(&self) -> Option<&str> {
        self.config.console.as_ref().and_then(|c| c.url.as_deref())
    }

    /// Queues the critical alert of an outage that has lasted past
    /// `critical_after`, once per outage across every monitor sharing the
    /// database.
    async fn escalate(&self, site: &Site, k: &Known, now: i64) -> Result<(), StoreError> {
        let after = self.config.critical_after.as_millis() as i64;
        let Policy::DisallowAll(reason) = &k.policy else { return Ok(()) };
        if after == 0 || k.escalated || now - k.at < after {
            return Ok(());
        }
        let alert = change::escalation(&site.name, &location(site), &reason.to_string(), k.at, now, self.console_url());
        let severity = robotsgate_config::AlertSeverity::Critical;
        let channels = self.channels_for(&site.name, severity);
        let queued = crate::store::QueuedAlert {
            alert: &alert,
            severity: severity.as_str(),
            channels: &channels,
            kind: "escalation",
        };
        if self.store.escalate(&site.name, k.state_id, now, &queued).await? {
            tracing::warn!(site = %site.name, subject = %alert.0, "outage escalated");
        }
        if let Some(c) = self.known.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&site.name)
            && c.state_id == k.state_id
        {
            c.escalated = true;
        }
        Ok(())
    }

    /// The channels that deliver an alert of `severity` about `site` one by
    /// one (digest channels collect theirs in their digest instead).
    pub(crate) fn channels_for(&self, site: &str, severity: robotsgate_config::AlertSeverity) -> Vec<String> {
        crate::channels::direct(&self.config, site, severity)
    }

    /// The state the database says a site is in: the parsed copy kept from
    /// an earlier poll when the site's row still points at it, or rebuilt
    /// from the database (after a restart, or after another monitor
    /// recorded a change).
    async fn known(&self, site: &Site, row: &crate::store::SiteRow) -> Result<Option<Known>, StoreError> {
        let (Some(state_id), Some(key)) = (row.state_id, row.state_key.clone()) else { return Ok(None) };
        if let Some(k) = self.known.lock().unwrap_or_else(|e| e.into_inner()).get(&site.name)
            && k.state_id == state_id
        {
            return Ok(Some(k.clone()));
        }
        let Some(state) = self.store.state(state_id).await? else { return Ok(None) };
        let escalated = state.escalated_at.is_some();
        let known = if let Some(rev) = state.revision_id {
            let body = self.store.revision_body(&site.name, rev).await?.unwrap_or_default();
            let policy = Policy::Rules(rules::Robots::parse(&body));
            let revision = Some((rev, body_hash(&body)));
            Some(Known { state_id, at: state.at, key, policy, body: Some(body), revision, touched: 0, escalated })
        } else {
            // The status the state began with, as stored, not a stand-in.
            let status = self.store.status_at(&site.name, state.at).await?.and_then(|s| u16::try_from(s).ok());
            change::policy_from_key(&key, status).map(|policy| Known {
                state_id,
                at: state.at,
                key,
                policy,
                body: None,
                revision: None,
                touched: 0,
                escalated,
            })
        };
        if let Some(k) = &known {
            self.known.lock().unwrap_or_else(|e| e.into_inner()).insert(site.name.clone(), k.clone());
        }
        Ok(known)
    }

    /// Queues the alerts of holds the gateways recorded ([`crate::holds`]),
    /// then sends every alert that is due, by mail and to its channels; returns
    /// how many were sent. Without email configured, alerts stay recorded
    /// (and were logged when queued).
    pub async fn deliver_once(&self) -> Result<usize, StoreError> {
        // Holds the gateways recorded raise their alerts first, so that they
        // go out in this round.
        crate::holds::raise(&self.store, &self.config).await?;
        let mut sent = self.deliver_channels().await?;
        if self.config.channels.iter().any(|c| c.digest.is_some()) {
            sent += crate::digest::deliver(&self.store, &self.client, &self.config.channels, now_ms).await?;
        }
        let Some(mailer) = &self.mailer else { return Ok(sent) };
        while let Some(alert) = self.store.claim_alert(now_ms(), ALERT_LEASE.as_millis() as i64).await? {
            match mailer.send(&alert).await {
                Ok(()) => {
                    crate::counters::counters().deliveries.with_label_values(&["email", "sent"]).inc();
                    self.store.alert_sent(alert.id, now_ms()).await?;
                    tracing::info!(site = %alert.site, subject = %alert.subject, "alert sent");
                    sent += 1;
                }
                Err(e) if e.is_permanent() => {
                    // Refused for good: kept with its reason, never sent
                    // again; the next alert is tried (the refusal may be
                    // this message's alone).
                    crate::counters::counters().deliveries.with_label_values(&["email", "refused"]).inc();
                    self.store.alert_failed(alert.id, &e.to_string(), crate::store::GIVEN_UP).await?;
                    tracing::error!(site = %alert.site, error = %e, "the mail server refused an alert; it is not retried");
                }
                Err(e) => {
                    crate::counters::counters().deliveries.with_label_values(&["email", "failed"]).inc();
                    let backoff = crate::channels::backoff(alert.attempts);
                    self.store.alert_failed(alert.id, &e.to_string(), now_ms() + backoff).await?;
                    // The rest are not tried this round: say why they wait.
                    let waiting = format!("not tried yet: mail to the server failed on alert {}: {e}", alert.id);
                    self.store.alerts_waiting(&waiting, now_ms()).await?;
                    tracing::warn!(site = %alert.site, error = %e, retry_in_ms = backoff, "alert delivery failed");
                    break;
                }
            }
        }
        Ok(sent)
    }

    /// Sends every channel delivery that is due (webhooks, Slack).
    async fn deliver_channels(&self) -> Result<usize, StoreError> {
        if self.config.channels.is_empty() {
            return Ok(0);
        }
        let mut sent = 0;
        // A channel that failed waits for its back-off; the others go on.
        let mut failed: Vec<String> = Vec::new();
        while let Some(d) = crate::channels::claim(&self.store, now_ms(), &failed).await? {
            let result = match self.config.channels.iter().find(|c| c.name == d.channel) {
                Some(channel) => crate::channels::send(&self.client, channel, &d, now_ms()).await,
                // A channel removed from the config since: say so, and keep it.
                None => Err(format!("no channel named `{}` in the config", d.channel)),
            };
            match &result {
                Ok(()) => {
                    tracing::info!(site = %d.site, channel = %d.channel, "alert delivered");
                    sent += 1;
                }
                Err(e) => tracing::warn!(site = %d.site, channel = %d.channel, error = %e, "alert delivery failed"),
            }
            let label = if result.is_ok() { "sent" } else { "failed" };
            crate::counters::counters().deliveries.with_label_values(&[&d.channel, label]).inc();
            if result.is_err() {
                failed.push(d.channel.clone());
            }
            crate::channels::finish(&self.store, &d, result, now_ms()).await?;
        }
        Ok(sent)
    }

    /// Polls every site once, whether due or not, then delivers alerts.
    pub async fn once(self: &Arc<Self>) -> anyhow::Result<Vec<PollOutcome>> {
        // At most CONCURRENT_POLLS at once, as the daemon polls: ten
        // thousand polls started together queued on the database's
        // connections for longer than its slow-acquire threshold.
        let mut tasks = JoinSet::new();
        let mut out = Vec::new();
        let mut next = 0;
        loop {
            while next < self.config.sites.len() && tasks.len() < CONCURRENT_POLLS {
                let (me, i) = (Arc::clone(self), next);
                tasks.spawn(async move {
                    let site = &me.config.sites[i];
                    me.poll_once(site, true).await.map_err(|e| anyhow::anyhow!("site `{}`: {e}", site.name))
                });
                next += 1;
            }
            let Some(done) = tasks.join_next().await else { break };
            match done? {
                Ok(Some(o)) => out.push(o),
                Ok(None) => {}
                Err(e) => tracing::error!("{e:#}"),
            }
        }
        out.sort_by(|a, b| a.site.cmp(&b.site));
        if let Err(e) = self.deliver_once().await {
            tracing::error!("delivering alerts: {e}");
        }
        Ok(out)
    }

    /// The daemon: polls sites as they fall due and when watched files
    /// change, delivers alerts, prunes old fetches, and returns when
    /// `shutdown` resolves, after the polls in flight finish.
    pub async fn run_until_stopped(
        self: Arc<Self>,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<()> {
        let (changed_tx, mut changed_rx) = mpsc::unbounded_channel::<String>();
        let _watcher = crate::watch::watch(&self.config.sites, changed_tx)?;
        let by_name: HashMap<String, usize> =
            self.config.sites.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
        let mut polls: JoinSet<()> = JoinSet::new();
        let (mut last_prune, mut last_delivery) = (0i64, 0i64);
        // The last query for due sites filled every free slot: more are due.
        let mut more_due = false;
        tokio::pin!(shutdown);
        loop {
            while polls.try_join_next().is_some() {}
            let now = now_ms();
            let free = CONCURRENT_POLLS - polls.len();
            // Refill in batches: one query per quarter of the slots, not
            // one per finished poll (at 100,000 sites the scheduler's own
            // queries were a third of the database's work).
            if free >= REFILL || polls.is_empty() {
                let due = self.store.due_sites(now, free as i64).await.unwrap_or_else(|e| {
                    tracing::error!("finding due sites: {e}");
                    Vec::new()
                });
                more_due = due.len() == free;
                for name in due {
                    if let Some(&i) = by_name.get(&name) {
                        self.spawn_poll(&mut polls, i, false);
                    }
                }
            }
            if now - last_delivery >= DELIVERY_EVERY_MS {
                last_delivery = now;
                if let Err(e) = self.deliver_once().await {
                    tracing::error!("delivering alerts: {e}");
                }
            }
            if now - last_prune > 3_600_000 {
                last_prune = now;
                let before = now - self.config.fetch_retention.as_millis() as i64;
                match self.store.prune_fetches(before).await {
                    Ok(n) if n > 0 => tracing::info!(rows = n, "pruned old fetches"),
                    Ok(_) => {}
                    Err(e) => tracing::error!("pruning fetches: {e}"),
                }
            }
            let wait = if more_due {
                // Finished polls wake the loop; this is only a backstop.
                Duration::from_millis(DELIVERY_EVERY_MS as u64)
            } else {
                match self.store.next_due().await {
                    Ok(Some(due)) => Duration::from_millis((due - now_ms()).clamp(50, 1000) as u64),
                    _ => Duration::from_secs(1),
                }
            };
            tokio::select! {
                () = &mut shutdown => break,
                Some(name) = changed_rx.recv() => {
                    // Let a burst of events from one deploy settle into one poll.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let mut names = vec![name];
                    while let Ok(n) = changed_rx.try_recv() { names.push(n); }
                    names.sort();
                    names.dedup();
                    for n in names {
                        if let Some(&i) = by_name.get(&n) { self.spawn_poll(&mut polls, i, true); }
                    }
                }
                // A poll finished: its slot can take the next due site now,
                // rather than after the sleep (which capped the daemon at
                // one batch per 50 ms).
                Some(_) = polls.join_next(), if !polls.is_empty() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        tracing::info!(in_flight = polls.len(), "shutting down");
        while polls.join_next().await.is_some() {}
        Ok(())
    }

    fn spawn_poll(self: &Arc<Self>, polls: &mut JoinSet<()>, index: usize, force: bool) {
        let me = Arc::clone(self);
        polls.spawn(async move {
            let site = &me.config.sites[index];
            if let Err(e) = me.poll_once(site, force).await {
                tracing::error!(site = %site.name, "poll failed: {e}");
            }
        });
    }
}

/// The interval with ±10% jitter, so that sites configured together do not
/// all poll in the same second.
fn jittered(interval: Duration) -> Duration {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let spread = interval.as_millis() as f64 * 0.2;
    let offset = (f64::from(nanos % 1000) / 1000.0 - 0.5) * spread;
    Duration::from_millis((interval.as_millis() as f64 + offset).max(1.0) as u64)
}

/// Where the config file's relative paths are anchored.
pub fn base_dir(config_path: &Path) -> PathBuf {
    config_path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Where a site's robots.txt lives, as alerts name it.
fn location(site: &Site) -> String {
    site.source().location()
}
