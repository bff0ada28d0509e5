//! The compliance ledger from access logs, with real parts: the monitor
//! records two revisions of a site's robots.txt; crawler traffic goes
//! through a real nginx, which writes its real access log; `ingest` judges
//! each request against what each crawler could hold, on SQLite and on
//! PostgreSQL. Re-imports, a gzip copy, a growing file and a kill -9 in
//! the middle of an import neither lose nor double a line.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "support/browser.rs"]
mod browser;
#[path = "support/openapi.rs"]
mod openapi;
mod support;
use support::*;

const V1: &str = "User-agent: *\nDisallow: /admin\n";
const V2: &str = "User-agent: *\nDisallow: /admin\nDisallow: /news\n";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
const GPTBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

fn get(from: &str, addr: SocketAddr, method: &str, path: &str, ua: &str) {
    let ip: IpAddr = from.parse().unwrap();
    request_from(Some(ip), addr, method, "shop.test", path, &[("User-Agent", ua)]).expect("an answer from nginx");
}

/// `SELECT SUM(requests)` of one class.
fn sum(database: &str, class: &str) -> i64 {
    scalar(
        database,
        &format!(
            "SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT) FROM ledger WHERE site = 'shop' AND class = '{class}'"
        ),
    )
}

fn ingest(cfg: &Path, files: &[&Path]) -> String {
    let mut args = vec!["ingest", "--site", "shop"];
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(files.iter().map(String::as_str));
    let out = monitor(cfg, &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run(db: Db) {
    let dir = temp_dir(&format!("compliance-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\nagents: [Googlebot]\ninterval: 1h\nsites:\n  - name: shop\n    url: http://shop.test:{}/robots.txt\n    url_sets: {{ main: [/] }}\n",
            origin.addr.port()
        )
        .replace("shop.test", "127.0.0.1"),
    );
    // The monitor fetches from 127.0.0.1; the log's Host is shop.test, and
    // the site knows both (its URL's host and the gateway's hosts).
    let cfg_text =
        std::fs::read_to_string(&cfg).unwrap() + "    proxy: { hosts: [shop.test], origin: \"127.0.0.1:1\" }\n";
    std::fs::write(&cfg, cfg_text).unwrap();
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    origin.set("/robots.txt", Reply::ok(V2));
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM states WHERE site = 'shop'"), 2);
    // The log's times are whole seconds: the traffic starts a second after
    // the change, so no line's time falls before it.
    std::thread::sleep(std::time::Duration::from_millis(1100));

    // Crawler traffic through a real nginx, which writes the real log.
    let log = dir.join("access.log");
    let Some((_nginx, addr)) = nginx(&dir, &log) else { return };
    get("127.0.0.2", addr, "GET", "/robots.txt", GOOGLEBOT); // Googlebot reads revision 2...
    get("127.0.0.2", addr, "GET", "/news/a", GOOGLEBOT); // ...then fetches what it forbids: a violation
    get("127.0.0.2", addr, "GET", "/shop", GOOGLEBOT); // obeyed
    get("127.0.0.3", addr, "GET", "/news/b", GPTBOT); // no fetch seen; revision 1 allowed it an hour ago: grace
    get("127.0.0.4", addr, "GET", "/admin/x", BINGBOT); // disallowed by both: a violation
    get("127.0.0.4", addr, "HEAD", "/%61dmin/y", BINGBOT); // HEAD, and another spelling: still one
    get("127.0.0.5", addr, "GET", "/admin/x", BROWSER); // no crawler: not judged
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 7));
    // Lines a real log also holds: a TLS handshake on the plain port, a
    // bare `-` request, an IPv6 client, an absolute target for another
    // host, and a truncated line.
    let mut tail = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    use std::io::Write;
    let now = chrono_like_now();
    writeln!(
        tail,
        "127.0.0.9 - - [{now}] \"\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xFC\\x03\\x03\" 400 157 \"-\" \"-\""
    )
    .unwrap();
    writeln!(tail, "127.0.0.9 - - [{now}] \"-\" 400 0 \"-\" \"-\"").unwrap();
    writeln!(tail, "::1 - - [{now}] \"GET /admin/v6 HTTP/1.1\" 200 0 \"-\" \"{BINGBOT}\"").unwrap();
    writeln!(tail, "127.0.0.4 - - [{now}] \"GET http://other.example/admin HTTP/1.1\" 200 0 \"-\" \"{BINGBOT}\"")
        .unwrap();
    writeln!(tail, "127.0.0.4 - - [{now}] \"GET /admin/cut HTTP/1.1\" 200").unwrap();
    drop(tail);

    let out = ingest(&cfg, &[&log]);
    assert!(out.contains("12 lines (0 read before); 6 crawler requests: 6 judged, 0 unjudged; 1 robots.txt fetch, identity not checked (no `identity:` configured), 0 redirected; 1 other client, 1 for other hosts, 2 not HTTP, 1 malformed, 0 blank, 0 directives"), "{out}");
    assert!(out.contains("line 12:"), "the malformed line by its number: {out}");
    let totals = |database: &str| (sum(database, "obeyed"), sum(database, "grace"), sum(database, "violation"));
    assert_eq!(totals(&database), (1, 1, 4), "obeyed, grace, violation");
    // Googlebot's violation names the line that decided, in revision 2.
    assert_eq!(
        scalar(&database, "SELECT line FROM ledger WHERE crawler = 'Googlebot' AND class = 'violation'"),
        3,
        "revision 2, line 3: Disallow: /news"
    );
    let rows = scalar(&database, "SELECT COUNT(*) FROM ledger");
    assert!(rows <= 5, "rows grow with distinct facts, not requests: {rows}");

    // The same bytes again, and as a gzip copy: nothing new.
    let out = ingest(&cfg, &[&log]);
    assert!(out.contains("0 lines (12 read before)"), "{out}");
    let gz = dir.join("access.log.1.gz");
    let status =
        Command::new("sh").arg("-c").arg(format!("gzip -c {} > {}", log.display(), gz.display())).status().unwrap();
    assert!(status.success());
    ingest(&cfg, &[&gz]);
    assert_eq!(totals(&database), (1, 1, 4), "a re-import doubles nothing");

    // The file grows: only the new lines count.
    get("127.0.0.4", addr, "GET", "/admin/later", BINGBOT);
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 13));
    let out = ingest(&cfg, &[&log]);
    assert!(out.contains("1 line (12 read before)"), "{out}");
    assert_eq!(totals(&database), (1, 1, 5));

    // Taken back (named by its compressed copy: the same file), then read
    // again: counted once, whatever the order.
    let out = monitor(&cfg, &["ingest", "--site", "shop", "--forget", gz.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("forgotten: 7 crawler requests taken out of the ledger; its 13 lines"), "{text}");
    assert_eq!(totals(&database), (0, 0, 0), "{text}");
    assert_eq!(scalar(&database, "SELECT CAST(COUNT(*) AS BIGINT) FROM ledger WHERE site = 'shop'"), 0);
    let out = ingest(&cfg, &[&log]);
    assert!(out.contains("13 lines (0 read before)"), "{out}");
    assert_eq!(totals(&database), (1, 1, 5));
    let out = monitor(&cfg, &["ingest", "--site", "shop", "--forget", dir.join("config.yaml").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to forget"));
    assert_eq!(totals(&database), (1, 1, 5));

    // The report: per crawler, its last robots.txt read and how far behind.
    let out = monitor(&cfg, &["compliance", "shop", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let of = |c: &str| report.as_array().unwrap().iter().find(|l| l["crawler"] == c).cloned().unwrap_or_default();
    let g = of("Googlebot");
    assert_eq!(
        (g["violations"].as_i64(), g["obeyed"].as_i64(), g["behind"].as_i64()),
        (Some(1), Some(1), Some(0)),
        "{g}"
    );
    assert!(g["read_revision"].as_i64().is_some(), "{g}");
    assert_eq!(of("GPTBot")["grace"], 1);
    assert_eq!(of("bingbot")["violations"], 4);
    let text = String::from_utf8_lossy(&monitor(&cfg, &["compliance", "shop"]).stdout).into_owned();
    assert!(text.contains("Googlebot (Google, search)") && text.contains("last read robots.txt"), "{text}");
    // No verification configured: said, not "0 verified".
    assert!(text.contains("[identity: 2 not checked]"), "{text}");
    assert!(text.contains("violation of revision") && text.contains("/news/a"), "{text}");
    // What decided, with no magic 0s: bingbot's violations by revision 2's
    // line, GPTBot's grace by what revision 1 allowed, each with its first
    // and last request.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let v = &of("bingbot")["violated"][0];
    assert_eq!((v["by"].as_str(), v["status"].is_null()), (Some("line"), true), "{v}");
    assert!(v["revision"].as_i64().is_some_and(|r| r > 0) && v["line"].as_i64().is_some_and(|l| l > 0), "{v}");
    assert!(v["rule"].as_str().is_some_and(|r| r.starts_with("Disallow: /admin")), "{v}");
    let (first, last) = (v["first_at"].as_i64().unwrap(), v["last_at"].as_i64().unwrap());
    assert!(first <= last && now_ms - first < 600_000, "{v}");
    let grace = of("GPTBot")["in_grace"].clone();
    assert_eq!(grace.as_array().map(Vec::len), Some(1), "{grace}");
    assert_eq!((grace[0]["requests"].as_i64(), grace[0]["samples"][0].as_str()), (Some(1), Some("/news/b")), "{grace}");
    assert_eq!(grace[0]["status"], serde_json::Value::Null, "{grace}");
    assert!(grace[0]["revision"].as_i64().is_some_and(|r| r > 0), "what allowed it: {grace}");
    assert!(text.contains("in grace (a file it could still hold allowed it): revision"), "{text}");
    assert!(text.contains("e.g. /news/b"), "{text}");
    // A crawler robotsgate does not know is refused, not answered "none
    // recorded": a slip gets the nearest token; any case reads.
    let out = monitor(&cfg, &["compliance", "shop", "--crawler", "GPTBott"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--crawler `GPTBott` is no crawler robotsgate knows; did you mean `GPTBot`?"), "{err}");
    let out = monitor(&cfg, &["compliance", "shop", "--crawler", "NoSuchBot"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`crawlers:`"));
    let out = monitor(&cfg, &["compliance", "shop", "--crawler", "gptbot"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("GPTBot (OpenAI, ai-training): 1 request,"));

    // "Behind" counts files served since, not revisions recorded: a third
    // file served for a while, then the one Googlebot read is back. The
    // crawler holds what the site serves now: current, not "1 behind".
    let behind = |cfg: &std::path::Path| {
        let out = monitor(cfg, &["compliance", "shop", "--crawler", "Googlebot", "--output", "json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        report[0]["behind"].as_i64()
    };
    origin.set("/robots.txt", Reply::ok(format!("{V2}Disallow: /tmp\n")));
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    assert_eq!(behind(&cfg), Some(1), "one file served since its read");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    origin.set("/robots.txt", Reply::ok(V2));
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    assert_eq!(behind(&cfg), Some(0), "it holds the file served now");
    let text =
        String::from_utf8_lossy(&monitor(&cfg, &["compliance", "shop", "--crawler", "Googlebot"]).stdout).into_owned();
    assert!(text.contains("the file the site serves now") && !text.contains("behind"), "{text}");

    // The console: the Compliance pages and their JSON, held to the
    // OpenAPI document.
    console(&cfg, db == Db::Sqlite);

    // A kill -9 in the middle of a large import, then a restart: every
    // line counted exactly once.
    let big = dir.join("big.log");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let n = 250_000;
    for i in 0..n {
        writeln!(f, "127.0.0.6 - - [{now}] \"GET /admin/{i} HTTP/1.1\" 200 0 \"-\" \"{BINGBOT}\"").unwrap();
    }
    drop(f);
    let before = sum(&database, "violation");
    let mut child = Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .args(["--config", cfg.to_str().unwrap(), "ingest", "--site", "shop", big.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the first batch is in (or at the latest after 20 s).
    eventually(20, || sum(&database, "violation") > before);
    child.kill().unwrap();
    let _ = child.wait();
    let partial = sum(&database, "violation") - before;
    ingest(&cfg, &[&big]);
    assert_eq!(sum(&database, "violation") - before, n, "after a kill at {partial} lines and a restart");
}

/// The current time in the combined log's form.
/// Today's UTC date, as the chart writes it (`2026-11-26`).
fn chrono_like_today() -> String {
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 86_400;
    let out = Command::new("date").args(["-u", "-d", &format!("@{}", days * 86_400), "+%Y-%m-%d"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn chrono_like_now() -> String {
    let out = Command::new("date").args(["-u", "+%d/%b/%Y:%H:%M:%S +0000"]).env("LC_ALL", "C").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn access_logs_on_sqlite() {
    run(Db::Sqlite);
}

#[test]
fn access_logs_on_postgres() {
    run(Db::Postgres);
}

/// The daemon tails a real nginx's access log (`sites[].logs`) through
/// both styles of rotation: rename-and-create (nginx reopening on USR1)
/// and copytruncate. Every line counts once.
fn tail(db: Db) {
    let dir = temp_dir(&format!("compliance-tail-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    let log = dir.join("access.log");
    let Some((nginx, addr)) = nginx(&dir, &log) else { return };
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\ninterval: 1h\nsites:\n  - name: shop\n    url: http://127.0.0.1:{}/robots.txt\n    proxy: {{ hosts: [shop.test], origin: \"127.0.0.1:1\" }}\n    logs:\n      - path: {}\n        format: combined\n",
            origin.addr.port(),
            log.display()
        ),
    );
    let _daemon = daemon(&cfg);
    assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM states WHERE site = 'shop'") == 1));
    // The tail takes the site's history again within two seconds.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let violations = || sum(&database, "violation");
    let send = |n: usize, tag: &str| {
        for i in 0..n {
            get("127.0.0.4", addr, "GET", &format!("/admin/{tag}/{i}"), BINGBOT);
        }
    };
    send(3, "first");
    assert!(eventually(20, || violations() == 3), "tailed: {}", violations());

    // Rename and create: nginx goes on writing to the renamed file until
    // it reopens its log.
    std::fs::rename(&log, dir.join("access.log.1")).unwrap();
    send(2, "renamed");
    let reopened = Command::new("kill").args(["-USR1", &nginx.0.id().to_string()]).status().unwrap();
    assert!(reopened.success());
    assert!(eventually(10, || log.exists()), "nginx reopened its log");
    send(1, "new");
    assert!(eventually(20, || violations() == 6), "after rename-and-create: {}", violations());

    // copytruncate: the copy holds what the live file held; the live file
    // starts again from nothing.
    send(2, "copied");
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 3));
    std::fs::copy(&log, dir.join("access.log.1")).unwrap();
    std::fs::OpenOptions::new().write(true).truncate(true).open(&log).unwrap();
    send(1, "truncated");
    assert!(eventually(20, || violations() == 9), "after copytruncate: {}", violations());
    // And stays there: nothing read twice.
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert_eq!(violations(), 9);
    assert_eq!(scalar(&database, "SELECT CAST(COUNT(*) AS BIGINT) FROM log_files WHERE site = 'shop'"), 3);
}

/// Two monitor daemons on one database tail the same log (two replicas
/// on one host), and one of them is killed with -9 mid-way and started
/// again: every line is counted exactly once.
fn two_tails(db: Db) {
    let dir = temp_dir(&format!("compliance-two-tails-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    let log = dir.join("access.log");
    let Some((_nginx, addr)) = nginx(&dir, &log) else { return };
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\ninterval: 1h\nsites:\n  - name: shop\n    url: http://127.0.0.1:{}/robots.txt\n    logs:\n      - path: {}\n",
            origin.addr.port(),
            log.display()
        ),
    );
    let _a = daemon(&cfg);
    let mut b = daemon(&cfg);
    assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM states WHERE site = 'shop'") == 1));
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let violations = || sum(&database, "violation");
    let mut sent = 0;
    let now = chrono_like_now();
    for round in 0..6 {
        for i in 0..20 {
            get("127.0.0.4", addr, "GET", &format!("/admin/{round}/{i}"), BINGBOT);
        }
        // Bursts as a busy site writes them, so both tails read at once.
        let burst: String = (0..20_000)
            .map(|i| {
                format!("127.0.0.4 - - [{now}] \"GET /admin/burst/{round}/{i} HTTP/1.1\" 200 3 \"-\" \"{BINGBOT}\"\n")
            })
            .collect();
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(burst.as_bytes()).unwrap();
        sent += 20_020;
        if round == 2 {
            b.kill();
            b = daemon(&cfg);
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(eventually(30, || violations() == sent), "counted {} of {sent}", violations());
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert_eq!(violations(), sent, "nothing counted twice");
}

#[test]
fn two_tails_of_one_log_count_once_on_sqlite() {
    two_tails(Db::Sqlite);
}

#[test]
fn two_tails_of_one_log_count_once_on_postgres() {
    two_tails(Db::Postgres);
}

/// The daemon keeps the ledger within `compliance_retention` though
/// nothing is imported (gateways write to it directly).
#[test]
fn the_daemon_enforces_ledger_retention() {
    let dir = temp_dir("compliance-retention");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\ninterval: 1h\ncompliance_retention: 30days\nsites:\n  - name: shop\n    url: http://127.0.0.1:{}/robots.txt\n",
            origin.addr.port()
        ),
    );
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    let today = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 / 86_400;
    for (crawler, day) in [("Old", today - 40), ("Recent", today - 10)] {
        scalar(
            &database,
            &format!(
                "INSERT INTO ledger (site, crawler, identity, revision_id, line, status, class, day, requests, stale, \
                 first_at, last_at, samples, sample_count) VALUES ('shop', '{crawler}', 'verified', 0, 0, 0, 'obeyed', {day}, \
                 1, 0, 0, 0, '', 0) RETURNING 1"
            ),
        );
    }
    let _daemon = daemon(&cfg);
    assert!(
        eventually(20, || scalar(&database, "SELECT COUNT(*) FROM ledger WHERE crawler = 'Old'") == 0),
        "the 40-day-old row is pruned"
    );
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM ledger WHERE crawler = 'Recent'"), 1);
}

#[test]
fn a_tailed_log_follows_rotation_on_sqlite() {
    tail(Db::Sqlite);
}

#[test]
fn a_tailed_log_follows_rotation_on_postgres() {
    tail(Db::Postgres);
}

/// A verified crawler's violation raises one `violation` alert per rule
/// and day, through the configured channels; a spoofer's raises none.
fn violation_alerts(db: Db) {
    let dir = temp_dir(&format!("compliance-alerts-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    origin.set(
        "/googlebot.json",
        Reply::ok(r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.2/32"}]}"#),
    );
    let hook = Receiver::start_on(free_port());
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\ninterval: 1h\nproxy:\n  listen: [\"127.0.0.1:1\"]\n  state_dir: state\n  identity:\n    reverse_dns: false\n\
             crawlers:\n  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/, verify: {{ ip_ranges: [\"{feed}\"] }} }}\n\
             channels:\n  - name: ops\n    webhook: http://127.0.0.1:{hook}/hook\n    severities: [critical, warning]\n\
             sites:\n  - name: shop\n    url: http://127.0.0.1:{port}/robots.txt\n    proxy: {{ hosts: [shop.test], origin: \"127.0.0.1:1\" }}\n",
            feed = origin.url("/googlebot.json"),
            hook = hook.port,
            port = origin.addr.port(),
        ),
    );
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let now = chrono_like_now();
    let log = dir.join("access.log");
    let line = |ip: &str, path: &str| format!("{ip} - - [{now}] \"GET {path} HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n");
    std::fs::write(
        &log,
        line("127.0.0.2", "/admin/a") + &line("127.0.0.2", "/admin/b") + &line("127.0.0.3", "/admin/c"),
    )
    .unwrap();
    ingest(&cfg, &[&log]);
    assert_eq!(
        scalar(
            &database,
            "SELECT CAST(SUM(requests) AS BIGINT) FROM ledger WHERE identity = 'verified' AND class = 'violation'"
        ),
        2
    );
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    assert!(eventually(10, || !hook.requests().is_empty()), "the alert reached the webhook");
    let (_, body) = hook.requests()[0].clone();
    assert!(body.contains("Googlebot (verified) ignored robots.txt"), "{body}");
    assert!(body.contains("Disallow: /admin") && body.contains("/admin/a"), "{body}");
    // Once per rule and day: more of the same raises nothing, nor does the
    // spoofer's violation.
    std::fs::write(&log, std::fs::read_to_string(&log).unwrap() + &line("127.0.0.2", "/admin/d")).unwrap();
    ingest(&cfg, &[&log]);
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(hook.requests().len(), 1, "{:?}", hook.requests());
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'violation'"), 1);
}

#[test]
fn violation_alerts_on_sqlite() {
    violation_alerts(Db::Sqlite);
}

#[test]
fn violation_alerts_on_postgres() {
    violation_alerts(Db::Postgres);
}

/// The Compliance pages in the console, their JSON against the OpenAPI
/// document, and the pages in Chromium (a screenshot for the README).
fn console(cfg: &Path, in_chromium: bool) {
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let _serve = serve(cfg, addr, None);
    let doc = openapi::Document::fetch(addr);
    let all = openapi::send(addr, "GET", "/api/compliance?days=7", &[], b"");
    assert_eq!(all.status, 200);
    doc.check("GET", "/api/compliance", &all);
    let shop = all.json()["sites"].as_array().unwrap().iter().find(|s| s["site"] == "shop").cloned().unwrap();
    assert_eq!((shop["violations"].as_i64(), shop["grace"].as_i64()), (Some(5), Some(1)), "{shop}");
    let today = all.json()["days"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(today["violations"], 5, "{today}");
    let site = openapi::send(addr, "GET", "/api/compliance/shop", &[], b"");
    assert_eq!(site.status, 200);
    doc.check("GET", "/api/compliance/{site}", &site);
    for (target, template, want) in [
        ("/api/compliance/nope", "/api/compliance/{site}", 404),
        ("/api/compliance?days=0", "/api/compliance", 400),
        ("/api/compliance/shop?days=abc", "/api/compliance/{site}", 400),
    ] {
        let a = openapi::send(addr, "GET", target, &[], b"");
        assert_eq!((a.status, a.content_type.as_str()), (want, "application/problem+json"), "{target}");
        doc.check("GET", template, &a);
    }
    let typo = openapi::send(addr, "GET", "/api/compliance/shop?crawler=Gooogle-bot", &[], b"");
    assert_eq!(typo.status, 400);
    doc.check("GET", "/api/compliance/{site}", &typo);
    assert!(
        typo.json()["detail"].as_str().is_some_and(|d| d.contains("did you mean `Googlebot`?")),
        "{:?}",
        typo.json()
    );
    // A long name is refused at once, and not echoed whole.
    let long = format!("/api/compliance/shop?crawler={}", "x".repeat(20_000));
    let long = openapi::send(addr, "GET", &long, &[], b"");
    assert_eq!(long.status, 400);
    assert!(long.body.len() < 2_000, "{}", long.body.len());
    let gptbot = openapi::send(addr, "GET", "/api/compliance/shop?crawler=gptbot", &[], b"");
    doc.check("GET", "/api/compliance/{site}", &gptbot);
    assert_eq!(gptbot.json()["crawlers"][0]["in_grace"][0]["by"], "revision", "{:?}", gptbot.json());
    let none = openapi::send(addr, "GET", "/sites/shop/compliance?crawler=petalbot", &[], b"");
    assert_eq!(none.status, 200);
    assert!(String::from_utf8_lossy(&none.body).contains("No requests of PetalBot recorded on shop"));
    let typo = openapi::send(addr, "GET", "/sites/shop/compliance?crawler=PetalBott", &[], b"");
    assert_eq!(typo.status, 400);
    assert!(String::from_utf8_lossy(&typo.body).contains("did you mean `PetalBot`?"));
    let page = openapi::send(addr, "GET", "/sites/shop/compliance?crawler=GPTBot", &[], b"");
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("id=\"grace\"") && html.contains("/news/b") && html.contains("by no rule"), "{html}");
    // Drilled into GPTBot, the chart is GPTBot's (its one grace request
    // today), not the site's five violations.
    let today = chrono_like_today();
    assert!(html.contains(&format!("<title>{today}: 0 violations, 1 in grace, 1 request</title>")), "{html}");
    let whole = openapi::send(addr, "GET", "/sites/shop/compliance", &[], b"");
    let whole = String::from_utf8_lossy(&whole.body);
    assert!(whole.contains(&format!("<title>{today}: 5 violations, 1 in grace,")), "{whole}");
    let page = openapi::send(addr, "GET", "/sites/shop/compliance?crawler=Googlebot", &[], b"");
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("<svg") && html.contains("Disallow: /news") && html.contains("/news/a"), "{html}");
    assert_eq!(html.matches("<script").count(), 0);
    // Issue #64: drilled into one crawler, the table is that crawler's as
    // the chart is, with a way back to every crawler.
    let table = html.split("id=\"crawlers\"").nth(1).unwrap_or_default();
    assert!(table.contains(">Googlebot</a>") && !table.contains(">bingbot</a>"), "{table}");
    assert!(html.contains("id=\"filtered\"") && html.contains("every crawler</a>"), "{html}");
    // No `identity:` here: nothing was verified, so the overview says "not
    // checked", never a measured-looking 0.
    assert!(shop["spoofed"].is_null() && shop["verified_violations"].is_null(), "{shop}");
    let overview = String::from_utf8_lossy(&openapi::send(addr, "GET", "/compliance", &[], b"").body).into_owned();
    assert_eq!(overview.matches(">not checked</td>").count(), 2, "{overview}");

    // The ledger's violations as a metric, read back from either database.
    let metrics = String::from_utf8_lossy(&openapi::send(addr, "GET", "/metrics", &[], b"").body).into_owned();
    for want in [
        r#"robotsgate_crawler_violations_total{crawler="bingbot",identity="unverifiable",site="shop"} 4"#,
        r#"robotsgate_crawler_violations_total{crawler="Googlebot",identity="unverifiable",site="shop"} 1"#,
        // By request time, for alerting: these were made just now.
        r#"robotsgate_crawler_violations_recent{crawler="bingbot",identity="unverifiable",site="shop"} 4"#,
        r#"robotsgate_crawler_violations_recent{crawler="Googlebot",identity="unverifiable",site="shop"} 1"#,
    ] {
        assert!(metrics.contains(want), "{want} in\n{metrics}");
    }
    if !in_chromium {
        return;
    }
    let Some((_driver, driver_port)) = browser::chromedriver() else { return };
    block_on(async {
        let c = browser::browser(driver_port).await;
        c.goto(&format!("http://{addr}/compliance")).await.unwrap();
        c.wait().for_element(fantoccini::Locator::Id("chart")).await.expect("the chart");
        c.find(fantoccini::Locator::LinkText("shop")).await.unwrap().click().await.unwrap();
        c.wait().for_element(fantoccini::Locator::Id("crawlers")).await.expect("the site's crawlers");
        let crawlers = c.find(fantoccini::Locator::Id("crawlers")).await.unwrap().text().await.unwrap();
        assert!(crawlers.contains("Googlebot") && crawlers.contains("ai-training"), "{crawlers}");
        c.find(fantoccini::Locator::LinkText("Googlebot")).await.unwrap().click().await.unwrap();
        c.wait().for_element(fantoccini::Locator::Id("violated")).await.expect("the drill-down");
        let violated = c.find(fantoccini::Locator::Id("violated")).await.unwrap().text().await.unwrap();
        assert!(violated.contains("line 3") && violated.contains("Disallow: /news"), "{violated}");
        assert!(
            violated.contains("not checked") && !violated.contains("unverifiable"),
            "as the CLI says it: {violated}"
        );
        // Grace has its rows too: what allowed it, when, and the URLs.
        c.goto(&format!("http://{addr}/sites/shop/compliance?crawler=GPTBot")).await.unwrap();
        c.wait().for_element(fantoccini::Locator::Id("grace")).await.expect("the grace rows");
        let grace = c.find(fantoccini::Locator::Id("grace")).await.unwrap().text().await.unwrap();
        assert!(grace.contains("by no rule") && grace.contains("/news/b") && grace.contains("Z"), "{grace}");
        // Drilled in, the table holds GPTBot alone; back to every crawler.
        c.find(fantoccini::Locator::LinkText("every crawler")).await.unwrap().click().await.unwrap();
        c.wait().for_element(fantoccini::Locator::LinkText("Googlebot")).await.expect("every crawler again");
        c.find(fantoccini::Locator::LinkText("Googlebot")).await.unwrap().click().await.unwrap();
        c.wait().for_element(fantoccini::Locator::Id("violated")).await.expect("back to Googlebot");
        // The chart's last date is drawn whole, and on a phone's width the
        // page does not scroll sideways (the chart shrinks, tables scroll
        // inside themselves).
        let js = "const t = [...document.querySelectorAll('#chart text')].pop(); const s = document.getElementById('chart'); \
                  return t.getBoundingClientRect().right <= s.getBoundingClientRect().right + 0.5";
        assert_eq!(c.execute(js, vec![]).await.unwrap(), serde_json::json!(true), "the last label is clipped");
        c.set_window_size(390, 800).await.unwrap();
        let wide = "return document.documentElement.scrollWidth - document.documentElement.clientWidth";
        assert_eq!(c.execute(wide, vec![]).await.unwrap(), serde_json::json!(0), "the page scrolls sideways at 390 px");
        c.set_window_size(1280, 900).await.unwrap();
        let png = c.screenshot().await.unwrap();
        let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        std::fs::write(shots.join("compliance.png"), png).unwrap();
        c.close().await.unwrap();
    });
}

/// The config of one site, `shop`, polled at `origin` and fronted for
/// `shop.test`, testing `agent`, with its history in `database`.
fn shop_config(dir: &Path, database: &str, origin: &Origin, agent: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "database: \"{database}\"\nagents: [{agent}]\ninterval: 1h\nsites:\n  - name: shop\n    url: http://127.0.0.1:{}/robots.txt\n    proxy: {{ hosts: [shop.test], origin: \"127.0.0.1:1\" }}\n",
            origin.addr.port()
        ),
    )
}

/// A shop polled once, serving [`V2`], with its history in a fresh SQLite
/// file; a second later, so that log lines written now come after it.
struct PolledShop {
    dir: std::path::PathBuf,
    database: String,
    /// Kept alive: the site's robots.txt is served from it.
    origin: Origin,
    cfg: std::path::PathBuf,
}

fn polled_shop(name: &str) -> Option<PolledShop> {
    let dir = temp_dir(name);
    let database = fresh_database(Db::Sqlite, &dir)?;
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V2));
    let cfg = shop_config(&dir, &database, &origin, "Googlebot");
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    Some(PolledShop { dir, database, origin, cfg })
}

/// `ingest` with its exit code, standard output and standard error.
fn ingest_raw(cfg: &Path, extra: &[&str], files: &[&Path]) -> (Option<i32>, String, String) {
    let mut args = vec!["ingest", "--site", "shop"];
    args.extend_from_slice(extra);
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(files.iter().map(String::as_str));
    let out = monitor(cfg, &args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What real servers write, read as GoAccess reads it: a real nginx logs a
/// target with a space, a raw UTF-8 target (as `\xHH`), a redirected
/// robots.txt fetch, `CONNECT` and `OPTIONS *`; then files of the shapes real
/// logs take: no final line end, a byte-order mark, blank lines, a .gz cut
/// short, an xz file, a first line past 64 KiB, and the wrong `--format`.
#[test]
fn real_log_lines() {
    let Some(PolledShop { dir, database, origin: _origin, cfg }) = polled_shop("compliance-real-lines") else { return };

    let log = dir.join("access.log");
    let Some((_nginx, addr)) = nginx(&dir, &log) else { return };
    let ip: IpAddr = "127.0.0.2".parse().unwrap();
    let send = |method: &str, path: &str, extra: &[(&str, &str)]| {
        let mut headers = vec![("User-Agent", GOOGLEBOT)];
        headers.extend_from_slice(extra);
        request_from(Some(ip), addr, method, "shop.test", path, &headers)
    };
    assert_eq!(send("GET", "/robots.txt", &[]).map(|r| r.status), Some(200));
    assert_eq!(send("GET", "/robots.txt", &[("X-Move", "1")]).map(|r| r.status), Some(301));
    send("GET", "/news/a b", &[]); // nginx answers 400 before the headers: logged with its space, and no User-Agent
    send("GET", "/café/menu", &[]); // logged as /caf\xC3\xA9/menu: obeyed
    send("GET", "/news/é", &[]); // a violation of Disallow: /news
    send("CONNECT", "shop.test:443", &[]);
    send("OPTIONS", "*", &[]);
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 7));
    let written = std::fs::read(&log).unwrap();
    assert!(String::from_utf8_lossy(&written).contains("/caf\\xC3\\xA9/menu"), "nginx's escape");

    let (code, out, err) = ingest_raw(&cfg, &[], &[&log]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("7 lines (0 read before); 2 crawler requests: 2 judged, 0 unjudged; 1 robots.txt fetch, identity not checked (no `identity:` configured), 1 redirected; 1 other client, 0 for other hosts, 2 not HTTP, 0 malformed, 0 blank, 0 directives"),
        "{out}"
    );
    // The escaped UTF-8 targets are judged as the bytes they stand for.
    assert_eq!(sum(&database, "violation"), 1);
    assert_eq!(sum(&database, "obeyed"), 1);

    // No final line end, a byte-order mark, blank lines: every line read.
    let mut copy = b"\xEF\xBB\xBF".to_vec();
    copy.extend_from_slice(&written);
    copy.extend_from_slice(b"\n\r\n");
    copy.extend_from_slice(&written[..written.len() - 1]);
    let shaped = dir.join("shaped.log");
    std::fs::write(&shaped, &copy).unwrap();
    let (code, out, err) = ingest_raw(&cfg, &[], &[&shaped]);
    assert_eq!(code, Some(0), "{err}");
    // Every physical line counts, the blank ones as blank.
    assert!(out.contains("16 lines (0 read before)") && out.contains(" 0 malformed, 2 blank"), "{out}");
    // Read again: nothing new, the last line included.
    let (_, out, _) = ingest_raw(&cfg, &[], &[&shaped]);
    assert!(out.contains("0 lines (16 read before)"), "{out}");

    // A .gz cut short: its readable lines count, the error is named, and the
    // files after it are read; an xz file is named, not read as text.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    use std::io::Write;
    let mut many = Vec::new();
    for i in 0..200 {
        many.extend_from_slice(&written.replace_first(b"/robots.txt", format!("/page/{i}").as_bytes()));
    }
    gz.write_all(&many).unwrap();
    let gz = gz.finish().unwrap();
    let cut = dir.join("cut.log.gz");
    std::fs::write(&cut, &gz[..gz.len() - 40]).unwrap();
    let bz2 = dir.join("old.log.bz2");
    std::fs::write(&bz2, b"BZh91AY&SY\x00\x00").unwrap();
    let after = dir.join("after.log");
    std::fs::write(&after, written.replace_first(b"GET /robots.txt", b"GET /after")).unwrap();
    let (code, out, err) = ingest_raw(&cfg, &[], &[&cut, &bz2, &after]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("cut.log.gz: read up to line"), "{err}");
    assert!(err.contains("old.log.bz2 is bzip2-compressed"), "{err}");
    let cut_lines: i64 = out
        .lines()
        .find(|l| l.contains("cut.log.gz:"))
        .and_then(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(cut_lines > 100, "the readable lines of the cut file count: {out}");
    assert!(out.contains("after.log: 7 lines (0 read before)"), "the file after them is read: {out}");

    // xz and zstd, as logrotate's `compresscmd` writes them, read by their
    // magic bytes whatever the name: the same lines as the plain file.
    for (tool, name) in [("xz", "rotated.log.xz"), ("zstd", "rotated.log.zst")] {
        let plain = dir.join(format!("{tool}-source.log"));
        std::fs::write(&plain, written.replace_first(b"GET /robots.txt", format!("GET /{tool}").as_bytes())).unwrap();
        let packed = dir.join(name);
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("{tool} -c {} > {}", plain.display(), packed.display()))
            .status()
            .unwrap();
        assert!(status.success(), "{tool}");
        let (code, out, err) = ingest_raw(&cfg, &[], &[&packed]);
        assert_eq!(code, Some(0), "{tool}: {err}");
        assert!(out.contains(&format!("{name}: 7 lines (0 read before)")) && out.contains(" 0 malformed"), "{out}");
    }

    // A line cut after the referrer is cut short, not a client request.
    let referer_cut = dir.join("referer-cut.log");
    let first = String::from_utf8_lossy(&written).lines().next().unwrap().to_string();
    let cut_line = format!("{} \"-\" \n", first.rsplitn(3, " \"").last().unwrap().replace("/robots.txt", "/refcut"));
    std::fs::write(&referer_cut, cut_line.as_bytes()).unwrap();
    let (_, out, _) = ingest_raw(&cfg, &[], &[&referer_cut]);
    assert!(out.contains("1 line (0 read before)") && out.contains(" 1 malformed"), "{cut_line}: {out}");

    // A first line past 64 KiB: one malformed line, and the rest read.
    let mut long = vec![b'x'; 70 * 1024];
    long.push(b'\n');
    long.extend_from_slice(&written.replace_first(b"GET /robots.txt", b"GET /long"));
    let long_file = dir.join("long.log");
    std::fs::write(&long_file, &long).unwrap();
    let (code, out, err) = ingest_raw(&cfg, &[], &[&long_file]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("8 lines (0 read before)") && out.contains(" 1 malformed"), "{out}");

    // The wrong --format: refused, not marked read; the right one reads it all.
    let other = dir.join("other.log");
    std::fs::write(&other, written.replace_first(b"GET /robots.txt", b"GET /other")).unwrap();
    let (code, _, err) = ingest_raw(&cfg, &["--format", "caddy"], &[&other]);
    assert_eq!(code, Some(1));
    assert!(err.contains("none of its 7 lines is a `caddy` line") && err.contains("not marked read"), "{err}");
    let (code, out, err) = ingest_raw(&cfg, &[], &[&other]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("7 lines (0 read before)"), "{out}");
}

/// `replace_first` on bytes, for building files from a real log.
trait ReplaceFirst {
    fn replace_first(&self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceFirst for Vec<u8> {
    fn replace_first(&self, from: &[u8], to: &[u8]) -> Vec<u8> {
        match self.windows(from.len()).position(|w| w == from) {
            Some(at) => [&self[..at], to, &self[at + from.len()..]].concat(),
            None => self.clone(),
        }
    }
}

/// A new user's first hour: a log imported before the first poll has no
/// evidence of what crawlers could hold. Its requests are `unjudged` on
/// every surface, never "obeyed" (GPTBot included, which every revision
/// disallows); requests after the first poll are judged.
#[test]
fn before_the_first_poll_nothing_is_obeyed() {
    let dir = temp_dir("compliance-unjudged");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: GPTBot\nDisallow: /\n"));
    let cfg = shop_config(&dir, &database, &origin, "GPTBot");
    let log = dir.join("access.log");
    let Some((_nginx, addr)) = nginx(&dir, &log) else { return };
    get("127.0.0.3", addr, "GET", "/robots.txt", GPTBOT);
    get("127.0.0.3", addr, "GET", "/a", GPTBOT);
    get("127.0.0.3", addr, "GET", "/b", GPTBOT);
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 3));
    let out = ingest(&cfg, &[&log]);
    // One line that never calls them judged.
    assert!(out.contains("2 crawler requests: 0 judged, 2 unjudged (no robots.txt of shop known yet)"), "{out}");
    assert!(!out.contains("crawler requests judged"), "{out}");
    assert_eq!((sum(&database, "obeyed"), sum(&database, "unjudged")), (0, 2));
    let report = String::from_utf8(monitor(&cfg, &["compliance", "shop"]).stdout).unwrap();
    assert!(report.contains("2 requests, 0 obeyed, 0 in grace, 0 violations, 2 unjudged"), "{report}");
    // The robots.txt fetch the import counted is seen, its content unknown,
    // not "no robots.txt read seen".
    assert!(out.contains("1 robots.txt fetch"), "{out}");
    assert!(!report.contains("no robots.txt read seen"), "{report}");
    assert!(
        report.contains("what it got is unknown: it came before the first robots.txt robotsgate knows"),
        "{report}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&monitor(&cfg, &["compliance", "shop", "--format", "json"]).stdout).unwrap();
    assert_eq!(json[0]["unjudged"], 2, "{json}");

    // The first poll; what comes after it is judged.
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    get("127.0.0.3", addr, "GET", "/c", GPTBOT);
    assert!(eventually(10, || std::fs::read_to_string(&log).unwrap_or_default().lines().count() == 4));
    ingest(&cfg, &[&log]);
    assert_eq!((sum(&database, "violation"), sum(&database, "unjudged")), (1, 2));

    // A log past compliance_retention (90 days) is refused, not judged and
    // pruned in the same run.
    let old = dir.join("2020.log");
    std::fs::write(
        &old,
        format!("127.0.0.3 - - [01/Mar/2020:10:00:00 +0000] \"GET /d HTTP/1.1\" 200 3 \"-\" \"{GPTBOT}\"\n"),
    )
    .unwrap();
    let out = monitor(&cfg, &["ingest", "--site", "shop", old.to_str().unwrap()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("1 request is older than compliance_retention (90 days)"), "{stdout}");
    assert!(stderr.contains("every request is older than compliance_retention"), "{stderr}");
}

/// The layouts servers are configured with, written by the real servers:
/// Apache's `vhost_combined` (Debian's other_vhosts_access.log) and a
/// custom `LogFormat` with the forwarded address first and the request
/// time before the status; an nginx `log_format` of the same shape.
#[test]
fn apache_and_nginx_layouts() {
    let Some(PolledShop { dir, database, origin: _origin, cfg }) = polled_shop("compliance-layouts") else { return };

    let apache_layout = r#"%{X-Forwarded-For}i %h %t %D "%r" %>s "%{User-Agent}i""#;
    let apache_dir = dir.join("apache");
    std::fs::create_dir_all(&apache_dir).unwrap();
    let Some((_apache, apache)) = apache(&apache_dir, apache_layout) else { return };
    let nginx_layout =
        r#"$http_x_forwarded_for $remote_addr [$time_local] $request_time "$request" $status "$http_user_agent" $host"#;
    let nginx_dir = dir.join("nginx");
    std::fs::create_dir_all(&nginx_dir).unwrap();
    let nginx_log = nginx_dir.join("access.log");
    let Some((_nginx, nginx)) = nginx_with(&nginx_dir, &nginx_log, Some(nginx_layout)) else { return };
    for addr in [apache, nginx] {
        let send = |path: &str, extra: &[(&str, &str)]| {
            let mut headers = vec![("User-Agent", GOOGLEBOT)];
            headers.extend_from_slice(extra);
            request_from(None, addr, "GET", "shop.test", path, &headers).expect("an answer")
        };
        // Each answer checked: a 403 robots.txt would mean "allow all".
        assert_eq!(send("/robots.txt", &[]).status, 200, "{addr}");
        assert_eq!(send("/robots.txt", &[("X-Move", "1")]).status, 301);
        assert_eq!(send("/news/a", &[("X-Forwarded-For", "66.249.66.1")]).status, 200); // a violation of Disallow: /news
        assert_eq!(send("/ok", &[]).status, 200); // obeyed
    }
    let lines = |p: &Path| std::fs::read_to_string(p).unwrap_or_default().lines().count();
    assert!(eventually(10, || lines(&apache_dir.join("custom.log")) == 4 && lines(&nginx_log) == 4));
    let expected = "4 lines (0 read before); 2 crawler requests: 2 judged, 0 unjudged; 1 robots.txt fetch, identity not checked (no `identity:` configured), 1 redirected; 0 other clients, 0 for other hosts, 0 not HTTP, 0 malformed, 0 blank, 0 directives";
    let vhost = apache_dir.join("other_vhosts_access.log");
    for (args, file) in [
        (vec!["--format", "vhost_combined"], vhost.as_path()),
        (vec!["--format", "apache", "--layout", apache_layout], apache_dir.join("custom.log").as_path()),
        (vec!["--format", "nginx", "--layout", nginx_layout], nginx_log.as_path()),
    ] {
        let (code, out, err) = ingest_raw(&cfg, &args, &[file]);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(out.contains(expected), "{args:?}: {out}\n{}", std::fs::read_to_string(file).unwrap());
    }
    assert_eq!((sum(&database, "violation"), sum(&database, "obeyed")), (3, 3));
    // The forwarded address is the client: verification would see it.
    let custom = std::fs::read_to_string(apache_dir.join("custom.log")).unwrap();
    assert!(custom.lines().nth(2).unwrap().starts_with("66.249.66.1 127.0.0.1 ["), "{custom}");

    // A layout that cannot be read is refused, naming why.
    let (code, _, err) = ingest_raw(&cfg, &["--format", "nginx", "--layout", "$remote_addr $status"], &[&nginx_log]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--layout") && err.contains("no time"), "{err}");
}

/// W3C extended logs (IIS, CloudFront) and AWS load balancer logs, in the
/// shapes their documentation gives: two IIS files with the same header
/// lines are two files, a `#Fields:` that changes within a file is
/// followed, and a resumed read of a grown file knows its fields.
#[test]
fn w3c_and_load_balancer_logs() {
    let Some(PolledShop { dir, database, origin: _origin, cfg }) = polled_shop("compliance-w3c") else { return };
    let out = Command::new("date").args(["-u", "+%Y-%m-%d %H:%M:%S"]).output().unwrap();
    let now = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (date, time) = now.split_once(' ').unwrap();
    let ua = GOOGLEBOT.replace(' ', "+");
    let header = "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n\
                  #Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n";
    let iis = |path: &str, query: &str| {
        format!("{date} {time} 10.0.0.5 GET {path} {query} 443 - 66.249.66.1 {ua} - 200 0 0 15\n")
    };
    let (a, b) = (dir.join("u_ex261125.log"), dir.join("u_ex261126.log"));
    std::fs::write(&a, format!("{header}{}{}", iis("/news/a", "-"), iis("/ok", "x=1"))).unwrap();
    std::fs::write(&b, format!("{header}{}", iis("/news/b", "-"))).unwrap();
    let (code, out, err) = ingest_raw(&cfg, &["--format", "w3c"], &[&a, &b]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("u_ex261125.log: 5 lines (0 read before); 2 crawler requests: 2 judged"), "{out}");
    assert!(
        out.contains("u_ex261126.log: 4 lines (0 read before); 1 crawler request: 1 judged"),
        "the same header is another file: {out}"
    );
    // The file grows, with new #Fields (IIS writes them again after a restart).
    let mut grown = std::fs::read_to_string(&a).unwrap();
    grown.push_str("#Fields: date time c-ip cs-method cs-uri-stem sc-status cs(User-Agent)\n");
    grown.push_str(&format!("{date} {time} 66.249.66.1 GET /news/c 200 {ua}\n"));
    std::fs::write(&a, grown).unwrap();
    let (code, out, _) = ingest_raw(&cfg, &["--format", "w3c"], &[&a]);
    assert_eq!(code, Some(0));
    assert!(out.contains("2 lines (5 read before); 1 crawler request: 1 judged, 0 unjudged; 0 robots.txt fetches, identity not checked (no `identity:` configured), 0 redirected; 0 other clients, 0 for other hosts, 0 not HTTP, 0 malformed, 0 blank, 1 directive"), "{out}");

    // CloudFront: tabs, percent-encoded values, x-host-header.
    let cf = dir.join("E2EXAMPLE.2026-11-25-10.abcd1234");
    let ua_cf = GOOGLEBOT.replace(' ', "%2520");
    std::fs::write(
        &cf,
        format!(
            "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken\n\
             {date}\t{time}\tFRA56-C1\t2390\t66.249.66.1\tGET\td111111abcdef8.cloudfront.net\t/news/d\t200\t-\t{ua_cf}\t-\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVG==\tshop.test\thttps\t420\t0.003\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ingest_raw(&cfg, &["--format", "cloudfront"], &[&cf]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("3 lines (0 read before); 1 crawler request: 1 judged"), "{out}");

    // An Application Load Balancer's log.
    let stamp = format!("{date}T{time}.123456Z");
    let alb = dir.join("alb.log");
    std::fs::write(
        &alb,
        format!(
            "https {stamp} app/shop-lb/50dc6c495c0c9188 66.249.66.1:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 \"GET https://shop.test:443/news/e HTTP/1.1\" \"{GOOGLEBOT}\" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/shop/73e2d6bc24d8a067 \"Root=1-58337262-36d228ad5d99923122bbe354\" \"shop.test\" \"-\" 0 {stamp} \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"200\" \"-\" \"-\"\n\
             https {stamp} app/shop-lb/50dc6c495c0c9188 66.249.66.1:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 \"GET https://other.test:443/x HTTP/1.1\" \"{GOOGLEBOT}\" - - - \"-\" \"other.test\" \"-\" 0 {stamp} \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"200\" \"-\" \"-\"\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ingest_raw(&cfg, &["--format", "alb"], &[&alb]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("2 lines (0 read before); 1 crawler request: 1 judged, 0 unjudged; 0 robots.txt fetches, identity not checked (no `identity:` configured), 0 redirected; 0 other clients, 1 for other hosts"), "{out}");
    // /news/a, /news/b, /news/c, /news/d and /news/e break Disallow: /news; /ok does not.
    assert_eq!((sum(&database, "violation"), sum(&database, "obeyed")), (5, 1));

    // A Classic Load Balancer log from before the User-Agent and TLS fields:
    // every line read, none a crawler's.
    let old_elb = dir.join("old-elb.log");
    let elb_line = |path: &str| {
        format!(
            "{stamp} shop-lb 66.249.66.1:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 \"GET http://shop.test:80{path} HTTP/1.1\"\n"
        )
    };
    std::fs::write(&old_elb, elb_line("/news/f") + &elb_line("/ok")).unwrap();
    let (code, out, err) = ingest_raw(&cfg, &["--format", "elb"], &[&old_elb]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("2 lines (0 read before); 0 crawler requests") && out.contains("2 other clients"), "{out}");
    assert!(out.contains(" 0 malformed"), "{out}");

    // CloudFront lines pasted without their #Version and #Fields lines:
    // read in AWS's documented field order.
    let pasted = dir.join("cloudfront-pasted.log");
    std::fs::write(
        &pasted,
        format!(
            "{date}\t{time}\tFRA56-C1\t2390\t66.249.66.1\tGET\td111111abcdef8.cloudfront.net\t/news/g\t200\t-\t{ua_cf}\t-\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVG==\tshop.test\thttps\t420\t0.003\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t11040\t0.003\tHit\ttext/html\t78\t-\t-\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ingest_raw(&cfg, &["--format", "cloudfront"], &[&pasted]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 line (0 read before); 1 crawler request: 1 judged"), "{out}");
    assert_eq!(sum(&database, "violation"), 6, "/news/g");
}

/// History from before monitoring, from a real git repository with five
/// commits of robots.txt: logs imported before the history are unjudged,
/// then judged at their next import once the history is in; imported after
/// it, they are judged at once. Either order ends with the same ledger. A
/// folder of dated copies and an archive's CDX answers import too.
#[test]
fn history_from_git_in_either_order() {
    let dir = temp_dir("compliance-history");
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let day = 86_400;
    // The site's repository: five commits, a day apart, ending yesterday.
    let repo = dir.join("site");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str], when: i64| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .env("GIT_AUTHOR_DATE", format!("@{when} +0000"))
            .env("GIT_COMMITTER_DATE", format!("@{when} +0000"))
            .env("GIT_AUTHOR_NAME", "dev")
            .env("GIT_AUTHOR_EMAIL", "dev@shop.test")
            .env("GIT_COMMITTER_NAME", "dev")
            .env("GIT_COMMITTER_EMAIL", "dev@shop.test")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q", "-b", "main"], now_s);
    for (i, path) in ["/a", "/b", "/c", "/d", "/e"].iter().enumerate() {
        std::fs::write(repo.join("robots.txt"), format!("User-agent: *\nDisallow: {path}\n")).unwrap();
        git(&["add", "robots.txt"], now_s);
        git(&["commit", "-q", "-m", &format!("block {path}")], now_s - (5 - i as i64) * 2 * day);
    }
    // A log from before monitoring (commits two days apart, ending two days
    // ago): Googlebot asks for /a seven days ago (the file had disallowed
    // /b for a day) and /d a day ago (the file disallowed /e): both
    // obeyed; and /c five days ago, when /c had been disallowed for a day,
    // longer than Google's 24-hour cache: a violation.
    let stamp = |secs: i64| {
        let out = Command::new("date")
            .args(["-u", "-d", &format!("@{secs}"), "+%d/%b/%Y:%H:%M:%S +0000"])
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let line = |secs: i64, path: &str| {
        format!("66.249.66.1 - - [{}] \"GET {path} HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n", stamp(secs))
    };
    let log = dir.join("old.log");
    std::fs::write(&log, line(now_s - 7 * day, "/a") + &line(now_s - 5 * day, "/c") + &line(now_s - day, "/d"))
        .unwrap();
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /e\n"));
    let setup = |name: &str| {
        let database = fresh_database(Db::Sqlite, &dir.join(name)).unwrap();
        std::fs::create_dir_all(dir.join(name)).unwrap();
        let cfg = shop_config(&dir.join(name), &database, &origin, "Googlebot");
        assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
        (database, cfg)
    };
    let import = |cfg: &Path| {
        let out = monitor(cfg, &["import-history", "shop", "--git", repo.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let classes = |database: &str| (sum(database, "obeyed"), sum(database, "violation"), sum(database, "unjudged"));

    // Logs first: unjudged; then the history; the next import judges them.
    let (logs_first, cfg_a) = setup("logs-first");
    ingest(&cfg_a, &[&log]);
    assert_eq!(classes(&logs_first), (0, 0, 3));
    let said = import(&cfg_a);
    assert!(said.contains("shop: 5 states found, 5 new"), "{said}");
    let out = ingest(&cfg_a, &[&log]);
    assert!(
        out.contains("0 lines (3 read before)") && out.contains("3 requests read before, unjudged then, judged now"),
        "{out}"
    );
    assert_eq!(classes(&logs_first), (2, 1, 0));
    // Again: nothing moves twice; the history again: nothing new.
    let out = ingest(&cfg_a, &[&log]);
    assert!(!out.contains("judged now"), "{out}");
    assert_eq!(classes(&logs_first), (2, 1, 0));
    assert!(import(&cfg_a).contains("5 states found, 0 new"));
    // The violation names the imported revision's line.
    assert_eq!(
        scalar_text(
            &logs_first,
            "SELECT CAST(r.body AS TEXT) FROM ledger l JOIN revisions r ON r.id = l.revision_id WHERE l.class = 'violation'"
        ),
        "User-agent: *\nDisallow: /c\n"
    );

    // The report and `history` say where the imported revision came from.
    let report = String::from_utf8(monitor(&cfg_a, &["compliance", "shop"]).stdout).unwrap();
    assert!(report.contains(&format!("line 2 (`Disallow: /c`), imported from git:{}@", repo.display())), "{report}");
    let history = String::from_utf8(monitor(&cfg_a, &["history", "shop"]).stdout).unwrap();
    assert_eq!(history.matches(" imported rev ").count(), 5, "{history}");
    // The console's timeline shows them, with their source, after the monitor's own.
    let console: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _console = serve(&cfg_a, console, None);
    let page = openapi::send(console, "GET", "/sites/shop", &[], b"");
    let html = String::from_utf8_lossy(&page.body);
    assert_eq!(html.matches("rules (imported)").count(), 5, "{html}");
    assert!(html.contains(&format!("imported from git:{}@", repo.display())), "{html}");

    // The file elsewhere in a repository: the error says where it is.
    let nested = dir.join("nested");
    std::fs::create_dir_all(nested.join("public")).unwrap();
    let nested_git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&nested)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    nested_git(&["init", "-q", "-b", "main"]);
    std::fs::write(nested.join("public/robots.txt"), "User-agent: *\nDisallow: /z\n").unwrap();
    nested_git(&["add", "public/robots.txt"]);
    nested_git(&["commit", "-q", "-m", "robots"]);
    let out = monitor(&cfg_a, &["import-history", "shop", "--git", nested.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no commit touches `robots.txt`") && err.contains("give `--path public/robots.txt`"), "{err}");

    // History first: judged at once, to the same ledger.
    let (history_first, cfg_b) = setup("history-first");
    import(&cfg_b);
    ingest(&cfg_b, &[&log]);
    assert_eq!(classes(&history_first), (2, 1, 0));

    // A folder of dated copies, and the archive's CDX API on a local server
    // (older still: before the git history, so the ledger stays as it is).
    let copies = dir.join("copies");
    std::fs::create_dir_all(&copies).unwrap();
    std::fs::write(copies.join("robots-2026-01-01.txt"), "User-agent: *\nDisallow: /x\n").unwrap();
    std::fs::write(copies.join("2026-02-01T10:00:00Z.txt"), "User-agent: *\nDisallow: /y\n").unwrap();
    let out = monitor(&cfg_b, &["import-history", "shop", "--dir", copies.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 states found, 2 new"), "{out:?}");
    std::fs::write(copies.join("notes.txt"), "x").unwrap();
    let out = monitor(&cfg_b, &["import-history", "shop", "--dir", copies.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no date in the name of notes.txt"), "{out:?}");
    let archive = Origin::start();
    archive.set(
        "/cdx/search/cdx",
        Reply::ok(r#"[["timestamp","statuscode","digest"],["20251101000000","200","AAA"],["20251201000000","404","BBB"],["20251215000000","301","CCC"]]"#),
    );
    archive.set(
        &format!("/web/20251101000000id_/{}", origin.url("/robots.txt")),
        Reply::ok("User-agent: *\nDisallow: /z\n"),
    );
    let out = monitor(&cfg_b, &["import-history", "shop", "--archive", &archive.url("")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 states found, 2 new"), "{out:?}");
    assert_eq!(scalar(&history_first, "SELECT COUNT(*) FROM imported_states WHERE source LIKE 'archive:%'"), 2);
}

/// Verification for imported logs on a monitor with no gateway: the
/// top-level `identity:` checks each address against the crawler's
/// published ranges (a feed served on loopback), so a claimed Googlebot
/// from outside them is a spoofer, judged as one, and the report says so.
#[test]
fn imported_logs_are_verified_without_a_gateway() {
    let dir = temp_dir("compliance-identity");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: Googlebot\nDisallow: /news\n"));
    origin.set("/googlebot.json", Reply::ok(r#"{"creationTime":"x","prefixes":[{"ipv4Prefix":"127.0.0.7/32"}]}"#));
    let cfg = write_config(
        &dir,
        &format!(
            "database: \"{database}\"\nagents: [Googlebot]\ninterval: 1h\n\
             identity: {{ reverse_dns: false, feeds_dir: feeds }}\n\
             crawlers:\n  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,\n      verify: {{ ip_ranges: [\"{}\"] }} }}\n\
             sites:\n  - name: shop\n    url: {}\n",
            origin.url("/googlebot.json"),
            origin.url("/robots.txt"),
        ),
    );
    assert_eq!(monitor(&cfg, &["once"]).status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let now = chrono_like_now();
    let log = dir.join("access.log");
    std::fs::write(
        &log,
        format!(
            "127.0.0.7 - - [{now}] \"GET /news/a HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n\
             127.0.0.8 - - [{now}] \"GET /news/b HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ingest_raw(&cfg, &[], &[&log]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("2 crawler requests: 2 judged, 0 unjudged"), "{out}");
    let identities = |answer: &str| {
        scalar(
            &database,
            &format!("SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT) FROM ledger WHERE identity = '{answer}'"),
        )
    };
    assert_eq!((identities("verified"), identities("spoofed"), identities("unverifiable")), (1, 1, 0));
    let text = String::from_utf8_lossy(&monitor(&cfg, &["compliance", "shop"]).stdout).into_owned();
    assert!(text.contains("[identity: 1 spoofed, 1 verified]"), "{text}");
    // One is one: "1 violation", "1 request".
    assert!(text.contains("2 requests, 1 obeyed, 0 in grace, 1 violation [identity"), "{text}");
    // A spoofer's robots.txt fetch holds nothing for the crawler it claims
    // to be: counted apart from the crawler's own.
    let fetches = dir.join("fetches.log");
    std::fs::write(
        &fetches,
        format!(
            "127.0.0.7 - - [{now}] \"GET /robots.txt HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n\
             127.0.0.8 - - [{now}] \"GET /robots.txt HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n\
             127.0.0.9 - - [{now}] \"GET /robots.txt HTTP/1.1\" 200 3 \"-\" \"{GOOGLEBOT}\"\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ingest_raw(&cfg, &[], &[&fetches]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 robots.txt fetch, 2 by spoofers"), "{out}");
    assert!(text.contains("(verified): 1 request at ") && text.contains("Z, e.g. /news/a"), "{text}");
    // The window is said, in the console's forms; a crawler with nothing
    // recorded is told apart from an empty ledger.
    assert!(text.contains("shop: what crawlers did in the last 30 UTC days, today included"), "{text}");
    let today = String::from_utf8_lossy(&monitor(&cfg, &["compliance", "shop", "--since", "12h"]).stdout).into_owned();
    assert!(today.contains("what crawlers did today (UTC)") && today.contains("1 violation"), "{today}");
    let none = monitor(&cfg, &["compliance", "shop", "--crawler", "PetalBot"]);
    assert!(String::from_utf8_lossy(&none.stdout).contains("no requests of `PetalBot` recorded on shop"));
    let unknown = monitor(&cfg, &["compliance", "shop", "--crawler", "NoSuchBot"]);
    assert_eq!(unknown.status.code(), Some(2), "a name robotsgate does not know is refused");
    let bad = monitor(&cfg, &["compliance", "shop", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    let said = String::from_utf8_lossy(&bad.stderr).into_owned();
    assert!(
        said.contains("--since `yesterday` is no duration: it is not a number and a unit; give one such as 7d or 12h"),
        "{said}"
    );
    assert!(!said.contains("at 0"), "the parser's offset is not for people: {said}");
    let bad = monitor(&cfg, &["compliance", "shop", "--since", "7x"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`x` is not a unit"));
    // An output format that is not one is refused, not answered in text.
    for format in ["xml", "JSON"] {
        let out = monitor(&cfg, &["compliance", "shop", "--output", format]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("possible values: text, json"), "{format}");
    }

    // A slip in the section is refused with its key.
    let bad =
        std::fs::read_to_string(&cfg).unwrap().replace("reverse_dns: false", "reverse_dns: false, only: [Googelbot]");
    std::fs::write(&cfg, bad).unwrap();
    let out = monitor(&cfg, &["check-config"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("identity.only[0]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
