//! Crawl budgets at the edge (`sites[].proxy.budgets`): slow a crawler
//! down without shutting it out. Each budget matches crawler requests by
//! catalogue token, purpose and identity, and admits each matching crawler
//! at its rate with its burst (GCRA, from `governor`); over budget the
//! answer is 429 with `Retry-After`, the whole seconds until the next
//! request would be admitted.
//!
//! What a budget never does:
//! - throttle `/robots.txt`: a 429 there reads as "disallow all" to Google
//!   (the request paths answer robots.txt before any crawler is judged);
//! - throttle a verified search crawler, unless the budget names its token;
//! - grow with clients: buckets are keyed by catalogue token, so made-up
//!   names (which claim no catalogued crawler) and addresses add nothing.
//!
//! A claim that fails verification is held only by the budgets for
//! `identity: spoofed`: the crawler it names is not the one asking.
//!
//! Two things reshape the limiters while the gateway runs, off the request
//! path ([`Budgets::reshape`], from `crawlers::reshape`): this gateway's
//! share of the fleet (a budget is the site's; N live gateways each admit
//! 1/N of its rate and burst), and, with `crawl_delay: budget`, the
//! `Crawl-delay` the served file states for each crawler that honours it
//! (one request per delay, burst 1). A reshape starts fresh buckets, so it
//! can admit one more burst: the error bound in docs/OPERATIONS.md.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use robotsgate_config::budgets::{Budget, Rate};
use robotsgate_crawlers::{Crawler, Purpose};
use robotsgate_identity::Answer;

/// A site's budgets.
pub struct Budgets {
    configured: Vec<Budget>,
    now: ArcSwap<Shape>,
    clock: DefaultClock,
}

/// The limiters of one share and one set of delays.
struct Shape {
    share: f64,
    /// Per crawler token: its `Crawl-delay` and the line stating it.
    delays: Vec<Delayed>,
    /// One per configured budget, in order.
    configured: Vec<DefaultKeyedRateLimiter<String>>,
    /// One per delay, in `delays`' order.
    delayed: Vec<DefaultKeyedRateLimiter<String>>,
}

/// A crawler held to the `Crawl-delay` of the served file.
#[derive(Clone, Debug, PartialEq)]
pub struct Delayed {
    /// Its catalogue token.
    pub token: String,
    /// The delay.
    pub delay: Duration,
    /// The line of the served file that states it.
    pub line: u32,
}

impl Delayed {
    /// As a budget: one request per delay, burst 1, naming the crawler.
    fn budget(&self) -> Budget {
        Budget {
            crawler: Some(self.token.clone()),
            purpose: None,
            identity: None,
            rate: Rate { requests: 1, per: self.delay.max(Duration::from_millis(1)) },
            burst: 1,
        }
    }

    /// "bingbot: Crawl-delay 10s (line 8)".
    pub fn describe(&self) -> String {
        format!("{}: Crawl-delay {} (line {})", self.token, humantime::format_duration(self.delay), self.line)
    }
}

impl std::fmt::Debug for Budgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.configured.iter().map(Budget::describe)).finish()
    }
}

/// A request over budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Whole seconds until a request would be admitted (at least 1).
    pub retry_after: u64,
    /// The budget, described.
    pub budget: String,
}

/// One budget as `/status` and `--check` show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// Described.
    pub budget: String,
    /// The site's rate, for the whole fleet.
    pub rate: String,
    /// The site's burst, for the whole fleet.
    pub burst: u32,
    /// This gateway's share of both.
    pub share: f64,
    /// From the served file's `Crawl-delay`, not the config.
    pub crawl_delay: bool,
}

/// How an identity answer is named in a budget.
pub fn identity_label(identity: Option<Answer>) -> &'static str {
    match identity {
        None | Some(Answer::Pending) => "unchecked",
        Some(a) => a.as_str(),
    }
}

/// The burst one gateway with `share` of `budget` admits: at least one
/// request, so a share never shuts a crawler out. What the limiter takes,
/// and what `robots-proxy --check` prints.
pub fn burst_of(budget: &Budget, share: f64) -> u32 {
    ((f64::from(budget.burst) * share.clamp(0.0001, 1.0)).floor() as u32).max(1)
}

/// A limiter admitting `share` of `budget`'s rate and [`burst_of`].
fn limiter(budget: &Budget, share: f64) -> DefaultKeyedRateLimiter<String> {
    let burst = burst_of(budget, share);
    let interval = budget.rate.interval().div_f64(share.clamp(0.0001, 1.0));
    let quota = Quota::with_period(interval.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
    RateLimiter::keyed(quota)
}

impl Shape {
    fn new(configured: &[Budget], share: f64, delays: Vec<Delayed>) -> Shape {
        Shape {
            share,
            configured: configured.iter().map(|b| limiter(b, share)).collect(),
            delayed: delays.iter().map(|d| limiter(&d.budget(), share)).collect(),
            delays,
        }
    }
}

impl Budgets {
    /// The limiters of `budgets`, each admitting `share` of its rate and
    /// burst (1.0 for a lone gateway).
    pub fn new(budgets: &[Budget], share: f64) -> Budgets {
        Budgets {
            now: ArcSwap::from_pointee(Shape::new(budgets, share, Vec::new())),
            configured: budgets.to_vec(),
            clock: DefaultClock::default(),
        }
    }

    /// Whether a request can be held at all now.
    pub fn is_empty(&self) -> bool {
        self.configured.is_empty() && self.now.load().delays.is_empty()
    }

    /// This gateway's share of the site's budgets.
    pub fn share(&self) -> f64 {
        self.now.load().share
    }

    /// The crawlers held to the served file's `Crawl-delay`.
    pub fn delays(&self) -> Vec<Delayed> {
        self.now.load().delays.clone()
    }

    /// Takes `share` of the fleet's budgets and holds `delays`, if either
    /// differs from now; true when the limiters were rebuilt (fresh
    /// buckets). Never on the request path.
    pub fn reshape(&self, share: f64, delays: Vec<Delayed>) -> bool {
        let now = self.now.load();
        if (now.share - share).abs() < 1e-9 && now.delays == delays {
            return false;
        }
        self.now.store(Arc::new(Shape::new(&self.configured, share, delays)));
        true
    }

    /// Each budget, configured then from `Crawl-delay`, as `/status` shows it.
    pub fn shown(&self) -> Vec<Shown> {
        let now = self.now.load();
        let configured = self.configured.iter().map(|b| Shown {
            budget: b.describe(),
            rate: b.rate.to_string(),
            burst: b.burst,
            share: now.share,
            crawl_delay: false,
        });
        let delayed = now.delays.iter().map(|d| {
            let b = d.budget();
            Shown { budget: d.describe(), rate: b.rate.to_string(), burst: 1, share: now.share, crawl_delay: true }
        });
        configured.chain(delayed).collect()
    }

    /// Whether `budget` holds `crawler` asking with `identity`.
    fn holds(budget: &Budget, crawler: &Crawler, identity: Option<Answer>) -> bool {
        let names = budget.crawler.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(&crawler.token));
        let verified_search = crawler.purpose == Purpose::Search && identity == Some(Answer::Verified);
        if verified_search && !names {
            return false;
        }
        let spoofed = identity == Some(Answer::Spoofed);
        if spoofed && budget.identity.as_deref() != Some("spoofed") {
            return false;
        }
        (budget.crawler.is_none() || names)
            && budget.purpose.as_deref().is_none_or(|p| p.eq_ignore_ascii_case(crawler.purpose.as_str()))
            && budget.identity.as_deref().is_none_or(|i| i == identity_label(identity))
    }

    /// Admits one request of `crawler` asking with `identity`, or says how
    /// long until one would be admitted. The first configured budget that
    /// holds the crawler applies, unless it does not name it and the
    /// crawler's `Crawl-delay` is held: then the delay applies. A spoofed
    /// claim is not the crawler it names, so its delay never applies.
    pub fn admit(&self, crawler: &Crawler, identity: Option<Answer>) -> Result<(), Throttle> {
        let now = self.now.load();
        let configured = self.configured.iter().position(|b| Self::holds(b, crawler, identity));
        let named = configured.is_some_and(|i| self.configured[i].crawler.is_some());
        let delayed = (identity != Some(Answer::Spoofed) && !named)
            .then(|| now.delays.iter().position(|d| d.token.eq_ignore_ascii_case(&crawler.token)))
            .flatten();
        let (limiter, described) = match (delayed, configured) {
            (Some(d), _) => (&now.delayed[d], now.delays[d].describe()),
            (None, Some(c)) => (&now.configured[c], self.configured[c].describe()),
            (None, None) => return Ok(()),
        };
        // One bucket per crawler a budget holds (a purpose's budget gives
        // each of its crawlers the rate); spoofed claims share one.
        let key = if identity == Some(Answer::Spoofed) { String::from("spoofed") } else { crawler.token.clone() };
        match limiter.check_key(&key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                Err(Throttle { retry_after: secs.max(1), budget: described })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use robotsgate_crawlers::Catalogue;

    fn budgets(yaml: &[&str]) -> Budgets {
        let list: Vec<Budget> =
            yaml.iter().map(|y| serde_saphyr::from_str(y).unwrap_or_else(|e| panic!("{y}: {e}"))).collect();
        Budgets::new(&list, 1.0)
    }

    fn crawler(token: &str) -> Crawler {
        Catalogue::builtin().get(token).unwrap_or_else(|| panic!("{token} is catalogued")).clone()
    }

    #[test]
    fn a_crawler_is_held_to_its_burst_then_told_when_to_come_back() {
        let b = budgets(&["{ purpose: ai-training, rate: 6/m, burst: 3 }"]);
        let gpt = crawler("GPTBot");
        for _ in 0..3 {
            assert_eq!(b.admit(&gpt, None), Ok(()));
        }
        let t = b.admit(&gpt, None).unwrap_err();
        assert!((1..=10).contains(&t.retry_after), "{t:?}");
        assert_eq!(t.budget, "ai-training: 6/m (burst 3)");
        // Each crawler of the purpose has its own bucket.
        assert_eq!(b.admit(&crawler("CCBot"), None), Ok(()));
    }

    #[test]
    fn verified_search_crawlers_pass_unless_named() {
        let b = budgets(&["{ rate: 1/h }"]);
        let google = crawler("Googlebot");
        for _ in 0..100 {
            assert_eq!(b.admit(&google, Some(Answer::Verified)), Ok(()));
        }
        // Unverified, it is any crawler.
        assert_eq!(b.admit(&google, Some(Answer::Unverifiable)), Ok(()));
        assert!(b.admit(&google, Some(Answer::Unverifiable)).is_err());
        let named = budgets(&["{ crawler: Googlebot, rate: 1/h }"]);
        assert_eq!(named.admit(&google, Some(Answer::Verified)), Ok(()));
        assert!(named.admit(&google, Some(Answer::Verified)).is_err());
    }

    #[test]
    fn a_spoofed_claim_takes_the_spoofed_budget_only() {
        let b = budgets(&["{ crawler: Googlebot, rate: 100/s, burst: 100 }", "{ identity: spoofed, rate: 1/h }"]);
        let google = crawler("Googlebot");
        assert_eq!(b.admit(&google, Some(Answer::Spoofed)), Ok(()));
        let t = b.admit(&crawler("bingbot"), Some(Answer::Spoofed)).unwrap_err();
        assert!(t.retry_after > 3000, "one bucket for every spoofed claim: {t:?}");
        let none = budgets(&["{ crawler: Googlebot, rate: 1/h }"]);
        for _ in 0..5 {
            assert_eq!(none.admit(&google, Some(Answer::Spoofed)), Ok(()), "no spoofed budget: not held");
        }
    }

    #[test]
    fn a_share_divides_rate_and_burst() {
        let b = Budgets::new(&[serde_saphyr::from_str("{ rate: 60/m, burst: 10 }").unwrap()], 0.5);
        let gpt = crawler("GPTBot");
        let admitted = (0..20).filter(|_| b.admit(&gpt, None).is_ok()).count();
        assert_eq!(admitted, 5);
    }
}

#[cfg(test)]
mod reshaped {
    use super::*;
    use robotsgate_crawlers::Catalogue;

    fn crawler(token: &str) -> Crawler {
        Catalogue::builtin().get(token).unwrap().clone()
    }

    fn delay(token: &str, secs: u64) -> Delayed {
        Delayed { token: token.into(), delay: Duration::from_secs(secs), line: 3 }
    }

    #[test]
    fn a_crawl_delay_is_the_crawlers_budget_unless_one_names_it() {
        let b = Budgets::new(&[serde_saphyr::from_str("{ purpose: search, rate: 100/s, burst: 100 }").unwrap()], 1.0);
        let bing = crawler("bingbot");
        assert!(b.reshape(1.0, vec![delay("bingbot", 10)]));
        assert!(!b.reshape(1.0, vec![delay("bingbot", 10)]), "the same shape is kept, buckets and all");
        assert_eq!(b.admit(&bing, Some(Answer::Verified)), Ok(()));
        let t = b.admit(&bing, Some(Answer::Verified)).unwrap_err();
        assert_eq!(t.budget, "bingbot: Crawl-delay 10s (line 3)");
        assert!((9..=10).contains(&t.retry_after), "{t:?}");
        // A spoofed bingbot is not held to bing's delay.
        for _ in 0..5 {
            assert_eq!(b.admit(&bing, Some(Answer::Spoofed)), Ok(()));
        }
        // A budget naming the crawler wins over its delay.
        let named =
            Budgets::new(&[serde_saphyr::from_str("{ crawler: bingbot, rate: 100/s, burst: 50 }").unwrap()], 1.0);
        named.reshape(1.0, vec![delay("bingbot", 10)]);
        assert!((0..20).all(|_| named.admit(&bing, None).is_ok()));
        let shown = named.shown();
        assert_eq!(shown.len(), 2);
        assert!(shown[1].crawl_delay && shown[1].rate == "1/10s", "{shown:?}");
    }

    #[test]
    fn a_new_share_takes_effect_at_once() {
        let b = Budgets::new(&[serde_saphyr::from_str("{ rate: 60/m, burst: 10 }").unwrap()], 1.0);
        let gpt = crawler("GPTBot");
        assert!(b.reshape(0.5, Vec::new()));
        assert_eq!(b.share(), 0.5);
        assert_eq!((0..20).filter(|_| b.admit(&gpt, None).is_ok()).count(), 5);
        assert!(b.reshape(1.0, Vec::new()));
        assert_eq!((0..20).filter(|_| b.admit(&gpt, None).is_ok()).count(), 10, "a reshape starts fresh buckets");
    }
}
