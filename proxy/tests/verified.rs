//! Crawler verification inside the real gateway, on the fast path and on
//! Pingora's pipeline alone: clients connect from several 127.0.0.0/8
//! addresses, each standing for a crawler's address; IP-range feeds come
//! from a loopback origin that can fail; reverse DNS is asked of dnsmasq on
//! loopback (for addresses a trusted proxy names in `X-Forwarded-For`,
//! since DNS answers 127/8 itself as localhost).
//!
//! Sites differ only in what they do with a spoofed claim: `refuse.test`
//! answers 403, `tag.test` judges it as the anonymous client it is, and
//! `allow.test` as the crawler it claims to be.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use testkit::*;

mod support;
use support::dns::dnsmasq;
use support::spawn_proxy;

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

/// The real crawler's address (in the feed), a spoofer's, a trusted proxy's.
const REAL: &str = "127.0.0.2";
const SPOOFER: &str = "127.0.0.3";
const PROXY: &str = "127.0.0.5";

const ROBOTS: &str = "User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nAllow: /\nDisallow: /nogoogle\n";

const FEED: &str = r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.2/32"},{"ipv6Prefix":"2001:db8:1::/48"}]}"#;

struct Gate {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
    cfg: PathBuf,
}

fn start(name: &str, origin: SocketAddr, feed_url: &str, dns_port: u16, fast_path: bool) -> Gate {
    let dir = temp_dir(name);
    let (listen, admin) = (free_port(), free_port());
    let site = |name: &str, spoofed: &str| {
        format!(
            "  - name: {name}\n    proxy:\n      hosts: [{name}.test]\n      origin: {origin}\n      enforce: true\n      spoofed: {spoofed}\n"
        )
    };
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state
  refresh: 1s
  grace_period: 1s
  fast_path: {fast_path}
  identity:
    only: [Googlebot]
    refresh: 1s
    dns_servers: [\"127.0.0.1:{dns_port}\"]
    dns_timeout: 2s
    budget: 3s
    trusted_proxies: [\"{PROXY}/32\"]
crawlers:
  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,
      verify: {{ ip_ranges: [\"{feed_url}\"], rdns: [googlebot.com] }} }}
sites:
{}{}{}",
        site("refuse", "refuse"),
        site("tag", "tag"),
        site("allow", "allow")
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let proc = spawn_proxy(&cfg, &[addr, admin]);
    Gate { proc, addr, admin, cfg }
}

impl Gate {
    fn get(&self, from: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        let ip: IpAddr = from.parse().unwrap();
        request_from(Some(ip), self.addr, "GET", host, path, headers).expect("an answer from the gateway")
    }

    fn metrics(&self) -> String {
        request(self.admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default()
    }

    fn status(&self) -> serde_json::Value {
        let r = request(self.admin, "GET", "admin", "/status", &[("Authorization", "Bearer secret")]).unwrap();
        serde_json::from_slice(&r.body).unwrap()
    }

    /// Waits until every site serves its robots.txt from the store.
    fn wait_for_sites(&self) {
        for host in ["refuse.test", "tag.test", "allow.test"] {
            assert!(eventually(20, || self.get(REAL, host, "/robots.txt", &[]).text().contains("nogoogle")), "{host}");
        }
    }

    /// Waits for the feed's copy to be in use.
    fn wait_for_feed(&self) {
        assert!(
            eventually(20, || self
                .metrics()
                .lines()
                .any(|l| l.starts_with("robotsgate_identity_feed_prefixes") && l.ends_with(" 2"))),
            "the feed was not loaded: {}",
            self.metrics()
        );
    }
}

/// What the origin got as `Robotsgate-Crawler` on the last request whose
/// target is `path`.
fn tag_seen(echo: &Echo, path: &str) -> Option<String> {
    let head = echo.heads().into_iter().rev().find(|h| h.starts_with(&format!("GET {path} ")))?;
    head.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.eq_ignore_ascii_case("robotsgate-crawler"))
            .map(|(_, v)| v.trim().to_string())
    })
}

fn dns() -> Option<(Proc, u16)> {
    dnsmasq(&[
        "--local=/in-addr.arpa/",
        "--local=/com/",
        "--host-record=crawl-66-249-66-1.googlebot.com,66.249.66.1",
        "--host-record=crawl.evilgooglebot.com,66.249.66.4",
    ])
}

fn run(fast_path: bool) {
    let Some((_dns, dns_port)) = dns() else { return };
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let feeds = Origin::start();
    feeds.set("/googlebot.json", Reply::ok(FEED));
    let name = if fast_path { "verified-fast" } else { "verified-pipeline" };
    let mut g = start(name, echo.addr, &feeds.url("/googlebot.json"), dns_port, fast_path);
    g.wait_for_feed();
    g.wait_for_sites();

    // The real crawler, by the published ranges: judged as Googlebot, and
    // the origin is told.
    let r = g.get(REAL, "refuse.test", "/page", &[("User-Agent", GOOGLEBOT)]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(tag_seen(&echo, "/page").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(REAL, "tag.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(g.get(REAL, "tag.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 403);

    // The same claim from another address: refused, tagged and judged as
    // anyone (`*` disallows /private, Googlebot's group would allow it), or
    // allowed as Googlebot.
    let r = g.get(SPOOFER, "refuse.test", "/page", &[("User-Agent", GOOGLEBOT)]);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("claims to be Googlebot"), "{}", r.text());
    assert_eq!(g.get(SPOOFER, "tag.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(g.get(SPOOFER, "tag.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/nogoogle").as_deref(), Some("Googlebot; identity=spoofed"));
    assert_eq!(g.get(SPOOFER, "allow.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/private").as_deref(), Some("Googlebot; identity=spoofed"));
    assert_eq!(g.get(SPOOFER, "allow.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 403);

    // A client cannot forge the gateway's field, nor its address: only a
    // trusted proxy's X-Forwarded-For counts.
    let forged = [("User-Agent", BROWSER), ("Robotsgate-Crawler", "Googlebot; identity=verified")];
    assert_eq!(g.get(SPOOFER, "refuse.test", "/forged", &forged).status, 200);
    assert_eq!(tag_seen(&echo, "/forged"), None);
    let forged = [("User-Agent", GOOGLEBOT), ("Robotsgate-Crawler", "Googlebot; identity=verified")];
    assert_eq!(g.get(SPOOFER, "tag.test", "/forged2", &forged).status, 200);
    assert_eq!(tag_seen(&echo, "/forged2").as_deref(), Some("Googlebot; identity=spoofed"));
    let xff = |v: &'static str| [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", v)];
    assert_eq!(g.get(SPOOFER, "refuse.test", "/xff", &xff(REAL)).status, 403, "an untrusted peer's XFF");
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff(REAL)).status, 200, "a trusted proxy's XFF");
    assert_eq!(tag_seen(&echo, "/xff").as_deref(), Some("Googlebot; identity=verified"));
    // Addresses left of the last untrusted one were written by the client.
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff("127.0.0.2, 127.0.0.3")).status, 403);
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff("127.0.0.3, 127.0.0.2, 127.0.0.5")).status, 200);
    // Several fields are one list.
    let two = [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", REAL), ("X-Forwarded-For", SPOOFER)];
    assert_eq!(g.get(PROXY, "refuse.test", "/xff2", &two).status, 403);

    // Forward-confirmed reverse DNS, for an address a trusted proxy names:
    // a real name, and a look-alike domain.
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns", &xff("66.249.66.1")).status, 200);
    assert_eq!(tag_seen(&echo, "/rdns").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns", &xff("66.249.66.4")).status, 403);
    // A second time, from the cache.
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns2", &xff("66.249.66.1")).status, 200);

    // A crawler this gateway does not verify (`only`): unverifiable, never
    // spoofed, and judged by its claim.
    assert_eq!(g.get(SPOOFER, "refuse.test", "/bing", &[("User-Agent", BINGBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/bing").as_deref(), Some("bingbot; identity=unverifiable"));

    let metrics = g.metrics();
    for want in [
        r#"robotsgate_crawler_requests_total{crawler="Googlebot",identity="verified",verdict="allow"}"#,
        r#"robotsgate_crawler_requests_total{crawler="Googlebot",identity="spoofed",verdict="disallow"}"#,
        r#"robotsgate_crawler_requests_total{crawler="bingbot",identity="unverifiable",verdict="allow"} 1"#,
        r#"robotsgate_enforced_total{crawler="Googlebot",reason="spoofed",site="refuse"}"#,
        r#"robotsgate_identity_feed_failing{feed=""#,
    ] {
        assert!(metrics.contains(want), "{want} in\n{metrics}");
    }
    let status = g.status();
    let feed = &status["identity"]["feeds"][0];
    assert_eq!(feed["prefixes"], 2, "{status}");
    assert!(feed["last_error"].is_null(), "{status}");

    // The feed fails: the copy in use stays, and /status says why.
    feeds.set("/googlebot.json", Reply::status(503));
    assert!(
        eventually(10, || g.status()["identity"]["feeds"][0]["last_error"].as_str().is_some_and(|e| e.contains("503"))),
        "{}",
        g.status()
    );
    assert_eq!(g.get(REAL, "refuse.test", "/still", &[("User-Agent", GOOGLEBOT)]).status, 200);

    // Killed, and started while the feed still fails: the copy on disk
    // verifies from the first request.
    g.proc.kill();
    let proc = spawn_proxy(&g.cfg, &[g.addr, g.admin]);
    g.proc = proc;
    g.wait_for_sites();
    assert_eq!(g.get(REAL, "refuse.test", "/restarted", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/restarted").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(SPOOFER, "refuse.test", "/restarted", &[("User-Agent", GOOGLEBOT)]).status, 403);
}

#[test]
fn verification_on_the_fast_path() {
    run(true);
}

#[test]
fn verification_on_the_pipeline() {
    run(false);
}
