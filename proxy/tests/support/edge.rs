//! A gateway in front of a logging origin, as the raw-socket suites meet
//! it: start one, send raw bytes, read what came back and what the origin
//! received.
#![allow(dead_code)] // Not every suite that shares this module needs all of it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testkit::*;

use super::start_enforcing;

pub const ROBOTS: &str = "User-agent: *\nDisallow: /private/\nDisallow: /search?q=\nDisallow: /*.pdf$\n";
pub const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// A gateway in front of a fresh logging origin, its robots.txt learnt.
pub struct Edge {
    pub proc: Proc,
    pub addr: SocketAddr,
    pub origin: Echo,
    pub fast: bool,
}

pub fn start(name: &str, fast: bool) -> Edge {
    let origin = Echo::start();
    origin.set_robots(ROBOTS);
    let name = format!("{name}-{}", if fast { "fast" } else { "pipeline" });
    let timeouts = "  grace_period: 20s\n  origin_timeout: 5s\n  client_timeout: 2s\n";
    let (proc, addr) = start_enforcing(&name, origin.addr, fast, timeouts);
    let learnt = eventually(15, || {
        request(addr, "GET", "shop.test", "/robots.txt", &[])
            .is_some_and(|r| r.header("X-Robots-Source") == Some("origin"))
    });
    assert!(learnt, "robots.txt never learnt");
    Edge { proc, addr, origin, fast }
}

/// Sends raw bytes and reads until the gateway closes or goes quiet for
/// `quiet`; returns everything it answered.
pub fn exchange(addr: SocketAddr, raw: &[u8], quiet: Duration) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(raw).expect("send");
    read_all(&mut s, quiet)
}

pub fn read_all(s: &mut TcpStream, quiet: Duration) -> String {
    s.set_read_timeout(Some(quiet)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

pub fn statuses(answer: &str) -> Vec<u16> {
    answer.split("HTTP/1.").skip(1).filter_map(|r| r.get(2..5).and_then(|s| s.parse().ok())).collect()
}

pub fn get(target: &str, agent: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: {agent}\r\nConnection: close\r\n\r\n").into_bytes()
}

/// What the origin received for the one request of a probe.
pub fn received(e: &Edge, path: &str) -> Vec<String> {
    e.origin.heads().into_iter().filter(|h| h.split_whitespace().nth(1) == Some(path)).collect()
}
