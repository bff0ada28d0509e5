//! One AI policy, by purpose (search, AI search, AI training, user-triggered
//! fetches), compiled into every place a site states it: groups that
//! disallow the crawlers of each denied purpose, a `Content-Signal` line, a
//! `Content-Usage` line, and the `Content-Usage` response header.
//!
//! Which product tokens serve which purpose is the crawler catalogue's
//! knowledge (`robotsgate-crawlers`); the caller passes the tokens of the
//! denied purposes in. Compiling onto an origin's file never overrides what
//! the owner wrote: a token the file already has a group for keeps it, and
//! a preference line the file already states stays; where the two
//! disagree, the disagreement is reported.

use crate::Robots;
use crate::prefs::{Preferences, Signal, Usage};

/// What a policy says of one purpose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stance {
    /// Crawling and use for this purpose are welcome.
    #[default]
    Allow,
    /// Not for this purpose.
    Deny,
}

impl Stance {
    fn allows(self) -> bool {
        self == Stance::Allow
    }
}

/// A site's AI policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AiPolicy {
    /// Search engines.
    pub search: Stance,
    /// AI search and answers (`ai-input`; AIPREF's `ai-use`, input to a
    /// generative model the user did not supply the asset to).
    pub ai_search: Stance,
    /// Training AI models (`ai-train`, `train-ai`).
    pub ai_training: Stance,
    /// Fetches a person asks an AI assistant for.
    pub user_fetch: Stance,
}

/// A policy compiled for one origin file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compiled {
    /// The groups to append after the origin's text (see [`crate::merge`]).
    pub groups: String,
    /// The `Content-Usage` response header value for proxied pages.
    pub header: String,
    /// Where the origin's file says otherwise, in words.
    pub conflicts: Vec<String>,
}

fn yes(allow: bool) -> &'static str {
    if allow { "yes" } else { "no" }
}

fn y(allow: bool) -> &'static str {
    if allow { "y" } else { "n" }
}

/// The preference lines of the file's `*` group: where crawlers without a
/// group of their own read them; with `bare`, the lines outside any group
/// too (before the first `User-agent`, as a CDN may prepend them), which a
/// reader may take as said to everyone.
fn in_star<'p>(robots: &Robots, prefs: &'p Preferences, bare: bool) -> (Vec<&'p Signal>, Vec<&'p Usage>) {
    let star = robots.crawler("*").group().map(|g| g.lines.to_vec()).unwrap_or_default();
    let mine = |g: Option<u32>| g.map_or(bare, |g| star.contains(&g));
    (prefs.signals.iter().filter(|s| mine(s.group)).collect(), prefs.usages.iter().filter(|u| mine(u.group)).collect())
}

impl AiPolicy {
    /// The purposes a crawler of the catalogue's `purpose` (its name, as
    /// `ai-training`) may serve under this policy; `None` for a purpose the
    /// policy says nothing of (ads, archive, SEO tools, other).
    pub fn allows(&self, purpose: &str) -> Option<bool> {
        Some(match purpose {
            "search" => self.search.allows(),
            "ai-search" => self.ai_search.allows(),
            "ai-training" => self.ai_training.allows(),
            "user-fetch" => self.user_fetch.allows(),
            _ => return None,
        })
    }

    /// The `Content-Signal` line the policy states.
    pub fn signal_line(&self) -> String {
        format!(
            "Content-Signal: search={}, ai-input={}, ai-train={}",
            yes(self.search.allows()),
            yes(self.ai_search.allows()),
            yes(self.ai_training.allows())
        )
    }

    /// The `Content-Usage` header value (and, after a path, robots.txt
    /// line), in the current vocabulary's labels
    /// ([`crate::prefs::USAGE_KEYS`], draft-ietf-aipref-vocab-08): AI search
    /// is `ai-use`, and `search` covers only results that link to the source.
    pub fn usage_value(&self) -> String {
        format!(
            "train-ai={}, ai-use={}, search={}",
            y(self.ai_training.allows()),
            y(self.ai_search.allows()),
            y(self.search.allows())
        )
    }

    /// Compiles the policy onto `origin`: `denied` are the product tokens of
    /// the crawlers whose purpose it denies.
    pub fn compile(&self, denied: &[&str], origin: &[u8]) -> Compiled {
        let robots = Robots::parse(origin);
        let prefs = Preferences::read(origin);
        let mut conflicts = Vec::new();
        // Tokens the owner already wrote a group for keep it.
        let named: Vec<String> =
            robots.named_agents().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()).collect();
        let mut fresh: Vec<&str> = Vec::new();
        for token in denied {
            if named.contains(&token.to_ascii_lowercase()) {
                let agent = robots.crawler(token);
                if agent.is_allowed("/") {
                    conflicts.push(format!(
                        "the origin's own group for {token} lets it crawl `/`; the policy denies its purpose, and the owner's group stands"
                    ));
                } else {
                    // `/` is closed, but an Allow opens part of the site:
                    // the owner's line decides there, in the served file
                    // and at the gateway alike.
                    for rule in agent.rules().iter().filter(|r| r.kind == crate::RuleKind::Allow) {
                        conflicts.push(format!(
                            "line {}: the origin's own group for {token} allows `{}`; the policy denies its purpose, and the owner's line stands there, in the served file and in enforcement",
                            rule.line,
                            String::from_utf8_lossy(rule.written)
                        ));
                    }
                }
            } else if !fresh.iter().any(|t| t.eq_ignore_ascii_case(token)) {
                fresh.push(token);
            }
        }
        let mut groups = String::new();
        if !fresh.is_empty() {
            groups.push_str("# AI policy: crawlers of denied purposes\n");
            for token in &fresh {
                groups.push_str(&format!("User-agent: {token}\n"));
            }
            groups.push_str("Disallow: /\n");
        }
        // The preference lines stand in the `*` group, where crawlers
        // without a group of their own read them. Appending a `*` group with
        // no rules changes no verdict: Google merges it with the file's `*`
        // group, or, with none, an empty `*` group allows what no group did.
        let (signals, usages) = in_star(&robots, &prefs, false);
        let mut lines = Vec::new();
        if signals.is_empty() {
            lines.push(self.signal_line());
        }
        if usages.is_empty() {
            lines.push(format!("Content-Usage: / {}", self.usage_value()));
        }
        conflicts.extend(self.stated_conflicts(&signals, &usages));
        if !lines.is_empty() {
            if !groups.is_empty() {
                groups.push('\n');
            }
            groups.push_str("# AI policy: preferences\nUser-agent: *\n");
            for l in lines {
                groups.push_str(&l);
                groups.push('\n');
            }
        }
        Compiled { groups, header: self.usage_value(), conflicts }
    }

    /// Where a file, as crawlers fetch it, says otherwise than the policy:
    /// a crawler of a denied purpose (`denied`, the ones that send
    /// requests) that may crawl `/`, and preference lines of the `*` group
    /// with another answer. What a monitor alerts on when a deploy drops a
    /// group or a CDN prepends its own signal.
    pub fn contradictions(&self, denied: &[&str], body: &[u8]) -> Vec<String> {
        let robots = Robots::parse(body);
        let prefs = Preferences::read(body);
        let mut found: Vec<String> = denied
            .iter()
            .filter(|t| robots.crawler(t).is_allowed("/"))
            .map(|t| format!("{t} may crawl `/`, but the AI policy denies its purpose"))
            .collect();
        let (signals, usages) = in_star(&robots, &prefs, true);
        found.extend(self.stated_conflicts(&signals, &usages));
        found
    }

    /// The preference lines (of the `*` group) that answer otherwise than
    /// the policy.
    fn stated_conflicts(&self, signals: &[&Signal], usages: &[&Usage]) -> Vec<String> {
        let mut conflicts = Vec::new();
        for s in signals {
            for e in &s.entries {
                let ours = match e.key.as_str() {
                    "search" => self.search.allows(),
                    "ai-input" => self.ai_search.allows(),
                    "ai-train" => self.ai_training.allows(),
                    _ => continue,
                };
                if e.allow.is_some_and(|a| a != ours) {
                    conflicts.push(format!(
                        "line {}: the file says `{}={}`, the policy `{}={}`",
                        s.line,
                        e.key,
                        e.value,
                        e.key,
                        yes(ours)
                    ));
                }
            }
        }
        for u in usages {
            for e in &u.entries {
                let ours = match e.key.as_str() {
                    "train-ai" => self.ai_training.allows(),
                    "ai-use" => self.ai_search.allows(),
                    "search" => self.search.allows(),
                    _ => continue,
                };
                if e.allow.is_some_and(|a| a != ours) {
                    conflicts.push(format!(
                        "line {}: the file says `{}={}` for `{}`, the policy `{}={}`",
                        u.line,
                        e.key,
                        e.value,
                        u.path.as_deref().unwrap_or(""),
                        e.key,
                        y(ours)
                    ));
                }
            }
        }
        conflicts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> AiPolicy {
        AiPolicy { ai_training: Stance::Deny, ..AiPolicy::default() }
    }

    #[test]
    fn compiles_onto_an_empty_file() {
        let c = policy().compile(&["GPTBot", "ClaudeBot", "CCBot"], b"");
        let merged = crate::merge::append(b"", &c.groups).unwrap();
        let robots = Robots::parse(&merged);
        for t in ["GPTBot", "ClaudeBot", "CCBot"] {
            assert!(!robots.crawler(t).is_allowed("/a"), "{t}");
        }
        assert!(robots.crawler("Googlebot").is_allowed("/a"));
        let prefs = Preferences::read(&merged);
        let a = prefs.applied(robots.crawler("Googlebot").group().unwrap().lines, b"/a", true);
        assert_eq!(a.signals.len(), 1);
        use crate::prefs::Stated;
        // The policy's AI search (allowed here) is -08's `ai-use`.
        assert_eq!(
            a.usage,
            [("train-ai", Stated::Disallowed), ("ai-use", Stated::Allowed), ("search", Stated::Allowed)]
        );
        assert_eq!(c.header, "train-ai=n, ai-use=y, search=y");
        assert!(c.conflicts.is_empty());
    }

    #[test]
    fn the_owner_s_lines_stand_and_conflicts_are_named() {
        let origin = b"User-agent: *\nContent-Signal: search=yes, ai-train=yes\nDisallow: /private\n\nUser-agent: GPTBot\nAllow: /\n";
        let c = policy().compile(&["GPTBot", "ClaudeBot"], origin);
        assert!(c.groups.contains("User-agent: ClaudeBot") && !c.groups.contains("User-agent: GPTBot"), "{}", c.groups);
        assert!(!c.groups.contains("Content-Signal"), "the origin's signal stands: {}", c.groups);
        assert!(c.groups.contains("Content-Usage: / train-ai=n"), "{}", c.groups);
        assert_eq!(c.conflicts.len(), 2, "{:?}", c.conflicts);
        assert!(
            c.conflicts.iter().any(|m| m.contains("GPTBot")) && c.conflicts.iter().any(|m| m.contains("ai-train=yes"))
        );
    }

    #[test]
    fn an_owner_s_allow_under_a_closed_root_is_named_with_its_line() {
        let origin = b"User-agent: GPTBot\nAllow: /public/\nDisallow: /\n";
        let c = policy().compile(&["GPTBot"], origin);
        assert_eq!(c.conflicts.len(), 1, "{:?}", c.conflicts);
        assert!(c.conflicts[0].starts_with("line 2:") && c.conflicts[0].contains("`/public/`"), "{:?}", c.conflicts);
        assert!(policy().compile(&["GPTBot"], b"User-agent: GPTBot\nDisallow: /\n").conflicts.is_empty());
    }

    #[test]
    fn contradictions_of_a_fetched_file() {
        let p = policy();
        let good = b"User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /\n";
        assert!(p.contradictions(&["GPTBot"], good).is_empty());
        // A deploy drops the GPTBot group; a CDN prepends its own signal.
        let dropped = b"User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n";
        assert_eq!(
            p.contradictions(&["GPTBot"], dropped),
            ["GPTBot may crawl `/`, but the AI policy denies its purpose"]
        );
        let prepended =
            b"User-agent: *\nContent-Signal: search=yes, ai-train=yes\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /\n";
        let found = p.contradictions(&["GPTBot"], prepended);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`ai-train=yes`"), "{found:?}");
        // A bare line before every group, as a CDN may prepend it.
        let bare = b"Content-Signal: ai-train=yes\n\nUser-agent: *\nContent-Signal: ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /\n";
        let found = p.contradictions(&["GPTBot"], bare);
        assert!(found.len() == 1 && found[0].starts_with("line 1:"), "{found:?}");
    }
}
