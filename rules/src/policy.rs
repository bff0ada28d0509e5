//! What a fetch result means for crawling, following Google's documented
//! handling of robots.txt status codes. This is the one place where HTTP
//! status semantics live: the gateway and the monitor both ask it, so they
//! can never disagree.

use std::fmt;

use crate::fetch::{FetchOutcome, MAX_REDIRECTS, TransportError};
use crate::{Robots, Verdict};

/// Why a crawler obeys no rules from a file: everything is allowed or
/// everything is disallowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A 4xx other than 429: there is no file, so nothing is restricted.
    ClientError(u16),
    /// More than five redirects, or a redirect that was not followed:
    /// treated as a 404.
    TooManyRedirects(usize),
    /// A 3xx whose target the fetcher did not follow.
    UnfollowedRedirect(u16),
    /// A 5xx: Google stops crawling the whole site.
    ServerError(u16),
    /// A 429: treated like a server error.
    TooManyRequests,
    /// A status Google gives no meaning to (1xx, >599): treated like a
    /// server error.
    UnexpectedStatus(u16),
    /// No response at all: treated like a server error.
    Unreachable(TransportError),
    /// Fetches have failed for 30 days and no good copy was ever seen:
    /// Google then assumes no restrictions.
    FailingWithoutCopy,
}

impl Reason {
    /// Whether this reason blocks all crawling.
    pub fn blocks(&self) -> bool {
        matches!(
            self,
            Reason::ServerError(_) | Reason::TooManyRequests | Reason::UnexpectedStatus(_) | Reason::Unreachable(_)
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::ClientError(s) => write!(f, "robots.txt answered {s}: no file, everything is allowed"),
            Reason::TooManyRedirects(n) => {
                write!(
                    f,
                    "robots.txt redirected {n} times (more than {MAX_REDIRECTS}): treated as missing, everything is allowed"
                )
            }
            Reason::UnfollowedRedirect(s) => write!(
                f,
                "robots.txt answered {s} without a usable redirect: treated as missing, everything is allowed"
            ),
            Reason::ServerError(s) => write!(f, "robots.txt answered {s}: Google treats the whole site as disallowed"),
            Reason::TooManyRequests => {
                f.write_str("robots.txt answered 429: Google treats the whole site as disallowed")
            }
            Reason::UnexpectedStatus(s) => {
                write!(f, "robots.txt answered {s}: treated as a server error, the whole site is disallowed")
            }
            Reason::Unreachable(e) => {
                write!(f, "robots.txt unreachable ({e}): Google treats the whole site as disallowed")
            }
            Reason::FailingWithoutCopy => {
                f.write_str("robots.txt has failed for 30 days with no earlier copy: Google assumes no restrictions")
            }
        }
    }
}

/// What crawlers obey for a site, given how its robots.txt fetch ended.
#[derive(Clone, Debug)]
pub enum Policy {
    /// The file's rules.
    Rules(Robots),
    /// Everything is allowed.
    AllowAll(Reason),
    /// Everything is disallowed.
    DisallowAll(Reason),
}

impl Policy {
    /// The policy one fetch implies, on its own (see [`crate::cache`] for
    /// what happens across fetches):
    ///
    /// - 2xx: the body's rules, whatever it looks like (Google parses HTML
    ///   error pages served with 200 too), cut at 500 KiB;
    /// - more than five redirects, or a 3xx that was not followed: allow all;
    /// - 4xx other than 429: allow all;
    /// - 429, 5xx, other statuses and transport errors: disallow all.
    pub fn from_fetch(outcome: &FetchOutcome) -> Policy {
        Policy::from_fetch_shape(outcome).unwrap_or_else(|| Policy::Rules(Robots::parse(&outcome.body)))
    }

    /// [`Policy::from_fetch`], with the lint of the body when it is a file
    /// of rules (empty otherwise), from the same single parse.
    pub fn from_fetch_linted(outcome: &FetchOutcome) -> (Policy, Vec<crate::Diagnostic>) {
        match Policy::from_fetch_shape(outcome) {
            Some(p) => (p, Vec::new()),
            None => {
                let (robots, findings) = Robots::parse_linted(&outcome.body);
                (Policy::Rules(robots), findings)
            }
        }
    }

    /// The policy of a fetch that is not a file of rules; `None` when it is.
    fn from_fetch_shape(outcome: &FetchOutcome) -> Option<Policy> {
        if outcome.redirects.len() > MAX_REDIRECTS {
            return Some(Policy::AllowAll(Reason::TooManyRedirects(outcome.redirects.len())));
        }
        Some(match (outcome.status, outcome.error) {
            (Some(200..=299), _) => return None,
            (Some(s @ 300..=399), _) => Policy::AllowAll(Reason::UnfollowedRedirect(s)),
            (Some(429), _) => Policy::DisallowAll(Reason::TooManyRequests),
            (Some(s @ 400..=499), _) => Policy::AllowAll(Reason::ClientError(s)),
            (Some(s @ 500..=599), _) => Policy::DisallowAll(Reason::ServerError(s)),
            (Some(s), _) => Policy::DisallowAll(Reason::UnexpectedStatus(s)),
            (None, e) => Policy::DisallowAll(Reason::Unreachable(e.unwrap_or(TransportError::Other))),
        })
    }

    /// The verdict for the crawler `agent` (a product token) fetching
    /// `url`, with the group chosen as that crawler chooses it (see
    /// [`crate::Robots::crawler`]); when no rules are involved,
    /// [`Verdict::reason`] says why.
    pub fn verdict(&self, agent: &str, url: &str) -> Verdict<'_> {
        match self {
            Policy::Rules(robots) => robots.crawler(agent).check(url),
            Policy::AllowAll(r) => Verdict { allowed: true, group: None, rule: None, reason: Some(*r) },
            Policy::DisallowAll(r) => Verdict { allowed: false, group: None, rule: None, reason: Some(*r) },
        }
    }

    /// The rules, when the policy has any.
    pub fn robots(&self) -> Option<&Robots> {
        match self {
            Policy::Rules(r) => Some(r),
            _ => None,
        }
    }

    /// Whether the whole site is blocked.
    pub fn blocks_everything(&self) -> bool {
        matches!(self, Policy::DisallowAll(_))
    }

    /// A short label: `rules`, `allow-all` or `disallow-all`.
    pub fn label(&self) -> &'static str {
        match self {
            Policy::Rules(_) => "rules",
            Policy::AllowAll(_) => "allow-all",
            Policy::DisallowAll(_) => "disallow-all",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(status: u16) -> Policy {
        Policy::from_fetch(&FetchOutcome::status(status).with_body(b"User-agent: *\nDisallow: /x\n".to_vec()))
    }

    #[test]
    fn every_status_class() {
        for s in [200, 203, 206, 299] {
            assert!(matches!(policy(s), Policy::Rules(_)), "{s}");
        }
        for s in [300, 301, 302, 304, 307, 308] {
            assert!(matches!(policy(s), Policy::AllowAll(Reason::UnfollowedRedirect(_))), "{s}");
        }
        for s in [400, 401, 403, 404, 410, 451, 499] {
            assert!(matches!(policy(s), Policy::AllowAll(Reason::ClientError(c)) if c == s), "{s}");
        }
        assert!(matches!(policy(429), Policy::DisallowAll(Reason::TooManyRequests)));
        for s in [500, 502, 503, 504, 599] {
            assert!(matches!(policy(s), Policy::DisallowAll(Reason::ServerError(c)) if c == s), "{s}");
        }
        for s in [100, 199, 600, 999] {
            assert!(matches!(policy(s), Policy::DisallowAll(Reason::UnexpectedStatus(_))), "{s}");
        }
        for e in [
            TransportError::Timeout,
            TransportError::Refused,
            TransportError::Reset,
            TransportError::Dns,
            TransportError::Tls,
        ] {
            assert!(
                matches!(Policy::from_fetch(&FetchOutcome::transport(e)), Policy::DisallowAll(Reason::Unreachable(x)) if x == e)
            );
        }
    }

    #[test]
    fn redirect_counts() {
        for hops in 0..=8usize {
            let urls = (0..hops).map(|i| format!("https://a/{i}")).collect();
            let p = Policy::from_fetch(
                &FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /\n".to_vec()).with_redirects(urls),
            );
            if hops <= MAX_REDIRECTS {
                assert!(matches!(p, Policy::Rules(_)), "{hops} hops");
            } else {
                assert!(matches!(p, Policy::AllowAll(Reason::TooManyRedirects(n)) if n == hops), "{hops} hops");
            }
        }
    }

    #[test]
    fn html_body_is_parsed_and_oversize_is_cut() {
        let html = b"<!DOCTYPE html><html><body>Disallow: /</body></html>".to_vec();
        let p = Policy::from_fetch(&FetchOutcome::status(200).with_body(html));
        assert!(p.verdict("bot", "https://a/").allowed, "no group, so nothing applies");
        let mut big = b"User-agent: *\nDisallow: /a\n".to_vec();
        big.resize(crate::parse::MAX_FILE_BYTES, b'#');
        big.extend_from_slice(b"\nDisallow: /b\n");
        let p = Policy::from_fetch(&FetchOutcome::status(200).with_body(big));
        assert!(!p.verdict("bot", "https://a/a").allowed);
        assert!(p.verdict("bot", "https://a/b").allowed);
    }

    #[test]
    fn verdict_carries_reason() {
        let (p503, p404, p200) = (policy(503), policy(404), policy(200));
        let v = p503.verdict("bot", "https://a/anything");
        assert!(!v.allowed);
        assert_eq!(v.reason, Some(Reason::ServerError(503)));
        assert!(v.reason.unwrap().blocks());
        let v = p404.verdict("bot", "https://a/x");
        assert!(v.allowed);
        assert_eq!(v.reason, Some(Reason::ClientError(404)));
        let v = p200.verdict("bot", "https://a/x");
        assert!(!v.allowed && v.reason.is_none() && v.rule.is_some());
    }
}
