//! The gateway as operators run it (issue #42, sections 4 and 5), on both
//! request paths: `origin:` written as a URL serves; the origin learns the
//! client; `/metrics` carries latency histograms per path, upstream times,
//! `robotsgate_build_info` and the process's own metrics; a failed TLS
//! handshake (a scanner, an old client) is counted, not logged at ERROR.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;
use support::edge::ROBOTS;

struct Gateway {
    _proc: Proc,
    plain: SocketAddr,
    tls: SocketAddr,
    admin: SocketAddr,
    log: std::path::PathBuf,
}

fn start(name: &str, fast: bool, origin: &Echo) -> Gateway {
    let dir = temp_dir(&format!("{name}-{}", if fast { "fast" } else { "pipeline" }));
    let certs = test_certs(&dir, "DNS:shop.test");
    let (listen, tls, admin) = (free_port(), free_port(), free_port());
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  tls_listen:
    - {{ addr: \"127.0.0.1:{tls}\", cert: {cert}, key: {key} }}
  admin: 127.0.0.1:{admin}
  state_dir: state
  refresh: 1s
  fast_path: {fast}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: http://{origin}/
",
        cert = certs.cert.display(),
        key = certs.key.display(),
        origin = origin.addr,
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let check = Command::new(support::proxy_bin()).arg("--config").arg(&cfg).arg("--check").output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    let log = dir.join("stderr.log");
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cfg)
        .env("ROBOTSGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let g = Gateway {
        _proc: Proc(child),
        plain: format!("127.0.0.1:{listen}").parse().unwrap(),
        tls: format!("127.0.0.1:{tls}").parse().unwrap(),
        admin: format!("127.0.0.1:{admin}").parse().unwrap(),
        log,
    };
    assert!([g.plain, g.tls, g.admin].iter().all(|a| wait_listening(*a, 20)), "robots-proxy did not start");
    let learnt = eventually(15, || {
        request(g.plain, "GET", "shop.test", "/robots.txt", &[])
            .is_some_and(|r| r.header("X-Robots-Source") == Some("origin"))
    });
    assert!(learnt, "robots.txt never learnt");
    g
}

/// The value of the series `line` starts with, in `/metrics`.
fn value(metrics: &str, line: &str) -> Option<f64> {
    metrics.lines().find(|l| l.starts_with(line)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

#[test]
fn what_operators_need_to_see_on_both_paths() {
    for fast in [true, false] {
        let origin = Echo::start();
        origin.set_robots(ROBOTS);
        let g = start("hygiene", fast, &origin);
        let page = request(g.plain, "GET", "shop.test", "/page", &[]).expect("an answer");
        assert_eq!(page.status, 200, "fast {fast}: origin: http://… serves");
        assert!(page.text().contains("x-forwarded-for,x-forwarded-proto,forwarded"), "fast {fast}: {}", page.text());

        // A scanner's plain text on the TLS port: a failed handshake.
        for _ in 0..3 {
            let mut s = TcpStream::connect(g.tls).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: shop.test\r\n\r\n");
            let _ = s.read(&mut [0u8; 512]);
        }
        let metrics = || request(g.admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default();
        assert!(
            eventually(10, || value(&metrics(), "robotsgate_tls_handshake_failures_total").is_some_and(|n| n >= 3.0)),
            "fast {fast}: {}",
            metrics()
        );
        let m = metrics();
        let path = if fast { "own" } else { "pipeline" };
        for series in [
            format!("robotsgate_request_duration_seconds_count{{path=\"{path}\",protocol=\"http1\",robots=\"false\"}}"),
            format!("robotsgate_request_duration_seconds_count{{path=\"{path}\",protocol=\"http1\",robots=\"true\"}}"),
            "robotsgate_build_info{daemon=\"robots-proxy\",version=".to_string(),
            "process_resident_memory_bytes".to_string(),
            "process_open_fds".to_string(),
        ] {
            assert!(value(&m, &series).is_some_and(|v| v >= 1.0), "fast {fast}: no {series} in\n{m}");
        }
        // Whole seconds: 0 in a process this young, but there.
        assert!(value(&m, "process_cpu_seconds_total").is_some(), "fast {fast}: {m}");
        if fast {
            assert!(
                value(&m, "robotsgate_upstream_duration_seconds_count{phase=\"connect\"}").is_some_and(|v| v >= 1.0),
                "{m}"
            );
            assert!(
                value(&m, "robotsgate_upstream_duration_seconds_count{phase=\"response\"}").is_some_and(|v| v >= 1.0),
                "{m}"
            );
        }
        // Counted, not logged at ERROR with OpenSSL's text.
        let log = std::fs::read_to_string(&g.log).unwrap();
        assert!(!log.contains("handshake"), "fast {fast}: {log}");
    }
}

/// What `--check` accepts serves; what cannot serve is refused by it,
/// naming the key and how to write it.
#[test]
fn check_refuses_an_origin_that_cannot_serve() {
    let dir = temp_dir("hygiene-origin");
    for (origin, threads, says) in [
        ("http://127.0.0.1:8080/app", "auto", "no path"),
        ("127.0.0.1", "auto", "write `host:port`"),
        ("127.0.0.1:8080", "0", "proxy.threads"),
        ("127.0.0.1:8080", "many", "`auto` or a number"),
    ] {
        let cfg = dir.join("config.yaml");
        std::fs::write(
            &cfg,
            format!("proxy:\n  listen: [\"127.0.0.1:1\"]\n  threads: {threads}\nsites:\n  - name: shop\n    proxy: {{ hosts: [shop.test], origin: \"{origin}\" }}\n"),
        )
        .unwrap();
        let out = Command::new(support::proxy_bin()).arg("--config").arg(&cfg).arg("--check").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{origin} / {threads} passed --check");
        assert!(err.contains(says), "{origin} / {threads}: {err}");
        if says.contains("host") || says.contains("path") {
            assert!(err.contains("sites[0].proxy.origin"), "{err}");
        }
    }
}
