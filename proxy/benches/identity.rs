//! Crawler verification on the hot path: a prefix table of 100,000
//! prefixes (IPv4 and IPv6, as a busy operator's feeds add up to), and a
//! whole cached verification (feed miss, then the DNS cache).
//!
//! Run: `cargo bench -p proxy --bench identity`

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, criterion_group, criterion_main};
use proxy::identity::prefixes::Prefixes;

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

criterion_group!(benches, lookups);
criterion_main!(benches);
