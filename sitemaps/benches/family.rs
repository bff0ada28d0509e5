//! Reading and judging a generated sitemap family end to end: an index's
//! 20 sitemaps of 50,000 URLs (one million), each read from memory by the
//! streaming reader (plain XML and gzip) and every URL handed to a
//! `rules::sitemap::Tally` for the catalogue's search crawlers, against a generated
//! robots.txt of 200 rules. The peer in the same run is quick-xml's own
//! event loop collecting the `<loc>` texts, with no findings and no check.
//!
//! Run: `cargo bench -p robotsgate-sitemaps --bench family`.

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use robotsgate_sitemaps::read::{Context, Seen, read};
use rules::{FetchOutcome, Policy};

const ROBOTS: &str = "User-agent: *\nDisallow: /cart\nDisallow: /checkout/\nDisallow: /*?sort=\nDisallow: /search\nAllow: /search/help\n\nUser-agent: Googlebot\nDisallow: /private/\nDisallow: /*.pdf$\n";

fn family() -> Vec<Vec<u8>> {
    let sections = ["products", "blog", "cart", "search", "help", "category"];
    (0..20)
        .map(|f| {
            let mut out = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for i in 0..50_000 {
                let s = sections[(i * 7 + f) % sections.len()];
                out.push_str(&format!(
                    "  <url><loc>https://www.example.com/{s}/item-{f}-{i}?ref=sm&amp;p={}</loc><lastmod>2026-11-{:02}</lastmod></url>\n",
                    i % 13,
                    1 + i % 28
                ));
            }
            out.push_str("</urlset>\n");
            out.into_bytes()
        })
        .collect()
}

fn gz(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn bench(c: &mut Criterion) {
    let files = family();
    let zipped: Vec<Vec<u8>> = files.iter().map(|f| gz(f)).collect();
    let policy = Policy::from_fetch(&FetchOutcome::status(200).with_body(ROBOTS.as_bytes().to_vec()));
    let cx = Context::new(Some("https://www.example.com".into()));
    let search = robotsgate_crawlers::Catalogue::builtin().tokens_of(robotsgate_crawlers::Purpose::Search);
    let mut group = c.benchmark_group("family");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(8));
    group.sample_size(10);
    group.throughput(Throughput::Elements(1_000_000));
    for (name, input) in [("read_and_tally_xml", &files), ("read_and_tally_gzip", &zipped)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut seen = Seen::default();
                let mut tally = rules::sitemap::Tally::new(None, policy.clone(), &search);
                for f in input.iter() {
                    read(f.as_slice(), &cx, &mut seen, &mut |u| tally.add(u));
                }
                black_box(tally.finish())
            })
        });
    }
    group.bench_function("peer_quick_xml_locs_only", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for f in &files {
                let mut r = quick_xml::Reader::from_reader(f.as_slice());
                let mut buf = Vec::new();
                let mut in_loc = false;
                loop {
                    match r.read_event_into(&mut buf) {
                        Ok(quick_xml::events::Event::Start(e)) => in_loc = e.local_name().as_ref() == b"loc",
                        Ok(quick_xml::events::Event::Text(_)) if in_loc => n += 1,
                        Ok(quick_xml::events::Event::End(_)) => in_loc = false,
                        Ok(quick_xml::events::Event::Eof) | Err(_) => break,
                        _ => {}
                    }
                    buf.clear();
                }
            }
            black_box(n)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
