//! The compiled rules that apply to one crawler: every rule of every group
//! that names it, merged, sorted and indexed so that a check visits only the
//! rules that can match.
//!
//! A set with few rules keeps them in precedence order and scans them; the
//! first match wins. A larger set indexes them by leading literal: a sorted
//! array of distinct literals, each linked to the longest other literal that
//! is a proper prefix of it. Every literal that is a prefix of a path is a
//! prefix of the greatest literal not above the path, so one binary search
//! plus a walk up those links finds all the candidates. The index may offer
//! rules that do not match (the wildcard part is still checked) but never
//! misses one.
//!
//! Rules that start with `*` or `/*` and have more after it are kept apart:
//! real files have hundreds of them, and they would all share the root
//! buckets. Each is keyed by one literal segment it requires, and when there
//! are more than a few, one Aho-Corasick pass over the path finds the keys
//! present, so only rules whose key occurs are checked.
//!
//! All sets of one file share their tables; a set is a handful of ranges,
//! so files with dozens of small groups stay small.

use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind};

use crate::bytes::{cmp_bytes, common_prefix, has_prefix};
use crate::pattern::{Shape, classify, matches_after_literal, required_segment};

const NONE: u32 = u32::MAX;
/// Up to this many literal rules, a set is scanned in precedence order.
const LINEAR_MAX: usize = 16;
/// Below this many wildcard rules, a linear scan in precedence order beats
/// running an automaton.
const WILD_LINEAR_MAX: usize = 8;
/// Distinct wildcard keys a check tracks on the stack before it falls back
/// to scanning every wildcard rule.
const WILD_SEEN_MAX: usize = 64;

/// One compiled Allow or Disallow rule, in 12 bytes. Its priority is `len`:
/// the length of the normalised pattern, wildcards included (at most three
/// times a 16,663-byte line, so it fits in `u16`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    /// Offset of the normalised pattern in the arena.
    start: u32,
    /// Line number << 8 | shape << 2 | flags. Lines fit in 24 bits because
    /// only 500 KiB are read.
    line_flags: u32,
    len: u16,
    /// Length of the leading literal.
    lit: u16,
}

const ALLOW: u32 = 1;
/// The rule is the bare-directory Allow derived from an `…/index.htm(l)` one.
const DERIVED: u32 = 2;

impl Rule {
    pub fn new(start: usize, len: usize, line: u32, allow: bool, derived: bool) -> Rule {
        let flags = if allow { ALLOW } else { 0 } | if derived { DERIVED } else { 0 };
        Rule {
            start: start as u32,
            line_flags: (line << 8) | flags,
            len: u16::try_from(len).unwrap_or(u16::MAX),
            lit: 0,
        }
    }
    pub fn line(&self) -> u32 {
        self.line_flags >> 8
    }
    pub fn is_allow(&self) -> bool {
        self.line_flags & ALLOW != 0
    }
    pub fn is_derived(&self) -> bool {
        self.line_flags & DERIVED != 0
    }
    pub fn priority(&self) -> usize {
        usize::from(self.len)
    }
    fn shape(&self) -> Shape {
        match (self.line_flags >> 2) & 3 {
            0 => Shape::Prefix,
            1 => Shape::Exact,
            _ => Shape::Wild,
        }
    }
    fn set_shape(&mut self, lit: usize, shape: Shape) {
        self.lit = u16::try_from(lit).unwrap_or(u16::MAX);
        let bits = match shape {
            Shape::Prefix => 0,
            Shape::Exact => 1,
            Shape::Wild => 2,
        };
        self.line_flags = (self.line_flags & !(3 << 2)) | (bits << 2);
    }
    pub fn pattern<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..self.start as usize + usize::from(self.len)]
    }
    fn literal<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..self.start as usize + usize::from(self.lit)]
    }
    /// The whole match, literal included.
    #[inline]
    fn matches(&self, arena: &[u8], path: &[u8]) -> bool {
        has_prefix(path, self.literal(arena)) && self.matches_after_literal(arena, path)
    }
    #[inline]
    fn matches_after_literal(&self, arena: &[u8], path: &[u8]) -> bool {
        matches_after_literal(path, self.pattern(arena), usize::from(self.lit), self.shape())
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
        self.line() < other.line()
    }
}

/// Sorts rules by (literal, precedence). Sorting dominates compiling a
/// large file, so it compares a precomputed 16-byte head of each literal
/// and a packed precedence key, and reads the arena only when heads tie.
fn sort_by_literal(arena: &[u8], rules: &mut [Rule]) {
    let head = |lit: &[u8]| {
        let mut buf = [0u8; 16];
        let n = lit.len().min(16);
        buf[..n].copy_from_slice(&lit[..n]);
        u128::from_be_bytes(buf)
    };
    // Ascending order of this key is precedence order.
    let rank = |r: &Rule| (u64::from(u16::MAX - r.len) << 33) | (u64::from(!r.is_allow()) << 32) | u64::from(r.line());
    let mut keyed: Vec<(u128, u64, Rule)> = rules.iter().map(|r| (head(r.literal(arena)), rank(r), *r)).collect();
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| cmp_bytes(a.2.literal(arena), b.2.literal(arena))).then(a.1.cmp(&b.1))
    });
    for (slot, k) in rules.iter_mut().zip(keyed) {
        *slot = k.2;
    }
}

fn precedence(a: &Rule, b: &Rule) -> std::cmp::Ordering {
    b.len.cmp(&a.len).then(b.is_allow().cmp(&a.is_allow())).then(a.line().cmp(&b.line()))
}

#[derive(Clone, Copy, Debug)]
struct Literal {
    start: u32,
    len: u32,
    first_rule: u32,
    parent: u32,
}

/// The storage every [`RuleSet`] of one file points into.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    rules: Vec<Rule>,
    literals: Vec<Literal>,
    /// Rules with an empty pattern: they match everything with priority 0,
    /// which never decides a verdict, so only `explain` looks at them.
    empty: Vec<(u32, bool)>,
    group_lines: Vec<u32>,
}

#[derive(Debug)]
struct WildIndex {
    keys: AhoCorasick,
    /// Rule `first + key_first[k]` up to `first + key_first[k + 1]` are
    /// keyed by key `k`.
    key_first: Box<[u32]>,
}

type Span = (u32, u32);

fn span(r: &Range<usize>) -> Span {
    (r.start as u32, r.end as u32)
}

fn range(s: Span) -> Range<usize> {
    s.0 as usize..s.1 as usize
}

/// The merged, indexed rules one crawler obeys: ranges into [`Tables`].
#[derive(Debug)]
pub(crate) struct RuleSet {
    /// Rules without a leading wildcard: in precedence order when the set is
    /// small (no literals), else sorted by (literal, precedence).
    rules: Span,
    literals: Span,
    /// Wildcard rules with a literal of at most `/`: in precedence order,
    /// or grouped by key when `wild_index` is built.
    wild: Span,
    wild_index: Option<Box<WildIndex>>,
    empty: Span,
    group_lines: Span,
    /// The crawler fell back to the `*` groups.
    pub global: bool,
}

impl Tables {
    /// Adds a set built from rules in any order.
    pub fn add_set(
        &mut self,
        arena: &[u8],
        mut rules: Vec<Rule>,
        empty: &[(u32, bool)],
        group_lines: &[u32],
        global: bool,
    ) -> RuleSet {
        for r in &mut rules {
            let (lit, shape) = classify(r.pattern(arena));
            r.set_shape(lit, shape);
        }
        // Wildcard rules whose literal says nothing (`*…`, `/*…`) would all
        // share the root buckets; the others are pruned well by their literal.
        let (wild, mut plain): (Vec<Rule>, Vec<Rule>) =
            rules.into_iter().partition(|r| r.shape() == Shape::Wild && r.lit <= 1);

        let first = self.rules.len();
        let literals_first = self.literals.len();
        if plain.len() <= LINEAR_MAX {
            plain.sort_unstable_by(precedence);
            self.rules.extend_from_slice(&plain);
        } else {
            sort_by_literal(arena, &mut plain);
            self.index_literals(arena, &plain, first);
            self.rules.extend_from_slice(&plain);
        }
        let rules = span(&(first..self.rules.len()));
        let literals = span(&(literals_first..self.literals.len()));

        let wild_first = self.rules.len();
        let wild_index = self.add_wild(arena, wild);
        let wild = span(&(wild_first..self.rules.len()));

        let e = self.empty.len();
        self.empty.extend_from_slice(empty);
        let g = self.group_lines.len();
        self.group_lines.extend_from_slice(group_lines);
        RuleSet {
            rules,
            literals,
            wild,
            wild_index,
            empty: span(&(e..self.empty.len())),
            group_lines: span(&(g..self.group_lines.len())),
            global,
        }
    }

    /// Adds the literal index for `sorted`, which will be stored from rule
    /// index `first` on.
    fn index_literals(&mut self, arena: &[u8], sorted: &[Rule], first: usize) {
        let base = self.literals.len();
        let mut stack: Vec<usize> = Vec::new();
        for (i, r) in sorted.iter().enumerate() {
            let lit = r.literal(arena);
            let bytes = |l: &Literal| &arena[l.start as usize..(l.start + l.len) as usize];
            if self.literals.len() > base && bytes(&self.literals[self.literals.len() - 1]) == lit {
                continue;
            }
            while let Some(&top) = stack.last() {
                if lit.starts_with(bytes(&self.literals[top])) {
                    break;
                }
                stack.pop();
            }
            let parent = stack.last().map_or(NONE, |&p| (p - base) as u32);
            stack.push(self.literals.len());
            self.literals.push(Literal {
                start: r.start,
                len: u32::from(r.lit),
                first_rule: (first + i) as u32,
                parent,
            });
        }
    }

    /// Stores wildcard rules in precedence order, or, when there are enough
    /// to pay for it, grouped by required segment (precedence order within
    /// each group) with an automaton over the segments.
    fn add_wild(&mut self, arena: &[u8], mut wild: Vec<Rule>) -> Option<Box<WildIndex>> {
        let key_of = |r: &Rule| required_segment(r.pattern(arena), usize::from(r.lit));
        if wild.len() > WILD_LINEAR_MAX {
            let mut keyed: Vec<(&[u8], Rule)> = wild.iter().map(|r| (key_of(r), *r)).collect();
            keyed.sort_unstable_by(|a, b| cmp_bytes(a.0, b.0).then_with(|| precedence(&a.1, &b.1)));
            wild.clear();
            wild.extend(keyed.iter().map(|k| k.1));
            let mut keys: Vec<&[u8]> = Vec::new();
            let mut key_first: Vec<u32> = Vec::new();
            for (i, (key, _)) in keyed.iter().enumerate() {
                let key = *key;
                if keys.last() != Some(&key) {
                    keys.push(key);
                    key_first.push(i as u32);
                }
            }
            key_first.push(wild.len() as u32);
            // The contiguous NFA is a fraction of a DFA's size and fast on
            // the short haystacks URL paths are; a dense root state keeps the
            // common "no key starts here" step cheap, and deeper dense states
            // cost memory for no measurable speed. It only fails past its
            // size limits, and then the linear scan below is still correct.
            let built =
                AhoCorasickBuilder::new().kind(Some(AhoCorasickKind::ContiguousNFA)).dense_depth(1).build(&keys);
            if let Ok(keys) = built {
                self.rules.extend_from_slice(&wild);
                return Some(Box::new(WildIndex { keys, key_first: key_first.into() }));
            }
        }
        wild.sort_unstable_by(precedence);
        self.rules.extend_from_slice(&wild);
        None
    }

    pub fn shrink(&mut self) {
        self.rules.shrink_to_fit();
        self.literals.shrink_to_fit();
        self.empty.shrink_to_fit();
        self.group_lines.shrink_to_fit();
    }

    pub fn heap_bytes(&self) -> usize {
        self.rules.capacity() * size_of::<Rule>()
            + self.literals.capacity() * size_of::<Literal>()
            + self.empty.capacity() * size_of::<(u32, bool)>()
            + self.group_lines.capacity() * size_of::<u32>()
    }
}

impl RuleSet {
    /// The rule that decides `path`, if any rule with a non-empty pattern
    /// matches it.
    #[inline]
    pub fn decide<'t>(&self, t: &'t Tables, arena: &[u8], path: &[u8]) -> Option<&'t Rule> {
        let best = if self.literals.0 == self.literals.1 {
            t.rules[range(self.rules)].iter().find(|r| r.matches(arena, path))
        } else {
            self.decide_indexed(t, arena, path)
        };
        self.decide_wild(t, arena, path, best)
    }

    fn decide_indexed<'t>(&self, t: &'t Tables, arena: &[u8], path: &[u8]) -> Option<&'t Rule> {
        let literals = &t.literals[range(self.literals)];
        let bytes = |l: &Literal| &arena[l.start as usize..(l.start + l.len) as usize];
        let above = literals.partition_point(|l| cmp_bytes(bytes(l), path).is_le());
        let greatest = above.checked_sub(1)?;
        let common = common_prefix(bytes(&literals[greatest]), path) as u32;
        let mut at = greatest as u32;
        while at != NONE && literals[at as usize].len > common {
            at = literals[at as usize].parent;
        }
        let mut best: Option<&Rule> = None;
        while at != NONE {
            let literal = &literals[at as usize];
            let end = literals.get(at as usize + 1).map_or(self.rules.1, |l| l.first_rule);
            for rule in &t.rules[literal.first_rule as usize..end as usize] {
                if best.is_some_and(|b| !rule.beats(b)) {
                    // The bucket is in precedence order: nothing after this can win.
                    break;
                }
                if rule.matches_after_literal(arena, path) {
                    best = Some(rule);
                    break;
                }
            }
            at = literal.parent;
        }
        best
    }

    /// Improves on `best` with the wildcard rules.
    fn decide_wild<'t>(
        &self,
        t: &'t Tables,
        arena: &[u8],
        path: &[u8],
        mut best: Option<&'t Rule>,
    ) -> Option<&'t Rule> {
        let wild = &t.rules[range(self.wild)];
        let Some(index) = &self.wild_index else {
            // In precedence order: the first match wins.
            for rule in wild {
                if best.is_some_and(|b| !rule.beats(b)) {
                    break;
                }
                if rule.matches(arena, path) {
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
                for rule in wild {
                    if best.is_none_or(|b| rule.beats(b)) && rule.matches(arena, path) {
                        best = Some(rule);
                    }
                }
                return best;
            }
            seen[n_seen] = key;
            n_seen += 1;
            let keyed = index.key_first[key as usize] as usize..index.key_first[key as usize + 1] as usize;
            for rule in &wild[keyed] {
                if best.is_some_and(|b| !rule.beats(b)) {
                    break;
                }
                if rule.matches(arena, path) {
                    best = Some(rule);
                    break;
                }
            }
        }
        best
    }

    /// Every rule with a non-empty pattern; for `explain`, not the hot path.
    pub fn rules<'t>(&self, t: &'t Tables) -> impl Iterator<Item = &'t Rule> {
        t.rules[range(self.rules)].iter().chain(&t.rules[range(self.wild)])
    }

    /// Rules with an empty pattern, as (line, is Allow).
    pub fn empty<'t>(&self, t: &'t Tables) -> &'t [(u32, bool)] {
        &t.empty[range(self.empty)]
    }

    /// The line of the first `user-agent` of each merged group.
    pub fn group_lines<'t>(&self, t: &'t Tables) -> &'t [u32] {
        &t.group_lines[range(self.group_lines)]
    }

    pub fn heap_bytes(&self) -> usize {
        self.wild_index.as_ref().map_or(0, |w| size_of::<WildIndex>() + w.keys.memory_usage() + w.key_first.len() * 4)
    }
}
