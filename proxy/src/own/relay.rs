//! Relaying one request to the site's origin and its response back on the
//! own path: a pooled keep-alive connection (retried once when a reused
//! one was stale and the request may be sent twice), the request body
//! passed through, and the response body relayed as its framing says.

use super::*;

impl Front {
    /// Relays one request to the origin and its response back. Returns
    /// whether the client connection stays open.
    pub(super) async fn relay(
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
        self.gateway.metrics.response(Route::OWN_HTTP1, status);
        if let Some(log) = &f.log {
            log.write(status);
        }
        keep
    }

    /// Sends the request and relays the response: the status and whether
    /// the client connection can carry another request.
    pub(super) async fn exchange(
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
pub(super) trait RequestBody {
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
    pub(super) async fn ask(
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
    pub(super) fn origin_failed(&self, site: &FrontedSite, status: u16, why: &str, close: bool) -> Vec<u8> {
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

/// Reads more of an incomplete response head. An origin that stops
/// before the head is whole fails with 502 (504 if it went silent), or
/// breaks the exchange once an interim response went to the client.
pub(super) async fn more_head(
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
pub(super) struct Wait<'t> {
    pub(super) timer: Pin<&'t mut Sleep>,
    pub(super) limit: Duration,
    /// How long the client's request body may pause.
    pub(super) client_limit: Duration,
}

/// Reads what the origin has next, appending to `into`; an origin silent
/// for `wait.limit` is a `TimedOut` error.
pub(super) async fn read_more(
    origin: &mut OriginConn,
    into: &mut BytesMut,
    wait: &mut Wait<'_>,
) -> std::io::Result<usize> {
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
pub(super) fn origin_error(addr: std::net::SocketAddr, e: &std::io::Error) -> Failure {
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
pub(super) async fn relay_body(
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
