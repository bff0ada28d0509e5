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
    /// The URLs the site's sitemaps list, when the site asks that they stay
    /// open too (`sitemaps: { keep_open: true }`); shared, as a gateway
    /// judges with the same list until its sitemaps are read again.
    pub listed: std::sync::Arc<Vec<String>>,
}

/// Why a declaration is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declared {
    /// The owner pinned it.
    Pin,
    /// The floor: a search crawler losing the root or a set's first URL.
    Floor,
    /// The floor's sitemap URLs: a search crawler losing URLs the site's
    /// sitemaps list.
    Sitemap,
}

impl Declared {
    /// `pin`, `floor` or `sitemap`.
    pub fn as_str(self) -> &'static str {
        match self {
            Declared::Pin => "pin",
            Declared::Floor => "floor",
            Declared::Sitemap => "sitemap",
        }
    }
}

/// How many listed URLs a sitemap breach stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed {
    /// URLs the change closes for this crawler and line.
    pub closed: u64,
    /// URLs the sitemaps list.
    pub of: u64,
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
    /// For a sitemap breach, how many listed URLs it stands for (`url` is
    /// the first of them).
    pub listed: Option<Listed>,
}

impl std::fmt::Display for Breach {
    /// "it disallows / for Googlebot (line 3: Disallow: /)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.new.allowed { "allows" } else { "disallows" };
        match self.listed {
            Some(l) => write!(f, "it {verb} {} for {}", listed_urls(l, &self.url), self.agent)?,
            None => write!(f, "it {verb} {} for {}", self.url, self.agent)?,
        }
        match (&self.new.rule, &self.new.reason) {
            (Some(r), _) => write!(f, " (line {}: {}: {})", r.line, r.kind, r.pattern)?,
            (None, Some(reason)) => write!(f, " ({reason})")?,
            (None, None) => f.write_str(" (no rule applies)")?,
        }
        match self.declared {
            Declared::Pin => write!(f, "; pinned {}", self.expect),
            Declared::Floor => write!(f, "; the last good copy allowed it"),
            Declared::Sitemap => write!(f, "; the sitemaps list them and the last good copy allowed them"),
        }
    }
}

/// "1,204 of 48,000 sitemap URLs (first /products/1)".
fn listed_urls(l: Listed, first: &str) -> String {
    let noun = if l.of == 1 { "sitemap URL" } else { "sitemap URLs" };
    format!("{} of {} {noun} (first {first})", crate::sitemap::thousands(l.closed), crate::sitemap::thousands(l.of))
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

/// The status a "no file" outcome is known by, for holding and releasing it:
/// a 4xx's own, or, for a file missing another way (too many redirects),
/// the status the fetch ended on (404 when none). `None` for a file of
/// rules or a failure, which are known otherwise or never held.
pub fn no_file_status(new: &Policy, fetched: Option<u16>) -> Option<u16> {
    match new {
        Policy::AllowAll(crate::Reason::ClientError(status)) => Some(*status),
        Policy::AllowAll(_) => Some(fetched.unwrap_or(404)),
        _ => None,
    }
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
/// let floor = Floor { urls: vec!["/".into()], agents: vec!["Googlebot".into()], ..Default::default() };
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
            listed: None,
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
    if !floor.listed.is_empty() {
        sitemap_breaches(old, new, pins, floor, &mut out);
    }
    // The site's root first: losing it is the disaster an alert opens with.
    out.sort_by_key(|b| &*crate::target::path_of(b.url.as_bytes()) != b"/");
    out
}

/// The floor's sitemap URLs that `new` closes and `old` kept open: one
/// breach per crawler and deciding line, standing for all its URLs. A
/// crawler pinned `disallowed` on a URL is the owner's word for that URL.
fn sitemap_breaches(old: &Policy, new: &Policy, pins: &[Pin], floor: &Floor, out: &mut Vec<Breach>) {
    let found = crate::sitemap::conflicts(Some(old), new, &floor.listed, &floor.agents);
    for group in &found.groups {
        for agent in &group.agents {
            let pinned = |u: &String| {
                pins.iter()
                    .any(|p| &p.url == u && p.agent.eq_ignore_ascii_case(agent) && p.expect == Expect::Disallowed)
            };
            let Some(url) = group.sample.iter().find(|u| !pinned(u)) else { continue };
            if out.iter().any(|b| &b.url == url && b.agent == *agent) {
                continue;
            }
            out.push(Breach {
                url: url.clone(),
                agent: agent.clone(),
                expect: Expect::Allowed,
                declared: Declared::Sitemap,
                old: old.verdict(agent, url).into(),
                new: new.verdict(agent, url).into(),
                listed: Some(Listed { closed: group.count, of: found.listed }),
            });
        }
    }
}

/// Breaches that say one thing: the same page (the same path, however the
/// URL was written), the same new verdict from the same deciding line, for
/// the same kind of declaration, differing only in the crawler. A deploy of
/// `Disallow: /` breaks the floor for every search crawler at `/` and at
/// each set's first URL; grouped, that is one line, not dozens.
#[derive(Clone, Debug)]
pub struct Group<'a> {
    /// The first breach of the group (its URL, verdict and line speak for all).
    pub first: &'a Breach,
    /// Every crawler of the group, in the order found.
    pub agents: Vec<&'a str>,
}

/// How many crawler names a group spells out before "…".
const NAMED: usize = 3;

impl Group<'_> {
    fn crawlers(&self) -> &'static str {
        match self.first.declared {
            Declared::Floor | Declared::Sitemap => "search crawlers",
            Declared::Pin => "crawlers",
        }
    }

    fn rule(&self) -> String {
        match (&self.first.new.rule, &self.first.new.reason) {
            (Some(r), _) => format!("line {} `{}: {}`", r.line, r.kind, r.pattern),
            (None, Some(reason)) => reason.to_string(),
            (None, None) => "no rule applies".to_string(),
        }
    }

    fn declared(&self) -> String {
        match self.first.declared {
            Declared::Pin => format!("pinned {}", self.first.expect),
            Declared::Floor => "the last good copy allowed it".to_string(),
            Declared::Sitemap => "the sitemaps list them and the last good copy allowed them".to_string(),
        }
    }

    /// The page, or for sitemap URLs how many.
    fn what(&self) -> String {
        match self.first.listed {
            Some(l) => listed_urls(l, &self.first.url),
            None => self.first.url.clone(),
        }
    }

    /// One sentence, led by the group's first crawler: "it disallows / for
    /// Googlebot and 13 other search crawlers (line 3: Disallow: /); the
    /// last good copy allowed it".
    pub fn sentence(&self) -> String {
        if self.agents.len() == 1 {
            return self.first.to_string();
        }
        let b = self.first;
        let verb = if b.new.allowed { "allows" } else { "disallows" };
        let why = match (&b.new.rule, &b.new.reason) {
            (Some(r), _) => format!("line {}: {}: {}", r.line, r.kind, r.pattern),
            (None, Some(reason)) => reason.to_string(),
            (None, None) => "no rule applies".to_string(),
        };
        let others = self.agents.len() - 1;
        let other =
            if others == 1 { self.crawlers().trim_end_matches('s').to_string() } else { self.crawlers().to_string() };
        format!(
            "it {verb} {} for {} and {others} other {other} ({why}); {}",
            self.what(),
            self.agents[0],
            self.declared()
        )
    }
}

impl std::fmt::Display for Group<'_> {
    /// One line of a list: "/ disallowed for 14 search crawlers (Googlebot,
    /// bingbot, DuckDuckBot, …): line 3 `Disallow: /`; the last good copy
    /// allowed it".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.first.new.allowed { "allowed" } else { "disallowed" };
        write!(f, "{} {verdict} for ", self.what())?;
        match self.agents.as_slice() {
            [one] => f.write_str(one)?,
            many => {
                let named = many.iter().take(NAMED).copied().collect::<Vec<_>>().join(", ");
                let more = if many.len() > NAMED { ", …" } else { "" };
                write!(f, "{} {} ({named}{more})", many.len(), self.crawlers())?;
            }
        }
        write!(f, ": {}; {}", self.rule(), self.declared())
    }
}

/// The breaches grouped by page and deciding line ([`Group`]), in the order
/// their first breach was found (the root first, as [`breaches`] sorts).
pub fn grouped(found: &[Breach]) -> Vec<Group<'_>> {
    let key = |b: &Breach| {
        (
            crate::target::path_of(b.url.as_bytes()).into_owned(),
            b.new.allowed,
            b.new.rule.as_ref().map(|r| r.line),
            b.new.reason.as_ref().map(ToString::to_string),
            b.declared,
            b.expect,
        )
    };
    let mut groups: Vec<(_, Group<'_>)> = Vec::new();
    for b in found {
        let k = key(b);
        match groups.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, g)) => {
                if !g.agents.iter().any(|a| a.eq_ignore_ascii_case(&b.agent)) {
                    g.agents.push(&b.agent);
                }
            }
            None => groups.push((k, Group { first: b, agents: vec![&b.agent] })),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// One sentence for an alert or a log line: the first group of breaches
/// ([`grouped`]) and how many more, e.g. "it disallows / for Googlebot and
/// 13 other search crawlers (line 3: Disallow: /); the last good copy
/// allowed it; and 1 more".
pub fn summary(found: &[Breach]) -> String {
    let groups = grouped(found);
    match groups.as_slice() {
        [] => "it breaks nothing declared".to_string(),
        [one] => one.sentence(),
        [first, rest @ ..] => format!("{}; and {} more", first.sentence(), rest.len()),
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
        Floor {
            urls: vec!["/".into(), "/products/1".into()],
            agents: vec!["Googlebot".into(), "bingbot".into()],
            listed: Default::default(),
        }
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
        // Two pages, each for both search crawlers: two lines, not four.
        let groups = grouped(&found);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            groups[0].to_string(),
            "/ disallowed for 2 search crawlers (Googlebot, bingbot): line 3 `Disallow: /`; the last good copy allowed it"
        );
        assert_eq!(
            summary(&found),
            "it disallows / for Googlebot and 1 other search crawler (line 3: Disallow: /); the last good copy allowed it; and 1 more"
        );
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
    fn closing_listed_urls_breaks_the_floor_once_per_line_and_crawler() {
        let old = file("User-agent: *\nDisallow: /admin\n");
        let new = file("User-agent: *\nDisallow: /admin\nDisallow: /products/\n");
        let listed: Vec<String> =
            (0..1000).map(|i| format!("https://s/products/{i}")).chain(["https://s/".into()]).collect();
        let floor = Floor { urls: vec!["/".into()], listed: std::sync::Arc::new(listed), ..floor() };
        let found = breaches(&old, &new, &[], &floor);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|b| b.declared == Declared::Sitemap));
        assert_eq!(
            summary(&found),
            "it disallows 1,000 of 1,001 sitemap URLs (first https://s/products/0) for Googlebot and 1 other search crawler (line 3: Disallow: /products/); the sitemaps list them and the last good copy allowed them"
        );
        // URLs already closed are no breach; a pin `disallowed` is the owner's word.
        assert!(breaches(&new, &new, &[], &floor).is_empty());
        let pins: Vec<Pin> = (0..1000)
            .flat_map(|i| {
                ["Googlebot", "bingbot"].map(|a| pin(&format!("https://s/products/{i}"), a, Expect::Disallowed))
            })
            .collect();
        assert!(breaches(&old, &new, &pins, &floor).iter().all(|b| b.declared != Declared::Sitemap));
    }

    #[test]
    fn failures_are_not_judged() {
        let old = file("User-agent: *\nAllow: /\n");
        assert!(breaches(&old, &Policy::from_fetch(&FetchOutcome::status(503)), &[], &floor()).is_empty());
    }
}
