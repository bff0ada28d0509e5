//! The gateway's own HTTP/2 path. A TLS client that picks `h2` by ALPN has
//! its streams served here, on the connection's task: each request is
//! judged by the same `decide` as an HTTP/1.1 one (so robots.txt,
//! enforcement, identity and the ledger cannot differ between the two),
//! answered from the store, or relayed as HTTP/1.1 to the site's origin
//! over the own path's pooled connections, its answer framed back as
//! HTTP/2.
//!
//! Why: through Pingora's pipeline an HTTP/2 request cost about 150,000
//! instructions, 0.56-0.66x nginx's throughput (docs/BENCHMARKS.md); the
//! pipeline's per-request machinery was most of it, and `ProxyHttp` hooks
//! cannot reach it.
//!
//! An HTTP/2 request is already framed, so what the HTTP/1.1 path hands to
//! Pingora for framing (chunked bodies, `Expect`, upgrades) cannot occur
//! here. What `decide` still declines is refused with 400: a `CONNECT`, a
//! target that is not origin-form, a `Host` that differs from
//! `:authority` (RFC 9113 section 8.3.1). TLS origins and plain ones are
//! served here alike; only `fast_path: false` sends HTTP/2 connections to
//! the pipeline (`Front::process_new`).

use std::task::Poll;
use std::time::{Duration, Instant};

use crate::http::upstream::OriginConn;
use bytes::{Buf, Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http::{HeaderName, HeaderValue};
use pingora::protocols::Stream;
use pingora::server::ShutdownWatch;
use tokio::io::AsyncWriteExt;

use super::{
    Answers, CHUNK, Conn, Failure, Forward, Front, KEEPALIVE, MAX_FIELDS, MAX_HEAD, Plan, Response, Wait, answer,
    more_head, parse_head, push_field, read_more, status_of,
};
use crate::http::framing::{Body, content_length};
use crate::http::noted::Noted;
use crate::metrics::Route;

/// Streams a client may have open at once (Pingora's and nginx's default
/// is 100 and 128).
const MAX_STREAMS: u32 = 128;

/// How a request's body goes to the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Upload {
    /// None: the client ended the stream with its head.
    Empty,
    /// `Content-Length` bytes, as declared (the h2 layer holds the DATA
    /// frames to it).
    Length(u64),
    /// No length declared: sent chunked, as HTTP/2 frames it.
    Chunked,
}

/// Why a stream could not be relayed, said in a 400.
struct Refused(&'static str);

impl Front {
    /// Serves one HTTP/2 client connection until it closes, idles out or
    /// the gateway stops (then with a GOAWAY, streams under way finished).
    pub(super) async fn serve_h2(&self, client: Stream, shutdown: &ShutdownWatch) {
        let conn = Conn {
            peer: client.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip())),
            tls: true,
        };
        let mut edge = Vec::new();
        for (name, value) in
            crate::http::forwarded::fields(conn.peer, false, conn.tls, &crate::http::forwarded::Sent::default())
        {
            push_field(&mut edge, name, value.as_bytes());
        }
        let mut builder = h2::server::Builder::new();
        builder.max_concurrent_streams(MAX_STREAMS).max_header_list_size(MAX_HEAD as u32);
        let handshake = tokio::time::timeout(self.gateway.client_timeout, builder.handshake::<_, Bytes>(client));
        let Ok(Ok(mut h2)) = handshake.await else { return };
        let mut watch = shutdown.clone();
        let mut closing = *watch.borrow() && !crate::upgrade::upgrading();
        if closing {
            h2.graceful_shutdown();
        }
        let mut running = FuturesUnordered::new();
        let mut idle = std::pin::pin!(tokio::time::sleep(KEEPALIVE));
        // The connection is polled only when it asked to be: the task is
        // also woken for the streams, the origin and the timers, and a poll
        // of the connection with nothing to do cost a few thousand
        // instructions, once or twice a request. A stream that sends wakes
        // the connection (as `h2` does for streams on other tasks); an
        // answer, or a call from outside a poll, marks it due.
        let asked = Noted::new(true);
        loop {
            // Streams first: what they sent is flushed by the connection's
            // poll in the same pass, not after another wake-up.
            tokio::select! {
                biased;
                Some(()) = running.next(), if !running.is_empty() => {
                    if running.is_empty() {
                        idle.as_mut().reset(tokio::time::Instant::now() + KEEPALIVE);
                    }
                }
                accepted = std::future::poll_fn(|cx| {
                    if !asked.due(cx) {
                        return Poll::Pending;
                    }
                    let polled = asked.poll(|cx| h2.poll_accept(cx));
                    if polled.is_ready() {
                        asked.mark();
                    }
                    polled
                }) => match accepted {
                    Some(Ok((request, respond))) => running.push(self.stream(request, respond, conn, &edge)),
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "HTTP/2 connection ended");
                        break;
                    }
                    None => break,
                },
                () = idle.as_mut(), if running.is_empty() && !closing => {
                    closing = true;
                    h2.graceful_shutdown();
                    asked.mark();
                }
                _ = watch.changed(), if !closing => {
                    closing = true;
                    h2.graceful_shutdown();
                    asked.mark();
                }
            }
        }
        // The connection is gone: what is left fails at its next write.
        while running.next().await.is_some() {}
    }

    /// Serves one stream: its plan, then the answer or the relay.
    async fn stream(
        &self,
        request: http::Request<RecvStream>,
        mut respond: SendResponse<Bytes>,
        conn: Conn,
        edge: &[u8],
    ) {
        let began = Instant::now();
        let (parts, body) = request.into_parts();
        let more = !body.is_end_stream();
        let planned = match self.plan_h2(&parts, conn, edge, None) {
            Ok(Plan::Verify { user_agent, client, signed }) => {
                let known = match self.gateway.claim(&user_agent) {
                    Some(claim) => self.gateway.identity(&claim, client, signed.as_ref()).await,
                    None => Answers::default(),
                };
                self.plan_h2(&parts, conn, edge, Some(known))
            }
            planned => planned,
        };
        let plan = match planned {
            Ok(plan) => plan,
            Err(Refused(why)) => {
                let status = send_answer(&mut respond, &answer(400, why.as_bytes(), false));
                self.gateway.metrics.response(Route::OWN_HTTP2, status);
                self.gateway.metrics.took(Route::OWN_HTTP2, false, began);
                return;
            }
        };
        match plan {
            Plan::Answer { response, log, .. } => {
                let status = send_answer(&mut respond, &response);
                self.gateway.metrics.response(Route::OWN_HTTP2, status);
                let robots = log.is_none() && status != self.gateway.unknown_host_status;
                self.gateway.metrics.took(Route::OWN_HTTP2, robots, began);
                if let Some(log) = log {
                    log.write(status);
                }
            }
            Plan::Forward(f) => {
                let upload = match (more, f.body) {
                    (false, 0) => Upload::Empty,
                    (false, _) => {
                        // A declared body that never came: the h2 layer
                        // lets an END_STREAM head with a length through.
                        let status =
                            send_answer(&mut respond, &answer(400, b"robots-proxy: the body is missing\n", false));
                        self.gateway.metrics.response(Route::OWN_HTTP2, status);
                        self.gateway.metrics.took(Route::OWN_HTTP2, false, began);
                        return;
                    }
                    (true, _) if has_length(&parts.headers) => Upload::Length(f.body),
                    (true, _) => Upload::Chunked,
                };
                self.relay_h2(f, upload, body, respond).await;
                self.gateway.metrics.took(Route::OWN_HTTP2, false, began);
            }
            Plan::HandOver | Plan::Verify { .. } => {
                let status = send_answer(&mut respond, &answer(400, b"robots-proxy: malformed request\n", false));
                self.gateway.metrics.response(Route::OWN_HTTP2, status);
                self.gateway.metrics.took(Route::OWN_HTTP2, false, began);
            }
        }
    }

    /// The stream's request as the HTTP/1.1 head `decide` reads: the
    /// `:authority` as `Host`, split `cookie` fields joined (RFC 9113
    /// section 8.2.3), repeated `x-forwarded-for` fields joined as one list.
    fn plan_h2(
        &self,
        parts: &http::request::Parts,
        conn: Conn,
        edge: &[u8],
        known: Option<Answers>,
    ) -> Result<Plan, Refused> {
        let method = parts.method.as_str();
        let target = parts.uri.path_and_query().map_or("", |p| p.as_str());
        if parts.method == http::Method::CONNECT {
            return Err(Refused("robots-proxy: CONNECT is not relayed\n"));
        }
        if !target.starts_with('/') {
            return Err(Refused("robots-proxy: the :path must be a path\n"));
        }
        let authority = parts.uri.authority().map(|a| a.as_str());
        let cookie = joined(&parts.headers, http::header::COOKIE, b"; ");
        let forwarded_for = joined(&parts.headers, HeaderName::from_static("x-forwarded-for"), b", ");
        let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut n = 0;
        if let Some(a) = authority {
            fields[0] = httparse::Header { name: "host", value: a.as_bytes() };
            n = 1;
        }
        let (mut cookie_done, mut forwarded_done) = (false, false);
        for (name, value) in &parts.headers {
            let value = value.as_bytes();
            let value = if name == http::header::HOST {
                match authority {
                    Some(a) if !a.as_bytes().eq_ignore_ascii_case(value) => {
                        return Err(Refused("robots-proxy: Host differs from :authority\n"));
                    }
                    Some(_) => continue,
                    None => value,
                }
            } else if name == http::header::COOKIE && cookie.is_some() {
                if std::mem::replace(&mut cookie_done, true) {
                    continue;
                }
                cookie.as_deref().unwrap_or_default()
            } else if name.as_str() == "x-forwarded-for" && forwarded_for.is_some() {
                if std::mem::replace(&mut forwarded_done, true) {
                    continue;
                }
                forwarded_for.as_deref().unwrap_or_default()
            } else {
                value
            };
            let Some(slot) = fields.get_mut(n) else {
                return Err(Refused("robots-proxy: too many header fields\n"));
            };
            *slot = httparse::Header { name: name.as_str(), value };
            n += 1;
        }
        let req =
            httparse::Request { method: Some(method), path: Some(target), version: Some(1), headers: &mut fields[..n] };
        // An HTTP/2 connection ends with a GOAWAY, never with a request.
        self.decide(&req, false, conn, edge, known).ok_or(Refused("robots-proxy: malformed request\n"))
    }

    /// Relays one stream's request to the origin and the answer back.
    async fn relay_h2(&self, mut f: Forward, upload: Upload, body: RecvStream, mut respond: SendResponse<Bytes>) {
        if upload == Upload::Chunked {
            // The head ends in a blank line: the coding goes before it.
            f.head.truncate(f.head.len() - 2);
            f.head.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        }
        let mut timer = std::pin::pin!(tokio::time::sleep(self.gateway.origin_timeout));
        let mut wait = Wait {
            timer: timer.as_mut(),
            limit: self.gateway.origin_timeout,
            client_limit: self.gateway.client_timeout,
        };
        let status = match self.exchange_h2(&f, upload, body, &mut respond, &mut wait).await {
            Ok(status) => status,
            Err(Failure::Origin(status, why)) => {
                send_answer(&mut respond, &self.origin_failed(&f.site, status, &why, false))
            }
            Err(Failure::Stalled) => {
                send_answer(&mut respond, &answer(408, b"robots-proxy: request body stalled\n", false))
            }
            // A stream's body has no chunks to break.
            Err(Failure::Broken | Failure::BadBody) => {
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
                0
            }
        };
        self.gateway.metrics.response(Route::OWN_HTTP2, status);
        if let Some(log) = &f.log {
            log.write(status);
        }
    }

    /// Sends the request, then relays the response: its status.
    async fn exchange_h2(
        &self,
        f: &Forward,
        upload: Upload,
        mut body: RecvStream,
        respond: &mut SendResponse<Bytes>,
        wait: &mut Wait<'_>,
    ) -> Result<u16, Failure> {
        let addr = f.site.origin.addr().await.map_err(|e| Failure::Origin(502, e))?;
        let mut from_origin = BytesMut::with_capacity(CHUNK);
        let mut origin = self
            .ask(
                &f.site,
                addr,
                &f.head,
                &mut StreamBody { body: &mut body, upload, go_ahead: f.expects.then_some(&mut *respond) },
                f.idempotent,
                &mut from_origin,
                wait,
            )
            .await?;
        drop(body);
        let mut interim = false;
        loop {
            let Some(OriginHead { len, status, response, head }) = head_from_origin(f, &from_origin, addr)? else {
                more_head(&mut origin, &mut from_origin, wait, addr, interim).await?;
                continue;
            };
            let is_interim = (100..200).contains(&status);
            from_origin.advance(len);
            if is_interim {
                // Interim responses (103 Early Hints) go on; the final one follows.
                let mut head = head;
                *head.status_mut() = http::StatusCode::from_u16(status).map_err(|_| Failure::Broken)?;
                respond.send_informational(head).map_err(|_| Failure::Broken)?;
                interim = true;
                continue;
            }
            let origin_keeps = response.keep_alive;
            let done = response.body.is_done();
            let send = respond.send_response(head, done).map_err(|_| Failure::Broken)?;
            let clean = if done {
                from_origin.is_empty()
            } else {
                relay_data(&mut origin, send, from_origin, wait, response.body).await?
            };
            if origin_keeps && clean {
                f.site.upstream.put(addr, origin);
            }
            return Ok(status);
        }
    }
}

/// An origin's response head, read.
struct OriginHead {
    /// Its length in the bytes read.
    len: usize,
    status: u16,
    /// Its framing and what is relayed.
    response: Response,
    /// The head the client gets.
    head: http::Response<()>,
}

/// The origin's response head, if `from_origin` holds all of it. Not part
/// of the exchange's future: its field array (4 KiB) would be, and the
/// future is moved whole when a stream starts.
fn head_from_origin(
    f: &Forward,
    from_origin: &[u8],
    addr: std::net::SocketAddr,
) -> Result<Option<OriginHead>, Failure> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut resp = httparse::Response::new(&mut fields);
    let Some(len) = parse_head(&mut resp, from_origin, addr)? else {
        return Ok(None);
    };
    let (status, response) = Response::judge(&resp, f.head_only, addr)?;
    let usage = if (100..200).contains(&status) { None } else { f.site.content_usage.as_deref() };
    let head = response.head_h2(&resp, usage).map_err(|e| Failure::Origin(502, format!("{addr}: {e}")))?;
    Ok(Some(OriginHead { len, status, response, head }))
}

/// A stream's request body on its way to the origin.
struct StreamBody<'b> {
    body: &'b mut RecvStream,
    upload: Upload,
    /// The client sent `Expect: 100-continue`: it gets `100 Continue`
    /// here, once the origin has the head (`Expect` is not forwarded).
    go_ahead: Option<&'b mut SendResponse<Bytes>>,
}

impl super::RequestBody for StreamBody<'_> {
    fn is_empty(&self) -> bool {
        matches!(self.upload, Upload::Empty | Upload::Length(0))
    }

    async fn send(&mut self, origin: &mut OriginConn, wait: &mut Wait<'_>) -> Result<(), Failure> {
        if let Some(respond) = self.go_ahead.take() {
            let head = http::Response::builder().status(http::StatusCode::CONTINUE).body(());
            respond.send_informational(head.map_err(|_| Failure::Broken)?).map_err(|_| Failure::Broken)?;
        }
        let chunked = self.upload == Upload::Chunked;
        let mut framed = Vec::new();
        loop {
            // A body that pauses past the client limit holds a stream and
            // an origin connection: end both.
            let next = match tokio::time::timeout(wait.client_limit, self.body.data()).await {
                Ok(next) => next,
                Err(_) => return Err(Failure::Stalled),
            };
            let data = match next {
                Some(Ok(data)) => data,
                Some(Err(_)) => return Err(Failure::Broken),
                None => break,
            };
            let _ = self.body.flow_control().release_capacity(data.len());
            if data.is_empty() {
                continue;
            }
            if chunked {
                // One write a frame, not three.
                framed.clear();
                super::upload::push_chunk(&mut framed, &data);
                origin.write_all(&framed).await.map_err(|_| Failure::Broken)?;
            } else {
                origin.write_all(&data).await.map_err(|_| Failure::Broken)?;
            }
        }
        if chunked {
            origin.write_all(super::upload::LAST_CHUNK).await.map_err(|_| Failure::Broken)?;
        }
        Ok(())
    }
}

/// Relays the response body as DATA frames, within the client's flow
/// control: one read's worth is asked for and sent before the next read,
/// so a client that does not read holds at most that much here. Returns
/// whether the origin connection ended cleanly at the body's end.
async fn relay_data(
    origin: &mut OriginConn,
    mut send: SendStream<Bytes>,
    mut from_origin: BytesMut,
    wait: &mut Wait<'_>,
    mut body: Body,
) -> Result<bool, Failure> {
    let coded = matches!(body, Body::Chunked(_));
    let mut content = BytesMut::new();
    loop {
        let (n, end) = if coded {
            content.clear();
            body.take_with(&from_origin, |c| content.extend_from_slice(c)).map_err(|_| Failure::Broken)?
        } else {
            body.take(&from_origin).map_err(|_| Failure::Broken)?
        };
        let data = if coded {
            from_origin.advance(n);
            content.split().freeze()
        } else {
            from_origin.split_to(n).freeze()
        };
        send_data(&mut send, data, end, wait.client_limit.max(KEEPALIVE)).await?;
        if end {
            return Ok(from_origin.is_empty());
        }
        from_origin.clear();
        match read_more(origin, &mut from_origin, wait).await {
            Ok(0) if body == Body::UntilClose => {
                send_data(&mut send, Bytes::new(), true, KEEPALIVE).await?;
                return Ok(false);
            }
            Ok(0) | Err(_) => return Err(Failure::Broken),
            Ok(_) => {}
        }
    }
}

/// Sends `data` as the client's window allows, waiting at most `limit`
/// for each grant; `end` ends the stream with it.
async fn send_data(send: &mut SendStream<Bytes>, mut data: Bytes, end: bool, limit: Duration) -> Result<(), Failure> {
    // A body's last piece, no larger than one read: sent as it is; the
    // h2 layer keeps it until the window opens, as it would a granted piece.
    if end && data.len() <= CHUNK {
        return send.send_data(data, true).map_err(|_| Failure::Broken);
    }
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = tokio::time::timeout(limit, std::future::poll_fn(|cx| send.poll_capacity(cx))).await;
        let n = match granted {
            Ok(Some(Ok(n))) => n,
            _ => return Err(Failure::Broken),
        };
        if n == 0 {
            continue;
        }
        let piece = data.split_to(n.min(data.len()));
        send.send_data(piece, end && data.is_empty()).map_err(|_| Failure::Broken)?;
    }
    Ok(())
}

/// Answers a stream with a response the gateway wrote as HTTP/1.1 bytes
/// (the same bytes both paths build): its status, 0 when the stream was gone.
fn send_answer(respond: &mut SendResponse<Bytes>, response: &[u8]) -> u16 {
    let status = status_of(response);
    let mut fields = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut fields);
    let Ok(httparse::Status::Complete(len)) = parsed.parse(response) else { return 0 };
    let mut head = http::Response::new(());
    *head.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
    for f in parsed.headers.iter() {
        if super::hop_by_hop(f.name) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(f.name.as_bytes()), HeaderValue::from_bytes(f.value)) {
            head.headers_mut().append(name, value);
        }
    }
    let body = &response[len..];
    let Ok(mut send) = respond.send_response(head, body.is_empty()) else { return 0 };
    if !body.is_empty() && send.send_data(Bytes::copy_from_slice(body), true).is_err() {
        return 0;
    }
    status
}

/// The values of every `name` field joined with `sep`, when there are
/// several (one field stays where it is).
fn joined(headers: &http::HeaderMap, name: HeaderName, sep: &[u8]) -> Option<Vec<u8>> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    let mut second = values.next()?.as_bytes();
    let mut out = first.as_bytes().to_vec();
    loop {
        out.extend_from_slice(sep);
        out.extend_from_slice(second);
        match values.next() {
            Some(v) => second = v.as_bytes(),
            None => return Some(out),
        }
    }
}

/// The request declares its length.
fn has_length(headers: &http::HeaderMap) -> bool {
    headers.get(http::header::CONTENT_LENGTH).is_some_and(|v| content_length(v.as_bytes()).is_some())
}
