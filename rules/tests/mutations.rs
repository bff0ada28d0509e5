//! Differential test on mutated real inputs: real robots.txt files, their
//! real URLs and real crawler names, changed byte by byte (random bytes,
//! NUL, CR, a byte-order mark, truncation, case, deleted and repeated
//! ranges), must get the same verdict and deciding line from the engine as
//! from the reference path (`rules::reference`, Google's matcher followed
//! step by step on raw bytes). The single-parse entry points must agree
//! with the separate ones too.
//!
//! `MUTATIONS` sets the number of cases (CI runs the default; try
//! `MUTATIONS=2000000` on demand), `MUTATION_SEED` the seed, which a
//! failure prints, and `MUTATION_CORPUS=sample` keeps to the sample in
//! `tests/data` even when the full corpus is beside the checkout.

use std::path::PathBuf;

use rules::{Robots, reference};

/// A small, fast, seedable generator (xorshift64*), so a failure can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One site: its file and its URLs.
struct Site {
    name: String,
    body: Vec<u8>,
    urls: Vec<Vec<u8>>,
}

fn sites() -> Vec<Site> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let full = manifest.join("../../shared/corpus/realworld");
    let sample = manifest.join("tests/data/realworld");
    let dir = match std::env::var("MUTATION_CORPUS").as_deref() {
        Ok("sample") => sample,
        _ if full.join("robots").is_dir() => full,
        _ => sample,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir.join("robots")).expect("robots dir") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let body = std::fs::read(entry.path()).expect("robots file");
        let urls = std::fs::read(dir.join("urls").join(&name)).unwrap_or_default();
        let mut urls: Vec<Vec<u8>> =
            urls.split(|&b| b == b'\n').filter(|u| !u.is_empty()).map(<[u8]>::to_vec).collect();
        urls.push(format!("https://{name}/").into_bytes());
        out.push(Site { name, body, urls });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

const AGENTS: [&[u8]; 8] = [
    b"Googlebot",
    b"googlebot-image",
    b"bingbot",
    b"AdsBot-Google",
    b"GPTBot",
    b"Mediapartners-Google",
    b"someunknowncrawler",
    b"*",
];

/// One random change to `bytes`.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) -> &'static str {
    let at = rng.below(bytes.len() + 1);
    match rng.below(9) {
        0 => {
            if let Some(b) = bytes.get_mut(at) {
                *b = rng.next() as u8;
            }
            "random byte"
        }
        1 => {
            bytes.insert(at, 0);
            "NUL"
        }
        2 => {
            bytes.insert(at, b'\r');
            "CR"
        }
        3 => {
            let at = if rng.below(2) == 0 { 0 } else { at };
            let bom = &b"\xef\xbb\xbf"[..1 + rng.below(3)];
            bytes.splice(at..at, bom.iter().copied());
            "BOM"
        }
        4 => {
            bytes.truncate(at);
            "truncation"
        }
        5 => {
            let end = (at + 1 + rng.below(40)).min(bytes.len());
            for b in &mut bytes[at.min(end)..end] {
                *b = if b.is_ascii_lowercase() { b.to_ascii_uppercase() } else { b.to_ascii_lowercase() };
            }
            "case"
        }
        6 => {
            let end = (at + 1 + rng.below(20)).min(bytes.len());
            bytes.drain(at.min(end)..end);
            "deleted range"
        }
        7 => {
            let end = (at + 1 + rng.below(60)).min(bytes.len());
            let copy = bytes[at.min(end)..end].to_vec();
            bytes.splice(at..at, copy);
            "repeated range"
        }
        _ => {
            let special = [b'*', b'$', b'%', b'/', b'?', b'#', b':', b'\n', b' ', b'\t', 0x80, 0xff];
            bytes.insert(at, special[rng.below(special.len())]);
            "special byte"
        }
    }
}

fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

#[test]
fn mutated_real_inputs_agree_with_the_reference() {
    let cases: usize = std::env::var("MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(60_000);
    let seed: u64 = std::env::var("MUTATION_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_2026);
    let sites = sites();
    assert!(sites.len() >= 100, "only {} files", sites.len());
    let mut rng = Rng(seed | 1);
    let mut checked = 0usize;
    for case in 0..cases {
        let site = &sites[rng.below(sites.len())];
        let mut body = site.body.clone();
        let mut url = site.urls[rng.below(site.urls.len())].clone();
        let mut agent = AGENTS[rng.below(AGENTS.len())].to_vec();
        // One to three changes, to the file, the URL or the agent.
        let mut what = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let (target, name) = match rng.below(10) {
                0..=4 => (&mut body, "file"),
                5..=8 => (&mut url, "url"),
                _ => (&mut agent, "agent"),
            };
            what.push(format!("{} in the {name}", mutate(&mut rng, target)));
        }
        let robots = Robots::parse(&body);
        let v = robots.check_bytes(&agent, &url);
        let got = (v.allowed, v.rule.map_or(0, |r| r.line));
        let want = reference::check(&body, &agent, &url);
        assert_eq!(
            got,
            want,
            "case {case} (seed {seed}) on {}: {}\nagent: {}\nurl: {}\nfile: {}",
            site.name,
            what.join(", "),
            escaped(&agent),
            escaped(&url),
            escaped(&body)
        );
        // One parse for compile and lint gives what two give.
        if case % 16 == 0 {
            let (once, findings) = Robots::parse_linted(&body);
            let again = once.check_bytes(&agent, &url);
            assert_eq!((again.allowed, again.rule.map_or(0, |r| r.line)), got, "parse_linted, case {case}");
            assert_eq!(findings, rules::lint(&body), "parse_linted's lint, case {case} on {}", site.name);
        }
        checked += 1;
    }
    eprintln!("{checked} mutated cases agree (seed {seed})");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// The preference reader, its lint and the AI policy compiler take any
    /// bytes without panicking, and compiling the policy changes no other
    /// crawler's verdict (the fuzz target `prefs` runs the same for longer).
    #[test]
    fn preferences_and_policies_take_any_bytes(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), pick in 0usize..4) {
        use rules::ai_policy::{AiPolicy, Stance};
        // Bias toward the keys that matter.
        let keys: [&[u8]; 4] = [b"Content-Usage: ", b"Content-Signal: ", b"User-agent: ", b"License: "];
        let mut body = body;
        body.splice(0..0, keys[pick].iter().copied());
        let prefs = rules::prefs::Preferences::read(&body);
        let _ = prefs.applied(&[1], b"/a", true);
        let _ = rules::lint(&body);
        let policy = AiPolicy { ai_training: Stance::Deny, ..AiPolicy::default() };
        let compiled = policy.compile(&["GPTBot"], &body);
        if let Some(merged) = rules::merge::append(&body, &compiled.groups) {
            let (before, after) = (rules::Robots::parse(&body), rules::Robots::parse(&merged));
            for agent in ["Googlebot", "someotherbot"] {
                for path in ["/", "/a"] {
                    proptest::prop_assert_eq!(before.crawler(agent).is_allowed(path), after.crawler(agent).is_allowed(path));
                }
            }
            proptest::prop_assert!(!after.crawler("GPTBot").is_allowed("/") || before.named_agents().any(|a| a.eq_ignore_ascii_case(b"GPTBot")));
        }
    }
}
