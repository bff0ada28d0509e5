//! The gateway as an attacker meets it, on raw sockets, once with the fast
//! path and once with Pingora's pipeline alone: re-spelt paths against
//! enforcement, framing tricks, slow and stalled clients, pipelining and
//! a quick graceful stop. Each probe is judged by what the client got back
//! and by what the logging origin on loopback actually received.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use testkit::*;

mod support;
use support::edge::*;

#[test]
fn no_spelling_of_a_disallowed_path_reaches_the_origin() {
    for fast in [true, false] {
        let e = start("spellings", fast);
        let refused = [
            "/private/secret",
            "/%70rivate/secret",
            "/%70%72%69%76%61%74%65/secret",
            "/./private/secret",
            "/a/../private/secret",
            "/a/%2E%2E/private/secret",
            "/a/%2e%2e/private/secret",
            "/a/.%2E/private/secret",
            "/private/./secret",
            "/search?%71=shoes",
            "/%73earch?q=shoes",
            "/files/a.pd%66",
            "/files/x/../a.pdf",
            "/private%2Fsecret",
            "/private%2fsecret",
            "//private/secret",
            "///private//secret",
            "/private%5Csecret",
            "/pub/..%2fprivate/secret",
            "/pub/%2e%2e%2fprivate/secret",
            "/pub/%2E%2E%2Fprivate/secret",
        ];
        for target in refused {
            let answer = exchange(e.addr, &get(target, GOOGLEBOT), Duration::from_secs(5));
            let status = statuses(&answer).first().copied().unwrap_or(0);
            assert!(status == 403 || status == 400, "fast {fast}: {target} got {status}: {answer}");
        }
        // Also as a browser would send them: passed, so the origin's log
        // shows the path arrives unchanged; but none of the crawler's did.
        let before = e.origin.heads().len();
        assert_eq!(before, 0, "fast {fast}: the origin saw {:?}", e.origin.heads());
        let passed = [
            "/Private/secret",
            "/%2570rivate/secret",
            "/private%252Fsecret",
            "/search?Q=shoes",
            "/files/a.pdf?x=1",
            "/files/a.PDF",
            "/public/secret",
            "/privates/x",
        ];
        for target in passed {
            let answer = exchange(e.addr, &get(target, GOOGLEBOT), Duration::from_secs(5));
            assert_eq!(statuses(&answer).first(), Some(&200), "fast {fast}: over-blocked {target}: {answer}");
            assert!(answer.contains(&format!("GET {target} ")), "fast {fast}: {target} was rewritten: {answer}");
        }
        assert_eq!(e.origin.heads().len(), passed.len(), "fast {}", e.fast);
    }
}

#[test]
fn content_length_goes_on_as_one_value_or_not_at_all() {
    for fast in [true, false] {
        let e = start("lengths", fast);
        for (name, fields) in [
            ("/list", "Content-Length: 5, 5\r\n"),
            ("/twice", "Content-Length: 5\r\nContent-Length: 5\r\n"),
            ("/list-twice", "Content-Length: 5,5\r\nContent-Length: 5\r\n"),
        ] {
            let raw = format!("POST {name} HTTP/1.1\r\nHost: shop.test\r\n{fields}Connection: close\r\n\r\nhello");
            let answer = exchange(e.addr, raw.as_bytes(), Duration::from_secs(5));
            let heads = received(&e, name);
            let status = statuses(&answer).first().copied().unwrap_or(0);
            if status == 400 {
                assert!(heads.is_empty(), "fast {fast}: 400 yet forwarded: {heads:?}");
                continue;
            }
            assert_eq!(status, 200, "fast {fast}: {name}: {answer}");
            assert_eq!(heads.len(), 1, "fast {fast}: {heads:?}");
            let lengths: Vec<&str> =
                heads[0].lines().filter(|l| l.to_ascii_lowercase().starts_with("content-length:")).collect();
            assert_eq!(lengths.len(), 1, "fast {fast}: {name}: {}", heads[0]);
            assert_eq!(lengths[0].split(':').nth(1).map(str::trim), Some("5"), "fast {fast}: {name}");
            assert!(answer.contains("body=5/"), "fast {fast}: {name}: {answer}");
        }
        // Lengths that disagree are refused and never forwarded.
        let raw = "POST /differ HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5, 6\r\n\r\nhello!";
        let answer = exchange(e.addr, raw.as_bytes(), Duration::from_secs(5));
        assert_eq!(statuses(&answer).first(), Some(&400), "fast {fast}: {answer}");
        assert!(received(&e, "/differ").is_empty(), "fast {fast}");
    }
}

#[test]
fn field_names_with_underscores_never_reach_the_origin() {
    for fast in [true, false] {
        let e = start("underscores", fast);
        let raw = "POST /u HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\nTransfer_Encoding: chunked\r\n\
                   Content_Length: 0\r\nX_Forwarded_For: 10.0.0.1\r\nConnection: close\r\n\r\nhello";
        let answer = exchange(e.addr, raw.as_bytes(), Duration::from_secs(5));
        assert_eq!(statuses(&answer).first(), Some(&200), "fast {fast}: {answer}");
        let heads = received(&e, "/u");
        assert_eq!(heads.len(), 1, "fast {fast}: {heads:?}");
        assert!(!heads[0].contains('_'), "fast {fast}: forwarded {}", heads[0]);
        assert!(answer.contains("body=5/"), "fast {fast}: {answer}");
    }
}

#[test]
fn an_http_1_0_client_never_gets_an_interim_response() {
    for fast in [true, false] {
        let e = start("interim", fast);
        let answer = exchange(e.addr, b"GET /hints HTTP/1.0\r\nHost: shop.test\r\n\r\n", Duration::from_secs(5));
        assert_eq!(statuses(&answer), vec![200], "fast {fast}: {answer}");
        let answer = exchange(
            e.addr,
            b"POST /hints HTTP/1.0\r\nHost: shop.test\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi",
            Duration::from_secs(5),
        );
        assert_eq!(statuses(&answer), vec![200], "fast {fast}: {answer}");
        // An HTTP/1.1 client still gets its 103.
        let answer = exchange(
            e.addr,
            b"GET /hints HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n",
            Duration::from_secs(5),
        );
        assert_eq!(statuses(&answer), vec![103, 200], "fast {fast}: {answer}");
    }
}

/// A head sent a byte at a time, alone or after a large prefix, is cut
/// off at `client_timeout` (2 s here), not held for ever.
#[test]
fn slow_heads_meet_one_whole_head_deadline() {
    for fast in [true, false] {
        let e = start("slow-head", fast);
        // Alone, after a 70 KB prefix, and as the second head of a
        // connection the pipeline serves (a chunked request is handed over).
        for (prefix, second) in [(0usize, false), (70_000, false), (0, true)] {
            let mut s = TcpStream::connect(e.addr).expect("connect");
            if second {
                s.write_all(b"POST /first HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                    .unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                // The answer's head and body may come in separate reads
                // (the gateway relays the origin's segments as they come).
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !String::from_utf8_lossy(&got).contains("POST /first ") {
                    let n = s.read(&mut buf).expect("first answer");
                    assert!(n > 0, "fast {fast}: closed after {:?}", String::from_utf8_lossy(&got));
                    got.extend_from_slice(&buf[..n]);
                }
            }
            let mut head = b"GET /slow HTTP/1.1\r\nHost: shop.test\r\n".to_vec();
            if prefix > 0 {
                head.extend_from_slice(format!("X-Pad: {}\r\n", "a".repeat(prefix)).as_bytes());
            }
            let began = Instant::now();
            let _ = s.write_all(&head);
            s.set_nonblocking(true).unwrap();
            let mut closed = false;
            let mut got = Vec::new();
            while began.elapsed() < Duration::from_secs(12) {
                let _ = s.write_all(b"X");
                let mut buf = [0u8; 1024];
                match s.read(&mut buf) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            let took = began.elapsed();
            let got = String::from_utf8_lossy(&got);
            assert!(closed, "fast {fast}, prefix {prefix}, second {second}: still open after {took:?}: {got}");
            assert!(took < Duration::from_secs(6), "fast {fast}, prefix {prefix}, second {second}: took {took:?}");
            let status = statuses(&got).first().copied();
            assert!(matches!(status, Some(408 | 431) | None), "fast {fast}, prefix {prefix}, second {second}: {got}");
        }
        assert!(received(&e, "/slow").is_empty(), "fast {fast}");
    }
}

/// A request body that stops half way holds neither the client connection
/// nor an origin connection past `client_timeout`.
#[test]
fn a_stalled_body_is_cut_off() {
    for fast in [true, false] {
        let e = start("stalled", fast);
        let mut s = TcpStream::connect(e.addr).expect("connect");
        let began = Instant::now();
        s.write_all(b"POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 1000\r\n\r\n0123456789").unwrap();
        let answer = read_all(&mut s, Duration::from_secs(10));
        let took = began.elapsed();
        assert!(took < Duration::from_secs(8), "fast {fast}: held {took:?}");
        let status = statuses(&answer).first().copied();
        assert!(matches!(status, Some(408 | 400 | 502 | 504) | None), "fast {fast}: {answer}");
        assert!(!answer.contains("body=1000"), "fast {fast}: {answer}");
    }
}

#[test]
fn pipelined_requests_are_all_answered_in_order() {
    for fast in [true, false] {
        let e = start("pipelined", fast);
        let raw = b"GET /one HTTP/1.1\r\nHost: shop.test\r\n\r\nGET /two HTTP/1.1\r\nHost: shop.test\r\n\r\n\
                    GET /three HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n";
        let answer = exchange(e.addr, raw, Duration::from_secs(5));
        let order: Vec<usize> = ["GET /one ", "GET /two ", "GET /three "]
            .iter()
            .map(|t| answer.find(t).unwrap_or_else(|| panic!("fast {fast}: no {t}: {answer}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "fast {fast}: {answer}");
        // After a chunked request too (the own path hands that one over).
        let raw = b"POST /chunk HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
                    GET /after HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n";
        let answer = exchange(e.addr, raw, Duration::from_secs(5));
        assert!(answer.contains("POST /chunk ") && answer.contains("GET /after "), "fast {fast}: {answer}");
    }
}

#[test]
fn a_graceful_stop_with_nothing_in_flight_is_quick() {
    for fast in [true, false] {
        let mut e = start("quick-stop", fast);
        // A finished keep-alive exchange leaves an idle connection behind.
        let mut idle = TcpStream::connect(e.addr).unwrap();
        idle.write_all(b"GET /page HTTP/1.1\r\nHost: shop.test\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let began = Instant::now();
        let _ = std::process::Command::new("kill").args(["-TERM", &e.proc.0.id().to_string()]).status();
        let exited = eventually(15, || matches!(e.proc.0.try_wait(), Ok(Some(_))));
        assert!(exited, "fast {fast}: did not exit");
        assert!(began.elapsed() < Duration::from_secs(5), "fast {fast}: took {:?} of a 20 s grace", began.elapsed());
        drop(idle);
    }
}

/// The origin learns the client's address and scheme from the gateway, in
/// `X-Forwarded-For`, `X-Forwarded-Proto` and `Forwarded`, on both paths;
/// a client at the edge cannot write its own (a fake Googlebot address).
/// And an origin failure's body names no internal address.
#[test]
fn the_origin_learns_the_client_and_no_client_forges_it() {
    for fast in [true, false] {
        let e = start("forwarded", fast);
        let raw = "GET /who HTTP/1.1\r\nHost: shop.test\r\nX-Forwarded-For: 66.249.66.1\r\n\
                   x-forwarded-for: 66.249.66.2\r\nForwarded: for=66.249.66.1\r\nX-Forwarded-Proto: https\r\n\
                   Connection: close\r\n\r\n";
        let answer = exchange(e.addr, raw.as_bytes(), Duration::from_secs(5));
        assert_eq!(statuses(&answer).first(), Some(&200), "fast {fast}: {answer}");
        let heads = received(&e, "/who");
        assert_eq!(heads.len(), 1, "fast {fast}: {heads:?}");
        let fields: Vec<(String, String)> = heads[0]
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let all = |name: &str| fields.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect::<Vec<_>>();
        assert_eq!(all("x-forwarded-for"), ["127.0.0.1"], "fast {fast}: {}", heads[0]);
        assert_eq!(all("x-forwarded-proto"), ["http"], "fast {fast}: {}", heads[0]);
        assert_eq!(all("forwarded"), ["for=127.0.0.1;proto=http"], "fast {fast}: {}", heads[0]);

        // A broken origin: 502, and the body says so without its address.
        e.origin.script("/broken", b"NOT HTTP AT ALL\r\n\r\n", true);
        let answer = exchange(e.addr, &get("/broken", "Mozilla/5.0"), Duration::from_secs(5));
        assert_eq!(statuses(&answer).first(), Some(&502), "fast {fast}: {answer}");
        let port = e.origin.addr.port().to_string();
        assert!(!answer.contains("127.0.0.1") && !answer.contains(&port), "fast {fast}: the body leaks: {answer}");
    }
}
