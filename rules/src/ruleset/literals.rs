//! The index of a large set's leading literals: an open-addressing hash
//! table from each distinct literal to its bucket of rules, and a bit per
//! literal length present.
//!
//! Every literal that can match a path is a prefix of it, so a check hashes
//! the path's prefixes and probes the table only at the lengths some
//! literal has, with no comparison of bytes except on a hit. The hash
//! chains whole eight-byte words and finishes with the partial word and
//! the length, so the hash of any prefix costs one multiply on top of the
//! chain, and the chain advances one multiply per eight bytes. Building is
//! one pass to hash the literals and, only if some literal repeats, one
//! counting pass to group the rules that share one.
//!
//! A slot holds the bucket's first rule and 12 bits of the literal's hash,
//! so probing past a foreign literal almost never touches the rules. The
//! hash is seeded per process, so no file can be written to collide.

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
    /// Bit `l` is set when some literal is `l` bytes long.
    lens: Span,
    /// One bit per literal hash: most prefixes that are no literal fail
    /// this test and never probe the table.
    filter: Span,
    filter_mask: u32,
    max_len: u32,
    seed: u64,
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

/// The bytes from `at` to `end` (fewer than eight) as a little-endian word,
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

/// A mask of the low `n` bytes, `n` < 8.
#[inline]
fn low_mask(n: usize) -> u64 {
    (1u64 << (8 * n)) - 1
}

/// Advances a chain by one whole word.
#[inline]
fn chain(h: u64, w: u64) -> u64 {
    fold_mul(h ^ w, MUL)
}

/// The hash of a string of length `len` whose whole words are chained in
/// `h` and whose last `len % 8` bytes are `tail`.
#[inline]
fn finish(h: u64, tail: u64, len: usize) -> u64 {
    fold_mul(h ^ tail, FIN ^ len as u64)
}

/// The hash of the first `len` bytes of `bytes`.
fn hash(seed: u64, bytes: &[u8], len: usize) -> u64 {
    let whole = len / 8 * 8;
    let h = (0..whole).step_by(8).fold(seed, |h, at| chain(h, word(bytes, at)));
    finish(h, partial(bytes, whole, len), len)
}

#[inline]
fn tag(h: u64) -> u32 {
    h as u32 & TAG_MASK
}

/// The filter bit of a hash: bits the slot and the tag do not use.
#[inline]
fn filter_bit(h: u64, mask: u32) -> usize {
    ((h as u32 >> TAG_BITS) & mask) as usize
}

impl LiteralIndex {
    /// Orders `rules` (a set's literal rules, in the shared table) into
    /// literal buckets, and indexes them into `slots` and `bits`. Returns
    /// `None` (after putting them in precedence order, for a linear scan)
    /// only for a set too large to index, which a 500 KiB file cannot
    /// produce.
    ///
    /// Parsing a large file is mostly this and reading lines, so it writes
    /// the table and filter where they stay, and keeps no list per rule
    /// unless some literal repeats.
    pub fn build(slots: &mut Vec<u32>, bits: &mut Vec<u64>, arena: &[u8], rules: &mut [Rule]) -> Option<LiteralIndex> {
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
        // Sized as if every literal were distinct, as they usually are.
        let filter_bits = (rules.len() * 16).next_power_of_two().max(64);
        let filter_mask = (filter_bits - 1) as u32;
        let filter_at = bits.len();
        bits.resize(filter_at + filter_bits / 64, 0);
        let filter = &mut bits[filter_at..];
        // While building, a slot holds (first rule of the literal << TAG_BITS)
        // | tag. Once a literal repeats, `first_of` holds that rule for each.
        let mut first_of: Vec<u32> = Vec::new();
        let mut max_len = 0;
        for i in 0..rules.len() {
            let r = rules[i];
            let lit = r.literal(arena);
            max_len = max_len.max(lit.len());
            // Hashed in place, so the last partial word can be read whole.
            let h = hash(seed, &arena[r.start as usize..], lit.len());
            let mut at = home(h, n_slots);
            let first = loop {
                let s = table[at];
                if s == EMPTY {
                    table[at] = ((i as u32) << TAG_BITS) | tag(h);
                    let bit = filter_bit(h, filter_mask);
                    filter[bit / 64] |= 1 << (bit % 64);
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
            mark_ends(&mut grouped, &starts);
            rules.copy_from_slice(&grouped);
            for s in table.iter_mut() {
                if *s != EMPTY {
                    *s = (starts[(*s >> TAG_BITS) as usize] << TAG_BITS) | (*s & TAG_MASK);
                }
            }
        }

        let lens_at = bits.len();
        bits.resize(lens_at + max_len / 64 + 1, 0);
        let lens = &mut bits[lens_at..];
        for r in rules.iter() {
            let l = usize::from(r.lit);
            lens[l / 64] |= 1 << (l % 64);
        }
        Some(LiteralIndex {
            slots: span(&(slots_at..slots.len())),
            lens: span(&(lens_at..bits.len())),
            filter: span(&(filter_at..lens_at)),
            filter_mask,
            max_len: max_len as u32,
            seed,
        })
    }

    /// The best rule of `rules` (this set's literal rules) for `path`.
    #[inline]
    pub fn decide<'t>(&self, t: &Tables, rules: &'t [Rule], arena: &[u8], path: &[u8]) -> Option<&'t Rule> {
        let slots = &t.slots[range(self.slots)];
        let lens = &t.bits[range(self.lens)];
        let filter = &t.bits[range(self.filter)];
        let limit = path.len().min(self.max_len as usize);
        let mut best = None;
        // The chain holds the first `chained` whole words of the path.
        let mut h = self.seed;
        let mut chained = 0;
        for (i, &present) in lens.iter().enumerate() {
            let mut present = present;
            while present != 0 {
                let l = i * 64 + present.trailing_zeros() as usize;
                present &= present - 1;
                if l > limit {
                    return best;
                }
                while chained + 8 <= l {
                    h = chain(h, word(path, chained));
                    chained += 8;
                }
                let hl = finish(h, partial(path, chained, l), l);
                let bit = filter_bit(hl, self.filter_mask);
                if (filter[bit / 64] >> (bit % 64)) & 1 != 0
                    && let Some(first) = find(slots, rules, arena, hl, &path[..l])
                {
                    best = best_in_bucket(&rules[first..], arena, path, false, best);
                }
            }
        }
        best
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
