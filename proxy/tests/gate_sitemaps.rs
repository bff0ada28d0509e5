//! The gate keeps a site's sitemap URLs open (`sitemaps.keep_open`), with
//! the real `robots-proxy` in front of a real origin on 127.0.0.1, on both
//! request paths: the gateway reads the sitemaps its good copy names
//! (through its own listener, as a crawler would: `http.connect_to` points
//! `shop.test` at it), and a deploy that disallows listed URLs for a
//! search crawler is held until released, while one that closes only
//! unlisted URLs passes.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use testkit::*;

mod support;
use support::spawn_proxy;

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const TOKEN: &str = "gate-token";

fn good() -> String {
    "User-agent: *\nDisallow: /private/\nSitemap: http://shop.test/sitemap_index.xml\n".to_string()
}

fn gateway(dir: &Path, origin: SocketAddr, fast: bool) -> (Proc, SocketAddr, SocketAddr) {
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "http:
  timeout: 2s
  connect_to:
    \"shop.test:80\": \"127.0.0.1:{listen}\"
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
    sitemaps: {{ keep_open: true, every: 1s }}
    proxy:
      hosts: [shop.test]
      origin: {origin}
"
    );
    let cfg = dir.join(format!("config-{listen}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    (spawn_proxy(&cfg, &[addr, admin]), addr, admin)
}

fn serves(addr: SocketAddr, source: &str, body: &str) -> bool {
    request(addr, "GET", "shop.test", "/robots.txt", &[("User-Agent", GOOGLEBOT)])
        .is_some_and(|r| r.status == 200 && r.header("X-Robots-Source") == Some(source) && r.text() == body)
}

fn wait_serves(addr: SocketAddr, source: &str, body: &str, what: &str) {
    assert!(eventually(20, || serves(addr, source, body)), "{what}: never served {source} {body:?}");
}

fn admin(at: SocketAddr, method: &str, path: &str) -> Response {
    let auth = format!("Bearer {TOKEN}");
    request(at, method, "localhost", path, &[("Authorization", &auth)]).expect("admin answer")
}

fn listed_urls_are_held(fast: bool) {
    let dir = temp_dir(&format!("gate-sitemaps-{fast}"));
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(good()));
    origin.set(
        "/sitemap_index.xml",
        Reply::ok(format!(
            "<sitemapindex xmlns=\"{NS}\"><sitemap><loc>http://shop.test/products.xml</loc></sitemap></sitemapindex>"
        )),
    );
    let entries: String = (1..=40).map(|i| format!("<url><loc>http://shop.test/products/{i}</loc></url>")).collect();
    origin.set("/products.xml", Reply::ok(format!("<urlset xmlns=\"{NS}\">{entries}</urlset>")));
    let (_proc, addr, admin_at) = gateway(&dir, origin.addr, fast);
    wait_serves(addr, "origin", &good(), "first copy");
    // The gateway reads its sitemaps (its log says so; give it a refresh).
    std::thread::sleep(Duration::from_secs(3));

    // A deploy that closes unlisted URLs only passes.
    let cart = format!("{}Disallow: /cart/\n", good());
    origin.set("/robots.txt", Reply::ok(cart.clone()));
    wait_serves(addr, "origin", &cart, "a change that closes no listed URL");

    // A deploy that closes the listed products is held, with the count.
    let closing = format!("{cart}Disallow: /products/\n");
    origin.set("/robots.txt", Reply::ok(closing.clone()));
    wait_serves(addr, "held", &cart, "a change that closes listed URLs");
    let status: serde_json::Value = serde_json::from_slice(&admin(admin_at, "GET", "/status").body).unwrap();
    let held = &status["sites"][0]["held"];
    let summary = held["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("it disallows 40 of 40 sitemap URLs (first http://shop.test/products/1) for ")
            && summary.contains("(line 5: Disallow: /products/)"),
        "{held}"
    );
    assert!(held["breaks"].as_array().unwrap().iter().all(|b| b["declared"] == "sitemap"), "{held}");
    // Released, it is served.
    assert_eq!(admin(admin_at, "POST", "/release?site=shop").status, 202);
    wait_serves(addr, "origin", &closing, "the release");
}

#[test]
fn listed_urls_are_held_on_the_fast_path() {
    listed_urls_are_held(true);
}

#[test]
fn listed_urls_are_held_on_the_pipeline() {
    listed_urls_are_held(false);
}
