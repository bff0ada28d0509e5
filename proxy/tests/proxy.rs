//! The real `robots-proxy` binary in front of real origins on 127.0.0.1.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;
use support::spawn_proxy;

const GOOD: &str = "User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nDisallow: /nogoogle\n";

struct Gate {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
}

fn config(dir: &Path, origin: &Origin, listen: u16, admin: u16, site_extra: &str) -> PathBuf {
    let yaml = format!(
        "http:
  timeout: 2s
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: sekrit
  state_dir: state
  refresh: 1s
  grace_period: 1s
  crawlers: [ExampleBot]
sites:
  - name: shop
    proxy:
      hosts: [shop.test, www.shop.test]
      origin: {origin}
{site_extra}",
        origin = origin.addr
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, yaml).expect("config");
    path
}

fn start(cfg: &Path, listen: u16, admin: u16) -> Gate {
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    Gate { proc: spawn_proxy(cfg, &[addr, admin]), addr, admin }
}

fn setup(name: &str, site_extra: &str) -> (PathBuf, Origin, PathBuf, u16, u16) {
    let dir = temp_dir(name);
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    origin.set("/page", Reply::ok("origin page"));
    origin.set("/private/doc", Reply::ok("private doc"));
    let (listen, admin) = (free_port(), free_port());
    let cfg = config(&dir, &origin, listen, admin, site_extra);
    (dir, origin, cfg, listen, admin)
}

fn get(g: &Gate, path: &str, headers: &[(&str, &str)]) -> Response {
    request(g.addr, "GET", "shop.test", path, headers).expect("response")
}

/// Waits until `/robots.txt` comes from `source` (refreshes run every second).
fn served_from(g: &Gate, source: &str) -> Response {
    let mut last = None;
    let ok = eventually(15, || {
        let r = get(g, "/robots.txt", &[]);
        let hit = r.header("X-Robots-Source") == Some(source);
        last = Some(r);
        hit
    });
    let last = last.expect("a response");
    assert!(ok, "robots.txt never came from {source}: {} {:?}", last.status, last.headers);
    last
}

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

#[test]
fn serves_robots_from_store_and_passes_everything_else() {
    let (_dir, origin, cfg, listen, admin) = setup("pass", "");
    let g = start(&cfg, listen, admin);
    let r = served_from(&g, "origin");
    assert_eq!((r.status, r.text().as_str()), (200, GOOD));
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("Content-Length"), Some(GOOD.len().to_string().as_str()));
    assert!(r.header("Cache-Control").is_some_and(|c| c.contains("max-age")));
    let etag = r.header("ETag").expect("etag").to_string();
    let head = request(g.addr, "HEAD", "shop.test", "/robots.txt", &[]).unwrap();
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.header("Content-Length"), Some(GOOD.len().to_string().as_str()));
    let cond = get(&g, "/robots.txt", &[("If-None-Match", &etag)]);
    assert_eq!(cond.status, 304);
    assert_eq!((cond.header("ETag"), cond.body.len()), (Some(etag.as_str()), 0), "{:?}", cond.headers);
    assert_eq!(cond.header("X-Robots-Source"), Some("origin"));

    // Everything else reaches the origin unchanged, large bodies included.
    assert_eq!(get(&g, "/page", &[]).text(), "origin page");
    let big = vec![b'x'; 3 * 1024 * 1024];
    origin.set("/big", Reply::ok(big.clone()));
    assert_eq!(get(&g, "/big", &[]).body, big);
    let r = request(g.addr, "GET", "www.shop.test:80", "/page", &[]).unwrap();
    assert_eq!(r.text(), "origin page", "Host with a port routes too");
    let r = request(g.addr, "GET", "elsewhere.test", "/page", &[]).unwrap();
    assert_eq!(r.status, 421, "unknown hosts get the configured answer");
}

/// The client connection buffers writes (see `CLIENT_WRITE_BUFFER`); a
/// streamed body must still reach the client as the origin sends it.
#[test]
fn streamed_bodies_are_not_held_back() {
    use std::io::{Read, Write};
    let (_dir, origin, cfg, listen, admin) = setup("stream", "");
    let g = start(&cfg, listen, admin);
    origin.set(
        "/events",
        Reply::Stream { chunks: vec![b"first-event".to_vec(), b"last-event".to_vec()], pause: Duration::from_secs(3) },
    );
    let mut conn = std::net::TcpStream::connect(g.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    conn.write_all(b"GET /events HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n").unwrap();
    let sent = std::time::Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("first-event") && sent.elapsed() < Duration::from_secs(10) {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    let waited = sent.elapsed();
    assert!(String::from_utf8_lossy(&got).contains("first-event"), "first chunk never arrived");
    assert!(waited < Duration::from_secs(2), "first chunk held back for {waited:?}");
    assert!(!String::from_utf8_lossy(&got).contains("last-event"));
}

#[test]
fn last_good_copy_survives_every_kind_of_origin_failure() {
    let (_dir, origin, cfg, listen, admin) = setup("fallback", "");
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    let mut html = b"<!DOCTYPE html><html><body>Maintenance</body></html>".to_vec();
    html.extend_from_slice(b"\nUser-agent: *\nDisallow: /\n");
    let mut huge = GOOD.as_bytes().to_vec();
    huge.resize(700 * 1024, b'#');
    for (what, reply) in [
        ("503", Reply::status(503)),
        ("429", Reply::status(429)),
        ("hang", Reply::Hang),
        ("reset", Reply::Reset),
        ("html", Reply::ok(html.clone())),
        ("oversize", Reply::ok(huge.clone())),
    ] {
        origin.set("/robots.txt", Reply::ok(GOOD));
        served_from(&g, "origin");
        origin.set("/robots.txt", reply);
        let r = served_from(&g, "last-good");
        assert_eq!((r.status, r.text().as_str()), (200, GOOD), "during {what}");
    }
    let metrics = request(g.admin, "GET", "admin", "/metrics", &[]).unwrap().text();
    for reason in ["5xx", "429", "timeout", "html", "oversize"] {
        assert!(
            metrics.contains(&format!("robotsgate_robots_fallback_total{{reason=\"{reason}\",site=\"shop\"}}")),
            "{reason}: {metrics}"
        );
    }
    // Recovery brings the origin's file back.
    origin.set("/robots.txt", Reply::ok(GOOD));
    served_from(&g, "origin");
}

#[test]
fn restart_during_outage_serves_the_disk_copy() {
    let (_dir, origin, cfg, listen, admin) = setup("restart", "");
    let mut g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    assert_eq!(g.proc.terminate(), Some(0));
    origin.set("/robots.txt", Reply::status(503));
    let g = start(&cfg, listen, admin);
    // Served from disk at once: no fetch has succeeded in this process.
    let r = get(&g, "/robots.txt", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, GOOD));
    assert_eq!(r.header("X-Robots-Source"), Some("last-good"));
}

#[test]
fn no_file_is_honoured_and_no_copy_passes_through() {
    let (_dir, origin, cfg, listen, admin) = setup("nofile", "");
    origin.set("/robots.txt", Reply::status(503));
    let g = start(&cfg, listen, admin);
    // No good copy yet: the origin's 503 passes through unchanged.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(get(&g, "/robots.txt", &[]).status, 503);
    origin.set("/robots.txt", Reply::ok(GOOD));
    served_from(&g, "origin");
    // A 404 means there is no file: honoured, even with a good copy before.
    origin.set("/robots.txt", Reply::status(404));
    assert!(eventually(15, || get(&g, "/robots.txt", &[]).status == 404));
    assert_eq!(get(&g, "/robots.txt", &[]).header("X-Robots-Source"), None);
    // With no file, crawlers are not restricted.
    assert_eq!(get(&g, "/private/doc", &[("User-Agent", GOOGLEBOT)]).status, 200);
}

#[test]
fn managed_groups_are_merged() {
    let extra = "      managed_groups: |\n        User-agent: GPTBot\n        User-agent: CCBot\n        Disallow: /\n";
    let (_dir, origin, cfg, listen, admin) = setup("managed", extra);
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /private\nUser-agent: Trailing"));
    let g = start(&cfg, listen, admin);
    let r = served_from(&g, "managed");
    let robots = rules::Robots::parse(&r.body);
    assert!(!robots.is_allowed("GPTBot", "/page") && !robots.is_allowed("CCBot", "/"));
    assert!(robots.is_allowed("Trailing", "/private/x"), "the origin's empty trailing group keeps its meaning");
    assert!(!robots.is_allowed("Googlebot", "/private/x"));
    assert!(r.text().starts_with("User-agent: *\nDisallow: /private\n"));
    let status =
        |g: &Gate| request(g.admin, "GET", "admin", "/status", &[("Authorization", "Bearer sekrit")]).unwrap().text();
    assert!(status(&g).contains("\"managed_groups_contested_by_origin\":[]"), "{}", status(&g));
    // The scheme reads in any case (RFC 9110 section 11.1); a wrong token is not let in.
    let lower = request(g.admin, "GET", "admin", "/status", &[("Authorization", "bearer sekrit")]).unwrap();
    assert_eq!(lower.status, 200);
    let wrong = request(g.admin, "GET", "admin", "/status", &[("Authorization", "bearer sekri")]).unwrap();
    assert_ne!(wrong.status, 200);

    // The origin starts naming GPTBot itself: Google would merge its Allow
    // into the managed group, so /status says so.
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /private\n\nUser-agent: GPTBot\nAllow: /\n"));
    assert!(
        eventually(15, || status(&g).contains("\"managed_groups_contested_by_origin\":[\"gptbot\"]")),
        "{}",
        status(&g)
    );
}

#[test]
fn static_override_is_served() {
    let (_dir, _origin, cfg, listen, admin) =
        setup("static", "      robots_static: \"User-agent: *\\nDisallow: /\\n\"\n");
    let g = start(&cfg, listen, admin);
    let r = served_from(&g, "static");
    assert_eq!(r.text(), "User-agent: *\nDisallow: /\n");
}

#[test]
fn crawlers_are_recognised_and_enforced_only_when_asked() {
    let (_dir, _origin, cfg, listen, admin) = setup("enforce", "      enforce: true\n");
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    // Googlebot has its own group, so the `*` group's /private does not bind it.
    assert_eq!(get(&g, "/private/doc", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(get(&g, "/nogoogle/x", &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(get(&g, "/nogoogle/y", &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(get(&g, "/page", &[("User-Agent", GOOGLEBOT)]).status, 200);
    // Googlebot-Image has no group here, so it obeys Googlebot's, not `*`;
    // AdsBot ignores `*` altogether.
    assert_eq!(get(&g, "/nogoogle/i", &[("User-Agent", "Googlebot-Image/1.0")]).status, 403);
    assert_eq!(get(&g, "/private/doc", &[("User-Agent", "Googlebot-Image/1.0")]).status, 200);
    assert_eq!(
        get(&g, "/private/doc", &[("User-Agent", "AdsBot-Google (+http://www.google.com/adsbot.html)")]).status,
        200
    );
    assert_eq!(get(&g, "/private/doc", &[("User-Agent", "examplebot/1.0")]).status, 403, "configured tokens count");
    assert_eq!(
        get(&g, "/private/doc", &[("User-Agent", BROWSER)]).text(),
        "private doc",
        "browsers are never affected"
    );
    assert_eq!(get(&g, "/robots.txt", &[("User-Agent", GOOGLEBOT)]).status, 200, "robots.txt is always served");
    let metrics = request(g.admin, "GET", "admin", "/metrics", &[]).unwrap().text();
    assert!(
        metrics.contains(
            "robotsgate_crawler_requests_total{crawler=\"Googlebot\",identity=\"off\",verdict=\"disallow\"} 2"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("robotsgate_crawler_requests_total{crawler=\"Googlebot\",identity=\"off\",verdict=\"allow\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("robotsgate_enforced_total{crawler=\"Googlebot\",reason=\"robots\",site=\"shop\"} 2"),
        "{metrics}"
    );
}

#[test]
fn without_enforcement_crawlers_pass() {
    let (_dir, _origin, cfg, listen, admin) = setup("noenforce", "");
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    assert_eq!(get(&g, "/private/doc", &[("User-Agent", GOOGLEBOT)]).text(), "private doc");
}

#[test]
fn admin_endpoints() {
    let (_dir, _origin, cfg, listen, admin) = setup("admin", "");
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    assert_eq!(request(g.admin, "GET", "admin", "/healthz", &[]).unwrap().status, 200);
    assert_eq!(request(g.admin, "GET", "admin", "/status", &[]).unwrap().status, 401);
    assert_eq!(request(g.admin, "GET", "admin", "/status", &[("Authorization", "Bearer wrong")]).unwrap().status, 401);
    let r = request(g.admin, "GET", "admin", "/status", &[("Authorization", "Bearer sekrit")]).unwrap();
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(
        text.contains("\"site\":\"shop\"")
            && text.contains("\"source\":\"origin\"")
            && text.contains("\"last_origin_status\":200"),
        "{text}"
    );
    // Which copy each host of the site is served: both hosts, one copy.
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hosts = status["sites"][0]["hosts"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = hosts.iter().filter_map(|h| h["host"].as_str()).collect();
    assert_eq!(names, ["shop.test", "www.shop.test"], "{text}");
    let served = get(&g, "/robots.txt", &[]);
    let etag = served.header("etag").unwrap_or_default().to_string();
    assert!(hosts.iter().all(|h| h["copy"]["etag"] == etag.as_str() && h["copy"]["source"] == "origin"), "{text}");
}

#[test]
fn refresh_on_demand() {
    let (dir, origin, _cfg, listen, admin) = setup("ondemand", "");
    // A long interval, so only the admin request can bring the change in.
    let cfg = dir.join("config.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("refresh: 1s", "refresh: 1h");
    std::fs::write(&cfg, text).unwrap();
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /changed\n"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(get(&g, "/robots.txt", &[]).text().contains("/private"), "not refreshed yet");
    let unauth = request(g.admin, "POST", "admin", "/refresh", &[]).unwrap();
    assert_eq!(unauth.status, 401);
    let r =
        request(g.admin, "POST", "admin", "/refresh", &[("Authorization", "Bearer sekrit"), ("Content-Length", "0")])
            .unwrap();
    assert_eq!(r.status, 202);
    assert!(eventually(10, || get(&g, "/robots.txt", &[]).text().contains("/changed")));
}

#[test]
fn tls_listener_serves_robots() {
    let (dir, _origin, cfg, listen, admin) = setup("tls", "");
    let certs = test_certs(&dir, "DNS:shop.test");
    let tls_port = free_port();
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "  admin:",
        &format!("  tls_listen:\n    - {{ addr: \"127.0.0.1:{tls_port}\", cert: srv.pem, key: srv.key }}\n  admin:"),
    );
    std::fs::write(&cfg, text).unwrap();
    let g = start(&cfg, listen, admin);
    served_from(&g, "origin");
    // The TLS listener comes up beside the plain one, not before it.
    assert!(wait_listening(format!("127.0.0.1:{tls_port}").parse().unwrap(), 20), "the TLS listener did not start");
    let out = Command::new("curl")
        .args(["-s", "-i", "--resolve", &format!("shop.test:{tls_port}:127.0.0.1"), "--cacert"])
        .arg(&certs.ca)
        .arg(format!("https://shop.test:{tls_port}/robots.txt"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/1.1 200") || text.starts_with("HTTP/2 200"), "{text}");
    assert!(text.contains("x-robots-source: origin") || text.contains("X-Robots-Source: origin"), "{text}");
    assert!(text.contains("Disallow: /private"), "{text}");
}

/// Runs `openssl` with `args` in `dir`, quietly, and insists it worked.

#[test]
fn tls_origin_with_sni_and_private_ca() {
    let dir = temp_dir("tls-origin");
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("robots.txt"), "User-agent: *\nDisallow: /tls-private\n").unwrap();
    std::fs::write(www.join("page"), "tls page").unwrap();
    let certs = test_certs(&dir, "DNS:shop.test");
    // A real TLS origin: openssl's test server, serving files from www/.
    let origin_port = free_port();
    let _origin = Proc(
        Command::new("openssl")
            .args(["s_server", "-quiet", "-WWW", "-accept", &origin_port.to_string()])
            .arg("-cert")
            .arg(&certs.cert)
            .arg("-key")
            .arg(&certs.key)
            .current_dir(&www)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl s_server"),
    );
    assert!(wait_listening(format!("127.0.0.1:{origin_port}").parse().unwrap(), 10));
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "http:\n  timeout: 2s\nproxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: state\n  refresh: 1s\n  origin_ca_file: ca.pem\nsites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: 127.0.0.1:{origin_port}\n      origin_tls: true\n      sni: shop.test\n"
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let g = start(&cfg, listen, admin);
    let r = served_from(&g, "origin");
    assert!(r.text().contains("/tls-private"), "{}", r.text());
    assert_eq!(get(&g, "/page", &[]).text(), "tls page", "proxied over TLS with SNI shop.test");
}

#[test]
fn sigterm_and_sigint_shut_down_gracefully() {
    for signal in ["-TERM", "-INT"] {
        let (_dir, _origin, cfg, listen, admin) = setup("signals", "");
        let mut g = start(&cfg, listen, admin);
        served_from(&g, "origin");
        let _ = Command::new("kill").args([signal, &g.proc.0.id().to_string()]).status();
        let exited = eventually(20, || matches!(g.proc.0.try_wait(), Ok(Some(_))));
        assert!(exited, "{signal}: did not exit within the grace period");
        assert_eq!(g.proc.0.try_wait().ok().flatten().and_then(|s| s.code()), Some(0), "{signal}");
    }
}

#[test]
fn bad_config_is_reported() {
    let dir = temp_dir("proxy-badcfg");
    let path = dir.join("config.yaml");
    std::fs::write(&path, "sites: []\nproxy:\n  listen: [\"127.0.0.1:1\"]\n  refresh: often\n").unwrap();
    let out = Command::new(support::proxy_bin()).arg("--config").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("often"), "{err}");
}

#[test]
fn an_origin_name_that_does_not_resolve_gets_502_not_a_panic() {
    // The second site's origin is a name no resolver knows (RFC 2606's
    // `.invalid`). Pingora's own peer constructor panics on such a name; the
    // gateway must answer 502 and keep serving the other site.
    let extra = "  - name: lost
    proxy:
      hosts: [lost.test]
      origin: nonexistent.invalid:80
";
    let (dir, _origin, cfg, listen, admin) = setup("unresolvable-origin", extra);
    let log = dir.join("proxy.log");
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cfg)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start robots-proxy");
    let g = Gate {
        proc: Proc(child),
        addr: format!("127.0.0.1:{listen}").parse().unwrap(),
        admin: format!("127.0.0.1:{admin}").parse().unwrap(),
    };
    assert!(wait_listening(g.addr, 20), "robots-proxy did not start");
    for _ in 0..3 {
        let r = request(g.addr, "GET", "lost.test", "/page", &[]).expect("a response, not a dropped connection");
        assert_eq!(r.status, 502, "{}", r.text());
    }
    assert_eq!(get(&g, "/page", &[]).text(), "origin page", "the other site is unaffected");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
    assert!(log.contains("nonexistent.invalid"), "the warning names the origin: {log}");
}
