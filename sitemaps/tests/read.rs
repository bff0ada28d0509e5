//! The reader against files crawlers meet: good ones, broken ones and
//! hostile ones (bombs, entities, a DTD, bad bytes), each a finding with
//! its place, never a panic.

use std::io::Write;

use proptest::prelude::*;
use robotsgate_sitemaps::read::{Context, MAX_BYTES, Seen, read};
use robotsgate_sitemaps::{Kind, Reading, What};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

fn urlset(entries: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{NS}\">\n{entries}</urlset>\n")
}

fn go(body: &[u8]) -> (Reading, Vec<String>) {
    go_with(body, Context::new(Some("https://shop.example".into())))
}

fn go_with(body: &[u8], cx: Context) -> (Reading, Vec<String>) {
    let mut urls = Vec::new();
    let r = read(body, &cx, &mut Seen::default(), &mut |u| urls.push(u.to_string()));
    (r, urls)
}

fn finding(r: &Reading, what: What) -> String {
    r.findings
        .0
        .iter()
        .find(|f| f.what == what)
        .map(ToString::to_string)
        .unwrap_or_else(|| panic!("no {what:?} in {r:?}"))
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_good_urlset_lists_every_url_and_finds_nothing() {
    let body = urlset(
        "<url><loc>https://shop.example/</loc><lastmod>2026-11-29</lastmod></url>\n\
         <url><loc> https://shop.example/a?x=1&amp;y=2 </loc><lastmod>2026-11-29T10:00:00+00:00</lastmod></url>\n\
         <url><loc><![CDATA[https://shop.example/b]]></loc></url>\n",
    );
    let (r, urls) = go(body.as_bytes());
    assert_eq!(r.kind, Kind::Urlset);
    assert_eq!(urls, ["https://shop.example/", "https://shop.example/a?x=1&y=2", "https://shop.example/b"]);
    assert!(r.findings.0.is_empty(), "{:?}", r.findings);
    assert_eq!((r.entries, r.listed), (3, 3));
    assert_eq!(r.sha256.len(), 64);
}

#[test]
fn search_consoles_findings_with_their_places() {
    let body = format!(
        "<?xml version=\"1.0\"?>\n<urlset>\n<url><loc>/relative</loc></url>\n<url><loc>https://other.example/x</loc></url>\n\
         <url><loc>http://shop.example/x</loc></url>\n<url><loc>https://shop.example/d</loc><lastmod>29/11/2026</lastmod></url>\n\
         <url><loc>https://shop.example/d</loc></url>\n<url><loc>https://shop.example/{}</loc></url>\n</urlset>\n",
        "l".repeat(2100)
    );
    let (r, urls) = go(body.as_bytes());
    assert_eq!(urls.len(), 2, "{urls:?}");
    assert!(finding(&r, What::Namespace).starts_with("line 2, column 1: the root element has no namespace"));
    assert_eq!(
        finding(&r, What::Relative),
        "line 3: \"/relative\" is not an absolute http(s) URL; sitemaps list full URLs"
    );
    assert!(finding(&r, What::OtherHost).contains("(and 1 more)"), "scheme counts: {r:?}");
    assert!(finding(&r, What::Lastmod).starts_with("line 6: lastmod \"29/11/2026\""));
    assert!(finding(&r, What::Duplicate).starts_with("line 7: https://shop.example/d is listed more than once"));
    assert!(finding(&r, What::TooLong).contains("2,") || finding(&r, What::TooLong).contains("characters long"));
}

#[test]
fn broken_xml_says_where() {
    let (r, _) = go(b"<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n  <url><loc>https://shop.example/</loc></uurl>\n</urlset>");
    let f = finding(&r, What::NotXml);
    assert!(f.starts_with("line 3, column "), "{f}");
    assert!(f.contains("not well-formed"), "{f}");
}

#[test]
fn html_pages_are_not_sitemaps() {
    for page in [
        "<!DOCTYPE html><html><body>Sign in</body></html>",
        "\n  <html lang=en><head><title>Login</title></head></html>",
        "<HTML><BODY>x</BODY></HTML>",
    ] {
        let (r, urls) = go(page.as_bytes());
        assert!(r.findings.has(What::Html), "{page}: {r:?}");
        assert!(urls.is_empty());
    }
}

#[test]
fn no_entity_or_dtd_is_expanded() {
    let laughs = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>\n<urlset xmlns=\"{NS}\"><url><loc>https://shop.example/&lol2;</loc></url><url><loc>https://shop.example/ok</loc></url></urlset>"
    );
    let (r, urls) = go(laughs.as_bytes());
    assert!(r.findings.has(What::Dtd), "{r:?}");
    assert!(finding(&r, What::Entity).contains("&lol2;"), "{r:?}");
    assert_eq!(urls, ["https://shop.example/ok"]);
    assert!(r.bytes < 1000);
}

#[test]
fn bad_bytes_are_named() {
    let mut body = urlset("<url><loc>https://shop.example/caf").into_bytes();
    body.truncate(body.len() - "</urlset>\n".len());
    body.extend_from_slice(b"\xe9</loc></url></urlset>");
    let (r, _) = go(&body);
    assert!(r.findings.has(What::Encoding), "{r:?}");
    let (r, urls) = go(b"https://shop.example/a\nhttps://shop.example/\xff\nhttps://shop.example/b\n");
    assert_eq!(r.kind, Kind::Text);
    assert_eq!(urls, ["https://shop.example/a", "https://shop.example/b"]);
    assert_eq!(finding(&r, What::Encoding), "line 2: the line is not UTF-8");
}

#[test]
fn text_sitemaps_and_gzip() {
    let text = "https://shop.example/a\r\n\r\nhttps://shop.example/b\nhttps://shop.example/c";
    let (r, urls) = go(&gz(text.as_bytes()));
    assert!(r.gzip);
    assert_eq!(r.kind, Kind::Text);
    assert_eq!(urls.len(), 3, "no final newline still counts: {urls:?}");
    let mut broken = gz(urlset("<url><loc>https://shop.example/</loc></url>").as_bytes());
    let n = broken.len();
    broken.truncate(n - 12);
    let (r, _) = go(&broken);
    assert!(r.findings.has(What::Gzip) || r.findings.has(What::NotXml), "{r:?}");
}

#[test]
fn an_index_lists_sitemaps() {
    let body = format!(
        "<sitemapindex xmlns=\"{NS}\"><sitemap><loc>https://shop.example/s1.xml</loc><lastmod>2026-11-01</lastmod></sitemap>\
         <sitemap><loc>https://shop.example/s2.xml.gz</loc></sitemap></sitemapindex>"
    );
    let (r, urls) = go(body.as_bytes());
    assert_eq!(r.kind, Kind::Index);
    assert!(urls.is_empty());
    assert_eq!(r.children, ["https://shop.example/s1.xml", "https://shop.example/s2.xml.gz"]);
}

#[test]
fn the_url_limit_stops_reading() {
    let entries: String = (0..120).map(|i| format!("<url><loc>https://shop.example/{i}</loc></url>\n")).collect();
    let cx = Context { max_urls: 100, ..Context::new(Some("https://shop.example".into())) };
    let (r, urls) = go_with(urlset(&entries).as_bytes(), cx);
    assert_eq!(urls.len(), 100);
    assert!(finding(&r, What::TooManyUrls).contains("more than 100 URLs"));
}

#[test]
fn a_gzip_bomb_is_cut_at_fifty_megabytes() {
    // 200 MB of white space inside a valid urlset, 200 kB compressed.
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(format!("<urlset xmlns=\"{NS}\"><url><loc>https://shop.example/</loc></url>").as_bytes()).unwrap();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..200 {
        e.write_all(&chunk).unwrap();
    }
    e.write_all(b"</urlset>").unwrap();
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 1 << 20);
    let (r, urls) = go(&bomb);
    assert_eq!(r.bytes, MAX_BYTES);
    assert!(r.findings.has(What::TooLarge), "{r:?}");
    assert!(!r.findings.has(What::NotXml), "the cut is named as such, not as broken XML: {r:?}");
    assert_eq!(urls.len(), 1);
}

#[test]
fn empty_and_other_roots() {
    let (r, _) = go(b"");
    assert!(r.findings.has(What::Empty));
    let (r, _) = go(format!("<urlset xmlns=\"{NS}\"/>").as_bytes());
    assert!(r.findings.has(What::Empty), "{r:?}");
    let (r, _) = go(b"<rss><channel/></rss>");
    assert!(finding(&r, What::Root).contains("<rss>"));
}

#[test]
fn duplicates_count_across_files() {
    let cx = Context::new(None);
    let mut seen = Seen::default();
    let mut n = 0;
    let body = urlset("<url><loc>https://a.example/x</loc></url>");
    read(body.as_bytes(), &cx, &mut seen, &mut |_| n += 1);
    let r = read(body.as_bytes(), &cx, &mut seen, &mut |_| n += 1);
    assert_eq!(n, 1);
    assert!(r.findings.has(What::Duplicate));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_bytes_are_read_without_a_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let (r, urls) = go(&body);
        prop_assert!(urls.len() as u64 <= r.entries);
        prop_assert!(r.bytes <= body.len() as u64 || r.gzip);
    }

    #[test]
    fn xml_like_bytes_are_read_without_a_panic(parts in proptest::collection::vec(prop_oneof![
        Just("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"), Just("<url>"), Just("</url>"), Just("<loc>"),
        Just("</loc>"), Just("https://shop.example/a"), Just("&amp;"), Just("&x;"), Just("&#0;"), Just("&#x110000;"),
        Just("<![CDATA["), Just("]]>"), Just("<!DOCTYPE x>"), Just("</urlset>"), Just("<lastmod>"), Just("</lastmod>"),
        Just("\n"), Just("\u{e9}"), Just("<sitemapindex>"), Just("<?xml version=\"1.0\"?>"), Just("<!--"), Just("-->"),
    ], 0..40)) {
        let body: String = parts.concat();
        let (r, urls) = go(body.as_bytes());
        prop_assert!(urls.len() as u64 <= r.entries);
        let (r2, urls2) = go(&gz(body.as_bytes()));
        prop_assert_eq!(urls, urls2);
        prop_assert_eq!(r.findings, r2.findings);
    }
}
