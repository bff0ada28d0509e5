//! Requests the gateway's own path takes now, where Pingora's pipeline
//! took them before: chunked uploads, `Expect: 100-continue` and HTTP/1.0
//! clients. Through the real binary, on the own path and on the pipeline
//! alone: bodies sent a few bytes at a time, extensions and trailers, a
//! request pipelined after the body, a go-ahead for each waiting client
//! and none for a request the gateway answers itself, a broken or stalled
//! body, an HTTP/1.0 client's chunked answer, and `/metrics` to show which
//! path served them.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testkit::*;

mod support;
use support::start_enforcing_admin;

const ROBOTS: &str = "User-agent: *\nDisallow: /private\n";

/// A gateway in front of an echo origin whose robots.txt it has loaded.
fn start(name: &str, fast: bool) -> (Proc, SocketAddr, SocketAddr, Echo) {
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let (proc, addr, admin) = start_enforcing_admin(
        name,
        echo.addr,
        fast,
        "  grace_period: 1s\n  client_timeout: 1s\n  origin_timeout: 5s\n",
    );
    let googlebot = [("User-Agent", "Googlebot/2.1")];
    let blocked = || request(addr, "GET", "shop.test", "/private/x", &googlebot).is_some_and(|r| r.status == 403);
    assert!(eventually(20, blocked), "fast {fast}: the gateway never loaded robots.txt");
    (proc, addr, admin, echo)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// One response off `s`: its status, head (lower-cased) and body (by
/// `Content-Length`; none for 1xx).
fn response(s: &mut TcpStream) -> Option<(u16, String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let length =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap_or(0));
    let mut body = vec![0u8; if status < 200 { 0 } else { length }];
    s.read_exact(&mut body).ok()?;
    Some((status, head, body))
}

/// Whether the peer closed `s` (reads 0 bytes, or fails as closed).
fn closed(s: &mut TcpStream) -> bool {
    matches!(s.read(&mut [0u8; 64]), Ok(0) | Err(_))
}

fn sum(bytes: &[u8]) -> u64 {
    bytes.iter().map(|&b| u64::from(b)).sum()
}

/// A series' value in `/metrics`, 0 when it is not there.
fn metric(admin: SocketAddr, series: &str) -> f64 {
    let text = request(admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default();
    text.lines().find(|l| l.starts_with(series)).and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0.0)
}

const PIPELINE: &str =
    "robotsgate_request_duration_seconds_count{path=\"pipeline\",protocol=\"http1\",robots=\"false\"}";

#[test]
fn chunked_uploads_arrive_whole_and_the_connection_goes_on() {
    for fast in [true, false] {
        let (_p, addr, admin, echo) = start("uploads-chunked", fast);
        let mut s = connect(addr);
        // Sent in small pieces, split inside sizes, data and line ends, with
        // an extension and a trailer, and a request pipelined after it.
        let raw = b"POST /up HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n\
                    5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n\
                    GET /then HTTP/1.1\r\nHost: shop.test\r\n\r\n";
        for piece in raw.chunks(7) {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        let (status, _, body) = response(&mut s).expect("the upload's answer");
        let body = String::from_utf8_lossy(&body).to_string();
        assert_eq!(status, 200, "fast {fast}: {body}");
        assert!(body.starts_with("POST /up ") && body.contains(&format!("body=11/{} ", sum(b"hello world"))), "{body}");
        let (status, _, body) = response(&mut s).expect("the pipelined answer");
        assert!(status == 200 && body.starts_with(b"GET /then "), "fast {fast}: {}", String::from_utf8_lossy(&body));

        // A megabyte in chunks of every size, on the same connection.
        let data: Vec<u8> = (0..1_048_576u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let mut raw = b"PUT /big HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let (mut at, mut size) = (0, 1);
        while at < data.len() {
            let n = size.min(data.len() - at);
            raw.extend_from_slice(format!("{n:X}\r\n").as_bytes());
            raw.extend_from_slice(&data[at..at + n]);
            raw.extend_from_slice(b"\r\n");
            at += n;
            size = size * 7 % 40_009 + 1;
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        s.write_all(&raw).unwrap();
        let (status, _, body) = response(&mut s).expect("the big upload's answer");
        let body = String::from_utf8_lossy(&body).to_string();
        assert!(status == 200 && body.contains(&format!("body={}/{} ", data.len(), sum(&data))), "fast {fast}: {body}");

        if fast {
            // One clean framing reached the origin, without what only the
            // client's chunks carried.
            let up = echo.heads().into_iter().find(|h| h.starts_with("POST /up ")).expect("forwarded");
            let lower = up.to_ascii_lowercase();
            assert!(lower.contains("\ntransfer-encoding: chunked"), "{up}");
            assert!(!lower.contains("content-length") && !lower.contains("x-trailer"), "{up}");
            assert_eq!(metric(admin, PIPELINE), 0.0, "the pipeline served a chunked upload");
        } else {
            assert!(metric(admin, PIPELINE) >= 3.0);
        }
    }
}

#[test]
fn a_waiting_client_gets_one_go_ahead_and_the_origin_no_expect() {
    for fast in [true, false] {
        let (_p, addr, admin, echo) = start("uploads-expect", fast);
        for (target, framing, body) in [
            ("/put-length", "Content-Length: 4", &b"data"[..]),
            ("/put-chunked", "Transfer-Encoding: chunked", &b"4\r\ndata\r\n0\r\n\r\n"[..]),
        ] {
            let mut s = connect(addr);
            let head = format!("PUT {target} HTTP/1.1\r\nHost: shop.test\r\n{framing}\r\nExpect: 100-continue\r\n\r\n");
            s.write_all(head.as_bytes()).unwrap();
            let (status, _, _) = response(&mut s).expect("an interim answer");
            assert_eq!(status, 100, "fast {fast}: {target}");
            s.write_all(body).unwrap();
            let (status, _, answer) = response(&mut s).expect("the final answer");
            let answer = String::from_utf8_lossy(&answer).to_string();
            assert_eq!(status, 200, "fast {fast}: {target}: a second 100, or no answer: {answer}");
            assert!(answer.contains(&format!("body=4/{} ", sum(b"data"))), "fast {fast}: {target}: {answer}");
            if fast {
                let forwarded = echo.heads().into_iter().find(|h| h.starts_with(&format!("PUT {target} ")));
                let forwarded = forwarded.expect("forwarded").to_ascii_lowercase();
                assert!(!forwarded.contains("\nexpect:"), "{forwarded}");
            }
        }
        // A client that sends its body at once is not held up, and gets
        // no go-ahead it did not wait for.
        let mut s = connect(addr);
        s.write_all(
            b"PUT /at-once HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\ndata",
        )
        .unwrap();
        let (status, _, _) = response(&mut s).expect("an answer");
        if fast {
            assert_eq!(status, 200, "a go-ahead for a body already sent");
            assert_eq!(metric(admin, PIPELINE), 0.0, "the pipeline served an Expect");
        }
    }
}

#[test]
fn a_request_the_gateway_refuses_gets_no_go_ahead_and_its_body_is_never_read() {
    for fast in [true, false] {
        let (_p, addr, _admin, echo) = start("uploads-refused", fast);
        for framing in ["Content-Length: 5", "Transfer-Encoding: chunked"] {
            let mut s = connect(addr);
            let head = format!(
                "POST /private/form HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: Googlebot/2.1\r\n{framing}\r\n\
                 Expect: 100-continue\r\n\r\n"
            );
            s.write_all(head.as_bytes()).unwrap();
            let (status, head, _) = response(&mut s).expect("an answer");
            assert_eq!(status, 403, "fast {fast}: {framing}: {head}");
            assert!(head.contains("connection: close"), "fast {fast}: {framing}: {head}");
            assert!(closed(&mut s), "fast {fast}: {framing}: the connection stayed open for a body");
        }
        assert!(
            !echo.heads().iter().any(|h| h.contains("/private/form")),
            "fast {fast}: a refused request got through"
        );
    }
}

#[test]
fn a_broken_or_stalled_chunked_body_ends_the_connection() {
    let (_p, addr, _admin, echo) = start("uploads-broken", true);
    // A size the strict reading refuses, then a request for a disallowed
    // path: the body is refused and nothing after it is read as a request.
    // (The origin had the head and gets no last chunk, then a close: a
    // streamed body cannot be refused before it is read.)
    let mut s = connect(addr);
    s.write_all(
        b"POST /broken HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n5 5\r\nhello\r\n0\r\n\r\n\
          GET /private/hidden HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: Googlebot/2.1\r\n\r\n",
    )
    .unwrap();
    let (status, _, body) = response(&mut s).expect("an answer");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    assert!(closed(&mut s), "the connection stayed open after a broken body");
    assert!(
        !echo.heads().iter().any(|h| h.contains("/private/hidden")),
        "a request hidden after a broken body got through"
    );

    // A body that stops midway: 408 after `client_timeout` (1 s).
    let mut s = connect(addr);
    s.write_all(b"POST /stalled HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel").unwrap();
    let began = std::time::Instant::now();
    let (status, _, _) = response(&mut s).expect("an answer");
    assert_eq!(status, 408);
    assert!(began.elapsed() < Duration::from_secs(5), "took {:?}", began.elapsed());
}

/// Everything an HTTP/1.0 client (`ab`, old tools and probes) gets, on both
/// paths: no 1xx, a chunked answer as its content ended by the close, and
/// one response a connection, keep-alive asked or not.
#[test]
fn http_1_0_clients_get_what_they_can_read() {
    for fast in [true, false] {
        let (_p, addr, admin, _echo) = start("http-1-0", fast);
        let read_all = |raw: &[u8]| {
            let mut s = connect(addr);
            s.write_all(raw).unwrap();
            let mut all = Vec::new();
            let _ = s.read_to_end(&mut all);
            String::from_utf8_lossy(&all).to_string()
        };
        // The echo origin answers `/chunked` in three chunks and a trailer.
        let all = read_all(b"GET /chunked HTTP/1.0\r\nHost: shop.test\r\n\r\n");
        let (head, body) = all.split_once("\r\n\r\n").expect("a head");
        let lower = head.to_ascii_lowercase();
        assert!(head.starts_with("HTTP/1.1 200 ") || head.starts_with("HTTP/1.0 200 "), "fast {fast}: {all}");
        assert!(!lower.contains("transfer-encoding"), "fast {fast}: chunked to HTTP/1.0: {head}");
        assert!(body.starts_with("GET /chunked ") && body.ends_with("\n!"), "fast {fast}: {body:?}");

        // Interim answers are dropped. The own path closes after one
        // response even when keep-alive is asked (it may; Pingora keeps it).
        let raw = b"GET /hints HTTP/1.0\r\nHost: shop.test\r\nConnection: keep-alive\r\n\r\n";
        let all = if fast {
            read_all(&[&raw[..], b"GET /second HTTP/1.0\r\nHost: shop.test\r\n\r\n"].concat())
        } else {
            read_all(b"GET /hints HTTP/1.0\r\nHost: shop.test\r\n\r\n")
        };
        assert!(!all.contains(" 103 ") && all.contains("GET /hints "), "fast {fast}: {all}");
        if fast {
            assert!(all.matches("HTTP/1.").count() == 1 && !all.contains("GET /second "), "{all}");
            assert!(all.to_ascii_lowercase().contains("connection: close"), "{all}");
        }

        // A body by length, an ignored `Expect`, and robots.txt from the store.
        let all = read_all(
            b"POST /form HTTP/1.0\r\nHost: shop.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\ndata",
        );
        assert!(!all.contains(" 100 ") && all.contains(&format!("body=4/{} ", sum(b"data"))), "fast {fast}: {all}");
        let all = read_all(b"GET /robots.txt HTTP/1.0\r\nHost: shop.test\r\n\r\n");
        assert!(all.ends_with(ROBOTS) && all.to_ascii_lowercase().contains("x-robots-source:"), "fast {fast}: {all}");
        // Googlebot is still refused what robots.txt disallows.
        let all = read_all(b"GET /private/x HTTP/1.0\r\nHost: shop.test\r\nUser-Agent: Googlebot/2.1\r\n\r\n");
        assert!(all.starts_with("HTTP/1.1 403 "), "fast {fast}: {all}");
        if fast {
            assert_eq!(metric(admin, PIPELINE), 0.0, "the pipeline served an HTTP/1.0 client");
        }
    }
}
