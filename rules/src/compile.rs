//! Builds the compiled form from the parser's events: groups are formed the
//! way Google's matcher forms them, then each crawler's groups are merged
//! into one indexed [`RuleSet`].

use std::borrow::Cow;
use std::ops::Range;

use crate::parse::{self, Directive, Handler, KeyKind};
use crate::ruleset::{Rule, RuleSet, Tables};

/// A `user-agent` line as compiled: the global `*`, or the product token
/// Google keeps from the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentName {
    Global,
    Token(Box<[u8]>),
}

/// A non-group line (sitemap, crawl-delay, any unknown key) with its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extra {
    /// 1-based line number.
    pub line: u32,
    /// How Google classified the key: [`KeyKind::Sitemap`] or [`KeyKind::Unknown`].
    pub kind: KeyKind,
    /// The key as written.
    pub key: Box<[u8]>,
    /// The value as written.
    pub value: Box<[u8]>,
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
    /// Lower-cased product token to rule set, sorted by token.
    pub agents: Vec<(Box<[u8]>, u32)>,
    pub global: Option<u32>,
    pub extras: Vec<Extra>,
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
    extras: Vec<Extra>,
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
        let name = parse::agent_key(d.value).map_or(AgentName::Global, |t| AgentName::Token(t.into()));
        self.agents.push((d.line, name));
    }

    #[cold]
    #[inline(never)]
    fn extra(&mut self, d: &Directive<'_>) {
        self.extras.push(Extra { line: d.line, kind: d.kind, key: d.key.into(), value: d.value.into() })
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
        self.arena.shrink_to_fit();
        self.extras.shrink_to_fit();
        self.written.sort_unstable_by_key(|w| w.0);
        self.written.shrink_to_fit();
        // Which groups each crawler obeys: (token, group) pairs sorted by
        // token, so each token's groups come out together and in file order.
        let mut named: Vec<(&[u8], u32)> = Vec::new();
        let mut global_groups: Vec<u32> = Vec::new();
        for g in 0..self.groups.len() {
            for (_, name) in &self.agents[self.group(g).0] {
                match name {
                    AgentName::Global if global_groups.last() != Some(&(g as u32)) => global_groups.push(g as u32),
                    AgentName::Global => {}
                    AgentName::Token(t) => named.push((t, g as u32)),
                }
            }
        }
        named.sort_unstable();
        named.dedup();
        // Each token with its groups: (token, range of `lists`).
        let mut lists: Vec<u32> = Vec::with_capacity(named.len());
        let mut tokens: Vec<(&[u8], Range<usize>)> = Vec::new();
        for (t, g) in &named {
            match tokens.last_mut() {
                Some((last, r)) if last == t => r.end += 1,
                _ => tokens.push((t, lists.len()..lists.len() + 1)),
            }
            lists.push(*g);
        }

        // Each group usually lands in one set, so the rules fit as they are.
        let mut tables = Tables::with_rules_capacity(self.rules.len());
        let mut sets: Vec<RuleSet> = Vec::with_capacity(tokens.len() + 1);
        // One set of buffers for every set: most files have several.
        let mut empty: Vec<(u32, bool)> = Vec::new();
        let mut lines: Vec<u32> = Vec::new();
        let mut make_set = |b: &Builder, groups: &[u32], global: bool| -> u32 {
            empty.clear();
            lines.clear();
            for &g in groups {
                let (agents, _, e) = b.group(g as usize);
                empty.extend_from_slice(&b.empty[e]);
                lines.push(b.agents[agents].first().map_or(0, |a| a.0));
            }
            let rules = groups.iter().map(|&g| &b.rules[b.group(g as usize).1]);
            sets.push(tables.add_set(&b.arena, rules, &empty, &lines, global));
            (sets.len() - 1) as u32
        };
        let global = (!global_groups.is_empty()).then(|| make_set(&self, &global_groups, true));
        // Crawlers that obey the same groups share one rule set: sorting by
        // group list brings them together.
        let mut by_list: Vec<usize> = (0..tokens.len()).collect();
        by_list.sort_unstable_by(|&a, &b| lists[tokens[a].1.clone()].cmp(&lists[tokens[b].1.clone()]));
        let mut agents: Vec<(Box<[u8]>, u32)> = Vec::with_capacity(tokens.len());
        let mut previous: Option<(&[u32], u32)> = None;
        for &i in &by_list {
            let (token, r) = &tokens[i];
            let list = &lists[r.clone()];
            let set = match previous {
                Some((p, set)) if p == list => set,
                _ => make_set(&self, list, false),
            };
            previous = Some((list, set));
            agents.push((Box::from(*token), set));
        }
        agents.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        sets.shrink_to_fit();
        tables.shrink();
        Compiled { arena: self.arena, tables, sets, agents, global, extras: self.extras, written: self.written }
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
    // Patterns are a large share of the file; sizing the arena for them up
    // front avoids regrowing it line by line.
    let body_len = body.len().min(parse::MAX_FILE_BYTES);
    // Likewise the rules, which the builder drops when it is done: a rule
    // line is rarely under 16 bytes.
    let mut b = Builder {
        arena: Vec::with_capacity(body_len / 2),
        rules: Vec::with_capacity(body_len / 16),
        ..Builder::default()
    };
    parse::parse(body, &mut b);
    b.finish()
}
