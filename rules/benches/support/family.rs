//! Families of robots.txt files with knobs, for a benchmark that sweeps
//! shapes rather than tunes to one file: how many rules, what share hold
//! a `*` and where it sits (leading `/*word*`, `/*.ext$`, `*$`; in the
//! middle, `/dir/*/word`; trailing, `/dir/word*`), what share end in `$`,
//! how long their literals are, how many agent groups precede `*`, and
//! what the URLs look like (mixed case, query strings).

use super::corpus::{Rng, patterns};
use super::crawlers::CRAWLERS;

/// One family member's knobs.
#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    /// Rules in the file.
    pub rules: usize,
    /// Percent of rules whose pattern starts with `*` or `/*`.
    pub lead_pct: usize,
    /// Percent with a `*` after a literal directory.
    pub mid_pct: usize,
    /// Percent ending in `*` after a literal.
    pub trail_pct: usize,
    /// Percent ending in `$` (of those without a leading wildcard).
    pub dollar_pct: usize,
    /// Literal words of 3 to this many bytes.
    pub literal_len: usize,
    /// Agent groups before the `*` group (each with a few rules).
    pub groups: usize,
    /// Percent of URLs with a query string.
    pub query_pct: usize,
    /// Percent of URLs with upper-case letters.
    pub upper_pct: usize,
}

const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const EXTS: &[&str] = &["pdf", "php", "json", "xml", "doc", "zip", "cgi", "asp", "jpg", "css"];
const PARAMS: &[&str] = &["sort", "sessionid", "ref", "utm_source", "q", "page", "color", "size", "lang", "fbclid"];
/// A word from a small vocabulary (so rules share words, as real ones do)
/// of 3 to `max` bytes.
fn word(rng: &mut Rng, max: usize) -> String {
    // 400 words: picked by index, spelled from it, so the same index is
    // the same word in every file of the family.
    let index = rng.below(400) as u64;
    let mut seeded = Rng::new(index * 7919 + 13);
    let len = 3 + seeded.below(max.max(3) - 2);
    (0..len).map(|_| LETTERS[seeded.below(LETTERS.len())] as char).collect()
}

/// A rule's pattern of the knobs' kinds.
fn pattern(rng: &mut Rng, k: &Knobs, n: usize) -> String {
    let roll = rng.below(100);
    let (a, b, c) = (word(rng, k.literal_len), word(rng, k.literal_len), word(rng, k.literal_len));
    if roll < k.lead_pct {
        return match rng.below(6) {
            0 => format!("/*{a}*"),
            1 => format!("/*.{}$", EXTS[rng.below(EXTS.len())]),
            2 => "*$".to_string(),
            3 => format!("/*?{}=", PARAMS[rng.below(PARAMS.len())]),
            4 => format!("*/{a}/{b}"),
            _ => format!("/*{a}-{}/", n % 97),
        };
    }
    let roll = roll - k.lead_pct;
    let p = if roll < k.mid_pct {
        match rng.below(2) {
            0 => format!("/{a}/*/{b}"),
            _ => format!("/{a}/{b}*{c}"),
        }
    } else if roll < k.mid_pct + k.trail_pct {
        format!("/{a}/{b}-{n}*")
    } else {
        match rng.below(3) {
            0 => format!("/{a}/{b}-{n}/"),
            1 => format!("/{a}/{b}/{c}{n}"),
            _ => format!("/{a}-{n}.{}", EXTS[rng.below(EXTS.len())]),
        }
    };
    if rng.below(100) < k.dollar_pct && !p.ends_with('*') { format!("{p}$") } else { p }
}

/// A file of the family.
pub fn robots(k: &Knobs, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::from("# generated for the sweep\n\n");
    let mut n = 0;
    for g in 0..k.groups {
        out.push_str(&format!("User-agent: {}\n", CRAWLERS[g % CRAWLERS.len()]));
        if g % 4 == 3 {
            out.push_str(&format!("User-agent: {}\n", CRAWLERS[(g + 7) % CRAWLERS.len()]));
        }
        for _ in 0..(k.rules / 50).clamp(1, 20) {
            n += 1;
            let verb = if rng.below(5) == 0 { "Allow" } else { "Disallow" };
            out.push_str(&format!("{verb}: {}\n", pattern(&mut rng, k, n)));
        }
        out.push('\n');
    }
    out.push_str("User-agent: *\n");
    while n < k.rules {
        n += 1;
        let verb = if rng.below(5) == 0 { "Allow" } else { "Disallow" };
        out.push_str(&format!("{verb}: {}\n", pattern(&mut rng, k, n)));
    }
    out.push_str("\nSitemap: https://www.example.com/sitemap.xml\n");
    out
}

/// `count` URLs for a file of the family: half built from its rules (a
/// wildcard filled, a `$` dropped, extended), half ordinary site paths of
/// the same words; the knobs' share with a query, and with upper case.
pub fn urls(robots: &str, k: &Knobs, count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let patterns = patterns(robots);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut path = if rng.below(2) == 0 {
            let p = patterns[rng.below(patterns.len())];
            let filled = p.trim_end_matches('$').replace('*', &word(&mut rng, k.literal_len));
            let filled = if filled.starts_with('/') { filled } else { format!("/{filled}") };
            match rng.below(3) {
                0 => filled,
                1 => format!("{filled}/{}", word(&mut rng, k.literal_len)),
                _ => format!("{filled}.{}", EXTS[rng.below(EXTS.len())]),
            }
        } else {
            let depth = 1 + rng.below(4);
            (0..depth).map(|_| format!("/{}", word(&mut rng, k.literal_len))).collect()
        };
        if rng.below(100) < k.upper_pct {
            let at = rng.below(path.len());
            let (head, tail) = path.split_at(at);
            path = format!("{head}{}", tail.to_uppercase());
        }
        if rng.below(100) < k.query_pct {
            path.push_str(&format!("?{}={}", PARAMS[rng.below(PARAMS.len())], word(&mut rng, k.literal_len)));
        }
        out.push(format!("https://www.example.com{path}"));
    }
    out
}

/// The sweep: sizes from about 1 KB to about 500 KB, each in several
/// shapes (leading wildcards from none to many, middle and trailing ones,
/// `$`, short and long literals, few and many groups). Named by shape and
/// rule count.
pub fn sweep() -> Vec<(String, Knobs)> {
    let base = Knobs {
        rules: 0,
        lead_pct: 10,
        mid_pct: 5,
        trail_pct: 4,
        dollar_pct: 7,
        literal_len: 10,
        groups: 14,
        query_pct: 30,
        upper_pct: 20,
    };
    let shapes: [(&str, Knobs); 4] = [
        ("shop", base),
        ("lead-heavy", Knobs { lead_pct: 30, ..base }),
        ("no-wild", Knobs { lead_pct: 0, mid_pct: 0, trail_pct: 0, dollar_pct: 20, ..base }),
        ("long-literals", Knobs { literal_len: 24, mid_pct: 15, trail_pct: 10, groups: 4, ..base }),
    ];
    let sizes = [30usize, 90, 250, 600, 1_200, 2_500, 5_000, 9_000, 14_000];
    let mut out = Vec::new();
    for (shape, knobs) in shapes {
        for rules in sizes {
            out.push((format!("{shape}-{rules}"), Knobs { rules, ..knobs }));
        }
    }
    out
}
