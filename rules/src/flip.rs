//! Verdict diffs: which (URL, crawler) pairs change between two policies,
//! and which rules decided before and after. The monitor's alerts and
//! `robots diff` are built on this.

use crate::policy::{Policy, Reason};
use crate::verdict::{RuleKind, Verdict};

/// The rule that decided, owned so it can outlive its `Robots`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecidingRule {
    /// 1-based line.
    pub line: u32,
    /// Allow or disallow.
    pub kind: RuleKind,
    /// The value as written (lossily decoded if not UTF-8).
    pub pattern: String,
}

/// An owned verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The crawler may fetch the URL.
    pub allowed: bool,
    /// The deciding rule, if a rule decided.
    pub rule: Option<DecidingRule>,
    /// Why, when no rules were involved (the fetch failed, or there is no file).
    pub reason: Option<Reason>,
}

impl From<Verdict<'_>> for Decision {
    fn from(v: Verdict<'_>) -> Decision {
        Decision {
            allowed: v.allowed,
            rule: v.rule.map(|r| DecidingRule {
                line: r.line,
                kind: r.kind,
                pattern: String::from_utf8_lossy(r.written).into_owned(),
            }),
            reason: v.reason,
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.allowed { "allowed" } else { "disallowed" })?;
        match (&self.rule, &self.reason) {
            (Some(r), _) => write!(f, " (line {}: {}: {})", r.line, r.kind, r.pattern),
            (None, Some(reason)) => write!(f, " ({reason})"),
            (None, None) => f.write_str(" (no rule)"),
        }
    }
}

/// One (URL, crawler) pair whose verdict changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flip {
    /// The URL.
    pub url: String,
    /// The crawler.
    pub agent: String,
    /// The verdict under the old policy.
    pub old: Decision,
    /// The verdict under the new policy.
    pub new: Decision,
}

/// Every (URL, crawler) pair whose verdict differs between `old` and `new`,
/// in URL order, then agent order.
///
/// ```
/// use rules::{FetchOutcome, Policy, flip::flips};
/// let old = Policy::from_fetch(&FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /a\n".to_vec()));
/// let new = Policy::from_fetch(&FetchOutcome::status(503));
/// let f = flips(&old, &new, &["https://s/a", "https://s/b"], &["Googlebot"]);
/// assert_eq!(f.len(), 1);
/// assert_eq!(f[0].url, "https://s/b");
/// ```
pub fn flips<U: AsRef<str>, A: AsRef<str>>(old: &Policy, new: &Policy, urls: &[U], agents: &[A]) -> Vec<Flip> {
    let mut out = Vec::new();
    for url in urls {
        for agent in agents {
            let (url, agent) = (url.as_ref(), agent.as_ref());
            let before = old.verdict(agent, url);
            let after = new.verdict(agent, url);
            if before.allowed != after.allowed {
                out.push(Flip { url: url.into(), agent: agent.into(), old: before.into(), new: after.into() });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FetchOutcome;

    fn rules(body: &str) -> Policy {
        Policy::from_fetch(&FetchOutcome::status(200).with_body(body.as_bytes().to_vec()))
    }

    #[test]
    fn status_change_turns_allowed_into_disallowed() {
        let old = rules("User-agent: *\nDisallow: /admin\n");
        let new = Policy::from_fetch(&FetchOutcome::status(503));
        let urls = ["https://s/", "https://s/products/1", "https://s/admin"];
        let f = flips(&old, &new, &urls, &["Googlebot", "bingbot"]);
        assert_eq!(f.len(), 4);
        assert!(f.iter().all(|x| x.old.allowed && !x.new.allowed));
        assert_eq!(f[0].new.reason, Some(Reason::ServerError(503)));
        // Back to 200 flips them back; a 404 opens /admin.
        assert_eq!(flips(&new, &old, &urls, &["Googlebot"]).len(), 2);
        let gone = Policy::from_fetch(&FetchOutcome::status(404));
        let f = flips(&old, &gone, &urls, &["Googlebot"]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].old.rule.as_ref().map(|r| r.line), Some(2));
        assert_eq!(f[0].new.reason, Some(Reason::ClientError(404)));
    }

    #[test]
    fn rule_change_names_both_rules() {
        let old = rules("User-agent: *\nDisallow: /cart\n");
        let new = rules("User-agent: *\nDisallow: /cart\nDisallow: /products/\nUser-agent: Googlebot\nAllow: /\n");
        let f = flips(&old, &new, &["https://s/products/9", "https://s/cart"], &["Googlebot", "bingbot"]);
        assert_eq!(f.len(), 2, "{f:?}");
        // bingbot loses /products/9 to the new line 3 ...
        assert_eq!((f[0].url.as_str(), f[0].agent.as_str()), ("https://s/products/9", "bingbot"));
        assert_eq!((f[0].old.allowed, f[0].new.allowed), (true, false));
        assert_eq!(f[0].new.rule.as_ref().map(|r| r.line), Some(3));
        // ... and Googlebot gains /cart through its new group's line 5.
        assert_eq!((f[1].url.as_str(), f[1].agent.as_str()), ("https://s/cart", "Googlebot"));
        assert_eq!(f[1].old.rule.as_ref().map(|r| r.line), Some(2));
        assert_eq!(f[1].new.rule.as_ref().map(|r| r.line), Some(5));
        assert_eq!(flips(&old, &old, &["https://s/x"], &["a"]), Vec::new());
    }
}
