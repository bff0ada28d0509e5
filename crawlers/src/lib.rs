//! The crawler catalogue, shared by the gateway and the monitor: each known
//! crawler's product token, the User-Agent words that claim it, its
//! operator and purpose, whether it says it obeys robots.txt, which group it
//! reads, and how a claim to be it can be verified (IP-range feeds,
//! forward-confirmed reverse DNS, Web Bot Auth).
//!
//! The built-in catalogue is `catalogue.yaml` beside this crate, compiled
//! in; a config can add entries or override one by token. A User-Agent is
//! matched against every token and extra word in one case-insensitive pass.

pub mod import;
pub mod lint;
mod recent;

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde::{Deserialize, Serialize};

/// The catalogue shipped with robotsgate.
pub const BUILTIN: &str = include_str!("../catalogue.yaml");

/// What a crawler's fetches are for.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// A search engine's index.
    Search,
    /// Training AI models.
    AiTraining,
    /// Answers of an AI search or assistant, with links back.
    AiSearch,
    /// A fetch a person asked for (a link preview, an assistant reading a page).
    UserFetch,
    /// Ads quality and landing pages.
    Ads,
    /// A web archive or open dataset.
    Archive,
    /// SEO tools and backlink indexes.
    SeoTool,
    /// Anything else.
    Other,
}

impl Purpose {
    /// Every purpose, in the order tables show them.
    pub const ALL: [Purpose; 8] = [
        Purpose::Search,
        Purpose::AiSearch,
        Purpose::AiTraining,
        Purpose::UserFetch,
        Purpose::Ads,
        Purpose::Archive,
        Purpose::SeoTool,
        Purpose::Other,
    ];

    /// The name the config and the catalogue use.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Search => "search",
            Purpose::AiTraining => "ai-training",
            Purpose::AiSearch => "ai-search",
            Purpose::UserFetch => "user-fetch",
            Purpose::Ads => "ads",
            Purpose::Archive => "archive",
            Purpose::SeoTool => "seo-tool",
            Purpose::Other => "other",
        }
    }
}

/// Which robots.txt group a crawler reads, as its operator documents.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Groups {
    /// Its own group, else `*` (what Google's library does for any token).
    #[default]
    Own,
    /// Its own group, else this token's, else `*`.
    FallsBackTo(String),
    /// Only a group naming it; `*` does not apply.
    NamedOnly,
}

/// How a claim to be a crawler can be checked.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    /// Feeds of the operator's address ranges (`{"prefixes": [...]}`).
    #[serde(default)]
    pub ip_ranges: Vec<String>,
    /// Domain suffixes a forward-confirmed reverse DNS name must end in.
    #[serde(default)]
    pub rdns: Vec<String>,
    /// The operator's HTTP message signatures key directory (Web Bot Auth).
    #[serde(default)]
    pub web_bot_auth: Option<String>,
}

impl Verify {
    /// The operator publishes no way to verify: such a crawler is
    /// unverifiable, never spoofed.
    pub fn is_empty(&self) -> bool {
        self.ip_ranges.is_empty() && self.rdns.is_empty() && self.web_bot_auth.is_none()
    }
}

fn yes() -> bool {
    true
}

/// One crawler.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Crawler {
    /// The product token robots.txt groups name.
    pub token: String,
    /// Other words in a User-Agent that claim this crawler.
    #[serde(default)]
    pub user_agents: Vec<String>,
    /// Who runs it.
    pub operator: String,
    /// What its fetches are for.
    pub purpose: Purpose,
    /// The operator says it obeys robots.txt.
    pub obeys: bool,
    /// False for usage tokens, which name a preference and send no request.
    #[serde(default = "yes")]
    pub sends: bool,
    /// Which group it reads.
    #[serde(default)]
    pub groups: Groups,
    /// How a claim to be it can be verified.
    #[serde(default)]
    pub verify: Verify,
    /// Where the entry's facts come from.
    pub source: String,
    /// Where its purpose comes from, when not from `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose_source: Option<String>,
    /// How long it keeps a fetched robots.txt, as its operator documents
    /// it (`24h`); unset: RFC 9309's 24 hours. The compliance ledger's
    /// window: a request is judged against what the crawler could hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robots_cache: Option<String>,
    /// Where `robots_cache` comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robots_cache_source: Option<String>,
    /// Its operator documents that it waits `Crawl-delay` seconds between
    /// requests (Bing, Yandex; Google does not), as `source` says: the
    /// crawlers whose delay the gateway may make their budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crawl_delay: bool,
}

/// RFC 9309 §2.4: a crawler should not use a cached robots.txt for more
/// than 24 hours. The window of a crawler whose operator documents none.
pub const DEFAULT_ROBOTS_CACHE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

impl Crawler {
    /// How long it may hold a fetched robots.txt: `robots_cache`, or 24 h.
    pub fn robots_cache(&self) -> std::time::Duration {
        self.robots_cache.as_deref().and_then(|t| humantime::parse_duration(t).ok()).unwrap_or(DEFAULT_ROBOTS_CACHE)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// YAML anchors shared by entries; read through the aliases only.
    #[serde(default)]
    #[allow(dead_code)]
    shared: Option<serde::de::IgnoredAny>,
    crawlers: Vec<Crawler>,
}

/// Why a catalogue could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// Not YAML of the catalogue's shape.
    #[error("{origin}: {message}")]
    Shape {
        /// The file, or "the built-in catalogue".
        origin: String,
        /// What is wrong, with its line.
        message: String,
    },
    /// An entry is wrong in a way the shape does not catch.
    #[error("{origin}: crawlers[{index}] (`{token}`): {message}")]
    Entry {
        /// The file.
        origin: String,
        /// The entry's index.
        index: usize,
        /// Its token.
        token: String,
        /// What is wrong.
        message: String,
    },
}

/// The crawlers a User-Agent claims to be ([`Catalogue::claims`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims<'c> {
    /// The crawler its longest standing word names, with that word.
    pub first: Option<(&'c Crawler, &'c str)>,
    /// Every other crawler it names, longest word first; empty for every
    /// real crawler's User-Agent.
    pub others: Vec<(&'c Crawler, &'c str)>,
}

/// Every known crawler, and a matcher for User-Agents that claim one.
#[derive(Clone, Debug)]
pub struct Catalogue {
    crawlers: Vec<Crawler>,
    /// Token and extra words, each pointing at its crawler.
    words: Vec<(String, usize)>,
    finder: AhoCorasick,
    /// Told apart from every other catalogue of the process (a copy
    /// keeps it), so that [`recent`]'s answers are never another's.
    id: u64,
}

impl Catalogue {
    /// The built-in catalogue.
    pub fn builtin() -> &'static Catalogue {
        static BUILT: OnceLock<Catalogue> = OnceLock::new();
        BUILT.get_or_init(|| match Catalogue::parse(BUILTIN, "the built-in catalogue") {
            Ok(c) => c,
            // The file is compiled in and checked by this crate's tests.
            Err(e) => panic!("{e}"),
        })
    }

    /// Reads a catalogue in the built-in file's format; `origin` names it
    /// in errors.
    pub fn parse(yaml: &str, origin: &str) -> Result<Catalogue, CatalogueError> {
        let file: File = serde_saphyr::from_str(yaml)
            .map_err(|e| CatalogueError::Shape { origin: origin.to_string(), message: e.to_string() })?;
        Catalogue::from_entries(file.crawlers, origin)
    }

    /// A catalogue of `entries`, checked.
    pub fn from_entries(entries: Vec<Crawler>, origin: &str) -> Result<Catalogue, CatalogueError> {
        for (index, c) in entries.iter().enumerate() {
            let bad = |message: &str| CatalogueError::Entry {
                origin: origin.to_string(),
                index,
                token: c.token.clone(),
                message: message.to_string(),
            };
            if c.token.is_empty() || !c.token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(bad("a product token is letters, digits, `-` and `_`"));
            }
            if entries[..index].iter().any(|o| o.token.eq_ignore_ascii_case(&c.token)) {
                return Err(bad("this token is listed twice"));
            }
            if let Some(t) = &c.robots_cache
                && humantime::parse_duration(t).is_err()
            {
                return Err(bad(&format!("robots_cache `{t}` is not a duration (`24h`, `1d`)")));
            }
            if !c.sends && !c.verify.is_empty() {
                return Err(bad("a usage token sends no request, so there is nothing to verify"));
            }
            // Feeds may also be files (an absolute path), for gateways that
            // fetch nothing themselves; key directories are always URLs.
            for url in &c.verify.ip_ranges {
                if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with('/')) {
                    return Err(bad(&format!("`{url}` is neither an http(s) URL nor an absolute file path")));
                }
            }
            if let Some(url) = &c.verify.web_bot_auth
                && !(url.starts_with("https://") || url.starts_with("http://"))
            {
                return Err(bad(&format!("`{url}` is not an http(s) URL")));
            }
        }
        let mut words = Vec::new();
        for (i, c) in entries.iter().enumerate() {
            if c.sends {
                words.push((c.token.clone(), i));
                words.extend(c.user_agents.iter().map(|w| (w.clone(), i)));
            }
        }
        let finder = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(words.iter().map(|(w, _)| w))
            .map_err(|e| CatalogueError::Shape { origin: origin.to_string(), message: e.to_string() })?;
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Catalogue { crawlers: entries, words, finder, id })
    }

    /// This catalogue with `extra` added; an entry whose token is already
    /// here replaces it.
    pub fn with(&self, extra: &[Crawler], origin: &str) -> Result<Catalogue, CatalogueError> {
        let mut entries = self.crawlers.clone();
        for e in extra {
            match entries.iter_mut().find(|c| c.token.eq_ignore_ascii_case(&e.token)) {
                Some(c) => *c = e.clone(),
                None => entries.push(e.clone()),
            }
        }
        Catalogue::from_entries(entries, origin)
    }

    /// Every crawler.
    pub fn crawlers(&self) -> &[Crawler] {
        &self.crawlers
    }

    /// The product tokens of the crawlers with `purpose`, in catalogue
    /// order: the search crawlers whose verdicts the gate's floor and the
    /// sitemap checks guard, say.
    pub fn tokens_of(&self, purpose: Purpose) -> Vec<String> {
        self.crawlers.iter().filter(|c| c.purpose == purpose).map(|c| c.token.clone()).collect()
    }

    /// The crawler with product token `token`, compared case-insensitively.
    pub fn get(&self, token: &str) -> Option<&Crawler> {
        self.crawlers.iter().find(|c| c.token.eq_ignore_ascii_case(token))
    }

    /// The purpose of the crawler with product token `token`, as tables
    /// show it, or `unknown` for a token the catalogue does not hold.
    pub fn purpose_of(&self, token: &str) -> &'static str {
        self.get(token).map_or("unknown", |c| c.purpose.as_str())
    }

    /// The product tokens of every crawler whose purpose `policy` denies
    /// (usage tokens such as `Google-Extended` included: they are how Google
    /// and Apple read a training preference).
    pub fn denied_by(&self, policy: &rules::ai_policy::AiPolicy) -> Vec<&str> {
        self.crawlers
            .iter()
            .filter(|c| policy.allows(c.purpose.as_str()) == Some(false))
            .map(|c| c.token.as_str())
            .collect()
    }

    /// The tokens of [`Catalogue::denied_by`] that send requests: the ones
    /// a fetched file must disallow for the policy to hold.
    pub fn denied_senders(&self, policy: &rules::ai_policy::AiPolicy) -> Vec<&str> {
        self.crawlers
            .iter()
            .filter(|c| c.sends && policy.allows(c.purpose.as_str()) == Some(false))
            .map(|c| c.token.as_str())
            .collect()
    }

    /// Where `token` sorts when crawlers are grouped by purpose: the order
    /// of [`Purpose::ALL`], tokens the catalogue does not hold last.
    pub fn purpose_rank(&self, token: &str) -> usize {
        self.get(token).and_then(|c| Purpose::ALL.iter().position(|p| *p == c.purpose)).unwrap_or(Purpose::ALL.len())
    }

    /// The crawler a User-Agent claims to be, if any. A word must stand on
    /// its own (`Googlebot` in `compatible; Googlebot/2.1`, not in
    /// `NotGooglebotX`), and the longest word found wins (`Googlebot-Image`
    /// over `Googlebot`). Usage tokens are never claimed.
    ///
    /// ```
    /// let c = robotsgate_crawlers::Catalogue::builtin();
    /// let ua = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    /// assert_eq!(c.claimed_by(ua).map(|c| c.token.as_str()), Some("Googlebot"));
    /// assert_eq!(c.claimed_by("Googlebot-Image/1.0").map(|c| c.token.as_str()), Some("Googlebot-Image"));
    /// assert!(c.claimed_by("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0").is_none());
    /// ```
    pub fn claimed_by(&self, user_agent: &str) -> Option<&Crawler> {
        self.claim(user_agent).map(|(c, _)| c)
    }

    /// The crawler a User-Agent claims to be, and the word that claims it as
    /// the catalogue spells it: the crawler's token, or one of its
    /// `user_agents` (`msnbot` claims bingbot). robots.txt verdicts go by
    /// that word, as Google's matcher reads the product token a crawler
    /// sends; identity goes by the crawler.
    pub fn claim(&self, user_agent: &str) -> Option<(&Crawler, &str)> {
        self.claims(user_agent).first
    }

    /// Every crawler a User-Agent claims to be, by the word that claims
    /// each: [`Catalogue::claim`]'s first, then every other crawler named by
    /// a word that stands on its own, longest word first. A real crawler
    /// names one operator's crawler; a User-Agent that names two
    /// (`… Googlebot/2.1 … GPTBot/1.0`) is judged by the strictest of them,
    /// so that no crawler escapes its group by naming another as well.
    pub fn claims(&self, user_agent: &str) -> Claims<'_> {
        let answer = recent::get(self.id, user_agent).unwrap_or_else(|| {
            let answer = self.find_claims(user_agent);
            recent::put(self.id, user_agent, &answer);
            answer
        });
        let at = |w: u32| {
            let (word, i) = &self.words[w as usize];
            (&self.crawlers[*i], word.as_str())
        };
        Claims { first: answer.first.map(at), others: answer.others.into_iter().map(at).collect() }
    }

    /// [`Catalogue::claims`] as word indexes, found in the User-Agent.
    fn find_claims(&self, user_agent: &str) -> recent::Answer {
        let bytes = user_agent.as_bytes();
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        // (word index, length), the best per crawler; only a second crawler allocates.
        let mut best: Option<(usize, usize)> = None;
        let mut more: Vec<(usize, usize)> = Vec::new();
        for m in self.finder.find_overlapping_iter(user_agent) {
            let before = m.start().checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(word) || bytes.get(m.end()).copied().is_some_and(word) {
                continue;
            }
            let (w, len) = (m.pattern().as_usize(), m.end() - m.start());
            let crawler = self.words[w].1;
            let Some(first) = best.as_mut() else {
                best = Some((w, len));
                continue;
            };
            match std::iter::once(first).chain(more.iter_mut()).find(|(o, _)| self.words[*o].1 == crawler) {
                Some(held) if len > held.1 => *held = (w, len),
                Some(_) => {}
                None => more.push((w, len)),
            }
        }
        let Some(first) = best else { return recent::Answer::default() };
        if more.is_empty() {
            return recent::Answer { first: Some(first.0 as u32), others: Vec::new() };
        }
        // The longest word leads, as `claim` has always answered.
        let mut all = vec![first];
        all.extend(more);
        // Stable: of words as long, the one found first leads.
        all.sort_by_key(|&(_, len)| std::cmp::Reverse(len));
        let mut words = all.into_iter().map(|(w, _)| w as u32);
        recent::Answer { first: words.next(), others: words.collect() }
    }

    /// The catalogued token nearest to `token` when `token` is not one but
    /// looks like a typo of one (at most two edits, and less than a third
    /// of its length): `Googelbot` gives `Googlebot`.
    pub fn near(&self, token: &str) -> Option<&Crawler> {
        if self.get(token).is_some() || token.len() < 4 {
            return None;
        }
        // Spelled the same but for case, `-` and `_` (`GPT-Bot`,
        // `googlebot_news`): a typo. Otherwise tokens are compared without
        // the `bot`/`spider` ending most share, so that `Zealbot` is not a
        // typo of `PetalBot`: the stem tells crawlers apart, and a typo is
        // one slip in it (two in a long one; a swap of neighbours is one).
        // The same stem with another ending (`Yandex`, `Semrush`) is a name
        // of its own that operators document, not a slip.
        let plain = |t: &str| t.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
        let stem = |p: &str| {
            let cut = ["bot", "spider", "crawler"].iter().find_map(|end| p.strip_suffix(end)).map(str::len);
            p[..cut.unwrap_or(p.len())].to_string()
        };
        let mine = plain(token);
        if let Some(c) = self.crawlers.iter().find(|c| plain(&c.token) == mine) {
            return Some(c);
        }
        let my_stem = stem(&mine);
        let allowed = match my_stem.len() {
            0..5 => return None,
            5..10 => 1,
            _ => 2,
        };
        self.crawlers
            .iter()
            .map(|c| (edits(&my_stem, &stem(&plain(&c.token))), c))
            .filter(|(d, _)| (1..=allowed).contains(d))
            .min_by_key(|(d, _)| *d)
            .map(|(_, c)| c)
    }
}

/// Edit distance (insertions, deletions, substitutions, and a swap of two
/// neighbours counted as one: optimal string alignment) between two short
/// names. Typo finders share it: this catalogue's for crawler tokens, the
/// config's for keys.
pub fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests;
