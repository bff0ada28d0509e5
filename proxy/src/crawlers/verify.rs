//! `robots-proxy verify --ip ADDR --user-agent UA`: one verification, as
//! the gateway would make it, printed with its reasons. Exit status: 0
//! verified, 1 spoofed, 2 an error, 3 unverifiable or pending, 4 the
//! User-Agent claims no catalogued crawler.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use robotsgate_crawlers::Catalogue;

use robotsgate_identity::dns::{Dns, DnsOptions};
use robotsgate_identity::{Answer, Identity};

/// What to verify, and how.
#[derive(Debug)]
pub struct Request {
    /// The client address.
    pub ip: IpAddr,
    /// The User-Agent.
    pub user_agent: String,
    /// DNS servers; the system's when empty.
    pub dns: Vec<SocketAddr>,
    /// Longest wait for reverse DNS.
    pub budget: Duration,
    /// Where feeds' copies are kept.
    pub feeds_dir: Option<PathBuf>,
    /// Entries added to the built-in catalogue.
    pub extra: Option<Catalogue>,
    /// Ask nothing of the network: no feed fetched, no reverse DNS.
    pub offline: bool,
}

/// Runs one verification and prints it; returns the exit status.
pub async fn verify(r: Request) -> anyhow::Result<i32> {
    let catalogue = match &r.extra {
        Some(extra) => Catalogue::builtin().with(extra.crawlers(), "--catalogue")?,
        None => Catalogue::builtin().clone(),
    };
    let Some(crawler) = catalogue.claimed_by(&r.user_agent).cloned() else {
        println!("no catalogued crawler is claimed by this User-Agent");
        return Ok(4);
    };
    println!("claims: {} ({}, {})", crawler.token, crawler.operator, crawler.purpose.as_str());
    if let Some(dir) = &r.feeds_dir {
        std::fs::create_dir_all(dir)?;
    }
    // Offline asks nothing of the network: no feed, and no reverse DNS.
    let dns = if r.offline {
        if !crawler.verify.rdns.is_empty() {
            println!("reverse DNS: not asked (--offline)");
        }
        None
    } else {
        Some(
            Dns::new(&DnsOptions { servers: r.dns.clone(), timeout: r.budget, budget: r.budget, in_flight: 4 })
                .map_err(anyhow::Error::msg)?,
        )
    };
    let identity = Identity::new(catalogue, r.feeds_dir.as_deref(), dns);
    if !r.offline {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build()?;
        for source in &crawler.verify.ip_ranges {
            if let Some(feed) = identity.feeds.get(source) {
                match feed.refresh(&client).await {
                    Ok(n) => println!("feed: {source}: {n} prefixes"),
                    Err(e) => println!("feed: {source}: {e}"),
                }
            }
        }
    }
    let verdict = identity.verify(&crawler, r.ip, None).await;
    println!("{}: {}", verdict.answer.as_str(), verdict.why);
    Ok(match verdict.answer {
        Answer::Verified => 0,
        Answer::Spoofed => 1,
        Answer::Unverifiable | Answer::Pending => 3,
    })
}
