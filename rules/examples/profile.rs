//! Runs checks against a generated file in a loop, for profilers:
//! `cargo run --release -p rules --example profile -- medium 2000000`.
//! Sizes `small`, `medium`, `large` are the benchmark's files;
//! `shop-small`, `shop-medium`, `shop-large` its shop-shaped ones (many
//! wildcard and `$` rules, 7 to 16 agent lines); `sweep:NAME` a file of
//! the check-cost sweep (`sweep:shop-14000`).

#[path = "../benches/support/corpus.rs"]
mod corpus;
#[path = "../benches/support/crawlers.rs"]
mod crawlers;
#[path = "../benches/support/family.rs"]
mod family;

fn main() {
    let mut args = std::env::args().skip(1);
    let size = args.next().unwrap_or_else(|| "medium".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let shop =
        |rules, wild_pct, agent_lines| corpus::shop(corpus::Shape { rules, wild_pct, dollar_pct: 7, agent_lines }, 17);
    let body = match size.as_str() {
        "small" => corpus::robots_txt(20, 7),
        "large" => corpus::robots_txt(16_000, 7),
        "shop-small" => shop(23, 15, 7),
        "shop-medium" => shop(990, 17, 12),
        "shop-large" => shop(15_926, 19, 16),
        name if name.starts_with("sweep:") => {
            let (_, knobs) =
                family::sweep().into_iter().find(|(n, _)| *n == name["sweep:".len()..]).expect("a sweep file");
            family::robots(&knobs, 41)
        }
        _ => corpus::robots_txt(1_000, 7),
    };
    let urls = match size.strip_prefix("sweep:") {
        Some(name) => {
            let (_, knobs) = family::sweep().into_iter().find(|(n, _)| n == name).expect("a sweep file");
            family::urls(&body, &knobs, 10_000, 43)
        }
        None => corpus::urls(&body, 10_000, 11),
    };
    if std::env::var_os("PARSE").is_some() {
        // FIRST=1 adds each parse's first check, which builds the literal
        // index's trie.
        let first = std::env::var_os("FIRST").is_some();
        let start = std::time::Instant::now();
        let mut total = 0;
        for i in 0..n {
            let robots = rules::Robots::parse(body.as_bytes());
            if first {
                std::hint::black_box(robots.is_allowed("ExampleCrawler", &urls[i % urls.len()]));
            }
            total += robots.source_len();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{size}: parsed {n} times{}, {:.0} MB/s, {:.0} µs each",
            if first { " with a first check" } else { "" },
            total as f64 / secs / 1e6,
            secs * 1e6 / n as f64
        );
        return;
    }
    let robots = rules::Robots::parse(body.as_bytes());
    let start = std::time::Instant::now();
    let mut allowed = 0usize;
    let mut i = 0;
    for _ in 0..n {
        allowed += usize::from(robots.is_allowed("ExampleCrawler", corpus::cycle(&urls, &mut i)));
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{size}: {n} checks, {allowed} allowed, {:.0} ns/check, compiled {:.2}x",
        secs * 1e9 / n as f64,
        robots.memory_usage() as f64 / body.len() as f64
    );
}
