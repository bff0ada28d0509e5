//! What crawlers obey across fetches: Google caches robots.txt (24 hours by
//! default, or the response's `max-age`), keeps the cached copy while
//! refreshes fail, and after 30 days of failures falls back to the last
//! good copy, or to no restrictions when there never was one.
//!
//! [`Cached::update`] is a pure step function of the previous state, the new
//! fetch outcome and the time, so the gateway and the monitor share it and
//! tests drive it through simulated months.

use std::time::{Duration, SystemTime};

use crate::fetch::FetchOutcome;
use crate::policy::{Policy, Reason};

/// How long things last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// Cache lifetime when the response says nothing (Google: 24 hours).
    pub default_ttl: Duration,
    /// How long failures may last before the fallback applies (Google: 30 days).
    pub max_failure: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes { default_ttl: Duration::from_secs(24 * 3600), max_failure: Duration::from_secs(30 * 24 * 3600) }
    }
}

/// Where the policy crawlers obey now came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The latest fetch gave a definite answer (2xx, 4xx, too many redirects).
    Fresh,
    /// The latest fetch failed; the last good copy is still obeyed.
    KeptDuringFailure,
    /// The latest fetch failed and there is no copy: everything is disallowed.
    FailingWithoutCopy,
    /// Failures have lasted past the limit: the last good copy, or allow all.
    FallbackAfterLimit,
}

/// A definite answer kept for when fetches fail.
#[derive(Clone, Debug)]
pub struct Good {
    /// The policy it implied (rules, or allow-all for a 4xx).
    pub policy: Policy,
    /// When it was fetched.
    pub fetched_at: SystemTime,
}

/// The cache state of one robots.txt.
#[derive(Clone, Debug)]
pub struct Cached {
    /// What crawlers obey now.
    pub policy: Policy,
    /// Why.
    pub source: Source,
    /// The last definite answer, if any.
    pub last_good: Option<Good>,
    /// When the current run of failures began.
    pub failing_since: Option<SystemTime>,
    /// When the next refresh is due.
    pub expires_at: SystemTime,
}

/// A fetch that gave a definite answer, as opposed to a failure (5xx, 429,
/// unexpected status, transport error) that says nothing about the file.
pub fn is_definite(policy: &Policy) -> bool {
    !matches!(policy, Policy::DisallowAll(_))
}

impl Cached {
    /// The state after `outcome`, given the state before it (`None` for the
    /// first fetch) and the time `now`.
    ///
    /// ```
    /// use rules::{FetchOutcome, cache::{Cached, Lifetimes, Source}};
    /// use std::time::{Duration, SystemTime};
    /// let t0 = SystemTime::UNIX_EPOCH;
    /// let good = FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /x\n".to_vec()).at(t0);
    /// let s = Cached::update(None, &good, t0, Lifetimes::default());
    /// let t1 = t0 + Duration::from_secs(3600);
    /// let s = Cached::update(Some(&s), &FetchOutcome::status(503).at(t1), t1, Lifetimes::default());
    /// assert_eq!(s.source, Source::KeptDuringFailure);
    /// assert!(s.policy.verdict("bot", "https://a/y").allowed);
    /// ```
    pub fn update(prev: Option<&Cached>, outcome: &FetchOutcome, now: SystemTime, life: Lifetimes) -> Cached {
        let fresh = Policy::from_fetch(outcome);
        if is_definite(&fresh) {
            let ttl = outcome.max_age.unwrap_or(life.default_ttl).saturating_sub(outcome.age);
            return Cached {
                last_good: Some(Good { policy: fresh.clone(), fetched_at: outcome.fetched_at }),
                policy: fresh,
                source: Source::Fresh,
                failing_since: None,
                expires_at: now + ttl,
            };
        }
        let last_good = prev.and_then(|p| p.last_good.clone());
        let failing_since = prev.and_then(|p| p.failing_since).unwrap_or(now);
        let failed_for = now.duration_since(failing_since).unwrap_or_default();
        // A failed refresh is retried sooner than a successful one.
        let retry = life.default_ttl.min(Duration::from_secs(3600));
        let (policy, source) = if failed_for >= life.max_failure {
            match &last_good {
                Some(good) => (good.policy.clone(), Source::FallbackAfterLimit),
                None => (Policy::AllowAll(Reason::FailingWithoutCopy), Source::FallbackAfterLimit),
            }
        } else {
            match &last_good {
                Some(good) => (good.policy.clone(), Source::KeptDuringFailure),
                None => (fresh, Source::FailingWithoutCopy),
            }
        };
        Cached { policy, source, last_good, failing_since: Some(failing_since), expires_at: now + retry }
    }

    /// Whether a refresh is due at `now`.
    pub fn needs_refresh(&self, now: SystemTime) -> bool {
        now >= self.expires_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn ok(at: SystemTime) -> FetchOutcome {
        FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /private\n".to_vec()).at(at)
    }

    #[test]
    fn staleness_over_simulated_months() {
        let life = Lifetimes::default();
        let t0 = SystemTime::UNIX_EPOCH + DAY * 1000;
        let mut s = Cached::update(None, &ok(t0), t0, life);
        assert_eq!(s.expires_at, t0 + DAY);
        assert!(!s.needs_refresh(t0 + DAY / 2) && s.needs_refresh(t0 + DAY));
        // Daily failures for 45 days: the good copy is obeyed throughout.
        for day in 1..=45u32 {
            let now = t0 + DAY * day;
            s = Cached::update(Some(&s), &FetchOutcome::status(503).at(now), now, life);
            assert!(s.policy.verdict("bot", "https://a/public").allowed, "day {day}");
            assert!(!s.policy.verdict("bot", "https://a/private").allowed, "day {day}");
            let want = if day >= 31 { Source::FallbackAfterLimit } else { Source::KeptDuringFailure };
            assert_eq!(s.source, want, "day {day}");
            assert_eq!(s.failing_since, Some(t0 + DAY));
        }
        // Recovery clears the failure run.
        let now = t0 + DAY * 46;
        s = Cached::update(Some(&s), &ok(now), now, life);
        assert_eq!((s.source, s.failing_since), (Source::Fresh, None));
    }

    #[test]
    fn failing_without_copy_disallows_then_allows_after_30_days() {
        let life = Lifetimes::default();
        let t0 = SystemTime::UNIX_EPOCH + DAY * 1000;
        let mut s = Cached::update(None, &FetchOutcome::status(500).at(t0), t0, life);
        assert_eq!(s.source, Source::FailingWithoutCopy);
        assert!(!s.policy.verdict("bot", "https://a/").allowed);
        for day in 1..=29u32 {
            let now = t0 + DAY * day;
            s = Cached::update(Some(&s), &FetchOutcome::status(429).at(now), now, life);
            assert!(!s.policy.verdict("bot", "https://a/").allowed, "day {day}");
        }
        let now = t0 + DAY * 30;
        s = Cached::update(Some(&s), &FetchOutcome::status(503).at(now), now, life);
        assert_eq!(s.source, Source::FallbackAfterLimit);
        assert_eq!(s.policy.verdict("bot", "https://a/").reason, Some(Reason::FailingWithoutCopy));
        assert!(s.policy.verdict("bot", "https://a/").allowed);
    }

    #[test]
    fn max_age_and_age_are_honoured() {
        let t0 = SystemTime::UNIX_EPOCH;
        let mut o = ok(t0).with_max_age(Duration::from_secs(600));
        o.age = Duration::from_secs(100);
        let s = Cached::update(None, &o, t0, Lifetimes::default());
        assert_eq!(s.expires_at, t0 + Duration::from_secs(500));
    }

    #[test]
    fn a_404_is_a_good_answer() {
        let t0 = SystemTime::UNIX_EPOCH;
        let s = Cached::update(None, &FetchOutcome::status(404).at(t0), t0, Lifetimes::default());
        assert_eq!(s.source, Source::Fresh);
        let s = Cached::update(Some(&s), &FetchOutcome::status(503).at(t0 + DAY), t0 + DAY, Lifetimes::default());
        assert_eq!(s.source, Source::KeptDuringFailure);
        assert!(s.policy.verdict("bot", "https://a/x").allowed);
    }
}
