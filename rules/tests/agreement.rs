//! The fast engine must agree with the reference model on every input:
//! generated robots.txt files full of the edge cases Google treats
//! specially, and the real-world corpus in `../shared/corpus/realworld`.

use proptest::prelude::*;
use rules::{Robots, reference};
use std::path::PathBuf;

fn pattern() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("/"),
        Just("a"),
        Just("b"),
        Just("*"),
        Just("$"),
        Just("%2f"),
        Just("%2F"),
        Just("ツ"),
        Just("index.html"),
        Just("?"),
        Just("="),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

fn line() -> impl Strategy<Value = String> {
    let agent = prop_oneof![
        Just("*"),
        Just("FooBot"),
        Just("foobot"),
        Just("BarBot"),
        Just("* x"),
        Just("Foo/1.0"),
        Just("MJ12bot"),
        Just(""),
        Just("*x"),
    ];
    let allow_key = prop_oneof![Just("Allow"), Just("allow"), Just("Alow")];
    let disallow_key = prop_oneof![Just("Disallow"), Just("disallow"), Just("Dissallow"), Just("Disallowed")];
    prop_oneof![
        3 => agent.prop_map(|a| format!("User-agent: {a}")),
        1 => prop_oneof![Just("Useragent"), Just("User agent")].prop_map(|k| format!("{k}: FooBot")),
        4 => (allow_key, pattern()).prop_map(|(k, p)| format!("{k}: {p}")),
        5 => (disallow_key, pattern()).prop_map(|(k, p)| format!("{k}: {p}")),
        1 => pattern().prop_map(|p| format!("Disallow {p}")),
        1 => Just("Sitemap: http://h/s.xml".to_string()),
        1 => Just("Crawl-delay: 3".to_string()),
        1 => Just("# comment".to_string()),
        1 => Just(String::new()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    prop::collection::vec((line(), ending), 0..14)
        .prop_map(|lines| lines.into_iter().flat_map(|(l, e)| format!("{l}{e}").into_bytes()).collect())
}

fn url() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("/"),
        Just("a"),
        Just("b"),
        Just("$"),
        Just("?"),
        Just("%2F"),
        Just("%2f"),
        Just("index.html"),
        Just("#"),
        Just("%E3%83%84"),
        Just("="),
    ];
    prop::collection::vec(piece, 0..7).prop_map(|v| format!("http://h/{}", v.concat()))
}

/// Engine and reference agree on every URL: same verdict, same deciding line.
fn agrees_on(body: &[u8], agent: &str, urls: &[String]) -> Result<(), TestCaseError> {
    let robots = Robots::parse(body);
    for url in urls {
        let v = robots.check(agent, url);
        let want = reference::check(body, agent.as_bytes(), url.as_bytes());
        prop_assert_eq!((v.allowed, v.rule.map_or(0, |r| r.line)), want, "{}\n{}", String::from_utf8_lossy(body), url);
        // The yes-or-no path, which skips the verdict's lookups.
        prop_assert_eq!(robots.is_allowed(agent, url), want.0, "is_allowed {}", url);
    }
    Ok(())
}

/// One `*` group of (is Allow, pattern) rules.
fn star_group(rules: impl Iterator<Item = (bool, String)>) -> Vec<u8> {
    let mut body = b"User-agent: *\n".to_vec();
    for (allow, pattern) in rules {
        let key = if allow { "Allow" } else { "Disallow" };
        body.extend_from_slice(format!("{key}: {pattern}\n").as_bytes());
    }
    body
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]
    #[test]
    fn engine_agrees_with_reference(
        body in body(),
        agent in prop_oneof![Just("FooBot"), Just("foobot"), Just("BarBot"), Just("MJ"), Just("MJ12bot"), Just("Foo"), Just("Baz"), Just("")],
        urls in prop::collection::vec(url(), 1..6),
    ) {
        agrees_on(&body, agent, &urls)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    /// Enough wildcard rules in one group to build the wildcard index.
    #[test]
    fn engine_agrees_with_reference_many_wildcards(
        rules in prop::collection::vec((any::<bool>(), pattern(), pattern()), 9..60),
        urls in prop::collection::vec(url(), 1..8),
    ) {
        let body = star_group(rules.iter().map(|(allow, a, b)| (*allow, format!("/{a}*{b}"))));
        agrees_on(&body, "bot", &urls)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    /// Enough rules with leading literals in one group to build the literal
    /// index, with literals that repeat and prefix one another.
    #[test]
    fn engine_agrees_with_reference_many_literals(
        rules in prop::collection::vec((any::<bool>(), pattern()), 17..90),
        urls in prop::collection::vec(url(), 1..8),
    ) {
        let body = star_group(rules.iter().map(|(allow, p)| (*allow, format!("/{p}"))));
        agrees_on(&body, "bot", &urls)?;
    }
}

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/realworld");
    dir.is_dir().then_some(dir)
}

/// Every real-world file parses, and the engine agrees with the reference
/// on a sample of each site's real URLs for several crawlers.
#[test]
fn realworld_corpus_agrees() {
    let Some(dir) = corpus() else {
        eprintln!("realworld corpus not found beside the checkout; skipping");
        return;
    };
    let mut checked = 0usize;
    let mut files = 0usize;
    for entry in std::fs::read_dir(dir.join("robots")).expect("robots dir") {
        let entry = entry.expect("dir entry");
        let body = std::fs::read(entry.path()).expect("robots file");
        let robots = Robots::parse(&body);
        files += 1;
        let urls = std::fs::read_to_string(dir.join("urls").join(entry.file_name())).unwrap_or_default();
        for url in urls.lines().take(25) {
            for agent in ["Googlebot", "bingbot", "Googlebot-Image", "AhrefsBot", "someunknowncrawler"] {
                let v = robots.check(agent, url);
                let want = reference::check(&body, agent.as_bytes(), url.as_bytes());
                assert_eq!((v.allowed, v.rule.map_or(0, |r| r.line)), want, "{:?} {agent} {url}", entry.path());
                assert_eq!(robots.is_allowed(agent, url), want.0, "is_allowed {:?} {agent} {url}", entry.path());
                checked += 1;
            }
        }
    }
    assert!(files > 1000, "corpus has {files} files");
    eprintln!("{files} files, {checked} checks agree");
}

#[path = "../benches/support/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "../benches/support/crawlers.rs"]
mod crawlers;
#[path = "../benches/support/family.rs"]
mod family;

/// Every file of the benchmark's sweep (leading wildcards, `*$`, `/*.ext$`,
/// many grams per path, up to 14,000 rules) agrees with the reference
/// model on its URLs, for a crawler that falls to `*` and one that is named.
#[test]
fn the_benchmark_sweep_agrees() {
    for (name, knobs) in family::sweep().into_iter().filter(|(_, k)| k.rules <= 5_000) {
        let body = family::robots(&knobs, 41);
        let urls = family::urls(&body, &knobs, 400, 43);
        for agent in ["ExampleCrawler", "Googlebot"] {
            let robots = rules::Robots::parse(body.as_bytes());
            for url in &urls {
                let want = reference::check(body.as_bytes(), agent.as_bytes(), url.as_bytes());
                let v = robots.check(agent, url);
                assert_eq!((v.allowed, v.rule.map_or(0, |r| r.line)), want, "{name}, {agent}, {url}");
                assert_eq!(robots.is_allowed(agent, url), want.0, "is_allowed {name}, {agent}, {url}");
            }
        }
    }
}
