//! Walking a site's sitemaps over real HTTP on loopback: an index with a
//! gzip child, redirects, a loop, a nested index, a 404, a 5xx, an HTML
//! login page and a server that trickles bytes.

use std::io::Write;
use std::time::{Duration, Instant};

use robotsgate_fetch::{Fetcher, Validators};
use robotsgate_sitemaps::{File, Options, What, walk};
use testkit::{Origin, Reply};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

fn urlset(origin: &Origin, paths: &[&str]) -> Vec<u8> {
    let entries: String = paths.iter().map(|p| format!("<url><loc>{}</loc></url>\n", origin.url(p))).collect();
    format!("<urlset xmlns=\"{NS}\">\n{entries}</urlset>").into_bytes()
}

fn index(origin: &Origin, paths: &[&str]) -> Vec<u8> {
    let entries: String = paths.iter().map(|p| format!("<sitemap><loc>{}</loc></sitemap>\n", origin.url(p))).collect();
    format!("<sitemapindex xmlns=\"{NS}\">\n{entries}</sitemapindex>").into_bytes()
}

fn run(origin: &Origin, named: &[&str], options: Options) -> (Vec<File>, Vec<String>) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let fetcher = Fetcher::new(Duration::from_secs(10), "robotsgate-test", &[], None).unwrap();
    let named: Vec<(u32, String)> = named.iter().enumerate().map(|(i, p)| (i as u32 + 1, origin.url(p))).collect();
    let w = rt.block_on(walk(&fetcher, &named, &options, Vec::new()));
    (w.files, w.sink)
}

fn options(origin: &Origin) -> Options {
    Options::new(Some(format!("http://{}", origin.addr)))
}

fn file<'a>(files: &'a [File], origin: &Origin, path: &str) -> &'a File {
    let url = origin.url(path);
    files.iter().find(|f| f.url == url).unwrap_or_else(|| panic!("no {path} in {files:#?}"))
}

#[test]
fn an_index_and_its_sitemaps_with_every_failure_named() {
    let o = Origin::start();
    o.set(
        "/index.xml",
        Reply::ok(index(
            &o,
            &["/a.xml.gz", "/moved.xml", "/gone.xml", "/down.xml", "/login", "/index.xml", "/inner.xml"],
        )),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&urlset(&o, &["/p/1", "/p/2"])).unwrap();
    o.set("/a.xml.gz", Reply::ok(gz.finish().unwrap()));
    o.set("/moved.xml", Reply::redirect("/b.xml"));
    o.set("/b.xml", Reply::ok(urlset(&o, &["/p/3", "/p/1"])));
    o.set("/gone.xml", Reply::status(404));
    o.set("/down.xml", Reply::status(503));
    o.set("/login", Reply::ok("<!DOCTYPE html><html><body><form>Sign in</form></body></html>"));
    o.set("/inner.xml", Reply::ok(index(&o, &["/p.xml"])));
    let (files, urls) = run(&o, &["/index.xml"], options(&o));
    assert_eq!(urls, [o.url("/p/1"), o.url("/p/2"), o.url("/p/3")], "each URL once, across files");
    let f = file(&files, &o, "/index.xml");
    assert!(f.findings.has(What::Loop), "{f:?}");
    assert_eq!(file(&files, &o, "/a.xml.gz").state(), "ok");
    let moved = file(&files, &o, "/moved.xml");
    assert!(moved.findings.has(What::Redirected) && moved.findings.has(What::Duplicate), "{moved:?}");
    assert_eq!(moved.hops, [format!("301 {}", o.url("/b.xml"))]);
    assert!(file(&files, &o, "/gone.xml").findings.has(What::NotFound));
    assert!(file(&files, &o, "/down.xml").findings.has(What::Unavailable));
    assert!(file(&files, &o, "/login").findings.has(What::Html));
    assert!(file(&files, &o, "/inner.xml").findings.has(What::NestedIndex));
    assert!(!files.iter().any(|f| f.url == o.url("/p.xml")), "one level of index only");
}

#[test]
fn a_trickling_server_meets_the_deadline_and_the_walk_goes_on() {
    let o = Origin::start();
    let body = urlset(&o, &["/slow/1", "/slow/2"]);
    let chunks = body.iter().map(|b| vec![*b]).collect();
    o.set("/slow.xml", Reply::Stream { chunks, pause: Duration::from_millis(50) });
    o.set("/fast.xml", Reply::ok(urlset(&o, &["/fast"])));
    let started = Instant::now();
    let (files, urls) =
        run(&o, &["/slow.xml", "/fast.xml"], Options { deadline: Duration::from_secs(1), ..options(&o) });
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(file(&files, &o, "/slow.xml").findings.has(What::Timeout), "{files:#?}");
    assert!(urls.contains(&o.url("/fast")));
}

#[test]
fn loops_of_redirects_and_unchanged_files() {
    let o = Origin::start();
    o.set("/r1.xml", Reply::redirect("/r2.xml"));
    o.set("/r2.xml", Reply::redirect("/r1.xml"));
    o.set("/same.xml", Reply::Send { status: 304, headers: vec![], body: vec![], delay: Duration::ZERO });
    let mut opts = options(&o);
    opts.validators.insert(o.url("/same.xml"), Validators { etag: Some("\"v1\"".into()), last_modified: None });
    let (files, urls) = run(&o, &["/r1.xml", "/same.xml"], opts);
    assert!(urls.is_empty());
    assert!(file(&files, &o, "/r1.xml").findings.has(What::BrokenRedirect));
    let same = file(&files, &o, "/same.xml");
    assert!(same.not_modified && same.state() == "unchanged", "{same:?}");
}

#[test]
fn the_whole_walk_has_a_budget() {
    let o = Origin::start();
    let chunks: Vec<Vec<u8>> = urlset(&o, &["/x"]).into_iter().map(|b| vec![b]).collect();
    for i in 0..5 {
        o.set(&format!("/slow{i}.xml"), Reply::Stream { chunks: chunks.clone(), pause: Duration::from_millis(100) });
    }
    let named: Vec<String> = (0..5).map(|i| format!("/slow{i}.xml")).collect();
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    let started = Instant::now();
    let opts = Options { deadline: Duration::from_secs(10), budget: Duration::from_millis(1500), ..options(&o) };
    let (files, _) = run(&o, &named, opts);
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(files[0].findings.has(What::OutOfTime), "{files:#?}");
    assert!(files.len() < 5);
}
