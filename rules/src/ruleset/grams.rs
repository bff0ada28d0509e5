//! The index of a large set's rules that start with `*` or `/*`
//! (`/*?sessionid=`, `*.pdf$`), and of those with a `*` after their literal
//! and a segment after that (`/products/*/print`): the leading literal of
//! the first prefixes every path, and that of the second is shared by
//! hundreds of rules in shop files, so neither narrows them down. Instead
//! each rule is keyed by a gram, up to four bytes, that every path it
//! matches must contain: of all the grams in the segments after its
//! literal, the one that fewest of the set's rules hold. A candidate is
//! matched in full, literal included.
//!
//! The count takes in the set's other rules too, the ones with a leading
//! literal, because they are the best sample of the site's paths that the
//! file offers: a gram many of them hold (`shoe` on a shop whose rules name
//! `/products/shoes-…`) is in many paths, and a key like that sends the
//! check to its bucket on most of them. Counting them halved the buckets a
//! shop-medium check visits (0.55 to 0.29) and cut a tenth of its time. It
//! costs a third of a parse, so the index is built on the set's first
//! check, as the literal index's trie is: a file parsed and never checked
//! does not pay for it.
//!
//! A check slides over the path once. At each position it tests the
//! four-byte gram against a bit filter, and only for grams that pass does
//! it probe the table and check that bucket's rules in full. Narrower keys
//! (`?q=`, `.js`, `?`) are few and start with few distinct bytes, so they
//! are looked for only where one of those bytes is, found eight bytes at
//! a time: testing every width at every position cost half the scan. In a
//! long set, up to three three-byte keys are instead held in the filter as
//! every four-byte gram they begin, and the four-byte pass finds them. A
//! rule with a literal past its first directory may also be keyed by the
//! literal's last four bytes, which set it apart when its segments are
//! shared (`/shop/shoes-17/*/print`). Building is
//! a count of the candidate grams and a sort of the (usually few hundred)
//! wildcard rules by key.

use std::sync::OnceLock;

use crate::bytes::find_any;

use super::{Rule, best_in_bucket, home, mark_ends, precedence, seed};

/// Distinct buckets a check tracks in a list before it tracks them in a
/// bitmap of the set's rules. The list is zeroed on every check: at 64 that
/// cost 4 ns of a 105 ns shop-medium check, and real paths (the 1,613-file
/// corpus with its URLs) were no slower at 16.
const SEEN_MAX: usize = 16;
/// Longest gram: grams are compared as one `u32`.
const WIDTH: usize = 4;
const EMPTY: u32 = u32::MAX;
/// `short_starts` when narrow keys start with more than three bytes.
const MANY: u8 = u8::MAX;
/// A set may hold its three-byte keys in the filter as the 255 four-byte
/// grams each begins, so that the four-byte pass finds them, and the pass
/// that tests every width at every position is not needed (on shop files
/// of 600 to 2,500 rules, a third of a check). Expanded grams get fewer
/// filter bits than a key (a false pass costs a test of [`Grams::exact`],
/// not a lookup): half a key's, if the filter grows by at most half as
/// many bytes as the set's patterns hold, else a quarter, if it grows by
/// at most as many. That keeps files within twice their size compiled:
/// at half a key's bits whatever the growth, a file of 600 rules with many
/// `/*abc*` rules compiled to 2.2 times its size, and at a quarter's
/// everywhere, shop files lost 5-10% of their speed.
const EXPANDED_WEIGHTS: [(usize, usize); 2] = [(255 / 2, 2), (255 / 4, 1)];
/// The low three bytes of a gram.
const LOW3: u32 = 0xFF_FFFF;
/// At most about this many of a set's literal rules are counted when keys
/// are chosen.
const PLAIN_SAMPLE: usize = 1024;
/// A table slot holds its bucket's first rule in the low bits and the
/// bucket's highest priority above them (see [`Grams::table`]).
const FIRST_BITS: u32 = 20;
const FIRST_MASK: u32 = (1 << FIRST_BITS) - 1;
/// The highest priority a slot can say; a bucket whose rules are longer
/// says this, and is never skipped for its priority.
const TOP_UNKNOWN: u32 = u32::MAX >> FIRST_BITS;
/// Sets with more gram-keyed rules than a slot can point to are scanned
/// whole; a 500 KiB file has at most about 100,000 rules.
const MAX_RULES: usize = FIRST_MASK as usize - 1;

/// A gram-keyed rule and up to four bytes of its literal after the first
/// (`head`, masked by `mask`). Rules keyed by a word after their `*`
/// (`/section/*/word`) are candidates wherever the word is; most fail on
/// their literal, and comparing these bytes with the path's turns them
/// away without reading the pattern. Before, that read was a cache miss
/// of its own on a large file.
#[derive(Clone, Copy, Debug)]
struct Keyed {
    rule: Rule,
    head: u32,
    mask: u32,
}

impl Keyed {
    fn new(rule: Rule, arena: &[u8]) -> Keyed {
        let lit = rule.literal(arena);
        let n = lit.len().saturating_sub(1).min(WIDTH);
        let mask = if n == WIDTH { u32::MAX } else { (1 << (8 * n)) - 1 };
        Keyed { rule, head: key(lit.get(1..).unwrap_or_default()) & mask, mask }
    }
}

/// The bytes of `path` a [`Keyed::head`] is compared with: the second to
/// the fifth, zero past its end.
#[inline]
fn path_head(path: &[u8]) -> u32 {
    key(path.get(1..).unwrap_or_default())
}

/// A set's gram index, built on its first check.
#[derive(Debug, Default)]
pub(super) struct GramIndex {
    /// `None` for a set with more rules than [`MAX_RULES`].
    built: OnceLock<Option<Grams>>,
}

/// The built index: its own copy of the set's gram-keyed rules, in buckets,
/// and the table and filter that find the buckets.
#[derive(Debug)]
struct Grams {
    rules: Box<[Keyed]>,
    /// (gram, its bucket's first rule | the bucket's highest priority <<
    /// [`FIRST_BITS`]), open addressing. A check that already holds a
    /// better rule skips the bucket without reading its rules: on large
    /// files a third of the buckets a check finds.
    table: Box<[(u32, u32)]>,
    /// A power of two words long, at most [`FILTER_WORDS_MAX`]; a gram's
    /// bit is where [`has_hash`] says.
    filter: Box<[u64]>,
    /// Bit `w - 1` is set when some key is `w` bytes wide.
    widths: u8,
    /// The distinct first bytes of the keys narrower than [`WIDTH`], when
    /// there are at most three of them (`short_starts` of them).
    short_firsts: [u8; 3],
    /// How many of `short_firsts` are in use; [`MANY`] when there are more,
    /// and every position is tested at every width.
    short_starts: u8,
    /// The three-byte keys held as four-byte grams (see [`EXPANDED_WEIGHTS`]);
    /// unused places repeat the first. All zero when they are not.
    threes: [u32; 3],
    /// Every three-byte key is held as four-byte grams (more than three of
    /// them): a passing gram's low three bytes are probed whatever they are.
    all_threes: bool,
    /// When three-byte keys are expanded, a second filter of the keys
    /// alone (by another hash): a gram that passes `filter` may have done so
    /// for its low three bytes or for itself, and this tells which to look
    /// up. Without it, every passing gram cost two table lookups, and the
    /// one that misses was a fifth of a large file's mispredicted
    /// branches. Empty when no key is expanded.
    exact: Box<[u64]>,
    /// The highest priority of the set's wildcard rules.
    max_len: u16,
    seed: u64,
}

/// The multiplier of the second filter's hash (see [`Grams::exact`]):
/// odd, and unrelated to the first's.
fn exact_seed(seed: u64) -> u64 {
    (seed ^ 0x5851_F42D_4C95_7F2D).rotate_left(29) | 1
}

/// Up to four bytes as a key: little-endian, zero above the gram.
#[inline]
fn key(bytes: &[u8]) -> u32 {
    // The first four of any longer slice too: a scan reads the gram at a
    // position as the rest of the path, and a byte loop there cost three
    // mispredicted branches a check.
    if let Some(w) = bytes.first_chunk::<WIDTH>() {
        return u32::from_le_bytes(*w);
    }
    let mut k = 0u32;
    for (i, &b) in bytes.iter().take(WIDTH).enumerate() {
        k |= u32::from(b) << (8 * i);
    }
    k
}

/// Filter bits for `keys` keys: one bit in 64 set, so that a path position
/// passes by chance 1.6% of the time (at 8 bits a key, 12%, and probes cost
/// a sixth of a check).
fn filter_bits(keys: usize) -> usize {
    (keys * 64).next_power_of_two().clamp(64, FILTER_WORDS_MAX * 64)
}

/// The most words a filter has: as many as the bits of a hash from bit 50
/// up can number.
const FILTER_WORDS_MAX: usize = 1 << 14;

/// The bit of `filter` that stands for hash `h`: 1 if it is set, else 0.
/// The word is taken from bits 50 and up, masked by the filter's length
/// (a power of two, which also tells the compiler the index is in bounds),
/// and the bit from bits 44 to 49. Both shifts are constants: the shift
/// by the filter's size that this replaces cost two instructions at every
/// position of a scan. Bits this high of the product depend on every bit
/// of the gram.
#[inline(always)]
fn bit_of(filter: &[u64], h: u64) -> u64 {
    let (word, bit) = place_in(filter.len(), h);
    (filter[word] >> bit) & 1
}

/// Where hash `h` is in a filter of `len` words: (word, bit).
#[inline(always)]
fn place_in(len: usize, h: u64) -> (usize, u64) {
    ((h >> 50) as usize & (len - 1), (h >> 44) & 63)
}

/// Whether `filter` holds hash `h` (see [`bit_of`]).
#[inline(always)]
fn has_hash(filter: &[u64], h: u64) -> bool {
    bit_of(filter, h) != 0
}

/// Adds hash `h` to `filter` (see [`bit_of`]).
fn set_hash(filter: &mut [u64], h: u64) {
    let (word, bit) = place_in(filter.len(), h);
    filter[word] |= 1 << bit;
}

/// A gram's hash: its product with the set's odd random multiplier, whose
/// top bits are a universal hash (multiply-shift). The filter takes its
/// bit and the table its slot from them; one instruction a position fewer
/// than xoring a seed in first.
#[inline]
fn mix(key: u32, seed: u64) -> u64 {
    u64::from(key).wrapping_mul(seed)
}

/// Calls `f` with each gram a rule may be keyed by: every four-byte window
/// of its literal segments, or, when no segment is that long, each segment
/// whole. The end of the leading literal offers a window too: a rule like
/// `/shop/shoes-17/*/print` is best found by `-17/`, which few rules
/// share, not by `/print`, which every rule of its kind may (in the
/// benchmark's large file, 50 candidates a check).
#[inline]
fn for_each_candidate(rule: &Rule, arena: &[u8], mut f: impl FnMut(&[u8])) {
    let pattern = rule.pattern(arena);
    // The literal's last four bytes, if they are past its first directory
    // (`/products/`), which begins too many of a site's paths. One window
    // keeps parsing fast: literals tend to end in what sets them apart.
    let lit = usize::from(rule.lit);
    #[allow(clippy::manual_contains, reason = "`contains` calls memchr, which cost 5% of parsing a shop file")]
    let literal_end =
        (lit > WIDTH && pattern[1..lit - WIDTH].iter().any(|&b| b == b'/')).then(|| &pattern[lit - WIDTH..lit]);
    let rest = &pattern[lit..];
    let rest = rest.strip_suffix(b"$").unwrap_or(rest);
    let segments = || rest.split(|b| *b == b'*').filter(|s| !s.is_empty());
    if literal_end.is_some() || segments().any(|s| s.len() >= WIDTH) {
        literal_end.into_iter().for_each(&mut f);
        for s in segments() {
            s.windows(WIDTH).for_each(&mut f);
        }
    } else {
        segments().for_each(f);
    }
}

/// How many rules offer each gram: a small open-addressing count table.
struct GramCounts {
    slots: Vec<(u32, u32)>,
    /// Distinct grams held; the table doubles past half full. Sized for
    /// every window of every pattern up front, a large set's table was
    /// megabytes of fresh pages, and faulting them in cost more than the
    /// counting.
    held: usize,
    /// A bit for each key's hash, 64 Kbit: most windows of a large set's
    /// literal rules are no key, and this turns them away from the cache
    /// where the slots, often megabytes, would not.
    present: Box<[u64; 1024]>,
    seed: u64,
}

impl GramCounts {
    fn new(capacity: usize, seed: u64) -> GramCounts {
        GramCounts {
            slots: vec![(0, 0); (capacity * 2).next_power_of_two().clamp(16, 4096)],
            held: 0,
            present: Box::new([0; 1024]),
            seed,
        }
    }
    /// The slot of `k`, which is free (count 0) if `k` is new.
    fn slot(&self, k: u32) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = (mix(k, self.seed) >> 32) as usize & mask;
        while self.slots[at].1 != 0 && self.slots[at].0 != k {
            at = (at + 1) & mask;
        }
        at
    }
    /// The bit of `k` in `present`: (word, mask).
    fn presence(&self, k: u32) -> (usize, u64) {
        let bit = (mix(k, self.seed) >> 48) as usize;
        (bit / 64, 1 << (bit % 64))
    }
    fn add(&mut self, k: u32) {
        let mut at = self.slot(k);
        if self.slots[at].1 == 0 {
            if 2 * (self.held + 1) > self.slots.len() {
                self.grow();
                at = self.slot(k);
            }
            self.held += 1;
        }
        self.slots[at] = (k, self.slots[at].1 + 1);
        let (word, mask) = self.presence(k);
        self.present[word] |= mask;
    }
    fn grow(&mut self) {
        let doubled = vec![(0, 0); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for (k, n) in old.into_iter().filter(|s| s.1 != 0) {
            let at = self.slot(k);
            self.slots[at] = (k, n);
        }
    }
    /// Counts `k` once more if it has been added.
    fn add_if_present(&mut self, k: u32) {
        let (word, mask) = self.presence(k);
        if self.present[word] & mask == 0 {
            return;
        }
        let at = self.slot(k);
        if self.slots[at].1 != 0 {
            self.slots[at].1 += 1;
        }
    }
    fn get(&self, k: u32) -> u32 {
        self.slots[self.slot(k)].1
    }
}

impl GramIndex {
    /// Bytes on the heap, once the index is built.
    pub fn heap_bytes(&self) -> usize {
        self.built.get().and_then(Option::as_ref).map_or(0, |g| {
            size_of::<Grams>()
                + g.rules.len() * size_of::<Keyed>()
                + g.table.len() * size_of::<(u32, u32)>()
                + g.filter.len() * size_of::<u64>()
                + g.exact.len() * size_of::<u64>()
        })
    }

    /// Improves on `best` with `wild`, this set's gram-keyed rules, in any
    /// order; `plain` are the set's other rules. The first call builds the
    /// index.
    #[inline]
    pub fn decide<'t>(
        &'t self,
        wild: &'t [Rule],
        plain: &[Rule],
        arena: &[u8],
        path: &[u8],
        best: Option<&'t Rule>,
    ) -> Option<&'t Rule> {
        match self.built.get_or_init(|| (wild.len() <= MAX_RULES).then(|| Grams::build(wild, plain, arena))) {
            Some(grams) => grams.decide(arena, path, best),
            None => wild.iter().fold(best, |best, r| {
                if best.is_none_or(|b| r.beats(b)) && r.matches(arena, path) { Some(r) } else { best }
            }),
        }
    }
}

impl Grams {
    /// Copies `wild` (a set's gram-keyed rules) into buckets by key, and
    /// indexes them. `plain`, the set's rules with a leading literal, are
    /// only counted (see the module's notes).
    fn build(wild: &[Rule], plain: &[Rule], arena: &[u8]) -> Grams {
        // Odd, as a multiplier must be (see `mix`).
        let seed = seed() | 1;
        let mut rules: Box<[Keyed]> = wild.iter().map(|&r| Keyed::new(r, arena)).collect();
        // Every candidate gram is a window of a pattern: their number is at
        // most the patterns' total length.
        let mut counts = GramCounts::new(wild.iter().map(|r| usize::from(r.len)).sum(), seed);
        for r in wild {
            for_each_candidate(r, arena, |g| counts.add(key(g)));
        }
        // Only grams some rule may be keyed by are worth counting, and no
        // entry is added: the table stays sized by the candidates. An even
        // sample of a large set's rules estimates how common a gram is as
        // well as all of them, for a fraction of the first check's time.
        for r in plain.iter().step_by(plain.len().div_ceil(PLAIN_SAMPLE).max(1)) {
            for g in r.pattern(arena).windows(WIDTH) {
                counts.add_if_present(key(g));
            }
        }
        let mut widths = 0u8;
        let mut keyed: Vec<(u32, Keyed)> = Vec::with_capacity(rules.len());
        for r in rules.iter() {
            let k = *r;
            let r = &k.rule;
            // A wildcard rule has a non-empty segment (see `classify`), so a
            // gram is always found.
            let mut best: (u32, u32, usize) = (u32::MAX, 0, 1);
            for_each_candidate(r, arena, |g| {
                let k = key(g);
                let n = counts.get(k);
                if n < best.0 {
                    best = (n, k, g.len());
                }
            });
            widths |= 1 << (best.2.clamp(1, WIDTH) - 1);
            keyed.push((best.1, k));
        }
        // Keys of different widths can be equal (`ab` and `ab\0\0`); they
        // then share a bucket, which costs a check but misses nothing, since
        // every candidate is matched in full.
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| precedence(&a.1.rule, &b.1.rule)));

        let mut starts: Vec<u32> = Vec::new();
        let mut keys: Vec<u32> = Vec::new();
        for (i, (k, _)) in keyed.iter().enumerate() {
            if keys.last() != Some(k) {
                keys.push(*k);
                starts.push(i as u32);
            }
        }
        starts.push(keyed.len() as u32);

        // A key narrower than four bytes is zero in its top byte. A
        // four-byte key with a NUL there never matches (a path ends at its
        // first NUL), so counting it as narrow costs nothing; nor does
        // counting one with a NUL as its third byte as two bytes wide.
        let is_three = |k: u32| k >> 24 == 0 && k >> 16 != 0;
        let mut threes: Vec<u32> = keys.iter().copied().filter(|&k| is_three(k)).collect();
        let set_bytes: usize = wild.iter().chain(plain).map(|r| usize::from(r.len)).sum();
        // The weight of an expanded key in the filter, if the set can
        // afford one (see `EXPANDED_WEIGHTS`).
        let weight = EXPANDED_WEIGHTS.into_iter().find_map(|(weight, times)| {
            let grown = filter_bits(keys.len() + weight * threes.len()) - filter_bits(keys.len());
            (grown / 8 * times <= set_bytes).then_some(weight)
        });
        // More than three of them are held too, when the set can afford it:
        // with three-byte keys of many first bytes (`/*abc*`, `/*?q=`, short
        // words), the pass over the path that tests every width at every
        // position was the largest part of a check on large shop files.
        let all_threes = threes.len() > 3 && weight.is_some();
        if !(all_threes || (1..=3).contains(&threes.len())) || weight.is_none() {
            threes.clear();
        }
        threes.sort_unstable();
        let expanded = |k: u32| threes.binary_search(&k).is_ok();
        if !threes.is_empty() {
            widths = (widths & !(1 << 2)) | (1 << (WIDTH - 1));
        }
        let mut short_firsts = [0u8; 3];
        let mut short_starts = 0u8;
        for &k in &keys {
            if k >> 24 != 0 || expanded(k) || short_starts == MANY {
                continue;
            }
            let first = k as u8;
            if !short_firsts[..usize::from(short_starts)].contains(&first) {
                if usize::from(short_starts) == short_firsts.len() {
                    short_starts = MANY;
                } else {
                    short_firsts[usize::from(short_starts)] = first;
                    short_starts += 1;
                }
            }
        }
        for (r, k) in rules.iter_mut().zip(&keyed) {
            *r = k.1;
        }
        mark_ends(&mut rules, &starts, |k| &mut k.rule);

        let n_slots = keys.len() * 2 + 1;
        let mut table = vec![(0u32, EMPTY); n_slots];
        let filter_bits = filter_bits(keys.len() + weight.unwrap_or(0) * threes.len());
        let mut filter = vec![0u64; filter_bits / 64];
        let mut hold = |k: u32| set_hash(&mut filter, mix(k, seed));
        for (&k, &first) in keys.iter().zip(&starts) {
            hold(k);
            if expanded(k) {
                // With a zero top byte, the gram is the key itself: how a
                // path's last three bytes are tested.
                (1..=255u32).for_each(|b| hold(k | b << 24));
            }
            let h = mix(k, seed);
            let mut at = home(h, n_slots);
            while table[at].1 != EMPTY {
                at = if at + 1 == n_slots { 0 } else { at + 1 };
            }
            // Buckets are in precedence order: the first rule is the longest.
            let top = u32::from(rules[first as usize].rule.len).min(TOP_UNKNOWN);
            table[at] = (k, first | top << FIRST_BITS);
        }

        let exact = if threes.is_empty() {
            Vec::new()
        } else {
            let mut exact = vec![0u64; self::filter_bits(keys.len()) / 64];
            for &k in &keys {
                set_hash(&mut exact, mix(k, exact_seed(seed)));
            }
            exact
        };
        let max_len = rules.iter().map(|k| k.rule.len).max().unwrap_or(0);
        Grams {
            exact: exact.into_boxed_slice(),
            rules,
            table: table.into_boxed_slice(),
            filter: filter.into_boxed_slice(),
            widths,
            short_firsts,
            short_starts,
            threes: {
                let mut t = [threes.first().copied().unwrap_or(0); 3];
                if !all_threes {
                    t[..threes.len()].copy_from_slice(&threes);
                }
                t
            },
            all_threes,
            max_len,
            seed,
        }
    }

    /// Improves on `best` with the index's rules.
    fn decide<'t>(&'t self, arena: &[u8], path: &[u8], best: Option<&'t Rule>) -> Option<&'t Rule> {
        if best.is_some_and(|b| b.len > self.max_len) {
            return best;
        }
        let mut scan = Scan {
            table: &self.table,
            filter: &self.filter,
            rules: &self.rules,
            arena,
            path,
            head: path_head(path),
            seen: [EMPTY; SEEN_MAX],
            n_seen: 0,
            more: Vec::new(),
            best,
        };
        // The masks of the narrow widths in use, narrowest first. Near the
        // end of the path a gram is read zero-padded, which may equal a
        // narrower key: that costs a probe and misses nothing, since every
        // candidate is matched in full.
        let mut masks = [0u32; WIDTH - 1];
        let mut n = 0;
        for w in 1..WIDTH {
            if self.widths & (1 << (w - 1)) != 0 {
                masks[n] = (1 << (8 * w)) - 1;
                n += 1;
            }
        }
        let masks = &masks[..n];
        let passes = self.filter_test(scan.filter);
        // Narrow keys first, only where their first bytes are.
        let narrow_at = |p: usize| -> bool {
            let word = key(&path[p..]);
            masks.iter().all(|&m| passes(word & m).is_none_or(|h| scan.probe(word & m, h)))
        };
        if !masks.is_empty() {
            // Paths are short: sixteen bytes a step beats `memchr`'s calls.
            let [a, b, c] = self.short_firsts;
            let complete = match self.short_starts {
                1 => !all_at(path, [a], narrow_at),
                2 => !all_at(path, [a, b], narrow_at),
                3 => !all_at(path, [a, b, c], narrow_at),
                _ => return self.scan_every_width(scan, masks),
            };
            if complete {
                return scan.best;
            }
        }
        // Four-byte keys need four bytes of path: no position near the end
        // can hold one.
        if self.widths & (1 << (WIDTH - 1)) != 0 {
            let (threes, all, seed) = (self.threes, self.all_threes, self.seed);
            let expanded = !self.exact.is_empty();
            let (exact, seed2) = (&self.exact, exact_seed(seed));
            let is_key = |k: u32| has_hash(exact, mix(k, seed2));
            let mut from = 0;
            while from + WIDTH <= path.len() {
                let (mut passing, tested) = self.passing(path, from);
                while passing != 0 {
                    // Bit `k` stands for the `k + 1`th position from the
                    // last tested. The order the passes are taken in does
                    // not change the verdict: every candidate is weighed.
                    let p = from + tested - 1 - passing.trailing_zeros() as usize;
                    passing &= passing - 1;
                    let word = u32::from_le_bytes(path[p..p + WIDTH].try_into().unwrap_or_default());
                    let h = mix(word, seed);
                    if expanded {
                        if is_key(word) {
                            scan.probe(word, h);
                        }
                        let low = word & LOW3;
                        if (all || threes.contains(&low)) && is_key(low) {
                            scan.probe(low, mix(low, seed));
                        }
                    } else if !scan.probe(word, h) {
                        return scan.best;
                    }
                }
                from += tested;
            }
            // An expanded three-byte key as the path's last three bytes,
            // which no four-byte gram holds: they are read zero-padded.
            if (threes[0] != 0 || all) && path.len() >= 3 {
                let word = match path.len().checked_sub(WIDTH) {
                    Some(at) => u32::from_le_bytes(path[at..].try_into().unwrap_or_default()) >> 8,
                    None => key(path),
                };
                if let Some(h) = passes(word) {
                    scan.probe(word, h);
                }
            }
        }
        scan.best
    }

    /// The positions from `from` on, up to 64 of them, whose four-byte
    /// gram passes the filter, as bits, and how many were tested: bit `k`
    /// stands for position `from + tested - 1 - k`, because shifting each
    /// test's bit in from below costs one instruction a position. This loop is the largest part
    /// of a check on shop-shaped files, so it holds nothing else, and no
    /// branch on a gram: a branch at each position that passed was a
    /// mispredicted one (four a check on a 14,000-rule file, a sixth of
    /// its mispredictions), and the passes are now taken from the bits.
    #[inline]
    fn passing(&self, path: &[u8], from: usize) -> (u64, usize) {
        let (filter, seed) = (&*self.filter, self.seed);
        // 1 when the gram passes, else 0, with no compare: the bit itself.
        let passes = |g: u32| bit_of(filter, mix(g, seed));
        let mut bits = 0u64;
        let mut j = 0;
        // One eight-byte load holds the grams of five positions: built
        // from single bytes, a gram cost more than its hash.
        while j + 5 <= 64 && from + j + 8 <= path.len() {
            let w = u64::from_le_bytes(path[from + j..from + j + 8].try_into().unwrap_or_default());
            for t in 0..5 {
                bits = bits << 1 | passes((w >> (8 * t)) as u32);
            }
            j += 5;
        }
        while j < 64 && from + j + WIDTH <= path.len() {
            bits =
                bits << 1 | passes(u32::from_le_bytes(path[from + j..from + j + WIDTH].try_into().unwrap_or_default()));
            j += 1;
        }
        (bits, j)
    }

    /// The scan when narrow keys start with many different bytes: every
    /// width at every position, in one pass.
    fn scan_every_width<'t>(&self, mut scan: Scan<'_, 't, '_>, narrow: &[u32]) -> Option<&'t Rule> {
        let mut masks = [0u32; WIDTH];
        masks[..narrow.len()].copy_from_slice(narrow);
        let mut n = narrow.len();
        if self.widths & (1 << (WIDTH - 1)) != 0 {
            masks[n] = u32::MAX;
            n += 1;
        }
        let masks = &masks[..n];
        let passes = self.filter_test(scan.filter);
        let path = scan.path;
        for p in 0..path.len() {
            let word = key(&path[p..]);
            for &m in masks {
                // Zero-padded near the end, which is how an expanded
                // three-byte key is found as the last three bytes.
                if let Some(h) = passes(word & m)
                    && !(scan.probe(word & m, h)
                        && (m != u32::MAX || scan.probe_three(word, self.threes, self.all_threes, self.seed)))
                {
                    return scan.best;
                }
            }
        }
        scan.best
    }

    /// The filter test of a gram: its hash if the filter may hold it. The
    /// seed, shift and filter are copied into the closure so that a scan
    /// keeps them in registers: the scan is a third of a check on
    /// shop-shaped files.
    #[inline]
    fn filter_test<'f>(&self, filter: &'f [u64]) -> impl Fn(u32) -> Option<u64> + 'f {
        let seed = self.seed;
        move |k: u32| {
            let h = mix(k, seed);
            has_hash(filter, h).then_some(h)
        }
    }
}

/// One check's pass over a path.
struct Scan<'i, 't, 'a> {
    table: &'i [(u32, u32)],
    filter: &'i [u64],
    rules: &'t [Keyed],
    arena: &'a [u8],
    path: &'a [u8],
    /// The path's bytes that [`Keyed::head`] is compared with.
    head: u32,
    /// Buckets already checked; `EMPTY` in unused places.
    seen: [u32; SEEN_MAX],
    n_seen: usize,
    /// Past [`SEEN_MAX`] buckets, those checked as a bitmap of the rules
    /// (empty, and unallocated, until then).
    more: Vec<u64>,
    best: Option<&'t Rule>,
}

impl Scan<'_, '_, '_> {
    /// Checks the bucket of gram `k` (hash `h`), found in the path and
    /// passed by the filter, if it has one and it was not checked yet.
    /// Returns false when the scan is complete.
    #[inline(never)]
    fn probe(&mut self, k: u32, h: u64) -> bool {
        let Some(slot) = lookup(self.table, k, h) else { return true };
        let (first, top) = (slot & FIRST_MASK, slot >> FIRST_BITS);
        if top != TOP_UNKNOWN && self.best.is_some_and(|b| u32::from(b.len) > top) {
            // The best so far is longer than every rule of the bucket, and
            // stays so: no need to read them, or to mark them seen.
            return true;
        }
        // All places compared, unused ones hold `EMPTY`: an early exit
        // mispredicted on a large file's checks.
        if self.seen.iter().fold(false, |seen, &s| seen | (s == first)) {
            return true;
        }
        if self.n_seen == SEEN_MAX {
            // Many grams present: the buckets checked go on in a bitmap of
            // the rules, made now. Checking every wildcard rule instead, as
            // this once did, made a check's cost grow with the file (a
            // 14,000-rule file with many leading wildcards, 0.14x a small
            // file's checks per second); this keeps it to the buckets the
            // path's grams name, each once.
            if self.more.is_empty() {
                self.more = vec![0u64; self.rules.len().div_ceil(64)];
                for &f in &self.seen {
                    self.more[f as usize / 64] |= 1 << (f % 64);
                }
            }
            let (word, bit) = (first as usize / 64, 1u64 << (first % 64));
            if self.more[word] & bit != 0 {
                return true;
            }
            self.more[word] |= bit;
        } else {
            self.seen[self.n_seen] = first;
            self.n_seen += 1;
        }
        let (arena, path, head) = (self.arena, self.path, self.head);
        let bucket = &self.rules[first as usize..];
        self.best =
            best_in_bucket(bucket, |k| &k.rule, |k| head & k.mask == k.head && k.rule.matches(arena, path), self.best);
        true
    }
}

impl Scan<'_, '_, '_> {
    /// Probes the three-byte key that gram `word` begins with, if it is one
    /// of `threes`, the keys held in the filter as four-byte grams: with
    /// the probe of `word` itself, what the filter's bit stood for.
    #[inline]
    fn probe_three(&mut self, word: u32, threes: [u32; 3], all: bool, seed: u64) -> bool {
        let low = word & LOW3;
        if all {
            return self.probe(low, mix(low, seed));
        }
        threes[0] == 0 || !threes.contains(&low) || self.probe(low, mix(low, seed))
    }
}

/// Whether `f` holds at every position of `path` that holds a byte of
/// `set`; stops at the first where it does not.
#[inline]
fn all_at<const N: usize>(path: &[u8], set: [u8; N], mut f: impl FnMut(usize) -> bool) -> bool {
    let mut from = 0;
    while let Some(p) = find_any(path, from, set) {
        if !f(p) {
            return false;
        }
        from = p + 1;
    }
    true
}

#[inline]
fn lookup(table: &[(u32, u32)], k: u32, h: u64) -> Option<u32> {
    let mut at = home(h, table.len());
    loop {
        let (key, first) = table[at];
        if first == EMPTY {
            return None;
        }
        if key == k {
            return Some(first);
        }
        at = if at + 1 == table.len() { 0 } else { at + 1 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rules over one arena: (pattern, is Allow).
    fn rules(patterns: &[&str]) -> (Vec<u8>, Vec<Rule>) {
        let mut arena = Vec::new();
        let mut rules = Vec::new();
        for (line, p) in patterns.iter().enumerate() {
            let start = arena.len();
            arena.extend_from_slice(p.as_bytes());
            rules.push(Rule::new(p.as_bytes(), p.find('*'), start, line as u32 + 1, false, false));
        }
        (arena, rules)
    }

    /// `g` decides `path` as trying each of `wild` in full would.
    fn agrees_with_every_rule(g: &Grams, wild: &[Rule], arena: &[u8], path: &str) {
        let want = wild
            .iter()
            .filter(|r| r.matches(arena, path.as_bytes()))
            .fold(None::<&Rule>, |best, r| if best.is_none_or(|b| r.beats(b)) { Some(r) } else { best })
            .map(|r| r.line());
        let got = g.decide(arena, path.as_bytes(), None).map(|r| r.line());
        assert_eq!(got, want, "{path}");
    }

    fn keys(g: &Grams) -> Vec<String> {
        let mut keys: Vec<String> = g
            .table
            .iter()
            .filter(|s| s.1 != EMPTY)
            .map(|s| String::from_utf8_lossy(&s.0.to_le_bytes()).trim_end_matches('\0').to_string())
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn three_byte_keys_held_as_grams_are_found_everywhere() {
        // One three-byte key among wide ones, in a set long enough to spend
        // the filter bits: the four-byte pass must find it at the start,
        // in the middle and as the last three bytes of a path, and not
        // where only part of it is.
        let filler: Vec<String> = (0..300).map(|i| format!("/filler/{i}/a-literal-long-enough")).collect();
        let mut patterns = vec!["/*?q=", "/*?q=$", "/*wide-key", "/*other-wide"];
        patterns.extend(filler.iter().map(String::as_str));
        let (arena, all) = rules(&patterns);
        let (wild, plain) = all.split_at(4);
        let g = Grams::build(wild, plain, &arena);
        assert_eq!(g.threes[0], key(b"?q="), "the set is long enough to hold it as grams");
        assert_eq!(g.short_starts, 0, "no pass over the path for first bytes is left");
        for path in
            ["?q=", "/?q=", "/a?q=", "/a?q=1", "/ab?q=12", "/abcdefgh?q=", "/abcdefgh?q=x", "/?q", "/q=", "/?Q="]
        {
            agrees_with_every_rule(&g, wild, &arena, path);
        }
        // Without the long rules the same key keeps its pass.
        let g = Grams::build(wild, &[], &arena);
        assert_eq!((g.threes[0], g.short_starts), (0, 1));
    }

    #[test]
    fn many_three_byte_keys_held_as_grams_are_found_everywhere() {
        // Six three-byte keys of six first bytes: all held as grams in a
        // set long enough, and found at the start, in the middle and at
        // the end of a path.
        let filler: Vec<String> = (0..1500).map(|i| format!("/filler/{i}/a-literal-long-enough")).collect();
        let mut patterns = vec!["/*abc*", "/*?q=", "/*xyz$", "/*.js", "/*k9k", "/*-7-", "/*wide-key"];
        patterns.extend(filler.iter().map(String::as_str));
        let (arena, all) = rules(&patterns);
        let (wild, plain) = all.split_at(7);
        let g = Grams::build(wild, plain, &arena);
        assert!(g.all_threes, "the set is long enough to hold them all");
        assert_eq!(g.short_starts, 0, "no pass over the path for first bytes is left");
        for path in [
            "abc",
            "/abc",
            "/xabcx",
            "/a?q=1",
            "?q=",
            "/fooxyz",
            "/fooxyz/",
            "/app.js",
            "/k9k/",
            "/x-7-",
            "/ab",
            "/a-7",
            "/ABC",
            "/wide-key",
            "/widekey",
            "/xy",
        ] {
            agrees_with_every_rule(&g, wild, &arena, path);
        }
    }

    #[test]
    fn keys_are_found_with_filters_from_sparse_to_full() {
        // One key to thousands from a small alphabet (so the filter goes
        // from nearly empty to nearly full), with and without three-byte
        // keys held as grams (then the exact filter picks the lookups),
        // and paths of every length up to 70: the index must decide as
        // trying every rule does.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let filler: Vec<String> = (0..2000).map(|i| format!("/filler/{i}/a-literal-long-enough")).collect();
        for (n_keys, threes) in [(1, false), (5, false), (40, true), (400, false), (400, true), (3000, false)] {
            let mut patterns: Vec<String> = (0..n_keys)
                .map(|i| {
                    let r = next();
                    let width = if threes && i % 3 == 0 { 3 } else { 4 + i % 3 };
                    let word: String = (0..width).map(|k| (b'a' + ((r >> (8 * k)) % 6) as u8) as char).collect();
                    format!("/*{word}{}", ["", "$", "*z"][i % 3])
                })
                .collect();
            let n_wild = patterns.len();
            patterns.extend(filler.iter().cloned());
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            let (arena, all) = rules(&refs);
            let (wild, plain) = all.split_at(n_wild);
            let g = Grams::build(wild, plain, &arena);
            if threes && n_keys < 100 {
                assert!(!g.exact.is_empty(), "{n_keys} keys: three-byte keys held as grams");
            }
            for len in 0..70 {
                for _ in 0..12 {
                    let r = next();
                    let path: String =
                        (0..len).map(|i| (b'a' + (r.rotate_left(i as u32 * 3) % 7) as u8) as char).collect();
                    agrees_with_every_rule(&g, wild, &arena, &format!("/{path}"));
                }
            }
        }
    }

    #[test]
    fn keys_avoid_grams_the_literal_rules_hold() {
        // Every window of `/shoes/q7/` is held by this one wildcard rule
        // alone, so among wildcard rules they tie, and the first wins. The
        // literal rules say `/shoes/` is in many paths: the key moves to a
        // window they do not hold.
        let patterns = ["/*/shoes/q7/", "/shop/shoes/red", "/shop/shoes/blue", "/outlet/shoes/es/q", "/shoes/"];
        let (arena, all) = rules(&patterns);
        let (wild, plain) = all.split_at(1);
        assert_eq!(keys(&Grams::build(wild, &[], &arena)), ["/sho"]);
        let key = keys(&Grams::build(wild, plain, &arena));
        assert!(key == ["s/q7"] || key == ["/q7/"], "{key:?}");
    }
}
