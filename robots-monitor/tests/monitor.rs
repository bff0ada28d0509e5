//! The real `robots-monitor` binary against real origins on 127.0.0.1, a
//! real SMTP server and real databases. The status and content scenarios
//! run on SQLite and on PostgreSQL.

mod support;

use std::time::Duration;

use support::*;

const V1: &str = "User-agent: *\nDisallow: /admin\n";
const V2: &str = "User-agent: *\nDisallow: /admin\nDisallow: /products/\n";

fn config(db: &str, origin: &Origin, smtp_port: u16, extra: &str) -> String {
    format!(
        "database: {db}
agents: [Googlebot, bingbot]
interval: 1s
http:
  timeout: 2s
email:
  host: 127.0.0.1
  port: {smtp_port}
  security: none
  from: robotsgate@test.example
  to: [seo@test.example]
sites:
  - name: shop
    url: {url}
    url_sets:
      main:
        - {{ url: /, expect: allow }}
        - /products/shoes
        - /admin/login
{extra}",
        url = origin.url("/robots.txt")
    )
}

/// A site `shop` on a fresh origin, mailing a fresh SMTP server, with its
/// history in a fresh database.
struct Rig {
    database: String,
    origin: Origin,
    smtp: Smtp,
    cfg: std::path::PathBuf,
}

fn rig(name: &str, db: Db) -> Option<Rig> {
    let dir = temp_dir(name);
    let database = fresh_database(db, &dir)?;
    let origin = Origin::start();
    let smtp = Smtp::start(&dir.join("mail"));
    let cfg = write_config(&dir, &config(&database, &origin, smtp.port, ""));
    Some(Rig { database, origin, smtp, cfg })
}

fn once(cfg: &std::path::Path) -> String {
    let out = monitor(cfg, &["once"]);
    assert_eq!(out.status.code(), Some(0), "once failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// 503, then 502, then 200, each poll its own `once` (as cron runs it): the
/// recovery mail names the status the stored state began with.
fn recovery_names_the_stored_status(db: Db) {
    let Some(Rig { database, origin, smtp, cfg }) = rig("recovery", db) else { return };
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    for status in [503, 502] {
        origin.set("/robots.txt", Reply::status(status));
        once(&cfg);
    }
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    let text = scalar_text(&database, "SELECT body_text FROM alerts ORDER BY id DESC LIMIT 1");
    assert!(text.contains("503") && !text.contains("answered 500"), "{db:?}: {text}");
    let mails = smtp.wait_for(2);
    let last = mails.last().expect("a recovery mail");
    assert!(last.contains("503") && !last.contains("answered 500"), "{db:?}: {last}");
}

#[test]
fn recovery_names_the_stored_status_on_sqlite() {
    recovery_names_the_stored_status(Db::Sqlite);
}

#[test]
fn recovery_names_the_stored_status_on_postgres() {
    recovery_names_the_stored_status(Db::Postgres);
}

fn status_sequence(db: Db) {
    let Some(Rig { database, origin, smtp, cfg }) = rig("status", db) else { return };
    let count = |table: &str| scalar(&database, &format!("SELECT COUNT(*) FROM {table}"));

    // First sight: recorded, nothing to say.
    origin.set("/robots.txt", Reply::ok(V1));
    assert!(once(&cfg).contains("shop: rules, new revision"));
    assert_eq!((count("revisions"), count("states"), count("alerts")), (1, 1, 0));
    assert_eq!(count("verdicts"), 6, "3 URLs x 2 crawlers");

    // A deploy blocks /products/: one email naming the URL and the line.
    origin.set("/robots.txt", Reply::ok(V2));
    once(&cfg);
    let mails = smtp.wait_for(1);
    assert_eq!(mails.len(), 1);
    assert!(mails[0].contains("Subject: [robotsgate] shop: 2 verdicts flipped"), "{}", mails[0]);
    assert!(mails[0].contains("/products/shoes") && mails[0].contains("line 3: Disallow: /products/"), "{}", mails[0]);
    assert!(mails[0].contains("multipart/alternative") && mails[0].contains("text/html"), "{}", mails[0]);
    assert!(mails[0].contains("+Disallow: /products/"), "the unified diff is in the mail");
    // Quoted-printable wraps long lines with a trailing `=`.
    let unwrapped = mails[0].replace("=\r\n", "").replace("=\n", "");
    assert!(
        unwrapped
            .contains("can no longer crawl /products/shoes (line 3: Disallow: /products/); 1 more verdict changed."),
        "the first line says what broke: {unwrapped}"
    );

    // The origin starts failing: crawling blocked, once, however long it lasts.
    origin.set("/robots.txt", Reply::status(503));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(502));
    once(&cfg);
    let mails = smtp.wait_for(2);
    assert_eq!(mails.len(), 2, "a persisting outage is not repeated");
    assert!(mails[1].contains("crawling blocked") && mails[1].contains("503"), "{}", mails[1]);
    assert!(mails[1].contains("robots.txt answered 503"), "the first line names the outage: {}", mails[1]);

    // Recovery: one email, and the same bytes are not a new revision.
    origin.set("/robots.txt", Reply::ok(V2));
    once(&cfg);
    let mails = smtp.wait_for(3);
    assert!(mails[2].contains("recovered"), "{}", mails[2]);
    assert_eq!(count("revisions"), 2);

    // 429 blocks too; a 404 opens everything.
    origin.set("/robots.txt", Reply::status(429));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(404));
    once(&cfg);
    let mails = smtp.wait_for(5);
    assert_eq!(mails.len(), 5);
    assert!(mails[3].contains("429"), "{}", mails[3]);
    assert!(mails[4].contains("open to crawlers") && mails[4].contains("404"), "{}", mails[4]);

    // Seven polls, seven different outcomes: seven runs, and a day of seven.
    assert_eq!(count("fetches"), 7);
    assert_eq!(scalar(&database, "SELECT CAST(SUM(polls) AS BIGINT) FROM fetches"), 7);
    assert_eq!(scalar(&database, "SELECT CAST(SUM(fetches) AS BIGINT) FROM fetch_days"), 7);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM fetch_days"), 5, "200, 503, 502, 429, 404");
    let out = monitor(&cfg, &["fetches", "shop"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("7 fetches") && text.contains("502 x1, 503 x1, 429 x1, 404 x1, 200 x3"), "{text}");
    assert_eq!(count("states"), 6);
    assert_eq!(count("alerts"), 5);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL"), 0);

    // "When did /products/shoes become blocked for Googlebot?" is one command.
    let out = monitor(&cfg, &["history", "shop", "--url", "/products/shoes", "--agent", "Googlebot"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "already blocked before the outage: {text}");
    assert!(
        lines[0].contains("allowed") && lines[1].contains("BLOCKED") && lines[1].contains("Disallow: /products/"),
        "{text}"
    );
    assert!(lines[2].contains("allowed") && lines[2].contains("404"), "{text}");
    // A URL in no saved set has its history too, judged on the stored
    // revisions, and says so.
    let out = monitor(&cfg, &["history", "shop", "--url", "/products/socks?size=9", "--agent", "Googlebot"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].contains("in no saved URL set of shop: judged on each stored revision"), "{text}");
    assert!(
        lines[1].contains("allowed") && lines[2].contains("BLOCKED") && lines[2].contains("Disallow: /products/"),
        "{text}"
    );
    assert!(lines[3].contains("allowed") && lines[3].contains("404"), "{text}");
    // The home page moves with every outage and recovery.
    let out = monitor(&cfg, &["history", "shop", "--url", "/", "--agent", "bingbot"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let marks: Vec<&str> = text.lines().map(|l| if l.contains("BLOCKED") { "B" } else { "a" }).collect();
    assert_eq!(marks, ["a", "B", "a", "B", "a"], "{text}");

    let out = monitor(&cfg, &["diff", "shop"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("+Disallow: /products/") && text.contains("2 verdict flips"), "{text}");
    let out = monitor(&cfg, &["show", "shop", "1"]);
    assert_eq!(out.stdout, V1.as_bytes());
}

#[test]
fn status_sequence_sqlite() {
    status_sequence(Db::Sqlite);
}

#[test]
fn status_sequence_postgres() {
    status_sequence(Db::Postgres);
}

#[test]
fn hostile_origins() {
    let Rig { database, origin, smtp, cfg } = rig("hostile", Db::Sqlite).unwrap();
    let last_error = || scalar(&database, "SELECT COUNT(*) FROM fetches WHERE error IS NOT NULL");

    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);

    // Six redirects: Google treats the file as missing.
    for i in 0..6 {
        origin.set(&format!("/r{i}"), Reply::redirect(&format!("/r{}", i + 1)));
    }
    origin.set("/r6", Reply::ok(V1));
    origin.set("/robots.txt", Reply::redirect("/r0"));
    once(&cfg);
    let mails = smtp.wait_for(1);
    assert!(
        mails.last().unwrap().contains("redirected 7 times") || mails.last().unwrap().contains("redirected 6 times"),
        "{mails:?}"
    );
    assert_eq!(scalar(&database, "SELECT MAX(redirects) FROM fetches"), 6);

    // Three redirects are followed.
    origin.set("/robots.txt", Reply::redirect("/r3"));
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM states WHERE policy = 'rules'"), 2);

    // A hanging origin times out (2 s) and blocks crawling.
    origin.set("/robots.txt", Reply::Hang);
    let started = std::time::Instant::now();
    once(&cfg);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(last_error(), 1);
    assert!(smtp.wait_for(3).last().unwrap().contains("timed out"), "{:?}", smtp.mails());

    // A reset connection is an error too, not a crash.
    origin.set("/robots.txt", Reply::Reset);
    once(&cfg);
    assert_eq!(last_error(), 2);

    // 2 MB: kept up to the cap, flagged, and alerted.
    let mut big = b"User-agent: *\nDisallow: /admin\n".to_vec();
    big.resize(2 * 1024 * 1024, b'#');
    origin.set("/robots.txt", Reply::ok(big));
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM fetches WHERE truncated = 1"), 1);
    assert!(scalar(&database, "SELECT MAX(size) FROM revisions") < 600 * 1024);
    let mail = smtp.wait_for(4).last().unwrap().clone();
    assert!(mail.contains("larger than 500 KiB"), "{mail}");
    assert!(mail.len() < 100_000, "a {} byte mail for a big file", mail.len());

    // 550 KB of new rules against the 2 MB file: the diff is capped.
    let rules: String = (0..25_000).map(|i| format!("Disallow: /p{i}/\n")).collect();
    origin.set("/robots.txt", Reply::ok(format!("User-agent: *\nDisallow: /products/\n{rules}")));
    once(&cfg);
    let mail = smtp.wait_for(5).last().unwrap().clone();
    assert!(mail.len() < 100_000, "a {} byte mail for a big diff", mail.len());
    assert!(mail.contains("more changed lines") && mail.contains("robots-monitor diff shop"), "{}", &mail[..2000]);

    // Binary garbage after a blocking line: described, not inlined.
    let mut garbage = b"User-agent: *\nDisallow: /\n".to_vec();
    garbage.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    origin.set("/robots.txt", Reply::ok(garbage));
    once(&cfg);
    let mail = smtp.wait_for(6).last().unwrap().clone();
    assert!(mail.contains("not text: 4026 bytes"), "{mail}");
    let controls = mail.bytes().filter(|&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')).count();
    assert!(controls < 10, "{controls} control bytes in the mail");

    // Bytes that are not UTF-8 are kept exactly.
    let latin1 = b"User-agent: *\nDisallow: /caf\xe9\n".to_vec();
    origin.set("/robots.txt", Reply::ok(latin1.clone()));
    once(&cfg);
    let rev = scalar(&database, "SELECT MAX(id) FROM revisions").to_string();
    assert_eq!(monitor(&cfg, &["show", "shop", &rev]).stdout, latin1);
}

#[test]
fn smtp_outage_loses_nothing() {
    let dir = temp_dir("smtp-down");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    let port = free_port();
    let cfg = write_config(&dir, &config(&database, &origin, port, ""));
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(503));
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL AND attempts = 1"), 1);
    // Polling goes on while mail is down.
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts"), 2);
    // SMTP comes back: after the back-off, both alerts go out, in order.
    let smtp = Smtp::start_on(port, &dir.join("mail"));
    scalar(&database, "UPDATE alerts SET next_attempt_at = 0 WHERE sent_at IS NULL RETURNING 0");
    once(&cfg);
    let mails = smtp.wait_for(2);
    assert_eq!(mails.len(), 2);
    assert!(mails[0].contains("crawling blocked") && mails[1].contains("recovered"));
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL"), 0);
}

/// Issue #64: a mail server that refuses for good (5xx) is not retried as
/// a transient failure: the alert is kept, marked refused with the
/// server's reply, and never sent again; a 4xx is retried. Every mail has
/// a `Message-ID`, the same for each attempt at one alert.
#[test]
fn a_permanent_refusal_is_not_retried_and_mails_have_a_message_id() {
    let dir = temp_dir("smtp-refused");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    let port = free_port();
    let cfg = write_config(&dir, &config(&database, &origin, port, ""));
    let mut refusing = Smtp::start_refusing(port, &dir.join("refusing"), "550 5.1.1 no such mailbox here");
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(503));
    once(&cfg);
    let refused =
        "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL AND attempts = 1 AND last_error LIKE '%permanent%550%'";
    assert_eq!(scalar(&database, refused), 1, "{}", scalar_text(&database, "SELECT last_error FROM alerts"));
    // Due times pass; the refused alert is not tried again.
    scalar(&database, "UPDATE alerts SET created_at = created_at - 3600000 RETURNING 0");
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT MAX(attempts) FROM alerts"), 1, "a 5xx is not retried");
    refusing.stop();
    // A transient refusal (4xx) is retried.
    let mut busy = Smtp::start_refusing(port, &dir.join("busy"), "451 4.3.0 try again later");
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    let retried = "SELECT next_attempt_at FROM alerts WHERE last_error LIKE '%451%'";
    assert!(scalar(&database, retried) < i64::MAX / 4, "a 4xx is retried later");
    busy.stop();
    // A working server: the recovery goes out with a Message-ID; the
    // refused alert stays refused.
    let smtp = Smtp::start_on(port, &dir.join("mail"));
    scalar(
        &database,
        "UPDATE alerts SET next_attempt_at = 0 WHERE sent_at IS NULL AND next_attempt_at < 1000000000000000 RETURNING 0",
    );
    once(&cfg);
    let mails = smtp.wait_for(1);
    assert_eq!(mails.len(), 1, "only the retried alert: {mails:?}");
    let id = mails[0]
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("message-id:"))
        .unwrap_or_else(|| panic!("{}", mails[0]));
    assert!(id.contains(".shop.robotsgate@test.example>"), "{id}");
    assert_eq!(
        scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL"),
        1,
        "the refused one stays unsent"
    );
}

/// Webhook and Slack channels through the outbox: a webhook for critical
/// and warning alerts (signed), a Slack channel for critical ones only.
/// Both receivers are down when the outage is alerted, then come back:
/// each alert reaches each channel that takes it exactly once.
#[test]
fn channels_receive_each_alert_once_through_an_outage() {
    use hmac::{KeyInit, Mac};
    let dir = temp_dir("channels");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    let (hook_port, slack_port) = (free_port(), free_port());
    let channels = format!(
        "channels:\n  - name: ops\n    webhook: http://127.0.0.1:{hook_port}/hook\n    secret_env: TEST_HOOK_SECRET\n    severities: [critical, warning]\n\
         \x20 - name: seo\n    slack: http://127.0.0.1:{slack_port}/slack\n    severities: [critical]\n    sites: [shop]\n"
    );
    let yaml = format!("{}{channels}", config(&database, &origin, free_port(), ""));
    let cfg = write_config(&dir, &yaml);
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .env("TEST_HOOK_SECRET", "s3cret")
            .env("ROBOTSGATE_LOG", "warn")
            .output()
            .expect("robots-monitor");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    };
    origin.set("/robots.txt", Reply::ok(V1));
    run(&["once"]);
    // The outage, with both receivers down: queued, attempted, kept.
    origin.set("/robots.txt", Reply::status(503));
    run(&["once"]);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM deliveries WHERE sent_at IS NULL AND attempts = 1"), 2);
    assert_eq!(scalar_text(&database, "SELECT severity FROM alerts ORDER BY id DESC LIMIT 1"), "critical");
    // Recovery while still down: a warning, for the webhook only.
    origin.set("/robots.txt", Reply::ok(V1));
    run(&["once"]);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM deliveries"), 3);
    // Both come back; after the back-off every delivery goes out once.
    let (hook, slack) = (Receiver::start_on(hook_port), Receiver::start_on(slack_port));
    scalar(&database, "UPDATE deliveries SET next_attempt_at = 0 WHERE sent_at IS NULL RETURNING 0");
    run(&["once"]);
    run(&["once"]);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM deliveries WHERE sent_at IS NULL"), 0);
    let hooks = hook.requests();
    assert_eq!(hooks.len(), 2, "one request per alert: {hooks:?}");
    let ids: std::collections::HashSet<&str> =
        hooks.iter().filter_map(|(h, _)| Receiver::header(h, "X-Robotsgate-Delivery")).collect();
    assert_eq!(ids.len(), 2);
    for (head, body) in &hooks {
        let ts = Receiver::header(head, "X-Robotsgate-Timestamp").expect("timestamp");
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
        mac.update(format!("{ts}.{body}").as_bytes());
        let want: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(Receiver::header(head, "X-Robotsgate-Signature"), Some(format!("sha256={want}").as_str()));
        let json: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(json["site"], "shop");
    }
    let severities: Vec<String> = hooks
        .iter()
        .map(|(_, b)| serde_json::from_str::<serde_json::Value>(b).unwrap()["severity"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(severities, ["critical", "warning"]);
    let slacks = slack.requests();
    assert_eq!(slacks.len(), 1, "Slack takes critical alerts only: {slacks:?}");
    let text = serde_json::from_str::<serde_json::Value>(&slacks[0].1).unwrap()["text"].as_str().unwrap().to_string();
    assert!(text.starts_with(":rotating_light: *[robotsgate] shop: crawling blocked*"), "{text}");
    assert!(Receiver::header(&slacks[0].0, "X-Robotsgate-Signature").is_none(), "Slack is not signed");
}

/// `critical_after`: an outage starts as a warning and, once it outlasts
/// the threshold, one critical alert follows, however many monitors poll
/// it at once. The mails carry the severity banner and the console link.
fn outage_escalates_once(db: Db) {
    let Some(Rig { database, origin, smtp, cfg }) = rig(&format!("escalate-{db:?}"), db) else { return };
    let yaml = std::fs::read_to_string(&cfg).unwrap()
        + "critical_after: 2s\nconsole:\n  listen: 127.0.0.1:0\n  url: https://robots.example.com/console/\n";
    std::fs::write(&cfg, yaml).unwrap();
    let severities = || {
        let n = scalar(&database, "SELECT COUNT(*) FROM alerts");
        (1..=n)
            .map(|i| {
                scalar_text(&database, &format!("SELECT severity FROM alerts ORDER BY id LIMIT 1 OFFSET {}", i - 1))
            })
            .collect::<Vec<_>>()
    };
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(503));
    once(&cfg);
    assert_eq!(severities(), ["warning"], "an outage starts as a warning");
    once(&cfg);
    assert_eq!(severities(), ["warning"], "not critical before critical_after");
    std::thread::sleep(Duration::from_millis(2_100));
    // Four monitors poll the lasting outage at once: one critical alert.
    let runs: Vec<_> = (0..4).map(|_| monitor_spawn(&cfg, &["once"])).collect();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    once(&cfg);
    assert_eq!(severities(), ["warning", "critical"], "escalated exactly once");
    assert!(scalar(&database, "SELECT COUNT(*) FROM states WHERE escalated_at IS NOT NULL") == 1);
    let mails = smtp.wait_for(2);
    let critical = mails.iter().find(|m| m.contains("still blocked after")).expect("the escalation mail");
    let unwrapped = critical.replace("=\r\n", "").replace("=3D", "=");
    assert!(unwrapped.contains("CRITICAL"), "banner: {unwrapped}");
    assert!(unwrapped.contains("https://robots.example.com/console/sites/shop"), "console link: {unwrapped}");
    assert!(unwrapped.contains("robots.txt has failed for"), "{unwrapped}");
    // A recovery ends the outage; the next outage starts over as a warning.
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    origin.set("/robots.txt", Reply::status(500));
    once(&cfg);
    assert_eq!(severities().last().map(String::as_str), Some("warning"));
}

#[test]
fn outage_escalates_once_on_sqlite() {
    outage_escalates_once(Db::Sqlite);
}

#[test]
fn outage_escalates_once_on_postgres() {
    outage_escalates_once(Db::Postgres);
}

/// A digest channel gets no message per alert, and one digest a day of the
/// alerts it takes, delivered once through a receiver outage. Its first
/// digest is a baseline: adding a channel sends no digest of the past.
#[test]
fn a_daily_digest_lists_the_days_alerts_once() {
    let dir = temp_dir("digest");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    let port = free_port();
    let channels = format!(
        "channels:\n  - name: daily\n    webhook: http://127.0.0.1:{port}/digest\n    digest: daily\n    digest_hour: 6\n    severities: [critical, warning]\n"
    );
    let cfg = write_config(&dir, &format!("{}{channels}", config(&database, &origin, free_port(), "")));
    let run = || {
        let out = monitor(&cfg, &["once"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    };
    origin.set("/robots.txt", Reply::ok(V1));
    run();
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM digests WHERE sent_at IS NOT NULL"), 1, "the baseline");
    origin.set("/robots.txt", Reply::status(503));
    run();
    origin.set("/robots.txt", Reply::ok(V2));
    run();
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts"), 2);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM deliveries"), 0, "a digest channel takes no single alerts");
    // A day passes: the alerts are in the window of the next digest.
    scalar(&database, "UPDATE digests SET day = day - 1 RETURNING 0");
    scalar(&database, "UPDATE alerts SET created_at = created_at - 86400000 RETURNING 0");
    run();
    let failed = scalar(&database, "SELECT COUNT(*) FROM digests WHERE sent_at IS NULL AND attempts = 1");
    assert_eq!(failed, 1, "the receiver is down: the digest waits");
    let receiver = Receiver::start_on(port);
    scalar(&database, "UPDATE digests SET next_attempt_at = 0 WHERE sent_at IS NULL RETURNING 0");
    run();
    run();
    let got = receiver.requests();
    assert_eq!(got.len(), 1, "one digest: {got:?}");
    let json: serde_json::Value = serde_json::from_str(&got[0].1).unwrap();
    assert_eq!(json["digest"], true);
    assert_eq!(json["count"], 2, "{json}");
    let subjects: Vec<&str> =
        json["alerts"].as_array().unwrap().iter().map(|a| a["subject"].as_str().unwrap()).collect();
    assert!(subjects[0].contains("crawling blocked") && subjects[1].contains("recovered"), "{subjects:?}");
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM digests WHERE sent_at IS NULL"), 0);
}

/// STARTTLS and SMTPS against a relay whose certificate only a private CA
/// vouches for: refused until `email.ca_file` names that CA, then sent.
#[test]
fn mail_over_starttls_and_tls_with_a_private_ca() {
    for name in ["starttls", "tls"] {
        let dir = temp_dir(&format!("smtp-{name}"));
        let database = fresh_database(Db::Sqlite, &dir).unwrap();
        let origin = Origin::start();
        let certs = test_certs(&dir, "IP:127.0.0.1");
        let port = free_port();
        let security = if name == "tls" { SmtpSecurity::Tls(certs) } else { SmtpSecurity::Starttls(certs) };
        let smtp = Smtp::start_secured(port, &dir.join("mail"), &security);
        let plain = config(&database, &origin, port, "");
        let untrusted = plain.replace("  security: none", &format!("  security: {name}"));
        let cfg = write_config(&dir, &untrusted);
        origin.set("/robots.txt", Reply::ok(V1));
        once(&cfg);
        origin.set("/robots.txt", Reply::status(503));
        once(&cfg);
        let error = scalar_text(&database, "SELECT last_error FROM alerts WHERE sent_at IS NULL");
        assert!(error.to_lowercase().contains("certificate"), "{name}: {error}");
        assert!(smtp.mails().is_empty());

        let trusted = plain.replace("  security: none", &format!("  security: {name}\n  ca_file: ca.pem"));
        write_config(&dir, &trusted);
        scalar(&database, "UPDATE alerts SET next_attempt_at = 0 WHERE sent_at IS NULL RETURNING 0");
        once(&cfg);
        let mails = smtp.wait_for(1);
        assert!(mails[0].contains("crawling blocked"), "{name}: {}", mails[0]);
        assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL"), 0, "{name}");
    }
}

#[test]
fn daemon_survives_kill_without_losing_or_duplicating() {
    let Rig { database, origin, smtp, cfg } = rig("kill", Db::Sqlite).unwrap();
    let states = || scalar(&database, "SELECT COUNT(*) FROM states");

    origin.set("/robots.txt", Reply::ok(V1));
    let mut d = daemon(&cfg);
    assert!(eventually(20, || states() == 1), "first state recorded");
    origin.set("/robots.txt", Reply::status(503));
    assert!(eventually(20, || states() == 2), "outage recorded");
    d.kill();
    origin.set("/robots.txt", Reply::ok(V2));
    let mut d = daemon(&cfg);
    // Likewise a poll cut off by the kill holds the site for 2 s + 30 s.
    assert!(eventually(50, || states() == 3), "recovery recorded after restart");
    // If the kill landed mid-send, the outage alert waits out its claim
    // (30 s) before the new daemon may send it.
    assert!(eventually(50, || smtp.mails().len() >= 2), "both alerts mailed");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(d.terminate(), Some(0), "SIGTERM shuts down gracefully");
    assert_eq!(states(), 3, "no state twice");
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts"), 2, "one alert per change");
    assert_eq!(scalar(&database, "SELECT COUNT(DISTINCT state_id) FROM alerts"), 2);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM revisions"), 2);
    assert_eq!(smtp.mails().len(), 2, "every alert mailed once");
}

#[test]
fn two_monitors_share_postgres_without_double_polls() {
    let dir = temp_dir("lease");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(V1));
    let mut sites = String::new();
    for i in 0..8 {
        sites.push_str(&format!("  - name: site{i}\n    url: {}\n    interval: 2s\n", origin.url("/robots.txt")));
    }
    let yaml = format!("database: {database}\nagents: [Googlebot]\nsites:\n{sites}");
    let cfg = write_config(&dir, &yaml);
    let mut a = daemon(&cfg);
    let mut b = daemon(&cfg);
    std::thread::sleep(Duration::from_secs(9));
    a.terminate();
    b.terminate();
    // Each site's unchanged file is one run of fetches. Consecutive polls
    // are at least ~one interval apart (2 s minus 10% jitter), so a run of
    // n polls spans at least (n - 1) x 1.7 s: never two in one interval.
    let too_close = scalar(&database, "SELECT COUNT(*) FROM fetches WHERE (polls - 1) * 1700 > last_at - at");
    assert_eq!(too_close, 0);
    let per_site =
        scalar(&database, "SELECT MIN(n) FROM (SELECT CAST(SUM(polls) AS BIGINT) AS n FROM fetches GROUP BY site) c");
    assert!(per_site >= 3, "every site polled repeatedly ({per_site})");
}

/// `n` daemons on one PostgreSQL, an origin that changes, fails and
/// recovers, and one replica killed (SIGKILL) and restarted at every
/// change: each change is exactly one state, one alert and one mail.
fn replicas_record_each_change_once(n: usize) {
    let Some(Rig { database, origin, smtp, cfg }) = rig(&format!("replicas{n}"), Db::Postgres) else { return };
    let count = |table: &str| scalar(&database, &format!("SELECT COUNT(*) FROM {table}"));
    let phases: [Reply; 7] = [
        Reply::ok(V1),
        Reply::status(503),
        Reply::ok(V2),
        Reply::status(404),
        Reply::ok(V1),
        Reply::status(429),
        Reply::ok(V2),
    ];
    let mut replicas: Vec<Proc> = (0..n).map(|_| daemon(&cfg)).collect();
    for (i, reply) in phases.into_iter().enumerate() {
        origin.set("/robots.txt", reply);
        // Killed at once: often mid-poll, never mid-send (every earlier
        // alert is already mailed, and this change's is not queued yet).
        let victim = i % n;
        replicas[victim].kill();
        replicas[victim] = daemon(&cfg);
        let want = i as i64 + 1;
        // A poll cut off by the kill holds the site for its lease (2 s + 30 s).
        assert!(eventually(60, || count("states") >= want), "phase {i}: the change was not recorded");
        assert!(eventually(60, || smtp.mails().len() >= i), "phase {i}: the alert was not mailed");
        // Every replica polls several times in the new state.
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(count("states"), want, "phase {i}: a change recorded twice");
        assert_eq!(count("alerts"), want - 1, "phase {i}: a change alerted twice");
    }
    std::thread::sleep(Duration::from_secs(2));
    for r in &mut replicas {
        assert_eq!(r.terminate(), Some(0));
    }
    assert_eq!(count("states"), 7);
    assert_eq!(count("alerts"), 6);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL"), 0);
    assert_eq!(smtp.mails().len(), 6, "one mail per change");
    // The states form one chain, each following the one before.
    let chained = scalar(
        &database,
        "SELECT COUNT(*) FROM states s JOIN states p ON p.id = s.previous_id AND p.site = s.site AND p.state_key <> s.state_key",
    );
    assert_eq!(chained, 6);
}

#[test]
fn two_replicas_record_each_change_once() {
    replicas_record_each_change_once(2);
}

#[test]
fn four_replicas_record_each_change_once() {
    replicas_record_each_change_once(4);
}

#[test]
fn local_file_is_watched() {
    let dir = temp_dir("watch");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let site_dir = dir.join("site");
    std::fs::create_dir_all(&site_dir).unwrap();
    std::fs::write(site_dir.join("robots.txt"), V1).unwrap();
    let yaml = format!(
        "database: {database}\nagents: [Googlebot]\nsites:\n  - name: local\n    file: site/robots.txt\n    interval: 1h\n    url_sets:\n      main: [/products/shoes]\n"
    );
    let cfg = write_config(&dir, &yaml);
    let mut d = daemon(&cfg);
    let states = || scalar(&database, "SELECT COUNT(*) FROM states");
    assert!(eventually(20, || states() == 1));
    // Deploy tools write a new file and rename it over the old one.
    std::fs::write(site_dir.join(".robots.txt.tmp"), V2).unwrap();
    std::fs::rename(site_dir.join(".robots.txt.tmp"), site_dir.join("robots.txt")).unwrap();
    assert!(eventually(10, || states() == 2), "the rename is seen long before the 1 h interval");
    assert_eq!(d.terminate(), Some(0));
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts"), 1, "the flip of /products/shoes alerts");
}

/// The daemon's own reads of a watched file are not changes: an unchanged
/// file under `run` with a 1 h interval is fetched once in 10 s, and an
/// editor-style save (write a temporary file, rename it over) once more.
fn a_watched_file_is_read_once_per_change(db: Db) {
    let dir = temp_dir(&format!("watch-quiet-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let site_dir = dir.join("site");
    std::fs::create_dir_all(&site_dir).unwrap();
    std::fs::write(site_dir.join("robots.txt"), V1).unwrap();
    let yaml = format!(
        "database: \"{database}\"\nagents: [Googlebot]\nsites:\n  - name: local\n    file: site/robots.txt\n    interval: 1h\n"
    );
    let cfg = write_config(&dir, &yaml);
    let mut d = daemon(&cfg);
    let fetches = || scalar(&database, "SELECT CAST(COALESCE(SUM(polls), 0) AS BIGINT) FROM fetches");
    assert!(eventually(20, || fetches() == 1), "{db:?}: the first poll");
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(fetches(), 1, "{db:?}: an unchanged file was re-read");
    std::fs::write(site_dir.join(".robots.txt.swp"), V2).unwrap();
    std::fs::rename(site_dir.join(".robots.txt.swp"), site_dir.join("robots.txt")).unwrap();
    assert!(eventually(10, || fetches() == 2), "{db:?}: the save was not seen");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(fetches(), 2, "{db:?}: one save, one fetch");
    assert_eq!(d.terminate(), Some(0));
}

#[test]
fn a_watched_file_is_read_once_per_change_on_sqlite() {
    a_watched_file_is_read_once_per_change(Db::Sqlite);
}

#[test]
fn a_watched_file_is_read_once_per_change_on_postgres() {
    a_watched_file_is_read_once_per_change(Db::Postgres);
}

#[test]
fn bad_config_names_the_file_and_line() {
    let dir = temp_dir("badcfg");
    let cfg = write_config(&dir, "sites: []\nintervall: 5m\n");
    let out = monitor(&cfg, &["check-config"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("intervall") && err.contains('2'), "{err}");
    let cfg = write_config(&dir, "sites:\n  - name: a\n    url: ftp://x/robots.txt\n");
    let err = String::from_utf8_lossy(&monitor(&cfg, &["check-config"]).stderr).into_owned();
    assert!(err.contains("sites[0].url"), "{err}");
    let out = monitor(&dir.join("missing.yaml"), &["once"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.yaml"));
}

#[test]
fn example_config_runs_offline() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = temp_dir("example");
    let text = std::fs::read_to_string(root.join("config.example.yaml")).unwrap();
    let site = root.join("deploy/example-site/robots.txt");
    let text = text
        .replace("database: var/robotsgate.db", &format!("database: {}", dir.join("h.db").display()))
        .replace("file: deploy/example-site/robots.txt", &format!("file: {}", site.display()));
    let cfg = write_config(&dir, &text);
    let out = monitor(&cfg, &["check-config"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(once(&cfg).contains("example-shop: rules, new revision"));
}

/// A site whose gateway states an AI policy: a deploy that drops the group
/// blocking the AI-training crawlers, and then a CDN that prepends its own
/// `ai-train=yes`, are each alerted, though no verdict of the crawlers the
/// monitor tests (Googlebot, bingbot) moved.
fn ai_policy_contradictions_are_alerted(db: Db) {
    let dir = temp_dir("ai-policy");
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    let smtp = Smtp::start(&dir.join("mail"));
    let extra = "    proxy: { hosts: [shop.test], origin: \"127.0.0.1:9\", ai_policy: { ai-training: deny } }\n";
    let cfg = write_config(&dir, &config(&database, &origin, smtp.port, extra));
    let mut blocked = String::from("User-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /admin\n\n");
    let catalogue = robotsgate_crawlers::Catalogue::builtin();
    let policy = rules::ai_policy::AiPolicy { ai_training: rules::ai_policy::Stance::Deny, ..Default::default() };
    for t in catalogue.denied_senders(&policy) {
        blocked.push_str(&format!("User-agent: {t}\n"));
    }
    blocked.push_str("Disallow: /\n");
    origin.set("/robots.txt", Reply::ok(blocked.clone()));
    once(&cfg);
    let alerts = || scalar(&database, "SELECT COUNT(*) FROM alerts");
    let before = alerts();
    // The deploy drops the AI crawlers' group.
    origin.set("/robots.txt", Reply::ok("User-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /admin\n"));
    once(&cfg);
    assert_eq!(alerts(), before + 1, "{db:?}");
    let text = scalar_text(&database, "SELECT body_text FROM alerts ORDER BY id DESC LIMIT 1");
    assert!(text.contains("contradicts the site's AI policy") && text.contains("may crawl `/`"), "{db:?}: {text}");
    // Restored, then a CDN prepends its own signal.
    origin.set("/robots.txt", Reply::ok(blocked.clone()));
    once(&cfg);
    let prepended = blocked.replace("ai-train=no", "ai-train=yes");
    origin.set("/robots.txt", Reply::ok(prepended));
    once(&cfg);
    let text = scalar_text(&database, "SELECT body_text FROM alerts ORDER BY id DESC LIMIT 1");
    assert!(text.contains("`ai-train=yes`"), "{db:?}: {text}");
}

#[test]
fn ai_policy_contradictions_are_alerted_on_sqlite() {
    ai_policy_contradictions_are_alerted(Db::Sqlite);
}

#[test]
fn ai_policy_contradictions_are_alerted_on_postgres() {
    ai_policy_contradictions_are_alerted(Db::Postgres);
}

/// Issue #64: `database:` takes the SQLite URL forms sqlx documents
/// (`sqlite:///ABSOLUTE`, `sqlite://RELATIVE`), and a file that cannot be
/// opened is said once, with the forms robotsgate takes.
#[test]
fn sqlite_urls_are_taken_and_a_bad_one_is_said_once() {
    let dir = temp_dir("sqlite-url");
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/robots.txt"), V1).unwrap();
    let site = "agents: [Googlebot]\nsites:\n  - name: local\n    file: site/robots.txt\n";
    let absolute = dir.join("abs.db");
    for (database, file) in [
        (format!("sqlite://{}", absolute.display()), absolute.clone()),
        ("sqlite://rel.db".to_string(), dir.join("rel.db")),
        ("sqlite:plain.db?mode=rwc".to_string(), dir.join("plain.db")),
    ] {
        let cfg = write_config(&dir, &format!("database: \"{database}\"\n{site}"));
        let out = monitor(&cfg, &["once"]);
        assert_eq!(out.status.code(), Some(0), "{database}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(scalar(&file.display().to_string(), "SELECT COUNT(*) FROM states"), 1, "{database}");
    }
    let cfg = write_config(&dir, &format!("database: \"sqlite:///proc/robotsgate/r.db\"\n{site}"));
    let out = monitor(&cfg, &["once"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(err.matches("unable to open database file").count(), 1, "said once: {err}");
    let cfg = write_config(&dir, &format!("database: \"sqlite::memory:\"\n{site}"));
    let err = String::from_utf8_lossy(&monitor(&cfg, &["once"]).stderr).into_owned();
    assert!(err.contains("keeps nothing on disk") && err.contains("sqlite:///"), "{err}");
}

/// Issue #64: a site with no `url_sets` still has `/` judged: `diff` of a
/// change to `Disallow: /` counts its flips (never "0 verdict flips"), and
/// `test` says the site saves no URLs and how to add them.
#[test]
fn a_site_without_url_sets_is_judged_at_its_root() {
    let dir = temp_dir("no-url-sets");
    let database = fresh_database(Db::Sqlite, &dir).unwrap();
    let origin = Origin::start();
    let yaml = format!(
        "database: {database}\nagents: [Googlebot, bingbot]\nsites:\n  - name: shop\n    url: {}\n",
        origin.url("/robots.txt")
    );
    let cfg = write_config(&dir, &yaml);
    origin.set("/robots.txt", Reply::ok(V1));
    once(&cfg);
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /\n"));
    once(&cfg);
    let text = String::from_utf8_lossy(&monitor(&cfg, &["diff", "shop"]).stdout).into_owned();
    assert!(text.contains("2 verdict flips for 1 URL x 2 crawlers (only /: the site saves no url_sets)"), "{text}");
    assert!(text.contains("Googlebot  /\n"), "{text}");
    let text = String::from_utf8_lossy(&monitor(&cfg, &["test", "shop"]).stdout).into_owned();
    assert!(text.contains("shop saves no URLs to test") && text.contains("url_sets:"), "{text}");
    assert!(text.contains("DISALLOWED Googlebot"), "{text}");
}
