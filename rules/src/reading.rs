//! Which reading of a robots.txt a verdict gives, and the words for it.
//!
//! Two readings are legitimate, and they differ for a few of Google's
//! crawlers. Google's open-source library (what `robots check` and
//! Google's spec tests follow) chooses a crawler's group by its own product
//! token, else `*`. Google's crawlers, as Google documents them, do not
//! all do that: Googlebot-Image, -News and -Video fall back to Googlebot's
//! group before `*`, and AdsBot-Google and a few others ignore `*`
//! ([`crate::crawlers`]). Every surface states which reading it gives, and
//! where the two differ for a crawler and a URL it shows both, with the
//! sentence [`why`] says.

use crate::crawlers::{Choice, choice};
use crate::{Robots, Verdict};

/// The library's reading, in a surface's words.
pub const LIBRARY: &str = "Google's open-source robots.txt library (as `robots check` and Google's spec tests)";

/// The crawlers' reading, in a surface's words.
pub const CRAWLER: &str = "Google's crawlers as Google documents them (Googlebot-Image, -News and -Video fall back to \
                           Googlebot's group; AdsBot-Google and Mediapartners-Google ignore `*`)";

/// One crawler's verdict on one URL under both readings.
#[derive(Clone, Debug)]
pub struct Readings<'r> {
    /// As Google's open-source library answers.
    pub library: Verdict<'r>,
    /// As Google's crawler with that token obeys the file.
    pub crawler: Verdict<'r>,
    /// Why the two may differ for this crawler ([`why`]).
    pub why: String,
}

impl Readings<'_> {
    /// The two readings give a different verdict, group or deciding line.
    pub fn differ(&self) -> bool {
        let (a, b) = (&self.library, &self.crawler);
        a.allowed != b.allowed
            || a.group.map(|g| g.lines) != b.group.map(|g| g.lines)
            || a.rule.map(|r| r.line) != b.rule.map(|r| r.line)
    }
}

/// Both readings of `robots` for `agent` fetching `url`; `None` for a
/// crawler that reads every file as the library does (nearly all), which
/// costs no check.
pub fn readings<'r>(robots: &'r Robots, agent: &str, url: &str) -> Option<Readings<'r>> {
    let why = why(agent)?;
    Some(Readings { library: robots.check(agent, url), crawler: robots.crawler(agent).check(url), why })
}

/// One sentence on why Google's crawler `agent` reads a file unlike the
/// library; `None` for a crawler that reads it as the library does.
///
/// ```
/// assert!(rules::reading::why("Googlebot-Image").unwrap().contains("Googlebot's group"));
/// assert!(rules::reading::why("AdsBot-Google").unwrap().contains("ignores"));
/// assert!(rules::reading::why("Googlebot").is_none());
/// ```
pub fn why(agent: &str) -> Option<String> {
    match choice(agent) {
        Choice::Plain => None,
        Choice::FallsBackTo(parent) => Some(format!(
            "Google documents that {agent} obeys {parent}'s group when no group names it; Google's open-source \
             library has no such fallback and applies the `*` group."
        )),
        Choice::NamedOnly => Some(format!(
            "Google documents that {agent} ignores the `*` group and obeys only a group that names it; Google's \
             open-source library applies `*` to it."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &[u8] = b"User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /private\n";

    #[test]
    fn the_readings_differ_exactly_where_google_documents_it() {
        let robots = Robots::parse(FILE);
        let image = readings(&robots, "Googlebot-Image", "https://shop.example/about").unwrap();
        assert!(!image.library.allowed && image.crawler.allowed && image.differ());
        assert!(image.why.contains("Googlebot's group"), "{}", image.why);
        let ads = readings(&robots, "AdsBot-Google", "https://shop.example/about").unwrap();
        assert!(!ads.library.allowed && ads.crawler.allowed && ads.crawler.group.is_none() && ads.differ());
        // Crawlers that choose as the library does have one reading.
        assert!(readings(&robots, "Googlebot", "https://shop.example/private/x").is_none());
        assert!(readings(&robots, "bingbot", "/x").is_none());
        // Same verdict, same group: one reading is enough.
        let named = Robots::parse(b"User-agent: Googlebot-Image\nDisallow: /i\n");
        assert!(!readings(&named, "Googlebot-Image", "/i/x").unwrap().differ());
    }
}
