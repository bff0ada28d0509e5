//! Crawl budgets through the real gateway, on the own path and on
//! Pingora's pipeline: a crawler held to its burst then answered 429 with a
//! `Retry-After` it can follow to be admitted again; `/robots.txt` fetched
//! by the same crawler many times faster, every answer a 200; browsers and
//! crawlers no budget names untouched; the throttled counter by site,
//! crawler, purpose and identity.

use std::net::SocketAddr;
use std::time::Duration;

use testkit::*;

mod support;
use support::spawn_proxy;

const GPTBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

fn get(addr: SocketAddr, path: &str, ua: &str) -> Response {
    request(addr, "GET", "shop.test", path, &[("User-Agent", ua)]).expect("an answer")
}

fn run(fast_path: bool) {
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    let dir = temp_dir(if fast_path { "budgets-fast" } else { "budgets-pipeline" });
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  admin_token: secret\n  state_dir: state\n  refresh: 1s\n  grace_period: 1s\n  fast_path: {fast_path}\n\
         sites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: {}\n      budgets:\n        - {{ purpose: ai-training, rate: 60/m, burst: 5 }}\n",
        echo.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let _proxy = spawn_proxy(&cfg, &[addr, admin]);
    assert!(eventually(20, || get(addr, "/robots.txt", BROWSER).status == 200), "robots.txt served");

    // The burst, then 429 with Retry-After, and the origin never asked.
    let before = echo.completed().len();
    let answers: Vec<Response> = (0..8).map(|i| get(addr, &format!("/page/{i}"), GPTBOT)).collect();
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(&statuses[..5], &[200; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    let throttled = &answers[5];
    let retry: u64 = throttled.header("Retry-After").and_then(|v| v.parse().ok()).expect("Retry-After in seconds");
    assert!((1..=2).contains(&retry), "60/m admits one a second: {retry}");
    assert!(throttled.text().contains("crawl budget for GPTBot"), "{}", throttled.text());
    assert_eq!(echo.completed().len() - before, 5, "throttled requests never reach the origin");

    // robots.txt, many times faster, is never throttled.
    for _ in 0..50 {
        assert_eq!(get(addr, "/robots.txt", GPTBOT).status, 200);
    }
    // Browsers and crawlers no budget names pass.
    for i in 0..20 {
        assert_eq!(get(addr, &format!("/b/{i}"), BROWSER).status, 200);
        assert_eq!(get(addr, &format!("/g/{i}"), GOOGLEBOT).status, 200);
    }
    // Following Retry-After, the crawler is admitted again.
    std::thread::sleep(Duration::from_secs(retry) + Duration::from_millis(100));
    assert_eq!(get(addr, "/page/again", GPTBOT).status, 200);

    let metrics = request(admin, "GET", "localhost", "/metrics", &[]).unwrap().text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("robotsgate_throttled_total{crawler=\"GPTBot\",identity=\"unchecked\",purpose=\"ai-training\",site=\"shop\"}"))
        .unwrap_or_else(|| panic!("{metrics}"));
    let n: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 3, "{line}");
    // /status says the same, with the budget and this gateway's share.
    let status = request(admin, "GET", "localhost", "/status", &[("Authorization", "Bearer secret")]).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&status.body).unwrap();
    let budgets = &json["sites"][0]["budgets"];
    assert_eq!(budgets["throttled"].as_u64(), Some(n), "{budgets}");
    assert_eq!(budgets["each"][0]["rate"], "60/m");
    assert_eq!(budgets["each"][0]["budget"], "ai-training: 60/m (burst 5)");
    assert_eq!(budgets["each"][0]["share"], 1.0);
}

#[test]
fn budgets_hold_on_the_fast_path() {
    run(true);
}

#[test]
fn budgets_hold_on_the_pipeline() {
    run(false);
}

/// The same budget over HTTP/2 (the TLS listeners, own path), with curl as
/// a real h2 client.
#[test]
fn budgets_hold_over_h2() {
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    let dir = temp_dir("budgets-h2");
    let certs = test_certs(&dir, "DNS:shop.test");
    let (listen, tls, admin) = (free_port(), free_port(), free_port());
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: state\n  refresh: 1s\n  grace_period: 1s\n\
         \x20 tls_listen:\n    - addr: 127.0.0.1:{tls}\n      cert: {}\n      key: {}\n\
         sites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: {}\n      budgets:\n        - {{ crawler: GPTBot, rate: 60/m, burst: 3 }}\n",
        certs.cert.display(),
        certs.key.display(),
        echo.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let plain: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let tls_addr: SocketAddr = format!("127.0.0.1:{tls}").parse().unwrap();
    let admin_addr: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let _proxy = spawn_proxy(&cfg, &[plain, tls_addr, admin_addr]);
    assert!(eventually(20, || get(plain, "/robots.txt", BROWSER).status == 200));
    let curl = |path: &str| {
        let out = std::process::Command::new("curl")
            .args(["-sk", "--http2", "--max-time", "20", "-D", "-", "-o", "/dev/null", "-A", GPTBOT])
            .args(["--resolve", &format!("shop.test:{tls}:127.0.0.1"), &format!("https://shop.test:{tls}{path}")])
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).to_ascii_lowercase()
    };
    let heads: Vec<String> = (0..5).map(|i| curl(&format!("/h2/{i}"))).collect();
    for h in &heads[..3] {
        assert!(h.starts_with("http/2 200"), "{h}");
    }
    assert!(heads[3].starts_with("http/2 429") && heads[3].contains("retry-after: 1"), "{}", heads[3]);
    for _ in 0..20 {
        assert!(curl("/robots.txt").starts_with("http/2 200"));
    }
}
