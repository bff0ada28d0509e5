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
    /// Every feed any crawler names, by source.
    pub feeds: HashMap<String, Arc<Feed>>,
    /// The resolver, if reverse DNS is on.
    pub dns: Option<Arc<Dns>>,
}

impl Identity {
    /// Feeds for every `ip_ranges` source in `catalogue`, starting from the
    /// copies kept in `dir`.
    pub fn new(catalogue: Catalogue, dir: Option<&std::path::Path>, dns: Option<Dns>) -> Identity {
        let mut feeds = HashMap::new();
        for c in catalogue.crawlers() {
            for source in &c.verify.ip_ranges {
                feeds.entry(source.clone()).or_insert_with(|| Arc::new(Feed::new(source, dir)));
            }
        }
        Identity { catalogue, feeds, dns: dns.map(Arc::new) }
    }

    /// Verifies that a request from `ip` comes from `crawler`, waiting on DNS
    /// at most the budget.
    pub async fn verify(&self, crawler: &Crawler, ip: IpAddr) -> Verdict {
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
                return Verdict { answer: Answer::Verified, why: format!("{ip} is in {source}") };
            }
        }
        let asked_dns = !v.rdns.is_empty() && self.dns.is_some();
        if asked_dns && let Some(dns) = &self.dns {
            match dns.names(ip).await {
                Names::Known(names) => {
                    if let Some(name) = names.iter().find(|n| v.rdns.iter().any(|s| dns::under(n, s))) {
                        return Verdict {
                            answer: Answer::Verified,
                            why: format!("{ip} is {name}, which resolves back to it"),
                        };
                    }
                }
                Names::Pending => {
                    return Verdict {
                        answer: Answer::Pending,
                        why: format!("reverse DNS of {ip} did not answer within the budget; asked in the background"),
                    };
                }
            }
        }
        if ranged || asked_dns {
            let mut ways = Vec::new();
            if ranged {
                ways.push("not in the published ranges".to_string());
            }
            if asked_dns {
                ways.push(format!("no reverse DNS name under {} resolves back to it", v.rdns.join(", ")));
            }
            return Verdict {
                answer: Answer::Spoofed,
                why: format!("{ip} claims {} ({}): {}", crawler.token, crawler.operator, ways.join("; ")),
            };
        }
        let why = if v.is_empty() {
            format!("{} publishes no ranges, reverse DNS names or signatures for {}", crawler.operator, crawler.token)
        } else {
            format!("no usable way to verify {} yet (feeds not loaded, or reverse DNS off)", crawler.token)
        };
        Verdict { answer: Answer::Unverifiable, why }
    }
}
