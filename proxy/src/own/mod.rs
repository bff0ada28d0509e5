//! The gateway's own path: each client connection starts here. This file
//! accepts a connection and dispatches it: HTTP/2 (by ALPN) to `streams`,
//! HTTP/1.x read here with `httparse`, a PROXY header taken off first, and
//! the connection handed, with the bytes already read, to Pingora's
//! pipeline when a head asks for what only the pipeline does. What happens
//! to one head is decided in `head`, relayed in `relay`, and the origin's
//! response read in `response`; request bodies are in `upload`.
//!
//! On the own path, bodies pass through byte for byte, to plain-HTTP and
//! TLS origins alike. Chunked uploads are read strictly and chunked afresh
//! for the origin, and `Expect: 100-continue` is answered here once the
//! origin has the head. An HTTP/1.0 client gets no 1xx and no chunks, and
//! one response a connection. The pipeline takes: an HTTP/1.0 request
//! without `Host`, upgrades, other expectations and codings, malformed
//! requests, and everything when `fast_path: false`.
//!
//! Why: a proxied request through Pingora's pipeline cost about 100,000
//! instructions on this machine, nginx as a reverse proxy 21,800; the hop's
//! added latency is what the gateway is judged on (docs/BENCHMARKS.md).

use std::io::Write as _;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::http::upstream::OriginConn;
use async_trait::async_trait;
use bytes::{Buf, BytesMut};
use pingora::apps::{HttpServerApp, ServerApp};
use pingora::protocols::http::ServerSession;
use pingora::protocols::{ALPN, Stream};
use pingora::proxy::HttpProxy;
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Sleep;
use upload::ClientBody;

use crate::gateway::{Answers, CRAWLER_FIELD, FrontedSite, Gateway, NeedsDns, UNKNOWN_HOST_BODY, Visit};
use crate::http::framing::{Body, content_length, list};
use crate::identity::signed::Signed;
use crate::metrics::Route;
use crate::pipeline::Pipeline;
use crate::robots::store::State;

mod fields;
mod head;
mod relay;
mod response;
mod streams;
mod upload;

use head::{Forward, Plan};
use relay::{RequestBody, Wait};
use relay::{more_head, read_more};
use response::{Response, parse_head};

/// How long a client connection may sit between requests (Pingora's default too).
const KEEPALIVE: Duration = Duration::from_secs(60);
/// Request heads larger than this get 431, on both paths (nginx refuses
/// past 32 KiB by default).
const MAX_HEAD: usize = 64 * 1024;
/// Response heads from the origin larger than this get a 502.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Header fields parsed per message; more go to the pipeline (requests) or
/// get a 502 (responses).
const MAX_FIELDS: usize = 128;
/// Read buffer per connection and direction.
const CHUNK: usize = 16 * 1024;

/// A connection's buffers for the origin's answers, kept from one request
/// to the next so that relaying a response allocates nothing.
#[derive(Debug, Default)]
struct Reply {
    /// What the origin sent that is not relayed yet.
    from_origin: BytesMut,
    /// The response head for the client, then the body bytes that go out
    /// with it.
    head: Vec<u8>,
}

/// The listener's application: the own path, with Pingora's pipeline behind it.
pub struct Front {
    gateway: Arc<Gateway>,
    pipeline: Arc<HttpProxy<Pipeline>>,
    /// The own path is on (`fast_path`); off, every connection goes to
    /// the pipeline.
    own: bool,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").field("gateway", &self.gateway).field("own", &self.own).finish_non_exhaustive()
    }
}

impl Front {
    /// The own path over `gateway`; `pipeline` takes what it hands over.
    /// With `own` false (`fast_path: false`) every connection goes to the
    /// pipeline.
    pub fn new(gateway: Arc<Gateway>, pipeline: Arc<HttpProxy<Pipeline>>, own: bool) -> Front {
        Front { gateway, pipeline, own }
    }
}

#[async_trait]
impl ServerApp for Front {
    async fn process_new(self: &Arc<Self>, stream: Stream, shutdown: &ShutdownWatch) -> Option<Stream> {
        let _open = Open::count();
        if matches!(stream.selected_alpn_proto(), Some(ALPN::H2)) {
            let stream = crate::http::coalesce::Coalesce::wrap(stream);
            if self.own {
                self.serve_h2(stream, shutdown).await;
                return None;
            }
            return ServerApp::process_new(&self.pipeline, stream, shutdown).await;
        }
        self.serve(stream, shutdown).await;
        None
    }

    async fn cleanup(&self) {
        ServerApp::cleanup(&*self.pipeline).await;
    }
}

/// Client connections open now, on both paths: a graceful stop ends as
/// soon as this reaches zero instead of waiting out the grace period.
pub static OPEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One open client connection, counted in [`OPEN`] while it lives.
struct Open;

impl Open {
    fn count() -> Open {
        OPEN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Open
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What a client connection tells about every request on it.
#[derive(Clone, Copy, Debug)]
struct Conn {
    /// The socket's peer.
    peer: Option<IpAddr>,
    /// It came over TLS (`https` for a signature's `@scheme`).
    tls: bool,
}

/// Why a relayed request ended the client connection.
enum Failure {
    /// Nothing was sent to the client yet: it gets this status (502, or
    /// 504 when the origin did not answer in time) and the reason.
    Origin(u16, String),
    /// The exchange broke midway; the client connection is closed.
    Broken,
    /// The client's request body stalled past `proxy.client_timeout`:
    /// 408, and the connection closes.
    Stalled,
    /// The client's chunked body broke its framing: 400, and the
    /// connection closes.
    BadBody,
}

/// Header fields that describe one connection, not the message (RFC 9110
/// section 7.6.1); never relayed.
fn hop_by_hop(name: &str) -> bool {
    ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

fn push_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A complete small response from the gateway itself.
fn answer(status: u16, body: &[u8], close: bool) -> Vec<u8> {
    answer_with(status, &[], body, close)
}

/// [`answer`] with more header fields (a 402's terms, a 429's `Retry-After`).
fn answer_with(status: u16, headers: &[(String, String)], body: &[u8], close: bool) -> Vec<u8> {
    let reason = http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
        body.len()
    )
    .into_bytes();
    for (name, value) in headers {
        push_field(&mut out, name, value.as_bytes());
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

impl Front {
    /// Serves one client connection until it closes, fails or is handed over.
    async fn serve(&self, mut client: Stream, shutdown: &ShutdownWatch) {
        let mut watch = shutdown.clone();
        let mut buf = BytesMut::with_capacity(CHUNK);
        let mut reply = Reply::default();
        let mut first = true;
        // One timer per connection, pushed forward as each wait begins: a
        // new timer per request made the runtime wake itself through its
        // eventfd (two system calls per request).
        let mut deadline = std::pin::pin!(tokio::time::sleep(KEEPALIVE));
        let head_limit = self.gateway.client_timeout;
        let mut conn = Conn {
            peer: client.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip())),
            tls: client.get_ssl_digest().is_some(),
        };
        if self.gateway.proxy_protocol && conn.peer.is_some_and(|p| self.gateway.trusted.contains(p)) {
            match self.proxied(&mut client, &mut buf).await {
                Some(Some(source)) => conn.peer = Some(source.ip()),
                Some(None) => {}
                None => return,
            }
        }
        // The forwarded fields as the gateway sees this connection, written
        // once for all its requests.
        let mut edge = Vec::new();
        for (name, value) in
            crate::http::forwarded::fields(conn.peer, false, conn.tls, &crate::http::forwarded::Sent::default())
        {
            push_field(&mut edge, name, value.as_bytes());
        }
        loop {
            // A connection may idle KEEPALIVE between requests; once a
            // head's first byte is in, the whole head must follow within
            // `client_timeout`, however slowly its bytes trickle in.
            let mut started = !buf.is_empty();
            let now = tokio::time::Instant::now();
            deadline.as_mut().reset(now + if started { head_limit } else { KEEPALIVE });
            // The head is parsed only once a blank line may have arrived, so
            // a head sent a byte at a time costs a scan, not a parse per byte.
            let mut seen = 0;
            let (plan, head_len) = loop {
                if head_may_end(&buf, seen) {
                    let closing = *watch.borrow();
                    if let Some(planned) = self.plan(&buf, closing, conn, &edge, None) {
                        break planned;
                    }
                }
                if buf.len() > MAX_HEAD {
                    let _ = client.write_all(&answer(431, b"robots-proxy: request head over 64 KiB\n", true)).await;
                    let _ = AsyncWriteExt::shutdown(&mut client).await;
                    return;
                }
                if !started && !buf.is_empty() {
                    started = true;
                    deadline.as_mut().reset(tokio::time::Instant::now() + head_limit);
                }
                seen = buf.len();
                buf.reserve(CHUNK);
                // Between requests, a shutdown closes the idle connection; a
                // request already under way is finished.
                let between = buf.is_empty() && !first && !crate::upgrade::upgrading();
                if between && *watch.borrow() {
                    return;
                }
                let n = tokio::select! {
                    biased;
                    n = client.read_buf(&mut buf) => n.ok(),
                    () = deadline.as_mut() => {
                        if started {
                            // nginx closes silently here; a status says why.
                            let _ = client.write_all(&answer(408, b"robots-proxy: request head too slow\n", true)).await;
                            let _ = AsyncWriteExt::shutdown(&mut client).await;
                        }
                        None
                    }
                    _ = watch.changed(), if between => None,
                };
                if n.is_none_or(|n| n == 0) {
                    return;
                }
            };
            first = false;
            let began = std::time::Instant::now();
            let (plan, head_len) = match plan {
                Plan::Verify { user_agent, client, signed } => {
                    let known = match self.gateway.claim(&user_agent) {
                        Some(claim) => self.gateway.identity(&claim, client, signed.as_ref()).await,
                        None => Answers::default(),
                    };
                    let closing = *watch.borrow();
                    match self.plan(&buf, closing, conn, &edge, Some(known)) {
                        Some(planned) => planned,
                        None => return,
                    }
                }
                planned => (planned, head_len),
            };
            let keep = match plan {
                Plan::HandOver => return self.hand_over(client, buf, shutdown).await,
                Plan::Answer { response, close, log } => {
                    buf.advance(head_len);
                    if client.write_all(&response).await.is_err() || client.flush().await.is_err() {
                        return;
                    }
                    let status = status_of(&response);
                    self.gateway.metrics.response(Route::OWN_HTTP1, status);
                    let robots = log.is_none() && status != self.gateway.unknown_host_status;
                    self.gateway.metrics.took(Route::OWN_HTTP1, robots, began);
                    if let Some(log) = log {
                        log.write(status);
                    }
                    !close
                }
                // Planned again with the answer known, so never twice.
                Plan::Verify { .. } => return,
                Plan::Forward(f) => {
                    buf.advance(head_len);
                    let mut wait = Wait {
                        timer: deadline.as_mut(),
                        limit: self.gateway.origin_timeout,
                        client_limit: self.gateway.client_timeout,
                    };
                    let keep = self.relay(&mut client, &mut buf, &mut reply, &mut wait, f).await;
                    self.gateway.metrics.took(Route::OWN_HTTP1, false, began);
                    keep
                }
            };
            if !keep {
                let _ = AsyncWriteExt::shutdown(&mut client).await;
                return;
            }
        }
    }

    /// Reads a trusted proxy's PROXY header off the start of the connection
    /// into `buf` and past it, within `client_timeout`, and makes its source
    /// the connection's peer for both paths (the pipeline reads the socket
    /// digest). `None` when the connection must end; `Some(None)` keeps
    /// the peer (a `LOCAL` or `UNKNOWN` header).
    async fn proxied(&self, client: &mut Stream, buf: &mut BytesMut) -> Option<Option<std::net::SocketAddr>> {
        let until = tokio::time::Instant::now() + self.gateway.client_timeout;
        loop {
            match crate::http::proxied::read(buf) {
                Ok(Some(header)) => {
                    buf.advance(header.len);
                    if let Some(source) = header.source {
                        let digest = pingora::protocols::SocketDigest::from_raw_fd(client.id());
                        let _ = digest.peer_addr.set(Some(pingora::protocols::l4::socket::SocketAddr::Inet(source)));
                        client.set_socket_digest(digest);
                    }
                    return Some(header.source);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "refused a trusted peer's connection");
                    let _ = client.write_all(&answer(400, format!("robots-proxy: {e}\n").as_bytes(), true)).await;
                    let _ = AsyncWriteExt::shutdown(client).await;
                    return None;
                }
            }
            buf.reserve(CHUNK);
            match tokio::time::timeout_at(until, client.read_buf(buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return None,
            }
        }
    }

    /// Gives the connection, and the bytes read from it so far, to Pingora's pipeline.
    async fn hand_over(&self, client: Stream, read: BytesMut, shutdown: &ShutdownWatch) {
        // The first head was read here, under `client_timeout`; Pingora
        // reads the later ones, and the wrapper holds them to it too.
        let client = crate::http::deadline::HeadDeadline::wrap(client, self.gateway.client_timeout);
        let mut session = ServerSession::new_http1(client);
        session.set_keepalive(if *shutdown.borrow() { None } else { Some(KEEPALIVE.as_secs()) });
        // Pipelined requests are answered in order (RFC 9112 section 9.3.2);
        // Pingora's default drops them after the first answer.
        session.set_pipelining_enabled(true);
        // A request body may pause `client_timeout`, as on the own path
        // (Pingora's own default is 60 s, and is not carried across reuse).
        session.set_read_timeout(Some(self.gateway.client_timeout));
        if !read.is_empty() {
            session.set_pipelined_prefix(read);
        }
        let mut reused = self.pipeline.process_new_http(session, shutdown).await;
        while let Some((stream, settings)) = reused.map(|r| r.consume()) {
            let mut session = ServerSession::new_http1(stream);
            if let Some(settings) = settings {
                settings.apply_to_session(&mut session);
            }
            session.set_read_timeout(Some(self.gateway.client_timeout));
            reused = self.pipeline.process_new_http(session, shutdown).await;
        }
    }
}

/// Whether `buf`, of which the first `seen` bytes held no blank line, may
/// now hold the blank line that ends a head (`\n\n` or `\n\r\n`).
fn head_may_end(buf: &[u8], seen: usize) -> bool {
    let from = seen.saturating_sub(2);
    memchr::memchr_iter(b'\n', &buf[from..]).any(|i| match &buf[from + i + 1..] {
        [b'\n', ..] | [b'\r', b'\n', ..] => true,
        // A line end at the very end of what has come so far: the blank
        // line may be on its way, so look again after the next read.
        _ => false,
    })
}

/// The status code of a response the gateway wrote itself.
fn status_of(response: &[u8]) -> u16 {
    response.get(9..12).and_then(|s| std::str::from_utf8(s).ok()).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_parsed_only_once_a_blank_line_may_have_come() {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert!(head_may_end(head, 0));
        assert!(head_may_end(b"GET / HTTP/1.0\n\n", 0));
        // Fed a byte at a time, the end is seen exactly when it arrives.
        for end in 1..head.len() {
            assert!(!head_may_end(&head[..end], end - 1), "at {end}");
        }
        assert!(head_may_end(head, head.len() - 1));
        assert!(!head_may_end(b"", 0));
    }
}
