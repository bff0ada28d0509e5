//! The robots.txt engine of robotsgate.
//!
//! Given robots.txt bytes, a crawler's product token and a URL, [`Robots`]
//! answers exactly as Google's open-source robots.txt matcher does (RFC 9309
//! plus Google's documented leniency), and says which group and which line
//! decided.
//!
//! ```
//! use rules::Robots;
//!
//! let robots = Robots::parse(b"\
//! User-agent: Googlebot
//! Disallow: /checkout
//! Allow: /checkout/help
//!
//! User-agent: *
//! Disallow: /
//! ");
//! let v = robots.check("Googlebot", "https://shop.example/checkout/pay");
//! assert!(!v.allowed);
//! assert_eq!(v.rule.unwrap().line, 2);
//! assert!(robots.is_allowed("googlebot", "https://shop.example/checkout/help/faq"));
//! assert!(!robots.is_allowed("OtherBot", "https://shop.example/"));
//! ```
//!
//! Around the engine, the crate holds what the gateway and the monitor must
//! agree on: [`Policy`] turns a [`FetchOutcome`] into what crawlers obey
//! (Google's status-code handling), [`cache`] carries it across fetches
//! (24-hour cache, 30-day fallback), [`scope`] finds the robots.txt that
//! governs a URL, [`lint`] explains a file's problems and [`flips`] diffs two
//! policies by verdict.
//!
//! # Two phases
//!
//! [`Robots::parse`] is the build phase: it never fails (any bytes are a
//! robots.txt to Google), normalises every pattern once, merges the groups
//! of each crawler and indexes their rules by leading literal. [`Robots::check`]
//! is the search phase: no allocation in the common case, no locks, no
//! logging. Choose a crawler's group once with [`Robots::agent`] to check
//! many URLs for it.
//!
//! # Guarantees
//!
//! - No input panics, in parsing or checking.
//! - A check costs one pass over the path (hashing its prefixes, and sliding
//!   over it for the wildcard rules' grams), plus O(path + pattern) for each
//!   candidate rule: no `*a*a*a…` pattern can make it backtrack.
//! - [`Robots`] is immutable, `Send + Sync` and cheap to clone.
//!
//! # Resource usage
//!
//! See `docs/BENCHMARKS.md` for numbers measured on the real-world corpus and
//! generated files; [`Robots::memory_usage`] reports the compiled size.

#![deny(missing_docs)]

mod agent_filter;
pub mod ai_policy;
mod bytes;
pub mod cache;
mod compile;
pub mod coverage;
pub mod crawlers;
pub mod delay;
pub mod fetch;
pub mod flip;
pub mod gate;
pub mod lint;
pub mod merge;
pub mod normal;
pub mod parse;
pub mod pattern;
mod policy;
pub mod prefs;
pub mod promise;
pub mod reading;
pub mod reference;
mod robots;
mod ruleset;
pub mod scope;
pub mod sitemap;
pub mod target;
mod verdict;

pub use compile::Extra;
pub use fetch::{FetchOutcome, TransportError};
pub use flip::{Flip, flips};
pub use lint::{Diagnostic, Severity, lint};
pub use parse::KeyKind;
pub use policy::{Policy, Reason};
pub use robots::{Agent, Robots};
pub use verdict::{GroupChoice, RuleKind, RuleRef, Verdict};

#[cfg(test)]
mod static_checks {
    fn send_sync<T: Send + Sync + Clone>() {}
    #[test]
    fn robots_is_send_sync_clone() {
        send_sync::<crate::Robots>();
    }
}
