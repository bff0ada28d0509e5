//! The shipped alert rules and dashboard against a real Prometheus
//! (Debian's `prometheus`), scraping a real gateway and a real monitor on
//! loopback that share one database: an outage of the origin's robots.txt
//! is driven, and the matching alerts must fire through Prometheus's API;
//! then every panel of `deploy/grafana/robotsgate.json` is evaluated and
//! must return series.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;
use support::{monitor_bin, spawn_proxy};

const ROBOTS: &str = "User-agent: *\nDisallow: /private\n";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const FEED: &str = r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.2/32"}]}"#;

/// A query string value, percent-encoded.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Prometheus's answer to an API path, as JSON.
fn api(prometheus: SocketAddr, path: &str) -> serde_json::Value {
    request(prometheus, "GET", "127.0.0.1", path, &[])
        .and_then(|r| serde_json::from_slice(&r.body).ok())
        .unwrap_or_default()
}

/// The shipped rules with every `for:` cut to nothing: the test waits
/// seconds, not the half hours an SRE would.
fn rules_now(dir: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rules = std::fs::read_to_string(root.join("deploy/prometheus/rules.yaml")).unwrap();
    let cut: Vec<String> = rules
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("for:") {
                l.split("for:").next().unwrap().to_string() + "for: 0s"
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(dir.join("rules.yaml"), cut.join("\n") + "\n").unwrap();
}

#[test]
fn alerts_fire_and_every_dashboard_panel_has_series() {
    if Command::new("prometheus").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "prometheus is required under CI (scripts/services.sh installs it)");
        eprintln!("prometheus not installed; skipping");
        return;
    }
    let Some(monitor) = monitor_bin() else { return };
    let dir = temp_dir("prometheus-live");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    origin.set("/page", Reply::ok("a page"));
    origin.set("/googlebot.json", Reply::ok(FEED));
    let (listen, admin, console, prom, closed) = (free_port(), free_port(), free_port(), free_port(), free_port());
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "database: shared.db
interval: 1s
console: {{ listen: \"127.0.0.1:{console}\" }}
channels:
  - name: ops
    webhook: {hook}
    severities: [critical, warning, info]
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state
  refresh: 1s
  identity: {{ refresh: 1s, reverse_dns: false }}
  ledger: {{ flush: 300ms }}
crawlers:
  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,
      verify: {{ ip_ranges: [\"{feed}\"] }} }}
sites:
  - name: shop
    url: {robots}
    proxy: {{ hosts: [shop.test], origin: {origin_addr}, enforce: true }}
  - name: down
    proxy: {{ hosts: [down.test], origin: \"127.0.0.1:{closed}\" }}
",
            hook = origin.url("/hook"),
            feed = origin.url("/googlebot.json"),
            robots = origin.url("/robots.txt"),
            origin_addr = origin.addr,
        ),
    )
    .unwrap();
    let gateway: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let console: SocketAddr = format!("127.0.0.1:{console}").parse().unwrap();
    let prometheus: SocketAddr = format!("127.0.0.1:{prom}").parse().unwrap();
    let _gateway = spawn_proxy(&cfg, &[gateway, admin]);
    let _monitor = Proc(
        Command::new(&monitor)
            .args(["--config", cfg.to_str().unwrap(), "run"])
            .env("ROBOTSGATE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_listening(console, 20), "the monitor's console did not start");

    rules_now(&dir);
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}
rule_files: [rules.yaml]
scrape_configs:
  - job_name: gateway
    static_configs: [{{ targets: [\"{admin}\"] }}]
  - job_name: monitor
    static_configs: [{{ targets: [\"{console}\"] }}]
"
        ),
    )
    .unwrap();
    let _prometheus = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address={prometheus}"))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        eventually(30, || request(prometheus, "GET", "127.0.0.1", "/-/ready", &[]).is_some_and(|r| r.status == 200)),
        "Prometheus did not start"
    );
    // Both targets up.
    assert!(
        eventually(30, || {
            let t = api(prometheus, "/api/v1/targets");
            t["data"]["activeTargets"].as_array().is_some_and(|a| a.len() == 2 && a.iter().all(|t| t["health"] == "up"))
        }),
        "targets: {}",
        api(prometheus, "/api/v1/targets")
    );

    // Traffic: browsers, a verified crawler refused by robots.txt, and an
    // origin that is down.
    let get = |from: &str, host: &str, path: &str, agent: &str| {
        request_from(Some(from.parse().unwrap()), gateway, "GET", host, path, &[("User-Agent", agent)])
    };
    assert!(
        eventually(30, || get("127.0.0.1", "shop.test", "/robots.txt", "curl/8")
            .is_some_and(|r| r.header("X-Robots-Source") == Some("origin"))),
        "the gateway serves robots.txt from the store"
    );
    assert!(eventually(30, || {
        let s = request(admin, "GET", "admin", "/status", &[("Authorization", "Bearer secret")])
            .and_then(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
            .unwrap_or_default();
        s["identity"]["feeds"].as_array().is_some_and(|f| f.iter().any(|f| f["prefixes"] == 1))
    }));
    for _ in 0..5 {
        get("127.0.0.1", "shop.test", "/page", "Mozilla/5.0 Firefox/120.0");
        get("127.0.0.1", "down.test", "/page", "Mozilla/5.0 Firefox/120.0");
    }
    get("127.0.0.2", "shop.test", "/robots.txt", GOOGLEBOT);
    assert_eq!(get("127.0.0.2", "shop.test", "/private/x", GOOGLEBOT).map(|r| r.status), Some(403));

    // The outage: robots.txt answers 503. The gateway keeps crawlers on the
    // last good copy; the monitor sees the site blocked.
    origin.set("/robots.txt", Reply::status(503));
    assert!(
        eventually(30, || get("127.0.0.1", "shop.test", "/robots.txt", "curl/8")
            .is_some_and(|r| r.header("X-Robots-Source") == Some("last-good"))),
        "the gateway fell back to the last good copy"
    );
    let firing = |name: &str| {
        api(prometheus, "/api/v1/alerts")["data"]["alerts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["labels"]["alertname"] == name && x["state"] == "firing"))
    };
    assert!(
        eventually(60, || {
            get("127.0.0.1", "shop.test", "/robots.txt", "curl/8");
            get("127.0.0.1", "down.test", "/page", "Mozilla/5.0 Firefox/120.0");
            firing("RobotsTxtServedFromLastGood") && firing("RobotsTxtBlocked") && firing("GatewayOriginFailures")
        }),
        "alerts: {}",
        api(prometheus, "/api/v1/alerts")
    );

    // Every panel's query returns series.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("deploy/grafana/robotsgate.json")).unwrap()).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["targets"].as_array())
        .flatten()
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 15, "{} panels", exprs.len());
    let mut empty = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for expr in &exprs {
        // Rates need two scrapes of a new series; give each a while.
        let has = loop {
            let r = api(prometheus, &format!("/api/v1/query?query={}", encode(expr)));
            assert_eq!(r["status"], "success", "{expr}: {r}");
            if r["data"]["result"].as_array().is_some_and(|a| !a.is_empty()) {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        if !has {
            empty.push(expr.clone());
        }
    }
    assert!(empty.is_empty(), "panels without series: {empty:#?}");
}

/// A fresh gateway's first scrape has every gateway series a shipped rule
/// or dashboard panel names whose labels are known at start (a site's, a
/// path's, a phase's): a rule reads 0, not nothing, before the first event.
#[test]
fn a_fresh_scrape_has_every_series_the_rules_name() {
    let dir = temp_dir("fresh-scrape");
    let (listen, admin) = (free_port(), free_port());
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "database: {}\nproxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: {}\n  ledger: {{}}\nsites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: 127.0.0.1:1\n",
            dir.join("h.db").display(),
            dir.join("state").display()
        ),
    )
    .unwrap();
    let admin_addr: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let _g = spawn_proxy(&cfg, &[admin_addr]);
    let scrape = request(admin_addr, "GET", "localhost", "/metrics", &[]).expect("metrics").text();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shipped = std::fs::read_to_string(root.join("deploy/prometheus/rules.yaml")).unwrap()
        + &std::fs::read_to_string(root.join("deploy/grafana/robotsgate.json")).unwrap();
    let mut named: Vec<String> = Vec::new();
    for (i, _) in shipped.match_indices("robotsgate_") {
        let name: String =
            shipped[i..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit()).collect();
        let name =
            ["_bucket", "_count", "_sum"].iter().fold(name, |n, s| n.strip_suffix(s).map_or(n.clone(), str::to_string));
        if !named.contains(&name) {
            named.push(name);
        }
    }
    // The monitor's (its places' and sitemaps' too), and series labelled by crawler or by feed, appear
    // with their first event; everything else is the gateway's from start.
    let later = |n: &str| {
        n.starts_with("robotsgate_monitor_")
            || n.starts_with("robotsgate_place_")
            || n.starts_with("robotsgate_sitemap_")
            || n.starts_with("robotsgate_identity_")
            || [
                "robotsgate_crawler_requests_total",
                "robotsgate_enforced_total",
                "robotsgate_throttled_total",
                "robotsgate_gateway_violations_total",
                "robotsgate_crawler_violations_recent",
                "robotsgate_crawler_violations_total",
            ]
            .contains(&n)
    };
    let missing: Vec<&String> =
        named.iter().filter(|n| !later(n)).filter(|n| !scrape.lines().any(|l| l.starts_with(n.as_str()))).collect();
    assert!(missing.is_empty(), "named by a shipped rule or panel, absent from a fresh scrape: {missing:?}");
    assert!(scrape.contains("robotsgate_upstream_duration_seconds_count{phase=\"connect\"} 0"), "{scrape}");
    assert!(scrape.contains("robotsgate_robots_held{site=\"shop\"} 0"), "{scrape}");
}
