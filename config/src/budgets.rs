//! `sites[].proxy.budgets`: crawl budgets at the edge. Each entry matches
//! crawler requests by catalogue token, purpose and identity, and admits
//! them at a rate with a burst; over budget the gateway answers 429 with
//! `Retry-After`. `/robots.txt` is never throttled, and a verified search
//! crawler only when an entry names its token.
//!
//! ```yaml
//! proxy:
//!   budgets:
//!     - { purpose: ai-training, rate: 30/m, burst: 10 }   # each AI trainer: 30 a minute
//!     - { identity: spoofed, rate: 10/m }                  # failed verification
//!     - { crawler: bingbot, rate: 2/s, burst: 20 }         # a search crawler, named
//!   crawl_delay: budget     # Crawl-delay becomes the budget of crawlers that honour it
//! ```

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// One budget.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// A catalogue token (`GPTBot`); any crawler when absent.
    #[serde(default)]
    pub crawler: Option<String>,
    /// A purpose (`ai-training`, `search`, …); any when absent.
    #[serde(default)]
    pub purpose: Option<String>,
    /// `verified`, `unverifiable`, `spoofed` or `unchecked` (no verification
    /// answer); any when absent.
    #[serde(default)]
    pub identity: Option<String>,
    /// How many requests a period: `30/m`, `2/s`, `1000/h`.
    pub rate: Rate,
    /// How many may come at once before the rate applies (default 1).
    #[serde(default = "one")]
    pub burst: u32,
}

fn one() -> u32 {
    1
}

/// Requests per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Requests.
    pub requests: u32,
    /// Per this long.
    pub per: Duration,
}

impl Rate {
    /// The time between two admitted requests at this rate.
    pub fn interval(&self) -> Duration {
        self.per / self.requests.max(1)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.per {
            p if p == Duration::from_secs(1) => write!(f, "{}/s", self.requests),
            p if p == Duration::from_secs(60) => write!(f, "{}/m", self.requests),
            p if p == Duration::from_secs(3600) => write!(f, "{}/h", self.requests),
            // A `Crawl-delay` budget: one request per the delay.
            p => write!(f, "{}/{}", self.requests, humantime::format_duration(p)),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Rate, String> {
        let how = "write it as requests/period: `30/m`, `2/s` or `1000/h`";
        let (n, unit) = s.trim().split_once('/').ok_or_else(|| format!("`{s}`: {how}"))?;
        let requests: u32 = n.trim().parse().map_err(|_| format!("`{s}`: {how}"))?;
        if requests == 0 {
            return Err(format!("`{s}`: a budget admits at least 1 request a period"));
        }
        let per = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(format!("`{s}`: {how}")),
        };
        Ok(Rate { requests, per })
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The identities a budget may name.
pub const IDENTITIES: [&str; 4] = ["verified", "unverifiable", "spoofed", "unchecked"];

impl Budget {
    /// "GPTBot, ai-training, spoofed: 30/m (burst 10)", for logs and bodies.
    pub fn describe(&self) -> String {
        let parts: Vec<&str> = [self.crawler.as_deref(), self.purpose.as_deref(), self.identity.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let who = if parts.is_empty() { "every crawler".to_string() } else { parts.join(", ") };
        format!("{who}: {} (burst {})", self.rate, self.burst)
    }
}

/// `sites[].proxy.crawl_delay`: whether a crawler's `Crawl-delay` is
/// its budget at the edge.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CrawlDelay {
    /// `Crawl-delay` is left to the crawlers.
    #[default]
    Off,
    /// The crawlers the catalogue says honour it are held to it.
    Budget,
}
