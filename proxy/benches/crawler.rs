//! What the gateway adds to a request from a crawler: recognising it in the
//! User-Agent and checking the URL against the site's compiled robots.txt.
//!
//! Run: `cargo bench -p proxy --bench crawler`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use proxy::crawlers::claim::Crawlers;

const ROBOTS: &str = "User-agent: *\nDisallow: /admin/\nDisallow: /cart\nDisallow: /*?sessionid=\nAllow: /admin/help\n\nUser-agent: Googlebot\nDisallow: /search\nDisallow: /*.pdf$\n\nUser-agent: GPTBot\nDisallow: /\n";

fn verdict(c: &mut Criterion) {
    let crawlers = Crawlers::new(robotsgate_crawlers::Catalogue::builtin(), &["ExampleBot"]);
    let robots = rules::Robots::parse(ROBOTS.as_bytes());
    let googlebot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/120.0.0.0 Safari/537.36";
    let browser = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    let path = "/products/blue-shoes?color=navy&size=42";
    let mut group = c.benchmark_group("crawler");
    group.bench_function("identify+verdict/googlebot", |b| {
        b.iter(|| {
            let crawler = crawlers.identify(black_box(googlebot));
            black_box(crawler.map(|(_, word)| robots.check(word, black_box(path)).allowed))
        })
    });
    group.bench_function("identify/browser", |b| b.iter(|| black_box(crawlers.identify(black_box(browser)))));
    group.finish();
}

criterion_group!(benches, verdict);
criterion_main!(benches);
