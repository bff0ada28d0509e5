//! The gate: does a new robots.txt outcome break what the site's owner
//! declared? One pure judgement that the gateway (before it adopts a new
//! file), the monitor (on what it polls) and `robots diff --config` (in CI,
//! before a deploy) all call, so that they hold, warn and refuse with the
//! same words.
//!
//! Two kinds of declaration are checked, both as verdict changes between
//! the last good policy and the new one (built on [`crate::flip`]):
//!
//! - **Pins**: a URL and a crawler with the verdict it must keep. A pin
//!   breaks when the last good policy kept it and the new one does not, so
//!   a pin the site already broke does not hold every later change.
//! - **The floor**, which holds with no pins at all: the site's root and the
//!   first URL of each saved set going from allowed to disallowed for a
//!   search crawler. That is the classic deploy of `Disallow: /`.
//!
//! Only outcomes a gateway would adopt are judged ([`judged`]): a file of
//! rules, or a status that means "allow all" (a 4xx: the file was deleted).
//! Outcomes that mean "disallow all" (5xx, 429, no answer) are never
//! adopted; the gateway serves its last good copy through them instead.

use crate::flip::Decision;
use crate::policy::Policy;

/// A verdict a URL must keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expect {
    /// Must stay crawlable.
    Allowed,
    /// Must stay blocked.
    Disallowed,
}

impl Expect {
    /// `allowed` or `disallowed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Allowed => "allowed",
            Expect::Disallowed => "disallowed",
        }
    }

    /// Whether a verdict keeps this expectation.
    pub fn kept_by(self, allowed: bool) -> bool {
        allowed == (self == Expect::Allowed)
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One declared verdict: `url` must stay `expect` for the crawler `agent`
/// (a product token; a purpose is expanded to its crawlers before it gets
/// here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The URL or path.
    pub url: String,
    /// The crawler's product token.
    pub agent: String,
    /// The verdict it must keep.
    pub expect: Expect,
}

/// What the floor protects when no pin says otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Floor {
    /// The URLs that must not close: the root, and the first URL of each
    /// saved set.
    pub urls: Vec<String>,
    /// The crawlers they must not close for: the search crawlers.
    pub agents: Vec<String>,
}

/// Why a declaration is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declared {
    /// The owner pinned it.
    Pin,
    /// The floor: a search crawler losing the root or a set's first URL.
    Floor,
}

/// One declaration the new outcome breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    /// The URL.
    pub url: String,
    /// The crawler.
    pub agent: String,
    /// The verdict it had to keep.
    pub expect: Expect,
    /// A pin or the floor.
    pub declared: Declared,
    /// Its verdict under the last good policy (which kept it).
    pub old: Decision,
    /// Its verdict under the new outcome, with the deciding line.
    pub new: Decision,
}

impl std::fmt::Display for Breach {
    /// "it disallows / for Googlebot (line 3: Disallow: /)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.new.allowed { "allows" } else { "disallows" };
        write!(f, "it {verb} {} for {}", self.url, self.agent)?;
        match (&self.new.rule, &self.new.reason) {
            (Some(r), _) => write!(f, " (line {}: {}: {})", r.line, r.kind, r.pattern)?,
            (None, Some(reason)) => write!(f, " ({reason})")?,
            (None, None) => f.write_str(" (no rule applies)")?,
        }
        match self.declared {
            Declared::Pin => write!(f, "; pinned {}", self.expect),
            Declared::Floor => write!(f, "; the last good copy allowed it"),
        }
    }
}

/// What a site does with a change that breaks a declaration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The gateway keeps serving the last good copy until the change is
    /// released; the monitor raises a critical alert.
    #[default]
    Hold,
    /// The change is served, and the monitor raises a critical alert
    /// ("this change would have been held").
    Warn,
    /// No judgement.
    Off,
}

impl Mode {
    /// `hold`, `warn` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hold => "hold",
            Mode::Warn => "warn",
            Mode::Off => "off",
        }
    }
}

/// Whether the gate judges an outcome with this policy: files of rules and
/// statuses that mean "allow all". Failures ("disallow all") are never
/// adopted by a gateway with a good copy, so there is nothing to hold.
pub fn judged(new: &Policy) -> bool {
    !new.blocks_everything()
}

/// Every pin and floor declaration that `new` breaks and `old` (the last
/// good policy) kept: those of the site's root first, then pins, then the
/// floor, each in declaration order. Empty when `new` may be adopted.
///
/// ```
/// use rules::{FetchOutcome, Policy};
/// use rules::gate::{breaches, Floor};
/// let file = |b: &str| Policy::from_fetch(&FetchOutcome::status(200).with_body(b.as_bytes().to_vec()));
/// let old = file("User-agent: *\nDisallow: /admin\n");
/// let new = file("User-agent: *\nDisallow: /\n");
/// let floor = Floor { urls: vec!["/".into()], agents: vec!["Googlebot".into()] };
/// let found = breaches(&old, &new, &[], &floor);
/// assert_eq!(found[0].to_string(), "it disallows / for Googlebot (line 2: Disallow: /); the last good copy allowed it");
/// ```
pub fn breaches(old: &Policy, new: &Policy, pins: &[Pin], floor: &Floor) -> Vec<Breach> {
    if !judged(new) {
        return Vec::new();
    }
    let mut out: Vec<Breach> = Vec::new();
    let mut check = |url: &str, agent: &str, expect: Expect, declared: Declared| {
        let before = old.verdict(agent, url);
        if !expect.kept_by(before.allowed) {
            return;
        }
        let after = new.verdict(agent, url);
        if expect.kept_by(after.allowed) {
            return;
        }
        if out.iter().any(|b| b.url == url && b.agent == agent) {
            return;
        }
        out.push(Breach {
            url: url.to_string(),
            agent: agent.to_string(),
            expect,
            declared,
            old: before.into(),
            new: after.into(),
        });
    };
    for pin in pins {
        check(&pin.url, &pin.agent, pin.expect, Declared::Pin);
    }
    for url in &floor.urls {
        // A pin on the same URL and crawler speaks for the owner: a URL
        // pinned `disallowed` may close.
        for agent in &floor.agents {
            if pins.iter().any(|p| &p.url == url && p.agent.eq_ignore_ascii_case(agent)) {
                continue;
            }
            check(url, agent, Expect::Allowed, Declared::Floor);
        }
    }
    // The site's root first: losing it is the disaster an alert opens with.
    out.sort_by_key(|b| &*crate::target::path_of(b.url.as_bytes()) != b"/");
    out
}

/// One sentence for an alert or a log line: the first breach and how many
/// more, e.g. "it disallows / for Googlebot (line 3: Disallow: /) and 4
/// more".
pub fn summary(found: &[Breach]) -> String {
    match found {
        [] => "it breaks nothing declared".to_string(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first}; and {} more", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FetchOutcome;

    fn file(body: &str) -> Policy {
        Policy::from_fetch(&FetchOutcome::status(200).with_body(body.as_bytes().to_vec()))
    }

    fn floor() -> Floor {
        Floor { urls: vec!["/".into(), "/products/1".into()], agents: vec!["Googlebot".into(), "bingbot".into()] }
    }

    fn pin(url: &str, agent: &str, expect: Expect) -> Pin {
        Pin { url: url.into(), agent: agent.into(), expect }
    }

    #[test]
    fn disallow_all_breaks_the_floor_with_its_line() {
        let old = file("User-agent: *\nDisallow: /admin\n");
        let new = file("# deploy\nUser-agent: *\nDisallow: /\n");
        let found = breaches(&old, &new, &[], &floor());
        assert_eq!(found.len(), 4);
        assert!(found.iter().all(|b| b.declared == Declared::Floor && !b.new.allowed));
        assert_eq!(found[0].new.rule.as_ref().map(|r| r.line), Some(3));
        assert!(summary(&found).ends_with("and 3 more"), "{}", summary(&found));
    }

    #[test]
    fn a_change_that_breaks_nothing_passes() {
        let old = file("User-agent: *\nDisallow: /admin\n");
        let new = file("User-agent: *\nDisallow: /admin\nDisallow: /cart\n");
        assert!(breaches(&old, &new, &[pin("/", "Googlebot", Expect::Allowed)], &floor()).is_empty());
        // A crawler the floor does not cover may lose the root.
        let new = file("User-agent: GPTBot\nDisallow: /\n");
        assert!(breaches(&old, &new, &[], &floor()).is_empty());
    }

    #[test]
    fn a_deletion_breaks_a_disallowed_pin_only() {
        let old = file("User-agent: *\nDisallow: /checkout\n");
        let gone = Policy::from_fetch(&FetchOutcome::status(404));
        assert!(breaches(&old, &gone, &[], &floor()).is_empty(), "a 404 opens things; the floor only guards closing");
        let pins = [pin("/checkout/pay", "Googlebot", Expect::Disallowed)];
        let found = breaches(&old, &gone, &pins, &floor());
        assert_eq!(found.len(), 1);
        assert!(
            found[0].to_string().starts_with("it allows /checkout/pay for Googlebot (robots.txt answered 404"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn a_pin_already_broken_holds_nothing() {
        let old = file("User-agent: *\nDisallow: /x\n");
        let new = file("User-agent: *\nDisallow: /x\nDisallow: /y\n");
        assert!(breaches(&old, &new, &[pin("/x", "Googlebot", Expect::Allowed)], &floor()).is_empty());
    }

    #[test]
    fn a_pin_that_says_disallowed_lets_the_floor_url_close() {
        let old = file("User-agent: *\nAllow: /\n");
        let new = file("User-agent: Googlebot\nDisallow: /\n");
        let pins = [pin("/", "Googlebot", Expect::Disallowed), pin("/products/1", "Googlebot", Expect::Disallowed)];
        assert!(breaches(&old, &new, &pins, &floor()).is_empty());
    }

    #[test]
    fn failures_are_not_judged() {
        let old = file("User-agent: *\nAllow: /\n");
        assert!(breaches(&old, &Policy::from_fetch(&FetchOutcome::status(503)), &[], &floor()).is_empty());
    }
}
