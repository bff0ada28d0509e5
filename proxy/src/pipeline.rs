//! Pingora's full proxy pipeline, as `ProxyHttp` hooks over the shared
//! [`Gateway`]. It serves what the own path (`own`) hands over:
//! upgrades, other expectations and transfer codings, HTTP/1.0 without
//! `Host`, and anything unusual, with Pingora's own handling of each; and
//! every request with `fast_path: false` (HTTP/2, HTTP/1.0 and TLS origins
//! included). The hooks make the same decisions as the own path, through
//! the same `Gateway` methods.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};

use crate::gateway::{CRAWLER_FIELD, FrontedSite, Gateway, UNKNOWN_HOST_BODY, Visit};
use crate::http::framing::{absolute_form, content_length};
use crate::metrics::Route;
use crate::robots::store::State;

/// The pipeline's hooks.
#[derive(Debug)]
pub struct Pipeline(pub Arc<Gateway>);

/// Facts about one request, written early and read late.
#[derive(Debug, Default)]
pub struct RequestCtx {
    site: Option<Arc<FrontedSite>>,
    visit: Option<Visit>,
    /// When the request's head was in, the route it counts under, and
    /// whether it was robots.txt answered from the store.
    began: Option<(std::time::Instant, Route, bool)>,
}

fn header(session: &Session, name: http::header::HeaderName) -> Option<&str> {
    session.req_header().headers.get(name).and_then(|v| v.to_str().ok())
}

async fn respond(session: &mut Session, status: u16, body: Bytes) -> Result<()> {
    respond_with(session, status, &[], body).await
}

async fn respond_with(session: &mut Session, status: u16, headers: &[(String, String)], body: Bytes) -> Result<()> {
    let mut resp = ResponseHeader::build(status, Some(2 + headers.len()))?;
    for (name, value) in headers {
        resp.insert_header(name.clone(), value.as_str())?;
    }
    resp.insert_header("Content-Type", "text/plain; charset=utf-8")?;
    resp.insert_header("Content-Length", body.len().to_string())?;
    session.write_response_header(Box::new(resp), false).await?;
    session.write_response_body(Some(body), true).await?;
    Ok(())
}

/// An HTTP/2 request as the HTTP/1.1 the origin gets: `:path` must be
/// origin-form (or `*` for `OPTIONS`), since it becomes the request line;
/// a `Host` field must name the `:authority` (RFC 9113 section 8.3.1), and
/// when there is none, `:authority` becomes the `Host`. `false` refuses it.
/// (The h2 layer has already refused upper-case names, connection-specific
/// fields, CR, LF or NUL in values, and bodies that disagree with their
/// `content-length`; see `proxy/tests/h2.rs`.)
fn h2_target(session: &mut Session) -> Result<bool> {
    let req = session.req_header();
    let path = req.raw_path();
    if !(path.starts_with(b"/") || (path == b"*" && req.method == http::Method::OPTIONS)) {
        return Ok(false);
    }
    let Some(authority) = req.uri.authority().map(|a| a.as_str().to_string()) else { return Ok(true) };
    match header(session, http::header::HOST) {
        Some(host) => Ok(host.eq_ignore_ascii_case(&authority)),
        None => {
            session.req_header_mut().insert_header(http::header::HOST, authority)?;
            Ok(true)
        }
    }
}

/// Makes a request head safe to forward, as the own path does; `false`
/// when it must be refused (400).
///
/// - Field names with `_` are dropped (nginx's default): origins that map
///   fields to CGI-style variables would read `Content_Length` as
///   `Content-Length`.
/// - `Content-Length` goes on as one plain value. A repeated value (`5, 5`,
///   or two equal fields) is one value (RFC 9110 section 8.6); different
///   values were refused by Pingora already, and anything else is refused here.
/// - An absolute-form target names the host (RFC 9112 section 3.2.2): its
///   authority replaces `Host`, so a `Host` field cannot pick a laxer
///   site, and the origin gets the origin-form rest, judged as such.
/// - An HTTP/1.0 client gets no interim (1xx) response, which it could
///   take for the final one, and its `Expect` is ignored (RFC 9110
///   section 10.1.1).
fn tidy(session: &mut Session) -> Result<bool> {
    if session.req_header().version == http::Version::HTTP_2 {
        if !h2_target(session)? {
            return Ok(false);
        }
    } else if let Some((authority, path)) = absolute_form(session.req_header().raw_path()) {
        let authority = std::str::from_utf8(authority).map(str::to_string);
        let req = session.req_header_mut();
        let (Ok(authority), Ok(())) = (authority, req.set_raw_path(&path)) else { return Ok(false) };
        req.insert_header(http::header::HOST, authority)?;
    }
    let req = session.req_header();
    let underscored: Vec<http::HeaderName> = req.headers.keys().filter(|n| n.as_str().contains('_')).cloned().collect();
    // The own path's own check, field by field: every value must be one
    // plain length, all the same.
    let (mut length, mut fields, mut listed) = (None, 0, false);
    for value in req.headers.get_all(http::header::CONTENT_LENGTH) {
        match content_length(value.as_bytes()) {
            Some(n) if length.is_none_or(|l| l == n) => length = Some(n),
            _ => return Ok(false),
        }
        fields += 1;
        listed |= value.as_bytes().contains(&b',');
    }
    let rewrite = length.filter(|_| fields > 1 || listed);
    let old = req.version < http::Version::HTTP_11;
    let req = session.req_header_mut();
    for name in underscored {
        req.remove_header(&name);
    }
    if let Some(n) = rewrite {
        req.insert_header(http::header::CONTENT_LENGTH, n.to_string())?;
    }
    if old {
        req.remove_header(&http::header::EXPECT);
        if let pingora::protocols::http::ServerSession::H1(h1) = session.as_downstream_mut() {
            h1.set_ignore_info_resp(true);
        }
    }
    Ok(true)
}

impl Pipeline {
    /// Answers `/robots.txt` from the store; `false` lets it through to the origin.
    async fn serve_robots(&self, session: &mut Session, site: &FrontedSite) -> Result<bool> {
        let state = self.0.store.state(&site.name);
        let State::Serve(served) = &*state else { return Ok(false) };
        let head_only = session.req_header().method == http::Method::HEAD;
        let not_modified = header(session, http::header::IF_NONE_MATCH).is_some_and(|v| served.matches(v));
        served.served.inc();
        if not_modified {
            let mut head = served.head.clone();
            head.set_status(304)?;
            head.remove_header("Content-Length");
            head.insert_header("Content-Length", "0")?;
            session.write_response_header(Box::new(head), true).await?;
        } else {
            session.write_response_header_ref(&served.head, head_only).await?;
            if !head_only {
                session.write_response_body(Some(served.body.clone()), true).await?;
            }
        }
        Ok(true)
    }
}

#[async_trait]
impl ProxyHttp for Pipeline {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> Self::CTX {
        RequestCtx::default()
    }

    /// No modules: Pingora's default adds a response-compression module
    /// that is switched off yet still runs on every request. Pass-through
    /// means the origin's encoding is left as it is.
    fn init_downstream_modules(&self, _modules: &mut pingora::modules::http::HttpModules) {}

    async fn request_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<bool> {
        let route = if session.as_downstream().is_http2() { Route::PIPELINE_HTTP2 } else { Route::PIPELINE_HTTP1 };
        ctx.began = Some((std::time::Instant::now(), route, false));
        // The listeners went to a new process: each connection ends after
        // this answer (`Connection: close`), so its client reconnects to the
        // new one, rather than have Pingora drop it idle at shutdown under a
        // client about to reuse it.
        if crate::upgrade::upgrading() {
            session.set_keepalive(None);
        }
        if !tidy(session)? {
            respond(session, 400, Bytes::from_static(b"robots-proxy: malformed request head\n")).await?;
            return Ok(true);
        }
        // HTTP/2 names the host in `:authority` and may send no `Host`.
        let host = header(session, http::header::HOST).or_else(|| session.req_header().uri.host());
        let Some(site) = host.and_then(|h| self.0.site(h)).cloned() else {
            respond(session, self.0.unknown_host_status, Bytes::from_static(UNKNOWN_HOST_BODY)).await?;
            return Ok(true);
        };
        ctx.site = Some(Arc::clone(&site));
        let path = session.req_header().uri.path();
        let is_robots = path == "/robots.txt";
        if is_robots && matches!(session.req_header().method, http::Method::GET | http::Method::HEAD) {
            if self.0.ledger.is_some() {
                let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
                let headers = &session.req_header().headers;
                let forwarded: Vec<&str> =
                    headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
                let ua = header(session, http::header::USER_AGENT).unwrap_or("");
                let forwarded = (!forwarded.is_empty()).then(|| forwarded.join(","));
                self.0.count_fetch(&site, ua, peer, forwarded.as_deref());
            }
            ctx.began = ctx.began.map(|(at, route, _)| (at, route, true));
            return self.serve_robots(session, &site).await;
        }
        if is_robots {
            return Ok(false);
        }
        // Only the gateway writes this field; a client's copy would be a
        // forged verification.
        session.req_header_mut().remove_header(CRAWLER_FIELD);
        let ua = header(session, http::header::USER_AGENT).unwrap_or("");
        let Some(claim) = self.0.claim(ua) else { return Ok(false) };
        let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
        let forwarded: Vec<&str> =
            session.req_header().headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
        let client = self.0.client(peer, (!forwarded.is_empty()).then(|| forwarded.join(",")).as_deref());
        let req = session.req_header();
        let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
        let target = req.uri.path_and_query().map_or("/", |p| p.as_str());
        let fields = req.headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes()));
        let signed = self.0.signed(tls, req.method.as_str(), target, fields);
        let answers = match self.0.identity_now(&claim, client, signed.as_ref()) {
            Ok(answers) => answers,
            Err(_) => self.0.identity(&claim, client, signed.as_ref()).await,
        };
        let visit = self.0.visit(&site, &claim, &answers, client, session.req_header().raw_path());
        let refusal = visit.refusal.clone();
        ctx.visit = Some(visit);
        if let Some(r) = refusal {
            respond_with(session, r.status, &r.headers, Bytes::from(r.body)).await?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The site's AI policy adds its `Content-Usage` header unless the
    /// origin sent one.
    /// An HTTP/1.0 client gets no chunked answer (RFC 9112 section 6.1):
    /// without the coding's field Pingora writes the content as it
    /// decodes it, ended by the close, as the own path does.
    async fn response_filter(
        &self,
        session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        if session.req_header().version < http::Version::HTTP_11
            && upstream_response.headers.contains_key(http::header::TRANSFER_ENCODING)
        {
            upstream_response.remove_header(&http::header::TRANSFER_ENCODING);
            upstream_response.insert_header(http::header::CONNECTION, "close")?;
        }
        if let Some(usage) = ctx.site.as_ref().and_then(|s| s.content_usage.as_deref())
            && upstream_response.headers.get("content-usage").is_none()
            && upstream_response.status.as_u16() >= 200
        {
            upstream_response.insert_header("Content-Usage", usage)?;
        }
        Ok(())
    }

    /// The verification answer goes to the origin in `Robotsgate-Crawler`.
    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut pingora::http::RequestHeader,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        if let Some(value) = ctx.visit.as_ref().and_then(Visit::field) {
            upstream_request.insert_header(CRAWLER_FIELD, value)?;
        }
        if ctx.site.as_ref().is_some_and(|s| s.proxy.forwarded_headers) {
            let mut sent = crate::http::forwarded::Sent::default();
            for name in crate::http::forwarded::FIELDS {
                for value in upstream_request.headers.get_all(name) {
                    sent.add(name, value.as_bytes());
                }
                upstream_request.remove_header(name);
            }
            let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
            let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
            let trusted = peer.is_some_and(|p| self.0.trusted.contains(p));
            for (name, value) in crate::http::forwarded::fields(peer, trusted, tls, &sent) {
                upstream_request.insert_header(name, value)?;
            }
        }
        Ok(())
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Self::CTX) -> Result<Box<HttpPeer>> {
        let Some(site) = &ctx.site else {
            return Err(Error::explain(ErrorType::HTTPStatus(421), "no site for this host"));
        };
        let addr = match site.origin.addr().await {
            Ok(addr) => addr,
            Err(e) => {
                tracing::warn!(site = %site.name, error = %e, "cannot proxy");
                return Err(Error::explain(ErrorType::HTTPStatus(502), e));
            }
        };
        let sni = site.proxy.sni.clone().unwrap_or_else(|| site.proxy.hosts[0].clone());
        let mut peer = HttpPeer::new(addr, site.proxy.origin_tls, sni);
        peer.options.connection_timeout = Some(crate::http::upstream::CONNECT_TIMEOUT);
        peer.options.read_timeout = Some(self.0.origin_timeout);
        Ok(Box::new(peer))
    }

    /// Pingora's default answers 502 to every origin failure; an origin
    /// that did not answer in time gets 504, as on the own path.
    async fn fail_to_proxy(&self, session: &mut Session, e: &pingora::Error, ctx: &mut Self::CTX) -> FailToProxy {
        use pingora::ErrorSource;
        let code = match (e.etype(), e.esource()) {
            (ErrorType::HTTPStatus(code), _) => *code,
            (ErrorType::ReadTimedout | ErrorType::ConnectTimedout, ErrorSource::Upstream) => 504,
            (_, ErrorSource::Upstream) => 502,
            // The client's connection is gone: nobody to answer.
            (ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed, ErrorSource::Downstream) => 0,
            (_, ErrorSource::Downstream) => 400,
            _ => 500,
        };
        if let (502 | 504, Some(site)) = (code, &ctx.site) {
            self.0.metrics.origin_failures.with_label_values(&[&site.name, &code.to_string()]).inc();
        }
        if code > 0 {
            let _ = session.respond_error(code).await;
        }
        FailToProxy { error_code: code, can_reuse_downstream: false }
    }

    async fn logging(&self, session: &mut Session, _e: Option<&pingora::Error>, ctx: &mut Self::CTX) {
        let status = session.response_written().map_or(0, |r| r.status.as_u16());
        let route = match ctx.began {
            Some((_, route, _)) => route,
            None if session.as_downstream().is_http2() => Route::PIPELINE_HTTP2,
            None => Route::PIPELINE_HTTP1,
        };
        self.0.metrics.response(route, status);
        if let Some((began, route, robots)) = ctx.began {
            self.0.metrics.took(route, robots, began);
        }
        let (Some(site), Some(visit)) = (&ctx.site, &ctx.visit) else { return };
        let req = session.req_header();
        let target = req.uri.path_and_query().map_or("/", |p| p.as_str());
        Gateway::log_visit(site, visit, req.method.as_str(), target, status);
        self.0.count_visit(site, visit, req.raw_path());
    }
}
