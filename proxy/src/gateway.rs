//! The gateway's decisions, shared by both request paths: which site a
//! Host names, what `/robots.txt` is answered with, and what a crawler's
//! request is judged. The own path (`own`, HTTP/1.1 and HTTP/2) and Pingora's
//! pipeline (`pipeline`) both call these, so they cannot disagree. The proxy
//! parses no robots.txt itself: verdicts come from `rules`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use robotsgate_config::{SiteProxy, Spoofed};
use robotsgate_crawlers::Crawler;
use rules::normal::Slashes;

use crate::crawlers::ai::Refusal;
use crate::crawlers::claim::Crawlers;
use crate::crawlers::ledger::Ledger;
use crate::http::upstream::Upstream;
use crate::identity::prefixes::Prefixes;
use crate::identity::signed::Signed;
use crate::identity::{Answer, Identity};
use crate::metrics::Metrics;
use crate::origin::Origin;
use crate::robots::store::{RobotsStore, State};

/// A site the gateway fronts.
#[derive(Debug)]
pub struct FrontedSite {
    /// Its name.
    pub name: String,
    /// How it is fronted.
    pub proxy: SiteProxy,
    /// Where proxied requests go.
    pub origin: Origin,
    /// Idle keep-alive connections to its origin, plain or TLS (own path only).
    pub upstream: Upstream,
    /// The `Content-Usage` header its AI policy adds to proxied responses
    /// that carry none of their own.
    pub content_usage: Option<String>,
    /// Its crawl budgets, kept in shape by `crawlers::reshape`.
    pub budgets: Arc<crate::crawlers::budget::Budgets>,
}

impl FrontedSite {
    /// A site as configured.
    pub fn new(name: &str, proxy: SiteProxy) -> FrontedSite {
        let content_usage = proxy.ai_policy.as_ref().map(|p| crate::crawlers::ai::policy(p).usage_value());
        let budgets = Arc::new(crate::crawlers::budget::Budgets::new(&proxy.budgets, 1.0));
        FrontedSite {
            name: name.to_string(),
            origin: Origin::new(&proxy.origin),
            proxy,
            upstream: Upstream::default(),
            content_usage,
            budgets,
        }
    }
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
    /// Crawler verification (`proxy.identity`); `None` believes every claim.
    pub identity: Option<Arc<Identity>>,
    /// Peers whose `X-Forwarded-For` names the client
    /// (`proxy.identity.trusted_proxies`).
    pub trusted: Prefixes,
    /// Trusted peers open each plain connection with a PROXY protocol
    /// header (`proxy.identity.proxy_protocol`).
    pub proxy_protocol: bool,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Status for unknown hosts.
    pub unknown_host_status: u16,
    /// How long a proxied request waits on the origin (`proxy.origin_timeout`).
    pub origin_timeout: std::time::Duration,
    /// How long a request head may take, and a request body pause
    /// (`proxy.client_timeout`).
    pub client_timeout: std::time::Duration,
    /// The compliance ledger (`proxy.ledger`); `None` keeps none.
    pub ledger: Option<Arc<Ledger>>,
}

/// The body sent to a Host no site is configured for.
pub const UNKNOWN_HOST_BODY: &[u8] = b"robots-proxy: no site is configured for this host\n";

/// The field the origin gets on a crawler's request when verification is
/// on: `TOKEN; identity=ANSWER`. Clients' own copies are always dropped.
pub const CRAWLER_FIELD: &str = "robotsgate-crawler";

/// The token a request is judged as when its claim to be a crawler is
/// spoofed and the site tags it: no group names it, so the `*` group
/// decides, as for any anonymous client.
const ANONYMOUS: &str = "robotsgate-unverified";

/// A request's claim to be a crawler.
#[derive(Clone, Debug)]
pub struct Claim<'g> {
    /// The crawler claimed.
    pub crawler: &'g Crawler,
    /// The User-Agent word that claims it, as the catalogue spells it.
    pub word: &'g str,
    /// Every other crawler the same User-Agent names, with its word. A
    /// real crawler names one; a request that names more is judged by the
    /// strictest of its claims ([`Gateway::visit`]).
    pub others: Vec<(&'g Crawler, &'g str)>,
}

impl<'g> Claim<'g> {
    /// Every crawler claimed and its word, the first first.
    pub fn each(&self) -> impl Iterator<Item = (&'g Crawler, &'g str)> + '_ {
        std::iter::once((self.crawler, self.word)).chain(self.others.iter().copied())
    }
}

/// Verification's answers for a claim: one per crawler it names, in the
/// order of [`Claim::each`]. `None`s with verification off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answers {
    /// The first claim's answer.
    pub first: Option<Answer>,
    /// The other claims' answers.
    pub others: Vec<Option<Answer>>,
}

impl Answers {
    fn get(&self, i: usize) -> Option<Answer> {
        if i == 0 { self.first } else { self.others.get(i - 1).copied().flatten() }
    }
}

/// Reverse DNS must be asked before this claim can be answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeedsDns;

/// A declared crawler's request and what the site's robots.txt says of it.
#[derive(Debug, Clone)]
pub struct Visit {
    /// The crawler's product token, as the crawler list spells it.
    pub crawler: String,
    /// What verification answered; `None` with verification off, or no
    /// client address.
    pub identity: Option<Answer>,
    /// Every crawler the User-Agent named, when it named more than one:
    /// the request was judged by the strictest of them (`crawler`).
    pub claims: Vec<String>,
    /// The robots.txt state it was judged against (its ETag is the log's
    /// `revision`); shared, not copied.
    pub state: Arc<State>,
    /// The client address verification judged.
    pub client: Option<IpAddr>,
    /// The verdict.
    pub allowed: bool,
    /// The deciding line, if a rule decided.
    pub line: Option<u32>,
    /// What the gateway answers instead of proxying, if it refuses the
    /// request: 403 for robots.txt or a spoofed claim, or what the site's
    /// AI policy enforcement says (403, 402, 429).
    pub refusal: Option<Refusal>,
    /// The refusal is a crawl budget's 429: the ledger records the request
    /// as throttled (a disallowed one stays a violation).
    pub throttled: bool,
}

impl Visit {
    /// The field value the origin gets: `TOKEN; identity=ANSWER`, with
    /// verification on.
    pub fn field(&self) -> Option<String> {
        self.identity.map(|a| format!("{}; identity={}", self.crawler, a.as_str()))
    }
}

impl Gateway {
    /// The site a `Host` header value names; a port is ignored, and so is case.
    pub fn site(&self, host: &str) -> Option<&Arc<FrontedSite>> {
        let host = host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host });
        if host.bytes().any(|b| b.is_ascii_uppercase()) {
            self.hosts.get(&host.to_ascii_lowercase())
        } else {
            self.hosts.get(host)
        }
    }

    /// The crawler a User-Agent claims to be, if any, with every other
    /// crawler it names.
    pub fn claim(&self, user_agent: &str) -> Option<Claim<'_>> {
        let claims = self.crawlers.catalogue().claims(user_agent);
        claims.first.map(|(crawler, word)| Claim { crawler, word, others: claims.others })
    }

    /// The client's address: the peer's, or, when the peer is a trusted
    /// proxy, the last address in `X-Forwarded-For` that is not one (the
    /// addresses before it were written by the client, and prove nothing).
    pub fn client(&self, peer: Option<IpAddr>, forwarded_for: Option<&str>) -> Option<IpAddr> {
        let mut client = peer?;
        if !self.trusted.contains(client) {
            return Some(client);
        }
        for hop in forwarded_for.unwrap_or("").rsplit(',') {
            let hop = hop.trim();
            let hop = hop.strip_prefix('[').and_then(|h| h.split_once(']')).map_or(hop, |(h, _)| h);
            let Ok(ip) = hop.parse::<IpAddr>() else { break };
            client = ip;
            if !self.trusted.contains(ip) {
                break;
            }
        }
        Some(client)
    }

    /// The Web Bot Auth parts of a crawler's request (`None` unsigned),
    /// counted by the form of its `Signature-Agent`: both request paths
    /// read a signature here.
    pub fn signed<'a>(
        &self,
        tls: bool,
        method: &str,
        target: &str,
        fields: impl Iterator<Item = (&'a str, &'a [u8])>,
    ) -> Option<Signed> {
        let signed = Signed::from_request(tls, method, target, fields)?;
        self.metrics.signature_agent.with_label_values(&[signed.agent_form()]).inc();
        Some(signed)
    }

    /// Verification's answers from what is known now; `Err` when reverse
    /// DNS must be asked first ([`Gateway::identity`]).
    pub fn identity_now(
        &self,
        claim: &Claim<'_>,
        client: Option<IpAddr>,
        signed: Option<&Signed>,
    ) -> Result<Answers, NeedsDns> {
        let (Some(identity), Some(ip)) = (&self.identity, client) else { return Ok(Answers::default()) };
        let first = identity.answer_now(claim.crawler, ip, signed).ok_or(NeedsDns)?;
        let others = claim
            .others
            .iter()
            .map(|(c, _)| identity.answer_now(c, ip, signed).map(Some).ok_or(NeedsDns))
            .collect::<Result<_, _>>()?;
        Ok(Answers { first: Some(first), others })
    }

    /// Verification's answers, waiting on reverse DNS at most the budget.
    pub async fn identity(&self, claim: &Claim<'_>, client: Option<IpAddr>, signed: Option<&Signed>) -> Answers {
        let (Some(identity), Some(ip)) = (&self.identity, client) else { return Answers::default() };
        let mut answers =
            Answers { first: Some(identity.verify(claim.crawler, ip, signed).await.answer), others: Vec::new() };
        for (c, _) in &claim.others {
            answers.others.push(Some(identity.verify(c, ip, signed).await.answer));
        }
        answers
    }

    /// Judges a crawler's request by its origin-form target (path and
    /// query) against the site's current robots.txt, and counts it. A
    /// spoofed claim is refused, or judged as the anonymous client it is,
    /// or as the crawler it claims to be, as the site's `spoofed` says.
    ///
    /// The target is judged as the origin will serve it: refused when
    /// Google's matcher disallows it as sent or in its normal form
    /// ([`rules::normal`]), so no re-spelling walks around a rule.
    ///
    /// A User-Agent that names several crawlers is judged as each, and the
    /// strictest verdict stands: a refusal over a disallow over an allow.
    pub fn visit(
        &self,
        site: &FrontedSite,
        claim: &Claim<'_>,
        answers: &Answers,
        client: Option<IpAddr>,
        target: &[u8],
    ) -> Visit {
        let strictness = |j: &(Visit, Option<&'static str>)| match (&j.0.refusal, j.0.allowed) {
            (Some(_), _) => 2,
            (None, false) => 1,
            (None, true) => 0,
        };
        let mut judged = self.judge(site, claim.crawler, claim.word, answers.first, client, target);
        for (i, (crawler, word)) in claim.others.iter().enumerate() {
            let other = self.judge(site, crawler, word, answers.get(i + 1), client, target);
            if strictness(&other) > strictness(&judged) {
                judged = other;
            }
        }
        let (mut visit, enforced) = judged;
        let mut throttled = false;
        // A request the site lets through may still be over its crawl
        // budget: judged once, for the claim it is counted under.
        if visit.refusal.is_none()
            && !site.budgets.is_empty()
            && let Err(t) = site.budgets.admit(claim.crawler, visit.identity)
        {
            let identity = crate::crawlers::budget::identity_label(visit.identity);
            let purpose = claim.crawler.purpose.as_str();
            self.metrics.throttled.with_label_values(&[&site.name, &claim.crawler.token, purpose, identity]).inc();
            let body = format!(
                "over this site's crawl budget for {} ({}); come back in {} s\n",
                visit.crawler, t.budget, t.retry_after
            );
            visit.refusal =
                Some(Refusal { status: 429, headers: vec![("Retry-After".into(), t.retry_after.to_string())], body });
            throttled = true;
            visit.throttled = true;
        }
        if !claim.others.is_empty() {
            visit.claims = claim.each().map(|(_, w)| w.to_string()).collect();
        }
        let identity_label = visit.identity.map_or("off", Answer::as_str);
        let verdict = match enforced {
            _ if throttled => "budget",
            Some(reason @ ("spoofed" | "ai-policy")) => reason,
            _ if visit.allowed => "allow",
            _ => "disallow",
        };
        self.metrics.crawler_requests.with_label_values(&[&visit.crawler, verdict, identity_label]).inc();
        if let Some(reason) = enforced {
            self.metrics.enforced.with_label_values(&[&site.name, &visit.crawler, reason]).inc();
        }
        visit
    }

    /// One claim's verdict, and the reason enforcement refuses it, if it
    /// does; counts nothing.
    fn judge(
        &self,
        site: &FrontedSite,
        crawler: &Crawler,
        word: &str,
        identity: Option<Answer>,
        client: Option<IpAddr>,
        target: &[u8],
    ) -> (Visit, Option<&'static str>) {
        let spoofed = identity == Some(Answer::Spoofed);
        let state = self.store.state(&site.name);
        let visit = |allowed, line, refusal| Visit {
            crawler: word.to_string(),
            identity,
            claims: Vec::new(),
            state: Arc::clone(&state),
            client,
            allowed,
            line,
            refusal,
            throttled: false,
        };
        if spoofed && site.proxy.spoofed == Spoofed::Refuse {
            let body = format!("this request claims to be {word} and verification says it is not\n");
            return (visit(false, None, Some(Refusal { status: 403, headers: Vec::new(), body })), Some("spoofed"));
        }
        let judged_as = if spoofed && site.proxy.spoofed == Spoofed::Tag { ANONYMOUS } else { word };
        let slashes = if site.proxy.merge_slashes { Slashes::Merged } else { Slashes::Strict };
        // `named`: a group naming the crawler decided, not `*`.
        let (allowed, line, named) = match &*state {
            State::Serve(served) => {
                let v = served.robots.crawler(judged_as).check_request(target, slashes);
                (v.allowed, v.rule.map(|r| r.line), v.group.is_some_and(|g| !g.global))
            }
            // No file (4xx) or no good copy yet: nothing restricts crawling.
            State::NoFile(_) | State::Unknown => (true, None, false),
        };
        // The AI policy, for a claim that is not known to be false. The
        // policy's groups are in the served file, and where the owner wrote
        // a group of their own for the crawler, the owner's lines stand in
        // it: so where a group naming the crawler decides, the served file
        // decides which paths are refused, and the policy how. Where none
        // does (no file served, or a token Google's reading cuts short, as
        // `AI2Bot` to `AI`), the policy alone decides.
        if !spoofed
            && (!allowed || !named)
            && let Some(refusal) = site.proxy.ai_policy.as_ref().and_then(|p| crate::crawlers::ai::refusal(p, crawler))
        {
            return (visit(false, line, Some(refusal)), Some("ai-policy"));
        }
        let refusal = (!allowed && site.proxy.enforce).then(|| {
            let body = format!("robots.txt of this site disallows this URL for {word}\n");
            Refusal { status: 403, headers: Vec::new(), body }
        });
        let enforced = refusal.is_some().then_some("robots");
        (visit(allowed, line, refusal), enforced)
    }

    /// Hands a crawler's request to the compliance ledger, if one is
    /// kept: `target` as the client sent it.
    pub fn count_visit(&self, site: &FrontedSite, visit: &Visit, target: &[u8]) {
        if let Some(ledger) = &self.ledger {
            ledger.request(
                &site.name,
                &visit.crawler,
                visit.identity,
                visit.client,
                Arc::clone(&visit.state),
                target,
                visit.throttled,
            );
        }
    }

    /// Hands a `/robots.txt` fetch (GET or HEAD) to the compliance ledger,
    /// if one is kept and the User-Agent claims a crawler. Verification is
    /// asked only of what is known now: an answer that needs reverse DNS
    /// is asked again off the request path, by the ledger. Where both
    /// request paths see the same fetch (the own path hands a request
    /// over), it is recorded twice, which changes nothing: a fetch is a
    /// crawler's last read, not a count.
    pub fn count_fetch(&self, site: &FrontedSite, user_agent: &str, peer: Option<IpAddr>, forwarded_for: Option<&str>) {
        let Some(ledger) = &self.ledger else { return };
        let Some(claim) = self.claim(user_agent) else { return };
        let client = self.client(peer, forwarded_for);
        let answer = match (&self.identity, client) {
            (Some(identity), Some(ip)) => Some(identity.answer_now(claim.crawler, ip, None).unwrap_or(Answer::Pending)),
            _ => None,
        };
        ledger.fetch(&site.name, claim.word, answer, client, self.store.state(&site.name));
    }

    /// Writes the structured log line of a crawler's request, once its
    /// response status is known.
    ///
    /// The line is serialized straight into a buffer each thread keeps and
    /// written with one call: building it as a `serde_json::Value` first
    /// cost about 32,000 instructions a crawler request, more than the
    /// rest of the own path (docs/BENCHMARKS.md, session 22).
    pub fn log_visit(site: &FrontedSite, visit: &Visit, method: &str, target: &str, status: u16) {
        let line = VisitLine {
            timestamp: Rfc3339Millis(std::time::SystemTime::now()),
            site: &site.name,
            crawler: &visit.crawler,
            method,
            url: target,
            identity: visit.identity.map(Answer::as_str),
            claims: (!visit.claims.is_empty()).then_some(&visit.claims[..]),
            revision: match &*visit.state {
                State::Serve(served) => Some(served.etag.trim_matches('"')),
                _ => None,
            },
            client: visit.client,
            verdict: if visit.allowed { "allow" } else { "disallow" },
            line: visit.line,
            status,
        };
        thread_local! {
            static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BUFFER.with_borrow_mut(|buffer| {
            buffer.clear();
            // Serializing borrowed strings, numbers and addresses into a
            // Vec cannot fail.
            if serde_json::to_writer(&mut *buffer, &line).is_ok() {
                buffer.push(b'\n');
                use std::io::Write;
                // A closed stdout loses the log line, never the request.
                let _ = std::io::stdout().lock().write_all(buffer);
            }
            // A rare huge URL does not pin its buffer to the thread.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
        });
    }
}

/// A crawler's log line, its keys in the order operators read them.
#[derive(serde::Serialize)]
struct VisitLine<'a> {
    timestamp: Rfc3339Millis,
    site: &'a str,
    crawler: &'a str,
    method: &'a str,
    url: &'a str,
    identity: Option<&'static str>,
    claims: Option<&'a [String]>,
    revision: Option<&'a str>,
    client: Option<IpAddr>,
    verdict: &'static str,
    line: Option<u32>,
    status: u16,
}

/// A time written as RFC 3339 with milliseconds, straight into the line.
struct Rfc3339Millis(std::time::SystemTime);

impl serde::Serialize for Rfc3339Millis {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_rfc3339_millis(self.0))
    }
}
