//! The compiled rules that apply to one crawler: every rule of every group
//! that names it, merged and indexed so that a check visits only the rules
//! that can match.
//!
//! A set with few rules keeps them in precedence order and scans them; the
//! first match wins. A larger set splits its rules in two:
//!
//! - Rules with a leading literal (`/shop/cart`, `/a*b`) are bucketed by
//!   that literal in a hash table ([`literals`]). A rule can only match a
//!   path its literal prefixes, so a check hashes every prefix of the path
//!   in one pass and looks up only the lengths some literal has.
//! - Rules that start with `*` or `/*` say nothing with their literal, and
//!   real files have hundreds of them. Each is keyed by a short gram it
//!   requires, and a check slides over the path once, looking up the grams
//!   that occur ([`grams`]). So are rules with a literal, then a `*`, then
//!   a segment of three bytes or more (`/products/*/print`): shop files
//!   have hundreds of them under one literal, which would make its bucket
//!   a linear scan.
//!
//! Both indexes are built in time linear in the rules; building them used
//! to cost more than reading the file, when the literals were sorted.
//! Within a bucket, rules are in precedence order, so the first one that
//! matches is the best of its bucket.
//!
//! All sets of one file share their tables; a set is a handful of ranges,
//! so files with dozens of small groups stay small. The gram index alone
//! keeps its own copy of its rules: it is built on the set's first check,
//! after the shared tables are final.

mod grams;
mod literals;

use std::ops::Range;

use crate::bytes::has_prefix;
use crate::pattern::{Shape, classify_at, matches_after_literal};
use grams::GramIndex;
use literals::LiteralIndex;

/// Shortest segment after a wildcard that keys a rule with a literal
/// prefix in the gram index rather than under its literal.
const KEYED_SEGMENT_MIN: usize = 3;
/// Up to this many literal rules, a set is scanned in precedence order.
const LINEAR_MAX: usize = 16;
/// Up to this many wildcard rules, a linear scan in precedence order beats
/// sliding over the path.
const WILD_LINEAR_MAX: usize = 8;

/// One compiled Allow or Disallow rule, in 12 bytes. Its priority is `len`:
/// the length of the normalised pattern, wildcards included (at most three
/// times a 16,663-byte line, so it fits in `u16`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    /// Offset of the normalised pattern in the arena.
    start: u32,
    /// Line number << 8 | flags. Lines fit in 24 bits because only 500 KiB
    /// are read.
    line_flags: u32,
    len: u16,
    /// Length of the leading literal.
    lit: u16,
}

const ALLOW: u32 = 1;
/// The rule is the bare-directory Allow derived from an `…/index.htm(l)` one.
const DERIVED: u32 = 2;
/// Two bits of [`Shape`] at this shift.
const SHAPE_SHIFT: u32 = 2;
/// The rule is the last of its index bucket.
const LAST: u32 = 16;

impl Rule {
    /// A rule for the pattern at `start` in the arena, whose first `*` is
    /// at `star`.
    pub fn new(pattern: &[u8], star: Option<usize>, start: usize, line: u32, allow: bool, derived: bool) -> Rule {
        let flags = if allow { ALLOW } else { 0 } | if derived { DERIVED } else { 0 };
        let mut rule = Rule {
            start: start as u32,
            line_flags: (line << 8) | flags,
            len: u16::try_from(pattern.len()).unwrap_or(u16::MAX),
            lit: 0,
        };
        let (lit, shape) = classify_at(pattern, star);
        rule.set_shape(lit, shape);
        rule
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
        match (self.line_flags >> SHAPE_SHIFT) & 3 {
            0 => Shape::Prefix,
            1 => Shape::Exact,
            2 => Shape::Wild,
            _ => Shape::Segment,
        }
    }
    fn set_shape(&mut self, lit: usize, shape: Shape) {
        self.lit = u16::try_from(lit).unwrap_or(u16::MAX);
        let bits = match shape {
            Shape::Prefix => 0,
            Shape::Exact => 1,
            Shape::Wild => 2,
            Shape::Segment => 3,
        };
        self.line_flags = (self.line_flags & !(3 << SHAPE_SHIFT)) | (bits << SHAPE_SHIFT);
    }
    fn is_last(&self) -> bool {
        self.line_flags & LAST != 0
    }
    fn set_last(&mut self) {
        self.line_flags |= LAST;
    }
    pub fn pattern<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..self.start as usize + usize::from(self.len)]
    }
    fn literal<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.start as usize..self.start as usize + usize::from(self.lit)]
    }
    /// Belongs in the gram index: it starts with a wildcard, or it has one
    /// after its literal and, after that, a literal segment of at least
    /// [`KEYED_SEGMENT_MIN`] bytes that every path it matches must contain.
    /// Shop files hold hundreds of rules like `/products/*/print` under
    /// one literal: bucketed by that literal, a check would try them all.
    fn is_gram_keyed(&self, arena: &[u8]) -> bool {
        if !matches!(self.shape(), Shape::Wild | Shape::Segment) {
            return false;
        }
        if self.lit <= 1 {
            return true;
        }
        let rest = &self.pattern(arena)[usize::from(self.lit)..];
        let rest = rest.strip_suffix(b"$").unwrap_or(rest);
        rest.split(|b| *b == b'*').any(|s| s.len() >= KEYED_SEGMENT_MIN)
    }
    /// The whole match, literal included.
    #[inline(always)]
    fn matches(&self, arena: &[u8], path: &[u8]) -> bool {
        has_prefix(path, self.literal(arena)) && self.matches_after_literal(arena, path)
    }
    #[inline(always)]
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

impl Rule {
    /// Precedence as one number, smaller first: longer patterns, then Allow
    /// before Disallow, then the earlier line. Uses 41 bits.
    #[inline]
    fn rank(&self) -> u64 {
        (u64::from(u16::MAX - self.len) << 25) | (u64::from(!self.is_allow()) << 24) | u64::from(self.line())
    }
}

/// Precedence order: the rule that would win comes first.
fn precedence(a: &Rule, b: &Rule) -> std::cmp::Ordering {
    a.rank().cmp(&b.rank())
}

/// Puts a set of at most [`LINEAR_MAX`] rules in precedence order. Each
/// rule becomes one integer (its precedence, then its position), and the
/// integers are sorted: moving 8-byte keys with one comparison each costs
/// a third of the instructions of moving 12-byte rules with three.
fn order_small(rules: &mut [Rule]) {
    const MAX: usize = 16;
    const _: () = assert!(LINEAR_MAX <= MAX && WILD_LINEAR_MAX <= MAX);
    let n = rules.len();
    if !(2..=MAX).contains(&n) {
        rules.sort_unstable_by(precedence);
        return;
    }
    let mut keys = [0u64; MAX];
    for (i, (key, r)) in keys.iter_mut().zip(rules.iter()).enumerate() {
        // The rank uses 41 bits, so the position fits below.
        *key = r.rank() << 4 | i as u64;
    }
    keys[..n].sort_unstable();
    let mut original = [rules[0]; MAX];
    original[..n].copy_from_slice(rules);
    for (slot, key) in rules.iter_mut().zip(keys) {
        *slot = original[(key & 15) as usize];
    }
}

/// The best of `best` and the rules of the bucket starting at `bucket[0]`,
/// which are in precedence order and end at the first rule marked last.
/// `rule` finds an entry's rule, and `hit` says whether it matches the
/// path (the literal index's buckets test what follows their literal, the
/// gram index's the whole pattern after a cheaper look at its head).
#[inline]
fn best_in_bucket<'t, T>(
    bucket: &'t [T],
    rule: impl Fn(&'t T) -> &'t Rule,
    hit: impl Fn(&'t T) -> bool,
    best: Option<&'t Rule>,
) -> Option<&'t Rule> {
    for entry in bucket {
        let r = rule(entry);
        if best.is_some_and(|b| !r.beats(b)) {
            // Nothing after this in the bucket can win either.
            return best;
        }
        if hit(entry) {
            return Some(r);
        }
        if r.is_last() {
            break;
        }
    }
    best
}

/// The multiplier of the index hashes (2^64 / φ, odd).
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The slot a hash starts probing at, among `slots`: its high half scaled
/// to the table's size, so tables need not be a power of two.
#[inline]
fn home(h: u64, slots: usize) -> usize {
    (((h >> 32) * slots as u64) >> 32) as usize
}

/// A random seed for this process's index hashes, so that no file can be
/// written to make them collide.
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x726f_626f_7473_u64)
    })
}

/// Marks the last rule of each bucket; `starts` holds each bucket's first
/// position, then the end, and `rule` finds the rule at a position.
fn mark_ends<T>(items: &mut [T], starts: &[u32], rule: impl Fn(&mut T) -> &mut Rule) {
    for w in starts.windows(2) {
        if w[1] > w[0] {
            rule(&mut items[w[1] as usize - 1]).set_last();
        }
    }
}

/// The storage every [`RuleSet`] of one file points into.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    rules: Vec<Rule>,
    /// Hash slots of the literal indexes.
    slots: Vec<u32>,
    /// The first eight bytes of each literal of a linear set (see
    /// [`head`]), parallel to the set's rules.
    heads: Vec<u64>,
    /// Rules with an empty pattern: they match everything with priority 0,
    /// which never decides a verdict, so only `explain` looks at them.
    empty: Vec<(u32, bool)>,
    group_lines: Vec<u32>,
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
    /// Rules with a leading literal: in precedence order when the set is
    /// small (no index), else in literal buckets.
    rules: Span,
    /// Boxed: small sets, the most common, have none and stay small.
    literal_index: Option<Box<LiteralIndex>>,
    /// Where the heads of a linear set's rules start in [`Tables::heads`].
    heads: u32,
    /// Rules keyed by a gram (see [`Rule::is_gram_keyed`]): in precedence
    /// order when there are few, else in no order, and `gram_index` holds
    /// them in its buckets once it is built.
    wild: Span,
    gram_index: Option<Box<GramIndex>>,
    empty: Span,
    group_lines: Span,
    /// The crawler fell back to the `*` groups.
    pub global: bool,
}

impl Tables {
    /// Empty tables with room for `rules` rules.
    pub fn with_rules_capacity(rules: usize) -> Tables {
        Tables { rules: Vec::with_capacity(rules), ..Tables::default() }
    }

    /// Adds a set made of `parts`, rules in any order. They are copied
    /// once, into the shared table, and ordered and indexed there.
    pub fn add_set<'r>(
        &mut self,
        arena: &[u8],
        parts: impl IntoIterator<Item = &'r [Rule]>,
        empty: impl IntoIterator<Item = (u32, bool)>,
        group_lines: impl IntoIterator<Item = u32>,
        global: bool,
    ) -> RuleSet {
        let first = self.rules.len();
        for part in parts {
            self.rules.extend_from_slice(part);
        }
        let set = &mut self.rules[first..];
        let split = partition(set, |r| !r.is_gram_keyed(arena));
        let (plain, wild) = set.split_at_mut(split);
        let heads = self.heads.len() as u32;
        let literal_index = if plain.len() <= LINEAR_MAX {
            order_small(plain);
            self.heads.extend(plain.iter().map(|r| head(r.literal(arena))));
            None
        } else {
            LiteralIndex::build(&mut self.slots, arena, plain).map(Box::new)
        };
        let gram_index = if wild.len() <= WILD_LINEAR_MAX {
            order_small(wild);
            None
        } else {
            Some(Box::default())
        };
        let e = self.empty.len();
        self.empty.extend(empty);
        let g = self.group_lines.len();
        self.group_lines.extend(group_lines);
        RuleSet {
            rules: span(&(first..first + split)),
            literal_index,
            heads,
            wild: span(&(first + split..self.rules.len())),
            gram_index,
            empty: span(&(e..self.empty.len())),
            group_lines: span(&(g..self.group_lines.len())),
            global,
        }
    }

    pub fn shrink(&mut self) {
        self.rules.shrink_to_fit();
        self.slots.shrink_to_fit();
        self.heads.shrink_to_fit();
        self.empty.shrink_to_fit();
        self.group_lines.shrink_to_fit();
    }

    pub fn heap_bytes(&self) -> usize {
        self.rules.capacity() * size_of::<Rule>()
            + self.slots.capacity() * size_of::<u32>()
            + self.heads.capacity() * size_of::<u64>()
            + self.empty.capacity() * size_of::<(u32, bool)>()
            + self.group_lines.capacity() * size_of::<u32>()
    }
}

/// The first eight bytes of `bytes` (fewer if it is shorter) as a
/// little-endian word, zero above them.
#[inline]
fn head(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => bytes.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
    }
}

/// The masks of the bytes of a literal 0 to 8 bytes long that its head
/// holds. A path shorter than the literal reads as zeros there, so it
/// passes only if the literal has NULs, and then the full match rejects it.
const HEAD_MASKS: [u64; 9] = {
    let mut masks = [0u64; 9];
    let mut n = 1;
    while n < 8 {
        masks[n] = (1 << (8 * n)) - 1;
        n += 1;
    }
    masks[8] = u64::MAX;
    masks
};

/// Moves the items for which `keep` holds to the front, in no particular
/// order, and returns how many there are.
fn partition<T>(items: &mut [T], keep: impl Fn(&T) -> bool) -> usize {
    let mut front = 0;
    for i in 0..items.len() {
        if keep(&items[i]) {
            items.swap(front, i);
            front += 1;
        }
    }
    front
}

impl RuleSet {
    /// The rule that decides `path`, if any rule with a non-empty pattern
    /// matches it.
    #[inline]
    pub fn decide<'t>(&'t self, t: &'t Tables, arena: &[u8], path: &[u8]) -> Option<&'t Rule> {
        let rules = &t.rules[range(self.rules)];
        let best = match &self.literal_index {
            None => {
                // Most literals differ from the path in their first eight
                // bytes: one masked compare each rejects them without
                // touching the arena.
                let heads = &t.heads[self.heads as usize..self.heads as usize + rules.len()];
                let path_head = head(path);
                rules
                    .iter()
                    .zip(heads)
                    .find(|&(r, &h)| path_head & HEAD_MASKS[usize::from(r.lit.min(8))] == h && r.matches(arena, path))
                    .map(|(r, _)| r)
            }
            Some(index) => index.decide(t, rules, arena, path),
        };
        let wild = &t.rules[range(self.wild)];
        match &self.gram_index {
            None => {
                // In precedence order: the first match wins.
                for rule in wild {
                    if best.is_some_and(|b| !rule.beats(b)) {
                        break;
                    }
                    if rule.matches(arena, path) {
                        return Some(rule);
                    }
                }
                best
            }
            Some(index) => index.decide(wild, rules, arena, path, best),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.literal_index.as_ref().map_or(0, |i| size_of::<LiteralIndex>() + i.heap_bytes())
            + self.gram_index.as_ref().map_or(0, |i| size_of::<GramIndex>() + i.heap_bytes())
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
}

#[cfg(test)]
mod tests {
    use crate::{Robots, reference};

    fn agrees(body: &str, paths: &[String]) {
        let robots = Robots::parse(body.as_bytes());
        for path in paths {
            let v = robots.check("bot", path);
            let want = reference::check(body.as_bytes(), b"bot", path.as_bytes());
            assert_eq!((v.allowed, v.rule.map_or(0, |r| r.line)), want, "{path}");
            assert_eq!(robots.is_allowed("bot", path), want.0, "is_allowed {path}");
        }
    }

    #[test]
    fn linear_sets_reject_by_head_only_what_cannot_match() {
        // A set small enough to scan, with literals of every length around
        // the eight bytes a head holds, an empty one (`*`, `$`), one with a
        // NUL, and paths cut at every length: each must get the reference's
        // verdict and line.
        let literals = ["/", "/a", "/abcdefg", "/abcdefgh", "/abcdefghi", "/abcdefgh/jk", "/abcdefgX", "/a\0b", "/b/"];
        for extra in ["*", "$", "/abc$", "/abcdefgh$"] {
            let mut body = String::from("User-agent: *\n");
            for (i, lit) in literals.iter().enumerate() {
                let key = if i % 2 == 0 { "Disallow" } else { "Allow" };
                body.push_str(&format!("{key}: {lit}\n"));
            }
            body.push_str(&format!("Disallow: {extra}\n"));
            let full = "/abcdefgh/jklmnop";
            let mut paths: Vec<String> = (1..=full.len()).map(|n| full[..n].to_string()).collect();
            paths.extend(["/abcdefgX", "/abcdefgXY", "/a", "/b", "/b/c", "/c"].map(String::from));
            agrees(&body, &paths);
        }
    }

    #[test]
    fn rules_keyed_by_the_end_of_their_literal_are_found() {
        // Every rule shares its segment (`/print`) and none its literal, so
        // each is keyed by its literal's last four bytes; some literals are
        // too short or too shallow for that and keep a segment's gram.
        let mut body = String::from("User-agent: *\n");
        for i in 0..40 {
            let key = if i % 3 == 0 { "Allow" } else { "Disallow" };
            let literal = match i % 4 {
                0 => format!("/shop/shoes-{i}/"),
                1 => format!("/s/{i}/"),
                2 => format!("/shop-{i}/"),
                _ => format!("/a/b/c/d-{i}"),
            };
            let tail = ["*/print", "*/print$", "*print*x"][i % 3];
            body.push_str(&format!("{key}: {literal}{tail}\n"));
        }
        let mut paths = Vec::new();
        for i in 0..40 {
            for literal in
                [format!("/shop/shoes-{i}/"), format!("/s/{i}/"), format!("/shop-{i}/"), format!("/a/b/c/d-{i}")]
            {
                for rest in ["x/print", "print", "x/printx", "/print/y", "nothing"] {
                    paths.push(format!("{literal}{rest}"));
                }
            }
        }
        agrees(&body, &paths);
    }

    #[test]
    fn literals_of_every_length_are_found_down_the_trie() {
        // Literals cut from one long string at every length from 1 to 90
        // (so nodes at every depth, lengths on each side of a word's end),
        // some exact, one empty (`$`), next to literals that leave the
        // string at each depth, a NUL among them. Paths are the string cut
        // at every length, with a byte changed at word ends and beyond.
        let long: String = (0..90).map(|i| (b'a' + (i * 7 % 26) as u8) as char).collect();
        let long = format!("/{long}");
        let mut body = String::from("User-agent: *\nDisallow: $\n");
        for n in 1..=long.len() {
            let key = if n % 3 == 0 { "Allow" } else { "Disallow" };
            let end = if n % 4 == 0 { "$" } else { "" };
            body.push_str(&format!("{key}: {}{end}\n", &long[..n]));
            if n % 8 == 1 {
                body.push_str(&format!("Allow: {}Z/\n", &long[..n]));
                body.push_str(&format!("Disallow: {}\0q\n", &long[..n]));
            }
        }
        let mut paths: Vec<String> = (1..=long.len()).map(|n| long[..n].to_string()).collect();
        for n in [2, 7, 8, 9, 15, 16, 17, 24, 25, 40, 64, 65, 72, 88] {
            let mut p = long.clone().into_bytes();
            p[n] = b'Z';
            paths.push(String::from_utf8(p.clone()).unwrap());
            paths.push(format!("{}Z/", &long[..n]));
            paths.push(format!("{}Z/x", &long[..n]));
            paths.push(format!("{}x", &long[..n]));
        }
        paths.push(format!("{long}/more"));
        agrees(&body, &paths);
    }

    #[test]
    fn wide_keys_are_found_at_every_offset() {
        // Four-byte keys after fillers of every length, at the path's end
        // and before more bytes, with fillers made of the keys' own bytes
        // and of bytes no key holds, and keys cut short.
        let mut body = String::from("User-agent: *\n");
        for i in 0..20 {
            let key = if i % 3 == 0 { "Allow" } else { "Disallow" };
            let tail = ["", "$", "*z"][i % 3];
            body.push_str(&format!("{key}: /*k{i:02}x{tail}\n"));
        }
        let mut paths = Vec::new();
        for i in 0..20 {
            for fill in ["", "a", "k0", "x", "0x", "qq"] {
                for n in 0..12 {
                    let before = fill.repeat(n);
                    for after in ["", "z", "yz", "k0"] {
                        paths.push(format!("/{before}k{i:02}x{after}"));
                        paths.push(format!("/{}k{i:02}{after}", &before[..before.len().min(n)]));
                    }
                }
            }
        }
        agrees(&body, &paths);
    }

    #[test]
    fn many_grams_in_one_path_are_each_checked_once() {
        // 100 wildcard rules keyed by three-byte grams; one path holds them
        // all, more buckets than a check tracks in its list (the rest go in
        // its bitmap).
        let mut body = String::from("User-agent: *\n");
        for i in 0..100 {
            let key = if i % 3 == 0 { "Allow" } else { "Disallow" };
            body.push_str(&format!("{key}: /*{i:03}{}\n", "x".repeat(i / 10)));
        }
        let all: String = (0..100).map(|i| format!("{i:03}{}", "x".repeat(i / 10))).collect();
        let paths = [format!("/{all}"), "/050xxxxx".to_string(), "/nothing".to_string(), "/099".to_string()];
        agrees(&body, &paths);
    }

    #[test]
    fn narrow_keys_are_found_wherever_their_first_byte_is() {
        // Keys narrower than four bytes are looked for by their first byte when
        // they start with at most three bytes, and at every position when
        // more: 1, 2, 3 and 5 starting bytes, each at the path's start, in
        // its middle and in its last bytes.
        //
        // Padded with long literal rules, a set holds its (up to three)
        // three-byte keys as four-byte grams instead: the same paths again.
        let firsts = ["?", ".", "&", "=", ";"];
        for (n, padded) in [1, 2, 3, 5].into_iter().flat_map(|n| [(n, false), (n, true)]) {
            let mut body = String::from("User-agent: *\nDisallow: /*wide-key\n");
            if padded {
                for i in 0..400 {
                    body.push_str(&format!("Disallow: /filler/{i}/a-literal-long-enough\n"));
                }
            }
            for (i, f) in firsts[..n].iter().enumerate() {
                for j in 0..12 {
                    let key = if j % 2 == 0 { "Disallow" } else { "Allow" };
                    let tail = ["", "$", "*"][j % 3];
                    body.push_str(&format!("{key}: /*{f}{}{tail}\n", &"abz"[..(i + j) % 3]));
                }
            }
            let mut paths = Vec::new();
            for f in &firsts[..n] {
                for rest in ["", "a", "ab", "abz", "zz", "b"] {
                    paths.push(format!("/{f}{rest}"));
                    paths.push(format!("/x/{f}{rest}/y"));
                    paths.push(format!("/x{f}{rest}"));
                    paths.push(format!("/wide-key{f}{rest}"));
                }
            }
            paths.push("/nothing-here".into());
            agrees(&body, &paths);
        }
    }

    #[test]
    fn literal_heads_and_bucket_priorities_turn_away_only_what_cannot_win() {
        // Rules keyed by one shared segment (`/print`), with literals of
        // every length around the four bytes a keyed rule carries, some
        // sharing their first bytes with the paths and some not, a NUL
        // among them; long literal rules that win first (so later buckets
        // are skipped by their priority) and short ones that do not. Paths
        // are cut at every length, so a path shorter than a literal's head
        // is compared zero-padded.
        let literals = ["/", "/a", "/ab", "/abc", "/abcd", "/abcde", "/abcdef", "/abcdX", "/a\0cd", "/bbcd", "/abc/"];
        let mut body = String::from("User-agent: *\n");
        for (i, lit) in literals.iter().enumerate() {
            for (j, tail) in ["*/print", "*/print$", "*print*x"].iter().enumerate() {
                let key = if (i + j) % 2 == 0 { "Disallow" } else { "Allow" };
                body.push_str(&format!("{key}: {lit}{tail}\n"));
            }
        }
        // A tie: the literal rule is found first, and the wildcard rule of
        // the same length, an Allow, must still be weighed.
        body.push_str("Disallow: /abcde/xprint\nAllow: /abcd*/xprint\n");
        for i in 0..60 {
            body.push_str(&format!("Disallow: /abcdef/{i}/a-long-literal-that-wins/print\n"));
            body.push_str(&format!("Allow: /z{i}\n"));
        }
        let full = "/abcdef/7/a-long-literal-that-wins/print/x";
        let mut paths: Vec<String> = (1..=full.len()).map(|n| full[..n].to_string()).collect();
        for lit in literals {
            for rest in ["/print", "x/print", "/printx", "print", "/prin"] {
                paths.push(format!("{lit}{rest}"));
            }
        }
        paths.extend(
            ["/abcdX/print", "/abcdY/print", "/b/print", "/print", "/z7/print", "/abcde/xprint"].map(String::from),
        );
        agrees(&body, &paths);
    }

    #[test]
    fn distinct_literals_are_each_their_own_bucket() {
        // No literal repeats: the index keeps the rules where they are. Exact
        // and wildcard shapes make a bucket's rule fail after its literal
        // matched, so a check that ran past its bucket would be caught.
        let mut body = String::from("User-agent: *\n");
        for i in 0..40 {
            let key = if i % 2 == 0 { "Allow" } else { "Disallow" };
            let tail = match i % 3 {
                0 => String::new(),
                1 => "$".to_string(),
                _ => "*.pdf".to_string(),
            };
            body.push_str(&format!("{key}: /p{i}/{}{tail}\n", "q".repeat(i % 9)));
        }
        let paths: Vec<String> = (0..40)
            .flat_map(|i| {
                let q = "q".repeat(i % 9);
                [format!("/p{i}/{q}"), format!("/p{i}/{q}x"), format!("/p{i}/{q}a.pdf"), format!("/p{i}")]
            })
            .collect();
        agrees(&body, &paths);
    }

    #[test]
    fn literal_buckets_hold_every_rule_of_a_literal() {
        // Many rules share literals and prefix one another; each bucket must
        // yield its best rule and the longest literal must not hide others.
        let mut body = String::from("User-agent: *\n");
        for i in 0..60 {
            let dir = format!("/d{}", i % 5);
            let rule = match i % 4 {
                0 => format!("Disallow: {dir}"),
                1 => format!("Allow: {dir}/"),
                2 => format!("Disallow: {dir}/*.pdf$"),
                _ => format!("Allow: {dir}/k{i}$"),
            };
            body.push_str(&rule);
            body.push('\n');
        }
        let paths: Vec<String> = (0..60)
            .flat_map(|i| [format!("/d{}/k{i}", i % 5), format!("/d{}/a.pdf", i % 5), format!("/d{}", i % 5)])
            .collect();
        agrees(&body, &paths);
    }
}
