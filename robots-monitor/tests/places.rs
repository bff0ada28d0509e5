//! What crawlers get from every place they look (issue #61), against real
//! servers on loopback: a real nginx caching robots.txt as a CDN does
//! (`proxy_cache`, a day's `proxy_cache_valid`, `Cache-Control` ignored) in
//! front of a loopback origin, and a real nginx answering for every host
//! variant of a site over HTTP and HTTPS (a test CA), reached through
//! `http.connect_to` as a resolver override. The real `robots-monitor`
//! binary polls; the database (SQLite and PostgreSQL) says what it raised.

#[path = "support/browser.rs"]
mod browser;
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use support::*;

const A: &str = "User-agent: *\nDisallow: /private\n";
const B: &str = "User-agent: *\nDisallow: /private\nDisallow: /checkout\n";

fn place_alerts(db: &str, kind: &str) -> i64 {
    scalar(db, &format!("SELECT COUNT(*) FROM alerts WHERE kind = '{kind}'"))
}

/// The CDN keeps the old copy after the origin changed: one alert after the
/// grace, naming both copies and what changes, none more while it lasts,
/// and one resolved notice after the copy is refreshed (nginx's
/// `proxy_cache_bypass`, the purge of open-source nginx).
fn stale_edge(db: Db) {
    let dir = temp_dir(&format!("places-edge-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(A));
    let port = free_port();
    let Some(_nginx) = cdn(&dir, port, &origin, "") else { return };
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nsites:\n  - name: shop\n    url: http://127.0.0.1:{port}/robots.txt\n\
             \x20   edge: {{ origin: \"{o}\", grace: 2s }}\n    url_sets:\n      main:\n        - http://127.0.0.1:{port}/checkout/pay\n",
            o = origin.url("/robots.txt"),
        ),
    );
    let once = || {
        let out = monitor(&config, &["once"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    once();
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "same");
    // The origin is fixed; the edge keeps its day-long copy.
    origin.set("/robots.txt", Reply::ok(B));
    once();
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "own");
    assert_eq!(place_alerts(&database, "place"), 0, "within the grace");
    std::thread::sleep(Duration::from_millis(2200));
    once();
    once();
    assert_eq!(place_alerts(&database, "place"), 1, "one alert after the grace, however many polls");
    let text = scalar_text(&database, "SELECT body_text FROM alerts WHERE kind = 'place'");
    assert!(text.contains("The edge serves revision"), "{text}");
    assert!(text.contains("The origin serves"), "{text}");
    assert!(text.contains("x-cache: HIT"), "{text}");
    assert!(text.contains("/checkout/pay for Googlebot: allowed"), "the verdict that differs: {text}");
    // The purge: the next request refreshes the cached copy.
    let refreshed =
        request(SocketAddr::from(([127, 0, 0, 1], port)), "GET", "127.0.0.1", "/robots.txt", &[("X-Refresh", "1")]);
    assert!(refreshed.is_some_and(|r| r.text().contains("/checkout")));
    once();
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "same");
    assert_eq!(place_alerts(&database, "place-resolved"), 1);
    once();
    assert_eq!((place_alerts(&database, "place"), place_alerts(&database, "place-resolved")), (1, 1));
    // Both copies are in the history: the origin's bodies, and each state
    // the edge left (the current one is its row).
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM place_bodies"), 2);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM place_events WHERE place = 'edge'"), 2);
    assert_eq!(
        scalar_text(&database, "SELECT state FROM place_events WHERE place = 'edge' ORDER BY at DESC LIMIT 1")
            .split('|')
            .next(),
        Some("own")
    );
}

#[test]
fn a_stale_cdn_copy_alerts_once_and_resolves_on_sqlite() {
    stale_edge(Db::Sqlite);
}

#[test]
fn a_stale_cdn_copy_alerts_once_and_resolves_on_postgres() {
    stale_edge(Db::Postgres);
}

/// The CDN of [`stale_edge`] on `port` in front of `origin`, adding
/// `extra` to its location.
fn cdn(dir: &Path, port: u16, origin: &Origin, extra: &str) -> Option<Proc> {
    let servers = format!(
        "proxy_cache_path {cache} levels=1:2 keys_zone=edge:1m inactive=1d use_temp_path=off;\n\
         server {{ listen 127.0.0.1:{port};\n location / {{ proxy_pass {origin};\n proxy_cache edge;\n\
         proxy_cache_valid 200 1d;\n proxy_ignore_headers Cache-Control Expires;\n proxy_cache_bypass $http_x_refresh;\n\
         add_header X-Cache $upstream_cache_status;\n{extra} }} }}",
        cache = dir.join("cache").display(),
        origin = origin.url("").trim_end_matches('/'),
    );
    let proc = nginx_servers(dir, &servers)?;
    assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), 10), "nginx did not start");
    Some(proc)
}

/// With no origin named, the origin is read with a cache-busting request,
/// which nginx's default cache key (the URI with its query) misses, and the
/// report says so.
#[test]
fn a_cache_busting_request_reads_the_origin() {
    let dir = temp_dir("places-edge-bust");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(A));
    let port = free_port();
    let Some(_nginx) = cdn(&dir, port, &origin, "") else { return };
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nsites:\n  - name: shop\n    url: http://127.0.0.1:{port}/robots.txt\n    edge: {{ grace: 0s }}\n"
        ),
    );
    assert!(monitor(&config, &["once"]).status.success());
    // The first answer was a MISS, which names the cache: compared already.
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "same");
    origin.set("/robots.txt", Reply::ok(B));
    assert!(monitor(&config, &["once"]).status.success());
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "own");
    let summary = scalar_text(&database, "SELECT summary FROM places WHERE place = 'edge'");
    assert!(summary.contains("cache-busting"), "{summary}");
    assert_eq!(place_alerts(&database, "place"), 1);
}

/// A CDN that keys its cache on the path alone answers the cache-busting
/// request from its copy too: the edge is "unknown", never "the same".
#[test]
fn a_cdn_ignoring_the_query_leaves_the_edge_unknown() {
    let dir = temp_dir("places-edge-unknown");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(A));
    let port = free_port();
    let Some(_nginx) = cdn(&dir, port, &origin, "proxy_cache_key $scheme$proxy_host$uri;") else { return };
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nsites:\n  - name: shop\n    url: http://127.0.0.1:{port}/robots.txt\n    edge: {{ check: on, grace: 0s }}\n"
        ),
    );
    for _ in 0..2 {
        assert!(monitor(&config, &["once"]).status.success());
    }
    origin.set("/robots.txt", Reply::ok(B));
    assert!(monitor(&config, &["once"]).status.success());
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "unknown");
    let summary = scalar_text(&database, "SELECT summary FROM places WHERE place = 'edge'");
    assert!(summary.starts_with("unknown: the cache answered") && summary.contains("edge.origin"), "{summary}");
    assert_eq!(place_alerts(&database, "place"), 0, "no evidence, no alert");
    // No surface calls it fine either.
    let show = String::from_utf8_lossy(&monitor(&config, &["show", "shop"]).stdout).into_owned();
    assert!(show.contains("?   edge: unknown: the cache answered"), "{show}");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _console = serve(&config, addr, None);
    let page = request(addr, "GET", "console", "/sites/shop", &[]).expect("the page").text();
    assert!(page.contains("<p class=\"unknown\">At the edge, crawlers get unknown: the cache answered"), "{page}");
}

/// A CDN that adds lines of its own (a managed robots.txt) is shown as its
/// additions, not as a stale copy.
#[test]
fn a_cdn_adding_lines_is_not_stale() {
    let dir = temp_dir("places-edge-adds");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(A));
    let port = free_port();
    let adds = "sub_filter_types *;\n sub_filter_once on;\n sub_filter 'User-agent: *' 'User-agent: GPTBot\nDisallow: /\n\nUser-agent: *';\n proxy_set_header Accept-Encoding \"\";";
    let Some(_nginx) = cdn(&dir, port, &origin, adds) else { return };
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot, GPTBot]\nsites:\n  - name: shop\n    url: http://127.0.0.1:{port}/robots.txt\n\
             \x20   edge: {{ origin: \"{o}\", grace: 0s }}\n",
            o = origin.url("/robots.txt")
        ),
    );
    for _ in 0..2 {
        let out = monitor(&config, &["once"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(scalar_text(&database, "SELECT serves FROM places WHERE place = 'edge'"), "additions");
    let summary = scalar_text(&database, "SELECT summary FROM places WHERE place = 'edge'");
    assert!(summary.contains("2 lines of its own added"), "{summary}");
    assert_eq!(place_alerts(&database, "place"), 0);
}

/// The variants' nginx: one HTTP and one HTTPS listener answering for every
/// host by name, with `https` (the server blocks of the canonical host and
/// its variants).
fn variant_servers(dir: &Path, http: u16, https: u16, hosts: &str) -> (TestCerts, String) {
    let names = [
        "shop.test",
        "www.shop.test",
        "m.shop.test",
        "staging.shop.test",
        "loop.shop.test",
        "chain.shop.test",
        "html.shop.test",
    ];
    let san: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
    let certs = test_certs(dir, &san.join(","));
    let listen = |name: &str, tls: bool| {
        if tls {
            format!(
                "listen 127.0.0.1:{https} ssl; server_name {name}; ssl_certificate {}; ssl_certificate_key {};",
                certs.cert.display(),
                certs.key.display()
            )
        } else {
            format!("listen 127.0.0.1:{http}; server_name {name};")
        }
    };
    let servers = hosts
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (head, body) = l.split_once(' ').unwrap();
            let (scheme, host) = head.split_once("://").unwrap();
            format!("server {{ {} {body} }}", listen(host, scheme == "https"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    (certs, servers)
}

fn variant_config(dir: &Path, database: &str, http: u16, https: u16, ca: &Path, extra: &str) -> std::path::PathBuf {
    // tls.shop.test is not on the certificate: its TLS fails.
    let hosts = [
        "shop.test",
        "www.shop.test",
        "m.shop.test",
        "staging.shop.test",
        "loop.shop.test",
        "chain.shop.test",
        "html.shop.test",
        "tls.shop.test",
    ];
    let mut connect = String::new();
    for h in hosts {
        connect.push_str(&format!("    \"{h}:80\": \"127.0.0.1:{http}\"\n    \"{h}:443\": \"127.0.0.1:{https}\"\n"));
    }
    write_config(
        dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nhttp:\n  timeout: 3s\n  ca_file: {ca}\n  connect_to:\n{connect}\
             sites:\n  - name: shop\n    url: https://shop.test/robots.txt\n    url_sets:\n      main:\n        - https://shop.test/products/1\n        - https://shop.test/private/x\n{extra}",
            ca = ca.display()
        ),
    )
}

const GOOD: &str = "
https://shop.test location = /robots.txt { return 200 'User-agent: *\\nDisallow: /private\\n'; } location / { return 200 'ok'; }
http://shop.test return 301 https://shop.test$request_uri;
https://www.shop.test return 301 https://shop.test$request_uri;
http://www.shop.test return 301 https://www.shop.test$request_uri;
";

/// A site whose variants all redirect properly to the canonical host:
/// nothing raised, each recorded as a redirect to the canonical file.
fn variants_redirecting(db: Db) {
    let dir = temp_dir(&format!("places-good-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let (http, https) = (free_port(), free_port());
    let (certs, servers) = variant_servers(&dir, http, https, GOOD);
    let Some(_nginx) = nginx_servers(&dir, &servers) else { return };
    assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], https)), 10));
    let config = variant_config(&dir, &database, http, https, &certs.ca, "");
    for _ in 0..2 {
        let out = monitor(&config, &["once"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM places"), 3, "http://, www. over both");
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM places WHERE serves = 'redirect'"), 3);
    assert_eq!(scalar(&database, "SELECT hops FROM places WHERE place = 'http://www.shop.test'"), 2);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts"), 0);
    let show = monitor(&config, &["show", "shop"]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("http://www.shop.test") && text.contains("a redirect to the canonical file (2 hops)"),
        "{text}"
    );
}

#[test]
fn variants_that_redirect_raise_nothing_on_sqlite() {
    variants_redirecting(Db::Sqlite);
}

#[test]
fn variants_that_redirect_raise_nothing_on_postgres() {
    variants_redirecting(Db::Postgres);
}

const BAD: &str = "
https://shop.test location = /robots.txt { return 200 'User-agent: *\\nDisallow: /private\\n'; }
http://shop.test return 404;
https://www.shop.test location = /robots.txt { return 200 'User-agent: *\\nDisallow: /\\n'; }
http://www.shop.test return 301 https://shop.test$request_uri;
https://m.shop.test return 503;
http://m.shop.test return 301 https://shop.test$request_uri;
https://staging.shop.test return 404;
https://loop.shop.test location = /robots.txt { return 301 /r2; } location = /r2 { return 301 /robots.txt; }
https://chain.shop.test location = /robots.txt { return 302 /c1; } location = /c1 { return 302 /c2; } location = /c2 { return 302 /c3; } location = /c3 { return 302 /c4; } location = /c4 { return 302 /c5; } location = /c5 { return 302 /c6; } location = /c6 { return 200 'User-agent: *\\nDisallow:\\n'; }
https://html.shop.test location = /robots.txt { default_type text/html; return 200 '<!DOCTYPE html><html><body>Not found</body></html>'; }
https://tls.shop.test location = /robots.txt { return 200 'User-agent: *\\nDisallow: /private\\n'; }
";

const LISTED: &str = "    variants:
      hosts:
        - host: m.shop.test
        - host: https://staging.shop.test
          must: absent
        - host: https://loop.shop.test
        - host: https://chain.shop.test
        - host: https://html.shop.test
        - host: https://tls.shop.test
";

/// Each way a variant leaves what it must be raises one alert naming the
/// variant, the finding and the verdicts that change; two monitors on one
/// database raise each once.
fn variants_broken(db: Db) {
    let dir = temp_dir(&format!("places-bad-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let (http, https) = (free_port(), free_port());
    let (certs, servers) = variant_servers(&dir, http, https, BAD);
    let Some(_nginx) = nginx_servers(&dir, &servers) else { return };
    assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], https)), 10));
    let config = variant_config(&dir, &database, http, https, &certs.ca, LISTED);
    // The schema first (two first starts on one fresh SQLite file race
    // to migrate it); then four monitors at once, and one more round.
    assert!(monitor(&config, &["fetches", "shop"]).status.success());
    let both: Vec<_> = (0..4).map(|_| monitor_spawn(&config, &["once"])).collect();
    for child in both {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(monitor(&config, &["once"]).status.success());
    let serves = |place: &str| scalar_text(&database, &format!("SELECT serves FROM places WHERE place = '{place}'"));
    assert_eq!(serves("http://shop.test"), "no-file");
    assert_eq!(serves("https://www.shop.test"), "own");
    assert_eq!(serves("https://m.shop.test"), "unavailable");
    assert_eq!(serves("http://m.shop.test"), "redirect");
    assert_eq!(serves("https://staging.shop.test"), "no-file");
    assert_eq!(serves("https://loop.shop.test"), "broken-redirect");
    assert_eq!(serves("https://chain.shop.test"), "broken-redirect");
    assert_eq!(serves("https://html.shop.test"), "html");
    assert_eq!(serves("https://tls.shop.test"), "unavailable");
    let alerts = |place: &str| {
        scalar(&database, &format!("SELECT COUNT(*) FROM alerts WHERE kind = 'place' AND subject LIKE '%{place} %'"))
    };
    for place in [
        "http://shop.test",
        "https://www.shop.test",
        "https://m.shop.test",
        "https://loop.shop.test",
        "https://chain.shop.test",
        "https://html.shop.test",
        "https://tls.shop.test",
    ] {
        assert_eq!(alerts(place), 1, "{place}");
    }
    assert_eq!(place_alerts(&database, "place"), 7, "nothing for the redirecting and absent variants");
    let text = |place: &str| {
        scalar_text(
            &database,
            &format!("SELECT body_text FROM alerts WHERE kind = 'place' AND subject LIKE '%{place} %'"),
        )
    };
    let staging = text("https://www.shop.test");
    assert!(staging.contains("a file of its own where the canonical file is expected"), "{staging}");
    assert!(staging.contains("https://shop.test/products/1 for Googlebot: disallowed"), "{staging}");
    let opened = text("http://shop.test");
    assert!(opened.contains("everything opens") && opened.contains("/private/x for Googlebot: allowed"), "{opened}");
    assert!(text("https://m.shop.test").contains("503"));
    assert!(text("https://loop.shop.test").contains("redirect loop"));
    assert!(text("https://chain.shop.test").contains("longer than 5"));
    assert!(text("https://html.shop.test").contains("HTML"));
    assert!(text("https://tls.shop.test").contains("TLS failed"), "{}", text("https://tls.shop.test"));

    // Every surface says the same: `show`, the API, the page, the metrics.
    let show = String::from_utf8_lossy(&monitor(&config, &["show", "shop"]).stdout).into_owned();
    assert!(show.contains("OFF https://www.shop.test: a file of its own"), "{show}");
    assert!(show.contains("ok  https://staging.shop.test: 404"), "{show}");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _console = serve(&config, addr, None);
    let api = request(addr, "GET", "console", "/api/sites/shop", &[]).expect("the API answers");
    let json: serde_json::Value = serde_json::from_str(&api.text()).expect("JSON");
    let row = json["variants"].as_array().unwrap().iter().find(|r| r["host"] == "www.shop.test").cloned().unwrap();
    assert_eq!(row["https"]["serves"], "own", "{row}");
    assert_eq!(row["https"]["off"], true);
    assert_eq!(row["http"]["serves"], "redirect");
    let canonical = json["variants"].as_array().unwrap().iter().find(|r| r["host"] == "shop.test").cloned().unwrap();
    assert_eq!(
        (canonical["canonical"].as_str(), canonical["http"]["serves"].as_str()),
        (Some("https"), Some("no-file"))
    );
    let page = request(addr, "GET", "console", "/sites/shop", &[]).expect("the page").text();
    assert!(page.contains("id=\"variants\""), "{page}");
    assert!(page.contains("data-place=\"https://www.shop.test\" data-serves=\"own\""), "{page}");
    assert!(page.contains("a file of its own where the canonical file is expected"));
    let metrics = request(addr, "GET", "console", "/metrics", &[]).expect("metrics").text();
    assert!(
        metrics.contains("robotsgate_place_serves{place=\"https://www.shop.test\",serves=\"own\",site=\"shop\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "robotsgate_place_off_seconds{finding=\"own-file\",place=\"https://www.shop.test\",site=\"shop\"}"
        ),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("robotsgate_place_off_seconds{finding=\"none\",place=\"http://www.shop.test\",site=\"shop\"} 0"),
        "{metrics}"
    );

    // The matrix as a reader sees it, in Chromium (once: the page is the
    // same whatever the database).
    if db != Db::Sqlite {
        return;
    }
    let Some((_driver, driver_port)) = browser::chromedriver() else { return };
    block_on(async {
        use fantoccini::Locator;
        let c = browser::browser(driver_port).await;
        c.goto(&format!("http://{addr}/sites/shop")).await.unwrap();
        c.wait().for_element(Locator::Id("variants")).await.expect("the variants matrix");
        let staging = c.find(Locator::Css("td[data-place='https://www.shop.test']")).await.expect("the www. cell");
        assert_eq!(staging.attr("class").await.unwrap().as_deref(), Some("off"));
        let words = staging.text().await.unwrap();
        assert!(words.contains("a file of its own") && words.contains("must be same"), "{words}");
        let fine = c.find(Locator::Css("td[data-place='http://www.shop.test']")).await.expect("the http://www. cell");
        assert_eq!(fine.attr("class").await.unwrap().as_deref(), Some("ok"));
        let canonical = c.find(Locator::Css("td.canonical")).await.expect("the canonical cell");
        assert_eq!(canonical.text().await.unwrap(), "the canonical file");
        // The verdicts that differ open from their summary.
        let summary = "td[data-place='https://www.shop.test'] details summary";
        let differs = c.find(Locator::Css(summary)).await.expect("the differing verdicts' summary");
        assert!(differs.text().await.unwrap().contains("differ"));
        differs.click().await.unwrap();
        let mut list = Vec::new();
        for li in c.find_all(Locator::Css("td[data-place='https://www.shop.test'] details li")).await.unwrap() {
            list.push(li.text().await.unwrap());
        }
        assert!(
            list.iter().any(|l| l.starts_with("https://shop.test/products/1 for Googlebot: disallowed")),
            "{list:?}"
        );
        assert!(list.iter().any(|l| l.starts_with("https://shop.test/ for Googlebot: disallowed")), "{list:?}");
        c.close().await.unwrap();
    });
}

#[test]
fn each_broken_variant_alerts_once_on_sqlite() {
    variants_broken(Db::Sqlite);
}

#[test]
fn each_broken_variant_alerts_once_on_postgres() {
    variants_broken(Db::Postgres);
}

/// A raw listener answering every connection with `answer` (and then
/// holding the connection open for `hold`).
fn raw_server(answer: Vec<u8>, hold: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(&answer);
                std::thread::sleep(hold);
            });
        }
    });
    port
}

/// Bad answers from variants are findings, never a crash: 10 MB of body,
/// headers that never end, HTML with 200.
#[test]
fn bad_answers_from_variants_are_findings() {
    let dir = temp_dir("places-hostile");
    let Some(database) = fresh_database(Db::Sqlite, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(A));
    let mut big = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10485760\r\n\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    let big = raw_server(big, Duration::from_secs(1));
    let endless = raw_server(b"HTTP/1.1 200 OK\r\nX-Slow: 1\r\n".to_vec(), Duration::from_secs(30));
    let html = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\n\r\n<html><body>Sorry, not here</body></html>\n\n\n".to_vec(),
        Duration::ZERO,
    );
    let (host, port) = origin
        .url("")
        .trim_end_matches('/')
        .trim_start_matches("http://")
        .rsplit_once(':')
        .map(|(h, p)| (h.to_string(), p.to_string()))
        .unwrap();
    let config = write_config(
        &dir,
        &format!(
            "database: {database}\nagents: [Googlebot]\nhttp:\n  timeout: 2s\n  connect_to:\n    \"shop.test:80\": \"{host}:{port}\"\n\
             \x20   \"big.shop.test:80\": \"127.0.0.1:{big}\"\n    \"slow.shop.test:80\": \"127.0.0.1:{endless}\"\n    \"html.shop.test:80\": \"127.0.0.1:{html}\"\n\
             sites:\n  - name: shop\n    url: http://shop.test/robots.txt\n    variants:\n      auto: false\n      hosts:\n\
             \x20       - host: http://big.shop.test\n        - host: http://slow.shop.test\n        - host: http://html.shop.test\n"
        ),
    );
    let started = std::time::Instant::now();
    let out = monitor(&config, &["once"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(20), "the slow host is cut at the timeout");
    let serves = |place: &str| scalar_text(&database, &format!("SELECT serves FROM places WHERE place = '{place}'"));
    assert_eq!(serves("http://big.shop.test"), "own");
    assert_eq!(serves("http://slow.shop.test"), "unavailable");
    assert_eq!(serves("http://html.shop.test"), "html");
    assert_eq!(place_alerts(&database, "place"), 3);
    // Only the cap was kept of the 10 MB.
    assert!(scalar(&database, "SELECT MAX(LENGTH(body)) FROM place_bodies") < 700 * 1024);
}
