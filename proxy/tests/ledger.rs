//! The gateway's compliance ledger (`proxy.ledger`), in front of a real
//! origin, writing to a real database, on the own path and on Pingora's
//! pipeline alone. Scripted crawlers read robots.txt, then obey or not,
//! across a robots.txt change, inside and after their cache window: a
//! verified crawler (its address in an IP-range feed on loopback), a
//! spoofer of it, and unverifiable crawlers with a 24-hour and a 3-second
//! window. Then: two gateways on one database count each request once,
//! through a kill -9 and a restart; a kill -9 with every count still in
//! memory loses none (the journal); a stop signal writes what is held; a
//! database that cannot be reached slows nothing and drops what passes
//! the bound, counted.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use testkit::*;

mod support;
use support::{monitor_bin, spawn_proxy};

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const SHORTBOT: &str = "ShortBot/1.0";
const LONGBOT: &str = "LongBot/1.0";
const REAL: &str = "127.0.0.2";
const SPOOFER: &str = "127.0.0.3";
const OTHER: &str = "127.0.0.4";

const V1: &str = "User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nDisallow: /nogoogle\n";
const V2: &str = "User-agent: *\nDisallow: /private\nDisallow: /news\n\nUser-agent: Googlebot\nDisallow: /nogoogle\nDisallow: /news\n";
const FEED: &str = r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.2/32"}]}"#;

struct Gate {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
    /// Its config file.
    cfg: PathBuf,
    /// Requests sent to it with a crawler's User-Agent: each one an event
    /// its ledger must take in before [`Gate::wait_written`] is done.
    sent: std::cell::Cell<u64>,
}

/// Writes the config of a gateway in `dir` (database `database`) and
/// starts it.
fn start(dir: &Path, database: &str, origin: &Origin, fast_path: bool, flush: &str) -> Gate {
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "database: \"{database}\"
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state
  refresh: 1s
  grace_period: 1s
  fast_path: {fast_path}
  identity:
    refresh: 1s
    reverse_dns: false
  ledger:
    flush: {flush}
crawlers:
  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,
      verify: {{ ip_ranges: [\"{feed}\"] }} }}
  - {{ token: ShortBot, operator: Short, purpose: search, obeys: true, source: https://example.test/,
      robots_cache: 3s, robots_cache_source: the test }}
  - {{ token: LongBot, operator: Long, purpose: search, obeys: true, source: https://example.test/ }}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {origin_addr}
",
        feed = origin.url("/googlebot.json"),
        origin_addr = origin.addr,
    );
    let cfg = dir.join(format!("gateway-{listen}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let proc = spawn_proxy(&cfg, &[addr, admin]);
    Gate { proc, addr, admin, cfg, sent: Default::default() }
}

/// A monitor's config beside `gate`'s: the same site, crawlers and
/// verification, the site's URL on `origin` to poll, and `database`.
fn monitor_config(gate: &Gate, origin: &Origin, gateway_db: &str, database: &str) -> PathBuf {
    let text = std::fs::read_to_string(&gate.cfg).unwrap().replace(gateway_db, database).replace(
        "    proxy:\n      hosts:",
        &format!("    url: {}\n    proxy:\n      hosts:", origin.url("/robots.txt")),
    );
    let cfg = gate.cfg.with_file_name("monitor.yaml");
    std::fs::write(&cfg, text + "interval: 1h\n").unwrap();
    cfg
}

impl Gate {
    fn get(&self, from: &str, agent: &str, path: &str) -> Response {
        self.sending(agent);
        let ip: IpAddr = from.parse().unwrap();
        request_from(Some(ip), self.addr, "GET", "shop.test", path, &[("User-Agent", agent)])
            .expect("an answer from the gateway")
    }

    fn status(&self) -> serde_json::Value {
        request(self.admin, "GET", "admin", "/status", &[("Authorization", "Bearer secret")])
            .and_then(|r| serde_json::from_slice(&r.body).ok())
            .unwrap_or_default()
    }

    fn metrics(&self) -> String {
        request(self.admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default()
    }

    /// Waits until robots.txt is served from the store with `body`, and
    /// the feed is in (so the real crawler's address verifies).
    fn wait_serving(&self, body: &str) {
        assert!(
            eventually(30, || {
                let s = self.status();
                let fed = s["identity"]["feeds"].as_array().is_none_or(|f| {
                    f.iter()
                        .filter(|f| f["source"].as_str().is_some_and(|u| u.contains("127.0.0.1")))
                        .all(|f| f["prefixes"] == 1)
                });
                fed && self.get(OTHER, "curl/8", "/robots.txt").text() == body
                    && s["sites"][0]["source"].as_str().is_some_and(|src| src != "pass-through")
            }),
            "the gateway never served {body:?}: {}",
            self.status()
        );
    }

    /// Notes a request about to be sent with User-Agent `agent`: every
    /// crawler of this test's catalogue has `bot` in its name.
    fn sending(&self, agent: &str) {
        if agent.to_ascii_lowercase().contains("bot") {
            self.sent.set(self.sent.get() + 1);
        }
    }

    /// Waits until the ledger has taken in every crawler request sent to
    /// this gateway and written their counts. Counting what arrived
    /// matters: the pipeline hands a visit over in its logging hook, after
    /// the client has its answer, so "nothing queued" alone can be the
    /// state before the visit (a CI run met it once).
    fn wait_written(&self) {
        let sent = self.sent.get();
        assert!(
            eventually(20, || {
                let l = &self.status()["ledger"];
                let recorded = l["recorded"].as_u64().unwrap_or(0);
                recorded >= sent
                    && l["settled"].as_u64() == Some(recorded)
                    && l["pending_rows"] == 0
                    && l["queued"] == 0
                    && l["last_write"].is_u64()
            }),
            "the ledger never wrote the {sent} crawler requests sent: {}",
            self.status()
        );
    }
}

/// The sum of `requests` over ledger rows matching `filter`.
fn count(database: &str, filter: &str) -> i64 {
    scalar(database, &format!("SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT) FROM ledger WHERE {filter}"))
}

fn origin() -> Origin {
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    origin.set("/googlebot.json", Reply::ok(FEED));
    origin
}

fn revision_of(database: &str, body: &str) -> i64 {
    let hash: String = {
        use sha2::Digest;
        sha2::Sha256::digest(body.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    scalar(database, &format!("SELECT id FROM revisions WHERE hash = '{hash}'"))
}

fn crawlers_obey_and_not(fast_path: bool) {
    let dir = temp_dir(&format!("ledger-judged-{fast_path}"));
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = origin();
    let gate = start(&dir, &database, &origin, fast_path, "300ms");
    gate.wait_serving(V1);

    // The real Googlebot reads v1, then keeps out of /nogoogle once, not twice.
    assert_eq!(gate.get(REAL, GOOGLEBOT, "/robots.txt").status, 200);
    gate.get(REAL, GOOGLEBOT, "/ok");
    gate.get(REAL, GOOGLEBOT, "/nogoogle/a");
    // The same URL spelled otherwise is the same violation.
    gate.get(REAL, GOOGLEBOT, "/%6Eogoogle/b");
    // A spoofer: its robots.txt read is not Googlebot's; it is judged as
    // an anonymous client, whom `*` keeps out of /private, not /nogoogle.
    gate.get(SPOOFER, GOOGLEBOT, "/robots.txt");
    gate.get(SPOOFER, GOOGLEBOT, "/private/x");
    gate.get(SPOOFER, GOOGLEBOT, "/nogoogle/c");
    // ShortBot reads v1 (its window: 3 s); LongBot never reads.
    gate.get(OTHER, SHORTBOT, "/robots.txt");
    gate.wait_written();
    let v1 = revision_of(&database, V1);
    assert!(v1 > 0, "the served file is a stored revision");
    assert_eq!(count(&database, "crawler = 'Googlebot' AND identity = 'verified' AND class = 'violation'"), 2);
    assert_eq!(
        count(&database, &format!("crawler = 'Googlebot' AND class = 'violation' AND revision_id = {v1} AND line = 5")),
        2,
        "the deciding line of v1 is kept"
    );
    assert_eq!(count(&database, "crawler = 'Googlebot' AND identity = 'verified' AND class = 'obeyed'"), 1);
    assert_eq!(
        count(&database, "crawler = 'Googlebot' AND identity = 'spoofed' AND class = 'violation' AND line = 2"),
        1
    );
    assert_eq!(count(&database, "crawler = 'Googlebot' AND identity = 'spoofed' AND class = 'obeyed'"), 1);
    assert_eq!(scalar(&database, "SELECT revision_id FROM crawler_reads WHERE crawler = 'Googlebot'"), v1);
    assert_eq!(scalar(&database, "SELECT revision_id FROM crawler_reads WHERE crawler = 'ShortBot'"), v1);
    let samples = scalar_text(
        &database,
        "SELECT samples FROM ledger WHERE crawler = 'Googlebot' AND identity = 'verified' AND class = 'violation'",
    );
    assert!(samples.contains("/nogoogle/a") && samples.contains("/%6Eogoogle/b"), "{samples}");

    // robots.txt changes: /news is disallowed from now on.
    origin.set("/robots.txt", Reply::ok(V2));
    gate.wait_serving(V2);
    let started = std::time::Instant::now();
    // Googlebot read v1 within its window: it holds v1, which allows /news.
    gate.get(REAL, GOOGLEBOT, "/news/1");
    // LongBot read nothing: v2 disallows, v1 (inside 24 h) allowed: grace.
    gate.get(OTHER, LONGBOT, "/news/2");
    // ShortBot, inside its 3 s window, holds v1.
    let inside = started.elapsed() < Duration::from_secs(2);
    gate.get(OTHER, SHORTBOT, "/news/3");
    gate.wait_written();
    assert_eq!(
        count(
            &database,
            &format!("crawler = 'Googlebot' AND identity = 'verified' AND class = 'obeyed' AND revision_id = {v1}")
        ),
        2
    );
    assert_eq!(count(&database, "crawler = 'LongBot' AND class = 'grace'"), 1);
    if inside {
        assert_eq!(count(&database, "crawler = 'ShortBot' AND class = 'obeyed'"), 1);
    }
    // Past ShortBot's window, its v1 protects nothing: stale, and only v2
    // was served within the window.
    std::thread::sleep(Duration::from_millis(3500));
    gate.get(OTHER, SHORTBOT, "/news/4");
    gate.wait_written();
    let v2 = revision_of(&database, V2);
    assert_eq!(
        count(&database, &format!("crawler = 'ShortBot' AND class = 'violation' AND revision_id = {v2} AND stale = 1")),
        1
    );
    assert!(gate.metrics().contains(
        "robotsgate_gateway_violations_total{crawler=\"ShortBot\",identity=\"unverifiable\",site=\"shop\"} 1"
    ));
    assert_eq!(gate.status()["ledger"]["dropped"], 0);
}

#[test]
fn crawlers_are_judged_against_what_they_could_hold_on_the_fast_path() {
    crawlers_obey_and_not(true);
}

#[test]
fn crawlers_are_judged_against_what_they_could_hold_on_the_pipeline() {
    crawlers_obey_and_not(false);
}

/// Two gateways on one database, each request counted once, by the one
/// that served it; a kill -9 after a write loses and doubles nothing, and
/// a stop signal writes what is held.
fn two_gateways_count_once(db: Db, fast_path: bool) {
    let dir = temp_dir(&format!("ledger-fleet-{db:?}-{fast_path}").to_lowercase());
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = origin();
    let a = start(&dir, &database, &origin, fast_path, "200ms");
    let mut b = start(&dir, &database, &origin, !fast_path, "200ms");
    a.wait_serving(V1);
    b.wait_serving(V1);
    for i in 0..10 {
        let gate = if i % 2 == 0 { &a } else { &b };
        gate.get(OTHER, LONGBOT, &format!("/private/{i}"));
    }
    a.wait_written();
    b.wait_written();
    assert_eq!(count(&database, "crawler = 'LongBot'"), 10);
    b.proc.kill();
    let mut b = start(&dir, &database, &origin, !fast_path, "1h");
    b.wait_serving(V1);
    for i in 0..4 {
        b.get(OTHER, LONGBOT, &format!("/private/again/{i}"));
    }
    // Held in memory (a write an hour away) until the stop signal.
    assert_eq!(count(&database, "crawler = 'LongBot'"), 10);
    assert!(eventually(10, || b.status()["ledger"]["pending_rows"] == 1));
    assert_eq!(b.proc.terminate(), Some(0));
    assert_eq!(count(&database, "crawler = 'LongBot'"), 14, "the stop signal writes what was held");
    a.get(OTHER, LONGBOT, "/private/last");
    a.wait_written();
    assert_eq!(count(&database, "crawler = 'LongBot' AND class = 'violation'"), 15);
}

#[test]
fn two_gateways_on_sqlite_count_each_request_once() {
    two_gateways_count_once(Db::Sqlite, true);
}

#[test]
fn two_gateways_on_postgres_count_each_request_once() {
    two_gateways_count_once(Db::Postgres, false);
}

/// How many journals are in `dir`.
fn journals(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "journal")).count())
        .unwrap_or(0)
}

/// A kill -9 loses nothing: the gateway is killed with every count still
/// in memory (a write an hour away) and some events maybe not yet judged;
/// the next start counts them from the journal, each once, against the
/// copy each was served with. A second kill -9, after that write, doubles
/// nothing. Then a replica sharing the `state_dir` (as an upgrade's new
/// process does) takes what a killed one left.
fn a_kill_loses_nothing(db: Db, fast_path: bool) {
    let dir = temp_dir(&format!("ledger-kill-{db:?}-{fast_path}").to_lowercase());
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = origin();
    let mut a = start(&dir, &database, &origin, fast_path, "1h");
    a.wait_serving(V1);
    a.get(OTHER, LONGBOT, "/robots.txt");
    for i in 0..30 {
        a.get(OTHER, LONGBOT, &format!("/private/{i}"));
        a.get(OTHER, SHORTBOT, &format!("/ok/{i}"));
    }
    // Judged and held: nothing written.
    assert!(eventually(10, || a.status()["ledger"]["pending_rows"].as_u64() >= Some(2)), "{}", a.status());
    // And a few more the judge may not have taken yet when the kill comes.
    for i in 0..5 {
        a.get(OTHER, LONGBOT, &format!("/private/late/{i}"));
    }
    a.proc.kill();
    assert_eq!(count(&database, "1 = 1"), 0, "nothing was written before the kill");
    let held = dir.join("state/ledger");
    assert_eq!(journals(&held), 1);

    let mut b = start(&dir, &database, &origin, fast_path, "200ms");
    b.wait_serving(V1);
    b.wait_written();
    assert!(
        eventually(10, || count(&database, "crawler = 'LongBot'") == 35),
        "every LongBot request is counted once: {} ({})",
        count(&database, "crawler = 'LongBot'"),
        b.status()
    );
    let v1 = revision_of(&database, V1);
    assert_eq!(count(&database, &format!("crawler = 'LongBot' AND class = 'violation' AND revision_id = {v1}")), 35);
    assert_eq!(count(&database, "crawler = 'ShortBot' AND class = 'obeyed'"), 30);
    assert_eq!(scalar(&database, "SELECT revision_id FROM crawler_reads WHERE crawler = 'LongBot'"), v1);
    assert_eq!(b.status()["ledger"]["replayed"], 66, "{}", b.status());
    // The killed process's journal is gone once counted.
    assert!(eventually(5, || journals(&held) == 1), "{} journals", journals(&held));

    // Counted, then killed: nothing counted twice.
    b.get(OTHER, LONGBOT, "/private/b");
    b.wait_written();
    b.proc.kill();
    let c = start(&dir, &database, &origin, fast_path, "200ms");
    c.wait_serving(V1);
    std::thread::sleep(Duration::from_millis(600));
    c.wait_written();
    assert_eq!(count(&database, "crawler = 'LongBot'"), 36);
    assert_eq!(c.status()["ledger"]["replayed"], 0);

    // A replica on the same state_dir, killed with counts held: the live one
    // counts them.
    let mut d = start(&dir, &database, &origin, fast_path, "1h");
    d.wait_serving(V1);
    for i in 0..7 {
        d.get(OTHER, LONGBOT, &format!("/private/d/{i}"));
    }
    d.proc.kill();
    assert!(
        eventually(10, || count(&database, "crawler = 'LongBot'") == 43),
        "the live replica counts what the killed one held: {}",
        count(&database, "crawler = 'LongBot'")
    );
    assert_eq!(c.status()["ledger"]["replayed"], 7);
}

#[test]
fn a_kill_loses_nothing_on_the_fast_path() {
    a_kill_loses_nothing(Db::Sqlite, true);
}

#[test]
fn a_kill_loses_nothing_on_the_pipeline() {
    a_kill_loses_nothing(Db::Sqlite, false);
}

#[test]
fn a_kill_loses_nothing_on_postgres() {
    a_kill_loses_nothing(Db::Postgres, true);
}

/// With the database unreachable, serving goes on at once; rows past the
/// bound are dropped and counted.
fn unreachable_database_slows_nothing(fast_path: bool) {
    let dir = temp_dir(&format!("ledger-down-{fast_path}"));
    let origin = origin();
    let (listen, admin) = (free_port(), free_port());
    let closed = free_port();
    let yaml = format!(
        "database: \"postgres://robotsgate@127.0.0.1:{closed}/none\"
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state
  refresh: 1s
  fast_path: {fast_path}
  ledger: {{ flush: 200ms, max_rows: 1 }}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {}
",
        origin.addr
    );
    let cfg: PathBuf = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let gate = Gate { proc: spawn_proxy(&cfg, &[addr, admin]), addr, admin, cfg, sent: Default::default() };
    gate.wait_serving(V1);
    let started = std::time::Instant::now();
    for i in 0..20 {
        // A distinct day-row each: different deciding lines and classes
        // are few, so distinct crawlers and paths make distinct rows.
        let agent = ["LongBot/1", "ShortBot/1", "Googlebot/2.1", "bingbot/2.0", "GPTBot/1.0"][i % 5];
        // The origin has no such page: a 404, answered at once.
        assert_eq!(gate.get(OTHER, agent, &format!("/private/{i}")).status, 404);
    }
    assert!(started.elapsed() < Duration::from_secs(5), "serving waited on the database: {:?}", started.elapsed());
    assert!(
        eventually(20, || {
            let l = &gate.status()["ledger"];
            l["dropped"].as_u64().is_some_and(|d| d > 0) && l["last_error"].is_string() && l["pending_rows"] == 1
        }),
        "{}",
        gate.status()
    );
    assert!(gate.metrics().contains("robotsgate_ledger_dropped_total"));
}

#[test]
fn an_unreachable_database_slows_nothing_on_the_fast_path() {
    unreachable_database_slows_nothing(true);
}

#[test]
fn an_unreachable_database_slows_nothing_on_the_pipeline() {
    unreachable_database_slows_nothing(false);
}

/// One ledger as comparable text: every row's crawler, identity, class,
/// deciding line and status, the hash of the deciding revision's bytes,
/// and its count, sorted.
fn ledger_text(database: &str) -> String {
    scalar_text(
        database,
        "SELECT group_concat(row, '\n') FROM (SELECT l.crawler || ' ' || l.identity || ' ' || l.class || ' line ' || l.line \
         || ' status ' || l.status || ' ' || COALESCE(substr(r.hash, 1, 12), '-') || ' x' || SUM(l.requests) AS row \
         FROM ledger l LEFT JOIN revisions r ON r.id = l.revision_id \
         GROUP BY l.crawler, l.identity, l.class, l.line, l.status, r.hash ORDER BY row)",
    )
}

/// The same crawler traffic, replayed through the gateway and to a real
/// nginx writing its real access log, across a robots.txt change: the
/// ledger the gateway wrote equals the one `robots-monitor ingest` builds
/// from the log.
fn gateway_and_log_agree(fast_path: bool) {
    let Some(monitor) = monitor_bin() else { return };
    let dir = temp_dir(&format!("ledger-agree-{fast_path}"));
    let log = dir.join("access.log");
    let Some((_nginx, direct)) = nginx(&dir, &log) else { return };
    let origin = origin();
    let gateway_db = dir.join("gateway.db").display().to_string();
    let gate = start(&dir, &gateway_db, &origin, fast_path, "200ms");
    gate.wait_serving(V1);
    // The monitor's own database, the same site and crawlers, verification
    // from the same feed; it learns robots.txt by polling the same origin.
    let monitor_cfg = monitor_config(&gate, &origin, &gateway_db, &dir.join("monitor.db").display().to_string());
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&monitor).arg("--config").arg(&monitor_cfg).args(args).output().unwrap();
        assert!(out.status.success(), "robots-monitor {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["once"]);
    // Access logs have whole seconds: each wave starts a second after a change.
    std::thread::sleep(Duration::from_millis(1100));

    let both = |from: &str, method: &str, agent: &str, path: &str| {
        let ip: IpAddr = from.parse().unwrap();
        gate.sending(agent);
        for addr in [gate.addr, direct] {
            request_from(Some(ip), addr, method, "shop.test", path, &[("User-Agent", agent)]).expect("an answer");
        }
    };
    const GPTBOT: &str =
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    both(REAL, "GET", GOOGLEBOT, "/robots.txt");
    both(REAL, "GET", GOOGLEBOT, "/ok");
    both(REAL, "GET", GOOGLEBOT, "/nogoogle/a");
    both(REAL, "HEAD", GOOGLEBOT, "/%6Eogoogle/b");
    // The origin merges slashes (nginx's default, and the site's): the
    // same resource, judged the same by both ledgers, never laundered.
    both(REAL, "GET", GOOGLEBOT, "//nogoogle/d");
    both(SPOOFER, "GET", GOOGLEBOT, "/robots.txt");
    both(SPOOFER, "GET", GOOGLEBOT, "/private/x");
    both(SPOOFER, "GET", GOOGLEBOT, "/nogoogle/c");
    both(OTHER, "GET", GPTBOT, "/private/y");
    both(OTHER, "GET", LONGBOT, "/robots.txt");
    both(OTHER, "GET", LONGBOT, "/news/1");
    both(OTHER, "GET", "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0", "/private/browser");

    origin.set("/robots.txt", Reply::ok(V2));
    gate.wait_serving(V2);
    run(&["once"]);
    std::thread::sleep(Duration::from_millis(1100));
    both(REAL, "GET", GOOGLEBOT, "/news/2"); // holds v1: obeyed
    both(OTHER, "GET", GPTBOT, "/news/3"); // read nothing: grace
    both(OTHER, "GET", LONGBOT, "/news/4"); // holds v1: obeyed
    both(SPOOFER, "GET", GOOGLEBOT, "/news/5"); // anonymous, no read protects it: grace
    gate.wait_written();
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 16));
    run(&["ingest", "--site", "shop", log.to_str().unwrap()]);

    let (from_gateway, from_log) =
        (ledger_text(&gateway_db), ledger_text(&dir.join("monitor.db").display().to_string()));
    assert!(from_gateway.contains("Googlebot verified violation line 5"), "{from_gateway}");
    assert!(
        from_gateway.lines().any(|l| l.starts_with("Googlebot verified violation line 5") && l.ends_with(" x3")),
        "/nogoogle/a, /%6Eogoogle/b and //nogoogle/d: {from_gateway}"
    );
    assert!(from_gateway.contains("GPTBot unverifiable grace"), "{from_gateway}");
    assert!(from_gateway.contains("Googlebot spoofed grace"), "{from_gateway}");
    assert_eq!(from_gateway, from_log, "the gateway's ledger and the access log's");
}

#[test]
fn the_gateway_and_its_access_log_agree_on_the_fast_path() {
    gateway_and_log_agree(true);
}

#[test]
fn the_gateway_and_its_access_log_agree_on_the_pipeline() {
    gateway_and_log_agree(false);
}

/// A fleet on one PostgreSQL: two gateways counting crawler requests and
/// two monitor daemons raising violation alerts from the ledger. One of
/// each is killed with -9 mid-way and started again. Every request is
/// counted once, and each violation rule raises one alert.
#[test]
fn two_gateways_and_two_monitors_on_postgres() {
    let Some(monitor) = monitor_bin() else { return };
    let dir = temp_dir("ledger-fleet-four");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let origin = origin();
    let a = start(&dir, &database, &origin, true, "200ms");
    let mut b = start(&dir, &database, &origin, false, "200ms");
    a.wait_serving(V1);
    b.wait_serving(V1);
    // The monitors share the gateways' database.
    let monitor_cfg = monitor_config(&a, &origin, &database, &database);
    let run = || {
        Proc(
            std::process::Command::new(&monitor)
                .args(["--config", monitor_cfg.to_str().unwrap(), "run"])
                .env("ROBOTSGATE_LOG", "warn")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let _m1 = run();
    let mut m2 = run();
    let mut sent = 0;
    for round in 0..4 {
        for i in 0..10 {
            let gate = if i % 2 == 0 { &a } else { &b };
            gate.get(REAL, GOOGLEBOT, &format!("/nogoogle/{round}/{i}"));
            sent += 1;
        }
        if round == 1 {
            // After the counts so far are written: kill -9 one of each.
            a.wait_written();
            b.wait_written();
            b.proc.kill();
            m2.kill();
            b = start(&dir, &database, &origin, false, "200ms");
            b.wait_serving(V1);
            m2 = run();
        }
    }
    a.wait_written();
    b.wait_written();
    assert_eq!(count(&database, "crawler = 'Googlebot' AND identity = 'verified' AND class = 'violation'"), sent);
    // One alert for the one rule and day, whichever monitor raised it.
    assert!(
        eventually(60, || scalar(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'violation'") >= 1),
        "a violation alert"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'violation'"), 1);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM violation_alerts"), 1);
}
