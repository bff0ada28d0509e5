//! Recognising declared crawlers from the `User-Agent` header: the product
//! tokens of well-known crawlers plus those a config names, found in one
//! case-insensitive Aho-Corasick pass. A token must stand as a word of its
//! own (`Googlebot` in `compatible; Googlebot/2.1`, not in `NotGooglebotX`),
//! and the longest token found wins (`Googlebot-Image` over `Googlebot`).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// Product tokens of crawlers that announce themselves, as they appear in
/// their User-Agent and as robots.txt groups name them.
pub const WELL_KNOWN: &[&str] = &[
    "Googlebot",
    "Googlebot-Image",
    "Googlebot-News",
    "Googlebot-Video",
    "Storebot-Google",
    "Google-InspectionTool",
    "GoogleOther",
    "AdsBot-Google",
    "AdsBot-Google-Mobile",
    "Mediapartners-Google",
    "APIs-Google",
    "bingbot",
    "BingPreview",
    "msnbot",
    "AdIdxBot",
    "Slurp",
    "DuckDuckBot",
    "Baiduspider",
    "YandexBot",
    "YandexImages",
    "Applebot",
    "facebookexternalhit",
    "meta-externalagent",
    "Twitterbot",
    "LinkedInBot",
    "GPTBot",
    "ChatGPT-User",
    "OAI-SearchBot",
    "ClaudeBot",
    "Claude-User",
    "anthropic-ai",
    "PerplexityBot",
    "Perplexity-User",
    "CCBot",
    "Bytespider",
    "Amazonbot",
    "AhrefsBot",
    "SemrushBot",
    "MJ12bot",
    "DotBot",
    "PetalBot",
    "SeznamBot",
];

/// Finds crawlers in User-Agent strings.
#[derive(Clone, Debug)]
pub struct Crawlers {
    tokens: Vec<String>,
    finder: AhoCorasick,
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

impl Crawlers {
    /// The built-in list plus `extra` tokens.
    pub fn new<S: AsRef<str>>(extra: &[S]) -> Crawlers {
        let mut tokens: Vec<String> = WELL_KNOWN.iter().map(|t| t.to_string()).collect();
        for t in extra {
            let t = t.as_ref().trim();
            if !t.is_empty() && !tokens.iter().any(|k| k.eq_ignore_ascii_case(t)) {
                tokens.push(t.to_string());
            }
        }
        let finder = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&tokens)
            .unwrap_or_else(|_| AhoCorasick::new(WELL_KNOWN).unwrap_or_else(|_| unreachable_automaton()));
        Crawlers { tokens, finder }
    }

    /// The product token of the crawler `user_agent` declares, if any.
    ///
    /// ```
    /// let c = proxy::crawler::Crawlers::new::<&str>(&[]);
    /// let ua = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    /// assert_eq!(c.identify(ua), Some("Googlebot"));
    /// assert_eq!(c.identify("Googlebot-Image/1.0"), Some("Googlebot-Image"));
    /// assert_eq!(c.identify("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"), None);
    /// ```
    pub fn identify(&self, user_agent: &str) -> Option<&str> {
        let bytes = user_agent.as_bytes();
        let mut best: Option<(usize, usize)> = None;
        for m in self.finder.find_overlapping_iter(user_agent) {
            let before = m.start().checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(m.end()).copied();
            if before.is_some_and(is_token_byte) || after.is_some_and(is_token_byte) {
                continue;
            }
            let len = m.end() - m.start();
            if best.is_none_or(|(_, l)| len > l) {
                best = Some((m.pattern().as_usize(), len));
            }
        }
        best.map(|(i, _)| self.tokens[i].as_str())
    }
}

/// An automaton for a list that cannot fail to build (a single literal);
/// only reached if the token list itself could not be compiled.
fn unreachable_automaton() -> AhoCorasick {
    match AhoCorasick::new(["\u{0}robotsgate-no-crawler\u{0}"]) {
        Ok(a) => a,
        Err(e) => panic!("a one-literal automaton always builds: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifies_real_user_agents() {
        let c = Crawlers::new(&["ExampleBot"]);
        for (ua, want) in [
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0 Safari/537.36",
                Some("bingbot"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)",
                Some("GPTBot"),
            ),
            (
                "Mozilla/5.0 (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)",
                Some("AdsBot-Google-Mobile"),
            ),
            ("examplebot/3.0", Some("ExampleBot")),
            ("curl/8.5.0", None),
            ("Mozilla/5.0 (compatible; NotGooglebotX/1.0)", None),
            ("", None),
        ] {
            assert_eq!(c.identify(ua), want, "{ua}");
        }
    }
}
