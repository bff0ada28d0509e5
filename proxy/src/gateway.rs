//! The gateway: Pingora's `ProxyHttp`, its hooks in the order a request
//! meets them. `request_filter` owns `/robots.txt` and enforcement and
//! answers them itself; everything else goes to the site's origin
//! unchanged. The proxy parses nothing itself: verdicts come from `rules`.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use pingora::proxy::{ProxyHttp, Session};
use robotsgate_config::SiteProxy;
use serde_json::json;

use crate::crawler::Crawlers;
use crate::metrics::Metrics;
use crate::origin::Origin;
use crate::store::{RobotsStore, State};

/// A site the gateway fronts.
#[derive(Debug)]
pub struct FrontedSite {
    /// Its name.
    pub name: String,
    /// How it is fronted.
    pub proxy: SiteProxy,
    /// Where proxied requests go.
    pub origin: Origin,
}

/// Shared state, for the life of the process.
#[derive(Debug)]
pub struct Gateway {
    /// Host (lower case, no port) to site.
    pub hosts: HashMap<String, Arc<FrontedSite>>,
    /// robots.txt per site.
    pub store: Arc<RobotsStore>,
    /// Crawler recognition.
    pub crawlers: Crawlers,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Status for unknown hosts.
    pub unknown_host_status: u16,
}

/// Facts about one request, written early and read late.
#[derive(Debug, Default)]
pub struct RequestCtx {
    site: Option<Arc<FrontedSite>>,
    crawler: Option<String>,
    verdict: Option<(bool, Option<u32>)>,
}

impl Gateway {
    fn site_for(&self, session: &Session) -> Option<Arc<FrontedSite>> {
        let req = session.req_header();
        let host = req.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).or_else(|| req.uri.host())?;
        let host = host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host });
        self.hosts.get(&host.to_ascii_lowercase()).cloned()
    }

    async fn respond(
        session: &mut Session,
        status: u16,
        headers: &[(&str, String)],
        body: Bytes,
        head_only: bool,
    ) -> Result<()> {
        let mut resp = ResponseHeader::build(status, Some(headers.len() + 1))?;
        for (k, v) in headers {
            resp.insert_header(k.to_string(), v.as_str())?;
        }
        resp.insert_header("Content-Length", body.len().to_string())?;
        session.write_response_header(Box::new(resp), head_only).await?;
        if !head_only {
            session.write_response_body(Some(body), true).await?;
        }
        Ok(())
    }

    /// Answers `/robots.txt` from the store; `false` lets it through to the origin.
    async fn serve_robots(&self, session: &mut Session, site: &FrontedSite) -> Result<bool> {
        let state = self.store.state(&site.name);
        let State::Serve(served) = &*state else { return Ok(false) };
        let head_only = session.req_header().method == http::Method::HEAD;
        let not_modified = session
            .req_header()
            .headers
            .get(http::header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == served.etag));
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
impl ProxyHttp for Gateway {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> Self::CTX {
        RequestCtx::default()
    }

    /// No modules: Pingora's default adds a response-compression module
    /// that is switched off yet still runs on every request. Pass-through
    /// means the origin's encoding is left as it is.
    fn init_downstream_modules(&self, _modules: &mut pingora::modules::http::HttpModules) {}

    async fn request_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<bool> {
        let Some(site) = self.site_for(session) else {
            let body = Bytes::from_static(b"robots-proxy: no site is configured for this host\n");
            let headers = [("Content-Type", "text/plain; charset=utf-8".to_string())];
            Self::respond(session, self.unknown_host_status, &headers, body, false).await?;
            return Ok(true);
        };
        ctx.site = Some(Arc::clone(&site));
        let path = session.req_header().uri.path();
        let is_robots = path == "/robots.txt";
        if is_robots && matches!(session.req_header().method, http::Method::GET | http::Method::HEAD) {
            return self.serve_robots(session, &site).await;
        }
        if is_robots {
            return Ok(false);
        }
        let ua = session.req_header().headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        let Some(crawler) = self.crawlers.identify(ua) else { return Ok(false) };
        let target = session.req_header().uri.path_and_query().map_or("/", |p| p.as_str());
        let state = self.store.state(&site.name);
        let (allowed, line) = match &*state {
            State::Serve(served) => {
                let v = served.robots.crawler(crawler).check(target);
                (v.allowed, v.rule.map(|r| r.line))
            }
            // No file (4xx) or no good copy yet: nothing restricts crawling.
            State::NoFile(_) | State::Unknown => (true, None),
        };
        ctx.crawler = Some(crawler.to_string());
        ctx.verdict = Some((allowed, line));
        self.metrics.crawler_requests.with_label_values(&[crawler, if allowed { "allow" } else { "disallow" }]).inc();
        if !allowed && site.proxy.enforce {
            self.metrics.enforced.with_label_values(&[&site.name, crawler]).inc();
            let body = Bytes::from(format!("robots.txt of this site disallows this URL for {crawler}\n"));
            let headers = [("Content-Type", "text/plain; charset=utf-8".to_string())];
            Self::respond(session, 403, &headers, body, false).await?;
            return Ok(true);
        }
        Ok(false)
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
        Ok(Box::new(HttpPeer::new(addr, site.proxy.origin_tls, sni)))
    }

    async fn logging(&self, session: &mut Session, _e: Option<&pingora::Error>, ctx: &mut Self::CTX) {
        let (Some(crawler), Some((allowed, line))) = (&ctx.crawler, ctx.verdict) else { return };
        let status = session.response_written().map_or(0, |r| r.status.as_u16());
        let req = session.req_header();
        let line = json!({
            "site": ctx.site.as_ref().map(|s| s.name.as_str()),
            "crawler": crawler,
            "method": req.method.as_str(),
            "url": req.uri.path_and_query().map_or("/", |p| p.as_str()),
            "verdict": if allowed { "allow" } else { "disallow" },
            "line": line,
            "status": status,
        });
        println!("{line}");
    }
}
