//! Compliance: one crawler request judged against the robots.txt the
//! crawler could hold when it made it. Pure: the caller (the gateway, a log
//! importer) supplies the site's served outcomes with the times each was
//! served, the crawler's last robots.txt fetch, and its cache window.
//!
//! - If the crawler's last fetch from this host is within the window, it
//!   holds exactly what that fetch got (a 503 included, read as "disallow
//!   all", as the fetch policy in `rules` reads it).
//! - Otherwise it could hold any outcome served within the window before
//!   the request. A fetch older than the window protects nobody: the
//!   judgement says `stale`.
//!
//! Classes: **obeyed** (allowed by what it holds; with no fetch seen,
//! allowed by the outcome current at the request), **violation**
//! (disallowed by everything it could hold), **grace** (no fetch seen in
//! the window; disallowed by the current outcome but allowed by an older
//! one still inside the window).
//!
//! Rules stated and tested here: the window edge is inclusive; events in
//! the same millisecond are ordered by their sequence number (the order
//! the log or the gateway saw them); a `/robots.txt` fetch is recorded,
//! never judged; every method is judged as GET; a spoofed request is
//! judged as an anonymous client (the `*` group) against the outcomes in
//! the window, and no fetch protects it; a path is disallowed if its raw
//! target or its normal form is ([`rules::normal`]), as the gateway
//! enforces; an absolute-form target for another host is not this site's.

pub mod aws;
pub mod layout;
pub mod line;
pub mod log;
pub mod w3c;

use std::sync::Arc;
use std::time::Duration;

pub use rules::normal::Slashes;
use rules::{Policy, Robots};

/// RFC 9309 §2.4: crawlers should not use a cached robots.txt for more
/// than 24 hours. The window for a crawler whose operator documents none.
pub const DEFAULT_CACHE: Duration = Duration::from_secs(24 * 3600);

/// The token a spoofed request is judged as: no group names it, so the
/// `*` group decides, as for any anonymous client.
pub const ANONYMOUS: &str = "robotsgate-anonymous";

/// A point in the events of one site: Unix milliseconds, then the order
/// the events were seen in within the same millisecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    /// Unix milliseconds.
    pub ms: i64,
    /// Order among events of the same millisecond, as seen.
    pub seq: u64,
}

impl At {
    /// `ms` with sequence 0.
    pub fn ms(ms: i64) -> At {
        At { ms, seq: 0 }
    }
}

/// What a robots.txt fetch got, as crawlers read it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The stored revision whose body was served, if a body was.
    pub revision: Option<i64>,
    /// The HTTP status, if any (a 503 is "disallow all", a 404 "allow all").
    pub status: Option<u16>,
    /// What it means to crawlers.
    pub policy: Arc<Policy>,
}

impl Outcome {
    /// A served file, stored as `revision`.
    pub fn body(revision: i64, body: &[u8]) -> Outcome {
        Outcome { revision: Some(revision), status: Some(200), policy: Arc::new(Policy::Rules(Robots::parse(body))) }
    }

    /// A status with no usable body, read as the fetch policy reads it:
    /// 4xx (429 aside) allows everything, 5xx and 429 disallow everything.
    pub fn status(status: u16) -> Outcome {
        let outcome = rules::FetchOutcome::status(status);
        Outcome { revision: None, status: Some(status), policy: Arc::new(Policy::from_fetch(&outcome)) }
    }

    /// No answer at all (a timeout, a reset): disallow all.
    pub fn unreachable() -> Outcome {
        let outcome = rules::FetchOutcome::transport(rules::TransportError::Timeout);
        Outcome { revision: None, status: None, policy: Arc::new(Policy::from_fetch(&outcome)) }
    }

    /// The verdict for `target` as `agent`, the deciding line with it.
    fn judge(&self, agent: &str, target: &[u8], slashes: Slashes) -> (bool, Option<u32>) {
        match &*self.policy {
            Policy::Rules(robots) => {
                let v = robots.crawler(agent).check_request(target, slashes);
                (v.allowed, v.rule.map(|r| r.line))
            }
            Policy::AllowAll(_) => (true, None),
            Policy::DisallowAll(_) => (false, None),
        }
    }
}

/// The outcomes a site served, each from its time until the next one's.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    served: Vec<(At, Outcome)>,
}

impl Timeline {
    /// An empty timeline: nothing known, so everything is allowed.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// Records that `outcome` was served from `at` on. Out-of-order
    /// additions are placed by time.
    pub fn push(&mut self, at: At, outcome: Outcome) {
        let i = self.served.partition_point(|(t, _)| *t <= at);
        self.served.insert(i, (at, outcome));
    }

    /// The outcome current at `at`, if any was served by then.
    pub fn at(&self, at: At) -> Option<&Outcome> {
        let i = self.served.partition_point(|(t, _)| *t <= at);
        i.checked_sub(1).map(|i| &self.served[i].1)
    }

    /// Every outcome served at some moment of `[from, to]`: the one current
    /// at `from`, and every one that started within.
    pub fn during(&self, from: At, to: At) -> impl Iterator<Item = &Outcome> {
        let start = self.served.partition_point(|(t, _)| *t <= from).saturating_sub(1);
        let end = self.served.partition_point(|(t, _)| *t <= to);
        self.served[start..end.max(start)].iter().map(|(_, o)| o)
    }

    /// Forgets the outcomes that ended before `at`, keeping the one
    /// current at `at`: a judgement never looks further back than its
    /// window, so a long-running judge stays bounded.
    pub fn forget_before(&mut self, at: At) {
        let current = self.served.partition_point(|(t, _)| *t <= at).saturating_sub(1);
        self.served.drain(..current);
    }

    /// The outcome served last, if any.
    pub fn last(&self) -> Option<&Outcome> {
        self.served.last().map(|(_, o)| o)
    }

    /// How many outcomes it holds.
    pub fn len(&self) -> usize {
        self.served.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.served.is_empty()
    }
}

/// What verification says of a request's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Identity {
    /// The claim holds.
    Verified,
    /// Nothing to check it against (or not checked).
    Unverifiable,
    /// DNS did not answer in time.
    Pending,
    /// Checked, and false.
    Spoofed,
}

impl Identity {
    /// The label the ledger and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            Identity::Verified => "verified",
            Identity::Unverifiable => "unverifiable",
            Identity::Pending => "pending",
            Identity::Spoofed => "spoofed",
        }
    }

    /// Reads a label.
    pub fn parse(s: &str) -> Option<Identity> {
        Some(match s {
            "verified" => Identity::Verified,
            "unverifiable" | "off" => Identity::Unverifiable,
            "pending" => Identity::Pending,
            "spoofed" => Identity::Spoofed,
            _ => return None,
        })
    }
}

/// The judgement's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Allowed by what the crawler holds.
    Obeyed,
    /// Disallowed by the current outcome, allowed by an older one still
    /// inside the window, with no fetch seen in the window.
    Grace,
    /// Disallowed by everything the crawler could hold.
    Violation,
    /// Before the site's first known robots.txt: there is no evidence of
    /// what the crawler could hold, so no verdict (never "obeyed").
    Unjudged,
    /// Allowed (or in grace, or unjudged), and answered 429 by a crawl
    /// budget at the edge: the origin never served it.
    Throttled,
}

impl Class {
    /// The label the ledger uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Obeyed => "obeyed",
            Class::Grace => "grace",
            Class::Violation => "violation",
            Class::Unjudged => "unjudged",
            Class::Throttled => "throttled",
        }
    }

    /// The class of a request a crawl budget answered 429: throttled,
    /// unless robots.txt disallowed it, which stays a violation (asking
    /// was the breach, whatever the edge answered).
    pub fn throttled(self) -> Class {
        match self {
            Class::Violation => Class::Violation,
            _ => Class::Throttled,
        }
    }

    /// Reads a label.
    pub fn parse(s: &str) -> Option<Class> {
        Some(match s {
            "obeyed" => Class::Obeyed,
            "grace" => Class::Grace,
            "violation" => Class::Violation,
            "unjudged" => Class::Unjudged,
            "throttled" => Class::Throttled,
            _ => return None,
        })
    }
}

/// A crawler's robots.txt fetch: when, and what it got.
#[derive(Clone, Debug)]
pub struct Fetch {
    /// When.
    pub at: At,
    /// What it got.
    pub outcome: Outcome,
}

/// One request to judge.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// When.
    pub at: At,
    /// The crawler's product token (the word that claimed it).
    pub crawler: &'a str,
    /// What verification said.
    pub identity: Identity,
    /// The origin-form target (path and query), as sent.
    pub target: &'a [u8],
    /// How the site's origin reads slashes: the path is judged in the
    /// normal form the gateway enforces ([`rules::normal`]), so that
    /// `//admin/` is the `/admin/` it serves, in every ledger alike.
    pub slashes: Slashes,
}

/// A judgement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The class.
    pub class: Class,
    /// The revision whose lines decided, when a body decided.
    pub revision: Option<i64>,
    /// The deciding line, when a rule decided.
    pub line: Option<u32>,
    /// The status that decided, when no body did (a 503, a 404).
    pub status: Option<u16>,
    /// The crawler's last fetch is older than the window: it protects
    /// nothing, and the crawler should have fetched again.
    pub stale: bool,
}

/// Judges `request` by a crawler whose cache window is `window`, whose
/// last robots.txt fetch from this site is `last_fetch` (none for a
/// spoofed request: a spoofer's fetch is never the crawler's), against the
/// site's `timeline`.
pub fn judge(request: &Request<'_>, last_fetch: Option<&Fetch>, window: Duration, timeline: &Timeline) -> Judgement {
    let agent = if request.identity == Identity::Spoofed { ANONYMOUS } else { request.crawler };
    let window_ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let from = At { ms: request.at.ms.saturating_sub(window_ms), seq: 0 };
    let fetch = if request.identity == Identity::Spoofed { None } else { last_fetch.filter(|f| f.at < request.at) };
    // The edge is inclusive: a fetch exactly `window` before still holds.
    let held = fetch.filter(|f| f.at.ms >= from.ms);
    let stale = fetch.is_some() && held.is_none();
    let decided = |o: &Outcome, class: Class, (_, line): (bool, Option<u32>)| Judgement {
        class,
        revision: o.revision,
        line,
        status: if o.revision.is_none() { o.status } else { None },
        stale,
    };
    if let Some(f) = held {
        let verdict = f.outcome.judge(agent, request.target, request.slashes);
        let class = if verdict.0 { Class::Obeyed } else { Class::Violation };
        return decided(&f.outcome, class, verdict);
    }
    // Nothing known of the site yet: no evidence either way.
    let Some(current) = timeline.at(request.at) else {
        return Judgement { class: Class::Unjudged, revision: None, line: None, status: None, stale };
    };
    let now = current.judge(agent, request.target, request.slashes);
    if now.0 {
        return decided(current, Class::Obeyed, now);
    }
    let to = At { ms: request.at.ms, seq: request.at.seq };
    let older = timeline.during(from, to).find_map(|o| {
        let v = o.judge(agent, request.target, request.slashes);
        v.0.then_some((o, v))
    });
    match older {
        Some((o, v)) => decided(o, Class::Grace, v),
        None => decided(current, Class::Violation, now),
    }
}

/// Whether an absolute-form target (`http://host/path`) names this site:
/// `hosts` are the site's host names, lower case. An origin-form target
/// (`/path`) always does.
pub fn for_site(target: &[u8], hosts: &[String]) -> bool {
    let Some(rest) = strip_scheme(target) else { return true };
    let end = rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit(|&b| b == b'@').next().unwrap_or(authority);
    let host = if host_port.first() == Some(&b'[') {
        // An IPv6 literal: up to its `]`.
        &host_port[..host_port.iter().position(|&b| b == b']').map_or(host_port.len(), |i| i + 1)]
    } else {
        &host_port[..host_port.iter().position(|&b| b == b':').unwrap_or(host_port.len())]
    };
    hosts.iter().any(|h| h.as_bytes().eq_ignore_ascii_case(host))
}

/// The origin form of a target: an absolute-form target's path and query.
pub fn origin_form(target: &[u8]) -> &[u8] {
    match strip_scheme(target) {
        Some(rest) => {
            let start = rest.iter().position(|&b| matches!(b, b'/' | b'?')).unwrap_or(rest.len());
            if start == rest.len() { b"/" } else { &rest[start..] }
        }
        None => target,
    }
}

fn strip_scheme(target: &[u8]) -> Option<&[u8]> {
    let lower = |p: &[u8]| target.len() >= p.len() && target[..p.len()].eq_ignore_ascii_case(p);
    if lower(b"http://") {
        Some(&target[7..])
    } else if lower(b"https://") {
        Some(&target[8..])
    } else {
        None
    }
}

/// Whether `target` is a robots.txt fetch (recorded, never judged).
pub fn is_robots_fetch(target: &[u8]) -> bool {
    let path = &target[..target.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(target.len())];
    path == b"/robots.txt"
}

#[cfg(test)]
mod tests;
