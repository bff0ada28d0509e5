//! Criterion benchmarks for the engine, against the peers on crates.io in
//! the same run: texting_robots, robotxt (both parse once per agent) and
//! robotstxt (Google's port, which re-parses on every check).
//!
//! Inputs are built outside the timed closures: three generated files
//! (small, medium, large), 10,000 URLs at the edges of their rules, and an
//! agent that falls to the `*` group.
//!
//! Run: `cargo bench -p rules --bench check`

use std::hint::black_box;
use std::time::Duration;

use corpus::cycle;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/crawlers.rs"]
mod crawlers;

const AGENT: &str = "ExampleCrawler";

struct Input {
    name: &'static str,
    body: String,
    urls: Vec<String>,
    paths: Vec<String>,
}

/// `body` with 10,000 URLs at its rules' edges, and their paths.
fn input(name: &'static str, body: String, seed: u64) -> Input {
    let urls = corpus::urls(&body, 10_000, seed);
    let paths = urls
        .iter()
        .map(|u| String::from_utf8(rules::target::path_of(u.as_bytes()).into_owned()).unwrap_or_default())
        .collect();
    Input { name, body, urls, paths }
}

fn inputs() -> Vec<Input> {
    [("small", 20usize), ("medium", 1_000), ("large", 16_000)]
        .into_iter()
        .map(|(name, rules)| input(name, corpus::robots_txt(rules, 7), 11))
        .collect()
}

/// Files of the shape real shops have: many wildcard and `$` rules, more
/// than 8 agent lines; the crawler falls to `*`.
fn shaped() -> Vec<Input> {
    use corpus::Shape;
    [
        ("small", Shape { rules: 23, wild_pct: 15, dollar_pct: 7, agent_lines: 7 }),
        ("medium", Shape { rules: 990, wild_pct: 17, dollar_pct: 7, agent_lines: 12 }),
        ("large", Shape { rules: 15_926, wild_pct: 19, dollar_pct: 7, agent_lines: 16 }),
    ]
    .into_iter()
    .map(|(name, shape)| input(name, corpus::shop(shape, 17), 23))
    .collect()
}

/// `is_allowed(agent, url)` on every call, on shop-shaped files, with the
/// peers in the same run.
fn shaped_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("shaped");
    group.throughput(Throughput::Elements(1));
    for input in shaped() {
        eprintln!("shaped {}: {} bytes, {} lines", input.name, input.body.len(), input.body.lines().count());
        let ours = rules::Robots::parse(input.body.as_bytes());
        let mut i = 0;
        group.bench_function(BenchmarkId::new("robotsgate", input.name), |b| {
            b.iter(|| ours.is_allowed(black_box(AGENT), black_box(cycle(&input.urls, &mut i))))
        });
        if let Ok(theirs) = texting_robots::Robot::new(AGENT, input.body.as_bytes()) {
            group.bench_function(BenchmarkId::new("texting_robots", input.name), |b| {
                b.iter(|| theirs.allowed(black_box(cycle(&input.urls, &mut i))))
            });
        }
        let theirs = robotxt::Robots::parse(input.body.as_bytes(), AGENT);
        group.bench_function(BenchmarkId::new("robotxt", input.name), |b| {
            // Given pre-extracted paths, which is all its API takes.
            b.iter(|| black_box(theirs.is_allowed(cycle(&input.paths, &mut i))))
        });
    }
    group.finish();
}

fn check(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.throughput(Throughput::Elements(1));
    for input in inputs() {
        let ours = rules::Robots::parse(input.body.as_bytes());
        eprintln!(
            "{}: {} bytes, compiled form {} bytes ({:.2}x)",
            input.name,
            input.body.len(),
            ours.memory_usage(),
            ours.memory_usage() as f64 / input.body.len() as f64
        );
        let mut i = 0;
        group.bench_function(BenchmarkId::new("robotsgate", input.name), |b| {
            b.iter(|| black_box(ours.is_allowed(AGENT, cycle(&input.urls, &mut i))))
        });
        let agent = ours.agent(AGENT);
        group.bench_function(BenchmarkId::new("robotsgate-agent-prepared", input.name), |b| {
            b.iter(|| black_box(agent.is_allowed(cycle(&input.urls, &mut i))))
        });
        if let Ok(texting) = texting_robots::Robot::new(AGENT, input.body.as_bytes()) {
            group.bench_function(BenchmarkId::new("texting_robots", input.name), |b| {
                b.iter(|| black_box(texting.allowed(cycle(&input.urls, &mut i))))
            });
        }
        let robotxt = robotxt::Robots::parse(input.body.as_bytes(), AGENT);
        group.bench_function(BenchmarkId::new("robotxt", input.name), |b| {
            // Given pre-extracted paths, which is all its API takes.
            b.iter(|| black_box(robotxt.is_allowed(cycle(&input.paths, &mut i))))
        });
        group.bench_function(BenchmarkId::new("robotstxt-reparses", input.name), |b| {
            b.iter(|| {
                let mut m = robotstxt::DefaultMatcher::default();
                black_box(m.one_agent_allowed_by_robots(&input.body, AGENT, cycle(&input.urls, &mut i)))
            })
        });
    }
    group.finish();
}

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for input in inputs() {
        group.throughput(Throughput::Bytes(input.body.len() as u64));
        let bytes = input.body.as_bytes();
        group.bench_function(BenchmarkId::new("robotsgate", input.name), |b| {
            b.iter(|| black_box(rules::Robots::parse(black_box(bytes))))
        });
        group.bench_function(BenchmarkId::new("texting_robots", input.name), |b| {
            b.iter(|| black_box(texting_robots::Robot::new(AGENT, black_box(bytes)).is_ok()))
        });
        group.bench_function(BenchmarkId::new("robotxt", input.name), |b| {
            b.iter(|| black_box(robotxt::Robots::parse(black_box(bytes), AGENT)))
        });
    }
    group.finish();
}

/// The bound: a `*a*a*a…` pattern against a path of `a`s that almost
/// matches, at 256 bytes, 2 KB and 16 KB. Google's offset-list algorithm
/// (our reference model) is O(pattern × path) here; robotstxt is measured
/// at 256 bytes only, because at 2 KB one check did not finish in minutes.
fn worst_case(c: &mut Criterion) {
    let mut group = c.benchmark_group("worst_case");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for bytes in [256usize, 2048, 16384] {
        let pattern = "*a".repeat(bytes / 2);
        let body = format!("User-agent: *\nDisallow: /{pattern}b\n");
        let url = format!("https://h/{}", "a".repeat(bytes));
        let ours = rules::Robots::parse(body.as_bytes());
        group.bench_function(BenchmarkId::new("robotsgate", bytes), |b| {
            b.iter(|| black_box(ours.is_allowed(AGENT, &url)))
        });
        group.bench_function(BenchmarkId::new("reference-offset-list", bytes), |b| {
            b.iter(|| black_box(rules::reference::check(body.as_bytes(), AGENT.as_bytes(), url.as_bytes())))
        });
        if bytes == 256 {
            group.bench_function(BenchmarkId::new("robotstxt-reparses", bytes), |b| {
                b.iter(|| {
                    let mut m = robotstxt::DefaultMatcher::default();
                    black_box(m.one_agent_allowed_by_robots(&body, AGENT, &url))
                })
            });
        }
    }
    group.finish();
}

/// Parsing every file in the real-world corpus, as MB/s.
fn realworld(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/realworld/robots");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let files: Vec<Vec<u8>> = entries.filter_map(|e| std::fs::read(e.ok()?.path()).ok()).collect();
    let total: usize = files.iter().map(Vec::len).sum();
    let compiled: usize = files.iter().map(|f| rules::Robots::parse(f).memory_usage()).sum();
    eprintln!(
        "realworld: {} files, {total} bytes, compiled {compiled} bytes ({:.2}x)",
        files.len(),
        compiled as f64 / total as f64
    );
    let mut group = c.benchmark_group("realworld");
    group.throughput(Throughput::Bytes(total as u64)).sample_size(10);
    group.bench_function("parse-all/robotsgate", |b| {
        b.iter(|| files.iter().map(|f| rules::Robots::parse(f).source_len()).sum::<usize>())
    });
    group.finish();
}

/// What the monitor does on every change: re-test 10,000 URLs for 5
/// crawlers under the old and the new policy and collect the flips.
fn retest(c: &mut Criterion) {
    let old_body = corpus::robots_txt(1_000, 7);
    // The change: one broad new rule in the `*` group.
    let new_body = old_body.replace("User-agent: *\n", "User-agent: *\nDisallow: /products/\n");
    let urls = corpus::urls(&old_body, 10_000, 11);
    let agents = ["Googlebot", "Bingbot", "AdsBot-Google", "GPTBot", "ExampleCrawler"];
    let policy =
        |b: &str| rules::Policy::from_fetch(&rules::FetchOutcome::status(200).with_body(b.as_bytes().to_vec()));
    let (old, new) = (policy(&old_body), policy(&new_body));
    let down = rules::Policy::from_fetch(&rules::FetchOutcome::status(503));
    eprintln!(
        "retest: {} flips for the rule change, {} for the outage",
        rules::flips(&old, &new, &urls, &agents).len(),
        rules::flips(&old, &down, &urls, &agents).len()
    );
    let mut group = c.benchmark_group("retest");
    group.throughput(Throughput::Elements((urls.len() * agents.len()) as u64)).sample_size(20);
    group.bench_function("flips/10k-urls-x5-agents/rule-change", |b| {
        b.iter(|| black_box(rules::flips(&old, &new, &urls, &agents).len()))
    });
    group.bench_function("flips/10k-urls-x5-agents/outage", |b| {
        b.iter(|| black_box(rules::flips(&old, &down, &urls, &agents).len()))
    });
    group.finish();
}

criterion_group!(benches, check, shaped_check, parse, worst_case, realworld, retest);
criterion_main!(benches);
