//! Sites whose origin speaks TLS (`origin_tls`), on the own path and on
//! Pingora's pipeline alike: a real nginx terminating TLS with a private
//! CA's certificate for `shop.test`. Requests go through verified and
//! with SNI, over kept-alive connections (nginx's own log counts them);
//! an origin whose certificate the gateway cannot trust, or that names
//! another host, gets a 502, never an unverified answer; request bodies
//! and HTTP/2 clients reach it too.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

use testkit::*;

mod support;
use support::spawn_proxy;

struct Tls {
    _nginx: Proc,
    port: u16,
    log: std::path::PathBuf,
    certs: TestCerts,
}

/// nginx serving `robots.txt` and `/page` over TLS only, logging each
/// request's connection number; `None` (a skip) without nginx, outside CI.
fn tls_origin(dir: &Path) -> Option<Tls> {
    if Command::new("nginx").arg("-v").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "nginx is required under CI (scripts/services.sh installs it)");
        return None;
    }
    let certs = test_certs(dir, "DNS:shop.test");
    let port = free_port();
    let log = dir.join("origin.log");
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "daemon off;\nmaster_process off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\nevents {{ worker_connections 64; }}\n\
             http {{\n  log_format conn '$connection $request $ssl_server_name';\n  access_log {log} conn;\n\
               client_body_temp_path {dir};\n  proxy_temp_path {dir};\n  fastcgi_temp_path {dir};\n  uwsgi_temp_path {dir};\n  scgi_temp_path {dir};\n\
               keepalive_requests 1000;\n\
               server {{ listen 127.0.0.1:{port} ssl; server_name shop.test;\n\
                 ssl_certificate {cert}; ssl_certificate_key {key};\n\
                 location = /robots.txt {{ return 200 \"User-agent: *\\nDisallow: /tls-private\\n\"; }}\n\
                 location = /echo {{ return 200 \"got $request_method $content_length\\n\"; }}\n\
                 location / {{ return 200 \"tls page\\n\"; }} }}\n}}\n",
            dir = dir.display(),
            log = log.display(),
            cert = certs.cert.display(),
            key = certs.key.display(),
        ),
    )
    .unwrap();
    let child = Command::new("nginx")
        .args(["-c", conf.to_str().unwrap(), "-p", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx");
    assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), 10), "nginx did not start");
    Some(Tls { _nginx: Proc(child), port, log, certs })
}

struct Gate {
    _proc: Proc,
    addr: SocketAddr,
    tls_addr: SocketAddr,
    admin: SocketAddr,
}

impl Gate {
    /// HTTP/1.1 2xx responses counted on `path` (`own` or `pipeline`).
    fn ok_on(&self, path: &str) -> u64 {
        let text = request(self.admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default();
        let line = format!("robotsgate_responses_total{{class=\"2xx\",path=\"{path}\",protocol=\"http1\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&line)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }
}

/// A gateway in front of `origin`; `site_extra` goes under the site's
/// `proxy:`, `ca` names the CA file (or none: the system's roots).
fn gateway(dir: &Path, origin: &Tls, fast_path: bool, ca: bool, site_extra: &str) -> Gate {
    let (listen, tls, admin) = (free_port(), free_port(), free_port());
    let ca = if ca { format!("  origin_ca_file: {}\n", origin.certs.ca.display()) } else { String::new() };
    let yaml = format!(
        "http:\n  timeout: 2s\nproxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  tls_listen: [{{ addr: \"127.0.0.1:{tls}\", cert: {cert}, key: {key} }}]\n  admin: 127.0.0.1:{admin}\n  state_dir: state-{listen}\n  refresh: 1s\n  fast_path: {fast_path}\n{ca}sites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: 127.0.0.1:{port}\n      origin_tls: true\n{site_extra}",
        cert = origin.certs.cert.display(),
        key = origin.certs.key.display(),
        port = origin.port,
    );
    let cfg = dir.join(format!("gateway-{listen}.yaml"));
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let tls_addr: SocketAddr = format!("127.0.0.1:{tls}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    Gate { _proc: spawn_proxy(&cfg, &[addr, tls_addr, admin]), addr, tls_addr, admin }
}

fn get(g: &Gate, path: &str) -> Response {
    request(g.addr, "GET", "shop.test", path, &[]).expect("an answer")
}

/// The requests nginx logged for `path`, as (connection, SNI).
fn logged(origin: &Tls, path: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(&origin.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some(path))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].to_string(), f.last().unwrap_or(&"").to_string())
        })
        .collect()
}

fn verified_kept_alive(fast_path: bool) {
    let dir = temp_dir(&format!("tls-origin-{fast_path}"));
    let Some(origin) = tls_origin(&dir) else { return };
    let g = gateway(&dir, &origin, fast_path, true, "");
    assert!(
        eventually(20, || get(&g, "/robots.txt").text().contains("/tls-private")),
        "robots.txt from the TLS origin: {}",
        get(&g, "/robots.txt").text()
    );
    let (fast, pipeline) = (g.ok_on("own"), g.ok_on("pipeline"));
    for _ in 0..20 {
        let r = get(&g, "/page");
        assert_eq!((r.status, r.text().as_str()), (200, "tls page\n"));
    }
    // Each path serves what it is given: the own path no longer hands a
    // TLS origin's requests to the pipeline.
    let (on, off) = if fast_path { ("own", "pipeline") } else { ("pipeline", "own") };
    let before = if fast_path { (fast, pipeline) } else { (pipeline, fast) };
    assert_eq!((g.ok_on(on) - before.0, g.ok_on(off) - before.1), (20, 0), "all on the {on} path");
    let pages = logged(&origin, "/page");
    assert_eq!(pages.len(), 20);
    assert!(pages.iter().all(|(_, sni)| sni == "shop.test"), "SNI is the site's host: {pages:?}");
    let mut conns: Vec<&String> = pages.iter().map(|(c, _)| c).collect();
    conns.sort();
    conns.dedup();
    assert!(conns.len() <= 3, "20 requests over {} connections: kept alive", conns.len());

    // A body goes through.
    let out = Command::new("curl")
        .args(["-s", "--data-binary", "hello", "-H", "Host: shop.test"])
        .arg(format!("http://{}/echo", g.addr))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got POST 5\n");

    // HTTP/2 clients of the gateway reach the TLS origin too.
    let out = Command::new("curl")
        .args(["-sk", "--http2", "-o", "-", "-w", "|%{http_version}", "--resolve"])
        .arg(format!("shop.test:{}:127.0.0.1", g.tls_addr.port()))
        .arg(format!("https://shop.test:{}/page", g.tls_addr.port()))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tls page\n|2");
}

#[test]
fn a_tls_origin_is_verified_and_kept_alive_on_the_fast_path() {
    verified_kept_alive(true);
}

#[test]
fn a_tls_origin_is_verified_and_kept_alive_on_the_pipeline() {
    verified_kept_alive(false);
}

fn untrusted_gets_502(fast_path: bool) {
    let dir = temp_dir(&format!("tls-origin-untrusted-{fast_path}"));
    let Some(origin) = tls_origin(&dir) else { return };
    // The private CA is not named: the system's roots do not know it.
    let a = gateway(&dir, &origin, fast_path, false, "");
    // The CA is named, but the origin is asked for another name.
    let b = gateway(&dir, &origin, fast_path, true, "      sni: other.test\n");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    for g in [&a, &b] {
        let r = get(g, "/page");
        assert_eq!(r.status, 502, "{}", r.text());
        assert!(!r.text().contains("tls page"));
        assert!(!get(g, "/robots.txt").text().contains("/tls-private"), "no copy from an unverified origin");
    }
    assert!(logged(&origin, "/page").is_empty(), "no request reached the origin unverified");
}

#[test]
fn an_untrusted_tls_origin_gets_502_on_the_fast_path() {
    untrusted_gets_502(true);
}

#[test]
fn an_untrusted_tls_origin_gets_502_on_the_pipeline() {
    untrusted_gets_502(false);
}
