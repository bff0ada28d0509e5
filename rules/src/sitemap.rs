//! Sitemap conflicts: which URLs a site's sitemaps list that its robots.txt
//! disallows, for which crawlers, and which line decides. One pure
//! judgement that the monitor (on every sitemap check), the gate (is a
//! change closing listed URLs?) and `robots lint --sitemap` / `robots diff
//! --sitemap` all call, so that they count and word a conflict the same way.
//!
//! URLs stream through a [`Tally`], never kept: a sitemap family lists up
//! to 2.5 billion URLs, and the answer is counts, the deciding lines and a
//! few samples. Crawlers that obey the same merged group are checked once
//! (most files give every search crawler the `*` group), so a URL costs
//! one check per distinct group, not one per crawler.
//!
//! Conflicts are grouped as the gate groups breaches: by the deciding line
//! (or the reason, for a file that blocks everything) and the crawlers it
//! closes the URL for. "1,204 of 48,000 sitemap URLs are disallowed for
//! Googlebot and 13 other search crawlers (line 7: `Disallow: /products/`)".

use std::collections::HashMap;

use crate::flip::DecidingRule;
use crate::policy::{Policy, Reason};
use crate::target::path_of;

/// How many URLs a conflict keeps as its sample.
pub const SAMPLE: usize = 5;

/// What decided a conflicting URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decided {
    /// A rule of the file.
    Rule(DecidingRule),
    /// The file's status blocks everything (5xx, 429, no answer).
    Reason(Reason),
}

impl std::fmt::Display for Decided {
    /// "line 7: `Disallow: /products/`", or the reason.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decided::Rule(r) => write!(f, "line {}: `{}: {}`", r.line, r.kind, r.pattern),
            Decided::Reason(r) => write!(f, "{r}"),
        }
    }
}

/// Listed URLs one line (or reason) disallows for the same crawlers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The deciding line or reason.
    pub decided: Decided,
    /// The crawlers it disallows them for, in the order asked.
    pub agents: Vec<String>,
    /// How many listed URLs (each counted once however often listed).
    pub count: u64,
    /// The first [`SAMPLE`] of them, as listed.
    pub sample: Vec<String>,
}

impl Conflict {
    /// "1,204 of 48,000 sitemap URLs are disallowed for Googlebot and 13
    /// other search crawlers (line 7: `Disallow: /products/`)"; `kind` names
    /// the crawlers ("search crawlers").
    pub fn sentence(&self, listed: u64, kind: &str) -> String {
        let verb = if self.count == 1 { "is" } else { "are" };
        let noun = if listed == 1 { "sitemap URL" } else { "sitemap URLs" };
        let who = crate::sitemap::crawlers(&self.agents, kind);
        format!(
            "{} of {} {noun} {verb} disallowed for {who} ({})",
            thousands(self.count),
            thousands(listed),
            self.decided
        )
    }
}

/// "Googlebot", "Googlebot and 1 other search crawler", "Googlebot and 13
/// other search crawlers".
pub fn crawlers(agents: &[String], kind: &str) -> String {
    match agents {
        [] => "no crawler".to_string(),
        [one] => one.clone(),
        [first, rest @ ..] => {
            let one = kind.strip_suffix('s').unwrap_or(kind);
            format!("{first} and {} other {}", rest.len(), if rest.len() == 1 { one } else { kind })
        }
    }
}

/// `1234567` as "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a tally found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conflicts {
    /// URLs checked.
    pub listed: u64,
    /// URLs disallowed for at least one of the crawlers.
    pub closed: u64,
    /// The conflicts, the largest first.
    pub groups: Vec<Conflict>,
}

impl Conflicts {
    /// Whether no listed URL is disallowed.
    pub fn is_clear(&self) -> bool {
        self.closed == 0
    }

    /// One sentence for an alert: the largest conflict and how many more.
    pub fn summary(&self, kind: &str) -> String {
        match self.groups.as_slice() {
            [] => format!("none of {} sitemap URLs is disallowed", thousands(self.listed)),
            [one] => one.sentence(self.listed, kind),
            [first, rest @ ..] => format!("{}; and {} more", first.sentence(self.listed, kind), rest.len()),
        }
    }
}

/// How one crawler reads a policy: its product token, and for a policy of
/// rules the merged set it obeys (crawlers with one set share a lane).
fn lane_key(policy: &Policy, agent: &str) -> (u8, u32) {
    match policy {
        Policy::Rules(r) => (0, r.crawler(agent).set_index().map_or(u32::MAX, |s| s)),
        Policy::AllowAll(_) => (1, 0),
        Policy::DisallowAll(_) => (2, 0),
    }
}

/// Allowed, and the deciding line (0 for none, or no rules).
#[inline]
fn decide(policy: &Policy, agent: &str, path: &[u8]) -> (bool, u32) {
    match policy {
        Policy::Rules(r) => r.crawler(agent).decide_line(path).map_or((true, 0), |(line, allow)| (allow, line)),
        Policy::AllowAll(_) => (true, 0),
        Policy::DisallowAll(_) => (false, 0),
    }
}

/// What tells crawlers' lanes apart, before and after.
type LaneKey = (Option<(u8, u32)>, (u8, u32));

/// The key of a conflict: the deciding line (0 with a reason) and which
/// distinct lanes it closed the URL for.
type Key = (u32, u128);

/// Counts listed URLs that a robots.txt disallows, one at a time.
///
/// ```
/// use rules::{FetchOutcome, Policy};
/// use rules::sitemap::Tally;
/// let robots = Policy::from_fetch(&FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /products/\n".to_vec()));
/// let mut tally = Tally::new(None, robots, &["Googlebot", "bingbot"]);
/// for url in ["https://s/", "https://s/products/1", "https://s/products/2"] {
///     tally.add(url);
/// }
/// let found = tally.finish();
/// assert_eq!(found.closed, 2);
/// assert_eq!(found.summary("search crawlers"),
///     "2 of 3 sitemap URLs are disallowed for Googlebot and 1 other search crawler (line 2: `Disallow: /products/`)");
/// ```
#[derive(Debug)]
pub struct Tally {
    old: Option<Policy>,
    new: Policy,
    agents: Vec<String>,
    /// One crawler of each distinct (old, new) lane, and the lane of each
    /// agent.
    lanes: Vec<String>,
    lane_of: Vec<usize>,
    listed: u64,
    closed: u64,
    found: Vec<(Key, Conflict)>,
    index: HashMap<Key, usize>,
    /// Reused per URL: (deciding line, lane mask).
    scratch: Vec<(u32, u128)>,
}

impl Tally {
    /// A tally of URLs `new` disallows for `agents`; with `old`, only those
    /// `old` allowed (what a change closes). Policies are cheap to clone
    /// (the rules are shared), and owning them lets a tally run on a
    /// reading thread of its own.
    pub fn new<A: AsRef<str>>(old: Option<Policy>, new: Policy, agents: &[A]) -> Tally {
        let mut lanes: Vec<String> = Vec::new();
        let mut keys: Vec<LaneKey> = Vec::new();
        let mut lane_of = Vec::with_capacity(agents.len());
        for agent in agents {
            let agent = agent.as_ref();
            let key = (old.as_ref().map(|o| lane_key(o, agent)), lane_key(&new, agent));
            let at = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                lanes.push(agent.to_string());
                keys.len() - 1
            });
            lane_of.push(at);
        }
        Tally {
            old,
            new,
            agents: agents.iter().map(|a| a.as_ref().to_string()).collect(),
            lanes,
            lane_of,
            listed: 0,
            closed: 0,
            found: Vec::new(),
            index: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// Checks one listed URL (absolute, or a path).
    pub fn add(&mut self, url: &str) {
        self.listed += 1;
        if matches!(self.new, Policy::AllowAll(_)) {
            return;
        }
        let path = path_of(url.as_bytes());
        self.scratch.clear();
        for (i, agent) in self.lanes.iter().enumerate() {
            let (allowed, line) = decide(&self.new, agent, &path);
            if allowed || self.old.as_ref().is_some_and(|o| !decide(o, agent, &path).0) {
                continue;
            }
            // Lanes past 128 share bits: coarser groups, never a lost URL.
            let bit = 1u128 << (i % 128);
            match self.scratch.iter_mut().find(|(l, _)| *l == line) {
                Some((_, mask)) => *mask |= bit,
                None => self.scratch.push((line, bit)),
            }
        }
        if self.scratch.is_empty() {
            return;
        }
        self.closed += 1;
        for k in 0..self.scratch.len() {
            let key = self.scratch[k];
            match self.index.get(&key) {
                Some(&at) => {
                    let c = &mut self.found[at].1;
                    c.count += 1;
                    if c.sample.len() < SAMPLE {
                        c.sample.push(url.to_string());
                    }
                }
                None => {
                    let conflict = self.first(key, &path, url);
                    self.index.insert(key, self.found.len());
                    self.found.push((key, conflict));
                }
            }
        }
    }

    /// A new conflict, its deciding rule looked up in full once.
    fn first(&self, (_, mask): Key, path: &[u8], url: &str) -> Conflict {
        let lane = (0..self.lanes.len()).find(|i| mask & (1u128 << (i % 128)) != 0).unwrap_or(0);
        let decided = match (&self.new, self.lanes.get(lane)) {
            (Policy::Rules(r), Some(agent)) => match r.crawler(agent).check_path(path).rule {
                Some(r) => Decided::Rule(r.into()),
                None => Decided::Reason(Reason::ClientError(404)),
            },
            (Policy::AllowAll(reason) | Policy::DisallowAll(reason), _) => Decided::Reason(*reason),
            (Policy::Rules(_), None) => Decided::Reason(Reason::ClientError(404)),
        };
        let agents = self
            .agents
            .iter()
            .zip(&self.lane_of)
            .filter(|(_, l)| mask & (1u128 << (**l % 128)) != 0)
            .map(|(a, _)| a.clone())
            .collect();
        Conflict { decided, agents, count: 1, sample: vec![url.to_string()] }
    }

    /// URLs added so far.
    pub fn listed(&self) -> u64 {
        self.listed
    }

    /// The conflicts found, the largest first (ties in the order found).
    pub fn finish(self) -> Conflicts {
        let mut groups: Vec<Conflict> = self.found.into_iter().map(|(_, c)| c).collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.count));
        Conflicts { listed: self.listed, closed: self.closed, groups }
    }
}

impl From<crate::verdict::RuleRef<'_>> for DecidingRule {
    fn from(r: crate::verdict::RuleRef<'_>) -> DecidingRule {
        DecidingRule { line: r.line, kind: r.kind, pattern: String::from_utf8_lossy(r.written).into_owned() }
    }
}

/// [`Tally`] over a list: the conflicts `new` has (with `old`, those it
/// makes) for `urls` and `agents`.
pub fn conflicts<U: AsRef<str>, A: AsRef<str>>(
    old: Option<&Policy>,
    new: &Policy,
    urls: &[U],
    agents: &[A],
) -> Conflicts {
    let mut tally = Tally::new(old.cloned(), new.clone(), agents);
    for u in urls {
        tally.add(u.as_ref());
    }
    tally.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FetchOutcome;

    fn file(body: &str) -> Policy {
        Policy::from_fetch(&FetchOutcome::status(200).with_body(body.as_bytes().to_vec()))
    }

    const SEARCH: [&str; 4] = ["Googlebot", "bingbot", "DuckDuckBot", "Googlebot-Image"];

    #[test]
    fn groups_by_line_and_crawlers() {
        let robots = file("User-agent: *\nDisallow: /products/\n\nUser-agent: Googlebot\nDisallow: /cart\n");
        let urls = ["https://s/products/1", "https://s/products/2", "https://s/cart/x", "https://s/"];
        let found = conflicts(None, &robots, &urls, &SEARCH);
        assert_eq!((found.listed, found.closed), (4, 3));
        assert_eq!(found.groups.len(), 2, "{found:?}");
        // Googlebot-Image falls back to Googlebot's group, as Google's crawler does.
        assert_eq!(found.groups[0].agents, ["bingbot", "DuckDuckBot"]);
        assert_eq!(found.groups[0].count, 2);
        assert_eq!(
            found.groups[0].sentence(found.listed, "search crawlers"),
            "2 of 4 sitemap URLs are disallowed for bingbot and 1 other search crawler (line 2: `Disallow: /products/`)"
        );
        assert_eq!(found.groups[1].agents, ["Googlebot", "Googlebot-Image"]);
        assert_eq!(found.groups[1].sample, ["https://s/cart/x"]);
    }

    #[test]
    fn a_change_counts_only_what_it_closes() {
        let old = file("User-agent: *\nDisallow: /a\n");
        let new = file("User-agent: *\nDisallow: /a\nDisallow: /b\n");
        let urls = ["/a/1", "/b/1", "/b/2", "/c"];
        let made = conflicts(Some(&old), &new, &urls, &SEARCH);
        assert_eq!(made.closed, 2);
        assert_eq!(made.groups[0].decided.to_string(), "line 3: `Disallow: /b`");
        assert!(conflicts(Some(&new), &new, &urls, &SEARCH).is_clear());
    }

    #[test]
    fn statuses_decide_every_url() {
        let down = Policy::from_fetch(&FetchOutcome::status(503));
        let found = conflicts(None, &down, &["/a", "/b"], &SEARCH);
        assert_eq!(found.closed, 2);
        assert_eq!(found.groups.len(), 1);
        assert_eq!(found.groups[0].agents.len(), 4);
        assert!(matches!(found.groups[0].decided, Decided::Reason(Reason::ServerError(503))));
        let gone = Policy::from_fetch(&FetchOutcome::status(404));
        assert!(conflicts(None, &gone, &["/a"], &SEARCH).is_clear());
    }

    #[test]
    fn agrees_with_the_verdict_for_every_crawler() {
        let robots = file(
            "User-agent: *\nDisallow: /x\nAllow: /x/ok\n\nUser-agent: bingbot\nDisallow: /\nAllow: /$\n\nUser-agent: Googlebot\nDisallow: /*.pdf$\n",
        );
        let urls = ["/", "/x", "/x/ok", "/a.pdf", "/b?c", "/x/ok.pdf", "/%78"];
        let found = conflicts(None, &robots, &urls, &SEARCH);
        // Each URL a crawler may not fetch is in exactly one of its groups.
        for agent in SEARCH {
            let blocked = urls.iter().filter(|u| !robots.verdict(agent, u).allowed).count() as u64;
            let counted: u64 =
                found.groups.iter().filter(|g| g.agents.iter().any(|a| a == agent)).map(|g| g.count).sum();
            assert_eq!(blocked, counted, "{agent}: {found:?}");
        }
        for url in urls {
            for g in found.groups.iter().filter(|g| g.sample.iter().any(|s| s == url)) {
                for agent in &g.agents {
                    let v = robots.verdict(agent, url);
                    assert!(
                        !v.allowed
                            && v.rule.map(|r| r.line)
                                == Some(match &g.decided {
                                    Decided::Rule(r) => r.line,
                                    Decided::Reason(_) => 0,
                                }),
                        "{agent} {url}"
                    );
                }
            }
        }
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(48_000), "48,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
