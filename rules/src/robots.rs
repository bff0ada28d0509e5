//! `Robots`, the compiled robots.txt, and the checks made against it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::compile::{Compiled, Extra, ExtraLine, Span, compile, text};
use crate::crawlers::Choice;
use crate::parse::{KeyKind, is_token_byte};
use crate::ruleset::{Rule, RuleSet};
use crate::target::path_of;
use crate::verdict::{GroupChoice, RuleKind, RuleRef, Verdict};

/// A parsed and compiled robots.txt.
///
/// Built once by [`Robots::parse`], then immutable: it is `Send + Sync`,
/// cloning it is cheap (an `Arc` inside), and checks never re-read the file.
///
/// ```
/// use rules::Robots;
/// let robots = Robots::parse(b"User-agent: *\nDisallow: /private\nAllow: /private/ok\n");
/// assert!(!robots.is_allowed("Googlebot", "https://example.com/private/x"));
/// assert!(robots.is_allowed("Googlebot", "https://example.com/private/ok"));
/// let v = robots.check("Googlebot", "https://example.com/private/x");
/// assert_eq!(v.rule.unwrap().line, 2);
/// ```
#[derive(Clone)]
pub struct Robots {
    inner: Arc<Compiled>,
    source_len: usize,
}

impl fmt::Debug for Robots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Robots")
            .field("source_len", &self.source_len)
            .field("rule_sets", &self.inner.sets.len())
            .field("agents", &self.inner.agents.len())
            .finish_non_exhaustive()
    }
}

impl Robots {
    /// Parses and compiles a robots.txt body. Never fails and never panics:
    /// any bytes are a robots.txt, as they are to Google. Content past
    /// [`crate::parse::MAX_FILE_BYTES`] is ignored.
    pub fn parse(body: &[u8]) -> Robots {
        Robots { inner: Arc::new(compile(body)), source_len: body.len() }
    }

    /// [`Robots::parse`] and [`crate::lint()`] of the same body in one pass
    /// over its bytes: what a gateway or monitor that serves and reports
    /// on a file needs, at the cost of one parse.
    pub fn parse_linted(body: &[u8]) -> (Robots, Vec<crate::Diagnostic>) {
        let (compiled, findings) = crate::compile::compile_linted(body);
        (Robots { inner: Arc::new(compiled), source_len: body.len() }, findings)
    }

    /// The product tokens the file's groups name (`*` not included), each
    /// once, as written: for lint that needs to know who a file speaks to
    /// without parsing it again.
    pub fn named_agents(&self) -> impl Iterator<Item = &[u8]> {
        self.inner.agents.iter().map(|&(token, _)| text(&self.inner.arena, token))
    }

    /// Whether `agent` may fetch `url`. See [`Robots::check`].
    #[inline]
    pub fn is_allowed(&self, agent: &str, url: &str) -> bool {
        self.agent_bytes(agent.as_bytes()).is_allowed(url)
    }

    /// The verdict for `agent` fetching `url`, with the group chosen and the
    /// rule that decided.
    ///
    /// `agent` is the crawler's product token (`Googlebot`), compared
    /// case-insensitively with the tokens in the file and never shortened.
    /// `url` is an absolute URL or a path, already percent-encoded as it
    /// would be sent; it is not decoded.
    ///
    /// Cost: one pass over the path to find the rules whose literal
    /// prefixes it (and, for rules starting with a wildcard, whose required
    /// gram it contains); each candidate costs at most O(path + pattern). No allocation unless the URL's path starts
    /// with `?` or `;`.
    #[inline]
    pub fn check(&self, agent: &str, url: &str) -> Verdict<'_> {
        self.check_bytes(agent.as_bytes(), url.as_bytes())
    }

    /// [`Robots::check`] for raw bytes, which real agents and URLs can be.
    #[inline]
    pub fn check_bytes(&self, agent: &[u8], url: &[u8]) -> Verdict<'_> {
        self.agent_bytes(agent).check_bytes(url)
    }

    /// Chooses `agent`'s group once, for many checks.
    ///
    /// ```
    /// use rules::Robots;
    /// let robots = Robots::parse(b"User-agent: foo\nDisallow: /\n");
    /// let foo = robots.agent("FOO");
    /// assert!(!foo.is_allowed("/a"));
    /// assert!(robots.agent("bar").is_allowed("/a"));
    /// ```
    pub fn agent(&self, agent: &str) -> Agent<'_> {
        self.agent_bytes(agent.as_bytes())
    }

    /// [`Robots::agent`] for raw bytes.
    #[inline]
    pub fn agent_bytes(&self, agent: &[u8]) -> Agent<'_> {
        Agent { robots: self, set: self.named_set(agent).or(self.inner.global) }
    }

    /// The group Google's crawler with product token `token` obeys, which
    /// for a few of Google's crawlers is not the library's choice (see
    /// [`crate::crawlers`]): Googlebot-Image falls back to Googlebot's
    /// group before `*`, and AdsBot-Google ignores `*`.
    ///
    /// ```
    /// use rules::Robots;
    /// let robots = Robots::parse(b"User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /g\n");
    /// assert!(robots.crawler("Googlebot-Image").is_allowed("/a"));
    /// assert!(robots.crawler("AdsBot-Google").is_allowed("/g"));
    /// assert!(!robots.crawler("bingbot").is_allowed("/a"));
    /// ```
    pub fn crawler(&self, token: &str) -> Agent<'_> {
        let own = self.named_set(token.as_bytes());
        let set = match crate::crawlers::choice(token) {
            Choice::Plain => own.or(self.inner.global),
            Choice::FallsBackTo(parent) => own.or_else(|| self.named_set(parent.as_bytes())).or(self.inner.global),
            Choice::NamedOnly => own,
        };
        Agent { robots: self, set }
    }

    /// The rule set of the groups that name `agent`, not falling back to `*`.
    ///
    /// Inlined up to the agent filter, which turns away most crawlers a
    /// file does not name: for them a check pays no call for the lookup.
    #[inline]
    fn named_set(&self, agent: &[u8]) -> Option<u32> {
        if !self.inner.agent_filter.may_hold(agent) {
            return None;
        }
        self.named_set_listed(agent)
    }

    /// [`Robots::named_set`] for an agent the filter may hold.
    fn named_set_listed(&self, agent: &[u8]) -> Option<u32> {
        let agents = &self.inner.agents;
        if agents.len() <= 32 {
            // Few agents, as in most files: a length test rejects nearly all
            // of them without reading a byte, which beats a binary search's
            // case-folding comparisons up to a few dozen agents. A token holds only token bytes,
            // so an agent equal to one (ignoring case) is a valid token too.
            for &(token, set) in agents {
                if token.1 as usize == agent.len() && text(&self.inner.arena, token).eq_ignore_ascii_case(agent) {
                    return Some(set);
                }
            }
            return None;
        }
        if !agent.iter().all(|b| is_token_byte(*b)) {
            // A file's tokens hold only token bytes, so nothing can match.
            return None;
        }
        let arena = &self.inner.arena;
        agents.binary_search_by(|(token, _)| cmp_lowercase(text(arena, *token), agent)).ok().map(|i| agents[i].1)
    }

    /// `Sitemap:` lines, with their line numbers, in file order.
    pub fn sitemaps(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.extras().filter(|e| e.kind == KeyKind::Sitemap).map(|e| (e.line, e.value))
    }

    /// Every line that is neither a group nor a rule line (sitemaps,
    /// crawl-delay, unknown keys), in file order.
    pub fn extras(&self) -> impl ExactSizeIterator<Item = Extra<'_>> {
        self.inner.extras.iter().map(|e| e.view(&self.inner.arena))
    }

    /// Size of the input this was parsed from.
    pub fn source_len(&self) -> usize {
        self.source_len
    }

    /// Bytes held by the compiled form, heap and inline: what keeping this
    /// `Robots` costs.
    pub fn memory_usage(&self) -> usize {
        let c = &*self.inner;
        size_of::<Compiled>()
            + c.arena.capacity()
            + c.tables.heap_bytes()
            + c.sets.capacity() * size_of::<RuleSet>()
            + c.sets.iter().map(RuleSet::heap_bytes).sum::<usize>()
            + c.agents.capacity() * size_of::<(Span, u32)>()
            + c.extras.capacity() * size_of::<ExtraLine>()
            + c.written.iter().map(|w| w.1.len() + size_of::<(u32, Box<[u8]>)>()).sum::<usize>()
    }

    /// The public view of a compiled rule. `written` is the value as it
    /// stands in the file; for a derived bare-directory rule that is the
    /// `…/index.html` Allow it came from.
    pub(crate) fn rule_ref(&self, rule: &Rule) -> RuleRef<'_> {
        let pattern = rule.pattern(&self.inner.arena);
        let written = match self.inner.written.binary_search_by_key(&rule.line(), |w| w.0) {
            Ok(i) => &*self.inner.written[i].1,
            Err(_) => pattern,
        };
        RuleRef {
            line: rule.line(),
            kind: if rule.is_allow() { RuleKind::Allow } else { RuleKind::Disallow },
            pattern,
            written,
            from_index_html: rule.is_derived(),
        }
    }

    pub(crate) fn set(&self, i: u32) -> &RuleSet {
        &self.inner.sets[i as usize]
    }

    pub(crate) fn compiled(&self) -> &Compiled {
        &self.inner
    }
}

/// A crawler whose group has been chosen; checks against it skip the agent
/// lookup.
#[derive(Clone, Copy, Debug)]
pub struct Agent<'r> {
    robots: &'r Robots,
    set: Option<u32>,
}

impl<'r> Agent<'r> {
    /// Whether this crawler may fetch `url`.
    #[inline]
    pub fn is_allowed(&self, url: &str) -> bool {
        self.allows_path(&path_of(url.as_bytes()))
    }

    /// [`Agent::check_path`]'s verdict alone: without the group and the
    /// deciding rule's written form, which a verdict looks up and a yes or
    /// no does not need (5% of a small file's check, 63 to 60 ns).
    #[inline]
    pub fn allows_path(&self, path: &[u8]) -> bool {
        self.deciding_rule(path).is_none_or(|rule| rule.is_allow())
    }

    /// The merged rule set this crawler obeys, if any: two crawlers with
    /// the same set get the same verdict for every path.
    pub(crate) fn set_index(&self) -> Option<u32> {
        self.set
    }

    /// The deciding rule's line and whether it allows, without the
    /// verdict's group lookups: `None` when no rule decides (allowed).
    #[inline]
    pub(crate) fn decide_line(&self, path: &[u8]) -> Option<(u32, bool)> {
        self.deciding_rule(path).map(|r| (r.line(), r.is_allow()))
    }

    /// The rule of this crawler's group that decides `path`, if it has a
    /// group and a rule with a non-empty pattern matches.
    #[inline]
    fn deciding_rule(&self, path: &[u8]) -> Option<&'r Rule> {
        let c = self.robots.compiled();
        self.robots.set(self.set?).decide(&c.tables, &c.arena, path)
    }

    /// The verdict for `url`.
    #[inline]
    pub fn check(&self, url: &str) -> Verdict<'r> {
        self.check_bytes(url.as_bytes())
    }

    /// The verdict for a URL given as raw bytes.
    #[inline]
    pub fn check_bytes(&self, url: &[u8]) -> Verdict<'r> {
        let path: Cow<'_, [u8]> = path_of(url);
        self.check_path(&path)
    }

    /// The verdict for a path already extracted with
    /// [`crate::target::path_of`] (path, params and query).
    pub fn check_path(&self, path: &[u8]) -> Verdict<'r> {
        if self.set.is_none() {
            return Verdict { allowed: true, group: None, rule: None, reason: None };
        }
        let group = self.group();
        match self.deciding_rule(path) {
            None => Verdict { allowed: true, group, rule: None, reason: None },
            Some(rule) => {
                Verdict { allowed: rule.is_allow(), group, rule: Some(self.robots.rule_ref(rule)), reason: None }
            }
        }
    }

    /// The chosen group, or `None` when no group applies.
    pub fn group(&self) -> Option<GroupChoice<'r>> {
        let set = self.robots.set(self.set?);
        Some(GroupChoice { global: set.global, lines: set.group_lines(&self.robots.compiled().tables) })
    }

    /// Every rule of the chosen group with a non-empty pattern, in file
    /// order. Slow; for reports.
    pub fn rules(&self) -> Vec<RuleRef<'r>> {
        let Some(set_index) = self.set else { return Vec::new() };
        let c = self.robots.compiled();
        let mut out: Vec<RuleRef<'r>> =
            self.robots.set(set_index).rules(&c.tables).map(|r| self.robots.rule_ref(r)).collect();
        out.sort_by_key(|r| r.line);
        out
    }

    /// Every rule of the chosen group that matches `path`, in precedence
    /// order, empty patterns last. Slow; for `explain`.
    pub fn matching_rules(&self, path: &[u8]) -> Vec<RuleRef<'r>> {
        let Some(set_index) = self.set else { return Vec::new() };
        let c = self.robots.compiled();
        let set = self.robots.set(set_index);
        let mut hits: Vec<&Rule> =
            set.rules(&c.tables).filter(|r| crate::pattern::matches(path, r.pattern(&c.arena))).collect();
        hits.sort_by(|a, b| {
            b.priority().cmp(&a.priority()).then(b.is_allow().cmp(&a.is_allow())).then(a.line().cmp(&b.line()))
        });
        let mut out: Vec<RuleRef<'r>> = hits.into_iter().map(|r| self.robots.rule_ref(r)).collect();
        out.extend(set.empty(&c.tables).iter().map(|&(line, allow)| RuleRef {
            line,
            kind: if allow { RuleKind::Allow } else { RuleKind::Disallow },
            pattern: b"",
            written: b"",
            from_index_html: false,
        }));
        out
    }
}

/// Compares a lower-cased token with an agent, lower-casing the agent on
/// the fly so lookups never allocate.
fn cmp_lowercase(token: &[u8], agent: &[u8]) -> std::cmp::Ordering {
    token.iter().copied().cmp(agent.iter().map(u8::to_ascii_lowercase))
}

#[cfg(test)]
mod tests {
    use super::Robots;

    /// Few agents are found by a scan, many by a binary search; both
    /// compare case-insensitively and never shorten the queried agent.
    #[test]
    fn agents_are_found_among_few_and_many() {
        for n in [2, 32, 33, 40] {
            let mut body = String::from("User-agent: *\nDisallow: /star\n\n");
            for i in 0..n {
                let name: String = (0..=i).map(|k| (b'a' + (k % 26) as u8) as char).collect();
                body.push_str(&format!("User-agent: Bot-{name}\nDisallow: /{name}\n\n"));
            }
            let robots = Robots::parse(body.as_bytes());
            for i in 0..n {
                let name: String = (0..=i).map(|k| (b'a' + (k % 26) as u8) as char).collect();
                let v = robots.check(&format!("BOT-{}", name.to_uppercase()), &format!("/{name}"));
                assert!(!v.allowed, "{n} agents: Bot-{name} has its own group");
                assert!(robots.check(&format!("bot-{name}"), "/star").allowed, "{n}: not the * group");
                assert!(!robots.check(&format!("bot-{name}/1.0"), "/star").allowed, "{n}: not shortened");
            }
            assert!(!robots.check("", "/star").allowed, "{n}: the empty agent falls to *");
            assert!(!robots.check("bot-a b", "/star").allowed, "{n}: a space is no token byte");
        }
    }
}
