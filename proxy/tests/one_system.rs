//! The gate as one system, with real daemons on one database: a site only
//! gateways front (a `proxy:` with hosts and origin, no `url:` or `file:`)
//! is a site of the monitor, the console, the API and the CLI; the hold
//! itself raises the alert (one critical mail per hold, whether or not a
//! monitor polled the change, once across a fleet and through a `kill -9`),
//! and its end a resolved notice; a gateway that starts cold on a fleet's
//! database enforces from its first answer.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;

const GOOD: &str = "User-agent: *\nDisallow: /private/\n";
const BLOCK_ALL: &str = "# deploy 42\nUser-agent: *\nDisallow: /\n";
const BLOCK_ALL_AGAIN: &str = "# deploy 43\nUser-agent: *\nDisallow: /\n";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const TOKEN: &str = "one-system-token";

/// One config both daemons read: the gateway-only site `shop`.
struct Setup {
    cfg: PathBuf,
    listen: SocketAddr,
    admin: SocketAddr,
    console: SocketAddr,
}

fn setup(dir: &Path, name: &str, database: &str, origin: SocketAddr, smtp: u16, fast: bool, extra: &str) -> Setup {
    let (listen, admin, console) = (free_port(), free_port(), free_port());
    let state = dir.join(format!("state-{name}"));
    let yaml = format!(
        "database: \"{database}\"
agents: [Googlebot]
interval: 1h
http:
  timeout: 2s
email:
  host: 127.0.0.1
  port: {smtp}
  security: none
  from: robotsgate@test.example
  to: [seo@test.example]
console:
  listen: 127.0.0.1:{console}
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  state_dir: {state}
  refresh: 1s
  grace_period: 1s
  fast_path: {fast}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {origin}
{extra}",
        state = state.display()
    );
    let cfg = dir.join(format!("config-{name}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let at = |port: u16| -> SocketAddr { format!("127.0.0.1:{port}").parse().unwrap() };
    Setup { cfg, listen: at(listen), admin: at(admin), console: at(console) }
}

fn gateway(s: &Setup) -> Proc {
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&s.cfg)
        .env("ROBOTSGATE_ADMIN_TOKEN", TOKEN)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("robots-proxy");
    let p = Proc(child);
    assert!(wait_listening(s.listen, 20) && wait_listening(s.admin, 20), "robots-proxy did not start");
    p
}

fn monitor_run(monitor: &Path, s: &Setup) -> Proc {
    let child = Command::new(monitor)
        .arg("--config")
        .arg(&s.cfg)
        .arg("run")
        .env("ROBOTSGATE_ADMIN_TOKEN", TOKEN)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("robots-monitor run");
    Proc(child)
}

fn monitor_cli(monitor: &Path, s: &Setup, args: &[&str]) -> (i32, String) {
    let out = Command::new(monitor).arg("--config").arg(&s.cfg).args(args).output().expect("robots-monitor");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn serves(addr: SocketAddr, source: &str, body: &str) -> bool {
    request(addr, "GET", "shop.test", "/robots.txt", &[("User-Agent", GOOGLEBOT)])
        .is_some_and(|r| r.status == 200 && r.header("X-Robots-Source") == Some(source) && r.text() == body)
}

fn mails_with(smtp: &Smtp, subject: &str) -> usize {
    smtp.mails().iter().filter(|m| m.contains(subject)).count()
}

fn unwrapped(mail: &str) -> String {
    mail.replace("=\r\n", "").replace("=\n", "")
}

const HELD: &str = "Subject: [robotsgate] shop: change held at the edge";
const RESOLVED: &str = "Subject: [robotsgate] shop: resolved: change no longer held";

/// A deploy of `Disallow: /` to a site only the gateway fronts, with
/// `robots-monitor run` on the same database: held, one critical mail, the
/// console and the API show it, `robots-monitor release` frees it and a
/// resolved notice follows.
fn a_gateway_only_site_is_a_site_of_the_monitor(db: Db, fast: bool) {
    let Some(monitor) = support::monitor_bin() else { return };
    let dir = temp_dir(&format!("one-system-{db:?}-{fast}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let smtp = Smtp::start(&dir.join("mail"));
    let s = setup(&dir, "a", &database, origin.addr, smtp.port, fast, "");

    let (code, said) = monitor_cli(&monitor, &s, &["check-config"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("shop: polled at the gateway's origin"), "check-config says how shop is watched: {said}");
    assert!(said.contains("whose holds reach the monitor through the database"), "{said}");

    let _g = gateway(&s);
    assert!(eventually(20, || serves(s.listen, "origin", GOOD)), "first copy");
    let _m = monitor_run(&monitor, &s);
    assert!(wait_listening(s.console, 20), "the console did not start");
    // The monitor's first poll of the origin, as the gateway asks it.
    assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM states WHERE site = 'shop'") >= 1));
    let sites = request(s.console, "GET", "localhost", "/api/sites", &[]).expect("api").text();
    assert!(sites.contains("\"shop\""), "{sites}");

    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    assert!(eventually(20, || serves(s.listen, "held", GOOD)), "the deploy was not held");
    // No monitor polls it now (interval 1h): the hold raises the alert.
    assert!(eventually(20, || mails_with(&smtp, HELD) == 1), "{:?}", smtp.mails());
    let mail = unwrapped(smtp.mails().iter().find(|m| m.contains(HELD)).unwrap());
    assert!(mail.contains("held at the edge: it disallows / for Googlebot and "), "{mail}");
    assert!(mail.contains("(line 3: Disallow: /)") && mail.contains("robots-monitor release shop"), "{mail}");
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE severity = 'critical'"), 1);

    let page = request(s.console, "GET", "localhost", "/sites/shop", &[]).expect("page");
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("Held at the edge since") && page.contains("Release this change"), "{page}");
    assert!(page.contains("Verdicts crawlers get now") && page.contains("What the origin serves"), "{page}");
    // Issue #64: shop saves no URLs, yet both tables judge its root: the
    // last good copy allows / and the held change disallows it.
    let table = |id: &str| {
        page.split(&format!("id=\"{id}\"")).nth(1).map(|t| t.split("</table>").next().unwrap_or("").to_string())
    };
    let origin_table = table("origin-verdicts").unwrap_or_else(|| panic!("{page}"));
    assert!(origin_table.contains("Disallow: /") && origin_table.contains("Googlebot"), "{origin_table}");
    let now_table = table("verdicts").unwrap_or_else(|| panic!("{page}"));
    assert!(now_table.contains("Googlebot") && !now_table.contains("line 3: Disallow: /"), "{now_table}");
    let api = request(s.console, "GET", "localhost", "/api/sites/shop", &[]).expect("api").text();
    assert!(api.contains("\"held\":[{") && api.contains("\"state\":\"held\""), "{api}");
    // Issue #64: the sites list, its API and its state filter say held too.
    let sites = request(s.console, "GET", "localhost", "/api/sites", &[]).expect("api").text();
    let list: serde_json::Value = serde_json::from_str(&sites).unwrap();
    let shop = list["sites"].as_array().and_then(|l| l.iter().find(|x| x["name"] == "shop")).cloned();
    let shop = shop.unwrap_or_else(|| panic!("{sites}"));
    assert_eq!(shop["state"], "held", "{sites}");
    assert!(shop["detail"].as_str().is_some_and(|d| d.contains("robots-monitor release shop")), "{sites}");
    let filtered = request(s.console, "GET", "localhost", "/?state=held", &[]).expect("page").text();
    assert!(filtered.contains(">held</option>") && filtered.contains("/sites/shop"), "{filtered}");
    let ok = request(s.console, "GET", "localhost", "/?state=ok", &[]).expect("page").text();
    assert!(!ok.contains("href=\"/sites/shop\""), "a held site is not listed as ok");

    let (code, said) = monitor_cli(&monitor, &s, &["release", "shop"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("1 held change of shop released"), "{said}");
    assert!(eventually(20, || serves(s.listen, "origin", BLOCK_ALL)), "the release did not reach the gateway");
    assert!(eventually(20, || mails_with(&smtp, RESOLVED) == 1), "{:?}", smtp.mails());
    let (code, said) = monitor_cli(&monitor, &s, &["history", "shop"]);
    assert_eq!(code, 0, "{said}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(mails_with(&smtp, HELD), 1, "one alert per hold");
}

#[test]
fn a_gateway_only_site_is_a_site_of_the_monitor_on_sqlite_fast_path() {
    a_gateway_only_site_is_a_site_of_the_monitor(Db::Sqlite, true);
}

#[test]
fn a_gateway_only_site_is_a_site_of_the_monitor_on_postgres_pipeline() {
    a_gateway_only_site_is_a_site_of_the_monitor(Db::Postgres, false);
}

/// Released bad → good → bad, inside one monitor interval: each hold has
/// its alert, whatever the monitor happened to poll.
fn each_hold_has_its_alert(fast: bool) {
    let Some(monitor) = support::monitor_bin() else { return };
    let dir = temp_dir(&format!("one-system-holds-{fast}"));
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let smtp = Smtp::start(&dir.join("mail"));
    let s = setup(&dir, "b", &database, origin.addr, smtp.port, fast, "");
    let _g = gateway(&s);
    assert!(eventually(20, || serves(s.listen, "origin", GOOD)));
    let _m = monitor_run(&monitor, &s);

    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    assert!(eventually(20, || serves(s.listen, "held", GOOD)));
    assert!(eventually(20, || mails_with(&smtp, HELD) == 1), "the first hold");
    assert_eq!(monitor_cli(&monitor, &s, &["release", "shop"]).0, 0);
    assert!(eventually(20, || serves(s.listen, "origin", BLOCK_ALL)));
    origin.set("/robots.txt", Reply::ok(GOOD));
    assert!(eventually(20, || serves(s.listen, "origin", GOOD)));
    origin.set("/robots.txt", Reply::ok(BLOCK_ALL_AGAIN));
    assert!(eventually(20, || serves(s.listen, "held", GOOD)), "the second deploy was not held");
    assert!(eventually(20, || mails_with(&smtp, HELD) == 2), "the second hold: {:?}", smtp.mails());
    // The good file superseding a hold also resolves it.
    origin.set("/robots.txt", Reply::ok(GOOD));
    assert!(eventually(20, || serves(s.listen, "origin", GOOD)));
    assert!(eventually(20, || mails_with(&smtp, RESOLVED) == 2), "{:?}", smtp.mails());
    let last = unwrapped(smtp.mails().iter().rev().find(|m| m.contains(RESOLVED)).unwrap());
    assert!(last.contains("the origin's next answer breaks nothing declared"), "{last}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!((mails_with(&smtp, HELD), mails_with(&smtp, RESOLVED)), (2, 2));
}

#[test]
fn each_hold_has_its_alert_on_the_fast_path() {
    each_hold_has_its_alert(true);
}

#[test]
fn each_hold_has_its_alert_on_the_pipeline() {
    each_hold_has_its_alert(false);
}

/// Two gateways and two monitors on PostgreSQL, a monitor killed with
/// SIGKILL during the hold: exactly one alert, and one resolved notice.
#[test]
fn a_fleet_alerts_once_through_a_kill() {
    let Some(monitor) = support::monitor_bin() else { return };
    let dir = temp_dir("one-system-fleet");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    let smtp = Smtp::start(&dir.join("mail"));
    let (a, b) = (
        setup(&dir, "fa", &database, origin.addr, smtp.port, true, ""),
        setup(&dir, "fb", &database, origin.addr, smtp.port, false, ""),
    );
    let (_ga, _gb) = (gateway(&a), gateway(&b));
    assert!(eventually(20, || serves(a.listen, "origin", GOOD) && serves(b.listen, "origin", GOOD)));
    let mut ma = monitor_run(&monitor, &a);
    let _mb = monitor_run(&monitor, &b);
    origin.set("/robots.txt", Reply::ok(BLOCK_ALL));
    // Killed as soon as a gateway recorded the hold: before, while or after
    // a monitor raises its alert.
    assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM gate_holds WHERE breaks <> ''") == 1));
    ma.kill();
    assert!(eventually(20, || serves(a.listen, "held", GOOD) && serves(b.listen, "held", GOOD)));
    assert!(eventually(20, || mails_with(&smtp, HELD) == 1), "{:?}", smtp.mails());
    let _ma = monitor_run(&monitor, &a);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(mails_with(&smtp, HELD), 1, "exactly one alert across the fleet");
    assert_eq!(
        scalar(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'hold' OR subject LIKE '%held at the edge%'"),
        1
    );
    assert_eq!(monitor_cli(&monitor, &a, &["release", "shop"]).0, 0);
    assert!(eventually(20, || serves(a.listen, "origin", BLOCK_ALL) && serves(b.listen, "origin", BLOCK_ALL)));
    assert!(eventually(20, || mails_with(&smtp, RESOLVED) == 1), "{:?}", smtp.mails());
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(mails_with(&smtp, RESOLVED), 1);
}

/// A gateway that starts cold (an empty state directory) on a fleet's
/// database, with `enforce: true`, hammered from its first second: it never
/// answers a disallowed path with 200, since it takes the fleet's copy
/// before it accepts a connection. Both request paths.
fn a_cold_gateway_enforces_from_its_first_answer(fast: bool) {
    let dir = temp_dir(&format!("one-system-cold-{fast}"));
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(GOOD));
    origin.set("/private/x", Reply::ok("secret\n"));
    let enforce = "      enforce: true\n";
    let warm = setup(&dir, "warm", &database, origin.addr, 1, fast, "");
    let yaml = std::fs::read_to_string(&warm.cfg).unwrap().replace("      origin:", &format!("{enforce}      origin:"));
    std::fs::write(&warm.cfg, yaml).unwrap();
    {
        let _g = gateway(&warm);
        assert!(eventually(20, || serves(warm.listen, "origin", GOOD)));
        assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM revisions WHERE site = 'shop'") == 1));
    }
    // The origin is slow to answer robots.txt now: the cold gateway's first
    // refresh takes seconds, so only the fleet's copy can judge meanwhile.
    origin.set(
        "/robots.txt",
        Reply::Send { status: 200, headers: vec![], body: GOOD.as_bytes().to_vec(), delay: Duration::from_secs(4) },
    );
    let cold = setup(&dir, "cold", &database, origin.addr, 1, fast, "");
    let yaml = std::fs::read_to_string(&cold.cfg).unwrap().replace("      origin:", &format!("{enforce}      origin:"));
    std::fs::write(&cold.cfg, yaml).unwrap();
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cold.cfg)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _p = Proc(child);
    let (mut answered, mut passed) = (0, Vec::new());
    let until = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < until {
        if let Some(r) = request(cold.listen, "GET", "shop.test", "/private/x", &[("User-Agent", GOOGLEBOT)]) {
            answered += 1;
            if r.status != 403 {
                passed.push(r.status);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(answered > 50, "fast {fast}: only {answered} answers");
    assert!(passed.is_empty(), "fast {fast}: {} of {answered} answers were not 403: {passed:?}", passed.len());
    let health = request(cold.admin, "GET", "localhost", "/healthz", &[]).unwrap();
    assert_eq!(health.status, 200);
    assert!(health.text().contains("with a copy for every site"), "{}", health.text());
}

#[test]
fn a_cold_gateway_enforces_from_its_first_answer_on_the_fast_path() {
    a_cold_gateway_enforces_from_its_first_answer(true);
}

#[test]
fn a_cold_gateway_enforces_from_its_first_answer_on_the_pipeline() {
    a_cold_gateway_enforces_from_its_first_answer(false);
}

/// With no copy anywhere, the gateway passes through as documented, and
/// says so: `/healthz` tells it apart, `?require=copy` is a 503, and
/// `/status` names it.
#[test]
fn with_no_copy_anywhere_the_gateway_says_it_passes_through() {
    let dir = temp_dir("one-system-bare");
    let origin = Origin::start();
    origin.set(
        "/robots.txt",
        Reply::Send {
            status: 200,
            headers: vec![],
            body: GOOD.as_bytes().to_vec(),
            delay: Duration::from_millis(1500),
        },
    );
    let s = setup(&dir, "bare", &dir.join("h.db").display().to_string(), origin.addr, 1, true, "");
    let _g = gateway(&s);
    let health = request(s.admin, "GET", "localhost", "/healthz", &[]).unwrap();
    assert_eq!(health.status, 200);
    assert!(health.text().contains("nothing to serve yet for shop"), "{}", health.text());
    assert_eq!(request(s.admin, "GET", "localhost", "/healthz?require=copy", &[]).unwrap().status, 503);
    let bearer = format!("Bearer {TOKEN}");
    let status = request(s.admin, "GET", "localhost", "/status", &[("Authorization", &bearer)]).unwrap().text();
    assert!(status.contains("\"pass_through\":\"no copy on disk, in the database or from the origin yet"), "{status}");
    assert!(eventually(20, || serves(s.listen, "origin", GOOD)));
    assert_eq!(request(s.admin, "GET", "localhost", "/healthz?require=copy", &[]).unwrap().status, 200);
}
