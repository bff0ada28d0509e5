//! What a site's owner declares about its URLs: the saved URL sets, the
//! verdicts they must keep (`expect`, per crawler or per purpose), and what
//! the gate does when a robots.txt change breaks one (`gate`).
//!
//! ```yaml
//! url_sets:
//!   money:
//!     expect: { search: allowed }          # the set's default
//!     urls:
//!       - /
//!       - { url: /checkout/pay, expect: disallowed }   # every tested crawler
//!       - { url: /blog/, expect: { Googlebot: allowed, GPTBot: disallowed } }
//!   plain: [/a, /b]                        # no pins
//! ```
//!
//! The judgement itself is [`rules::gate`]; this module turns the config
//! into its inputs ([`crate::Site::pins`], [`crate::Site::floor`]), so that
//! the gateway, the monitor and `robots diff --config` read a pin the same
//! way.

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use robotsgate_crawlers::{Catalogue, Purpose};

/// A pinned verdict.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Expectation {
    /// Must stay crawlable (`allow` or `allowed`).
    #[serde(alias = "allowed")]
    Allow,
    /// Must stay blocked (`disallow` or `disallowed`).
    #[serde(alias = "disallowed")]
    Disallow,
}

impl Expectation {
    /// `allowed` or `disallowed`.
    pub fn as_str(self) -> &'static str {
        self.gate().as_str()
    }

    /// Whether a verdict keeps it.
    pub fn kept_by(self, allowed: bool) -> bool {
        self.gate().kept_by(allowed)
    }

    /// The engine's form.
    pub fn gate(self) -> rules::gate::Expect {
        match self {
            Expectation::Allow => rules::gate::Expect::Allowed,
            Expectation::Disallow => rules::gate::Expect::Disallowed,
        }
    }
}

/// What one URL's pins say: one verdict for every crawler the site tests
/// (`expect: allowed`), and verdicts by crawler or purpose
/// (`expect: { Googlebot: allowed, ai-training: disallowed }`). A crawler
/// named by its token wins over its purpose, which wins over the verdict
/// for every crawler.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    /// For every crawler the site tests.
    pub every: Option<Expectation>,
    /// By crawler product token or purpose, as written.
    pub each: Vec<(String, Expectation)>,
}

impl Pins {
    /// The verdict pinned for `agent`, whose catalogue purpose is `purpose`.
    pub fn for_agent(&self, agent: &str, purpose: Option<&str>) -> Option<Expectation> {
        let by = |name: &str| self.each.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, e)| *e);
        by(agent).or_else(|| purpose.and_then(by)).or(self.every)
    }

    /// [`Pins::for_agent`], with the purpose from `catalogue`.
    pub fn of(&self, agent: &str, catalogue: &Catalogue) -> Option<Expectation> {
        self.for_agent(agent, catalogue.get(agent).map(|c| c.purpose.as_str()))
    }

    /// These pins laid over a set's `defaults`: a key given here replaces
    /// the same key there.
    fn over(mut self, defaults: &Pins) -> Pins {
        if self.every.is_none() {
            // A URL's own verdict for every crawler outranks the set's keys too.
            for (k, e) in &defaults.each {
                if !self.each.iter().any(|(mine, _)| mine.eq_ignore_ascii_case(k)) {
                    self.each.push((k.clone(), *e));
                }
            }
            self.every = defaults.every;
        }
        self
    }

    fn is_empty(&self) -> bool {
        self.every.is_none() && self.each.is_empty()
    }
}

/// The name of a purpose (`search`, `ai-training`, …), if `key` is one.
pub fn purpose_named(key: &str) -> Option<Purpose> {
    Purpose::ALL.into_iter().find(|p| p.as_str().eq_ignore_ascii_case(key))
}

/// Why a key of an `expect:` mapping is refused: it names no purpose and
/// looks like a slip of a catalogued crawler's token or of a purpose, so
/// that reading it as a crawler of its own would pin nothing the owner
/// meant.
fn refused_key(key: &str) -> Option<String> {
    if purpose_named(key).is_some() || Catalogue::builtin().get(key).is_some() {
        return None;
    }
    let purposes = Purpose::ALL.map(Purpose::as_str);
    let lower = key.to_ascii_lowercase();
    if let Some(p) = purposes.iter().find(|p| robotsgate_crawlers::edits(&lower, p) <= 2 && lower.len() > 3) {
        return Some(format!("`{key}` is neither a catalogued crawler nor a purpose; did you mean the purpose `{p}`?"));
    }
    let near = Catalogue::builtin().near(key)?;
    Some(format!(
        "`{key}` is neither a catalogued crawler nor a purpose; did you mean `{}`? (a crawler of your own goes under `crawlers:`)",
        near.token
    ))
}

impl<'de> Deserialize<'de> for Pins {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pins, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pins;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`allowed` or `disallowed`, or a mapping of crawlers and purposes to them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Pins, E> {
                let every = Expectation::deserialize(de::value::StrDeserializer::<E>::new(v))?;
                Ok(Pins { every: Some(every), each: Vec::new() })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pins, A::Error> {
                let mut each: Vec<(String, Expectation)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if let Some(why) = refused_key(&key) {
                        return Err(de::Error::custom(why));
                    }
                    if each.iter().any(|(k, _)| k.eq_ignore_ascii_case(&key)) {
                        return Err(de::Error::custom(format!("`{key}` is pinned twice")));
                    }
                    let value: Expectation = map.next_value()?;
                    each.push((key, value));
                }
                if each.is_empty() {
                    return Err(de::Error::custom("name at least one crawler or purpose"));
                }
                Ok(Pins { every: None, each })
            }
        }
        d.deserialize_any(V)
    }
}

/// A URL to test, with the verdicts it must keep if any are pinned: a plain
/// string, or a mapping `{ url, expect }`. Deserialised by hand rather than
/// as an untagged enum, so that a wrong key in the mapping is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlEntry {
    /// Just the URL (or path).
    Plain(String),
    /// A URL with pinned verdicts (the set's defaults laid under its own).
    Expect {
        /// The URL (or path).
        url: String,
        /// What it must keep.
        expect: Pins,
    },
}

/// The mapping form of a [`UrlEntry`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinnedUrl {
    url: String,
    expect: Pins,
}

impl<'de> Deserialize<'de> for UrlEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UrlEntry, D::Error> {
        struct Entry;
        impl<'de> Visitor<'de> for Entry {
            type Value = UrlEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a URL, or a mapping with `url` and `expect`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UrlEntry, E> {
                Ok(UrlEntry::Plain(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<UrlEntry, A::Error> {
                let p = PinnedUrl::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(UrlEntry::Expect { url: p.url, expect: p.expect })
            }
        }
        d.deserialize_any(Entry)
    }
}

impl UrlEntry {
    /// The URL.
    pub fn url(&self) -> &str {
        match self {
            UrlEntry::Plain(u) | UrlEntry::Expect { url: u, .. } => u,
        }
    }

    /// The pinned verdicts, if any.
    pub fn expect(&self) -> Option<&Pins> {
        match self {
            UrlEntry::Plain(_) => None,
            UrlEntry::Expect { expect, .. } => Some(expect),
        }
    }

    fn with_defaults(self, defaults: &Pins) -> UrlEntry {
        if defaults.is_empty() {
            return self;
        }
        match self {
            UrlEntry::Plain(url) => UrlEntry::Expect { url, expect: defaults.clone() },
            UrlEntry::Expect { url, expect } => UrlEntry::Expect { url, expect: expect.over(defaults) },
        }
    }
}

/// A saved URL set: a list of URLs, or `{ expect, urls }` whose `expect`
/// is every URL's default. Its entries carry the defaults already.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlSet {
    /// The URLs, in the order written.
    pub urls: Vec<UrlEntry>,
}

impl std::ops::Deref for UrlSet {
    type Target = [UrlEntry];
    fn deref(&self) -> &[UrlEntry] {
        &self.urls
    }
}

impl<'a> IntoIterator for &'a UrlSet {
    type Item = &'a UrlEntry;
    type IntoIter = std::slice::Iter<'a, UrlEntry>;
    fn into_iter(self) -> Self::IntoIter {
        self.urls.iter()
    }
}

/// The mapping form of a [`UrlSet`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultedSet {
    #[serde(default)]
    expect: Option<Pins>,
    urls: Vec<UrlEntry>,
}

impl<'de> Deserialize<'de> for UrlSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UrlSet, D::Error> {
        struct Set;
        impl<'de> Visitor<'de> for Set {
            type Value = UrlSet;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of URLs, or a mapping with `urls` and a default `expect`")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UrlSet, A::Error> {
                let urls = Vec::<UrlEntry>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(UrlSet { urls })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<UrlSet, A::Error> {
                let set = DefaultedSet::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let defaults = set.expect.unwrap_or_default();
                Ok(UrlSet { urls: set.urls.into_iter().map(|u| u.with_defaults(&defaults)).collect() })
            }
        }
        d.deserialize_any(Set)
    }
}

/// What the gate does with a change that breaks a pin or the floor.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// The gateway holds the change and serves the last good copy until
    /// it is released; the monitor alerts (critical).
    #[default]
    Hold,
    /// The change is served; the monitor alerts that it would have been held.
    Warn,
    /// Nothing is judged.
    Off,
}

impl GateMode {
    /// The engine's form.
    pub fn gate(self) -> rules::gate::Mode {
        match self {
            GateMode::Hold => rules::gate::Mode::Hold,
            GateMode::Warn => rules::gate::Mode::Warn,
            GateMode::Off => rules::gate::Mode::Off,
        }
    }
}

impl crate::Site {
    /// Every (URL, crawler) pin of this site, for the gate: each URL's
    /// pins for the crawlers the site tests (`agents`), for every crawler
    /// a pin names, and for every catalogued crawler of a purpose a pin
    /// names. One URL is pinned once per crawler: its first entry wins.
    pub fn pins(&self, agents: &[String], catalogue: &Catalogue) -> Vec<rules::gate::Pin> {
        let mut out: Vec<rules::gate::Pin> = Vec::new();
        for entry in self.url_sets.values().flatten() {
            let Some(pins) = entry.expect() else { continue };
            let mut crawlers: Vec<&str> = agents.iter().map(String::as_str).collect();
            for (key, _) in &pins.each {
                match purpose_named(key) {
                    Some(p) => crawlers
                        .extend(catalogue.crawlers().iter().filter(|c| c.purpose == p).map(|c| c.token.as_str())),
                    None => crawlers.push(key),
                }
            }
            for agent in crawlers {
                let Some(expect) = pins.of(agent, catalogue) else { continue };
                let known = out.iter().any(|p| p.url == entry.url() && p.agent.eq_ignore_ascii_case(agent));
                if !known {
                    out.push(rules::gate::Pin {
                        url: entry.url().to_string(),
                        agent: agent.to_string(),
                        expect: expect.gate(),
                    });
                }
            }
        }
        out
    }

    /// The floor of this site: the root and the first URL of each saved
    /// set must not close for a catalogued search crawler.
    pub fn floor(&self, catalogue: &Catalogue) -> rules::gate::Floor {
        let mut urls = vec!["/".to_string()];
        for set in self.url_sets.values() {
            if let Some(first) = set.first()
                && !urls.iter().any(|u| u == first.url())
            {
                urls.push(first.url().to_string());
            }
        }
        let agents = catalogue.tokens_of(Purpose::Search);
        rules::gate::Floor { urls, agents, listed: Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Site};
    use std::path::Path;

    fn site(sets: &str) -> Result<Site, String> {
        let text = format!("sites:\n  - name: a\n    file: x\n    url_sets:\n{sets}");
        Config::parse(&text, Path::new("t.yaml")).map(|c| c.sites[0].clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn pins_by_crawler_purpose_and_default() {
        let s = site(
            "      money:\n        expect: { search: allowed }\n        urls:\n          - /\n          - { url: /pay, expect: disallowed }\n          - { url: /blog, expect: { GPTBot: disallowed } }\n",
        )
        .unwrap();
        let catalogue = robotsgate_crawlers::Catalogue::builtin();
        let agents = vec!["Googlebot".to_string(), "GPTBot".to_string()];
        let pins = s.pins(&agents, catalogue);
        let of =
            |url: &str, agent: &str| pins.iter().find(|p| p.url == url && p.agent == agent).map(|p| p.expect.as_str());
        assert_eq!(of("/", "Googlebot"), Some("allowed"));
        assert_eq!(of("/", "bingbot"), Some("allowed"), "search expands to the catalogue's crawlers");
        assert_eq!(of("/", "GPTBot"), None, "GPTBot is no search crawler");
        assert_eq!(of("/pay", "GPTBot"), Some("disallowed"), "the URL's own verdict outranks the set's");
        assert_eq!(of("/pay", "bingbot"), None, "the scalar form covers the tested crawlers");
        assert_eq!(of("/blog", "GPTBot"), Some("disallowed"));
        assert_eq!(of("/blog", "Googlebot"), Some("allowed"), "the set's default stays under the URL's keys");
        let floor = s.floor(catalogue);
        assert_eq!(floor.urls, ["/"]);
        assert!(floor.agents.iter().any(|a| a == "bingbot") && !floor.agents.iter().any(|a| a == "GPTBot"));
    }

    #[test]
    fn log_layouts_are_checked_at_load_with_their_key() {
        let log = |l: &str| {
            let text = format!("sites:\n  - name: a\n    file: x\n    logs:\n      - {l}\n");
            Config::parse(&text, Path::new("t.yaml")).map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(log("{ path: a.log, format: vhost_combined }").is_ok());
        assert!(
            log(r#"{ path: a.log, format: nginx, layout: '$remote_addr [$time_local] "$request" $status' }"#).is_ok()
        );
        let e = log("{ path: a.log, format: nginx, layout: '$remote_addr $status' }").unwrap_err();
        assert!(e.contains("sites[0].logs[0].layout") && e.contains("no time"), "{e}");
        let e = log("{ path: a.log, format: nginx }").unwrap_err();
        assert!(e.contains("sites[0].logs[0].format") && e.contains("layout"), "{e}");
        let e = log("{ path: a.log, format: syslog }").unwrap_err();
        assert!(e.contains("sites[0].logs[0].format") && e.contains("vhost_combined"), "{e}");
    }

    #[test]
    fn the_old_form_still_loads() {
        let s = site("      main:\n        - /x\n        - { url: /checkout, expect: disallow }\n").unwrap();
        let pins = s.pins(&["Googlebot".to_string()], robotsgate_crawlers::Catalogue::builtin());
        assert_eq!(pins.len(), 1);
        assert_eq!((pins[0].url.as_str(), pins[0].agent.as_str()), ("/checkout", "Googlebot"));
    }

    #[test]
    fn slips_are_named_with_their_line() {
        let e = site("      main:\n        - { url: /, expect: { Googelbot: allowed } }\n").unwrap_err();
        assert!(e.contains("line 6") && e.contains("did you mean `Googlebot`"), "{e}");
        let e = site("      main:\n        - { url: /, expect: { serch: allowed } }\n").unwrap_err();
        assert!(e.contains("purpose `search`"), "{e}");
        let e = site("      main:\n        expect: { search: maybe }\n        urls: [/]\n").unwrap_err();
        assert!(e.contains("line 6") && e.contains("maybe"), "{e}");
        let e = site("      main:\n        expect: allowed\n        url: [/]\n").unwrap_err();
        assert!(e.contains("url"), "{e}");
        let e = site("      main:\n        - { url: /, expect: { Googlebot: allowed, googlebot: allowed } }\n")
            .unwrap_err();
        assert!(e.contains("pinned twice"), "{e}");
        // A crawler of the site's own, far from any catalogued one, is a token.
        assert!(site("      main:\n        - { url: /, expect: { AcmeInternalFetcher: allowed } }\n").is_ok());
    }
}
