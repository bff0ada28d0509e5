//! The gateway's own HTTP/1.1 path. Each client connection starts here:
//! plain requests are read with `httparse`, answered from the store or
//! relayed to the site's origin over a pooled keep-alive connection, bodies
//! passed through byte for byte, to plain-HTTP and TLS origins alike.
//! Chunked uploads are read strictly and chunked afresh for the origin, and
//! `Expect: 100-continue` is answered here once the origin has the head
//! (`upload`). An HTTP/1.0 client gets no 1xx and no chunks, and one
//! response a connection. Anything unusual (a 1.0 request without `Host`,
//! upgrades, other expectations and codings, malformed requests) is
//! handed, with the bytes already read, to Pingora's full pipeline
//! (`pipeline`), which keeps the connection from then on.
//!
//! Why: a proxied request through Pingora's pipeline cost about 100,000
//! instructions on this machine, nginx as a reverse proxy 21,800; the hop's
//! added latency is what the gateway is judged on (docs/BENCHMARKS.md).

use std::io::Write as _;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::upstream::OriginConn;
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

use crate::framing::{Body, content_length, list};
use crate::gateway::{Answers, CRAWLER_FIELD, FrontedSite, Gateway, NeedsDns, UNKNOWN_HOST_BODY, Visit};
use crate::identity::signed::Signed;
use crate::metrics::Path;
use crate::pipeline::Pipeline;
use crate::store::State;

mod fields;
mod streams;
mod upload;

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

/// The listener's application: the fast path, with Pingora's pipeline behind it.
pub struct Front {
    gateway: Arc<Gateway>,
    pipeline: Arc<HttpProxy<Pipeline>>,
    fast: bool,
    /// HTTP/2 connections are served on the gateway's own path
    /// (`streams`) whenever the fast path is on.
    own_h2: bool,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").field("gateway", &self.gateway).field("fast", &self.fast).finish_non_exhaustive()
    }
}

impl Front {
    /// The fast path over `gateway`; `pipeline` takes what it hands over.
    /// With `fast` false every connection goes to the pipeline.
    pub fn new(gateway: Arc<Gateway>, pipeline: Arc<HttpProxy<Pipeline>>, fast: bool) -> Front {
        Front { own_h2: fast, gateway, pipeline, fast }
    }
}

#[async_trait]
impl ServerApp for Front {
    async fn process_new(self: &Arc<Self>, stream: Stream, shutdown: &ShutdownWatch) -> Option<Stream> {
        let _open = Open::count();
        if matches!(stream.selected_alpn_proto(), Some(ALPN::H2)) {
            let stream = crate::coalesce::Coalesce::wrap(stream);
            if self.own_h2 {
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

/// What to do with one request, decided from its head.
enum Plan {
    /// Pingora's pipeline takes the connection from this request on.
    HandOver,
    /// Answered by the gateway: the whole response.
    Answer { response: Vec<u8>, close: bool, log: Option<Logged> },
    /// Relayed to the site's origin.
    Forward(Forward),
    /// A crawler's claim needs reverse DNS before the request can be
    /// judged: asked (within the budget), then the head is planned again.
    Verify { user_agent: String, client: Option<IpAddr>, signed: Option<Signed> },
}

/// What a client connection tells about every request on it.
#[derive(Clone, Copy, Debug)]
struct Conn {
    /// The socket's peer.
    peer: Option<IpAddr>,
    /// It came over TLS (`https` for a signature's `@scheme`).
    tls: bool,
}

/// A request on its way to the origin.
struct Forward {
    site: Arc<FrontedSite>,
    /// The request head as the origin gets it.
    head: Vec<u8>,
    /// Request body bytes after the head (`Content-Length`).
    body: u64,
    /// The body is chunked (`Transfer-Encoding: chunked`, no length).
    chunked: bool,
    /// The client sent `Expect: 100-continue`: it may wait for `100
    /// Continue` before it sends its body.
    expects: bool,
    /// An HTTP/1.0 client: no 1xx responses (RFC 9110 section 15.2), no
    /// chunked ones (a chunked body is sent decoded, ended by the close),
    /// and the connection closes after its one response.
    old: bool,
    /// A HEAD request: the response has no body, whatever it declares.
    head_only: bool,
    /// Sending it twice means the same as once (RFC 9110 section 9.2.2).
    idempotent: bool,
    /// The client is done after this response.
    close: bool,
    log: Option<Logged>,
}

/// A crawler's request, logged once its status is known.
struct Logged {
    gateway: Arc<Gateway>,
    site: Arc<FrontedSite>,
    visit: Visit,
    method: String,
    target: String,
}

impl Logged {
    fn write(&self, status: u16) {
        Gateway::log_visit(&self.site, &self.visit, &self.method, &self.target, status);
        self.gateway.count_visit(&self.site, &self.visit, self.target.as_bytes());
    }
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
        for (name, value) in crate::forwarded::fields(conn.peer, false, conn.tls, &crate::forwarded::Sent::default()) {
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
                    self.gateway.metrics.response(false, status);
                    let robots = log.is_none() && status != self.gateway.unknown_host_status;
                    self.gateway.metrics.took(if robots { Path::Robots } else { Path::Fast }, began);
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
                    self.gateway.metrics.took(Path::Fast, began);
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
            match crate::proxied::read(buf) {
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
        let client = crate::deadline::HeadDeadline::wrap(client, self.gateway.client_timeout);
        let mut session = ServerSession::new_http1(client);
        session.set_keepalive(if *shutdown.borrow() { None } else { Some(KEEPALIVE.as_secs()) });
        // Pipelined requests are answered in order (RFC 9112 section 9.3.2);
        // Pingora's default drops them after the first answer.
        session.set_pipelining_enabled(true);
        // A request body may pause `client_timeout`, as on the fast path
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

    /// Reads a request head from `buf`: `None` while it is incomplete,
    /// else the plan and the head's length. `known` is verification's
    /// answer for this head's claim, once asked.
    fn plan(
        &self,
        buf: &[u8],
        closing: bool,
        conn: Conn,
        edge: &[u8],
        known: Option<Answers>,
    ) -> Option<(Plan, usize)> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut req = httparse::Request::new(&mut fields);
        let len = match req.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return None,
            Err(_) => return Some((Plan::HandOver, 0)),
        };
        if !self.fast {
            return Some((Plan::HandOver, 0));
        }
        Some((self.decide(&req, closing, conn, edge, known).unwrap_or(Plan::HandOver), len))
    }

    /// The plan for a parsed request; `None` hands it over.
    fn decide(
        &self,
        req: &httparse::Request<'_, '_>,
        closing: bool,
        conn: Conn,
        edge: &[u8],
        known: Option<Answers>,
    ) -> Option<Plan> {
        let (method, target) = (req.method?, req.path?);
        // A `#` cannot stand in a request target (RFC 9112 section 3.2);
        // the pipeline drops it and what follows, as the origin must not see it.
        let old = req.version == Some(0);
        if !(req.version == Some(1) || old) || method == "CONNECT" || !target.starts_with('/') || target.contains('#') {
            return None;
        }
        let (mut host, mut agent, mut if_none_match, mut length) = (None, "", None, None);
        let (mut chunked, mut expects) = (false, false);
        let mut forwarded_for = None;
        // An HTTP/1.0 connection is closed after each response: keeping it
        // would need `Connection: keep-alive` on every answer, for clients
        // that are mostly old tools and probes.
        let mut close = closing || old;
        for f in req.headers.iter() {
            let name = f.name;
            if name.eq_ignore_ascii_case("host") {
                if host.is_some() {
                    return None;
                }
                host = Some(std::str::from_utf8(f.value).ok()?);
            } else if name.eq_ignore_ascii_case("user-agent") {
                agent = std::str::from_utf8(f.value).unwrap_or("");
            } else if name.eq_ignore_ascii_case("x-forwarded-for") {
                // Several fields are one list; the pipeline joins them.
                if forwarded_for.is_some() {
                    return None;
                }
                forwarded_for = Some(std::str::from_utf8(f.value).ok()?);
            } else if name.eq_ignore_ascii_case("if-none-match") {
                if_none_match = std::str::from_utf8(f.value).ok();
            } else if name.eq_ignore_ascii_case("content-length") {
                let n = content_length(f.value)?;
                if length.is_some_and(|l| l != n) {
                    return None;
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case("connection") {
                for token in list(f.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if !token.eq_ignore_ascii_case(b"keep-alive") && !token.is_empty() {
                        // It names further hop-by-hop fields: the pipeline strips them.
                        return None;
                    }
                }
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // `chunked` alone, in one field. Other codings, lists and
                // repeats go to the pipeline, which refuses them.
                if chunked || !f.value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return None;
                }
                chunked = true;
            } else if name.eq_ignore_ascii_case("expect") {
                // The only expectation there is (RFC 9110 section 10.1.1);
                // the pipeline answers any other.
                if expects || !f.value.trim_ascii().eq_ignore_ascii_case(b"100-continue") {
                    return None;
                }
                expects = true;
            } else if name.eq_ignore_ascii_case("upgrade") {
                return None;
            }
        }
        // Both framings, or chunked from HTTP/1.0: the pipeline refuses it
        // and closes (RFC 9112 section 6.1).
        if chunked && (length.is_some() || old) {
            return None;
        }
        // An HTTP/1.0 client's `Expect` is ignored (RFC 9110 section 10.1.1).
        let expects = expects && !old;
        let body = length.unwrap_or(0);
        // An answered request's body is never read, so the connection ends
        // after the answer rather than take that body for the next request.
        let answered_close = close || body > 0 || chunked;
        let Some(site) = self.gateway.site(host?) else {
            let response = answer(self.gateway.unknown_host_status, UNKNOWN_HOST_BODY, answered_close);
            return Some(Plan::Answer { response, close: answered_close, log: None });
        };
        let path = target.split_once('?').map_or(target, |(p, _)| p);
        let head_only = method == "HEAD";
        if path == "/robots.txt" && (method == "GET" || head_only) {
            self.gateway.count_fetch(site, agent, conn.peer, forwarded_for);
        }
        if path == "/robots.txt"
            && (method == "GET" || head_only)
            && let Some(response) = self.robots(site, if_none_match, head_only, answered_close)
        {
            return Some(Plan::Answer { response, close: answered_close, log: None });
        }
        let claim = if path == "/robots.txt" { None } else { self.gateway.claim(agent) };
        let log = match claim {
            None => None,
            Some(claim) => {
                let client = self.gateway.client(conn.peer, forwarded_for);
                let signed =
                    self.gateway.signed(conn.tls, method, target, req.headers.iter().map(|f| (f.name, f.value)));
                let answers = match known {
                    Some(answers) => answers,
                    None => match self.gateway.identity_now(&claim, client, signed.as_ref()) {
                        Ok(answers) => answers,
                        Err(NeedsDns) => return Some(Plan::Verify { user_agent: agent.to_string(), client, signed }),
                    },
                };
                Some(Logged {
                    gateway: Arc::clone(&self.gateway),
                    site: Arc::clone(site),
                    visit: self.gateway.visit(site, &claim, &answers, client, target.as_bytes()),
                    method: method.to_string(),
                    target: target.to_string(),
                })
            }
        };
        if let Some(r) = log.as_ref().and_then(|l| l.visit.refusal.as_ref()) {
            let response = answer_with(r.status, &r.headers, r.body.as_bytes(), answered_close);
            return Some(Plan::Answer { response, close: answered_close, log });
        }
        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(target.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\n");
        // Names with `_` are dropped, as nginx does: origins that map fields
        // to CGI-style variables read `Content_Length` as `Content-Length`.
        // One `Content-Length` goes on, however the client repeated it.
        let forwarded = site.proxy.forwarded_headers;
        let mut sent = crate::forwarded::Sent::default();
        for f in req.headers.iter() {
            if forwarded && crate::forwarded::is_forwarded_field(f.name) {
                sent.add(f.name, f.value);
            } else if !(hop_by_hop(f.name)
                || f.name.contains('_')
                || f.name.eq_ignore_ascii_case("content-length")
                || f.name.eq_ignore_ascii_case("transfer-encoding")
                || f.name.eq_ignore_ascii_case("expect")
                || f.name.eq_ignore_ascii_case(CRAWLER_FIELD))
            {
                push_field(&mut head, f.name, f.value);
            }
        }
        if forwarded {
            // What the gateway saw is the same for every request of the
            // connection (`edge`, written once); only a trusted proxy's own
            // chain makes a request's fields its own.
            if !sent.is_empty() && conn.peer.is_some_and(|p| self.gateway.trusted.contains(p)) {
                for (name, value) in crate::forwarded::fields(conn.peer, true, conn.tls, &sent) {
                    push_field(&mut head, name, value.as_bytes());
                }
            } else {
                head.extend_from_slice(edge);
            }
        }
        if let Some(value) = log.as_ref().and_then(|l| l.visit.field()) {
            push_field(&mut head, CRAWLER_FIELD, value.as_bytes());
        }
        if let Some(n) = length {
            push_field(&mut head, "Content-Length", n.to_string().as_bytes());
        }
        if chunked {
            push_field(&mut head, "Transfer-Encoding", b"chunked");
        }
        head.extend_from_slice(b"\r\n");
        let idempotent = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"].contains(&method);
        Some(Plan::Forward(Forward {
            site: Arc::clone(site),
            head,
            body,
            chunked,
            expects,
            old,
            head_only,
            idempotent,
            close,
            log,
        }))
    }

    /// `/robots.txt` from the store, if the store has a copy to serve.
    fn robots(&self, site: &FrontedSite, if_none_match: Option<&str>, head_only: bool, close: bool) -> Option<Vec<u8>> {
        let state = self.gateway.store.state(&site.name);
        let State::Serve(served) = &*state else { return None };
        served.served.inc();
        let not_modified = if_none_match.is_some_and(|v| served.matches(v));
        let mut out = Vec::with_capacity(served.wire.len() + served.body.len() + 24);
        out.extend_from_slice(if not_modified { &served.wire_304 } else { &served.wire });
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !(head_only || not_modified) {
            out.extend_from_slice(&served.body);
        }
        Some(out)
    }

    /// Relays one request to the origin and its response back. Returns
    /// whether the client connection stays open.
    async fn relay(
        &self,
        client: &mut Stream,
        buf: &mut BytesMut,
        reply: &mut Reply,
        wait: &mut Wait<'_>,
        mut f: Forward,
    ) -> bool {
        let request = std::mem::take(&mut f.head);
        let (status, keep) = match self.exchange(client, buf, reply, wait, &f, request).await {
            Ok((status, keep)) => (status, keep && !f.close),
            Err(Failure::Origin(status, why)) => {
                let _ = client.write_all(&self.origin_failed(&f.site, status, &why, true)).await;
                let _ = client.flush().await;
                (status, false)
            }
            Err(Failure::Stalled) => {
                let _ = client.write_all(&answer(408, b"robots-proxy: request body stalled\n", true)).await;
                let _ = client.flush().await;
                (408, false)
            }
            Err(Failure::BadBody) => {
                let _ = client.write_all(&answer(400, b"robots-proxy: malformed chunked request body\n", true)).await;
                let _ = client.flush().await;
                (400, false)
            }
            Err(Failure::Broken) => (0, false),
        };
        self.gateway.metrics.response(false, status);
        if let Some(log) = &f.log {
            log.write(status);
        }
        keep
    }

    /// Sends the request and relays the response: the status and whether
    /// the client connection can carry another request.
    async fn exchange(
        &self,
        client: &mut Stream,
        buf: &mut BytesMut,
        reply: &mut Reply,
        wait: &mut Wait<'_>,
        f: &Forward,
        mut request: Vec<u8>,
    ) -> Result<(u16, bool), Failure> {
        let Reply { from_origin, head } = reply;
        let addr = f.site.origin.addr().await.map_err(|e| Failure::Origin(502, e))?;
        // A client that has begun its body, or has none, needs no go-ahead.
        let continue_first = f.expects && (f.chunked || f.body > 0) && buf.is_empty();
        // The body bytes already read go out with the head: counted, or
        // chunked afresh. A chunked body that is all here is then no
        // different from a counted one, and a broken one never reaches the
        // origin.
        let rest = if f.chunked {
            let mut chunks = Body::chunked_request();
            let (n, done) = upload::rechunk(&mut chunks, buf, &mut request)?;
            buf.advance(n);
            if done { Body::Length(0) } else { chunks }
        } else {
            let early = buf.len().min(usize::try_from(f.body).unwrap_or(usize::MAX));
            request.extend_from_slice(&buf[..early]);
            buf.advance(early);
            Body::Length(f.body - early as u64)
        };
        let mut body = ClientBody { client: &mut *client, buf: &mut *buf, rest, continue_first };
        let mut origin = self.ask(&f.site, addr, &request, &mut body, f.idempotent, from_origin, wait).await?;
        let mut sent_interim = false;
        loop {
            let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
            let mut resp = httparse::Response::new(&mut fields);
            let Some(len) = parse_head(&mut resp, from_origin, addr)? else {
                more_head(&mut origin, from_origin, wait, addr, sent_interim).await?;
                continue;
            };
            let (status, response) = Response::judge(&resp, f.head_only, addr)?;
            let interim = (100..200).contains(&status);
            let close = !interim && (f.close || matches!(response.body, Body::UntilClose));
            let usage = if interim { None } else { f.site.content_usage.as_deref() };
            // An HTTP/1.0 client cannot read chunks: it gets the content,
            // ended by the close (`f.close`).
            let decoded = f.old && matches!(response.body, Body::Chunked(_));
            response.head(&resp, close, usage, decoded, head);
            from_origin.advance(len);
            if interim && f.old {
                continue;
            }
            if interim {
                // Interim responses (103 Early Hints) go on; the final one follows.
                client.write_all(head).await.map_err(|_| Failure::Broken)?;
                client.flush().await.map_err(|_| Failure::Broken)?;
                sent_interim = true;
                continue;
            }
            let origin_keeps = response.keep_alive;
            let clean = relay_body(&mut origin, client, head, from_origin, wait, response.body, decoded).await?;
            if origin_keeps && clean {
                f.site.upstream.put(addr, origin);
            }
            return Ok((status, !close));
        }
    }
}

/// What follows a request head to the origin.
trait RequestBody {
    /// Nothing follows, so the request can be sent again as it is.
    fn is_empty(&self) -> bool;
    /// Sends the rest of the request.
    async fn send(&mut self, origin: &mut OriginConn, wait: &mut Wait<'_>) -> Result<(), Failure>;
}

impl Front {
    /// Sends `request`, then `body`, over a pooled connection to the origin
    /// or a new one, and reads the answer's first bytes into `from_origin`.
    /// A pooled connection the origin closed meanwhile is replaced once,
    /// when everything sent can be sent again.
    #[allow(clippy::too_many_arguments)]
    async fn ask(
        &self,
        site: &FrontedSite,
        addr: std::net::SocketAddr,
        request: &[u8],
        body: &mut impl RequestBody,
        idempotent: bool,
        from_origin: &mut BytesMut,
        wait: &mut Wait<'_>,
    ) -> Result<OriginConn, Failure> {
        let mut pooled = site.upstream.take(addr);
        loop {
            let reused = pooled.is_some();
            let mut origin = match pooled.take() {
                Some(conn) => conn,
                None => {
                    let connecting = std::time::Instant::now();
                    let conn = site.upstream.connect(addr).await.map_err(|e| origin_error(addr, &e))?;
                    self.gateway.metrics.upstream_connect.observe(connecting.elapsed().as_secs_f64());
                    conn
                }
            };
            let asked = std::time::Instant::now();
            from_origin.clear();
            let sent = match origin.write_all(request).await {
                Ok(()) if !body.is_empty() => body.send(&mut origin, wait).await,
                Ok(()) => Ok(()),
                Err(e) => Err(origin_error(addr, &e)),
            };
            let answered = match sent {
                Ok(()) => read_more(&mut origin, from_origin, wait).await.map_err(|e| origin_error(addr, &e)),
                Err(e) => Err(e),
            };
            match answered {
                Ok(n) if n > 0 => {
                    self.gateway.metrics.upstream_response.observe(asked.elapsed().as_secs_f64());
                    return Ok(origin);
                }
                _ if reused && body.is_empty() && idempotent => continue,
                Ok(_) => return Err(Failure::Origin(502, format!("{addr} closed the connection without a response"))),
                Err(e) => return Err(e),
            }
        }
    }
}

impl Front {
    /// Logs and counts an origin's failure before any of its answer was
    /// relayed, and writes the answer the client gets instead: it names the
    /// site, never the cause or the address (an internal address is no one's
    /// business; the log has both).
    fn origin_failed(&self, site: &FrontedSite, status: u16, why: &str, close: bool) -> Vec<u8> {
        tracing::warn!(site = %site.name, error = %why, "origin failed");
        self.gateway.metrics.origin_failures.with_label_values(&[&site.name, &status.to_string()]).inc();
        let body = format!(
            "robots-proxy: the origin of {} {}\n",
            site.name,
            if status == 504 { "did not answer in time" } else { "could not be reached" }
        );
        answer(status, body.as_bytes(), close)
    }
}

/// One look at what the origin sent so far: the response head's length
/// once it is complete, `None` while more may come, or the failure of a
/// head past 64 KiB or malformed.
fn parse_head<'b>(
    resp: &mut httparse::Response<'_, 'b>,
    from_origin: &'b [u8],
    addr: std::net::SocketAddr,
) -> Result<Option<usize>, Failure> {
    match resp.parse(from_origin) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) if from_origin.len() <= MAX_RESPONSE_HEAD => Ok(None),
        Ok(httparse::Status::Partial) => Err(Failure::Origin(502, format!("{addr} sent a response head over 64 KiB"))),
        Err(e) => Err(Failure::Origin(502, format!("{addr} sent a malformed response head: {e}"))),
    }
}

/// Reads more of an incomplete response head. An origin that stops
/// before the head is whole fails with 502 (504 if it went silent), or
/// breaks the exchange once an interim response went to the client.
async fn more_head(
    origin: &mut OriginConn,
    from_origin: &mut BytesMut,
    wait: &mut Wait<'_>,
    addr: std::net::SocketAddr,
    after_interim: bool,
) -> Result<(), Failure> {
    match read_more(origin, from_origin, wait).await {
        Ok(n) if n > 0 => Ok(()),
        _ if after_interim => Err(Failure::Broken),
        Ok(_) => Err(Failure::Origin(502, format!("{addr} sent an incomplete response head"))),
        Err(e) => Err(origin_error(addr, &e)),
    }
}

/// The connection's timer, lent to a relayed request: how long the origin
/// may keep it waiting.
struct Wait<'t> {
    timer: Pin<&'t mut Sleep>,
    limit: Duration,
    /// How long the client's request body may pause.
    client_limit: Duration,
}

/// Reads what the origin has next, appending to `into`; an origin silent
/// for `wait.limit` is a `TimedOut` error.
async fn read_more(origin: &mut OriginConn, into: &mut BytesMut, wait: &mut Wait<'_>) -> std::io::Result<usize> {
    into.reserve(CHUNK);
    wait.timer.as_mut().reset(tokio::time::Instant::now() + wait.limit);
    tokio::select! {
        biased;
        n = origin.read_buf(into) => n,
        () = wait.timer.as_mut() => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {:?}", wait.limit),
        )),
    }
}

/// A failure of the origin before any of its answer was relayed: 504 when
/// it took too long, else 502.
fn origin_error(addr: std::net::SocketAddr, e: &std::io::Error) -> Failure {
    let status = if e.kind() == std::io::ErrorKind::TimedOut { 504 } else { 502 };
    Failure::Origin(status, format!("{addr}: {e}"))
}

/// Relays the response: `head`, then the body; `from_origin` holds the
/// bytes already read past the head. Returns whether the origin connection
/// ended cleanly at the body's end (and may be reused). With `decoded`, a
/// chunked body goes as its content alone (for an HTTP/1.0 client).
///
/// The head and the body bytes already read go out in one write: over TLS
/// each write is a record of its own, and OpenSSL's per-record work was
/// paid twice for most pages (callgrind: 59,600 instructions a TLS
/// request before, 52,200 after; docs/BENCHMARKS.md).
async fn relay_body(
    origin: &mut OriginConn,
    client: &mut Stream,
    head: &mut Vec<u8>,
    from_origin: &mut BytesMut,
    wait: &mut Wait<'_>,
    mut body: Body,
    decoded: bool,
) -> Result<bool, Failure> {
    let mut done = body.is_done();
    let mut surplus = false;
    if !done && !from_origin.is_empty() {
        let (n, end) = if decoded {
            body.take_with(from_origin, |content| head.extend_from_slice(content))
        } else {
            body.take(from_origin).inspect(|&(n, _)| head.extend_from_slice(&from_origin[..n]))
        }
        .map_err(|_| Failure::Broken)?;
        from_origin.advance(n);
        done = end;
    }
    let mut content = Vec::new();
    client.write_all(head).await.map_err(|_| Failure::Broken)?;
    surplus |= !from_origin.is_empty();
    client.flush().await.map_err(|_| Failure::Broken)?;
    while !done {
        from_origin.clear();
        let n = read_more(origin, from_origin, wait).await.map_err(|_| Failure::Broken)?;
        if n == 0 {
            if body == Body::UntilClose {
                return Ok(false);
            }
            return Err(Failure::Broken);
        }
        let (n, end) = if decoded {
            content.clear();
            let taken = body.take_with(from_origin, |c| content.extend_from_slice(c)).map_err(|_| Failure::Broken)?;
            client.write_all(&content).await.map_err(|_| Failure::Broken)?;
            taken
        } else {
            let taken = body.take(from_origin).map_err(|_| Failure::Broken)?;
            client.write_all(&from_origin[..taken.0]).await.map_err(|_| Failure::Broken)?;
            taken
        };
        client.flush().await.map_err(|_| Failure::Broken)?;
        surplus |= n < from_origin.len();
        done = end;
    }
    from_origin.clear();
    Ok(!surplus)
}

/// What the gateway needs from an origin's response head.
struct Response {
    body: Body,
    /// The one `Content-Length` relayed, however the origin repeated it.
    length: Option<u64>,
    /// The origin keeps the connection open after this response.
    keep_alive: bool,
    /// Field names the response's `Connection` header lists: not relayed.
    listed: Vec<String>,
    /// A transfer coding frames the body, so `Content-Length` is dropped.
    coded: bool,
}

impl Response {
    /// A complete response head's status and framing; a 101 nobody asked
    /// for, or framing that cannot be read, is the origin's failure.
    fn judge(
        resp: &httparse::Response<'_, '_>,
        head_only: bool,
        addr: std::net::SocketAddr,
    ) -> Result<(u16, Response), Failure> {
        let status = resp.code.unwrap_or(0);
        if status == 101 {
            return Err(Failure::Origin(502, format!("{addr} switched protocols unasked")));
        }
        Ok((status, Response::read(resp, head_only).map_err(|e| Failure::Origin(502, e))?))
    }

    fn read(resp: &httparse::Response<'_, '_>, head_only: bool) -> Result<Response, String> {
        let status = resp.code.unwrap_or(0);
        let mut keep_alive = resp.version == Some(1);
        let (mut length, mut coding, mut listed) = (None, None, Vec::new());
        for f in resp.headers.iter() {
            if f.name.eq_ignore_ascii_case("connection") {
                for token in list(f.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if !token.is_empty() && !token.eq_ignore_ascii_case(b"keep-alive") {
                        listed.push(String::from_utf8_lossy(token).into_owned());
                    }
                }
            } else if f.name.eq_ignore_ascii_case("transfer-encoding") {
                coding = Some(f.value);
            } else if f.name.eq_ignore_ascii_case("content-length") {
                let n = content_length(f.value).ok_or_else(|| "a malformed Content-Length".to_string())?;
                if length.is_some_and(|l| l != n) {
                    return Err("conflicting Content-Length values".to_string());
                }
                length = Some(n);
            }
        }
        let last_coding = coding.and_then(|c| list(c).last());
        let chunked = last_coding.is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
        let body = if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
            Body::Length(0)
        } else if chunked {
            Body::chunked()
        } else if coding.is_some() {
            Body::UntilClose
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            Body::UntilClose
        };
        keep_alive &= body != Body::UntilClose;
        Ok(Response { body, length, keep_alive, listed, coded: coding.is_some() })
    }

    /// Whether a field of the origin's head goes on to the client. Over
    /// HTTP/2, and to an HTTP/1.0 client, the body goes without its
    /// transfer coding (`decoded`), so the coding's field goes too.
    fn relays(&self, name: &str, decoded: bool) -> bool {
        let coding = name.eq_ignore_ascii_case("transfer-encoding");
        !(hop_by_hop(name)
            // Written once after the fields; with a transfer coding the
            // length is the coding's (RFC 9112 section 6.3).
            || name.eq_ignore_ascii_case("content-length")
            || (coding && decoded)
            // Over HTTP/1.1 the body is relayed in its coding, so the
            // coding stays named.
            || (!coding && self.listed.iter().any(|l| l.eq_ignore_ascii_case(name))))
    }

    /// [`Response::head`] for an HTTP/2 stream: the status and the fields
    /// the client gets, which must be valid HTTP/2 fields.
    fn head_h2(&self, resp: &httparse::Response<'_, '_>, usage: Option<&str>) -> Result<http::Response<()>, String> {
        let mut out = http::Response::new(());
        *out.status_mut() = http::StatusCode::from_u16(resp.code.unwrap_or(0)).map_err(|e| e.to_string())?;
        // Room for every field and the two added: growing the map as it
        // fills cost a tenth of building it.
        *out.headers_mut() = http::HeaderMap::with_capacity(resp.headers.len() + 2);
        let fields = out.headers_mut();
        for f in resp.headers.iter() {
            if self.relays(f.name, true) {
                let (name, value) = self::fields::convert(f.name, f.value)?;
                fields.append(name, value);
            }
        }
        if let Some(n) = self.length.filter(|_| !self.coded) {
            fields.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(n));
        }
        if let Some(usage) = usage
            && !fields.contains_key("content-usage")
            && let Ok(value) = http::HeaderValue::from_str(usage)
        {
            fields.insert(http::HeaderName::from_static("content-usage"), value);
        }
        Ok(out)
    }

    /// The head relayed to the client: HTTP/1.1, connection fields dropped;
    /// `usage` is the site's AI policy's `Content-Usage`, added unless the
    /// origin sent its own. Written over `out`, whose allocation a
    /// connection keeps from one response to the next.
    fn head(
        &self,
        resp: &httparse::Response<'_, '_>,
        close: bool,
        usage: Option<&str>,
        decoded: bool,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        let _ = write!(out, "HTTP/1.1 {} ", resp.code.unwrap_or(0));
        out.extend_from_slice(resp.reason.unwrap_or("").as_bytes());
        out.extend_from_slice(b"\r\n");
        for f in resp.headers.iter() {
            if self.relays(f.name, decoded) {
                push_field(out, f.name, f.value);
            }
        }
        if let Some(n) = self.length.filter(|_| !self.coded) {
            push_field(out, "Content-Length", n.to_string().as_bytes());
        }
        if let Some(usage) = usage
            && !resp.headers.iter().any(|f| f.name.eq_ignore_ascii_case("content-usage"))
        {
            push_field(out, "Content-Usage", usage.as_bytes());
        }
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
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
