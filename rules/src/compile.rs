//! Builds the compiled form from the parser's events: groups are formed the
//! way Google's matcher forms them, then each crawler's groups are merged
//! into one indexed [`RuleSet`].

use std::borrow::Cow;
use std::ops::Range;

use crate::agent_filter::AgentFilter;
use crate::parse::{self, Directive, Handler, KeyKind};
use crate::ruleset::{Rule, RuleSet, Tables};

/// A `user-agent` line as compiled: the global `*`, or the product token
/// Google keeps from the value, lower-cased, as a span of the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentName {
    Global,
    Token(Span),
}

/// Bytes of the arena: start and length. Agent tokens live there beside
/// the patterns, so that a file's agents cost no allocation each.
pub(crate) type Span = (u32, u32);

/// The bytes of `span` in `arena`.
#[inline]
pub(crate) fn text(arena: &[u8], span: Span) -> &[u8] {
    &arena[span.0 as usize..(span.0 + span.1) as usize]
}

/// A non-group line (sitemap, crawl-delay, any unknown key) with its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extra<'r> {
    /// 1-based line number.
    pub line: u32,
    /// How Google classified the key: [`KeyKind::Sitemap`] or [`KeyKind::Unknown`].
    pub kind: KeyKind,
    /// The key as written.
    pub key: &'r [u8],
    /// The value as written.
    pub value: &'r [u8],
}

/// An [`Extra`] as stored: its key and value are spans of the arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExtraLine {
    pub line: u32,
    pub kind: KeyKind,
    pub key: Span,
    pub value: Span,
}

impl ExtraLine {
    /// The public view, reading key and value from `arena`.
    pub fn view(self, arena: &[u8]) -> Extra<'_> {
        Extra { line: self.line, kind: self.kind, key: text(arena, self.key), value: text(arena, self.value) }
    }
}

/// One group as written: where its `user-agent` lines, rules and empty
/// rules start in the builder's flat lists. Lines are only ever added to the
/// last group, so a group ends where the next one starts.
#[derive(Debug, Clone, Copy)]
struct RawGroup {
    agents: u32,
    rules: u32,
    empty: u32,
}

/// Everything `Robots` is made of.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    pub arena: Vec<u8>,
    pub tables: Tables,
    pub sets: Vec<RuleSet>,
    /// Lower-cased product token (in the arena) to rule set, sorted by token.
    pub agents: Vec<(Span, u32)>,
    /// Which agents may be among `agents`, to answer most lookups of an
    /// unnamed crawler without comparing a byte.
    pub agent_filter: AgentFilter,
    pub global: Option<u32>,
    pub extras: Vec<ExtraLine>,
    /// The pattern as written, by line, where it differs from the normalised one.
    pub written: Vec<(u32, Box<[u8]>)>,
}

#[derive(Debug, Default)]
struct Builder {
    arena: Vec<u8>,
    groups: Vec<RawGroup>,
    /// `user-agent` lines of every group, in file order.
    agents: Vec<(u32, AgentName)>,
    rules: Vec<Rule>,
    empty: Vec<(u32, bool)>,
    /// The current group has had a rule, so the next `user-agent` starts a
    /// new group (Google's "separator").
    in_rules: bool,
    extras: Vec<ExtraLine>,
    written: Vec<(u32, Box<[u8]>)>,
}

impl Handler for Builder {
    #[inline]
    fn directive(&mut self, d: &Directive<'_>) {
        // Rule lines are nearly all lines: the others are kept out of line
        // so that the rule path saves and restores few registers.
        match d.kind {
            KeyKind::Allow | KeyKind::Disallow => self.rule(d),
            KeyKind::UserAgent => self.user_agent(d),
            KeyKind::Sitemap | KeyKind::Unknown => self.extra(d),
        }
    }
}

impl Builder {
    #[inline(never)]
    fn user_agent(&mut self, d: &Directive<'_>) {
        if self.in_rules || self.groups.is_empty() {
            self.groups.push(self.end());
            self.in_rules = false;
        }
        let name = if parse::is_global_agent(d.value) {
            AgentName::Global
        } else {
            let token = parse::product_token(d.value);
            let span = self.keep(token);
            self.arena[span.0 as usize..].make_ascii_lowercase();
            AgentName::Token(span)
        };
        self.agents.push((d.line, name));
    }

    #[cold]
    #[inline(never)]
    fn extra(&mut self, d: &Directive<'_>) {
        // Most files have one or two such lines (a sitemap): room for one
        // first, rather than the four a first push makes.
        if self.extras.capacity() == 0 {
            self.extras.reserve_exact(1);
        }
        let key = self.keep(d.key);
        let value = self.keep(d.value);
        self.extras.push(ExtraLine { line: d.line, kind: d.kind, key, value });
    }

    /// Copies `bytes` into the arena.
    fn keep(&mut self, bytes: &[u8]) -> Span {
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(bytes);
        (start, bytes.len() as u32)
    }

    #[inline]
    fn rule(&mut self, d: &Directive<'_>) {
        // Rules before any user-agent line belong to no group.
        if self.groups.is_empty() {
            return;
        }
        self.in_rules = true;
        let allow = d.kind == KeyKind::Allow;
        // The line reader has nearly always seen that the value needs no
        // normalising, and where its first `*` is.
        let (pattern, star) = match d.marks {
            Some(m) if m.plain => (Cow::Borrowed(d.value), m.star),
            _ => {
                let p = parse::normalize_pattern(d.value);
                let star = memchr::memchr(b'*', &p);
                (p, star)
            }
        };
        if pattern.is_empty() {
            self.empty.push((d.line, allow));
            return;
        }
        let derived = if allow { index_html_directory(&pattern) } else { None };
        // Remember the value as written where the compiled patterns will not
        // show it: normalised ones (only those are owned), and the derived
        // bare-directory rule.
        if matches!(pattern, Cow::Owned(_)) || derived.is_some() {
            self.written.push((d.line, d.value.into()));
        }
        push_rule(&mut self.arena, &mut self.rules, &pattern, star, d.line, allow, false);
        if let Some(dir) = derived {
            let mut bare = dir.to_vec();
            bare.push(b'$');
            let star = memchr::memchr(b'*', &bare);
            push_rule(&mut self.arena, &mut self.rules, &bare, star, d.line, true, true);
        }
    }

    /// The ends of the flat lists: where a group starting now would start,
    /// and where the last group ends.
    fn end(&self) -> RawGroup {
        RawGroup { agents: self.agents.len() as u32, rules: self.rules.len() as u32, empty: self.empty.len() as u32 }
    }

    /// Group `g`'s ranges in the flat lists.
    fn group(&self, g: usize) -> (Range<usize>, Range<usize>, Range<usize>) {
        let at = self.groups[g];
        let next = self.groups.get(g + 1).copied().unwrap_or_else(|| self.end());
        (
            at.agents as usize..next.agents as usize,
            at.rules as usize..next.rules as usize,
            at.empty as usize..next.empty as usize,
        )
    }

    fn finish(mut self) -> Compiled {
        // A reallocation to give back less than an eighth is not worth it.
        if self.arena.capacity() - self.arena.len() > self.arena.len() / 8 {
            self.arena.shrink_to_fit();
        }
        self.extras.shrink_to_fit();
        self.written.sort_unstable_by_key(|w| w.0);
        self.written.shrink_to_fit();
        // Which groups each crawler obeys: (token, group, token's span)
        // sorted by token, so each token's groups come out together and in
        // file order.
        let arena = &self.arena;
        let mut named: Vec<(&[u8], u32, Span)> = Vec::new();
        for g in 0..self.groups.len() {
            for (_, name) in &self.agents[self.group(g).0] {
                if let AgentName::Token(t) = name {
                    named.push((text(arena, *t), g as u32, *t));
                }
            }
        }
        named.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        named.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        // Each token's run of `named`, ordered by its list of groups, so
        // that crawlers obeying the same groups come together and share
        // one rule set.
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for (i, (t, ..)) in named.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if named[r.0 as usize].0 == *t => r.1 += 1,
                _ => runs.push((i as u32, i as u32 + 1)),
            }
        }
        let groups_of = |r: (u32, u32)| named[r.0 as usize..r.1 as usize].iter().map(|n| n.1);
        runs.sort_unstable_by(|&a, &b| groups_of(a).cmp(groups_of(b)));

        // Each group usually lands in one set, so the rules fit as they are.
        let mut tables = Tables::with_rules_capacity(self.rules.len());
        let mut sets: Vec<RuleSet> = Vec::with_capacity(runs.len() + 1);
        let global_groups = (0..self.groups.len() as u32)
            .filter(|&g| self.agents[self.group(g as usize).0].iter().any(|a| a.1 == AgentName::Global));
        let global =
            global_groups.clone().next().is_some().then(|| self.make_set(&mut tables, &mut sets, global_groups, true));
        let mut agents: Vec<(Span, u32)> = Vec::with_capacity(runs.len());
        let mut previous: Option<((u32, u32), u32)> = None;
        for &r in &runs {
            let set = match previous {
                Some((p, set)) if groups_of(p).eq(groups_of(r)) => set,
                _ => self.make_set(&mut tables, &mut sets, groups_of(r), false),
            };
            previous = Some((r, set));
            agents.push((named[r.0 as usize].2, set));
        }
        drop(named);
        agents.sort_unstable_by(|a, b| text(&self.arena, a.0).cmp(text(&self.arena, b.0)));
        let agent_filter = AgentFilter::of(agents.iter().map(|a| text(&self.arena, a.0)));
        sets.shrink_to_fit();
        tables.shrink();
        Compiled {
            arena: self.arena,
            tables,
            sets,
            agents,
            agent_filter,
            global,
            extras: self.extras,
            written: self.written,
        }
    }

    /// Adds the rule set of `groups` (group indexes, in file order).
    fn make_set(
        &self,
        tables: &mut Tables,
        sets: &mut Vec<RuleSet>,
        groups: impl Iterator<Item = u32> + Clone,
        global: bool,
    ) -> u32 {
        let rules = groups.clone().map(|g| &self.rules[self.group(g as usize).1]);
        let empty = groups.clone().flat_map(|g| self.empty[self.group(g as usize).2].iter().copied());
        let lines = groups.map(|g| self.agents[self.group(g as usize).0].first().map_or(0, |a| a.0));
        sets.push(tables.add_set(&self.arena, rules, empty, lines, global));
        (sets.len() - 1) as u32
    }
}

#[inline(always)]
fn push_rule(
    arena: &mut Vec<u8>,
    rules: &mut Vec<Rule>,
    pattern: &[u8],
    star: Option<usize>,
    line: u32,
    allow: bool,
    derived: bool,
) {
    rules.push(Rule::new(pattern, star, arena.len(), line, allow, derived));
    arena.extend_from_slice(pattern);
}

/// Google-specific: an Allow whose last path segment starts with
/// `index.htm` also allows the bare directory, as `<dir>/$`.
fn index_html_directory(pattern: &[u8]) -> Option<&[u8]> {
    // The last segment is short, so a plain backward loop finds its slash
    // sooner than a vector search is set up.
    let slash = pattern.iter().rposition(|b| *b == b'/')?;
    pattern[slash..].starts_with(b"/index.htm").then(|| &pattern[..=slash])
}

/// Parses and compiles `body`.
pub(crate) fn compile(body: &[u8]) -> Compiled {
    let mut b = builder(body);
    parse::parse(body, &mut b);
    b.finish()
}

/// [`compile`] and [`crate::lint()`] in one parse.
pub(crate) fn compile_linted(body: &[u8]) -> (Compiled, Vec<crate::Diagnostic>) {
    let mut b = builder(body);
    let findings = crate::lint::lint_alongside(body, &mut b);
    (b.finish(), findings)
}

/// A builder sized for `body`.
fn builder(body: &[u8]) -> Builder {
    // The arena holds the values of the file's lines (patterns, agent
    // tokens, sitemaps): rarely more bytes than the file has, so sized to
    // the file it is not regrown on the way, and one shrink at the end
    // (in place, for the allocator) gives back the keys, comments and
    // line ends.
    let body_len = body.len().min(parse::MAX_FILE_BYTES);
    // Likewise the rules, which the builder drops when it is done: a rule
    // line is rarely under 16 bytes.
    Builder { arena: Vec::with_capacity(body_len), rules: Vec::with_capacity(body_len / 16), ..Builder::default() }
}
