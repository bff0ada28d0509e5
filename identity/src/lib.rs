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
//! A third way to be verified is a valid Web Bot Auth signature
//! ([`signed`]) made with a key in the operator's key directory.
//!
//! Its own crate so that the gateway and the monitor's access-log
//! importer verify a client address the same way, with the same feeds and
//! caches, and the daemons still depend on neither each other.

pub mod agent;
pub mod dns;
pub mod feeds;
pub mod prefixes;
pub mod signed;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use robotsgate_crawlers::{Catalogue, Crawler};

use dns::{Dns, Names};
use feeds::Feed;
use signed::{Keys, Signed};

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

/// The client key directories are fetched with: no redirect is followed,
/// as the directory draft requires (a 3xx is a failed fetch).
fn directory_client(timeout: std::time::Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("robotsgate/", env!("CARGO_PKG_VERSION")))
        .build()
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

/// The compliance judgement's reading of an answer, for every importer
/// and gateway alike.
impl From<Answer> for robotsgate_compliance::Identity {
    fn from(a: Answer) -> Self {
        match a {
            Answer::Verified => Self::Verified,
            Answer::Spoofed => Self::Spoofed,
            Answer::Pending => Self::Pending,
            Answer::Unverifiable => Self::Unverifiable,
        }
    }
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

/// The crawlers whose ways to verify a claim to be `crawler` are tried,
/// in order, until one can answer; empty when `only` leaves it unverified.
///
/// A crawler that reads another's group when it has none of its own
/// (`Googlebot-Image` reads `Googlebot`'s) is verified whenever that other
/// crawler is, and as that crawler when its own ways cannot answer (none
/// published, feeds not loaded) or `only` does not name it: otherwise
/// anyone could claim it and be judged by the verified crawler's group.
fn verified_as<'c>(
    catalogue: &'c Catalogue,
    only: Option<&[String]>,
    crawler: &'c Crawler,
) -> impl Iterator<Item = &'c Crawler> {
    let listed = |c: &Crawler| only.is_none_or(|o| o.iter().any(|t| t.eq_ignore_ascii_case(&c.token)));
    let own = listed(crawler).then_some(crawler);
    let mut parent = None;
    let mut at = crawler;
    // The chain is short (one step in the built-in catalogue); the bound
    // stops config entries that fall back to each other.
    for _ in 0..8 {
        let up = match (&at.groups, rules::crawlers::choice(&at.token)) {
            (robotsgate_crawlers::Groups::FallsBackTo(p), _) => p.as_str(),
            (_, rules::crawlers::Choice::FallsBackTo(p)) => p,
            _ => break,
        };
        let Some(next) = catalogue.get(up) else { break };
        if listed(next) {
            parent = Some(next);
            break;
        }
        at = next;
    }
    own.into_iter().chain(parent)
}

/// Feeds and DNS, for every crawler of the catalogue.
#[derive(Debug)]
pub struct Identity {
    /// The catalogue.
    pub catalogue: Catalogue,
    /// Every feed a verified crawler names, by source.
    pub feeds: HashMap<String, Arc<Feed>>,
    /// Every Web Bot Auth key directory a verified crawler names, by URL.
    pub directories: HashMap<String, Arc<Feed<Keys>>>,
    /// The resolver, if reverse DNS is on.
    pub dns: Option<Arc<Dns>>,
    /// Only these crawlers (lower-case tokens) are verified; `None`: all.
    only: Option<Vec<String>>,
}

/// What is known of a claim, before it is put in words.
enum Judged<'a> {
    InRange(&'a str),
    Signed(&'a str),
    Named(String),
    /// Reverse DNS must be asked (nothing cached).
    Ask,
    Pending,
    Failed {
        ranged: bool,
        asked_dns: bool,
        signing: Option<String>,
        /// The suffixes reverse DNS was held to.
        rdns: &'a [String],
    },
    Unpublished,
    Unusable,
    Skipped,
}

impl Judged<'_> {
    fn answer(&self) -> Option<Answer> {
        Some(match self {
            Judged::InRange(_) | Judged::Signed(_) | Judged::Named(_) => Answer::Verified,
            Judged::Ask => return None,
            Judged::Pending => Answer::Pending,
            Judged::Failed { .. } => Answer::Spoofed,
            Judged::Unpublished | Judged::Unusable | Judged::Skipped => Answer::Unverifiable,
        })
    }

    fn why(&self, crawler: &Crawler, ip: IpAddr) -> String {
        match self {
            Judged::InRange(source) => format!("{ip} is in {source}"),
            Judged::Signed(directory) => format!("signed (Web Bot Auth) with a key in {directory}"),
            Judged::Named(name) => format!("{ip} is {name}, which resolves back to it"),
            Judged::Ask | Judged::Pending => {
                format!("reverse DNS of {ip} did not answer in time, so the claim is neither verified nor refused")
            }
            Judged::Failed { ranged, asked_dns, signing, rdns } => {
                let mut ways = Vec::new();
                if let Some(why) = signing {
                    ways.push(format!("Web Bot Auth: {why}"));
                }
                if *ranged {
                    ways.push("not in the published ranges".to_string());
                }
                if *asked_dns {
                    ways.push(format!(
                        "reverse DNS gives no name under {} that resolves back to {ip}",
                        rdns.join(" or ")
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
        let mut directories = HashMap::new();
        for c in catalogue.crawlers() {
            for by in verified_as(&catalogue, only.as_deref(), c) {
                for source in &by.verify.ip_ranges {
                    feeds.entry(source.clone()).or_insert_with(|| Arc::new(Feed::new(source, dir)));
                }
                if let Some(url) = &by.verify.web_bot_auth {
                    directories.entry(url.clone()).or_insert_with(|| Arc::new(Feed::new(url, dir)));
                }
            }
        }
        Identity { catalogue, feeds, directories, dns: dns.map(Arc::new), only }
    }

    fn judge<'s>(
        &'s self,
        crawler: &'s Crawler,
        ip: IpAddr,
        signed: Option<&Signed>,
        names: Option<&Names>,
    ) -> Judged<'s> {
        let ways = verified_as(&self.catalogue, self.only.as_deref(), crawler);
        let mut judged = Judged::Skipped;
        for by in ways {
            judged = self.judge_by(by, ip, signed, names);
            if !matches!(judged, Judged::Unpublished | Judged::Unusable) {
                break;
            }
        }
        judged
    }

    /// [`Identity::judge`] by the ways to verify `by`.
    fn judge_by<'s>(
        &'s self,
        by: &'s Crawler,
        ip: IpAddr,
        signed: Option<&Signed>,
        names: Option<&Names>,
    ) -> Judged<'s> {
        let v = &by.verify;
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
        // A directory with keys makes signatures a way to verify: a request
        // that claims the crawler unsigned, or badly signed, fails it.
        let mut signing = None;
        if let Some(url) = &v.web_bot_auth
            && let Some(directory) = self.directories.get(url)
        {
            let keys = directory.table();
            if !keys.ring_is_empty() {
                match signed.map(|s| s.verify(&keys, url)) {
                    Some(Ok(())) => return Judged::Signed(url),
                    Some(Err(why)) => signing = Some(why),
                    None => signing = Some("the request is not signed".to_string()),
                }
            }
        }
        let asked_dns = !v.rdns.is_empty() && self.dns.is_some();
        if asked_dns && let Some(dns) = &self.dns {
            let cached;
            let names = match names {
                Some(n) => n,
                None => match dns.cached(ip) {
                    Some(n) => {
                        cached = n;
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
        if ranged || asked_dns || signing.is_some() {
            return Judged::Failed { ranged, asked_dns, signing, rdns: &v.rdns };
        }
        if v.is_empty() { Judged::Unpublished } else { Judged::Unusable }
    }

    /// The answer from what is known now (feeds and cached DNS), or `None`
    /// when reverse DNS must be asked: the gateway's hot path, which builds
    /// no words.
    pub fn answer_now(&self, crawler: &Crawler, ip: IpAddr, signed: Option<&Signed>) -> Option<Answer> {
        self.judge(crawler, ip, signed, None).answer()
    }

    /// Verifies that a request from `ip` comes from `crawler`, waiting on DNS
    /// at most the budget.
    pub async fn verify(&self, crawler: &Crawler, ip: IpAddr, signed: Option<&Signed>) -> Verdict {
        let mut judged = self.judge(crawler, ip, signed, None);
        if matches!(judged, Judged::Ask)
            && let Some(dns) = &self.dns
        {
            let names = dns.names(ip).await;
            judged = self.judge(crawler, ip, signed, Some(&names));
        }
        Verdict { answer: judged.answer().unwrap_or(Answer::Pending), why: judged.why(crawler, ip) }
    }

    /// Verification as a config sets it up: feeds kept in `dir`, reverse
    /// DNS when `dns` is given, only the crawlers `only` names (all when
    /// empty). The gateway and the log importer build it alike.
    pub fn setup(
        catalogue: Catalogue,
        dir: &std::path::Path,
        dns: Option<&dns::DnsOptions>,
        only: &[String],
    ) -> Result<Identity, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let dns = dns.map(Dns::new).transpose()?;
        Ok(Identity::only(catalogue, Some(dir), dns, only))
    }

    /// Refreshes every feed and key directory once, now, each bounded by
    /// `timeout`; a feed that fails keeps its copy. For one-off work (a log
    /// import) that cannot wait for the background refresh.
    pub async fn refresh_now(&self, timeout: std::time::Duration) {
        let Ok(client) = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("robotsgate/", env!("CARGO_PKG_VERSION")))
            .build()
        else {
            return;
        };
        for feed in self.feeds.values() {
            let _ = feed.refresh(&client).await;
        }
        let Ok(unredirected) = directory_client(timeout) else { return };
        for directory in self.directories.values() {
            let _ = directory.refresh(&unredirected).await;
        }
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
        feeds.sort_by_key(|f| f.status().source);
        let mut directories: Vec<Arc<Feed<Keys>>> = self.directories.values().cloned().collect();
        directories.sort_by_key(|f| f.status().source);
        let runtime = runtime()?;
        runtime.spawn(feeds::keep_fresh(feeds, client, every));
        let unredirected = directory_client(std::time::Duration::from_secs(30)).map_err(|e| e.to_string())?;
        runtime.spawn(feeds::keep_fresh(directories, unredirected, every));
        Ok(())
    }

    /// Every feed's status, by source.
    pub fn feed_status(&self) -> Vec<feeds::FeedStatus> {
        let mut all: Vec<_> = self.feeds.values().map(|f| f.status()).collect();
        all.sort_by(|a, b| a.source.cmp(&b.source));
        all
    }

    /// Every key directory's status (`prefixes` counts its keys), by URL.
    pub fn directory_status(&self) -> Vec<feeds::FeedStatus> {
        let mut all: Vec<_> = self.directories.values().map(|f| f.status()).collect();
        all.sort_by(|a, b| a.source.cmp(&b.source));
        all
    }
}
