//! HTTP/2 on the gateway's TLS listeners: offered by ALPN (with a switch),
//! robots.txt and enforcement over h2, and the h2-to-HTTP/1.1 downgrade
//! probes: every h2 request that would be unsafe as HTTP/1.1 (RFC 9113
//! section 8.2) gets a stream error or a refusal, and never reaches the
//! origin. The client is written here, frame by frame, because a real h2
//! library refuses to send the malformed requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVerifyMode};
use testkit::*;

mod support;
use support::edge::{GOOGLEBOT, ROBOTS};
use support::start_enforcing;

/// A gateway with a TLS listener in front of a fresh logging origin.
struct Tls {
    _proc: Proc,
    tls: SocketAddr,
    origin: Echo,
}

fn start(name: &str, fast: bool, http2: Option<bool>) -> Tls {
    let dir = temp_dir(name);
    let certs = test_certs(&dir, "DNS:shop.test");
    let port = free_port();
    let switch = http2.map(|on| format!("  http2: {on}\n")).unwrap_or_default();
    let extra = format!(
        "  origin_timeout: 5s\n  tls_listen:\n    - addr: 127.0.0.1:{port}\n      cert: {}\n      key: {}\n{switch}",
        certs.cert.display(),
        certs.key.display()
    );
    let origin = Echo::start();
    origin.set_robots(ROBOTS);
    let (proc, plain) = start_enforcing(name, origin.addr, fast, &extra);
    let tls: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    assert!(wait_listening(tls, 20), "no TLS listener");
    let learnt = eventually(15, || {
        request(plain, "GET", "shop.test", "/robots.txt", &[])
            .is_some_and(|r| r.header("X-Robots-Source") == Some("origin"))
    });
    assert!(learnt, "robots.txt never learnt");
    Tls { _proc: proc, tls, origin }
}

/// A TLS connection offering `protocols` (ALPN wire format).
fn connect(addr: SocketAddr, protocols: &[u8]) -> SslStream<TcpStream> {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
    // The test CA is throwaway; what is tested here is HTTP, not trust.
    builder.set_verify(SslVerifyMode::NONE);
    builder.set_alpn_protos(protocols).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    builder.build().connect("shop.test", tcp).expect("TLS handshake")
}

const H2_H1: &[u8] = b"\x02h2\x08http/1.1";

#[test]
fn h2_is_offered_on_tls_listeners_unless_switched_off() {
    for (http2, h2) in [(None, true), (Some(true), true), (Some(false), false)] {
        let g = start("h2-alpn", true, http2);
        let s = connect(g.tls, H2_H1);
        let selected = s.ssl().selected_alpn_protocol();
        // Switched off, no protocol is selected: the client speaks HTTP/1.1.
        assert_eq!(selected == Some(b"h2"), h2, "http2: {http2:?}: {selected:?}");
    }
}

// A minimal HTTP/2 client: frames and HPACK literals, no Huffman, no table.

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn hpack_int(out: &mut Vec<u8>, first: u8, prefix_bits: u8, mut n: usize) {
    let max = (1usize << prefix_bits) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

/// A header block of literal fields "without indexing, new name", as sent:
/// nothing is checked or lower-cased.
fn block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0);
        hpack_int(&mut out, 0, 7, name.len());
        out.extend_from_slice(name);
        hpack_int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value);
    }
    out
}

/// What came back on stream 1.
#[derive(Debug, Default)]
struct Outcome {
    /// A HEADERS frame came back.
    answered: bool,
    /// The DATA received.
    body: Vec<u8>,
    /// The RST_STREAM error code, if any.
    reset: Option<u32>,
    /// A GOAWAY came.
    goaway: bool,
}

/// Opens an h2 connection and sends one request as stream 1 (`fields` in
/// order, then `data` if any, the last frame ending the stream).
fn send_request(addr: SocketAddr, fields: &[(&[u8], &[u8])], data: Option<&[u8]>) -> SslStream<TcpStream> {
    let mut s = connect(addr, H2_H1);
    assert_eq!(s.ssl().selected_alpn_protocol(), Some(&b"h2"[..]));
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(4, 0, 0, &[]));
    let end_headers = 0x4 | if data.is_none() { 0x1 } else { 0 };
    out.extend(frame(1, end_headers, 1, &block(fields)));
    if let Some(data) = data {
        out.extend(frame(0, 0x1, 1, data));
    }
    s.write_all(&out).unwrap();
    s
}

/// Reads frames for up to eight seconds, acknowledging SETTINGS, and hands
/// each other one to `each` (kind, flags, stream, payload) until it says
/// stop. False when the connection ended or time ran out first.
fn read_frames(s: &mut SslStream<TcpStream>, mut each: impl FnMut(u8, u8, u32, &[u8]) -> bool) -> bool {
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(8);
    while Instant::now() < deadline {
        let mut chunk = [0u8; 16384];
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while buf.len() >= 9 {
            let len = (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let payload: Vec<u8> = buf[9..9 + len].to_vec();
            buf.drain(..9 + len);
            if (kind, stream) == (4, 0) && flags & 1 == 0 {
                s.write_all(&frame(4, 1, 0, &[])).unwrap();
            } else if each(kind, flags, stream, &payload) {
                return true;
            }
        }
    }
    false
}

/// Sends one request as stream 1 and reads until the stream ends.
fn exchange(addr: SocketAddr, fields: &[(&[u8], &[u8])], data: Option<&[u8]>) -> Outcome {
    let mut s = send_request(addr, fields, data);
    let mut got = Outcome::default();
    read_frames(&mut s, |kind, flags, stream, payload| {
        match (kind, stream) {
            (7, 0) => {
                got.goaway = true;
                return true;
            }
            (1, 1) => got.answered = true,
            (0, 1) => got.body.extend_from_slice(payload),
            (3, 1) => {
                got.reset = Some(u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]));
                return true;
            }
            _ => {}
        }
        ends_stream_1(kind, flags, stream)
    });
    got
}

/// Whether a frame ends stream 1: HEADERS or DATA with END_STREAM.
fn ends_stream_1(kind: u8, flags: u8, stream: u32) -> bool {
    stream == 1 && flags & 1 == 1 && (kind == 0 || kind == 1)
}

#[test]
fn a_stopping_gateway_sends_goaway_on_an_idle_h2_connection() {
    // The gateway's own h2 path polls its connection only when asked: the
    // stop must still reach the client as a GOAWAY, at once, not at the
    // end of the grace period or the connection's idle limit.
    for fast in [true, false] {
        let g = start("h2-goaway", fast, None);
        let mut s = send_request(g.tls, &fields(&get("/public/x", GOOGLEBOT)), None);
        let mut answered = false;
        let ended = read_frames(&mut s, |kind, flags, stream, _| {
            answered |= (kind, stream) == (1, 1);
            ends_stream_1(kind, flags, stream)
        });
        assert!(ended && answered, "fast {fast}: no answer");
        let stopped = Instant::now();
        let _ = std::process::Command::new("kill").args(["-TERM", &g._proc.0.id().to_string()]).status();
        let goaway = read_frames(&mut s, |kind, _, stream, _| (kind, stream) == (7, 0));
        assert!(goaway, "fast {fast}: no GOAWAY after SIGTERM");
        assert!(stopped.elapsed() < Duration::from_secs(5), "fast {fast}: GOAWAY after {:?}", stopped.elapsed());
    }
}

fn get(path: &str, agent: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    [(":method", "GET"), (":scheme", "https"), (":path", path), (":authority", "shop.test"), ("user-agent", agent)]
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

fn fields(owned: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
    owned.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect()
}

#[test]
fn robots_txt_and_enforcement_hold_over_h2() {
    for fast in [true, false] {
        let g = start("h2-enforce", fast, None);
        let robots = exchange(g.tls, &fields(&get("/robots.txt", GOOGLEBOT)), None);
        assert_eq!(String::from_utf8_lossy(&robots.body), ROBOTS, "fast {fast}: {robots:?}");
        for target in ["/private/x", "/%70rivate/x", "/a/../private/x", "//private/x", "/private%2Fx", "/files/a.pd%66"]
        {
            let got = exchange(g.tls, &fields(&get(target, GOOGLEBOT)), None);
            assert!(got.answered, "fast {fast}: {target}: {got:?}");
            let body = String::from_utf8_lossy(&got.body);
            assert!(body.contains("disallows") && !body.contains(" conn="), "fast {fast}: {target}: {body}");
        }
        assert!(g.origin.heads().is_empty(), "fast {fast}: {:?}", g.origin.heads());
        let got = exchange(g.tls, &fields(&get("/public/x?y=1", GOOGLEBOT)), None);
        assert!(String::from_utf8_lossy(&got.body).starts_with("GET /public/x?y=1 "), "fast {fast}: {got:?}");
        let heads = g.origin.heads();
        assert_eq!(heads.len(), 1, "fast {fast}");
        assert!(heads[0].starts_with("GET /public/x?y=1 HTTP/1.1\n"), "fast {fast}: {}", heads[0]);
        assert!(heads[0].to_ascii_lowercase().contains("\nhost: shop.test"), "fast {fast}: {}", heads[0]);
    }
}

#[test]
fn h2_requests_unsafe_as_http_1_1_never_reach_the_origin() {
    let base = |method: &str, path: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
        [(":method", method), (":scheme", "https"), (":path", path), (":authority", "shop.test")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    let with = |mut f: Vec<(Vec<u8>, Vec<u8>)>, name: &[u8], value: &[u8]| {
        f.push((name.to_vec(), value.to_vec()));
        f
    };
    type Probe = (&'static str, Vec<(Vec<u8>, Vec<u8>)>, Option<&'static [u8]>);
    let probes: Vec<Probe> = vec![
        ("content-length above the data", with(base("POST", "/cl-short"), b"content-length", b"10"), Some(b"hello")),
        ("content-length below the data", with(base("POST", "/cl-long"), b"content-length", b"2"), Some(b"hello")),
        (
            "transfer-encoding",
            with(base("POST", "/te"), b"transfer-encoding", b"chunked"),
            Some(b"5\r\nhello\r\n0\r\n\r\n"),
        ),
        ("connection", with(base("GET", "/conn"), b"connection", b"keep-alive"), None),
        ("keep-alive", with(base("GET", "/ka"), b"keep-alive", b"timeout=5"), None),
        ("upgrade", with(base("GET", "/up"), b"upgrade", b"websocket"), None),
        ("proxy-connection", with(base("GET", "/pc"), b"proxy-connection", b"close"), None),
        ("te other than trailers", with(base("GET", "/tegz"), b"te", b"gzip"), None),
        ("CR LF in a value", with(base("GET", "/crlf"), b"x-a", b"a\r\nx-injected: 1"), None),
        ("LF in a value", with(base("GET", "/lf"), b"x-a", b"a\nx-injected: 1"), None),
        ("CR in a value", with(base("GET", "/cr"), b"x-a", b"a\rb"), None),
        ("NUL in a value", with(base("GET", "/nul"), b"x-a", b"a\0b"), None),
        ("upper-case name", with(base("GET", "/upper"), b"X-Upper", b"1"), None),
        ("colon in a name", with(base("GET", "/colon"), b"x:a", b"1"), None),
        ("space in a name", with(base("GET", "/space"), b"x a", b"1"), None),
        ("host differs from :authority", with(base("GET", "/host"), b"host", b"open.test"), None),
        ("absolute :path", base("GET", "http://shop.test/abs"), None),
        ("relative :path", base("GET", "rel"), None),
        ("asterisk :path for GET", base("GET", "*"), None),
        ("empty :path", base("GET", ""), None),
        ("space in :path", base("GET", "/sp ace HTTP/1.1\r\nx: y"), None),
        ("CR LF in :method", base("GET /x HTTP/1.1\r\n", "/method"), None),
    ];
    for fast in [true, false] {
        let g = start("h2-downgrade", fast, None);
        for (probe, owned, data) in &probes {
            let got = exchange(g.tls, &fields(owned), *data);
            let body = String::from_utf8_lossy(&got.body);
            let refused = got.reset.is_some() || got.goaway || (got.answered && !body.contains(" conn="));
            assert!(refused, "fast {fast}: {probe}: {got:?} {body}");
            let completed = g.origin.completed();
            assert!(completed.is_empty(), "fast {fast}: {probe}: the origin acted on {completed:?}");
        }
        // A well-formed request on the same gateway still goes through.
        let ok = exchange(g.tls, &fields(&base("POST", "/fine")), Some(b"hello"));
        assert!(String::from_utf8_lossy(&ok.body).contains("POST /fine "), "fast {fast}: {ok:?}");
    }
}

/// `curl --http2` against the gateway's TLS listener: the body, then
/// `http_version status` on the last line.
fn curl(g: &Tls, args: &[&str], path: &str) -> (String, String) {
    let port = g.tls.port();
    let out = std::process::Command::new("curl")
        .args(["-sk", "--http2", "--max-time", "20", "--resolve", &format!("shop.test:{port}:127.0.0.1")])
        .args(args)
        .args(["-w", "\n%{http_version} %{http_code}", &format!("https://shop.test:{port}{path}")])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    (body.to_string(), last.to_string())
}

/// What a real HTTP/2 client gets through the gateway, on both paths: every
/// framing of the origin's answer reframed as DATA, uploads with and without
/// a length, a body past every flow-control window, 1xx hints, many streams
/// at once on one connection, and an origin that is down.
#[test]
fn h2_clients_get_what_the_origin_said() {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| b"abcdefghijklmnopqrstuvwxyz\n"[(i % 27) as usize]).collect();
    let mut raw =
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n", big.len()).into_bytes();
    raw.extend_from_slice(&big);
    let upload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let sum: u64 = upload.iter().map(|&b| u64::from(b)).sum();
    for fast in [true, false] {
        let g = start("h2-relay", fast, None);
        g.origin.script("/big", &raw, false);
        let dir = temp_dir("h2-relay-files");
        let file = dir.join("upload.bin");
        std::fs::write(&file, &upload).unwrap();

        let (body, end) = curl(&g, &[], "/chunked");
        assert_eq!(end, "2 200", "fast {fast}: {body}");
        assert!(body.starts_with("GET /chunked ") && body.ends_with("\n!"), "fast {fast}: chunks joined: {body:?}");
        let (body, end) = curl(&g, &[], "/eof");
        assert!(end == "2 200" && body.starts_with("GET /eof "), "fast {fast}: {end} {body:?}");
        let (body, end) = curl(&g, &[], "/hints");
        assert!(end == "2 200" && body.starts_with("GET /hints "), "fast {fast}: {end} {body:?}");
        let (body, end) = curl(&g, &["-I"], "/public/head");
        assert!(end == "2 200" && body.to_ascii_lowercase().contains("content-length:"), "fast {fast}: {body}");
        assert!(!body.to_ascii_lowercase().contains("keep-alive"), "fast {fast}: a connection field went on: {body}");

        // A body larger than every window a client opens by default.
        let (body, end) = curl(&g, &[], "/big");
        assert_eq!(end, "2 200", "fast {fast}");
        assert!(body.as_bytes() == big.as_slice(), "fast {fast}: {} bytes", body.len());

        // With a length, and without one (stdin: HTTP/2 frames it, the
        // origin gets it chunked).
        let at_file = format!("@{}", file.display());
        let (body, end) = curl(&g, &["--data-binary", &at_file], "/upload");
        assert_eq!(end, "2 200", "fast {fast}: {body}");
        assert!(body.contains(&format!("body={}/{sum} ", upload.len())), "fast {fast}: {body}");
        let piped = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "cat '{}' | curl -sk --http2 --max-time 20 --resolve shop.test:{port}:127.0.0.1 -X POST -T - https://shop.test:{port}/stream",
                file.display(),
                port = g.tls.port()
            ))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&piped.stdout);
        assert!(said.contains(&format!("body={}/{sum} ", upload.len())), "fast {fast}: {said}");

        // 400 requests, 10 streams at a time on each of 2 connections.
        let url = format!("https://127.0.0.1:{}/public/many", g.tls.port());
        let load = std::process::Command::new("h2load")
            .args(["-n", "400", "-c", "2", "-m", "10", "-H", ":authority: shop.test", &url])
            .output()
            .expect("h2load runs");
        let report = String::from_utf8_lossy(&load.stdout);
        assert!(report.contains("400 succeeded, 0 failed, 0 errored"), "fast {fast}: {report}");
        assert!(report.contains("Application protocol: h2"), "fast {fast}: {report}");
    }
}

/// An origin that is down gets a 502 over HTTP/2 that names no address.
#[test]
fn h2_origin_failures_name_no_address() {
    for fast in [true, false] {
        let g = start("h2-down", fast, None);
        g.origin.script("/gone", b"", true);
        let (body, end) = curl(&g, &[], "/gone");
        assert_eq!(end, "2 502", "fast {fast}: {body}");
        assert!(!body.contains("127.0.0.1"), "fast {fast}: {body}");
        // The gateway's own path says what failed; Pingora's 502 is bare.
        assert!(!fast || body.contains("robots-proxy: the origin of shop could not be reached"), "{body}");
    }
}

/// An HTTP/2 upload with `Expect: 100-continue` gets the gateway's
/// go-ahead at once (curl would otherwise wait out its 15 s), and the
/// origin gets the body without the expectation. (It was refused with 400
/// before the own path took `Expect`.)
#[test]
fn an_h2_upload_that_expects_100_gets_a_go_ahead() {
    let g = start("h2-expect", true, None);
    let port = g.tls.port();
    let began = Instant::now();
    let out = std::process::Command::new("curl")
        .args(["-sk", "-v", "--http2", "--max-time", "30", "--expect100-timeout", "15"])
        .args(["--resolve", &format!("shop.test:{port}:127.0.0.1"), "-H", "Expect: 100-continue"])
        .args(["--data-binary", "hello", &format!("https://shop.test:{port}/waiting")])
        .output()
        .expect("curl runs");
    let (said, trace) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(&format!("body=5/{} ", b"hello".iter().map(|&b| u64::from(b)).sum::<u64>())), "{said}");
    assert!(trace.contains("< HTTP/2 100"), "no go-ahead: {trace}");
    assert!(began.elapsed() < Duration::from_secs(10), "curl waited for a go-ahead: {:?}", began.elapsed());
    let head = g.origin.heads().into_iter().find(|h| h.starts_with("POST /waiting ")).expect("forwarded");
    assert!(!head.to_ascii_lowercase().contains("\nexpect:"), "{head}");
}
