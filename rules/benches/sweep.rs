//! The check-cost sweep: 36 generated files from about 1 KB to 500 KB in
//! four shapes (`support/family.rs`), 10,000 URLs each, an agent that falls
//! to `*`, with the peers on crates.io in the same run. A check's cost
//! should stay flat across the sweep; `scripts/bench-sweep.sh` runs this
//! and prints each file's checks per second against the smallest file's.
//!
//! Run: `cargo bench -p rules --bench sweep` (or the script).

use std::hint::black_box;
use std::time::Duration;

use corpus::cycle;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[path = "support/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "support/crawlers.rs"]
mod crawlers;
#[path = "support/family.rs"]
mod family;

const AGENT: &str = "ExampleCrawler";

fn sweep(c: &mut Criterion) {
    let mut group = c.benchmark_group("sweep");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_millis(1200));
    group.sample_size(20);
    let peers = std::env::var_os("SWEEP_PEERS").is_some();
    for (name, knobs) in family::sweep() {
        let body = family::robots(&knobs, 41);
        let urls = family::urls(&body, &knobs, 10_000, 43);
        eprintln!("sweep {name}: {} bytes, {} rules", body.len(), knobs.rules);
        let ours = rules::Robots::parse(body.as_bytes());
        let mut i = 0;
        group.bench_function(BenchmarkId::new("robotsgate", &name), |b| {
            b.iter(|| ours.is_allowed(black_box(AGENT), black_box(cycle(&urls, &mut i))))
        });
        if !peers {
            continue;
        }
        if let Ok(theirs) = texting_robots::Robot::new(AGENT, body.as_bytes()) {
            group.bench_function(BenchmarkId::new("texting_robots", &name), |b| {
                b.iter(|| theirs.allowed(black_box(cycle(&urls, &mut i))))
            });
        }
        let paths: Vec<String> = urls
            .iter()
            .map(|u| String::from_utf8(rules::target::path_of(u.as_bytes()).into_owned()).unwrap_or_default())
            .collect();
        let theirs = robotxt::Robots::parse(body.as_bytes(), AGENT);
        group.bench_function(BenchmarkId::new("robotxt", &name), |b| {
            b.iter(|| black_box(theirs.is_allowed(cycle(&paths, &mut i))))
        });
    }
    group.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);
