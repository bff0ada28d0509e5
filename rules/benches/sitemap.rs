//! Sitemap URLs against robots.txt: one million URLs (an index of 20
//! sitemaps of 50,000, generated at the edges of the file's rules) checked
//! for 14 search crawlers by [`rules::sitemap::Tally`], against generated
//! files of 20, 200 and 2,000 rules. The peer in the same run is the plain
//! way: every crawler's verdict for every URL through `Policy::verdict`.
//!
//! Run: `cargo bench -p rules --bench sitemap`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rules::{FetchOutcome, Policy};

#[path = "support/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "support/crawlers.rs"]
#[allow(dead_code)]
mod crawlers;

/// The catalogue's search crawlers, as the monitor asks for them.
const SEARCH: [&str; 14] = [
    "Googlebot",
    "Googlebot-Image",
    "Googlebot-Video",
    "Googlebot-News",
    "Storebot-Google",
    "bingbot",
    "DuckDuckBot",
    "YandexBot",
    "Baiduspider",
    "Applebot",
    "PetalBot",
    "Yeti",
    "SeznamBot",
    "Qwantbot",
];

fn family(robots: &str) -> Vec<String> {
    (0..20u64)
        .flat_map(|i| corpus::urls(robots, 50_000, 1000 + i))
        .map(|u| if u.starts_with('/') { format!("https://www.example.com{u}") } else { u })
        .collect()
}

fn sitemap(c: &mut Criterion) {
    let mut group = c.benchmark_group("sitemap");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(4));
    group.sample_size(10);
    for rules in [20usize, 200, 2000] {
        let text = corpus::robots_txt(rules, 7);
        let policy = Policy::from_fetch(&FetchOutcome::status(200).with_body(text.clone().into_bytes()));
        let urls = family(&text);
        group.throughput(Throughput::Elements(urls.len() as u64));
        group.bench_with_input(BenchmarkId::new("tally_1m", rules), &urls, |b, urls| {
            b.iter(|| {
                let mut tally = rules::sitemap::Tally::new(None, policy.clone(), &SEARCH);
                for u in urls {
                    tally.add(u);
                }
                black_box(tally.finish())
            })
        });
        let some = &urls[..100_000];
        group.throughput(Throughput::Elements(some.len() as u64));
        group.bench_with_input(BenchmarkId::new("every_verdict_100k", rules), some, |b, urls| {
            b.iter(|| {
                let mut closed = 0u64;
                for u in urls {
                    if SEARCH.iter().any(|a| !policy.verdict(a, u).allowed) {
                        closed += 1;
                    }
                }
                black_box(closed)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sitemap);
criterion_main!(benches);
