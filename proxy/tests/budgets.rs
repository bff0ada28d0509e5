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

/// A gateway in front of `origin` for `shop.test`, on the own path or the
/// pipeline: `top` goes before `proxy:` (a database, a console), `proxy`
/// into `proxy:`, `site` into the site's `proxy:`. Returns it, its
/// listener, its admin listener and its config file.
fn gateway(
    name: &str,
    fast_path: bool,
    origin: SocketAddr,
    top: &str,
    proxy: &str,
    site: &str,
) -> (testkit::Proc, SocketAddr, SocketAddr, std::path::PathBuf) {
    let dir = temp_dir(&format!("{name}-{}", if fast_path { "fast" } else { "pipeline" }));
    let (listen, admin) = (free_port(), free_port());
    let top = top.replace("{dir}", &dir.display().to_string());
    let yaml = format!(
        "{top}proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  admin_token: secret\n  state_dir: state\n  refresh: 1s\n  grace_period: 1s\n  fast_path: {fast_path}\n{proxy}\
         sites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: {origin}\n{site}"
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    (spawn_proxy(&cfg, &[addr, admin]), addr, admin, cfg)
}

fn run(fast_path: bool) {
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    let (_proxy, addr, admin, _) = gateway(
        "budgets",
        fast_path,
        echo.addr,
        "",
        "",
        "      budgets:\n        - { purpose: ai-training, rate: 60/m, burst: 5 }\n",
    );
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
    // Following Retry-After over h2 too, the crawler is admitted again.
    std::thread::sleep(Duration::from_millis(1100));
    let again = curl("/h2/again");
    assert!(again.starts_with("http/2 200"), "{again}");
}

const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";

/// `crawl_delay: budget`: bingbot (which honours `Crawl-delay`) is held to
/// the delay its group of the served file states, and a new file's delay
/// takes over; Googlebot (which does not) is never held by `*`'s delay.
fn crawl_delay(fast_path: bool) {
    let echo = Echo::start();
    echo.set_robots(
        "User-agent: *\nCrawl-delay: 30\nDisallow: /private\n\nUser-agent: bingbot\nCrawl-delay: 3\nDisallow: /x\n",
    );
    let (_proxy, addr, admin, _) = gateway(
        "delay",
        fast_path,
        echo.addr,
        "",
        "  fleet: { heartbeat: 200ms, dead_after: 1s }\n",
        "      crawl_delay: budget\n",
    );
    let status = || {
        let s = request(admin, "GET", "localhost", "/status", &[("Authorization", "Bearer secret")]).unwrap();
        serde_json::from_slice::<serde_json::Value>(&s.body).unwrap()["sites"][0]["budgets"].clone()
    };
    assert!(eventually(20, || status()["each"][0]["budget"] == "bingbot: Crawl-delay 3s (line 6)"), "{}", status());
    assert_eq!(status()["each"][0]["crawl_delay"], true);
    assert_eq!(get(addr, "/a", BINGBOT).status, 200);
    let held = get(addr, "/b", BINGBOT);
    assert_eq!(held.status, 429);
    let retry: u64 = held.header("Retry-After").unwrap().parse().unwrap();
    assert!((2..=3).contains(&retry), "{retry}");
    assert!(held.text().contains("Crawl-delay 3s (line 6)"), "{}", held.text());
    // Googlebot ignores Crawl-delay: `*`'s 30 s never holds it.
    for i in 0..10 {
        assert_eq!(get(addr, &format!("/g/{i}"), GOOGLEBOT).status, 200);
    }
    // bingbot's robots.txt is never throttled.
    for _ in 0..10 {
        assert_eq!(get(addr, "/robots.txt", BINGBOT).status, 200);
    }
    // Following Retry-After, it is admitted.
    std::thread::sleep(Duration::from_secs(retry) + Duration::from_millis(100));
    assert_eq!(get(addr, "/c", BINGBOT).status, 200);
    // The file drops bingbot's delay: the edge drops it too.
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    assert!(eventually(20, || status().is_null()), "no budget left: {}", status());
    for i in 0..10 {
        assert_eq!(get(addr, &format!("/free/{i}"), BINGBOT).status, 200);
    }
}

#[test]
fn crawl_delay_is_the_budget_on_the_fast_path() {
    crawl_delay(true);
}

#[test]
fn crawl_delay_is_the_budget_on_the_pipeline() {
    crawl_delay(false);
}

/// Throttled requests in the compliance ledger, on both request paths:
/// an allowed request over budget is `throttled`, a disallowed one stays a
/// `violation`; `robots-monitor compliance` and the console's Compliance
/// pages (HTML and JSON) show them beside obeyed and violations.
fn throttled_in_the_ledger(fast_path: bool) {
    let Some(monitor) = support::monitor_bin() else { return };
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    let console = free_port();
    let (_proxy, addr, _admin, cfg) = gateway(
        "budgets-ledger",
        fast_path,
        echo.addr,
        &format!("database: \"{{dir}}/history.db\"\nconsole: {{ listen: \"127.0.0.1:{console}\" }}\n"),
        "  ledger: { flush: 200ms }\n",
        "      budgets:\n        - { crawler: GPTBot, rate: 1/h, burst: 2 }\n",
    );
    let database = cfg.with_file_name("history.db").display().to_string();
    // From the store, not passed through: a request judged before the
    // gateway has a copy is unjudged, whatever the budget answered.
    let stored = || get(addr, "/robots.txt", BROWSER).header("X-Robots-Source") == Some("origin");
    assert!(eventually(20, stored), "the gateway never served a copy of its own");
    assert_eq!(get(addr, "/robots.txt", GPTBOT).status, 200);
    let statuses: Vec<u16> =
        ["/a", "/b", "/c", "/private/d", "/e"].iter().map(|p| get(addr, p, GPTBOT).status).collect();
    assert_eq!(statuses, [200, 200, 429, 429, 429]);
    let rows = |class: &str| {
        scalar(
            &database,
            &format!(
                "SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT) FROM ledger WHERE crawler = 'GPTBot' AND class = '{class}'"
            ),
        )
    };
    assert!(eventually(20, || rows("throttled") == 2), "throttled rows: {}", rows("throttled"));
    assert_eq!(rows("violation"), 1, "a disallowed request over budget stays a violation");
    assert_eq!(rows("obeyed"), 2);

    let out =
        std::process::Command::new(&monitor).arg("--config").arg(&cfg).args(["compliance", "shop"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("GPTBot") && text.contains("2 throttled at the edge (429)"), "{text}");
    let out = std::process::Command::new(&monitor)
        .arg("--config")
        .arg(&cfg)
        .args(["compliance", "shop", "--output", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpt = json.as_array().and_then(|c| c.iter().find(|c| c["crawler"] == "GPTBot")).cloned();
    assert_eq!(gpt.as_ref().map(|g| g["throttled"].clone()), Some(2.into()), "{json}");

    // The console: the overview and the site page count them.
    let console_addr: SocketAddr = format!("127.0.0.1:{console}").parse().unwrap();
    let mut serve = Proc(
        std::process::Command::new(&monitor)
            .arg("--config")
            .arg(&cfg)
            .arg("serve")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_listening(console_addr, 20), "the console listens");
    let api = request(console_addr, "GET", "localhost", "/api/compliance", &[]).unwrap();
    let api: serde_json::Value = serde_json::from_slice(&api.body).unwrap();
    assert_eq!(api["sites"][0]["throttled"], 2, "{api}");
    let page = request(console_addr, "GET", "localhost", "/sites/shop/compliance", &[]).unwrap().text();
    assert!(page.contains(">Throttled</th>"), "the site page has the column");
    let row = page.lines().find(|l| l.contains(">GPTBot</a>")).unwrap_or_else(|| panic!("{page}"));
    // Requests 5 (the robots.txt read is no request), obeyed 2, grace 0,
    // violations 1, unjudged 0, throttled 2.
    assert!(row.contains(r#"<td class="num">2</td><td class="num">0</td><td class="num blocked">1</td><td class="num">0</td><td class="num">2</td>"#), "{row}");
    serve.terminate();
}

#[test]
fn throttled_requests_are_in_the_ledger_on_the_fast_path() {
    throttled_in_the_ledger(true);
}

#[test]
fn throttled_requests_are_in_the_ledger_on_the_pipeline() {
    throttled_in_the_ledger(false);
}
