//! How Google's own crawlers choose their group, where that differs from
//! the library's matcher. The library answers for one product token; the
//! crawlers themselves, as Google documents them, add two things:
//!
//! - Googlebot-Image, Googlebot-News and Googlebot-Video answer to two
//!   tokens: their own group if the file has one, else Googlebot's, and
//!   only then `*`.
//! - AdsBot-Google, AdsBot-Google-Mobile, Mediapartners-Google and
//!   APIs-Google ignore the `*` group: only a group naming them restricts
//!   them.
//!
//! [`crate::Robots::check`] stays the library's answer; this is what
//! [`crate::Robots::crawler`] and [`crate::Policy::verdict`] (what the
//! gateway and the monitor report) add on top.

/// How a crawler's group is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// As the library does: the crawler's own group, else `*`.
    Plain,
    /// The crawler's own group, else the named crawler's, else `*`.
    FallsBackTo(&'static str),
    /// Only a group naming the crawler applies; `*` is ignored.
    NamedOnly,
}

/// Google's crawlers whose choice is not [`Choice::Plain`], by product
/// token (compared case-insensitively).
const GOOGLE: &[(&str, Choice)] = &[
    ("Googlebot-Image", Choice::FallsBackTo("Googlebot")),
    ("Googlebot-News", Choice::FallsBackTo("Googlebot")),
    ("Googlebot-Video", Choice::FallsBackTo("Googlebot")),
    ("AdsBot-Google", Choice::NamedOnly),
    ("AdsBot-Google-Mobile", Choice::NamedOnly),
    ("Mediapartners-Google", Choice::NamedOnly),
    ("APIs-Google", Choice::NamedOnly),
];

/// How the crawler with product token `token` chooses its group.
///
/// ```
/// use rules::crawlers::{Choice, choice};
/// assert_eq!(choice("googlebot-image"), Choice::FallsBackTo("Googlebot"));
/// assert_eq!(choice("AdsBot-Google"), Choice::NamedOnly);
/// assert_eq!(choice("bingbot"), Choice::Plain);
/// ```
pub fn choice(token: &str) -> Choice {
    GOOGLE.iter().find(|(t, _)| t.eq_ignore_ascii_case(token)).map_or(Choice::Plain, |(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use crate::{FetchOutcome, Policy, Robots};

    const FILE: &[u8] = b"User-agent: *\nDisallow: /all\n\nUser-agent: Googlebot\nDisallow: /g\n\n\
User-agent: Googlebot-News\nDisallow: /news-only\n";

    #[test]
    fn google_only_specialised_googlebots_fall_back_to_googlebot() {
        let r = Robots::parse(FILE);
        // The library alone sends Googlebot-Image to `*`.
        assert!(!r.is_allowed("Googlebot-Image", "/all") && r.is_allowed("Googlebot-Image", "/g"));
        // The crawler obeys Googlebot's group instead.
        let image = r.crawler("Googlebot-Image");
        assert!(image.is_allowed("/all") && !image.is_allowed("/g"));
        assert_eq!(image.check("/g").rule.map(|x| x.line), Some(5));
        // A group of its own wins over Googlebot's.
        let news = r.crawler("googlebot-news");
        assert!(news.is_allowed("/g") && !news.is_allowed("/news-only"));
        // With no Googlebot group either, `*` applies.
        let only_global = Robots::parse(b"User-agent: *\nDisallow: /all\n");
        assert!(!only_global.crawler("Googlebot-Video").is_allowed("/all"));
    }

    #[test]
    fn google_only_ads_crawlers_ignore_the_global_group() {
        let r = Robots::parse(b"User-agent: *\nDisallow: /\n\nUser-agent: Mediapartners-Google\nDisallow: /ads-no\n");
        assert!(!r.is_allowed("AdsBot-Google", "/landing"), "the library alone applies `*`");
        assert!(r.crawler("AdsBot-Google").is_allowed("/landing"));
        assert!(r.crawler("AdsBot-Google").check("/landing").group.is_none());
        let media = r.crawler("Mediapartners-Google");
        assert!(media.is_allowed("/landing") && !media.is_allowed("/ads-no"));
        // Ordinary crawlers are untouched.
        assert!(!r.crawler("bingbot").is_allowed("/landing"));
    }

    #[test]
    fn policy_verdicts_follow_the_crawlers() {
        let p = Policy::from_fetch(&FetchOutcome::status(200).with_body(FILE.to_vec()));
        assert!(p.verdict("Googlebot-Image", "https://s/all").allowed);
        assert!(!p.verdict("Googlebot-Image", "https://s/g").allowed);
        assert!(!p.verdict("ExampleBot", "https://s/all").allowed);
    }
}
