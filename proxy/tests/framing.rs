//! HTTP/1.1 message framing as an attacker and a broken origin try it, on
//! raw sockets, once with the own path and once with Pingora's pipeline
//! alone (RFC 9112 sections 2.2, 5, 6, 7; RFC 9110 section 6.4.1).
//!
//! Request side: every malformed or ambiguous head is refused or forwarded
//! in one clean form, and no request hidden in another (the disallowed
//! `/private/` path, asked for by Googlebot) ever reaches the origin.
//! Response side: whatever the origin sends, a client gets one framing,
//! never a truncated body that looks complete, and never bytes meant for
//! another request through the origin connection pool.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod support;
use support::edge::*;

const QUIET: Duration = Duration::from_secs(3);

/// A request that hides a disallowed one for Googlebot.
const HIDDEN: &str = "GET /private/hidden HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: Googlebot\r\n\r\n";

/// Nothing disallowed reached the origin, and each forwarded head is clean:
/// CRLF-free values, no obs-fold, no control bytes, at most one framing.
fn assert_clean(e: &Edge, probe: &str) {
    let heads = e.origin.heads();
    for head in &heads {
        let fast = e.fast;
        assert!(!head.contains("/private/"), "fast {fast}: {probe}: a disallowed request got through: {head:?}");
        assert!(
            !head.bytes().any(|b| b == b'\r' || b == 0 || (b < 0x20 && b != b'\n' && b != b'\t')),
            "fast {fast}: {probe}: a control byte was forwarded: {head:?}"
        );
        assert!(!head.contains("\n ") && !head.contains("\n\t"), "fast {fast}: {probe}: obs-fold forwarded: {head:?}");
        let lower = head.to_ascii_lowercase();
        let framings =
            lower.lines().filter(|l| l.starts_with("content-length:") || l.starts_with("transfer-encoding:"));
        assert!(framings.count() <= 1, "fast {fast}: {probe}: two framings forwarded: {head:?}");
    }
}

/// The gateway still answers a plain request: no probe broke it.
fn assert_alive(e: &Edge, probe: &str) {
    let answer = exchange(e.addr, &get("/alive", "probe"), QUIET);
    assert_eq!(statuses(&answer).first(), Some(&200), "fast {}: after {probe}: {answer}", e.fast);
}

/// Heads no origin should see as sent. Each is refused (4xx/5xx) or
/// forwarded clean; whatever follows it on the connection is a request for
/// a disallowed path, so a gateway that misreads the framing forwards it.
#[test]
fn malformed_request_heads_are_refused_or_forwarded_clean() {
    let probes: &[(&str, String)] = &[
        ("obs-fold", "GET /fold HTTP/1.1\r\nHost: shop.test\r\nX-A: a\r\n b\r\n\r\n".into()),
        (
            "obs-fold on transfer-encoding",
            "POST /fold-te HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"
                .into(),
        ),
        ("bare LF", "GET /lf HTTP/1.1\nHost: shop.test\nX-A: a\n\n".into()),
        ("bare CR in a value", "GET /cr HTTP/1.1\r\nHost: shop.test\r\nX-A: a\rX-B: b\r\n\r\n".into()),
        ("bare CR line end", "GET /cr2 HTTP/1.1\rHost: shop.test\r\n\r\n".into()),
        ("NUL in a value", "GET /nul HTTP/1.1\r\nHost: shop.test\r\nX-A: a\0b\r\n\r\n".into()),
        ("control byte in a value", "GET /ctl HTTP/1.1\r\nHost: shop.test\r\nX-A: a\x01b\r\n\r\n".into()),
        ("control byte in the target", "GET /a\x01b HTTP/1.1\r\nHost: shop.test\r\n\r\n".into()),
        ("space in the target", "GET /a b HTTP/1.1\r\nHost: shop.test\r\n\r\n".into()),
        ("space before the colon", "POST /sp HTTP/1.1\r\nHost: shop.test\r\nContent-Length : 5\r\n\r\nhello".into()),
        (
            "space before the colon of transfer-encoding",
            "POST /sp-te HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"
                .into(),
        ),
        ("leading space line", "GET /lead HTTP/1.1\r\n Host: shop.test\r\nHost: shop.test\r\n\r\n".into()),
        ("two hosts", "GET /hosts HTTP/1.1\r\nHost: shop.test\r\nHost: other.test\r\n\r\n".into()),
        ("no host", "GET /nohost HTTP/1.1\r\n\r\n".into()),
        ("version HTTP/1.2", "GET /v12 HTTP/1.2\r\nHost: shop.test\r\n\r\n".into()),
        ("version HTTP/2.0 in text", "GET /v20 HTTP/2.0\r\nHost: shop.test\r\n\r\n".into()),
        ("lower-case version", "GET /lc http/1.1\r\nHost: shop.test\r\n\r\n".into()),
        ("negative length", "POST /neg HTTP/1.1\r\nHost: shop.test\r\nContent-Length: -1\r\n\r\n".into()),
        ("plus length", "POST /plus HTTP/1.1\r\nHost: shop.test\r\nContent-Length: +5\r\n\r\nhello".into()),
        ("hex length", "POST /hexl HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 0x5\r\n\r\nhello".into()),
        (
            "huge length",
            "POST /huge HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 99999999999999999999999\r\n\r\nhello".into(),
        ),
    ];
    for fast in [true, false] {
        let e = start("malformed", fast);
        for (probe, raw) in probes {
            let raw = format!("{raw}{HIDDEN}");
            let answer = exchange(e.addr, raw.as_bytes(), QUIET);
            let first = statuses(&answer).first().copied();
            assert!(first.is_none_or(|s| s == 200 || s >= 400), "fast {fast}: {probe}: {answer}");
            eprintln!("fast {fast}: {probe}: {first:?}");
            assert_clean(&e, probe);
        }
        assert_alive(&e, "the malformed heads");
    }
}

/// `Transfer-Encoding` with `Content-Length`, and its obfuscations: the
/// classic request-smuggling shapes. A body that is one framing to the
/// gateway and another to the origin would let the hidden request through.
#[test]
fn transfer_encoding_tricks_never_smuggle_a_request() {
    let codings = [
        "chunked",
        "Chunked",
        " chunked",
        "chunked ",
        "\tchunked",
        "chunked, identity",
        "identity, chunked",
        "gzip, chunked",
        "chunked, chunked",
        "xchunked",
        "chunked;q=1",
        "identity",
        "",
    ];
    for fast in [true, false] {
        let e = start("te-tricks", fast);
        for coding in codings {
            // CL.TE: a gateway that reads the length forwards the hidden
            // request inside the body; one that reads chunks sees it next.
            let body = format!("0\r\n\r\n{HIDDEN}");
            let raw = format!(
                "POST /te HTTP/1.1\r\nHost: shop.test\r\nContent-Length: {}\r\nTransfer-Encoding: {coding}\r\n\r\n{body}",
                body.len()
            );
            let answer = exchange(e.addr, raw.as_bytes(), QUIET);
            eprintln!("fast {fast}: CL.TE {coding:?}: {:?}", statuses(&answer));
            assert_clean(&e, &format!("CL.TE {coding:?}"));
            // TE.CL: a short length, the hidden request in a chunk.
            let chunk = format!("{:x}\r\n{HIDDEN}\r\n0\r\n\r\n", HIDDEN.len());
            let raw = format!(
                "POST /te HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: {coding}\r\nContent-Length: 4\r\n\r\n{chunk}"
            );
            let _ = exchange(e.addr, raw.as_bytes(), QUIET);
            assert_clean(&e, &format!("TE.CL {coding:?}"));
        }
        // Two Transfer-Encoding fields, and chunked in an HTTP/1.0 request
        // (RFC 9112 section 6.1: the framing is faulty; close after it).
        let two = format!(
            "POST /te2 HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\
             Content-Length: 5\r\n\r\n0\r\n\r\n{HIDDEN}"
        );
        let old = format!(
            "POST /te10 HTTP/1.0\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n{HIDDEN}"
        );
        for (probe, raw) in [("two fields", two), ("HTTP/1.0", old)] {
            let _ = exchange(e.addr, raw.as_bytes(), QUIET);
            assert_clean(&e, probe);
        }
        assert_alive(&e, "the transfer-encoding tricks");
    }
}

/// Chunk sizes that overflow 64 bits or are not hex: refused, or the
/// connection closed; never read as a small chunk with the rest as a request.
#[test]
fn bad_chunk_sizes_never_become_requests() {
    // (`5\t` and `5 ` are read as 5 by Pingora, as by most servers; harmless,
    // as the body is chunked afresh for the origin.)
    let sizes = ["10000000000000005", "ffffffffffffffff1", "-5", "0x5", "+5", "5 5", " 5", "g", ""];
    for fast in [true, false] {
        let e = start("chunk-sizes", fast);
        for size in sizes {
            let raw = format!(
                "POST /chunks HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nhello\r\n0\r\n\r\n{HIDDEN}"
            );
            let answer = exchange(e.addr, raw.as_bytes(), QUIET);
            assert!(!answer.contains("body=5/"), "fast {fast}: chunk size {size:?} was read as 5: {answer}");
            assert_clean(&e, &format!("chunk size {size:?}"));
        }
        assert_alive(&e, "the chunk sizes");
    }
}

/// Many small fields and one huge head: an answer (a 4xx if too many),
/// quickly, and the gateway keeps serving.
#[test]
fn many_fields_get_a_quick_answer() {
    for fast in [true, false] {
        let e = start("many-fields", fast);
        for count in [90, 200, 1_000, 5_000] {
            let mut raw = String::from("GET /many HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n");
            for i in 0..count {
                raw.push_str(&format!("X-F{i}: v\r\n"));
            }
            raw.push_str("\r\n");
            let began = Instant::now();
            let answer = exchange(e.addr, raw.as_bytes(), QUIET);
            let status = statuses(&answer).first().copied();
            eprintln!("fast {fast}: {count} fields: {status:?}");
            assert!(began.elapsed() < Duration::from_secs(3) + QUIET, "fast {fast}: {count} fields held");
            assert!(matches!(status, Some(200 | 400 | 431)), "fast {fast}: {count} fields: {answer}");
            if count <= 90 {
                assert_eq!(status, Some(200), "fast {fast}: {count} fields is an ordinary request");
            }
        }
        assert_alive(&e, "many fields");
    }
}

/// An absolute-form target names the host (RFC 9112 section 3.2.2): the
/// `Host` field cannot pick a laxer site, or hide the path from enforcement.
#[test]
fn absolute_form_targets_are_judged_for_the_host_they_name() {
    for fast in [true, false] {
        let e = start("absolute", fast);
        for (target, host) in [
            ("http://shop.test/private/abs", "other.test"),
            ("http://shop.test/private/abs", "open.test"),
            ("http://shop.test:80/private/abs", "open.test:80"),
            ("http://shop.test/private/abs", "shop.test"),
            ("http://other.test/private/abs", "shop.test"),
            ("http://SHOP.TEST:80/%70rivate/abs", "x"),
            ("https://shop.test/./private/abs", "shop.test"),
        ] {
            let raw = format!(
                "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {GOOGLEBOT}\r\nConnection: close\r\n\r\n"
            );
            let answer = exchange(e.addr, raw.as_bytes(), QUIET);
            let status = statuses(&answer).first().copied().unwrap_or(0);
            assert!(status >= 400, "fast {fast}: {target} with Host {host}: {answer}");
            assert_clean(&e, target);
        }
        // An allowed one goes through, to the site its authority names.
        let raw =
            format!("GET http://shop.test/public/abs HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: {GOOGLEBOT}\r\n\r\n");
        let answer = exchange(e.addr, raw.as_bytes(), QUIET);
        assert_eq!(statuses(&answer).first(), Some(&200), "fast {fast}: {answer}");
        let heads = received(&e, "/public/abs");
        assert_eq!(heads.len(), 1, "fast {fast}: {:?}", e.origin.heads());
        assert!(heads[0].contains("\nHost: shop.test"), "fast {fast}: {}", heads[0]);
        // The open site is not enforced; it gets its requests in origin-form.
        let raw =
            format!("GET http://open.test/private/abs HTTP/1.1\r\nHost: open.test\r\nUser-Agent: {GOOGLEBOT}\r\n\r\n");
        let answer = exchange(e.addr, raw.as_bytes(), QUIET);
        assert_eq!(statuses(&answer).first(), Some(&200), "fast {fast}: {answer}");
        assert!(answer.contains("GET /private/abs "), "fast {fast}: the origin got {answer}");
    }
}

/// A request hidden in a body stays a body: the origin gets one request
/// with the whole body, whatever the body looks like.
#[test]
fn a_request_in_a_body_stays_a_body() {
    for fast in [true, false] {
        let e = start("in-body", fast);
        for method in ["POST", "GET", "PUT"] {
            let raw = format!(
                "{method} /form HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: {GOOGLEBOT}\r\nContent-Length: {}\r\n\r\n{HIDDEN}",
                HIDDEN.len()
            );
            let mut s = TcpStream::connect(e.addr).unwrap();
            s.write_all(raw.as_bytes()).unwrap();
            // Then a request of its own on the same connection.
            s.write_all(
                format!(
                    "GET /then HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: {GOOGLEBOT}\r\nConnection: close\r\n\r\n"
                )
                .as_bytes(),
            )
            .unwrap();
            let answer = read_all(&mut s, QUIET);
            assert!(answer.contains(&format!("body={}/", HIDDEN.len())), "fast {fast}: {method}: {answer}");
            assert_clean(&e, method);
        }
    }
}

// Response side: a misbehaving origin.

/// Asks for `target` on a fresh connection and returns everything read
/// until the gateway closes or goes quiet.
fn fetch(e: &Edge, target: &str, method: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(e.addr).unwrap();
    s.write_all(format!("{method} {target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    s.set_read_timeout(Some(QUIET)).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

const POISON: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Poison: 1\r\n\r\nPOISONED";

/// After a probe, the next requests that ride the pool get their own
/// answers, never bytes the origin sent too many.
fn assert_pool_clean(e: &Edge, probe: &str) {
    for _ in 0..4 {
        let got = String::from_utf8_lossy(&fetch(e, "/next", "GET")).into_owned();
        assert!(!got.contains("POISON"), "fast {}: after {probe}, another client got: {got}", e.fast);
        assert!(got.contains("GET /next "), "fast {}: after {probe}: {got}", e.fast);
    }
}

/// The headers of an answer, lower-cased, and its body.
fn split(answer: &[u8]) -> (String, Vec<u8>) {
    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or(answer.len(), |p| p + 4);
    (String::from_utf8_lossy(&answer[..at]).to_ascii_lowercase(), answer[at..].to_vec())
}

#[test]
fn a_response_with_two_framings_reaches_the_client_with_one() {
    for fast in [true, false] {
        let e = start("resp-framing", fast);
        e.origin.script(
            "/both",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            false,
        );
        let got = fetch(&e, "/both", "GET");
        let (head, body) = split(&got);
        assert!(head.starts_with("http/1.1 200") || head.starts_with("http/1.1 502"), "fast {fast}: {head}");
        assert!(!(head.contains("content-length:") && head.contains("transfer-encoding:")), "fast {fast}: {head}");
        if head.starts_with("http/1.1 200") {
            let text = String::from_utf8_lossy(&body);
            assert!(text.contains("hello") && !text.contains("hel\r"), "fast {fast}: {text:?}");
        }
        assert_pool_clean(&e, "CL+TE");
        e.origin.script(
            "/two-lengths",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            false,
        );
        let (head, _) = split(&fetch(&e, "/two-lengths", "GET"));
        assert!(head.starts_with("http/1.1 502"), "fast {fast}: conflicting lengths passed on: {head}");
        assert_pool_clean(&e, "two lengths");
    }
}

/// Bytes past a response's end (a body longer than its length, or a body
/// on a HEAD, 204 or 304 answer) are dropped with the connection: they
/// never reach the next client as its response.
#[test]
fn bytes_past_a_response_never_reach_another_client() {
    for fast in [true, false] {
        let e = start("overrun", fast);
        let long = [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".as_slice(), POISON].concat();
        e.origin.script("/long", &long, false);
        let got = fetch(&e, "/long", "GET");
        assert!(!String::from_utf8_lossy(&got).contains("POISON"), "fast {fast}");
        assert_pool_clean(&e, "a long body");
        let empty = [b"HTTP/1.1 200 OK\r\nContent-Length: 56\r\n\r\n".as_slice(), POISON].concat();
        e.origin.script("/head", &empty, false);
        let _ = fetch(&e, "/head", "HEAD");
        assert_pool_clean(&e, "HEAD with a body");
        for status in ["204 No Content", "304 Not Modified"] {
            let raw = [format!("HTTP/1.1 {status}\r\n\r\n").as_bytes(), POISON].concat();
            e.origin.script("/nobody", &raw, false);
            let got = fetch(&e, "/nobody", "GET");
            assert!(!String::from_utf8_lossy(&got).contains("POISON"), "fast {fast}: {status}");
            assert_pool_clean(&e, status);
        }
    }
}

/// An origin that dies mid-body: the client sees an aborted response (the
/// connection closes short of the length, or with no last chunk), never
/// one that looks complete.
#[test]
fn an_origin_closing_mid_body_aborts_the_response() {
    for fast in [true, false] {
        let e = start("mid-body", fast);
        e.origin.script("/cut", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", true);
        e.origin.script("/cut-chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", true);
        for target in ["/cut", "/cut-chunked"] {
            let got = fetch(&e, target, "GET");
            let (head, body) = split(&got);
            if head.starts_with("http/1.1 502") || head.is_empty() {
                continue;
            }
            if let Some(length) = head.lines().find_map(|l| l.strip_prefix("content-length:")) {
                let length: usize = length.trim().parse().unwrap();
                assert!(body.len() < length, "fast {fast}: {target}: a cut body was made whole: {head}");
            } else {
                assert!(head.contains("transfer-encoding: chunked"), "fast {fast}: {target}: {head}");
                assert!(!body.ends_with(b"0\r\n\r\n"), "fast {fast}: {target}: a cut body got a last chunk");
            }
        }
        assert_alive(&e, "cut bodies");
    }
}
