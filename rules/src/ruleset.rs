//! The compiled rules that apply to one crawler: every rule of every group
//! that names it, merged, sorted and indexed so that a check visits only the
//! rules whose leading literal is a prefix of the path.
//!
//! The index is a sorted array of distinct leading literals, each linked to
//! the longest other literal that is a proper prefix of it. Every literal
//! that is a prefix of a path is a prefix of the greatest literal not above
//! the path, so one binary search plus a walk up those links finds all the
//! candidates. It may offer rules that do not match (the wildcard part is
//! still checked) but never misses one.
//!
//! Rules with a `*` inside (after their leading literal) are kept apart:
//! real files have hundreds of `/*…` rules that would all share the root
//! bucket. Each is keyed by one literal segment it requires, and when there
//! are more than a few, one Aho-Corasick pass over the path finds the keys
//! present, so only rules whose key occurs are checked.

use aho_corasick::AhoCorasick;

use crate::pattern::{Shape, classify, matches_after_literal, required_segment};

const NONE: u32 = u32::MAX;

/// One compiled Allow or Disallow rule. Its priority is `len`: the length of
/// the normalised pattern, wildcards included.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    /// Offset of the normalised pattern in the arena.
    pub start: u32,
    pub len: u32,
    pub line: u32,
    /// Length of the leading literal.
    pub lit: u16,
    pub flags: u8,
    pub shape: Shape,
}

pub(crate) const ALLOW: u8 = 1;
/// The rule is the bare-directory Allow derived from an `…/index.htm(l)` one.
pub(crate) const DERIVED: u8 = 2;

impl Rule {
    pub fn is_allow(&self) -> bool {
        self.flags & ALLOW != 0
    }
    pub fn pattern<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..(self.start + self.len) as usize]
    }
    /// Google's precedence in one place: the longer pattern wins; at equal
    /// length Allow wins; among equals the earliest line is reported (Google
    /// only replaces its best match on a strictly higher priority).
    #[inline]
    fn beats(&self, other: &Rule) -> bool {
        if self.len != other.len {
            return self.len > other.len;
        }
        if self.is_allow() != other.is_allow() {
            return self.is_allow();
        }
        self.line < other.line
    }
}

#[derive(Clone, Copy, Debug)]
struct Literal {
    start: u32,
    len: u32,
    first_rule: u32,
    parent: u32,
}

/// Below this many wildcard rules, a linear scan in precedence order beats
/// running an automaton.
const WILD_LINEAR_MAX: usize = 8;
/// Distinct wildcard keys a check tracks on the stack before it falls back
/// to scanning every wildcard rule.
const WILD_SEEN_MAX: usize = 64;

#[derive(Clone, Debug)]
struct WildIndex {
    keys: AhoCorasick,
    /// `wild[key_first[k]..key_first[k + 1]]` are the rules keyed by key `k`.
    key_first: Vec<u32>,
}

/// The merged, indexed rules one crawler obeys.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuleSet {
    /// Rules without an inner `*`, sorted by (literal, priority descending,
    /// Allow first, line).
    rules: Vec<Rule>,
    literals: Vec<Literal>,
    /// Rules with an inner `*`: in precedence order, or grouped by key when
    /// `wild_index` is built.
    wild: Vec<Rule>,
    wild_index: Option<WildIndex>,
    /// Rules with an empty pattern: they match everything with priority 0,
    /// which never decides a verdict, so only `explain` looks at them.
    pub empty: Vec<(u32, bool)>,
    /// The line of the first `user-agent` of each merged group.
    pub group_lines: Vec<u32>,
    pub global: bool,
}

impl RuleSet {
    /// Builds the set from rules in any order.
    pub fn build(
        arena: &[u8],
        mut rules: Vec<Rule>,
        empty: Vec<(u32, bool)>,
        group_lines: Vec<u32>,
        global: bool,
    ) -> RuleSet {
        for r in &mut rules {
            let (lit, shape) = classify(r.pattern(arena));
            r.lit = u16::try_from(lit).unwrap_or(u16::MAX);
            r.shape = shape;
        }
        let (wild, mut rules): (Vec<Rule>, Vec<Rule>) =
            rules.into_iter().partition(|r| r.shape == Shape::Wild);
        let (wild, wild_index) = index_wild(arena, wild);
        let lit_of = |r: &Rule| &arena[r.start as usize..r.start as usize + usize::from(r.lit)];
        rules.sort_unstable_by(|a, b| {
            lit_of(a)
                .cmp(lit_of(b))
                .then(b.len.cmp(&a.len))
                .then(b.is_allow().cmp(&a.is_allow()))
                .then(a.line.cmp(&b.line))
        });
        let mut literals: Vec<Literal> = Vec::new();
        let mut stack: Vec<u32> = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let lit = lit_of(r);
            if let Some(last) = literals.last()
                && arena[last.start as usize..(last.start + last.len) as usize] == *lit
            {
                continue;
            }
            let lit_bytes = |l: &Literal| &arena[l.start as usize..(l.start + l.len) as usize];
            while let Some(&top) = stack.last() {
                if lit.starts_with(lit_bytes(&literals[top as usize])) {
                    break;
                }
                stack.pop();
            }
            let index = literals.len() as u32;
            literals.push(Literal {
                start: r.start,
                len: u32::from(r.lit),
                first_rule: i as u32,
                parent: stack.last().copied().unwrap_or(NONE),
            });
            stack.push(index);
        }
        rules.shrink_to_fit();
        literals.shrink_to_fit();
        RuleSet {
            rules,
            literals,
            wild,
            wild_index,
            empty,
            group_lines,
            global,
        }
    }

    /// The rule that decides `path`, if any rule with a non-empty pattern
    /// matches it.
    #[inline]
    pub fn decide(&self, arena: &[u8], path: &[u8]) -> Option<&Rule> {
        let best = self.decide_literal(arena, path);
        self.decide_wild(arena, path, best)
    }

    fn decide_literal(&self, arena: &[u8], path: &[u8]) -> Option<&Rule> {
        let lit_bytes = |l: &Literal| &arena[l.start as usize..(l.start + l.len) as usize];
        let above = self.literals.partition_point(|l| lit_bytes(l) <= path);
        let greatest = above.checked_sub(1)?;
        let common = common_prefix(lit_bytes(&self.literals[greatest]), path) as u32;
        let mut at = greatest as u32;
        while at != NONE && self.literals[at as usize].len > common {
            at = self.literals[at as usize].parent;
        }
        let mut best: Option<&Rule> = None;
        while at != NONE {
            let literal = &self.literals[at as usize];
            for rule in &self.rules[literal.first_rule as usize..self.bucket_end(at)] {
                if best.is_some_and(|b| !rule.beats(b)) {
                    // The bucket is sorted by precedence: nothing after this can win.
                    break;
                }
                if matches_after_literal(
                    path,
                    rule.pattern(arena),
                    usize::from(rule.lit),
                    rule.shape,
                ) {
                    best = Some(rule);
                    break;
                }
            }
            at = literal.parent;
        }
        best
    }

    /// Improves on `best` with the wildcard rules.
    fn decide_wild<'s>(
        &'s self,
        arena: &[u8],
        path: &[u8],
        mut best: Option<&'s Rule>,
    ) -> Option<&'s Rule> {
        let full_match = |r: &Rule| {
            let pattern = r.pattern(arena);
            path.starts_with(&pattern[..usize::from(r.lit)])
                && matches_after_literal(path, pattern, usize::from(r.lit), r.shape)
        };
        let Some(index) = &self.wild_index else {
            // In precedence order: the first match wins.
            for rule in &self.wild {
                if best.is_some_and(|b| !rule.beats(b)) {
                    break;
                }
                if full_match(rule) {
                    return Some(rule);
                }
            }
            return best;
        };
        let mut seen = [0u32; WILD_SEEN_MAX];
        let mut n_seen = 0;
        for hit in index.keys.find_overlapping_iter(path) {
            let key = hit.pattern().as_u32();
            if seen[..n_seen].contains(&key) {
                continue;
            }
            if n_seen == WILD_SEEN_MAX {
                // Too many distinct keys present: check every wildcard rule.
                for rule in &self.wild {
                    if best.is_none_or(|b| rule.beats(b)) && full_match(rule) {
                        best = Some(rule);
                    }
                }
                return best;
            }
            seen[n_seen] = key;
            n_seen += 1;
            let first = index.key_first[key as usize] as usize;
            let end = index.key_first[key as usize + 1] as usize;
            for rule in &self.wild[first..end] {
                if best.is_some_and(|b| !rule.beats(b)) {
                    break;
                }
                if full_match(rule) {
                    best = Some(rule);
                    break;
                }
            }
        }
        best
    }

    fn bucket_end(&self, literal: u32) -> usize {
        self.literals
            .get(literal as usize + 1)
            .map_or(self.rules.len(), |l| l.first_rule as usize)
    }

    /// Every rule, for `explain` and the lint; not for the hot path.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().chain(&self.wild)
    }

    pub fn heap_bytes(&self) -> usize {
        self.rules.capacity() * size_of::<Rule>()
            + self.wild.capacity() * size_of::<Rule>()
            + self
                .wild_index
                .as_ref()
                .map_or(0, |w| w.keys.memory_usage() + w.key_first.capacity() * 4)
            + self.literals.capacity() * size_of::<Literal>()
            + self.empty.capacity() * size_of::<(u32, bool)>()
            + self.group_lines.capacity() * size_of::<u32>()
    }
}

/// Orders wildcard rules for the scan (precedence order) or, when there
/// are enough to pay for it, groups them by required segment in precedence
/// order within each group and builds the automaton over the segments.
fn index_wild(arena: &[u8], mut wild: Vec<Rule>) -> (Vec<Rule>, Option<WildIndex>) {
    let precedence = |a: &Rule, b: &Rule| {
        b.len
            .cmp(&a.len)
            .then(b.is_allow().cmp(&a.is_allow()))
            .then(a.line.cmp(&b.line))
    };
    let key_of = |r: &Rule| required_segment(r.pattern(arena), usize::from(r.lit));
    if wild.len() <= WILD_LINEAR_MAX {
        wild.sort_unstable_by(precedence);
        wild.shrink_to_fit();
        return (wild, None);
    }
    wild.sort_unstable_by(|a, b| key_of(a).cmp(key_of(b)).then_with(|| precedence(a, b)));
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut key_first: Vec<u32> = Vec::new();
    for (i, r) in wild.iter().enumerate() {
        let key = key_of(r);
        if keys.last() != Some(&key) {
            keys.push(key);
            key_first.push(i as u32);
        }
    }
    key_first.push(wild.len() as u32);
    match AhoCorasick::new(&keys) {
        Ok(automaton) => {
            wild.shrink_to_fit();
            (
                wild,
                Some(WildIndex {
                    keys: automaton,
                    key_first,
                }),
            )
        }
        // The automaton only fails past its size limits; the linear scan
        // is always correct.
        Err(_) => {
            wild.sort_unstable_by(precedence);
            (wild, None)
        }
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
