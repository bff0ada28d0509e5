//! AI usage preferences written in robots.txt: Cloudflare's
//! `Content-Signal` (`search=yes, ai-input=no, ai-train=no, use=reference`),
//! the IETF AIPREF drafts' `Content-Usage` and RSL's global `License: <URL>`.
//!
//! `Content-Usage` is read as [`AIPREF_ATTACH`] and [`AIPREF_VOCAB`] define
//! it: `Content-Usage: [path] prefs` inside a group, in any order among the
//! group's rules; the value's path is there only when it starts with `/`,
//! and an absent path covers every path; the rule whose path matches the
//! URL and is longest in bytes of the encoded path decides, as for Allow and
//! Disallow, and rules of the same length all apply, combined so that a
//! disallow wins over an allow. The preference is an RFC 9651 dictionary
//! whose `y` and `n` tokens state the three categories of
//! draft-ietf-aipref-vocab-08: AI Training (`train-ai`: modifying a
//! generative model's parameters), AI Use (`ai-use`: input to a generative
//! model where the user did not supply the asset) and Search (`search`,
//! which overrides the other two inside a search application); anything
//! else, a label the reader does not know or a value that is no `y`/`n`
//! token, is ignored, and a dictionary that does not parse states nothing.
//! A category with no statement is unknown: there is no hierarchy to fall
//! back on. A file written for -07 (`train-ai` and `search` only) reads as
//! it did, its `ai-use` unknown. Preferences apply only to paths the group
//! lets the crawler fetch.
//!
//! Google's matcher ignores all three, and so does the engine: they are read
//! here, in a pass of their own over the same parser events, each kept with
//! its line and the group it stands in, and never change a verdict. Which
//! group's lines apply to a crawler is the group Google's matcher picks for
//! it ([`crate::Agent::group`]).

use crate::parse::{self, Directive, Handler, KeyKind};

/// The AIPREF vocabulary draft robotsgate follows.
pub const AIPREF_VOCAB: &str = "draft-ietf-aipref-vocab-08";
/// The AIPREF attachment draft robotsgate follows (robots.txt and the header).
pub const AIPREF_ATTACH: &str = "draft-ietf-aipref-attach-05";

/// The keys `Content-Signal` knows: the first three take yes/no, `use`
/// one of [`USE_VALUES`].
pub const SIGNAL_KEYS: [&str; 4] = ["search", "ai-input", "ai-train", "use"];
/// The values of `Content-Signal`'s `use` key (Cloudflare's Content Signals
/// Policy, July 2026, marked as testing there), from the least reuse to
/// the most.
pub const USE_VALUES: [&str; 3] = ["immediate", "reference", "full"];
/// The categories of [`AIPREF_VOCAB`], by label: AI Training, AI Use and
/// Search. (-07 had `train-ai` and `search` alone; -08 brought `ai-use`
/// back, as input to a generative model.)
pub const USAGE_KEYS: [&str; 3] = ["train-ai", "ai-use", "search"];
/// Labels earlier AIPREF vocabulary drafts defined and [`AIPREF_VOCAB`]
/// does not, with what stands in their place now.
pub const RETIRED_USAGE_KEYS: [(&str, &str); 2] = [
    ("train-genai", "`train-ai` replaces it, and covers training of generative models only"),
    (
        "bots",
        "no label replaces it: there is no parent category any more; state `train-ai`, `ai-use` and `search` each",
    ),
];
/// What Search means beside the others in [`AIPREF_VOCAB`]: an allowed
/// search use covers the application's own processing, training and AI
/// use included, as long as the output only links to and excerpts the
/// asset. Said where both are stated, so no reader takes `train-ai=n,
/// search=y` for a contradiction.
pub const SEARCH_OVERRIDES: &str = "in draft-ietf-aipref-vocab-08 `search` overrides `train-ai` and `ai-use` inside a search application: search=y allows the processing a search engine does, training included, whose output links to the source";

/// What `use=` allows, in words (robotsgate's summary of Cloudflare's
/// policy); `None` for a value the policy does not define.
pub fn use_meaning(value: &str) -> Option<&'static str> {
    Some(match value {
        "immediate" => "read the content to act on it now, keeping and reusing none of it",
        "reference" => "index it, quote excerpts and link back to it",
        "full" => "reuse it whole, summaries and reproductions included",
        _ => return None,
    })
}

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
    /// The path pattern; `None` when the value does not start with `/`
    /// (the rule then covers every path of the group).
    pub path: Option<String>,
    /// The dictionary's members, in order, the last of a repeated key only.
    pub entries: Vec<Entry>,
    /// Why the preference is no RFC 9651 dictionary, if it is not (it then
    /// states nothing).
    pub junk: Option<String>,
}

/// One category's answer for a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stated {
    /// A `y` among the deciding rules, and no `n`.
    Allowed,
    /// An `n` among the deciding rules.
    Disallowed,
    /// No deciding rule states it.
    Unknown,
}

impl Stated {
    /// `allowed`, `disallowed` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stated::Allowed => "allowed",
            Stated::Disallowed => "disallowed",
            Stated::Unknown => "unknown",
        }
    }
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
    /// the URL and is the longest that does (several when they tie); none
    /// when the group does not let the crawler fetch the URL.
    pub usages: Vec<&'p Usage>,
    /// Each category of [`AIPREF_VOCAB`], in [`USAGE_KEYS`] order, with its
    /// answer: any `n` among the deciding lines wins, then any `y`.
    pub usage: Vec<(&'static str, Stated)>,
    /// Whether the group lets the crawler fetch the URL: preferences apply
    /// only then.
    pub fetchable: bool,
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
            grouping: parse::Grouping,
        }
        impl Handler for Reader {
            fn directive(&mut self, d: &Directive<'_>) {
                let group = self.grouping.see(d);
                if d.kind == KeyKind::Unknown {
                    let key = d.key.to_ascii_lowercase();
                    let value = String::from_utf8_lossy(d.value).trim().to_string();
                    match key.as_slice() {
                        // Unknown keys neither end a group nor start one,
                        // for Google's parser: the lines belong to the
                        // group the engine groups them with.
                        b"content-signal" => {
                            let (entries, junk) = entries(&value);
                            self.prefs.signals.push(Signal { line: d.line, group, entries, junk });
                        }
                        b"content-usage" => {
                            // A path is there only when the value starts with `/`.
                            let (path, rest) = match value.split_once([' ', '\t']) {
                                Some((p, r)) if p.starts_with('/') => (Some(p.to_string()), r),
                                None if value.starts_with('/') => (Some(value.clone()), ""),
                                _ => (None, value.as_str()),
                            };
                            let (entries, junk) = dictionary(rest.trim_matches([' ', '\t']));
                            self.prefs.usages.push(Usage { line: d.line, group, path, entries, junk });
                        }
                        b"license" => self.prefs.licenses.push(License { line: d.line, url: value }),
                        _ => {}
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
    /// [`crate::GroupChoice`]) fetching `path`, which the group lets it
    /// fetch when `fetchable` (Google's verdict).
    pub fn applied(&self, group_lines: &[u32], path: &[u8], fetchable: bool) -> Applied<'_> {
        let mine = |g: Option<u32>| g.is_some_and(|g| group_lines.contains(&g));
        let signals = self.signals.iter().filter(|s| mine(s.group)).collect();
        let mut best = 0;
        let mut usages: Vec<&Usage> = Vec::new();
        for u in self.usages.iter().filter(|u| fetchable && mine(u.group)) {
            // An absent path covers every path, as the shortest match.
            let length = match &u.path {
                None => 0,
                Some(p) => {
                    let pattern = parse::normalize_pattern(p.as_bytes());
                    if !crate::pattern::matches(path, &pattern) {
                        continue;
                    }
                    pattern.len()
                }
            };
            if length > best || usages.is_empty() {
                best = length;
                usages.clear();
            }
            if length == best {
                usages.push(u);
            }
        }
        let usage = USAGE_KEYS
            .iter()
            .map(|&key| {
                let said: Vec<bool> =
                    usages.iter().flat_map(|u| &u.entries).filter(|e| e.key == key).filter_map(|e| e.allow).collect();
                let stated = if said.contains(&false) {
                    Stated::Disallowed
                } else if said.contains(&true) {
                    Stated::Allowed
                } else {
                    Stated::Unknown
                };
                (key, stated)
            })
            .collect();
        Applied { signals, usages, usage, fetchable, licenses: self.licenses.iter().collect() }
    }
}

/// An AIPREF preference: an RFC 9651 dictionary. A member's value states
/// its category when it is the token `y` or `n` (parameters ignored), and
/// nothing otherwise; a repeated key keeps its last value. A text that is
/// no dictionary (upper-case keys included: the format is bytes, and keys
/// are lower case) states nothing, and says why.
fn dictionary(text: &str) -> (Vec<Entry>, Option<String>) {
    if text.is_empty() {
        return (Vec::new(), None);
    }
    match sfv::Parser::new(text.as_bytes()).parse_dictionary() {
        Ok(dict) => {
            let entries = dict
                .iter()
                .map(|(key, member)| {
                    let (value, allow) = match member {
                        sfv::ListEntry::Item(item) => {
                            let token = item.bare_item.as_token().map(|t| t.as_str().to_string());
                            let allow = match token.as_deref() {
                                Some("y") => Some(true),
                                Some("n") => Some(false),
                                _ => None,
                            };
                            let written = match &item.bare_item {
                                sfv::BareItem::Token(t) => t.as_str().to_string(),
                                sfv::BareItem::Boolean(true) => "?1".to_string(),
                                sfv::BareItem::Boolean(false) => "?0".to_string(),
                                sfv::BareItem::String(s) => format!("\"{}\"", s.as_str()),
                                other => format!("{other:?}"),
                            };
                            (written, allow)
                        }
                        sfv::ListEntry::InnerList(_) => ("(an inner list)".to_string(), None),
                    };
                    Entry { key: key.as_str().to_string(), allow, value }
                })
                .collect();
            (entries, None)
        }
        Err(e) => (Vec::new(), Some(format!("`{text}` is no RFC 9651 dictionary ({e})"))),
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
        assert_eq!(p.applied(bing.lines, b"/x", true).signals.len(), 1);
        let gpt = robots.crawler("GPTBot").group().unwrap();
        assert!(p.applied(gpt.lines, b"/x", true).signals.is_empty());
    }

    fn stated<'a>(a: &Applied<'a>) -> Vec<(&'static str, &'static str)> {
        a.usage.iter().map(|(k, s)| (*k, s.as_str())).collect()
    }

    /// attach-05's own example: a path-less rule covers every path, the
    /// longest matching path decides, and a disallowed path has none.
    #[test]
    fn the_attach_drafts_example() {
        let body = "User-Agent: *\nAllow: /\nDisallow: /never/\nContent-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n\nUser-Agent: ExampleBot\nAllow: /\nContent-Usage: train-ai=y\n";
        let p = Preferences::read(body.as_bytes());
        let robots = crate::Robots::parse(body.as_bytes());
        let star = robots.crawler("OtherBot").group().unwrap().lines.to_vec();
        let at = |path: &str| {
            let fetchable = robots.crawler("OtherBot").is_allowed(path);
            stated(&p.applied(&star, path.as_bytes(), fetchable))
        };
        // Written for -07: it reads as it did, `ai-use` unknown.
        assert_eq!(at("/test"), [("train-ai", "disallowed"), ("ai-use", "unknown"), ("search", "unknown")]);
        assert_eq!(at("/ai-ok/test"), [("train-ai", "allowed"), ("ai-use", "unknown"), ("search", "unknown")]);
        let none = [("train-ai", "unknown"), ("ai-use", "unknown"), ("search", "unknown")];
        assert_eq!(at("/never/test"), none, "not fetchable: none apply");
        let example = robots.crawler("ExampleBot").group().unwrap().lines.to_vec();
        assert_eq!(stated(&p.applied(&example, b"/never/test", true))[0], ("train-ai", "allowed"));
    }

    #[test]
    fn content_usage_by_longest_path_and_ties_combined() {
        let body = "User-agent: *\nContent-Usage: / train-ai=n\nContent-Usage: /blog/ train-ai=y, search=y\nContent-Usage: /blog/ ai-use=n, summarize=n\nLicense: https://example.com/license.xml\n";
        let p = Preferences::read(body.as_bytes());
        assert_eq!(p.usages.len(), 3);
        assert_eq!(p.licenses[0].url, "https://example.com/license.xml");
        let a = p.applied(&[1], b"/blog/post", true);
        assert_eq!(a.usages.iter().map(|u| u.line).collect::<Vec<_>>(), [3, 4], "the longest path, both lines");
        // Labels the vocabulary does not define are ignored (`summarize`);
        // -08's `ai-use` is read; there is no parent to fall back on.
        assert_eq!(stated(&a), [("train-ai", "allowed"), ("ai-use", "disallowed"), ("search", "allowed")]);
        let shop = stated(&p.applied(&[1], b"/shop", true));
        assert_eq!(shop, [("train-ai", "disallowed"), ("ai-use", "unknown"), ("search", "unknown")]);
        // Two rules of one length: a disallow wins.
        let p = Preferences::read(b"User-agent: *\nContent-Usage: / train-ai=y\nContent-Usage: / train-ai=n\n");
        assert_eq!(stated(&p.applied(&[1], b"/", true))[0], ("train-ai", "disallowed"));
        // Length is bytes of the encoded path: `/é` is `/%C3%A9`, seven
        // bytes, longer than `/%C3` though it is three bytes as written.
        let p = Preferences::read(
            "User-agent: *\nContent-Usage: /é train-ai=n\nContent-Usage: /%C3 train-ai=y\n".as_bytes(),
        );
        let a = p.applied(&[1], b"/%C3%A9page", true);
        assert_eq!(a.usages.iter().map(|u| u.line).collect::<Vec<_>>(), [2]);
    }

    /// RFC 9651 as the vocabulary draft reads it: only the tokens `y` and
    /// `n` state a category; the last of a repeated key counts; a value
    /// that is no dictionary states nothing.
    #[test]
    fn the_preference_is_a_structured_dictionary() {
        let one = |value: &str| {
            let p = Preferences::read(format!("User-agent: *\nContent-Usage: {value}\n").as_bytes());
            let u = p.usages[0].clone();
            (stated(&p.applied(&[1], b"/", true)), u)
        };
        let (got, _) = one("train-ai=y, train-ai, search=n, search=\"n\"");
        assert_eq!(got, [("train-ai", "unknown"), ("ai-use", "unknown"), ("search", "unknown")]);
        let (got, _) = one("train-ai;allow=n, train-ai=y");
        assert_eq!(got[0], ("train-ai", "allowed"));
        let (got, u) = one("Train-AI=n");
        assert_eq!(got[0], ("train-ai", "unknown"));
        assert!(u.junk.as_deref().is_some_and(|j| j.contains("RFC 9651")), "{u:?}");
        let (got, _) = one("train-ai=yes, search=?0");
        assert_eq!(got, [("train-ai", "unknown"), ("ai-use", "unknown"), ("search", "unknown")]);
        // Only `/` starts a path: `*` does not.
        let (_, u) = one("*.pdf train-ai=n");
        assert_eq!(u.path, None);
        assert!(u.junk.is_some());
    }

    #[test]
    fn outside_a_group_and_unreadable() {
        let p = Preferences::read(
            b"Content-Signal: ai-train=no\nContent-Usage: / train-ai=maybe junk\nUser-agent: *\nDisallow:\n",
        );
        assert_eq!(p.signals[0].group, None);
        assert!(p.usages[0].entries.is_empty());
        assert!(p.usages[0].junk.is_some());
        assert!(p.applied(&[3], b"/", true).signals.is_empty());
    }

    #[test]
    fn the_use_key_of_content_signal() {
        let p = Preferences::read(b"User-agent: *\nContent-Signal: search=yes, use=reference\n");
        let e = &p.signals[0].entries[1];
        assert_eq!((e.key.as_str(), e.value.as_str()), ("use", "reference"));
        assert!(use_meaning("reference").is_some() && use_meaning("partial").is_none());
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
