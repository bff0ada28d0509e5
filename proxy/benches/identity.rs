//! Crawler verification on the hot path: a prefix table of 100,000
//! prefixes (IPv4 and IPv6, as a busy operator's feeds add up to), and a
//! whole cached verification (feed miss, then the DNS cache).
//!
//! Run: `cargo bench -p proxy --bench identity`

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, criterion_group, criterion_main};
use proxy::identity::dns::{Dns, DnsOptions};
use proxy::identity::prefixes::Prefixes;
use proxy::identity::{Answer, Identity};
use robotsgate_crawlers::Catalogue;

/// A deterministic spread of prefixes: /24s over IPv4 and /48s over IPv6.
fn table(n: usize) -> (Prefixes, Vec<IpAddr>) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut prefixes = Vec::with_capacity(n);
    for i in 0..n {
        let r = next();
        if i % 4 == 0 {
            prefixes.push(format!("2001:{:x}:{:x}::/48", (r >> 16) & 0xffff, r & 0xffff));
        } else {
            let v = (r as u32) & 0xffff_ff00;
            prefixes.push(format!("{}/24", std::net::Ipv4Addr::from(v)));
        }
    }
    let t = Prefixes::parse(prefixes.iter().map(String::as_str)).expect("prefixes");
    let probes = (0..1024).map(|_| IpAddr::from(std::net::Ipv4Addr::from(next() as u32))).collect();
    (t, probes)
}

fn lookups(c: &mut Criterion) {
    let (t, probes) = table(100_000);
    let mut group = c.benchmark_group("identity");
    let mut i = 0;
    group.bench_function("prefixes/100k/contains", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(t.contains(black_box(probes[i])))
        })
    });
    group.finish();
}

/// What verification adds to a crawler's request on the gateway's hot
/// path once its answer is known: `Identity::answer_now`, which reads the
/// feed tables and the DNS cache and builds no words. The feed is the size
/// of Google's common-crawlers file (about 1,000 prefixes); the DNS case is
/// an address outside the feed whose forward-confirmed name is cached.
fn cached(c: &mut Criterion) {
    let feed_url = "http://127.0.0.1:1/googlebot.json";
    let entry = format!(
        "crawlers:\n  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: x,\n      verify: {{ ip_ranges: [\"{feed_url}\"], rdns: [googlebot.com] }} }}\n"
    );
    let extra = Catalogue::parse(&entry, "bench").expect("catalogue");
    let catalogue = Catalogue::builtin().with(extra.crawlers(), "bench").expect("catalogue");
    let options = DnsOptions {
        servers: vec!["127.0.0.1:1".parse().unwrap()],
        timeout: std::time::Duration::from_secs(1),
        budget: std::time::Duration::from_millis(1),
        in_flight: 1,
    };
    let dns = Dns::new(&options).expect("resolver");
    let rdns_ip: IpAddr = "192.0.2.77".parse().unwrap();
    dns.remember(rdns_ip, vec!["crawl-192-0-2-77.googlebot.com".into()], std::time::Duration::from_secs(3600));
    let identity = Identity::new(catalogue, None, Some(dns));
    let prefixes: Vec<String> =
        (0..1000).map(|i| format!("{{\"ipv4Prefix\":\"66.249.{}.{}/27\"}}", i / 8, (i % 8) * 32)).collect();
    let body = format!("{{\"creationTime\":\"x\",\"prefixes\":[{}]}}", prefixes.join(","));
    identity.feeds[feed_url].accept(body.as_bytes()).expect("feed");
    let googlebot = identity.catalogue.get("Googlebot").expect("Googlebot").clone();
    let in_range: IpAddr = "66.249.66.1".parse().unwrap();
    assert_eq!(identity.answer_now(&googlebot, in_range, None), Some(Answer::Verified));
    assert_eq!(identity.answer_now(&googlebot, rdns_ip, None), Some(Answer::Verified));
    let spoofer: IpAddr = "203.0.113.9".parse().unwrap();
    identity.dns.as_ref().unwrap().remember(spoofer, Vec::new(), std::time::Duration::from_secs(3600));
    assert_eq!(identity.answer_now(&googlebot, spoofer, None), Some(Answer::Spoofed));

    let mut group = c.benchmark_group("identity");
    group.bench_function("answer_now/in-feed", |b| {
        b.iter(|| black_box(identity.answer_now(&googlebot, black_box(in_range), None)))
    });
    group.bench_function("answer_now/dns-cached", |b| {
        b.iter(|| black_box(identity.answer_now(&googlebot, black_box(rdns_ip), None)))
    });
    group.bench_function("answer_now/spoofed-cached", |b| {
        b.iter(|| black_box(identity.answer_now(&googlebot, black_box(spoofer), None)))
    });
    group.finish();
}

criterion_group!(benches, lookups, cached);
criterion_main!(benches);
