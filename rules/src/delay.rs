//! `Crawl-delay`, as the crawlers that read it do: seconds between two
//! requests, bound to the group it stands in. Google's matcher ignores the
//! key (so does the engine's verdict); Bing and Yandex document honouring
//! it. The gateway turns a crawler's delay into its crawl budget
//! (`sites[].proxy.crawl_delay: budget`), so the file and the edge say the
//! same.
//!
//! Which group's delay applies to a crawler is the group Google's matcher
//! picks for it ([`crate::Agent::group`]), the reading Bing documents (its
//! own group, else `*`). Where the merged groups of one crawler state
//! different delays, the longest applies: the crawler is told to wait at
//! least that long by one of its lines.

use std::time::Duration;

use crate::parse::{self, Directive, Grouping, Handler, KeyKind};

/// The longest delay taken (a day): a larger value is a typo or a wish to
/// be left alone, which `Disallow` says better; it is capped, not refused.
pub const LONGEST: Duration = Duration::from_secs(86_400);

/// One `Crawl-delay` line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delay {
    /// Its line.
    pub line: u32,
    /// The first `user-agent` line of its group; `None` before any group.
    pub group: Option<u32>,
    /// The delay (at most [`LONGEST`]).
    pub delay: Duration,
}

/// Every readable `Crawl-delay` line of a file, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delays(pub Vec<Delay>);

/// Seconds as Bing reads them: digits with at most one decimal point.
/// Anything else states no delay (lint says so).
pub fn seconds(value: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let digits = text.bytes().filter(u8::is_ascii_digit).count();
    let points = text.bytes().filter(|&b| b == b'.').count();
    if digits == 0 || points > 1 || digits + points != text.len() {
        return None;
    }
    let secs: f64 = text.parse().ok()?;
    Some(Duration::from_secs_f64(secs.min(LONGEST.as_secs_f64())))
}

impl Delays {
    /// Reads the `Crawl-delay` lines of `body`. Never fails.
    pub fn read(body: &[u8]) -> Delays {
        #[derive(Default)]
        struct Reader {
            out: Vec<Delay>,
            grouping: Grouping,
        }
        impl Handler for Reader {
            fn directive(&mut self, d: &Directive<'_>) {
                let group = self.grouping.see(d);
                if d.kind == KeyKind::Unknown
                    && d.key.eq_ignore_ascii_case(b"crawl-delay")
                    && let Some(delay) = seconds(d.value)
                {
                    self.out.push(Delay { line: d.line, group, delay });
                }
            }
        }
        let mut reader = Reader::default();
        parse::parse(body, &mut reader);
        Delays(reader.out)
    }

    /// The delay of a crawler whose group Google's matcher picks as
    /// `group_lines` (see [`crate::GroupChoice`]): the longest of its
    /// groups' delays, with its line; `None` when its groups state none.
    pub fn applied(&self, group_lines: &[u32]) -> Option<Delay> {
        self.0
            .iter()
            .filter(|d| d.group.is_some_and(|g| group_lines.contains(&g)))
            .copied()
            .max_by(|a, b| a.delay.cmp(&b.delay).then(b.line.cmp(&a.line)))
    }

    /// The delay that applies to the crawler `token` in `robots` (parsed
    /// from the same body).
    pub fn of(&self, robots: &crate::Robots, token: &str) -> Option<Delay> {
        self.applied(robots.crawler(token).group()?.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Robots;

    const FILE: &[u8] = b"User-agent: *\nCrawl-delay: 2\nDisallow: /tmp\n\n\
User-agent: bingbot\nUser-agent: msnbot\nDisallow: /x\nCrawl-delay: 10\n\n\
User-agent: YandexBot\nCrawl-delay: soon\n\nUser-agent: bingbot\nCrawl-delay: 4.5\n";

    #[test]
    fn each_crawler_takes_its_groups_delay() {
        let robots = Robots::parse(FILE);
        let delays = Delays::read(FILE);
        assert_eq!(delays.0.len(), 3, "{delays:?}");
        // bingbot's two groups merge; the longer delay applies.
        let bing = delays.of(&robots, "bingbot").unwrap();
        assert_eq!((bing.line, bing.delay), (8, Duration::from_secs(10)));
        // A crawler no group names reads `*`.
        assert_eq!(delays.of(&robots, "SomeBot").unwrap().delay, Duration::from_secs(2));
        // YandexBot's group has no rule, so the next `user-agent` line
        // (bingbot, line 13) joins it, as Google groups lines: its delay is
        // that group's readable one, never `*`'s.
        let yandex = delays.of(&robots, "YandexBot").unwrap();
        assert_eq!((yandex.line, yandex.group, yandex.delay), (14, Some(10), Duration::from_millis(4500)));
        let own = b"User-agent: *\nCrawl-delay: 2\nDisallow: /tmp\n\nUser-agent: YandexBot\nCrawl-delay: soon\nDisallow: /x\n";
        assert_eq!(Delays::read(own).of(&Robots::parse(own), "YandexBot"), None, "an unreadable delay is none");
    }

    #[test]
    fn only_seconds_are_delays() {
        assert_eq!(seconds(b"1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(seconds(b" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(seconds(b"99999999"), Some(LONGEST));
        for bad in [&b""[..], b"-1", b"1.2.3", b"ten", b"1e3", b".", b"\xff"] {
            assert_eq!(seconds(bad), None, "{bad:?}");
        }
        assert_eq!(Delays::read(b"Crawl-delay: 5\n").applied(&[1]), None, "outside any group");
    }
}
