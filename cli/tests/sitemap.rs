//! `robots lint --sitemap` and `robots diff --sitemap`, run as CI runs
//! them: a local sitemap, and a sitemap index served over HTTP on loopback
//! with a gzip sitemap and a broken one.

use std::io::Write;
use std::process::{Command, Output};

use testkit::{Origin, Reply};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

fn robots(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_robots")).args(args).output().expect("spawn robots")
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("robots-cli-sitemap-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn urlset(urls: &[String]) -> String {
    let entries: String = urls.iter().map(|u| format!("<url><loc>{u}</loc></url>\n")).collect();
    format!("<?xml version=\"1.0\"?>\n<urlset xmlns=\"{NS}\">\n{entries}</urlset>\n")
}

#[test]
fn lint_says_which_line_disallows_listed_urls() {
    let d = dir();
    let robots_txt = d.join("robots.txt");
    std::fs::write(&robots_txt, "User-agent: *\nDisallow: /products/\nAllow: /products/ok\n").unwrap();
    let urls: Vec<String> = ["/", "/products/1", "/products/2", "/products/ok"]
        .iter()
        .map(|p| format!("https://shop.example{p}"))
        .collect();
    let map = d.join("sitemap.xml");
    std::fs::write(&map, urlset(&urls)).unwrap();
    let out = robots(&["lint", robots_txt.to_str().unwrap(), "--sitemap", map.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("2 of 4 sitemap URLs are disallowed for Googlebot and 13 other search crawlers (line 2: `Disallow: /products/`)"),
        "{text}"
    );
    assert!(text.contains("    https://shop.example/products/1"), "{text}");
    // A file that opens them passes.
    std::fs::write(&robots_txt, "User-agent: *\nDisallow: /cart\n").unwrap();
    let out = robots(&["lint", robots_txt.to_str().unwrap(), "--sitemap", map.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("none of 4 sitemap URLs is disallowed"));
}

#[test]
fn diff_fetches_an_index_and_refuses_a_change_that_closes_its_urls() {
    let o = Origin::start();
    let index = format!(
        "<sitemapindex xmlns=\"{NS}\"><sitemap><loc>{}</loc></sitemap><sitemap><loc>{}</loc></sitemap></sitemapindex>",
        o.url("/a.xml.gz"),
        o.url("/broken.xml")
    );
    o.set("/index.xml", Reply::ok(index));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(urlset(&[o.url("/blog/1"), o.url("/shop/1")]).as_bytes()).unwrap();
    o.set("/a.xml.gz", Reply::ok(gz.finish().unwrap()));
    o.set("/broken.xml", Reply::ok("<urlset><url><loc>x</url>"));
    let d = dir();
    let (old, new) = (d.join("old.txt"), d.join("new.txt"));
    std::fs::write(&old, "User-agent: *\nDisallow: /admin\n").unwrap();
    std::fs::write(&new, "User-agent: *\nDisallow: /admin\n\nUser-agent: bingbot\nDisallow: /blog/\n").unwrap();
    let index_url = o.url("/index.xml");
    let out = robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--sitemap", &index_url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("this change: 1 of 2 sitemap URLs is disallowed for bingbot (line 5: `Disallow: /blog/`)"),
        "{text}"
    );
    assert!(text.contains("broken.xml: error[not-xml]: line 1"), "{text}");
    // The same change with no listed URL under /blog/ passes the sitemap check.
    std::fs::write(&new, "User-agent: *\nDisallow: /admin\nDisallow: /private/\n").unwrap();
    let out =
        robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--sitemap", &index_url, "--urls", "/dev/null"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("this change closes none of the 2 sitemap URLs"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}
