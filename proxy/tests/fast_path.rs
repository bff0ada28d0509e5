//! The gateway's own HTTP/1.1 path, and what it hands to Pingora's pipeline,
//! through the real `robots-proxy` binary: keep-alive and pipelined clients,
//! pooled origin connections, bodies of every framing, interim responses,
//! and the requests that go to the pipeline instead (chunked uploads and
//! `Expect` are in `uploads.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testkit::*;

mod support;
use support::start_enforcing;

fn start(name: &str, origin: SocketAddr, fast_path: bool) -> (Proc, SocketAddr) {
    start_enforcing(name, origin, fast_path, "  grace_period: 1s\n  origin_timeout: 1s\n")
}

/// One response as a client reads it off a kept-alive connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The echo origin's `conn=N`.
    fn conn(&self) -> &str {
        self.body.split_whitespace().find(|w| w.starts_with("conn=")).unwrap_or("none")
    }
}

/// A client connection kept open across requests.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn open(addr: SocketAddr) -> Client {
        let writer = TcpStream::connect(addr).expect("connect");
        writer.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Client { reader: BufReader::new(writer.try_clone().unwrap()), writer }
    }

    fn send(&mut self, raw: &[u8]) {
        self.writer.write_all(raw).expect("send");
    }

    fn get(&mut self, path: &str) -> Answer {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: shop.test\r\n\r\n").as_bytes());
        self.read(false)
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read line");
        line.trim_end().to_string()
    }

    /// Reads one response; `head_only` for a HEAD request's.
    fn read(&mut self, head_only: bool) -> Answer {
        let status_line = self.line();
        let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        assert!(status_line.starts_with("HTTP/1.1 "), "status line {status_line:?}");
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').expect("header field");
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let mut answer = Answer { status, headers, body: String::new() };
        let mut body = Vec::new();
        if head_only || (100..200).contains(&status) || status == 204 || status == 304 {
        } else if answer.header("Transfer-Encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                let size = self.line();
                let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).expect("chunk size");
                if size == 0 {
                    while !self.line().is_empty() {}
                    break;
                }
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(len) = answer.header("Content-Length") {
            body = vec![0; len.parse().expect("length")];
            self.reader.read_exact(&mut body).expect("body");
        } else {
            self.reader.read_to_end(&mut body).expect("body to close");
        }
        answer.body = String::from_utf8_lossy(&body).into_owned();
        answer
    }

    /// Whether the proxy closed the connection.
    fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0))
    }
}

#[test]
fn keep_alive_clients_reuse_one_origin_connection_and_hop_fields_stay_behind() {
    let echo = Echo::start();
    let (_p, addr) = start("fast-keepalive", echo.addr, true);
    let mut c = Client::open(addr);
    let mut conns = Vec::new();
    for i in 0..5 {
        c.send(
            format!(
                "GET /page/{i}?q=1 HTTP/1.1\r\nHost: shop.test\r\nConnection: keep-alive\r\nKeep-Alive: 300\r\nX-Custom: {i}\r\n\r\n"
            )
            .as_bytes(),
        );
        let a = c.read(false);
        assert_eq!(a.status, 200, "{a:?}");
        assert!(a.body.starts_with(&format!("GET /page/{i}?q=1 ")), "{}", a.body);
        // The forwarded fields are the gateway's own (proxy/src/http/forwarded.rs).
        assert!(
            a.body.contains("headers=host,x-custom,x-forwarded-for,x-forwarded-proto,forwarded\n"),
            "hop-by-hop fields are not forwarded: {}",
            a.body
        );
        assert!(a.header("Keep-Alive").is_none() && a.header("Connection").is_none(), "{:?}", a.headers);
        conns.push(a.conn().to_string());
    }
    assert!(conns.iter().all(|c| *c == conns[0]), "one pooled origin connection: {conns:?}");

    // Pipelined requests are answered in order.
    c.send(b"GET /a HTTP/1.1\r\nHost: shop.test\r\n\r\nGET /b HTTP/1.1\r\nHost: shop.test\r\n\r\nGET /c HTTP/1.1\r\nHost: shop.test\r\n\r\n");
    for path in ["/a", "/b", "/c"] {
        let a = c.read(false);
        assert!(a.body.starts_with(&format!("GET {path} ")), "{path}: {}", a.body);
    }

    // A head that arrives in pieces, split inside its closing blank line.
    for piece in ["GET /pie", "ces HTTP/1.1\r\nHost: shop.test\r", "\n\r", "\n"] {
        c.send(piece.as_bytes());
        std::thread::sleep(Duration::from_millis(30));
    }
    let a = c.read(false);
    assert!(a.body.starts_with("GET /pieces "), "{}", a.body);

    // An unknown host is answered without closing the connection.
    c.send(b"GET / HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n");
    assert_eq!(c.read(false).status, 421);
    // Connection: close is honoured.
    c.send(b"GET /last HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n");
    let a = c.read(false);
    assert_eq!((a.status, a.header("Connection")), (200, Some("close")));
    assert!(c.closed());
}

#[test]
fn bodies_of_every_framing_are_relayed_and_the_connection_goes_on() {
    let echo = Echo::start();
    let (_p, addr) = start("fast-bodies", echo.addr, true);
    let mut c = Client::open(addr);

    // A large request body, sent in pieces.
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
    c.send(format!("POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
    for piece in body.chunks(700_000) {
        c.send(piece);
    }
    let a = c.read(false);
    assert!(a.body.contains(&format!("body={}/{sum} ", body.len())), "{}", a.body);

    // A chunked response stays chunked, trailer included, and ends where it should.
    let a = c.get("/chunked");
    assert_eq!(a.header("Transfer-Encoding"), Some("chunked"));
    assert!(a.body.starts_with("GET /chunked ") && a.body.ends_with("\n!"), "{:?}", a.body);

    // Interim responses are passed on before the final one.
    let a = c.get("/hints");
    assert_eq!((a.status, a.header("Link")), (103, Some("</style.css>; rel=preload")));
    let a = c.read(false);
    assert!(a.status == 200 && a.body.starts_with("GET /hints "), "{a:?}");

    // HEAD: a length, no body.
    c.send(b"HEAD /page HTTP/1.1\r\nHost: shop.test\r\n\r\n");
    let a = c.read(true);
    assert!(a.header("Content-Length").is_some_and(|l| l != "0"), "{a:?}");
    assert!(c.get("/after-head").body.starts_with("GET /after-head "));

    // An origin that closes its idle connection: the next request still succeeds.
    assert_eq!(c.get("/idle-close").status, 200);
    std::thread::sleep(Duration::from_millis(600));
    assert!(c.get("/after-idle-close").body.starts_with("GET /after-idle-close "));

    // A body delimited by the origin's close ends the client's connection too.
    let a = c.get("/eof");
    assert_eq!(a.header("Connection"), Some("close"));
    assert!(a.body.starts_with("GET /eof "), "{}", a.body);
}

#[test]
fn uploads_and_http_1_0_are_served_with_the_bytes_already_read() {
    let echo = Echo::start();
    let (_p, addr) = start("fast-handover", echo.addr, true);

    // A chunked request body, then a plain request on the same connection.
    let mut c = Client::open(addr);
    c.send(b"POST /chunked-upload HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    let sum: u64 = b"hello world".iter().map(|&b| u64::from(b)).sum();
    let a = c.read(false);
    assert!(a.body.starts_with("POST /chunked-upload ") && a.body.contains(&format!("body=11/{sum} ")), "{a:?}");
    assert!(c.get("/then").body.starts_with("GET /then "));

    // Expect: 100-continue.
    let mut c = Client::open(addr);
    c.send(b"PUT /put HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    let mut first = c.read(false);
    if first.status == 100 {
        c.send(b"data");
        first = c.read(false);
    } else {
        panic!("no 100 Continue: {first:?}");
    }
    assert!(first.body.starts_with("PUT /put ") && first.body.contains("body=4/"), "{first:?}");

    // HTTP/1.0.
    let mut c = Client::open(addr);
    c.send(b"GET /old HTTP/1.0\r\nHost: shop.test\r\n\r\n");
    let a = c.read(false);
    assert!(a.body.starts_with("GET /old "), "{a:?}");
}

#[test]
fn the_pipeline_alone_still_serves_robots_enforces_and_passes_through() {
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /private\n"));
    origin.set("/page", Reply::ok("origin page"));
    origin.set("/private/x", Reply::ok("private"));
    let (_p, addr) = start("pipeline-only", origin.addr, false);
    let robots = || request(addr, "GET", "shop.test", "/robots.txt", &[]).expect("robots");
    assert!(eventually(15, || robots().header("X-Robots-Source") == Some("origin")));
    assert_eq!(request(addr, "GET", "shop.test", "/page", &[]).unwrap().text(), "origin page");
    let ua = [("User-Agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")];
    assert_eq!(request(addr, "GET", "shop.test", "/private/x", &ua).unwrap().status, 403);
    assert_eq!(request(addr, "GET", "shop.test", "/page", &ua).unwrap().status, 200);
    assert_eq!(request(addr, "GET", "elsewhere.test", "/", &[]).unwrap().status, 421);
}

#[test]
fn a_silent_origin_gets_504_on_both_paths() {
    let origin = Origin::start();
    origin.set("/hang", Reply::Hang);
    origin.set("/page", Reply::ok("origin page"));
    for fast in [true, false] {
        let (_p, addr) = start(if fast { "hang-fast" } else { "hang-pipeline" }, origin.addr, fast);
        let asked = std::time::Instant::now();
        let r = request(addr, "GET", "shop.test", "/hang", &[]).expect("a response");
        assert_eq!(r.status, 504, "own path {fast}: {r:?}");
        assert!(asked.elapsed() < Duration::from_secs(10), "own path {fast}: {:?}", asked.elapsed());
        assert_eq!(request(addr, "GET", "shop.test", "/page", &[]).unwrap().text(), "origin page");
    }
}
