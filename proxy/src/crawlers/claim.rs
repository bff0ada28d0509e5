//! Recognising declared crawlers from the `User-Agent` header, through the
//! crawler catalogue (`robotsgate-crawlers`) that the monitor reads too:
//! its tokens and User-Agent words, plus the tokens a config lists under
//! `proxy.crawlers`. A word must stand on its own (`Googlebot` in
//! `compatible; Googlebot/2.1`, not in `NotGooglebotX`), and the longest
//! word found wins (`Googlebot-Image` over `Googlebot`).

use robotsgate_crawlers::{Catalogue, Crawler, Groups, Purpose, Verify};

/// Finds crawlers in User-Agent strings.
#[derive(Clone, Debug)]
pub struct Crawlers {
    catalogue: Catalogue,
}

impl Crawlers {
    /// `catalogue` plus `extra` tokens, each an entry of its own (operator
    /// and purpose unknown, nothing to verify it by) unless catalogued.
    pub fn new<S: AsRef<str>>(catalogue: &Catalogue, extra: &[S]) -> Crawlers {
        let entries: Vec<Crawler> = extra
            .iter()
            .map(|t| t.as_ref().trim())
            .filter(|t| !t.is_empty() && catalogue.get(t).is_none())
            .map(|t| Crawler {
                token: t.to_string(),
                user_agents: Vec::new(),
                operator: "unknown (proxy.crawlers)".into(),
                purpose: Purpose::Other,
                obeys: true,
                sends: true,
                groups: Groups::default(),
                verify: Verify::default(),
                source: "proxy.crawlers in the config".into(),
                purpose_source: None,
                robots_cache: None,
                robots_cache_source: None,
                crawl_delay: false,
            })
            .collect();
        // A bad extra token (spaces, punctuation) could not name a group;
        // the catalogue alone is used then, and the config check says why.
        let catalogue = catalogue.with(&entries, "proxy.crawlers").unwrap_or_else(|_| catalogue.clone());
        Crawlers { catalogue }
    }

    /// The catalogue in use.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// The crawler `user_agent` declares, and the word that declares it as
    /// the catalogue spells it (verdicts go by that word).
    ///
    /// ```
    /// let c = proxy::crawlers::claim::Crawlers::new::<&str>(robotsgate_crawlers::Catalogue::builtin(), &[]);
    /// let ua = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    /// assert_eq!(c.identify(ua).map(|(_, w)| w), Some("Googlebot"));
    /// assert_eq!(c.identify("Googlebot-Image/1.0").map(|(_, w)| w), Some("Googlebot-Image"));
    /// assert!(c.identify("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0").is_none());
    /// ```
    pub fn identify(&self, user_agent: &str) -> Option<(&Crawler, &str)> {
        self.catalogue.claim(user_agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifies_real_user_agents() {
        let c = Crawlers::new(Catalogue::builtin(), &["ExampleBot"]);
        for (ua, want) in [
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0 Safari/537.36",
                Some(("bingbot", "bingbot")),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)",
                Some(("GPTBot", "GPTBot")),
            ),
            (
                "Mozilla/5.0 (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)",
                Some(("AdsBot-Google-Mobile", "AdsBot-Google-Mobile")),
            ),
            ("msnbot/2.0b (+http://search.msn.com/msnbot.htm)", Some(("bingbot", "msnbot"))),
            ("examplebot/3.0", Some(("ExampleBot", "ExampleBot"))),
            ("curl/8.5.0", None),
            ("Mozilla/5.0 (compatible; NotGooglebotX/1.0)", None),
            ("Mozilla/5.0 (compatible; Google-Extended)", None),
            ("", None),
        ] {
            assert_eq!(c.identify(ua).map(|(c, w)| (c.token.as_str(), w)), want, "{ua}");
        }
    }
}
