//! The gate, with the real `robots-proxy` in front of a real origin on
//! 127.0.0.1, on both request paths: a deploy of `Disallow: /` is held
//! (crawlers keep the last good copy, `X-Robots-Source: held`) until it is
//! released; a change that breaks nothing passes at once; a deletion that
//! would unblock a pinned URL is held; `warn` and `off` let changes through;
//! a fleet on one database holds together, a release frees every gateway,
//! and a `kill -9` and restart during a hold keeps holding.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use testkit::*;

mod support;
use support::spawn_proxy;

const GOOD: &str = "User-agent: *\nDisallow: /private/\n";
const BLOCK_ALL: &str = "# deploy 42\nUser-agent: *\nDisallow: /\n";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const TOKEN: &str = "gate-token";

struct Gateway {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
    cfg: PathBuf,
}

/// A gateway for `shop.test` in front of `origin` with the site lines
/// `site_extra` (pins, `gate:`), on the own path or the pipeline.
fn gateway(dir: &Path, origin: SocketAddr, fast: bool, database: Option<&str>, site_extra: &str) -> Gateway {
    let (listen, admin) = (free_port(), free_port());
    let database = database.map(|d| format!("database: \"{d}\"\n")).unwrap_or_default();
    let yaml = format!(
        "{database}http:
  timeout: 2s
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: {TOKEN}
  state_dir: state-{listen}
  refresh: 1s
  grace_period: 1s
  fast_path: {fast}
sites:
  - name: shop
{site_extra}    proxy:
      hosts: [shop.test]
      origin: {origin}
"
    );
    let cfg = dir.join(format!("config-{listen}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    Gateway { proc: spawn_proxy(&cfg, &[addr, admin]), addr, admin, cfg }
}

fn robots(addr: SocketAddr) -> Option<Response> {
    request(addr, "GET", "shop.test", "/robots.txt", &[("User-Agent", GOOGLEBOT)])
}

/// Whether `/robots.txt` answers `body` from `source`.
fn serves(addr: SocketAddr, source: &str, body: &str) -> bool {
    robots(addr).is_some_and(|r| r.status == 200 && r.header("X-Robots-Source") == Some(source) && r.text() == body)
}

fn wait_serves(g: &Gateway, source: &str, body: &str, what: &str) {
    let ok = eventually(20, || serves(g.addr, source, body));
    let last = robots(g.addr).map(|r| (r.status, r.header("X-Robots-Source").map(str::to_string), r.text()));
    assert!(ok, "{what}: never served {source} {body:?}; last {last:?}");
}

fn admin(g: &Gateway, method: &str, path: &str) -> Response {
    let auth = format!("Bearer {TOKEN}");
    request(g.admin, method, "localhost", path, &[("Authorization", &auth)]).expect("admin answer")
}

fn status(g: &Gateway) -> serde_json::Value {
    serde_json::from_slice(&admin(g, "GET", "/status").body).expect("status JSON")
}

fn held_metric(g: &Gateway) -> Option<String> {
    let m = request(g.admin, "GET", "localhost", "/metrics", &[])?.text();
    m.lines().find(|l| l.starts_with("robotsgate_robots_held{site=\"shop\"}")).map(str::to_string)
}

fn a_deploy_of_disallow_all_is_held_until_released(fast: bool) {
    let dir = temp_dir(&format!("gate-deploy-{fast}"));
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let g = gateway(&dir, origin.addr, fast, None, "");
    wait_serves(&g, "origin", GOOD, "first copy");

    // The deploy: within a refresh the change is held, and crawlers keep
    // the good copy.
    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    wait_serves(&g, "held", GOOD, "the deploy");
    let site = &status(&g)["sites"][0];
    let held = &site["held"];
    let summary = held["summary"].as_str().unwrap_or_default();
    assert!(summary.starts_with("it disallows / for "), "{site}");
    assert!(summary.contains("(line 3: Disallow: /)"), "the deciding line of the new file: {summary}");
    // Unix ms, as every time robotsgate's JSON gives, within a minute of now.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    for at in [held["since"].as_u64(), site["last_fetch"].as_u64()] {
        assert!(at.is_some_and(|at| at <= now_ms && now_ms - at < 60_000), "{site}");
    }
    assert!(held["breaks"].as_array().is_some_and(|b| b.iter().any(|b| b["crawler"] == "Googlebot")), "{held}");
    assert_eq!(held_metric(&g).as_deref(), Some("robotsgate_robots_held{site=\"shop\"} 1"));
    // Stays held over several refreshes; everything else still passes.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(serves(g.addr, "held", GOOD), "the hold did not last");

    // A release without the token is refused; with it, the change is served.
    let r = request(g.admin, "POST", "localhost", "/release?site=shop", &[]).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(admin(&g, "POST", "/release?site=nope").status, 404);
    let r = admin(&g, "POST", "/release?site=shop");
    assert_eq!(r.status, 202, "{}", r.text());
    wait_serves(&g, "origin", BLOCK_ALL, "the release");
    assert_eq!(held_metric(&g).as_deref(), Some("robotsgate_robots_held{site=\"shop\"} 0"));
    assert!(status(&g)["sites"][0]["held"].is_null());
    assert_eq!(admin(&g, "POST", "/release?site=shop").status, 409, "nothing is held now");

    // Back to the good file (it opens things: it passes), then another
    // breaking body: a release applies to one exact body only.
    origin.set("/robots.txt", Reply::ok(GOOD));
    wait_serves(&g, "origin", GOOD, "the fix");
    origin.set("/robots.txt", Reply::ok("User-agent: Googlebot\nDisallow: /\n"));
    wait_serves(&g, "held", GOOD, "a second, different breaking body");
}

#[test]
fn a_deploy_of_disallow_all_is_held_until_released_on_the_fast_path() {
    a_deploy_of_disallow_all_is_held_until_released(true);
}

#[test]
fn a_deploy_of_disallow_all_is_held_until_released_on_the_pipeline() {
    a_deploy_of_disallow_all_is_held_until_released(false);
}

fn unbroken_changes_pass_and_pinned_deletions_hold(fast: bool) {
    let dir = temp_dir(&format!("gate-pins-{fast}"));
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let pins = "    url_sets:
      money:
        expect: { search: allowed }
        urls:
          - /products/
          - { url: /private/x, expect: disallowed }
          - { url: /, expect: { ai-training: disallowed } }
";
    let base = format!("{GOOD}\nUser-agent: GPTBot\nDisallow: /\n");
    origin.set("/robots.txt", Reply::ok(base.clone()));
    let g = gateway(&dir, origin.addr, fast, None, pins);
    wait_serves(&g, "origin", &base, "first copy");

    // A change that breaks nothing is adopted at once.
    let more = format!("{base}\nUser-agent: *\nDisallow: /cart\n");
    origin.set("/robots.txt", Reply::ok(more.clone()));
    wait_serves(&g, "origin", &more, "an unbroken change");

    // A purpose pin: dropping the GPTBot group opens / for an ai-training crawler.
    origin.set("/robots.txt", Reply::ok(GOOD));
    wait_serves(&g, "held", &more, "a purpose pin");
    let summary = status(&g)["sites"][0]["held"]["summary"].as_str().unwrap_or_default().to_string();
    assert!(summary.contains("allows / for ") && summary.contains("pinned disallowed"), "{summary}");

    // A deletion would unblock the pinned /private/x: held too.
    origin.set("/robots.txt", Reply::status(404));
    wait_serves(&g, "held", &more, "a pinned deletion");
    assert!(eventually(20, || status(&g)["sites"][0]["held"]["outcome"] == "status:404"), "{}", status(&g));
    let held = &status(&g)["sites"][0]["held"];
    assert!(held["summary"].as_str().unwrap_or_default().contains("robots.txt answered 404"), "{held}");

    // A search pin on a set's URL.
    origin.set("/robots.txt", Reply::ok(format!("{more}\nUser-agent: bingbot\nDisallow: /products/\n")));
    let bing = eventually(20, || {
        status(&g)["sites"][0]["held"]["summary"].as_str().is_some_and(|s| s.contains("/products/ for bingbot"))
    });
    assert!(bing, "{}", status(&g));
    assert!(serves(g.addr, "held", &more));
}

#[test]
fn unbroken_changes_pass_and_pinned_deletions_hold_on_the_fast_path() {
    unbroken_changes_pass_and_pinned_deletions_hold(true);
}

#[test]
fn unbroken_changes_pass_and_pinned_deletions_hold_on_the_pipeline() {
    unbroken_changes_pass_and_pinned_deletions_hold(false);
}

#[test]
fn warn_and_off_let_the_change_through() {
    for (fast, mode) in [(true, "warn"), (false, "warn"), (true, "off"), (false, "off")] {
        let dir = temp_dir(&format!("gate-{mode}-{fast}"));
        let origin = Origin::start();
        origin.set("/robots.txt", Reply::ok(GOOD));
        let g = gateway(&dir, origin.addr, fast, None, &format!("    gate: {mode}\n"));
        wait_serves(&g, "origin", GOOD, mode);
        origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
        wait_serves(&g, "origin", BLOCK_ALL, mode);
        let site = &status(&g)["sites"][0];
        assert!(site["held"].is_null(), "{mode}: {site}");
        assert_eq!(site["would_have_held"].is_null(), mode == "off", "{mode}: {site}");
        // For as long as the change is served (refreshes every second),
        // `gate: warn` keeps saying so, in /status and the metric.
        std::thread::sleep(std::time::Duration::from_secs(4));
        assert!(serves(g.addr, "origin", BLOCK_ALL), "{mode}");
        let site = &status(&g)["sites"][0];
        assert_eq!(site["would_have_held"].is_null(), mode == "off", "{mode} after 4 s: {site}");
        let metrics = request(g.admin, "GET", "localhost", "/metrics", &[]).unwrap().text();
        let want = format!("robotsgate_robots_would_have_held{{site=\"shop\"}} {}", u8::from(mode == "warn"));
        assert!(metrics.contains(&want), "{mode}: {want}");
        // A file that breaks nothing against the served one ends it.
        origin.set("/robots.txt", Reply::ok(GOOD));
        wait_serves(&g, "origin", GOOD, mode);
        assert!(eventually(5, || status(&g)["sites"][0]["would_have_held"].is_null()), "{mode}");
    }
}

#[test]
fn a_bad_pin_is_refused_with_its_line_and_key() {
    let dir = temp_dir("gate-bad-pin");
    let origin = Origin::start();
    let pins = "    url_sets:\n      main:\n        - { url: /, expect: { Googelbot: allowed } }\n";
    let g = dir.join("bad.yaml");
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{}\"]\nsites:\n  - name: shop\n{pins}    proxy:\n      hosts: [shop.test]\n      origin: {}\n",
        free_port(),
        origin.addr
    );
    std::fs::write(&g, yaml).unwrap();
    let out = std::process::Command::new(support::proxy_bin())
        .args(["--config", g.to_str().unwrap(), "--check"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("bad.yaml") && err.contains("line 7") && err.contains("`Googelbot`"), "{err}");
    assert!(err.contains("did you mean `Googlebot`"), "{err}");
    // Spelled right, --check says what the gate will judge.
    std::fs::write(&g, std::fs::read_to_string(&g).unwrap().replace("Googelbot", "search")).unwrap();
    let out = std::process::Command::new(support::proxy_bin())
        .args(["--config", g.to_str().unwrap(), "--check"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("== shop: gate hold: 14 pins (URL and crawler); the floor: 1 URL x 14 search crawlers"),
        "{said}"
    );
}

/// Two gateways on one database both hold; a release through one frees
/// both; a `kill -9` and restart during a hold keeps holding and never
/// serves the held body.
fn a_fleet_holds_together(db: Db, fast: bool) {
    let dir = temp_dir(&format!("gate-fleet-{db:?}-{fast}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let mut a = gateway(&dir, origin.addr, fast, Some(&database), "");
    let b = gateway(&dir, origin.addr, !fast, Some(&database), "");
    wait_serves(&a, "origin", GOOD, "A's first copy");
    wait_serves(&b, "origin", GOOD, "B's first copy");

    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    wait_serves(&a, "held", GOOD, "A holds");
    wait_serves(&b, "held", GOOD, "B holds");
    let recorded = eventually(20, || {
        scalar(&database, "SELECT COUNT(*) FROM gate_holds WHERE site = 'shop' AND released_at IS NULL") == 1
    });
    assert!(recorded, "{db:?}: the hold is not in the database");
    let kept = scalar(&database, "SELECT COUNT(*) FROM revisions WHERE site = 'shop' AND body LIKE '%deploy 42%'");
    assert_eq!(kept, 1, "{db:?}: the held body is kept as a revision");

    // kill -9 and restart A during the hold: it never serves the held body.
    a.proc.kill();
    let cfg = a.cfg.clone();
    a.proc = spawn_proxy(&cfg, &[a.addr, a.admin]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
    while std::time::Instant::now() < deadline {
        if let Some(r) = robots(a.addr) {
            assert_ne!(r.text(), BLOCK_ALL, "{db:?}: the restarted gateway served the held body");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    wait_serves(&a, "held", GOOD, "A holds again after its restart");

    // One release, through A's admin API, frees both within a refresh.
    assert_eq!(admin(&a, "POST", "/release?site=shop").status, 202);
    wait_serves(&a, "origin", BLOCK_ALL, "A after the release");
    wait_serves(&b, "origin", BLOCK_ALL, "B after the release");
}

#[test]
fn a_fleet_holds_together_on_postgres() {
    a_fleet_holds_together(Db::Postgres, true);
}

#[test]
fn a_fleet_holds_together_on_sqlite() {
    a_fleet_holds_together(Db::Sqlite, false);
}

/// A hold never outlives `max_staleness`: past it, the change passes.
#[test]
fn a_hold_ends_at_max_staleness() {
    let dir = temp_dir("gate-staleness");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: state\n  refresh: 1s\n  max_staleness: 4s\nsites:\n  - name: shop\n    proxy:\n      hosts: [shop.test]\n      origin: {}\n",
        origin.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let _p = spawn_proxy(&cfg, &[addr]);
    assert!(eventually(20, || serves(addr, "origin", GOOD)));
    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    assert!(eventually(20, || serves(addr, "held", GOOD)), "never held");
    assert!(eventually(20, || serves(addr, "origin", BLOCK_ALL)), "the hold outlived max_staleness");
}

/// The deploy, end to end, with both daemons on one database: the origin
/// ships `Disallow: /`; the gateway holds it; `robots-monitor once` mails a
/// critical alert to a real SMTP server saying so; `robots-monitor release`
/// makes every gateway serve the new file within a refresh.
fn the_deploy_end_to_end(db: Db, fast: bool) {
    let Some(monitor) = support::monitor_bin() else { return };
    let dir = temp_dir(&format!("gate-e2e-{db:?}-{fast}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let smtp = Smtp::start(&dir.join("mail"));
    let g = gateway(&dir, origin.addr, fast, Some(&database), "");
    // The monitor polls the same origin, as the site's robots.txt URL.
    let yaml = std::fs::read_to_string(&g.cfg).unwrap().replace(
        "  - name: shop\n",
        &format!("  - name: shop\n    url: http://127.0.0.1:{}/robots.txt\n", origin.addr.port()),
    ) + &format!(
        "agents: [Googlebot]\nemail:\n  host: 127.0.0.1\n  port: {}\n  security: none\n  from: robotsgate@test.example\n  to: [seo@test.example]\n",
        smtp.port
    );
    let monitor_cfg = dir.join("monitor.yaml");
    std::fs::write(&monitor_cfg, yaml).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&monitor).arg("--config").arg(&monitor_cfg).args(args).output().unwrap();
        assert!(out.status.success(), "robots-monitor {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    wait_serves(&g, "origin", GOOD, "first copy");
    run(&["once"]);

    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    wait_serves(&g, "held", GOOD, "the deploy");
    run(&["once"]);
    let mails = smtp.wait_for(1);
    let mail = mails[0].replace("=\r\n", "").replace("=\n", "");
    assert!(mail.contains("Subject: [robotsgate] shop: change held at the edge"), "{mail}");
    // One sentence for every search crawler the deploy shuts out.
    assert!(mail.contains("held at the edge: it disallows / for Googlebot and "), "{mail}");
    assert!(mail.contains(" other search crawlers (line 3: Disallow: /)"), "{mail}");
    let critical = scalar(&database, "SELECT COUNT(*) FROM alerts WHERE severity = 'critical'");
    assert_eq!(critical, 1, "{db:?}");

    // The ledger judges what crawlers got during the hold (the good copy):
    // a request the held file disallows is no violation. (Log times have
    // whole seconds: the requests come a second after the monitor's poll.)
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = std::process::Command::new("date").args(["-u", "+%d/%b/%Y:%H:%M:%S +0000"]).env("LC_ALL", "C").output();
    let now = String::from_utf8(out.unwrap().stdout).unwrap().trim().to_string();
    let log = dir.join("access.log");
    let line = |path: &str| format!("127.0.0.1 - - [{now}] \"GET {path} HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n");
    std::fs::write(&log, line("/robots.txt") + &line("/products/1")).unwrap();
    run(&["ingest", "--site", "shop", log.to_str().unwrap()]);
    let report = run(&["compliance", "shop"]);
    assert!(report.contains("0 violations"), "{db:?}: the held file judged the crawler: {report}");

    // The console shows the hold, its diff and a release button; the
    // compliance page marks the hold.
    let console: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _console = Proc(
        std::process::Command::new(&monitor)
            .arg("--config")
            .arg(&monitor_cfg)
            .args(["serve", "--listen", &console.to_string()])
            .env("ROBOTSGATE_ADMIN_TOKEN", TOKEN)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_listening(console, 20), "the console did not start");
    let page = request(console, "GET", "localhost", "/sites/shop", &[]).unwrap().text();
    assert!(page.contains("Held at the edge since") && page.contains("Release this change"), "{page}");
    assert!(page.contains("+Disallow: /"), "{page}");
    // Breaches grouped by page and line, the crawlers on one line: `/` is
    // listed once, not once per search crawler.
    let grouped = page.matches("/ disallowed for ").count();
    assert_eq!(grouped, 1, "{page}");
    assert!(page.contains("search crawlers (Googlebot, ") && page.contains(": line 3 `Disallow: /`"), "{page}");
    let page = request(console, "GET", "localhost", "/sites/shop/compliance", &[]).unwrap().text();
    assert!(page.contains("Held at the edge") && page.contains("now (still held)"), "{page}");

    if fast {
        let said = run(&["release", "shop"]);
        assert!(said.contains("1 held change of shop released"), "{said}");
    } else {
        // The console's button: a form with the admin token.
        let post = |token: &str| {
            let body = format!("token={token}&revision=");
            let mut s = std::net::TcpStream::connect(console).unwrap();
            use std::io::{Read, Write};
            write!(
                s,
                "POST /sites/shop/release HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).unwrap();
            answer
        };
        assert!(post("wrong").starts_with("HTTP/1.1 403"), "a release needs the admin token");
        let answer = post(TOKEN);
        assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("1 held change of shop released"), "{answer}");
    }
    wait_serves(&g, "origin", BLOCK_ALL, "after the release");
    let page = request(console, "GET", "localhost", "/sites/shop/compliance", &[]).unwrap().text();
    assert!(page.contains("(released)"), "{page}");
}

#[test]
fn the_deploy_end_to_end_on_sqlite_fast_path() {
    the_deploy_end_to_end(Db::Sqlite, true);
}

#[test]
fn the_deploy_end_to_end_on_postgres_pipeline() {
    the_deploy_end_to_end(Db::Postgres, false);
}
