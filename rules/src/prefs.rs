//! AI usage preferences written in robots.txt: Cloudflare's
//! `Content-Signal` (`search=yes, ai-input=no, ai-train=no`), the IETF
//! AIPREF drafts' `Content-Usage` (`/path train-ai=n`, an RFC 9651
//! dictionary after a path, matched by path as Allow and Disallow are) and
//! RSL's global `License: <URL>`.
//!
//! Google's matcher ignores all three, and so does the engine: they are read
//! here, in a pass of their own over the same parser events, each kept with
//! its line and the group it stands in, and never change a verdict. Which
//! group's lines apply to a crawler is the group Google's matcher picks for
//! it ([`crate::Agent::group`]).

use crate::parse::{self, Directive, Handler, KeyKind};

/// The keys `Content-Signal` knows, with yes/no values.
pub const SIGNAL_KEYS: [&str; 4] = ["search", "ai-input", "ai-train", "use"];
/// The vocabulary `Content-Usage` knows, with y/n values.
pub const USAGE_KEYS: [&str; 3] = ["train-ai", "ai-use", "search"];

/// One `key=value` of a preference line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key, lower case.
    pub key: String,
    /// Yes (`yes`, `y`) or no (`no`, `n`); `None` when the value is neither.
    pub allow: Option<bool>,
    /// The value as written.
    pub value: String,
}

/// A `Content-Signal` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    /// Its line.
    pub line: u32,
    /// The first `user-agent` line of its group; `None` before any group.
    pub group: Option<u32>,
    /// Its entries, as written.
    pub entries: Vec<Entry>,
    /// Text that is no `key=value` member, if any.
    pub junk: Option<String>,
}

/// A `Content-Usage` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Its line.
    pub line: u32,
    /// The first `user-agent` line of its group; `None` before any group.
    pub group: Option<u32>,
    /// The path pattern; `None` when the line has none (the drafts require one).
    pub path: Option<String>,
    /// Its entries.
    pub entries: Vec<Entry>,
    /// Text that is no `key=value` member, if any.
    pub junk: Option<String>,
}

/// A `License` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct License {
    /// Its line.
    pub line: u32,
    /// The URL as written.
    pub url: String,
}

/// Every preference line of a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preferences {
    /// `Content-Signal` lines.
    pub signals: Vec<Signal>,
    /// `Content-Usage` lines.
    pub usages: Vec<Usage>,
    /// `License` lines.
    pub licenses: Vec<License>,
}

/// What applies to one crawler and URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied<'p> {
    /// The `Content-Signal` lines of the crawler's group.
    pub signals: Vec<&'p Signal>,
    /// The `Content-Usage` lines of the crawler's group whose path matches
    /// the URL and is the longest that does (several when they tie).
    pub usages: Vec<&'p Usage>,
    /// Each usage key's answer: any `n` among the deciding lines wins.
    pub usage: Vec<(String, bool)>,
    /// The file's `License` lines.
    pub licenses: Vec<&'p License>,
}

fn yes_no(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "y" | "?1" => Some(true),
        "no" | "n" | "?0" => Some(false),
        _ => None,
    }
}

/// `key=value` members separated by commas (Content-Signal) or by commas
/// and spaces (a lenient reading of an RFC 9651 dictionary).
fn entries(text: &str) -> (Vec<Entry>, Option<String>) {
    let mut out = Vec::new();
    let mut junk = Vec::new();
    // An empty member (`a=y,,b=n`) is a slip readers may stumble on; one
    // trailing comma is let pass.
    let members: Vec<&str> = text.split(',').collect();
    let last = members.len().saturating_sub(1);
    if members.iter().enumerate().any(|(i, m)| m.trim().is_empty() && i != last && !text.trim().is_empty()) {
        junk.push("(an empty member between commas)");
    }
    for member in members.into_iter().flat_map(str::split_whitespace) {
        match member.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                let value = v.trim().trim_matches('"').to_string();
                out.push(Entry { key: k.trim().to_ascii_lowercase(), allow: yes_no(&value), value });
            }
            _ => junk.push(member),
        }
    }
    (out, (!junk.is_empty()).then(|| junk.join(" ")))
}

impl Preferences {
    /// Reads the preference lines of a robots.txt body. Never fails: a
    /// line it cannot read is kept as written for lint.
    pub fn read(body: &[u8]) -> Preferences {
        #[derive(Default)]
        struct Reader {
            prefs: Preferences,
            group: Option<u32>,
            /// The last group-forming line was a `user-agent`.
            in_agents: bool,
        }
        impl Handler for Reader {
            fn directive(&mut self, d: &Directive<'_>) {
                match d.kind {
                    KeyKind::UserAgent => {
                        if !self.in_agents {
                            self.group = Some(d.line);
                        }
                        self.in_agents = true;
                    }
                    KeyKind::Allow | KeyKind::Disallow => self.in_agents = false,
                    KeyKind::Sitemap => {}
                    KeyKind::Unknown => {
                        let key = d.key.to_ascii_lowercase();
                        let value = String::from_utf8_lossy(d.value).trim().to_string();
                        match key.as_slice() {
                            // Unknown keys neither end a group nor start one,
                            // for Google's parser: the lines belong to the
                            // group the engine groups them with.
                            b"content-signal" => {
                                let (entries, junk) = entries(&value);
                                self.prefs.signals.push(Signal { line: d.line, group: self.group, entries, junk });
                            }
                            b"content-usage" => {
                                let (path, rest) = match value.split_once(char::is_whitespace) {
                                    Some((p, r)) if p.starts_with('/') || p.starts_with('*') => {
                                        (Some(p.to_string()), r)
                                    }
                                    None if value.starts_with('/') || value.starts_with('*') => {
                                        (Some(value.clone()), "")
                                    }
                                    _ => (None, value.as_str()),
                                };
                                let (entries, junk) = entries(rest);
                                self.prefs.usages.push(Usage { line: d.line, group: self.group, path, entries, junk });
                            }
                            b"license" => self.prefs.licenses.push(License { line: d.line, url: value }),
                            _ => {}
                        }
                    }
                }
            }
        }
        let mut reader = Reader::default();
        parse::parse(body, &mut reader);
        reader.prefs
    }

    /// Whether the file says anything about AI use.
    pub fn is_empty(&self) -> bool {
        self.signals.is_empty() && self.usages.is_empty() && self.licenses.is_empty()
    }

    /// What applies to a crawler whose group Google's matcher picks as
    /// `group_lines` (the first `user-agent` line of each merged group; see
    /// [`crate::GroupChoice`]) fetching `path`.
    pub fn applied(&self, group_lines: &[u32], path: &[u8]) -> Applied<'_> {
        let mine = |g: Option<u32>| g.is_some_and(|g| group_lines.contains(&g));
        let signals = self.signals.iter().filter(|s| mine(s.group)).collect();
        let mut best = 0;
        let mut usages: Vec<&Usage> = Vec::new();
        for u in self.usages.iter().filter(|u| mine(u.group)) {
            let Some(p) = &u.path else { continue };
            let pattern = parse::normalize_pattern(p.as_bytes());
            if !crate::pattern::matches(path, &pattern) {
                continue;
            }
            if pattern.len() > best {
                best = pattern.len();
                usages.clear();
            }
            if pattern.len() == best {
                usages.push(u);
            }
        }
        let mut usage: Vec<(String, bool)> = Vec::new();
        for e in usages.iter().flat_map(|u| &u.entries) {
            let Some(allow) = e.allow else { continue };
            match usage.iter_mut().find(|(k, _)| *k == e.key) {
                Some((_, a)) => *a &= allow,
                None => usage.push((e.key.clone(), allow)),
            }
        }
        Applied { signals, usages, usage, licenses: self.licenses.iter().collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOUDFLARE: &str = "# As Cloudflare's managed robots.txt writes it\nUser-Agent: *\nContent-Signal: search=yes,ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /\n";

    #[test]
    fn content_signal_in_its_group() {
        let p = Preferences::read(CLOUDFLARE.as_bytes());
        assert_eq!(p.signals.len(), 1);
        let s = &p.signals[0];
        assert_eq!((s.line, s.group), (3, Some(2)));
        let got: Vec<(&str, Option<bool>)> = s.entries.iter().map(|e| (e.key.as_str(), e.allow)).collect();
        assert_eq!(got, [("search", Some(true)), ("ai-train", Some(false))]);
        let robots = crate::Robots::parse(CLOUDFLARE.as_bytes());
        // Bingbot obeys `*` and reads its signal; GPTBot has its own group.
        let bing = robots.crawler("bingbot").group().unwrap();
        assert_eq!(p.applied(bing.lines, b"/x").signals.len(), 1);
        let gpt = robots.crawler("GPTBot").group().unwrap();
        assert!(p.applied(gpt.lines, b"/x").signals.is_empty());
    }

    #[test]
    fn content_usage_by_longest_path() {
        let body = "User-agent: *\nContent-Usage: / train-ai=n\nContent-Usage: /blog/ train-ai=y, search=y\nContent-Usage: /blog/ ai-use=n\nContent-Usage: train-ai=n\nLicense: https://example.com/license.xml\n";
        let p = Preferences::read(body.as_bytes());
        assert_eq!(p.usages.len(), 4);
        assert_eq!(p.usages[3].path, None, "no path");
        assert_eq!(p.licenses[0].url, "https://example.com/license.xml");
        let lines = [1];
        let a = p.applied(&lines, b"/blog/post");
        assert_eq!(a.usages.iter().map(|u| u.line).collect::<Vec<_>>(), [3, 4], "the longest path, both lines");
        assert_eq!(
            a.usage,
            [("train-ai".to_string(), true), ("search".to_string(), true), ("ai-use".to_string(), false)]
        );
        let a = p.applied(&lines, b"/shop");
        assert_eq!(a.usage, [("train-ai".to_string(), false)]);
        // Two lines with the same path: any n wins.
        let p = Preferences::read(b"User-agent: *\nContent-Usage: / train-ai=y\nContent-Usage: / train-ai=n\n");
        assert_eq!(p.applied(&[1], b"/").usage, [("train-ai".to_string(), false)]);
    }

    #[test]
    fn outside_a_group_and_unreadable() {
        let p = Preferences::read(
            b"Content-Signal: ai-train=no\nContent-Usage: / train-ai=maybe junk\nUser-agent: *\nDisallow:\n",
        );
        assert_eq!(p.signals[0].group, None);
        assert_eq!(p.usages[0].entries[0].allow, None);
        assert_eq!(p.usages[0].junk.as_deref(), Some("junk"));
        assert!(p.applied(&[3], b"/").signals.is_empty());
    }

    /// Reading preferences leaves every verdict as it was: the engine
    /// parses the same file the same way with or without them.
    #[test]
    fn verdicts_do_not_depend_on_preference_lines() {
        let with = crate::Robots::parse(CLOUDFLARE.as_bytes());
        let without =
            crate::Robots::parse(CLOUDFLARE.replace("Content-Signal: search=yes,ai-train=no\n", "").as_bytes());
        for agent in ["bingbot", "GPTBot", "Googlebot"] {
            for path in ["/", "/a", "/private"] {
                assert_eq!(with.crawler(agent).is_allowed(path), without.crawler(agent).is_allowed(path));
            }
        }
    }
}
