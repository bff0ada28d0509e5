//! Builds the compiled form from the parser's events: groups are formed the
//! way Google's matcher forms them, then each crawler's groups are merged
//! into one indexed [`RuleSet`].

use std::collections::HashMap;

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

/// One group as written: its `user-agent` lines and its rules in file order.
#[derive(Debug, Default)]
struct RawGroup {
    agents: Vec<(u32, AgentName)>,
    rules: Vec<Rule>,
    empty: Vec<(u32, bool)>,
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
    /// The current group has had a rule, so the next `user-agent` starts a
    /// new group (Google's "separator").
    in_rules: bool,
    extras: Vec<Extra>,
    written: Vec<(u32, Box<[u8]>)>,
}

impl Handler for Builder {
    fn directive(&mut self, d: &Directive<'_>) {
        match d.kind {
            KeyKind::UserAgent => {
                if self.in_rules || self.groups.is_empty() {
                    self.groups.push(RawGroup::default());
                    self.in_rules = false;
                }
                let name = parse::agent_key(d.value).map_or(AgentName::Global, |t| AgentName::Token(t.into()));
                if let Some(g) = self.groups.last_mut() {
                    g.agents.push((d.line, name));
                }
            }
            KeyKind::Allow | KeyKind::Disallow => self.rule(d),
            KeyKind::Sitemap | KeyKind::Unknown => {
                self.extras.push(Extra { line: d.line, kind: d.kind, key: d.key.into(), value: d.value.into() })
            }
        }
    }
}

impl Builder {
    fn rule(&mut self, d: &Directive<'_>) {
        // Rules before any user-agent line belong to no group.
        let Some(group) = self.groups.last_mut() else {
            return;
        };
        self.in_rules = true;
        let allow = d.kind == KeyKind::Allow;
        let pattern = parse::normalize_pattern(d.value);
        if pattern.is_empty() {
            group.empty.push((d.line, allow));
            return;
        }
        let derived = if allow { index_html_directory(&pattern) } else { None };
        // Remember the value as written where the compiled patterns will not
        // show it: normalised ones, and the derived bare-directory rule.
        if pattern.as_ref() != d.value || derived.is_some() {
            self.written.push((d.line, d.value.into()));
        }
        push_rule(&mut self.arena, &mut group.rules, &pattern, d.line, allow, false);
        if let Some(dir) = derived {
            let mut bare = dir.to_vec();
            bare.push(b'$');
            push_rule(&mut self.arena, &mut group.rules, &bare, d.line, true, true);
        }
    }

    fn finish(self) -> Compiled {
        let Builder { mut arena, groups, mut extras, mut written, .. } = self;
        arena.shrink_to_fit();
        extras.shrink_to_fit();
        written.sort_unstable_by_key(|w| w.0);
        written.shrink_to_fit();
        // Which groups each crawler obeys, in file order.
        let mut by_token: HashMap<&[u8], Vec<u32>> = HashMap::new();
        let mut global_groups: Vec<u32> = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            let gi = gi as u32;
            for (_, name) in &g.agents {
                let list = match name {
                    AgentName::Global => &mut global_groups,
                    AgentName::Token(t) => by_token.entry(t).or_default(),
                };
                if list.last() != Some(&gi) {
                    list.push(gi);
                }
            }
        }
        // Crawlers that obey the same groups share one rule set.
        let mut set_of: HashMap<(Vec<u32>, bool), u32> = HashMap::new();
        let mut sets: Vec<RuleSet> = Vec::new();
        let mut tables = Tables::default();
        let mut make_set = |list: Vec<u32>, global: bool| -> u32 {
            *set_of.entry((list.clone(), global)).or_insert_with(|| {
                let mut rules = Vec::new();
                let mut empty = Vec::new();
                let mut lines = Vec::new();
                for &gi in &list {
                    let g = &groups[gi as usize];
                    rules.extend_from_slice(&g.rules);
                    empty.extend_from_slice(&g.empty);
                    lines.push(g.agents.first().map_or(0, |a| a.0));
                }
                sets.push(tables.add_set(&arena, &mut rules, &empty, &lines, global));
                (sets.len() - 1) as u32
            })
        };
        let global = (!global_groups.is_empty()).then(|| make_set(global_groups, true));
        let mut agents: Vec<(Box<[u8]>, u32)> =
            by_token.into_iter().map(|(t, list)| (Box::from(t), make_set(list, false))).collect();
        agents.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        agents.shrink_to_fit();
        sets.shrink_to_fit();
        tables.shrink();
        Compiled { arena, tables, sets, agents, global, extras, written }
    }
}

fn push_rule(arena: &mut Vec<u8>, rules: &mut Vec<Rule>, pattern: &[u8], line: u32, allow: bool, derived: bool) {
    rules.push(Rule::new(arena.len(), pattern.len(), line, allow, derived));
    arena.extend_from_slice(pattern);
}

/// Google-specific: an Allow whose last path segment starts with
/// `index.htm` also allows the bare directory, as `<dir>/$`.
fn index_html_directory(pattern: &[u8]) -> Option<&[u8]> {
    let slash = memchr::memrchr(b'/', pattern)?;
    pattern[slash..].starts_with(b"/index.htm").then(|| &pattern[..=slash])
}

/// Parses and compiles `body`.
pub(crate) fn compile(body: &[u8]) -> Compiled {
    // Patterns are a large share of the file; sizing the arena for them up
    // front avoids regrowing it line by line.
    let mut b = Builder { arena: Vec::with_capacity(body.len().min(parse::MAX_FILE_BYTES) / 2), ..Builder::default() };
    parse::parse(body, &mut b);
    b.finish()
}
