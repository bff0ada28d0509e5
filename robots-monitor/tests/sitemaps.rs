//! The sitemaps a robots.txt names (issue #62), against a real nginx on
//! loopback serving robots.txt, a sitemap index, a gzip sitemap and a plain
//! one from files on disk (so conditional requests get nginx's own ETags
//! and 304s), polled by the real `robots-monitor` binary on SQLite and
//! PostgreSQL, with alerts mailed to a real SMTP server.

mod support;

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use support::*;

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// nginx serving `root` on `port`, logging to `dir/access.log`; `None`
/// where nginx is not installed, outside CI.
fn nginx_serving(dir: &Path, port: u16, root: &Path) -> Option<Proc> {
    let server = format!(
        "server {{ listen 127.0.0.1:{port}; root {root}; access_log {log}; location = /old-sitemap.xml {{ return 301 /sitemap_index.xml; }} }}",
        root = root.display(),
        log = dir.join("access.log").display()
    );
    let proc = nginx_servers(dir, &server)?;
    assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), 10), "nginx did not start");
    Some(proc)
}

fn urlset(base: &str, paths: &[&str]) -> String {
    let entries: String =
        paths.iter().map(|p| format!("  <url><loc>{base}{p}</loc><lastmod>2026-11-29</lastmod></url>\n")).collect();
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{NS}\">\n{entries}</urlset>\n")
}

fn gz(text: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// Files change as editors and deploys change them: written aside, renamed
/// over, with a new modification time (nginx's ETag is size and mtime).
fn put(path: &Path, body: &[u8]) {
    let aside = path.with_extension("tmp");
    std::fs::write(&aside, body).unwrap();
    std::fs::rename(&aside, path).unwrap();
}

fn count(db: &str, sql: &str) -> i64 {
    scalar(db, sql)
}

fn conflicts_raise_one_alert_and_resolve_once(db: Db) {
    let dir = temp_dir(&format!("sitemaps-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let root = dir.join("www");
    std::fs::create_dir_all(&root).unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let robots = |extra: &str| format!("User-agent: *\nDisallow: /admin\n{extra}\nSitemap: {base}/old-sitemap.xml\n");
    put(&root.join("robots.txt"), robots("").as_bytes());
    put(
        &root.join("sitemap_index.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<sitemapindex xmlns=\"{NS}\">\n<sitemap><loc>{base}/products.xml.gz</loc></sitemap>\n\
             <sitemap><loc>{base}/blog.xml</loc></sitemap>\n<sitemap><loc>{base}/gone.xml</loc></sitemap>\n</sitemapindex>\n"
        )
        .as_bytes(),
    );
    put(&root.join("products.xml.gz"), &gz(&urlset(&base, &["/products/1", "/products/2", "/products/3"])));
    put(&root.join("blog.xml"), urlset(&base, &["/", "/blog/1", "/blog/1"]).as_bytes());
    let Some(_nginx) = nginx_serving(&dir, port, &root) else { return };
    let smtp = Smtp::start(&dir.join("mail"));
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nemail: {{ host: 127.0.0.1, port: {}, security: none, from: a@example.test, to: [seo@example.test] }}\n\
             sites:\n  - name: shop\n    url: {base}/robots.txt\n    variants: {{ auto: false }}\n    sitemaps: {{ every: 1s }}\n",
            smtp.port
        ),
    );
    let once = || {
        let out = monitor(&config, &["once"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    // 1. Nothing disallowed: a check on record, no alert.
    once();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM sitemap_checks"), 1);
    assert_eq!(count(&database, "SELECT listed FROM sitemap_checks"), 5, "each URL once, across files");
    assert_eq!(count(&database, "SELECT closed FROM sitemap_checks"), 0);
    let show = String::from_utf8_lossy(&monitor(&config, &["show", "shop"]).stdout).into_owned();
    assert!(show.contains("Sitemaps: ok 5 URLs listed, 0 disallowed"), "{show}");
    assert!(show.contains("redirected: it redirects (1 hop)"), "the robots.txt line names an old URL: {show}");
    assert!(show.contains("not-found: the sitemap answered 404"), "{show}");
    assert!(show.contains("duplicate:"), "{show}");
    // 2. A deploy closes /products/: one critical alert with the line.
    put(&root.join("robots.txt"), robots("Disallow: /products/").as_bytes());
    once();
    assert_eq!(count(&database, "SELECT closed FROM sitemap_checks ORDER BY id DESC LIMIT 1"), 3);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap'"), 1);
    let mails = smtp.wait_for(2);
    let alert = mails.iter().find(|m| m.contains("sitemap URLs")).expect("the sitemap alert is mailed");
    assert!(
        alert.contains("3 of 5 sitemap URLs are disallowed for Googlebot and")
            && alert.contains("(line 3: `Disallow: /products/`)"),
        "{alert}"
    );
    // 3. Polled again, nothing new: no second alert, and nginx answered
    //    the sitemaps' conditional requests with 304.
    std::thread::sleep(Duration::from_millis(1100));
    once();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap'"), 1);
    let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
    assert!(log.lines().any(|l| l.contains("/products.xml.gz") && l.contains("\" 304 ")), "{log}");
    // 4. The sitemap drops the products: the conflict clears, one notice.
    put(&root.join("products.xml.gz"), &gz(&urlset(&base, &["/shop/1"])));
    std::thread::sleep(Duration::from_millis(1100));
    once();
    assert_eq!(count(&database, "SELECT closed FROM sitemap_checks ORDER BY id DESC LIMIT 1"), 0);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap-resolved'"), 1);
    std::thread::sleep(Duration::from_millis(1100));
    once();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap-resolved'"), 1, "one notice");
    // The API and the metrics say the same.
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _console = serve(&config, addr, None);
    let api = request(addr, "GET", "console", "/api/sites/shop", &[]).expect("the API answers");
    let json: serde_json::Value = serde_json::from_str(&api.text()).expect("JSON");
    assert_eq!(json["sitemaps"]["listed"], 3, "{json}");
    assert_eq!(json["sitemaps"]["disallowed"], 0);
    let files = json["sitemaps"]["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["url"] == format!("{base}/gone.xml") && f["state"] == "error"), "{json}");
    let page = request(addr, "GET", "console", "/sites/shop", &[]).expect("the page").text();
    assert!(page.contains("id=\"sitemaps\""), "{page}");
    let metrics = request(addr, "GET", "console", "/metrics", &[]).expect("metrics").text();
    assert!(metrics.contains("robotsgate_sitemap_disallowed_urls{site=\"shop\"} 0"), "{metrics}");
    assert!(metrics.contains("robotsgate_sitemap_files{site=\"shop\",state=\"error\"} 1"), "{metrics}");
}

#[test]
fn conflicts_raise_one_alert_and_resolve_once_on_sqlite() {
    conflicts_raise_one_alert_and_resolve_once(Db::Sqlite);
}

#[test]
fn conflicts_raise_one_alert_and_resolve_once_on_postgres() {
    conflicts_raise_one_alert_and_resolve_once(Db::Postgres);
}

/// Four monitors on one PostgreSQL poll at once: one alert, however many
/// of them saw the conflict.
#[test]
fn four_monitors_raise_one_alert() {
    let dir = temp_dir("sitemaps-four");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let origin = Origin::start();
    let base = format!("http://{}", origin.addr);
    origin.set("/robots.txt", Reply::ok(format!("User-agent: *\nDisallow: /p/\nSitemap: {base}/s.xml\n")));
    origin.set("/s.xml", Reply::ok(urlset(&base, &["/p/1", "/q/1"])));
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nsites:\n  - name: shop\n    url: {base}/robots.txt\n    variants: {{ auto: false }}\n"
        ),
    );
    let children: Vec<_> = (0..4).map(|_| monitor_spawn(&config, &["once"])).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap'"), 1);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM sitemap_alerts WHERE resolved_at IS NULL"), 1);
}

/// A sitemap that fails (a 503, a trickle past the deadline) is no evidence
/// that the conflict cleared: the episode stays open, and the poll ends.
#[test]
fn a_failing_sitemap_never_resolves_a_conflict() {
    let dir = temp_dir("sitemaps-failing");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    let base = format!("http://{}", origin.addr);
    origin.set("/robots.txt", Reply::ok(format!("User-agent: *\nDisallow: /p/\nSitemap: {base}/s.xml\n")));
    origin.set("/s.xml", Reply::ok(urlset(&base, &["/p/1"])));
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nhttp: {{ timeout: 2s }}\nsites:\n  - name: shop\n    url: {base}/robots.txt\n    variants: {{ auto: false }}\n    sitemaps: {{ every: 1s }}\n"
        ),
    );
    let once = || assert!(monitor(&config, &["once"]).status.success());
    once();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap'"), 1);
    origin.set("/s.xml", Reply::status(503));
    std::thread::sleep(Duration::from_millis(1100));
    once();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap-resolved'"), 0);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM sitemap_alerts WHERE resolved_at IS NULL"), 1);
    let show = String::from_utf8_lossy(&monitor(&config, &["show", "shop"]).stdout).into_owned();
    assert!(show.contains("unavailable: the sitemap answered 503"), "{show}");
    // A trickle past the deadline: a finding, and the poll is on record.
    let chunks = urlset(&base, &["/p/1"]).into_bytes().into_iter().map(|b| vec![b]).collect();
    origin.set("/s.xml", Reply::Stream { chunks, pause: Duration::from_millis(200) });
    std::thread::sleep(Duration::from_millis(1100));
    let started = std::time::Instant::now();
    once();
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    assert_eq!(count(&database, "SELECT COUNT(*) FROM alerts WHERE kind = 'sitemap-resolved'"), 0);
    let show = String::from_utf8_lossy(&monitor(&config, &["show", "shop"]).stdout).into_owned();
    assert!(show.contains("timeout:"), "{show}");
}
