//! The gate at the edge: before the refresher adopts a new origin outcome
//! (a new body, or a 4xx that means "no file"), it asks
//! [`rules::gate::breaches`] whether the change breaks a pin or the floor.
//! A change that does is held: crawlers keep the last good copy, served
//! with `X-Robots-Source: held`, until the owner releases exactly that
//! outcome (the admin API's `POST /release`, or through the database for a
//! fleet), the pins change, or the copy passes `max_staleness`.
//!
//! This file is the gate's judgement, which the refresher runs before it
//! adopts an outcome, never on the request path: whether a change is held,
//! whether a release lets it through (asked one way, [`Refresher::released`]),
//! and which copy a starting gateway may take from the fleet. What it
//! judges with (the declarations, the hold) is in `hold`.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use rules::Policy;

use super::hold::{Hold, outcome_key};
use super::refresher::{Refresher, SiteRobots};
use super::shared::Shared;
use super::store::{Health, Origin, State};

/// A new origin outcome, as the gate judges it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outcome<'a> {
    /// Its key, as holds and releases name it ([`outcome_key`], or
    /// `status:NNN`).
    pub key: &'a str,
    /// The origin's status.
    pub status: Option<u16>,
    /// The body, when the origin answered with a file.
    pub body: Option<&'a Bytes>,
    /// What crawlers would read from it.
    pub new: &'a Policy,
}

/// The outcome a site's state stands for, keyed as holds and releases are:
/// the origin's body served now, or the 4xx that means "no file".
fn outcome_served(state: &State) -> Option<String> {
    match state {
        State::Serve(s) if s.source != Origin::Static => Some(outcome_key(&s.origin)),
        State::NoFile(status) => Some(robotsgate_history::gate::outcome_of_status(*status)),
        _ => None,
    }
}

/// The gate's judgement, run by the refresher.
impl Refresher {
    /// Whether the owner released the outcome `key` of `site`: through this
    /// gateway's admin API, or through `fleet`'s database (the console, the
    /// CLI, another gateway). The one way every judgement asks it; false
    /// when the database cannot say now.
    pub(super) async fn released(&self, site: &str, key: &str, fleet: Option<&Shared>) -> bool {
        if self.store.is_released(site, key) {
            return true;
        }
        match fleet {
            Some(shared) => shared.released(site, key).await,
            None => false,
        }
    }

    /// Which of `candidates` (newest first) a gateway may take: the newest
    /// that the gate would not hold against the copy it would replace (the
    /// one served now, or for a gateway with none, the next older
    /// candidate), or that was released. A copy another process recorded
    /// before any gateway held it (the monitor polling the origin, say) is
    /// so judged as a fetch would be, and a cold gateway never starts on a
    /// deploy of `Disallow: /` that its fleet would hold.
    pub(super) async fn first_unheld(
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
            let key = crate::robots::gate::outcome_key(body);
            if rules::gate::breaches(&old, &new, &site.declared.pins, &site.declared.floor()).is_empty()
                || self.released(&site.name, &key, Some(shared)).await
            {
                return Some(i);
            }
            if current.is_some() {
                return None;
            }
        }
        None
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
    pub(super) async fn holds(
        &self,
        site: &SiteRobots,
        outcome: &Outcome<'_>,
        health: &mut Health,
        at: SystemTime,
    ) -> bool {
        let key = outcome.key;
        let (previous, would) = (health.held.clone(), health.would_hold.clone());
        let stale = matches!(&*self.store.state(&site.name), State::Serve(s) if s.age() > self.max_staleness);
        let replaced = outcome_served(&self.store.state(&site.name));
        let held = self.judge(site, outcome, health, at).await;
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
    pub(super) async fn end_released_hold(&self, site: &SiteRobots, health: &mut Health) {
        let Some(hold) = health.held.clone() else { return };
        let key = &hold.key;
        if !self.released(&site.name, key, self.shared.as_deref()).await {
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
    pub(super) async fn judge(
        &self,
        site: &SiteRobots,
        outcome: &Outcome<'_>,
        health: &mut Health,
        at: SystemTime,
    ) -> bool {
        let Outcome { key, status, body, new } = *outcome;
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
        let breaches = rules::gate::breaches(&old, new, &declared.pins, &declared.floor());
        if breaches.is_empty() {
            return false;
        }
        if self.released(&site.name, key, self.shared.as_deref()).await {
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
}
