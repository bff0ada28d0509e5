//! Crawl budgets hold memory bounded: a million requests, each from a
//! client address of its own (through a trusted proxy's
//! `X-Forwarded-For`) and each with a User-Agent of its own (catalogued
//! crawlers' words with made-up versions and links, and crawler names no
//! catalogue holds), leave the gateway's resident memory flat. Buckets are
//! keyed by catalogue token, never by address or User-Agent; this measures
//! that nothing else on the way (verification, counters, the ledger's
//! queue) keys by them either. Run on both request paths.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use testkit::*;

mod support;
use support::spawn_proxy;

/// Requests in all; `ROBOTSGATE_BUDGET_REQUESTS` changes it.
const REQUESTS: u64 = 1_000_000;
/// Requests written at once on one connection.
const BATCH: u64 = 500;
const THREADS: u64 = 4;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The `i`th request: a client and a User-Agent of its own.
fn request_bytes(i: u64, out: &mut Vec<u8>) {
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    let ip = if !i.is_multiple_of(2) { format!("2001:db8::{:x}:{:x}", i >> 16, i & 0xffff) } else { ip };
    // One in 256 names no catalogued crawler: not a crawler claim, so no
    // budget, and proxied (the origin's answers are the slow part here).
    let ua = match (i % 256, i % 3) {
        (255, _) => format!("MadeUp{i}Bot/1.0 (+https://example.invalid/{i})"),
        (_, 0) => format!("Mozilla/5.0 (compatible; GPTBot/1.{i}; +https://openai.com/gptbot?{i})"),
        (_, 1) => format!("CCBot/{i}.0 (https://commoncrawl.org/faq/{i})"),
        _ => format!(
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/{i}; +claudebot@anthropic.com)"
        ),
    };
    write!(out, "GET /p/{i} HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: {ua}\r\nX-Forwarded-For: {ip}\r\n\r\n").unwrap();
}

/// Sends `count` requests from `first` on one keep-alive connection, in
/// pipelined batches, and reads every answer; returns how many were 429.
fn send(addr: SocketAddr, first: u64, count: u64) -> u64 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut throttled = 0;
    let mut buf = Vec::new();
    let mut read = vec![0u8; 1 << 16];
    let mut i = first;
    while i < first + count {
        let n = BATCH.min(first + count - i);
        buf.clear();
        for j in i..i + n {
            request_bytes(j, &mut buf);
        }
        stream.write_all(&buf).expect("write");
        // Every answer has a Content-Length: count status lines until `n`
        // heads and their bodies are in.
        let mut got = Vec::new();
        let mut answers = 0;
        let mut at = 0;
        while answers < n {
            let k = stream.read(&mut read).expect("read");
            assert!(k > 0, "the gateway closed the connection after {answers} of {n}");
            got.extend_from_slice(&read[..k]);
            while let Some(end) = find(&got[at..], b"\r\n\r\n") {
                let head = std::str::from_utf8(&got[at..at + end]).expect("a text head");
                let len: usize = head
                    .lines()
                    .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
                    .map_or(0, |(_, v)| v.trim().parse().unwrap());
                if got.len() < at + end + 4 + len {
                    break;
                }
                throttled += u64::from(head.starts_with("HTTP/1.1 429"));
                answers += 1;
                at += end + 4 + len;
            }
        }
        i += n;
    }
    throttled
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn flat(fast_path: bool) {
    let total: u64 = std::env::var("ROBOTSGATE_BUDGET_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(REQUESTS);
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    let dir = temp_dir(if fast_path { "budget-memory-fast" } else { "budget-memory-pipeline" });
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: state\n  refresh: 1s\n  fast_path: {fast_path}\n  threads: 2\n\
         \x20 identity: {{ fetch: false, reverse_dns: false, trusted_proxies: [127.0.0.1/32] }}\n\
         sites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: {}\n      budgets:\n\
         \x20       - {{ purpose: ai-training, rate: 1/h, burst: 1 }}\n        - {{ identity: spoofed, rate: 1/h }}\n",
        echo.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let proxy = spawn_proxy(&cfg, &[addr]);
    let pid = proxy.0.id();
    assert!(eventually(20, || {
        request(addr, "GET", "shop.test", "/robots.txt", &[])
            .is_some_and(|r| r.header("X-Robots-Source") == Some("origin"))
    }));

    // A warm-up tenth, then the rest; memory read after each.
    let started = Instant::now();
    let run = |from: u64, count: u64| -> u64 {
        let each = count / THREADS;
        let handles: Vec<_> =
            (0..THREADS).map(|t| std::thread::spawn(move || send(addr, from + t * each, each))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    };
    let warm = total / 10;
    let mut throttled = run(0, warm);
    let after_warm = rss_kib(pid);
    throttled += run(warm, total - warm);
    let after_all = rss_kib(pid);
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "fast_path={fast_path}: {total} requests in {secs:.1}s; RSS {after_warm} KiB after {warm}, {after_all} KiB after {total}; {throttled} throttled"
    );
    // 255 in 256 claim an AI trainer: all but the first of each are 429.
    assert!(throttled >= total / 256 * 255 - 10, "{throttled} of {total} throttled");
    // Flat: the nine tenths after warm-up add less than 8 MiB (an entry per
    // client or User-Agent would add well over 50).
    assert!(
        after_all.saturating_sub(after_warm) < 8 * 1024,
        "RSS grew from {after_warm} KiB to {after_all} KiB over {} requests",
        total - warm
    );
}

#[test]
fn a_million_clients_and_user_agents_keep_memory_flat_on_the_fast_path() {
    flat(true);
}

#[test]
fn a_million_clients_and_user_agents_keep_memory_flat_on_the_pipeline() {
    flat(false);
}
