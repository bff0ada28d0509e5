//! The index of a large set's leading literals: an open-addressing hash
//! table from each distinct literal to its bucket of rules, and a trie of
//! the literals' whole eight-byte words that says which lengths are worth
//! a probe.
//!
//! Every literal that can match a path is a prefix of it, so a check could
//! hash each of the path's prefixes and probe the table at every length
//! some literal has: eight or nine probes on shop files, where literals
//! take every length from 8 to 30. Instead each run of whole eight-byte
//! words a literal starts with is a node of a trie, kept in a second hash
//! table as the chain hash of those words, with a byte saying which of the
//! next eight lengths end a literal below it. A check walks the path's
//! words down the trie and probes only those lengths; it stops at the
//! first word no literal continues with. Shop files then need under one
//! probe and two node lookups a check, and their checks take a tenth less
//! time.
//!
//! The hash chains whole eight-byte words and finishes with the rest (one
//! to eight bytes) and the length, so a node's key is the chain so far,
//! the hash of a prefix costs one multiply on top of it, and the chain
//! advances one multiply per eight bytes. Building is one pass to hash the
//! literals and, only if some literal repeats, one counting pass to group
//! the rules that share one. The trie is built on the set's first check:
//! its random writes cost a tenth of a large file's parse.
//!
//! A slot holds the bucket's first rule and 12 bits of the literal's hash,
//! so probing past a foreign literal almost never touches the rules. A node
//! holds 7 bits of its hash and is not checked further: nodes whose tags
//! meet in a probe sequence merge their bytes, which costs a probe and
//! misses nothing. The hash is seeded per process, so no file can be
//! written to collide.

use std::sync::OnceLock;

use super::{MUL, Rule, Span, Tables, best_in_bucket, home, mark_ends, precedence, range, seed, span};
use crate::bytes::has_prefix;

const TAG_BITS: u32 = 12;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;
const EMPTY: u32 = u32::MAX;
/// Buckets start below this position, so a slot never reads as [`EMPTY`].
const MAX_RULES: usize = (1 << (32 - TAG_BITS)) - 1;

#[derive(Debug)]
pub(super) struct LiteralIndex {
    slots: Span,
    seed: u64,
    /// Built on the set's first check: adding a large file's nodes costs a
    /// tenth of its parse, which a file that is parsed and never checked
    /// (a lint, a diff, a set no crawler asks for) should not pay.
    trie: OnceLock<Trie>,
}

/// The literals' trie (see the module's notes).
#[derive(Debug)]
struct Trie {
    /// See [`Nodes`].
    nodes: Box<[u16]>,
    /// Bit `l` is set when some literal is `l` bytes long, `l` ≤ 8: the
    /// root's lengths.
    root: u16,
}

impl Trie {
    /// The trie of `rules`' literals.
    fn build(rules: &[Rule], arena: &[u8], seed: u64) -> Trie {
        // A literal of `l` bytes is under (l - 1) / 8 nodes besides the
        // root; at most that many are distinct, and the table stays at most
        // two-thirds full.
        let bound: usize = rules.iter().map(|r| usize::from(r.lit).saturating_sub(1) / 8).sum();
        let mut nodes = vec![NODE_EMPTY; bound + bound / 2 + 1].into_boxed_slice();
        let mut root = 0u16;
        for r in rules {
            let lit = usize::from(r.lit);
            let bytes = &arena[r.start as usize..];
            let last_node = lit.saturating_sub(1) / 8;
            if last_node == 0 {
                root |= 1 << lit;
            }
            let mut h = seed;
            for k in 0..last_node {
                h = chain(h, word(bytes, 8 * k));
                let lengths = if k + 1 == last_node { 1 << (lit - 8 * last_node - 1) } else { 0 };
                Nodes::add(&mut nodes, h, lengths);
            }
        }
        Trie { nodes, root }
    }
}

/// The multiplier of the finishing step (a second odd constant, so that a
/// finished hash is unlike any chain state), which the length also enters.
const FIN: u64 = 0xA076_1D64_78BD_642F;

/// Multiplies to 128 bits and folds, so every input bit reaches every
/// output bit.
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Eight bytes as a little-endian word.
#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

/// The bytes from `at` to `end` (at most eight) as a little-endian word,
/// zero above them.
#[inline]
fn partial(bytes: &[u8], at: usize, end: usize) -> u64 {
    let len = bytes.len();
    if at + 8 <= len {
        word(bytes, at) & low_mask(end - at)
    } else if len >= 8 {
        // The last eight bytes, shifted down past the ones before `at` (all
        // eight when `at` is the end).
        word(bytes, len - 8).checked_shr(8 * (at + 8 - len) as u32).unwrap_or(0) & low_mask(end - at)
    } else {
        bytes[at..end].iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b))
    }
}

/// A mask of the low `n` bytes, `n` ≤ 8.
#[inline]
fn low_mask(n: usize) -> u64 {
    u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0)
}

/// Advances a chain by one whole word.
#[inline]
fn chain(h: u64, w: u64) -> u64 {
    fold_mul(h ^ w, MUL)
}

/// The hash of a string of `len` bytes whose first whole words are
/// chained in `h` and whose last one to eight bytes (none if it is empty)
/// are `tail`: the words up to its trie node, and the rest.
#[inline]
fn finish(h: u64, tail: u64, len: usize) -> u64 {
    fold_mul(h ^ tail, FIN ^ len as u64)
}

/// The hash of the first `len` bytes of `bytes`: its whole words up to its
/// trie node chained, then the rest (see [`finish`]).
fn hash(seed: u64, bytes: &[u8], len: usize) -> u64 {
    let node = len.saturating_sub(1) / 8 * 8;
    let h = (0..node).step_by(8).fold(seed, |h, at| chain(h, word(bytes, at)));
    finish(h, partial(bytes, node, len), len)
}

#[inline]
fn tag(h: u64) -> u32 {
    h as u32 & TAG_MASK
}

/// The trie's nodes: an open-addressing table of `u16` entries, each 7
/// bits of a node's hash with the top bit set (so no entry is zero, the
/// empty slot) and, below, a byte whose bit `i` says that some literal
/// under the node is `i + 1` bytes longer than the node's prefix. Two
/// bytes a node keep a large file's trie in the cache.
struct Nodes<'t>(&'t [u16]);

const NODE_EMPTY: u16 = 0;

impl Nodes<'_> {
    /// The entry's tag, from bits of the hash that [`home`] does not use.
    #[inline]
    fn entry_tag(h: u64) -> u16 {
        ((h as u16) | 0x8000) & 0xFF00
    }

    /// Where the node whose words chain to `h` is, or would go: the first
    /// entry on its probe sequence that is empty or has its tag. Lookups
    /// and adds both stop there, so a merged entry is found by every node
    /// merged into it.
    #[inline]
    fn slot(table: &[u16], h: u64) -> usize {
        let want = Nodes::entry_tag(h);
        let mut at = home(h, table.len());
        while table[at] != NODE_EMPTY && table[at] & 0xFF00 != want {
            at = if at + 1 == table.len() { 0 } else { at + 1 };
        }
        at
    }

    /// The byte of the node whose words chain to `h`, if one may exist.
    #[inline]
    fn get(&self, h: u64) -> Option<u8> {
        let e = self.0[Nodes::slot(self.0, h)];
        (e != NODE_EMPTY).then_some(e as u8)
    }

    /// Adds `lengths` to the node whose words chain to `h`, adding the node
    /// if it is new.
    fn add(table: &mut [u16], h: u64, lengths: u8) {
        let at = Nodes::slot(table, h);
        table[at] = Nodes::entry_tag(h) | table[at] & 0xFF | u16::from(lengths);
    }
}

impl LiteralIndex {
    /// Orders `rules` (a set's literal rules, in the shared table) into
    /// literal buckets, and indexes them into `slots`. Returns
    /// `None` (after putting them in precedence order, for a linear scan)
    /// only for a set too large to index, which a 500 KiB file cannot
    /// produce.
    ///
    /// Parsing a large file is mostly this and reading lines, so it writes
    /// the tables where they stay, and keeps no list per rule unless some
    /// literal repeats.
    pub fn build(slots: &mut Vec<u32>, arena: &[u8], rules: &mut [Rule]) -> Option<LiteralIndex> {
        if rules.len() > MAX_RULES {
            rules.sort_unstable_by(precedence);
            return None;
        }
        let seed = seed();
        // At most one literal per rule: the table stays at most half full.
        let n_slots = rules.len() * 2 + 1;
        let slots_at = slots.len();
        slots.resize(slots_at + n_slots, EMPTY);
        let table = &mut slots[slots_at..];
        // While building, a slot holds (first rule of the literal << TAG_BITS)
        // | tag. Once a literal repeats, `first_of` holds that rule for each.
        let mut first_of: Vec<u32> = Vec::new();
        for i in 0..rules.len() {
            let r = rules[i];
            let lit = r.literal(arena);
            // Hashed in place, so the last partial word can be read whole.
            let h = hash(seed, &arena[r.start as usize..], lit.len());
            let mut at = home(h, n_slots);
            let first = loop {
                let s = table[at];
                if s == EMPTY {
                    table[at] = ((i as u32) << TAG_BITS) | tag(h);
                    break i as u32;
                }
                if s & TAG_MASK == tag(h) && rules[(s >> TAG_BITS) as usize].literal(arena) == lit {
                    break s >> TAG_BITS;
                }
                at = if at + 1 == n_slots { 0 } else { at + 1 };
            };
            if first != i as u32 && first_of.is_empty() {
                // The first repeat: every rule before it was its own first.
                first_of.reserve_exact(rules.len());
                first_of.extend(0..i as u32);
            }
            if !first_of.is_empty() {
                first_of.push(first);
            }
        }

        if first_of.is_empty() {
            // Every literal distinct, as in most large sets: each rule is its
            // own bucket, already where the slots say.
            for r in rules.iter_mut() {
                r.set_last();
            }
        } else {
            // Group by first rule with a counting sort, then order each bucket.
            let mut starts = vec![0u32; rules.len() + 1];
            for &f in &first_of {
                starts[f as usize + 1] += 1;
            }
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            let mut next = starts.clone();
            let mut grouped = vec![rules[0]; rules.len()];
            for (r, &f) in rules.iter().zip(&first_of) {
                grouped[next[f as usize] as usize] = *r;
                next[f as usize] += 1;
            }
            for w in starts.windows(2) {
                let bucket = &mut grouped[w[0] as usize..w[1] as usize];
                if bucket.len() > 1 {
                    bucket.sort_unstable_by(precedence);
                }
            }
            mark_ends(&mut grouped, &starts, |r| r);
            rules.copy_from_slice(&grouped);
            for s in table.iter_mut() {
                if *s != EMPTY {
                    *s = (starts[(*s >> TAG_BITS) as usize] << TAG_BITS) | (*s & TAG_MASK);
                }
            }
        }

        Some(LiteralIndex { slots: span(&(slots_at..slots.len())), seed, trie: OnceLock::new() })
    }

    /// Bytes on the heap: the trie's, once it is built.
    pub fn heap_bytes(&self) -> usize {
        self.trie.get().map_or(0, |t| t.nodes.len() * size_of::<u16>())
    }

    /// The best rule of `rules` (this set's literal rules) for `path`.
    #[inline]
    pub fn decide<'t>(&self, t: &Tables, rules: &'t [Rule], arena: &[u8], path: &[u8]) -> Option<&'t Rule> {
        let slots = &t.slots[range(self.slots)];
        let trie = self.trie.get_or_init(|| Trie::build(rules, arena, self.seed));
        let nodes = Nodes(&trie.nodes);
        let mut best = None;
        // The chain holds the first `at` bytes of the path; bit `i` of
        // `lengths` says a literal may be `at + i` bytes long.
        let mut h = self.seed;
        let mut at = 0;
        let mut lengths = u32::from(trie.root);
        loop {
            while lengths != 0 {
                let l = at + lengths.trailing_zeros() as usize;
                lengths &= lengths - 1;
                if l > path.len() {
                    return best;
                }
                let hl = finish(h, partial(path, at, l), l);
                if let Some(first) = find(slots, rules, arena, hl, &path[..l]) {
                    best = best_in_bucket(&rules[first..], |r| r, |r| r.matches_after_literal(arena, path), best);
                }
            }
            // The next node's literals are longer than `at + 8`.
            if at + 8 >= path.len() {
                return best;
            }
            h = chain(h, word(path, at));
            at += 8;
            match nodes.get(h) {
                Some(byte) => lengths = u32::from(byte) << 1,
                None => return best,
            }
        }
    }
}

/// The first rule of the bucket whose literal is `prefix` (hashed to `h`).
#[inline]
fn find(slots: &[u32], rules: &[Rule], arena: &[u8], h: u64, prefix: &[u8]) -> Option<usize> {
    let mut at = home(h, slots.len());
    loop {
        let s = slots[at];
        if s == EMPTY {
            return None;
        }
        if s & TAG_MASK == tag(h) {
            let first = (s >> TAG_BITS) as usize;
            let r = &rules[first];
            if usize::from(r.lit) == prefix.len() && has_prefix(prefix, r.literal(arena)) {
                return Some(first);
            }
        }
        at = if at + 1 == slots.len() { 0 } else { at + 1 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_that_share_a_tag_keep_every_length() {
        // Thousands of nodes with 7-bit tags in a table two-thirds full:
        // many meet and merge. Each must still be found, with at least the
        // lengths it was given.
        let n = 6000;
        let mut table = vec![NODE_EMPTY; n + n / 2 + 1];
        let mut h = 0x9E37_79B9_7F4A_7C15u64;
        let mut added = Vec::new();
        for i in 0..n {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            let lengths = 1u8 << (i % 8);
            Nodes::add(&mut table, h, lengths);
            added.push((h, lengths));
        }
        let nodes = Nodes(&table);
        for (h, lengths) in added {
            let got = nodes.get(h).expect("an added node is found");
            assert_eq!(got & lengths, lengths, "{h:#x}");
        }
    }
}
