//! Crawler identity: whether a request that claims, by its User-Agent, to
//! be a catalogued crawler comes from that crawler. Three answers:
//!
//! - verified: the address is in the operator's published ranges, or its
//!   reverse DNS name is under the operator's suffix and resolves back;
//! - spoofed: the operator publishes a way to verify that can be used now,
//!   and the request fails every one;
//! - unverifiable: the operator publishes nothing (or nothing usable yet: a
//!   feed never loaded). Such a crawler is never called spoofed.
//!
//! A fourth state, pending, is a DNS answer not known within the budget:
//! the request goes on unverified and the answer serves the next one.
//!
//! Not built yet: Web Bot Auth signatures (the catalogue records the key
//! directories; a signed request is judged by the other methods for now).

pub mod cli;
pub mod dns;
pub mod feeds;
pub mod prefixes;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use robotsgate_crawlers::{Catalogue, Crawler};

use dns::{Dns, Names};
use feeds::Feed;

/// The runtime that runs reverse-DNS lookups and feed refreshes, for the
/// life of the process: one worker thread, so lookups and refreshes go on
/// whichever runtime the request that started them came from.
pub fn runtime() -> Result<tokio::runtime::Handle, String> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("robotsgate-identity")
                .enable_all()
                .build()
                .map_err(|e| format!("starting the identity runtime: {e}"))
        })
        .as_ref()
        .map(|r| r.handle().clone())
        .map_err(Clone::clone)
}

/// The answer for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The claim holds.
    Verified,
    /// The claim was checked and fails.
    Spoofed,
    /// Nothing to check the claim against.
    Unverifiable,
    /// DNS did not answer within the budget; treated as unverified.
    Pending,
}

impl Answer {
    /// The label logs and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Verified => "verified",
            Answer::Spoofed => "spoofed",
            Answer::Unverifiable => "unverifiable",
            Answer::Pending => "pending",
        }
    }
}

/// An answer and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The answer.
    pub answer: Answer,
    /// Why, in words.
    pub why: String,
}

/// Feeds and DNS, for every crawler of the catalogue.
#[derive(Debug)]
pub struct Identity {
    /// The catalogue.
    pub catalogue: Catalogue,
    /// Every feed a verified crawler names, by source.
    pub feeds: HashMap<String, Arc<Feed>>,
    /// The resolver, if reverse DNS is on.
    pub dns: Option<Arc<Dns>>,
    /// Only these crawlers (lower-case tokens) are verified; `None`: all.
    only: Option<Vec<String>>,
}

/// What is known of a claim, before it is put in words.
enum Judged<'a> {
    InRange(&'a str),
    Named(String),
    /// Reverse DNS must be asked (nothing cached).
    Ask,
    Pending,
    Failed {
        ranged: bool,
        asked_dns: bool,
    },
    Unpublished,
    Unusable,
    Skipped,
}

impl Judged<'_> {
    fn answer(&self) -> Option<Answer> {
        Some(match self {
            Judged::InRange(_) | Judged::Named(_) => Answer::Verified,
            Judged::Ask => return None,
            Judged::Pending => Answer::Pending,
            Judged::Failed { .. } => Answer::Spoofed,
            Judged::Unpublished | Judged::Unusable | Judged::Skipped => Answer::Unverifiable,
        })
    }

    fn why(&self, crawler: &Crawler, ip: IpAddr) -> String {
        match self {
            Judged::InRange(source) => format!("{ip} is in {source}"),
            Judged::Named(name) => format!("{ip} is {name}, which resolves back to it"),
            Judged::Ask | Judged::Pending => {
                format!("reverse DNS of {ip} did not answer within the budget; asked in the background")
            }
            Judged::Failed { ranged, asked_dns } => {
                let mut ways = Vec::new();
                if *ranged {
                    ways.push("not in the published ranges".to_string());
                }
                if *asked_dns {
                    ways.push(format!(
                        "no reverse DNS name under {} resolves back to it",
                        crawler.verify.rdns.join(", ")
                    ));
                }
                format!("{ip} claims {} ({}): {}", crawler.token, crawler.operator, ways.join("; "))
            }
            Judged::Unpublished => format!(
                "{} publishes no ranges, reverse DNS names or signatures for {}",
                crawler.operator, crawler.token
            ),
            Judged::Unusable => {
                format!("no usable way to verify {} yet (feeds not loaded, or reverse DNS off)", crawler.token)
            }
            Judged::Skipped => format!("{} is not verified here (`proxy.identity.only`)", crawler.token),
        }
    }
}

impl Identity {
    /// Feeds for every `ip_ranges` source in `catalogue`, starting from the
    /// copies kept in `dir`.
    pub fn new(catalogue: Catalogue, dir: Option<&std::path::Path>, dns: Option<Dns>) -> Identity {
        Identity::only(catalogue, dir, dns, &[])
    }

    /// As [`Identity::new`], verifying only the crawlers `only` names (all
    /// when it is empty); feeds are made for those crawlers alone.
    pub fn only(catalogue: Catalogue, dir: Option<&std::path::Path>, dns: Option<Dns>, only: &[String]) -> Identity {
        let only: Option<Vec<String>> =
            (!only.is_empty()).then(|| only.iter().map(|t| t.to_ascii_lowercase()).collect());
        let mut feeds = HashMap::new();
        for c in catalogue.crawlers() {
            if only.as_ref().is_some_and(|o| !o.contains(&c.token.to_ascii_lowercase())) {
                continue;
            }
            for source in &c.verify.ip_ranges {
                feeds.entry(source.clone()).or_insert_with(|| Arc::new(Feed::new(source, dir)));
            }
        }
        Identity { catalogue, feeds, dns: dns.map(Arc::new), only }
    }

    fn judge<'s>(&'s self, crawler: &'s Crawler, ip: IpAddr, names: Option<&Names>) -> Judged<'s> {
        if self.only.as_ref().is_some_and(|o| !o.iter().any(|t| t.eq_ignore_ascii_case(&crawler.token))) {
            return Judged::Skipped;
        }
        let v = &crawler.verify;
        let mut ranged = false;
        for source in &v.ip_ranges {
            let Some(feed) = self.feeds.get(source) else { continue };
            let table = feed.table();
            if table.is_empty() {
                continue;
            }
            ranged = true;
            if table.contains(ip) {
                return Judged::InRange(source);
            }
        }
        let asked_dns = !v.rdns.is_empty() && self.dns.is_some();
        if asked_dns && let Some(dns) = &self.dns {
            let cached;
            let names = match names {
                Some(n) => n,
                None => match dns.cached(ip) {
                    Some(n) => {
                        cached = Names::Known(n);
                        &cached
                    }
                    None => return Judged::Ask,
                },
            };
            match names {
                Names::Known(names) => {
                    if let Some(name) = names.iter().find(|n| v.rdns.iter().any(|s| dns::under(n, s))) {
                        return Judged::Named(name.clone());
                    }
                }
                Names::Pending => return Judged::Pending,
            }
        }
        if ranged || asked_dns {
            return Judged::Failed { ranged, asked_dns };
        }
        if v.is_empty() { Judged::Unpublished } else { Judged::Unusable }
    }

    /// The answer from what is known now (feeds and cached DNS), or `None`
    /// when reverse DNS must be asked: the gateway's hot path, which builds
    /// no words.
    pub fn answer_now(&self, crawler: &Crawler, ip: IpAddr) -> Option<Answer> {
        self.judge(crawler, ip, None).answer()
    }

    /// Verifies that a request from `ip` comes from `crawler`, waiting on DNS
    /// at most the budget.
    pub async fn verify(&self, crawler: &Crawler, ip: IpAddr) -> Verdict {
        let mut judged = self.judge(crawler, ip, None);
        if matches!(judged, Judged::Ask)
            && let Some(dns) = &self.dns
        {
            let names = dns.names(ip).await;
            judged = self.judge(crawler, ip, Some(&names));
        }
        Verdict { answer: judged.answer().unwrap_or(Answer::Pending), why: judged.why(crawler, ip) }
    }

    /// Starts refreshing every feed now and every `every` after, on the
    /// identity runtime.
    pub fn keep_fresh(&self, every: std::time::Duration) -> Result<(), String> {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .user_agent(concat!("robotsgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        let mut feeds: Vec<Arc<Feed>> = self.feeds.values().cloned().collect();
        feeds.sort_by(|a, b| a.status().source.cmp(&b.status().source));
        runtime()?.spawn(feeds::keep_fresh(feeds, client, every));
        Ok(())
    }

    /// Every feed's status, by source.
    pub fn feed_status(&self) -> Vec<feeds::FeedStatus> {
        let mut all: Vec<_> = self.feeds.values().map(|f| f.status()).collect();
        all.sort_by(|a, b| a.source.cmp(&b.source));
        all
    }
}
