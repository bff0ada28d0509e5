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

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use robotsgate_config::budgets::Budget;
use robotsgate_crawlers::{Crawler, Purpose};
use robotsgate_identity::Answer;

/// A site's budgets.
pub struct Budgets {
    entries: Vec<(Budget, DefaultKeyedRateLimiter<String>)>,
    clock: DefaultClock,
}

impl std::fmt::Debug for Budgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|(b, _)| b.describe())).finish()
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

/// How an identity answer is named in a budget.
pub fn identity_label(identity: Option<Answer>) -> &'static str {
    match identity {
        None | Some(Answer::Pending) => "unchecked",
        Some(a) => a.as_str(),
    }
}

impl Budgets {
    /// The limiters of `budgets`, each admitting `share` of its rate and
    /// burst (1.0 for a lone gateway).
    pub fn new(budgets: &[Budget], share: f64) -> Budgets {
        let entries = budgets
            .iter()
            .map(|b| {
                let share = share.clamp(0.0001, 1.0);
                let interval = b.rate.interval().div_f64(share);
                let burst = ((f64::from(b.burst) * share).floor() as u32).max(1);
                let quota = Quota::with_period(interval.max(std::time::Duration::from_nanos(1)))
                    .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
                    .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
                (b.clone(), RateLimiter::keyed(quota))
            })
            .collect();
        Budgets { entries, clock: DefaultClock::default() }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The budget that holds `crawler` asking with `identity`, if any.
    fn matching(
        &self,
        crawler: &Crawler,
        identity: Option<Answer>,
    ) -> Option<&(Budget, DefaultKeyedRateLimiter<String>)> {
        let label = identity_label(identity);
        let spoofed = identity == Some(Answer::Spoofed);
        let verified_search = crawler.purpose == Purpose::Search && identity == Some(Answer::Verified);
        self.entries.iter().find(|(b, _)| {
            let names = b.crawler.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(&crawler.token));
            if verified_search && !names {
                return false;
            }
            if spoofed && b.identity.as_deref() != Some("spoofed") {
                return false;
            }
            (b.crawler.is_none() || names)
                && b.purpose.as_deref().is_none_or(|p| p.eq_ignore_ascii_case(crawler.purpose.as_str()))
                && b.identity.as_deref().is_none_or(|i| i == label)
        })
    }

    /// Admits one request of `crawler` asking with `identity`, or says how
    /// long until one would be admitted.
    pub fn admit(&self, crawler: &Crawler, identity: Option<Answer>) -> Result<(), Throttle> {
        let Some((budget, limiter)) = self.matching(crawler, identity) else { return Ok(()) };
        // One bucket per crawler a budget holds (a purpose's budget gives
        // each of its crawlers the rate); spoofed claims share one.
        let key = if identity == Some(Answer::Spoofed) { String::from("spoofed") } else { crawler.token.clone() };
        match limiter.check_key(&key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                Err(Throttle { retry_after: secs.max(1), budget: budget.describe() })
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
