//! Deciding what to do with one request head on the own path: answer it
//! here (`/robots.txt` from the store, a refusal, an unknown host), relay it to
//! the site's origin, ask reverse DNS first, or hand the connection to
//! Pingora's pipeline.

use super::*;

/// What to do with one request, decided from its head.
pub(super) enum Plan {
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

/// A request on its way to the origin.
pub(super) struct Forward {
    pub(super) site: Arc<FrontedSite>,
    /// The request head as the origin gets it.
    pub(super) head: Vec<u8>,
    /// Request body bytes after the head (`Content-Length`).
    pub(super) body: u64,
    /// The body is chunked (`Transfer-Encoding: chunked`, no length).
    pub(super) chunked: bool,
    /// The client sent `Expect: 100-continue`: it may wait for `100
    /// Continue` before it sends its body.
    pub(super) expects: bool,
    /// An HTTP/1.0 client: no 1xx responses (RFC 9110 section 15.2), no
    /// chunked ones (a chunked body is sent decoded, ended by the close),
    /// and the connection closes after its one response.
    pub(super) old: bool,
    /// A HEAD request: the response has no body, whatever it declares.
    pub(super) head_only: bool,
    /// Sending it twice means the same as once (RFC 9110 section 9.2.2).
    pub(super) idempotent: bool,
    /// The client is done after this response.
    pub(super) close: bool,
    pub(super) log: Option<Logged>,
}

/// A crawler's request, logged once its status is known.
pub(super) struct Logged {
    pub(super) gateway: Arc<Gateway>,
    pub(super) site: Arc<FrontedSite>,
    pub(super) visit: Visit,
    pub(super) method: String,
    pub(super) target: String,
}

impl Logged {
    pub(super) fn write(&self, status: u16) {
        Gateway::log_visit(&self.site, &self.visit, &self.method, &self.target, status);
        self.gateway.count_visit(&self.site, &self.visit, self.target.as_bytes());
    }
}

impl Front {
    /// Reads a request head from `buf`: `None` while it is incomplete,
    /// else the plan and the head's length. `known` is verification's
    /// answer for this head's claim, once asked.
    pub(super) fn plan(
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
        if !self.own {
            return Some((Plan::HandOver, 0));
        }
        Some((self.decide(&req, closing, conn, edge, known).unwrap_or(Plan::HandOver), len))
    }

    /// The plan for a parsed request; `None` hands it over.
    pub(super) fn decide(
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
        let mut sent = crate::http::forwarded::Sent::default();
        for f in req.headers.iter() {
            if forwarded && crate::http::forwarded::is_forwarded_field(f.name) {
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
                for (name, value) in crate::http::forwarded::fields(conn.peer, true, conn.tls, &sent) {
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
    pub(super) fn robots(
        &self,
        site: &FrontedSite,
        if_none_match: Option<&str>,
        head_only: bool,
        close: bool,
    ) -> Option<Vec<u8>> {
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
}
