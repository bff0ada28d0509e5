//! A site's AI policy through the real gateway, on the own path and on
//! Pingora's pipeline alone: the robots.txt it compiles to, the
//! `Content-Usage` header on proxied pages, and enforcement (403, 402,
//! 429), checked to agree with each other for every catalogued crawler of
//! every purpose the policy speaks of.

use std::net::SocketAddr;
use std::process::Command;

use robotsgate_crawlers::Catalogue;
use testkit::*;

mod support;
use support::spawn_proxy;

const ORIGIN_ROBOTS: &str = "User-agent: *\nDisallow: /private\n";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

fn config(origin: SocketAddr, fast_path: bool) -> (String, SocketAddr) {
    config_with(origin, fast_path, "", 0)
}

/// [`config`] with more sites (`more`) and the admin listener on `admin`
/// (a free port when 0).
fn config_with(origin: SocketAddr, fast_path: bool, more: &str, admin: u16) -> (String, SocketAddr) {
    let listen = free_port();
    let admin = if admin == 0 { free_port() } else { admin };
    let site = |name: &str, policy: &str| {
        format!(
            "  - name: {name}\n    proxy:\n      hosts: [{name}.test]\n      origin: {origin}\n      ai_policy: {{ {policy} }}\n"
        )
    };
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  admin_token: secret\n  state_dir: state\n  refresh: 1s\n  grace_period: 1s\n  fast_path: {fast_path}\nsites:\n{}{}{}{}{more}",
        site("shop", "ai-training: deny, enforce: refuse"),
        site(
            "pay",
            "ai-training: deny, ai-search: deny, enforce: pay, payment-body: \"Licenses: https://pay.test/terms\\n\", payment-headers: { Link: \"<https://pay.test/terms>; rel=terms\" }"
        ),
        site("slow", "ai-training: deny, enforce: slow, retry-after: 2m"),
        site("free", "ai-training: deny"),
    );
    (yaml, format!("127.0.0.1:{listen}").parse().unwrap())
}

fn get(addr: SocketAddr, host: &str, path: &str, ua: &str) -> Response {
    request(addr, "GET", host, path, &[("User-Agent", ua)]).expect("an answer")
}

fn run(fast_path: bool) {
    let echo = Echo::start();
    echo.set_robots(ORIGIN_ROBOTS);
    echo.script("/own", b"HTTP/1.1 200 OK\r\nContent-Usage: train-ai=y\r\nContent-Length: 2\r\n\r\nok", false);
    let dir = temp_dir(if fast_path { "ai-fast" } else { "ai-pipeline" });
    // A second origin whose owner wrote a group for GPTBot that lets it in.
    let owner = Echo::start();
    owner.set_robots(
        "User-agent: *\nContent-Signal: ai-train=yes\nDisallow: /private\n\nUser-agent: GPTBot\nAllow: /\n",
    );
    // A third whose owner lets GPTBot into one folder, on an enforcing site.
    let folder = Echo::start();
    folder.set_robots("User-agent: *\nDisallow: /private\n\nUser-agent: GPTBot\nAllow: /public/\nDisallow: /\n");
    // A fourth whose file is just under 500 KiB: the policy cannot fit beside it.
    let big = Echo::start();
    let mut big_file = String::from("User-agent: *\n");
    let mut n = 0;
    while big_file.len() < rules::parse::MAX_FILE_BYTES - 100 {
        n += 1;
        big_file.push_str(&format!("Disallow: /p/{n}/\n"));
    }
    big.set_robots(&big_file);
    let more = format!(
        "  - name: big\n    proxy:\n      hosts: [big.test]\n      origin: {}\n      ai_policy: {{ ai-training: deny, enforce: refuse }}\n",
        big.addr
    ) + &format!(
        "  - name: owner\n    proxy:\n      hosts: [owner.test]\n      origin: {}\n      ai_policy: {{ ai-training: deny }}\n\
         \x20 - name: folder\n    proxy:\n      hosts: [folder.test]\n      origin: {}\n      ai_policy: {{ ai-training: deny, enforce: refuse }}\n",
        owner.addr, folder.addr
    );
    let admin = free_port();
    let (yaml, addr) = config_with(echo.addr, fast_path, &more, admin);
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, &yaml).unwrap();
    let _g = spawn_proxy(&cfg, &[addr]);
    for host in ["shop.test", "pay.test", "slow.test", "free.test"] {
        assert!(
            eventually(30, || get(addr, host, "/robots.txt", BROWSER).text().contains("Content-Signal")),
            "{host} never served its policy"
        );
    }

    // The compiled file: the owner's rules, the policy's groups and lines.
    let served = get(addr, "shop.test", "/robots.txt", BROWSER).text();
    assert!(served.starts_with(ORIGIN_ROBOTS), "{served}");
    for want in [
        "User-agent: GPTBot",
        "User-agent: ClaudeBot",
        "User-agent: Google-Extended",
        "Content-Signal: search=yes, ai-input=yes, ai-train=no",
        "Content-Usage: / train-ai=n, ai-use=y, search=y",
    ] {
        assert!(served.contains(want), "{want} in\n{served}");
    }
    let robots = rules::Robots::parse(served.as_bytes());
    // The gateway's own output passes the project's own lint.
    let findings = rules::lint(served.as_bytes());
    assert!(!findings.iter().any(|d| d.code == rules::lint::Code::EmptyGroup), "{findings:?}");

    // The header on every proxied page, unless the origin states its own.
    let page = get(addr, "shop.test", "/page", BROWSER);
    assert_eq!(page.status, 200);
    assert_eq!(page.header("Content-Usage"), Some("train-ai=n, ai-use=y, search=y"));
    assert_eq!(get(addr, "shop.test", "/own", BROWSER).header("Content-Usage"), Some("train-ai=y"));

    // File, header and enforcement agree for every crawler of every purpose
    // the policy speaks of.
    let mut checked = 0;
    for c in Catalogue::builtin().crawlers().iter().filter(|c| c.sends) {
        let denied = match c.purpose.as_str() {
            "ai-training" => true,
            "search" | "ai-search" | "user-fetch" => false,
            _ => continue,
        };
        let ua = format!("Mozilla/5.0 (compatible; {}/1.0)", c.token);
        let status = get(addr, "shop.test", "/page", &ua).status;
        assert_eq!(status, if denied { 403 } else { 200 }, "{} ({})", c.token, c.purpose.as_str());
        // A token Google's reading cuts short (`AI2Bot` is read as `AI`)
        // cannot be named in the file as Google reads it; the policy alone
        // decides for it.
        let nameable = rules::parse::agent_key(c.token.as_bytes()).is_some_and(|k| k.len() == c.token.len());
        if nameable {
            assert_eq!(robots.crawler(&c.token).is_allowed("/page"), !denied, "{} in the file", c.token);
        }
        checked += 1;
    }
    assert!(checked > 20, "{checked}");
    let r = get(addr, "shop.test", "/page", "GPTBot/1.1");
    assert!(r.text().contains("AI policy does not welcome GPTBot (ai-training)"), "{}", r.text());

    // 402 with the owner's terms; 429 with Retry-After; a policy stated
    // without enforcement; the owner's own rules still enforced nowhere here.
    let r = get(addr, "pay.test", "/page", "Mozilla/5.0 (compatible; PerplexityBot/1.0)");
    assert_eq!(r.status, 402);
    assert_eq!(r.header("Link"), Some("<https://pay.test/terms>; rel=terms"));
    assert_eq!(r.text(), "Licenses: https://pay.test/terms\n");
    assert_eq!(get(addr, "pay.test", "/page", "Googlebot/2.1").status, 200);
    let r = get(addr, "slow.test", "/page", "ClaudeBot/1.0");
    assert_eq!((r.status, r.header("Retry-After")), (429, Some("120")));
    assert_eq!(get(addr, "free.test", "/page", "GPTBot/1.1").status, 200);

    // Where the origin's file says otherwise, the owner's lines stand and
    // /status names the disagreement.
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let status = || -> serde_json::Value {
        request(admin, "GET", "admin", "/status", &[("Authorization", "Bearer secret")])
            .and_then(|r| serde_json::from_slice(&r.body).ok())
            .unwrap_or_default()
    };
    let conflicts = || {
        status()["sites"]
            .as_array()
            .and_then(|sites| sites.iter().find(|s| s["site"] == "owner").cloned())
            .map(|s| s["ai_policy_conflicts"].clone())
            .unwrap_or_default()
    };
    assert!(eventually(20, || conflicts().as_array().is_some_and(|c| c.len() == 2)), "{}", status());
    let text = conflicts().to_string();
    assert!(text.contains("GPTBot") && text.contains("ai-train=yes"), "{text}");
    let served = get(addr, "owner.test", "/robots.txt", BROWSER).text();
    assert!(served.contains("User-agent: ClaudeBot") && !served.contains("Content-Signal: search=yes"), "{served}");
    assert!(rules::Robots::parse(served.as_bytes()).crawler("GPTBot").is_allowed("/page"), "the owner's group stands");

    // Enforcement agrees with the served file on every path: the owner's
    // `Allow: /public/` lets GPTBot in there, and nowhere else; /status
    // names the owner's line.
    assert!(eventually(20, || get(addr, "folder.test", "/robots.txt", BROWSER).text().contains("Content-Signal")));
    let served = rules::Robots::parse(get(addr, "folder.test", "/robots.txt", BROWSER).body.as_slice());
    for path in ["/public/a.html", "/public/", "/private", "/", "/other/page"] {
        let allowed = served.crawler("GPTBot").is_allowed(path);
        let status = get(addr, "folder.test", path, "GPTBot/1.1").status;
        assert_eq!(status, if allowed { 200 } else { 403 }, "GPTBot on {path}: the served file says {allowed}");
    }
    assert_eq!(get(addr, "folder.test", "/public/a.html", "GPTBot/1.1").status, 200);
    let folder_conflicts = || {
        status()["sites"]
            .as_array()
            .and_then(|sites| sites.iter().find(|s| s["site"] == "folder").cloned())
            .map(|s| s["ai_policy_conflicts"].to_string())
            .unwrap_or_default()
    };
    assert!(eventually(20, || folder_conflicts().contains("line 5")), "{}", status());
    assert!(folder_conflicts().contains("/public/"), "{}", folder_conflicts());

    // Past 500 KiB the policy still lands inside what Google reads: the
    // origin's last lines give way, and /status and a metric say so.
    assert!(eventually(20, || get(addr, "big.test", "/robots.txt", BROWSER).text().contains("Content-Signal")));
    let served = get(addr, "big.test", "/robots.txt", BROWSER).body;
    assert!(served.len() <= rules::parse::MAX_FILE_BYTES, "{} bytes served", served.len());
    let robots = rules::Robots::parse(&served);
    assert!(!robots.crawler("GPTBot").is_allowed("/page"), "Google reads the policy");
    assert!(!robots.crawler("Googlebot").is_allowed("/p/1/"), "the origin's first lines stay");
    assert!(robots.crawler("Googlebot").is_allowed(&format!("/p/{n}/")), "its last line gave way");
    assert_eq!(get(addr, "big.test", "/page", "GPTBot/1.1").status, 403);
    let big_status = status()["sites"].as_array().and_then(|s| s.iter().find(|s| s["site"] == "big").cloned());
    let cut = big_status.map(|s| s["origin_cut"].clone()).unwrap_or_default();
    assert!(cut["from_line"].as_u64().is_some_and(|l| l > 1) && cut["bytes"].as_u64().is_some_and(|b| b > 0), "{cut}");
    let metrics = request(admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default();
    let line = metrics.lines().find(|l| l.starts_with("robotsgate_managed_cut_bytes{site=\"big\"}")).unwrap_or("");
    assert!(line.rsplit(' ').next().and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > 0), "{line}");

    // A User-Agent naming a search crawler and an AI crawler is judged by
    // the stricter: `Googlebot/2.1` buys GPTBot nothing.
    let both = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) GPTBot/1.0";
    let r = get(addr, "shop.test", "/page", both);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("GPTBot"), "{}", r.text());
    assert_eq!(get(addr, "shop.test", "/page", "Mozilla/5.0 (compatible; Googlebot/2.1)").status, 200);
}

#[test]
fn ai_policy_on_the_fast_path() {
    run(true);
}

#[test]
fn ai_policy_on_the_pipeline() {
    run(false);
}

/// `robots-proxy --check` prints the robots.txt each policy produces.
#[test]
fn check_prints_the_compiled_file() {
    let dir = temp_dir("ai-check");
    let (yaml, _) = config("127.0.0.1:9".parse().unwrap(), true);
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let out = Command::new(support::proxy_bin()).arg("--config").arg(&cfg).arg("--check").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("== pay: robots.txt with its AI policy"), "{text}");
    assert!(text.contains("Content-Signal: search=yes, ai-input=no, ai-train=no"), "{text}");
    assert!(text.contains("User-agent: PerplexityBot"), "{text}");
    assert!(text.contains("== pay: Content-Usage header: train-ai=n, ai-use=n, search=y"), "{text}");
}
