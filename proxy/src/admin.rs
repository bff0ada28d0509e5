//! The admin listener (localhost by default): `/healthz` and `/metrics` for
//! anyone who can reach it; with the admin token, as
//! `Authorization: Bearer <token>`, `/status` (per-site robots.txt source,
//! age, last origin status, lint summary, the change the gate holds),
//! `POST /refresh` (refetch every origin's robots.txt now) and
//! `POST /release?site=NAME[&outcome=KEY]` (let the change the gate holds
//! through: on this gateway at once, and, with a database, on every
//! gateway of the fleet at its next refresh).

use std::sync::Arc;

use async_trait::async_trait;
use http::Response;
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use serde_json::json;

use crate::crawlers::ledger::Ledger;
use crate::identity::Identity;
use crate::metrics::Metrics;
use crate::robots::store::{RobotsStore, State};

/// The admin app.
#[derive(Debug)]
pub struct Admin {
    /// robots.txt per site.
    pub store: Arc<RobotsStore>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// The token `/status` and `/refresh` require; `None` disables them.
    pub token: Option<String>,
    /// Wakes the refresher.
    pub refresh_now: Arc<tokio::sync::Notify>,
    /// Crawler verification, whose feeds `/status` and `/metrics` show.
    pub identity: Option<Arc<Identity>>,
    /// The compliance ledger, whose counts `/status` shows.
    pub ledger: Option<Arc<Ledger>>,
    /// The fleet's database, where a release is recorded for every gateway.
    pub shared: Option<Arc<crate::robots::shared::Shared>>,
    /// Each site's `proxy.hosts`, for `/status` to say which copy each
    /// host is served.
    pub hosts: std::collections::BTreeMap<String, Vec<String>>,
    /// Each site's crawl budgets, as the request paths hold them, for `/status`.
    pub budgets: std::collections::BTreeMap<String, Arc<crate::crawlers::budget::Budgets>>,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn reply(status: u16, content_type: &str, body: String) -> Response<Vec<u8>> {
    let body = body.into_bytes();
    Response::builder()
        .status(status)
        .header("Content-Type", content_type)
        .header("Content-Length", body.len())
        .body(body)
        .unwrap_or_else(|_| Response::new(Vec::new()))
}

impl Admin {
    /// `/healthz`: ready, and whether every site has a copy to serve. A
    /// site with none passes its origin's answers through unjudged; with
    /// `?require=copy` that is a 503, for a readiness probe that wants
    /// enforcement from the first answer.
    fn healthz(&self, require_copy: bool) -> Response<Vec<u8>> {
        let mut bare: Vec<&str> =
            self.store.sites().filter(|s| matches!(*self.store.state(s), State::Unknown)).collect();
        bare.sort_unstable();
        if bare.is_empty() {
            return reply(200, "text/plain", "ok: ready, with a copy for every site\n".into());
        }
        let body = format!(
            "ok: ready, nothing to serve yet for {}: robots.txt and every request pass to the origin unjudged until a copy arrives\n",
            bare.join(", ")
        );
        reply(if require_copy { 503 } else { 200 }, "text/plain", body)
    }

    /// A site's crawl budgets: each with the site's rate and burst and this
    /// gateway's share of them (1/N of N gateways alive on the database),
    /// those from the served file's `Crawl-delay` marked, and the 429s
    /// they answered.
    fn budgets_json(&self, site: &str) -> serde_json::Value {
        let Some(budgets) = self.budgets.get(site).filter(|b| !b.is_empty()) else {
            return serde_json::Value::Null;
        };
        let mut throttled = 0u64;
        for family in prometheus::core::Collector::collect(&self.metrics.throttled) {
            for m in family.get_metric() {
                if m.get_label().iter().any(|l| l.name() == "site" && l.value() == site) {
                    throttled += m.get_counter().get_value() as u64;
                }
            }
        }
        let each: Vec<_> = budgets
            .shown()
            .into_iter()
            .map(|b| {
                json!({ "budget": b.budget, "rate": b.rate, "burst": b.burst, "share": b.share, "crawl_delay": b.crawl_delay })
            })
            .collect();
        let share = budgets.share();
        json!({ "each": each, "share": share, "gateways": (1.0 / share).round() as u64, "throttled": throttled })
    }

    fn status_json(&self) -> String {
        let mut sites: Vec<&str> = self.store.sites().collect();
        sites.sort_unstable();
        let list: Vec<_> = sites
            .iter()
            .map(|name| {
                let health = self.store.health(name);
                let state = self.store.state(name);
                let (source, age, cut) = match &*state {
                    State::Serve(s) => (s.source.as_str(), Some(s.age().as_secs()), s.cut),
                    State::NoFile(_) => ("origin-no-file", None, None),
                    State::Unknown => ("pass-through", None, None),
                };
                // What crawlers read when the managed groups did not fit
                // beside the whole origin file.
                let cut = cut.map(|c| {
                    json!({
                        "from_line": c.from_line,
                        "bytes": c.bytes,
                        "why": format!("the managed groups would pass 500 KiB: the origin's lines from {} on are not served, so that Google reads the policy", c.from_line),
                    })
                });
                // Every host of a site is served the one copy: said per
                // host, so that whoever checks a host variant sees which.
                let copy = match &*state {
                    State::Serve(s) => json!({ "etag": s.etag, "source": source, "bytes": s.body.len() }),
                    State::NoFile(status) => json!({ "source": source, "status": status }),
                    State::Unknown => json!({ "source": source }),
                };
                let hosts: Vec<_> = self
                    .hosts
                    .get(*name)
                    .into_iter()
                    .flatten()
                    .map(|h| json!({ "host": h, "copy": copy }))
                    .collect();
                json!({
                    "site": name,
                    "source": source,
                    "hosts": hosts,
                    "age_secs": age,
                    "last_origin_status": health.last_status,
                    "last_origin_error": health.last_error,
                    "last_fetch": health.last_fetch,
                    "lint": { "errors": health.lint.0, "warnings": health.lint.1 },
                    "managed_groups_contested_by_origin": health.contested,
                    "unenforceable_groups": health.unenforceable,
                    "ai_policy_conflicts": health.ai_conflicts,
                    "origin_cut": cut,
                    "held": health.held.as_ref().map(|h| h.json()),
                    "budgets": self.budgets_json(name),
                    "would_have_held": health.would_hold.as_ref().map(|h| h.json()),
                    "pass_through": matches!(&*state, State::Unknown).then_some(
                        "no copy on disk, in the database or from the origin yet: robots.txt and every request pass to the origin unjudged"
                    ),
                })
            })
            .collect();
        let identity = self.identity.as_ref().map(|id| {
            let now = now_secs();
            let feeds: Vec<_> = id
                .feed_status()
                .into_iter()
                .map(|f| {
                    json!({
                        "source": f.source,
                        "prefixes": f.prefixes,
                        "age_secs": f.fetched_at.map(|t| now.saturating_sub(t)),
                        "last_error": f.last_error,
                    })
                })
                .collect();
            let directories: Vec<_> = id
                .directory_status()
                .into_iter()
                .map(|f| {
                    json!({
                        "source": f.source,
                        "keys": f.prefixes,
                        "age_secs": f.fetched_at.map(|t| now.saturating_sub(t)),
                        "last_error": f.last_error,
                    })
                })
                .collect();
            json!({ "feeds": feeds, "key_directories": directories, "reverse_dns": id.dns.is_some() })
        });
        let ledger = self.ledger.as_ref().map(|l| l.status());
        json!({ "sites": list, "identity": identity, "ledger": ledger }).to_string()
    }
}

#[async_trait]
impl ServeHttp for Admin {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let path = session.req_header().uri.path().to_string();
        match path.as_str() {
            "/healthz" => {
                let query = session.req_header().uri.query().unwrap_or("");
                self.healthz(query.split('&').any(|p| p == "require=copy"))
            }
            "/metrics" => {
                if let Some(id) = &self.identity {
                    self.metrics.set_feeds(&id.feed_status(), now_secs());
                    self.metrics.set_feeds(&id.directory_status(), now_secs());
                }
                reply(200, "text/plain; version=0.0.4", self.metrics.render())
            }
            "/status" | "/refresh" | "/release" => {
                let given = session
                    .req_header()
                    .headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    // The scheme in any case (RFC 9110 section 11.1).
                    .and_then(|v| v.trim().split_once(' '))
                    .and_then(|(scheme, token)| scheme.eq_ignore_ascii_case("Bearer").then(|| token.trim()));
                let is_post = session.req_header().method == http::Method::POST;
                match (&self.token, given) {
                    (None, _) => reply(403, "text/plain", "no admin token is configured\n".into()),
                    (Some(t), Some(g)) if robotsgate_config::same_token(t, g) => match path.as_str() {
                        "/status" => reply(200, "application/json", self.status_json()),
                        "/release" if is_post => self.release(session.req_header().uri.query().unwrap_or("")).await,
                        "/refresh" if is_post => {
                            self.refresh_now.notify_one();
                            reply(202, "text/plain", "refresh started\n".into())
                        }
                        _ => reply(405, "text/plain", "use POST\n".into()),
                    },
                    _ => reply(401, "text/plain", "admin token required\n".into()),
                }
            }
            _ => reply(404, "text/plain", "not found\n".into()),
        }
    }
}

impl Admin {
    /// `POST /release?site=NAME[&outcome=KEY]`: releases the named outcome,
    /// or the change the site's gate holds now, and refreshes at once.
    async fn release(&self, query: &str) -> Response<Vec<u8>> {
        let param = |name: &str| {
            url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
        };
        let Some(site) = param("site") else {
            return reply(400, "text/plain", "give the site: POST /release?site=NAME[&outcome=KEY]\n".into());
        };
        if !self.store.sites().any(|s| s == site) {
            return reply(404, "text/plain", format!("no site `{site}` is fronted here\n"));
        }
        let held = self.store.health(&site).held.as_ref().map(|h| h.key.clone());
        let Some(key) = param("outcome").or(held) else {
            return reply(
                409,
                "text/plain",
                format!("nothing is held for `{site}`; name the outcome to release it ahead\n"),
            );
        };
        self.store.release(&site, &key);
        let fleet = match &self.shared {
            Some(shared) => match shared.release(&site, Some(&key), "robots-proxy admin API").await {
                Ok(_) => "recorded in the database for every gateway".to_string(),
                Err(e) => format!("released on this gateway only: {e}"),
            },
            None => "released on this gateway (no database: release it on each gateway)".to_string(),
        };
        self.refresh_now.notify_one();
        let body = json!({ "site": site, "released": key, "fleet": fleet, "refresh": "started" });
        reply(202, "application/json", body.to_string())
    }
}
