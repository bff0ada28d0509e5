//! Runs `CHECKS` checks on one generated shop-shaped file (see
//! `benches/support/corpus.rs`), for instruction counts that a busy machine
//! does not disturb:
//! `perf stat -e instructions:u target/release/examples/shaped medium 1000000`.

#[path = "../benches/support/corpus.rs"]
#[allow(dead_code)]
mod corpus;

fn main() {
    use corpus::Shape;
    let args: Vec<String> = std::env::args().collect();
    let shape = match args.get(1).map_or("medium", String::as_str) {
        "small" => Shape { rules: 23, wild_pct: 15, dollar_pct: 7, agent_lines: 7 },
        "large" => Shape { rules: 15_926, wild_pct: 19, dollar_pct: 7, agent_lines: 16 },
        _ => Shape { rules: 990, wild_pct: 17, dollar_pct: 7, agent_lines: 12 },
    };
    let checks: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let body = corpus::shop(shape, 17);
    let urls = corpus::urls(&body, 10_000, 23);
    let robots = rules::Robots::parse(body.as_bytes());
    let start = std::time::Instant::now();
    let mut allowed = 0usize;
    for i in 0..checks {
        allowed += usize::from(robots.is_allowed("ExampleCrawler", &urls[i % urls.len()]));
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{checks} checks, {allowed} allowed, {:.2} M checks/s", checks as f64 / secs / 1e6);
}
