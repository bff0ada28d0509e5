//! Deterministic, realistic robots.txt files and URLs for benchmarks: a
//! shop-like site with named crawler groups, a large `*` group of directory,
//! file, exact and wildcard rules in the proportions seen in the real-world
//! corpus, and URLs placed at the edges of those rules.

use super::crawlers::CRAWLERS;

/// The next of `items`, round and round. A compare rather than `%`: a
/// 64-bit division costs more than a small file's whole check on some
/// processors, and it would be counted as the check's.
pub fn cycle<'a>(items: &'a [String], i: &mut usize) -> &'a str {
    *i += 1;
    if *i == items.len() {
        *i = 0;
    }
    &items[*i]
}

/// splitmix64: small, deterministic, good enough to shuffle test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const SECTIONS: &[&str] = &[
    "products", "category", "blog", "account", "search", "cart", "checkout", "api", "static", "media", "user", "help",
    "tag", "archive", "news", "store", "de", "fr", "en-gb", "wp-admin",
];
const WORDS: &[&str] = &[
    "shoes", "shirts", "sale", "new", "print", "edit", "login", "feed", "amp", "preview", "compare", "wishlist",
    "reviews", "gallery", "download", "share", "comments", "page", "filter", "export",
];
const PARAMS: &[&str] = &["sort", "sessionid", "ref", "utm_source", "q", "page", "color", "size", "lang", "replytocom"];
const EXTS: &[&str] = &["pdf", "php", "json", "xml", "doc", "zip", "cgi", "asp"];

/// One generated rule pattern.
fn pattern(rng: &mut Rng, n: usize) -> String {
    let section = rng.pick(SECTIONS);
    let word = rng.pick(WORDS);
    match rng.below(100) {
        0..=69 => format!("/{section}/{word}-{n}/"),
        70..=77 => format!("/{section}/{word}{n}.{}", rng.pick(EXTS)),
        78..=87 => match rng.below(2) {
            0 => format!("/{section}/{word}-{n}/*/{}", rng.pick(WORDS)),
            _ => format!("/{section}/{word}-{n}*?{}=", rng.pick(PARAMS)),
        },
        88..=93 => match rng.below(3) {
            0 => format!("/*?{}={word}", rng.pick(PARAMS)),
            1 => format!("/*{word}{}.{}$", n % 50, rng.pick(EXTS)),
            _ => format!("*/{word}-{}/", n % 40),
        },
        _ => format!("/{section}/{word}-{n}$"),
    }
}

/// A robots.txt with about `rules` rules, most of them in the `*` group.
pub fn robots_txt(rules: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::from("# robots.txt for www.example.com\n# generated for benchmarks\n\n");
    let named = [("Googlebot", rules / 20), ("Bingbot", rules / 40), ("AdsBot-Google", 2)];
    let mut n = 0;
    for (agent, count) in named {
        out.push_str(&format!("User-agent: {agent}\n"));
        for _ in 0..count.max(1) {
            n += 1;
            let p = pattern(&mut rng, n);
            out.push_str(&format!("{}: {p}\n", if rng.below(4) == 0 { "Allow" } else { "Disallow" }));
        }
        out.push('\n');
    }
    out.push_str("User-agent: *\n");
    while n < rules {
        n += 1;
        let p = pattern(&mut rng, n);
        out.push_str(&format!("{}: {p}\n", if rng.below(4) == 0 { "Allow" } else { "Disallow" }));
    }
    out.push_str("\nSitemap: https://www.example.com/sitemap.xml\n");
    out
}

/// The patterns of every Allow and Disallow line of a generated file.
pub fn patterns(robots: &str) -> Vec<&str> {
    robots
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(k, _)| *k == "Allow" || *k == "Disallow")
        .map(|(_, v)| v)
        .collect()
}

/// `count` URLs at the edges of the rules in `robots`: each rule's literal
/// exactly, extended, cut short by one byte, with a query, with its `*`
/// filled in, with the case changed, and some paths that match nothing.
pub fn urls(robots: &str, count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let patterns = patterns(robots);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let p = patterns[rng.below(patterns.len())];
        let base = p.trim_end_matches('$').replace('*', rng.pick(&["x", "a/b", "", "shoes"]));
        let base = if base.starts_with('/') { base } else { format!("/{base}") };
        let path = match rng.below(8) {
            0 => base.clone(),
            1 => format!("{base}{}", rng.pick(WORDS)),
            2 => base[..base.len().saturating_sub(1).max(1)].to_string(),
            3 => format!("{base}?{}=1", rng.pick(PARAMS)),
            4 => base.to_uppercase(),
            5 => format!("/{}/{}", rng.pick(SECTIONS), rng.pick(WORDS)),
            6 => format!("{base}/index.html"),
            _ => format!("{base}#frag"),
        };
        out.push(format!("https://www.example.com{path}"));
    }
    out
}

/// The shape of a generated file: how many rules, what share of them hold
/// a `*` and a `$` (in percent), and how many `User-agent` lines.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub rules: usize,
    pub wild_pct: usize,
    pub dollar_pct: usize,
    pub agent_lines: usize,
}

/// A shop-like robots.txt of the given shape: `agent_lines - 1` named
/// crawlers in small groups (some sharing a group), then a `*` group that
/// holds most rules. Rules with `*` are spread over the path (after a
/// section, in a query, before an extension); rules with `$` end exact
/// paths and extensions.
pub fn shop(shape: Shape, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::from("# generated shop-like robots.txt\n\n");
    let named = shape.agent_lines.saturating_sub(1);
    let mut n = 0usize;
    let rule = |rng: &mut Rng, n: usize| -> String {
        let section = rng.pick(SECTIONS);
        let word = rng.pick(WORDS);
        let roll = rng.below(100);
        let p = if roll < shape.wild_pct {
            match rng.below(5) {
                0 => format!("/*?{}=", rng.pick(PARAMS)),
                1 => format!("/{section}/*/{word}-{}", n % 97),
                2 => format!("/*{word}-{}*", n % 113),
                3 => format!("/{section}/*.{}", rng.pick(EXTS)),
                _ => format!("/*/{word}/{}/", n % 89),
            }
        } else if roll < shape.wild_pct + shape.dollar_pct {
            match rng.below(2) {
                0 => format!("/{section}/{word}-{n}$"),
                _ => format!("/{section}/{word}{n}.{}$", rng.pick(EXTS)),
            }
        } else {
            match rng.below(3) {
                0 => format!("/{section}/{word}-{n}/"),
                1 => format!("/{section}/{word}/{n}"),
                _ => format!("/{section}-{n}/{word}"),
            }
        };
        format!("{}: {p}\n", if rng.below(5) == 0 { "Allow" } else { "Disallow" })
    };
    let mut i = 0;
    while i < named {
        // Every third group names two crawlers.
        let together = if i % 3 == 2 && i + 1 < named { 2 } else { 1 };
        for k in 0..together {
            out.push_str(&format!("User-agent: {}\n", CRAWLERS[(i + k) % CRAWLERS.len()]));
        }
        i += together;
        for _ in 0..(shape.rules / 40).clamp(1, 30) {
            n += 1;
            out.push_str(&rule(&mut rng, n));
        }
        out.push('\n');
    }
    out.push_str("User-agent: *\n");
    while n < shape.rules {
        n += 1;
        out.push_str(&rule(&mut rng, n));
    }
    out.push_str("\nSitemap: https://www.example.com/sitemap.xml\n");
    out
}
