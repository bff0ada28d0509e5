//! What crawlers get at one more place they look for a site's robots.txt:
//! a host variant (the other scheme, `www.` or the bare host, a mobile or
//! staging host) or a cache in front of the origin (a CDN's copy). RFC 9309
//! §2.3 makes each scheme, host and port answer for itself, so a 404 on
//! `http://` opens that host to every crawler while the canonical host keeps
//! its rules, and a CDN's stale copy is the file crawlers obey whatever the
//! origin now says.
//!
//! [`judge`] is the one judgement: (what the canonical place serves, what
//! this place serves, what it must be) → what it serves, the findings and
//! the verdicts that differ. The monitor, its alerts, `robots-monitor show`,
//! the console, the API and the metrics all call it, as they call
//! [`crate::flips`] for changes over time.

use std::fmt;

use crate::fetch::{FetchOutcome, MAX_REDIRECTS, TransportError};
use crate::flip::{Flip, flips};
use crate::policy::{Policy, Reason};

/// What a place must be, as the site declares it (`sites[].variants`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Must {
    /// The canonical file, served directly or by redirect (the default).
    #[default]
    Same,
    /// A redirect to the canonical file.
    Redirect,
    /// A file of its own (a host with rules of its own).
    Own,
    /// No file at all: a host that must never answer publicly (staging).
    Absent,
}

impl Must {
    /// The config spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Must::Same => "same",
            Must::Redirect => "redirect",
            Must::Own => "own",
            Must::Absent => "absent",
        }
    }

    /// Reads the config spelling.
    pub fn parse(s: &str) -> Option<Must> {
        [Must::Same, Must::Redirect, Must::Own, Must::Absent].into_iter().find(|m| m.as_str() == s)
    }
}

impl fmt::Display for Must {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Must::Same => "the canonical file",
            Must::Redirect => "a redirect to the canonical file",
            Must::Own => "a file of its own",
            Must::Absent => "no file",
        })
    }
}

/// What a crawler gets at a place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Serves {
    /// The canonical file's rules, directly (`hops` 0) or after redirects.
    Canonical {
        /// Redirects followed to get there.
        hops: usize,
    },
    /// The canonical file with lines of the place's own added: a CDN's
    /// managed robots.txt, not a stale copy.
    Additions {
        /// The added lines, as served.
        lines: Vec<String>,
    },
    /// A file of its own, whose rules differ from the canonical file's.
    Own {
        /// It is an HTML page, not a robots.txt.
        html: bool,
        /// Redirects followed to get there.
        hops: usize,
    },
    /// No file (a 4xx other than 429): everything is allowed.
    NoFile(u16),
    /// A redirect chain that ends nowhere: everything is allowed.
    BrokenChain {
        /// Redirects followed before giving up.
        hops: usize,
        /// The chain came back to a URL it had already visited.
        looped: bool,
    },
    /// A 5xx, a 429, a timeout, a TLS failure: everything is disallowed.
    Unavailable(Reason),
    /// The host does not resolve or refuses connections: nothing is served
    /// there, so there are no pages there to crawl either.
    NotServed(TransportError),
}

impl Serves {
    /// A short stable key, for states and metrics.
    pub fn key(&self) -> &'static str {
        match self {
            Serves::Canonical { hops: 0 } => "same",
            Serves::Canonical { .. } => "redirect",
            Serves::Additions { .. } => "additions",
            Serves::Own { html: true, .. } => "html",
            Serves::Own { .. } => "own",
            Serves::NoFile(_) => "no-file",
            Serves::BrokenChain { .. } => "broken-redirect",
            Serves::Unavailable(_) => "unavailable",
            Serves::NotServed(_) => "not-served",
        }
    }
}

impl fmt::Display for Serves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Serves::Canonical { hops: 0 } => f.write_str("the canonical file"),
            Serves::Canonical { hops } => write!(f, "a redirect to the canonical file ({hops} hop{})", plural(*hops)),
            Serves::Additions { lines } => {
                write!(f, "the canonical file with {} line{} of its own added", lines.len(), plural(lines.len()))
            }
            Serves::Own { html: true, .. } => {
                f.write_str("an HTML page with status 200, read by crawlers as robots.txt")
            }
            Serves::Own { hops: 0, .. } => f.write_str("a file of its own"),
            Serves::Own { hops, .. } => write!(f, "a file of its own after {hops} redirect{}", plural(*hops)),
            Serves::NoFile(s) => write!(f, "{s}: no file, everything is allowed"),
            Serves::BrokenChain { looped: true, hops } => {
                write!(f, "a redirect loop (given up after {hops} hops): no file, everything is allowed")
            }
            Serves::BrokenChain { hops, .. } if *hops > MAX_REDIRECTS => {
                write!(f, "a redirect chain longer than {MAX_REDIRECTS} hops: no file, everything is allowed")
            }
            Serves::BrokenChain { .. } => {
                f.write_str("a redirect without a usable target: no file, everything is allowed")
            }
            Serves::Unavailable(r) => write!(f, "{r}"),
            Serves::NotServed(e) => write!(f, "nothing ({e}): no host there"),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Why a place is not what it must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Finding {
    /// No file here while the canonical host has rules: everything opens.
    Opens,
    /// Disallow all here (5xx, 429, unreachable) while the canonical host
    /// serves its file.
    Closes,
    /// A file of its own where the canonical file is expected (a staging
    /// file on a production host).
    OwnFile,
    /// An HTML page answered with 200, which crawlers read as robots.txt.
    Html,
    /// The file itself where a redirect is expected.
    NotRedirect,
    /// A file on a host that must not answer.
    Answers,
    /// A redirect loop or a chain longer than five hops.
    BrokenChain,
    /// A cache serves another copy than the origin's.
    Stale,
}

impl Finding {
    /// A short stable key, for states, metrics and the API.
    pub fn key(&self) -> &'static str {
        match self {
            Finding::Opens => "opens",
            Finding::Closes => "closes",
            Finding::OwnFile => "own-file",
            Finding::Html => "html",
            Finding::NotRedirect => "not-redirect",
            Finding::Answers => "answers",
            Finding::BrokenChain => "broken-redirect",
            Finding::Stale => "stale",
        }
    }
}

impl Finding {
    /// A few words for an alert's subject, after the place's name.
    pub fn short(&self) -> &'static str {
        match self {
            Finding::Opens => "serves no file: every URL opens",
            Finding::Closes => "shuts crawlers out",
            Finding::OwnFile => "serves a file of its own",
            Finding::Html => "serves HTML as robots.txt",
            Finding::NotRedirect => "does not redirect",
            Finding::Answers => "answers though it must not",
            Finding::BrokenChain => "has a broken redirect chain",
            Finding::Stale => "serves a stale copy",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Finding::Opens => "no file here while the canonical host has rules: everything opens to crawlers",
            Finding::Closes => "crawlers are shut out here while the canonical host serves its file",
            Finding::OwnFile => "a file of its own where the canonical file is expected",
            Finding::Html => "an HTML page with status 200 where robots.txt is expected",
            Finding::NotRedirect => "serves the file itself where a redirect to the canonical host is expected",
            Finding::Answers => "serves a robots.txt on a host that must not answer publicly",
            Finding::BrokenChain => "a broken redirect chain: crawlers treat it as no file",
            Finding::Stale => "the cache serves another copy than the origin's",
        })
    }
}

/// What is asked of one place.
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a, U: AsRef<str>, A: AsRef<str>> {
    /// What it must be.
    pub must: Must,
    /// The site lists it (a host it names): a host that does not resolve
    /// is then a finding, where for a variant found by default it is only
    /// a host that does not exist.
    pub listed: bool,
    /// The place is a cache in front of the canonical (origin) copy: added
    /// lines are the cache's own, and a differing file is a stale copy.
    pub edge: bool,
    /// The URLs whose verdicts are compared (the site's saved URLs).
    pub urls: &'a [U],
    /// The crawlers they are compared for.
    pub agents: &'a [A],
}

/// What one place serves, what is wrong with it, and which verdicts differ
/// from the canonical place's.
#[derive(Clone, Debug)]
pub struct Judgement {
    /// What a crawler gets there.
    pub serves: Serves,
    /// What is wrong, if anything: empty means the place is what it must be.
    pub findings: Vec<Finding>,
    /// (URL, crawler) pairs whose verdict at this place differs from the
    /// canonical place's; `old` is the canonical verdict.
    pub flips: Vec<Flip>,
}

impl Judgement {
    /// The findings' keys, joined: `""` when all is well.
    pub fn findings_key(&self) -> String {
        self.findings.iter().map(Finding::key).collect::<Vec<_>>().join(",")
    }
}

/// Judges one place against the canonical one. `landed` says the place's
/// redirects ended at the canonical URL, so `place` carries the canonical
/// answer (the fetcher need not fetch it twice).
///
/// ```
/// use rules::FetchOutcome;
/// use rules::coverage::{Ask, Finding, Must, judge};
/// let canonical = FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /cart\n".to_vec());
/// let ask = Ask { must: Must::Same, listed: false, edge: false, urls: &["https://s/cart"], agents: &["Googlebot"] };
/// let gone = judge(&canonical, &FetchOutcome::status(404), false, &ask);
/// assert_eq!(gone.findings, [Finding::Opens]);
/// assert_eq!(gone.flips.len(), 1);
/// ```
pub fn judge<U: AsRef<str>, A: AsRef<str>>(
    canonical: &FetchOutcome,
    place: &FetchOutcome,
    landed: bool,
    ask: &Ask<'_, U, A>,
) -> Judgement {
    let serves = serves(canonical, place, landed, ask.edge);
    let canon = Policy::from_fetch(canonical);
    let here = match &serves {
        // The same rules by definition; judging the place's own bytes
        // would only repeat the canonical verdicts.
        Serves::Canonical { .. } => canon.clone(),
        _ => Policy::from_fetch(place),
    };
    let has_file = matches!(canon, Policy::Rules(_));
    let canon_down = canon.blocks_everything();
    let mut findings = Vec::new();
    match (&serves, ask.must) {
        (Serves::Canonical { hops: 0 }, Must::Redirect) => findings.push(Finding::NotRedirect),
        (Serves::Canonical { .. } | Serves::Additions { .. } | Serves::Own { .. }, Must::Absent) => {
            findings.push(Finding::Answers)
        }
        (Serves::Canonical { .. } | Serves::Additions { .. }, _) => {}
        (Serves::Own { html: true, .. }, _) => findings.push(Finding::Html),
        (Serves::Own { .. }, Must::Own) => {}
        // A cache keeping its copy while the origin fails is doing its job;
        // the origin's outage is the canonical place's own alert.
        (Serves::Own { .. }, _) if canon_down => {}
        (Serves::Own { .. }, _) => findings.push(if ask.edge { Finding::Stale } else { Finding::OwnFile }),
        (_, Must::Absent) => {}
        (Serves::NoFile(_), Must::Own) => findings.push(Finding::Opens),
        (Serves::NoFile(_), _) if has_file => findings.push(Finding::Opens),
        (Serves::NoFile(_), _) => {}
        (Serves::BrokenChain { .. }, _) => findings.push(Finding::BrokenChain),
        (Serves::Unavailable(_), _) if canon_down => {}
        (Serves::Unavailable(_), _) => findings.push(Finding::Closes),
        (Serves::NotServed(_), _) if ask.listed && !canon_down => findings.push(Finding::Closes),
        (Serves::NotServed(_), _) => {}
    }
    let flips = flips(&canon, &here, ask.urls, ask.agents);
    Judgement { serves, findings, flips }
}

/// What a crawler gets at the place, in the canonical place's terms.
fn serves(canonical: &FetchOutcome, place: &FetchOutcome, landed: bool, edge: bool) -> Serves {
    let hops = place.redirects.len();
    if landed {
        return Serves::Canonical { hops };
    }
    let looped = (1..hops).any(|i| place.redirects[..i].contains(&place.redirects[i]));
    if hops > MAX_REDIRECTS || looped {
        return Serves::BrokenChain { hops, looped };
    }
    match (place.status, place.error) {
        (Some(200..=299), _) => {}
        (Some(s @ 300..=399), _) if s != 304 => return Serves::BrokenChain { hops, looped: false },
        (Some(429), _) => return Serves::Unavailable(Reason::TooManyRequests),
        (Some(s @ 400..=499), _) => return Serves::NoFile(s),
        (None, Some(e @ (TransportError::Dns | TransportError::Refused))) => return Serves::NotServed(e),
        _ => match Policy::from_fetch(place) {
            Policy::DisallowAll(r) | Policy::AllowAll(r) => return Serves::Unavailable(r),
            Policy::Rules(_) => {}
        },
    }
    if looks_like_html(&place.body) {
        return Serves::Own { html: true, hops };
    }
    let theirs = rule_lines(&canonical.body);
    let ours = rule_lines(&place.body);
    let canonical_is_file = matches!(canonical.status, Some(200..=299));
    if canonical_is_file && theirs.iter().map(|l| &l.1).eq(ours.iter().map(|l| &l.1)) {
        return Serves::Canonical { hops };
    }
    if edge
        && canonical_is_file
        && let Some(lines) = added(&theirs, &ours)
    {
        return Serves::Additions { lines };
    }
    Serves::Own { html: false, hops }
}

/// The lines that carry rules, as written and in a form that ignores what
/// crawlers ignore (comments, blank lines, spacing, the key's case) and the
/// `Sitemap:` lines, which name a host and so differ between variants that
/// share their rules.
fn rule_lines(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for raw in text.split(['\n', '\r']) {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let key = key.trim().to_ascii_lowercase();
        if key == "sitemap" {
            continue;
        }
        out.push((raw.trim().to_string(), format!("{key}:{}", value.trim())));
    }
    out
}

/// The place's lines beyond the canonical ones, when the canonical rule
/// lines appear in it in order; `None` when they do not.
fn added(canonical: &[(String, String)], place: &[(String, String)]) -> Option<Vec<String>> {
    let mut want = canonical.iter().peekable();
    let mut extra = Vec::new();
    for (raw, norm) in place {
        if want.peek().is_some_and(|w| &w.1 == norm) {
            want.next();
        } else {
            extra.push(raw.clone());
        }
    }
    (want.peek().is_none() && !extra.is_empty()).then_some(extra)
}

/// Whether a body is an HTML page (a soft 404, a login wall, an app shell).
pub fn looks_like_html(body: &[u8]) -> bool {
    let head: Vec<u8> = body
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == 0xEF || **b == 0xBB || **b == 0xBF)
        .take(512)
        .map(u8::to_ascii_lowercase)
        .collect();
    head.starts_with(b"<!doctype html")
        || head.starts_with(b"<html")
        || head.starts_with(b"<head")
        || (head.starts_with(b"<") && head.windows(6).any(|w| w == b"<body>" || w == b"<body "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &[u8] = b"User-agent: *\nDisallow: /cart\n";
    const URLS: &[&str] = &["https://s/", "https://s/cart", "https://s/shop"];
    const AGENTS: &[&str] = &["Googlebot"];

    fn ok(body: &[u8]) -> FetchOutcome {
        FetchOutcome::status(200).with_body(body.to_vec())
    }

    fn ask(must: Must) -> Ask<'static, &'static str, &'static str> {
        Ask { must, listed: false, edge: false, urls: URLS, agents: AGENTS }
    }

    fn hops(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("https://s/r{i}")).collect()
    }

    #[test]
    fn a_variant_redirecting_to_the_canonical_file_is_fine() {
        let landed = ok(RULES).with_redirects(hops(2));
        let j = judge(&ok(RULES), &landed, true, &ask(Must::Same));
        assert_eq!(j.serves, Serves::Canonical { hops: 2 });
        assert!(j.findings.is_empty() && j.flips.is_empty());
        // A redirect is what `redirect` asks for; the file itself is not.
        assert!(judge(&ok(RULES), &landed, true, &ask(Must::Redirect)).findings.is_empty());
        let direct = judge(&ok(RULES), &ok(RULES), false, &ask(Must::Redirect));
        assert_eq!(direct.findings, [Finding::NotRedirect]);
    }

    #[test]
    fn the_same_rules_in_other_bytes_are_the_same_file() {
        let other =
            b"# www copy\r\nuser-agent:*\r\nDisallow:   /cart  # basket\r\nSitemap: https://www.s/sitemap.xml\r\n";
        assert_eq!(judge(&ok(RULES), &ok(other), false, &ask(Must::Same)).serves, Serves::Canonical { hops: 0 });
    }

    #[test]
    fn a_staging_file_on_a_production_host_names_what_closes() {
        let j = judge(&ok(RULES), &ok(b"User-agent: *\nDisallow: /\n"), false, &ask(Must::Same));
        assert_eq!(j.findings, [Finding::OwnFile]);
        // `/` and `/shop` close; `/cart` was closed already.
        assert_eq!(j.flips.len(), 2, "{:?}", j.flips);
        assert!(j.flips.iter().all(|f| f.old.allowed && !f.new.allowed));
        // Where a file of its own is declared, it is no finding.
        assert!(judge(&ok(RULES), &ok(b"User-agent: *\nDisallow: /\n"), false, &ask(Must::Own)).findings.is_empty());
    }

    #[test]
    fn a_404_opens_only_where_the_canonical_host_has_rules() {
        let j = judge(&ok(RULES), &FetchOutcome::status(404), false, &ask(Must::Same));
        assert_eq!((j.serves.clone(), j.findings.clone()), (Serves::NoFile(404), vec![Finding::Opens]));
        assert_eq!(j.flips.len(), 1);
        let none = judge(&FetchOutcome::status(404), &FetchOutcome::status(410), false, &ask(Must::Same));
        assert!(none.findings.is_empty());
        // A host that must not answer may well answer 404.
        assert!(judge(&ok(RULES), &FetchOutcome::status(404), false, &ask(Must::Absent)).findings.is_empty());
    }

    #[test]
    fn a_5xx_closes_unless_the_canonical_host_is_down_too() {
        let j = judge(&ok(RULES), &FetchOutcome::status(503), false, &ask(Must::Same));
        assert_eq!(j.findings, [Finding::Closes]);
        assert_eq!(j.flips.len(), 2);
        let both = judge(&FetchOutcome::status(500), &FetchOutcome::status(503), false, &ask(Must::Same));
        assert!(both.findings.is_empty());
        let slow = judge(&ok(RULES), &FetchOutcome::transport(TransportError::Timeout), false, &ask(Must::Same));
        assert_eq!(slow.findings, [Finding::Closes]);
        let tls = judge(&ok(RULES), &FetchOutcome::transport(TransportError::Tls), false, &ask(Must::Same));
        assert_eq!(tls.findings, [Finding::Closes]);
    }

    #[test]
    fn a_host_that_does_not_exist_is_a_finding_only_when_listed() {
        let dns = FetchOutcome::transport(TransportError::Dns);
        assert!(judge(&ok(RULES), &dns, false, &ask(Must::Same)).findings.is_empty());
        let listed = Ask { listed: true, ..ask(Must::Same) };
        assert_eq!(judge(&ok(RULES), &dns, false, &listed).findings, [Finding::Closes]);
        let absent = Ask { listed: true, ..ask(Must::Absent) };
        assert!(judge(&ok(RULES), &dns, false, &absent).findings.is_empty());
    }

    #[test]
    fn loops_and_long_chains_are_broken() {
        let looped = FetchOutcome::status(301).with_redirects(
            ["https://a/r", "https://b/r", "https://a/r", "https://b/r", "https://a/r", "https://b/r"]
                .map(String::from)
                .to_vec(),
        );
        let j = judge(&ok(RULES), &looped, false, &ask(Must::Same));
        assert_eq!(j.serves, Serves::BrokenChain { hops: 6, looped: true });
        assert_eq!(j.findings, [Finding::BrokenChain]);
        let long = FetchOutcome::status(301).with_redirects(hops(6));
        let j = judge(&ok(RULES), &long, false, &ask(Must::Same));
        assert_eq!(j.serves, Serves::BrokenChain { hops: 6, looped: false });
        assert!(j.serves.to_string().contains("longer than 5"));
        // Five hops to a file is a file.
        let five = ok(RULES).with_redirects(hops(5));
        assert_eq!(judge(&ok(RULES), &five, false, &ask(Must::Same)).serves, Serves::Canonical { hops: 5 });
    }

    #[test]
    fn html_with_200_is_a_finding_not_a_file() {
        let page = ok(b"\n<!DOCTYPE html><html><head><title>Shop</title></head><body>hi</body></html>");
        let j = judge(&ok(RULES), &page, false, &ask(Must::Same));
        assert_eq!(j.serves.key(), "html");
        assert_eq!(j.findings, [Finding::Html]);
        assert!(!looks_like_html(b"User-agent: *\nDisallow: /<html>\n"));
    }

    #[test]
    fn an_edge_adding_lines_is_not_stale() {
        let managed = b"# managed\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /cart\n";
        let edge = Ask { edge: true, ..ask(Must::Same) };
        let j = judge(&ok(RULES), &ok(managed), false, &edge);
        assert_eq!(j.serves, Serves::Additions { lines: vec!["User-agent: GPTBot".into(), "Disallow: /".into()] });
        assert!(j.findings.is_empty());
        // An edge keeping the old file is stale, and says what changes.
        let origin_now = ok(b"User-agent: *\nDisallow: /cart\nDisallow: /shop\n");
        let j = judge(&origin_now, &ok(RULES), false, &edge);
        assert_eq!(j.findings, [Finding::Stale]);
        assert_eq!(j.flips.len(), 1);
        assert_eq!(j.flips[0].url, "https://s/shop");
        // The old file with lines prepended is still stale: the origin's
        // new line is missing from it.
        let prepended = ok(b"User-agent: GPTBot\nDisallow: /\nUser-agent: *\nDisallow: /cart\n");
        assert_eq!(judge(&origin_now, &prepended, false, &edge).findings, [Finding::Stale]);
        // An origin that fails while the edge keeps its copy: no finding here.
        assert!(judge(&FetchOutcome::status(502), &ok(RULES), false, &edge).findings.is_empty());
    }

    #[test]
    fn a_host_that_must_not_answer_answers() {
        let j = judge(&ok(RULES), &ok(b"User-agent: *\nDisallow: /\n"), false, &ask(Must::Absent));
        assert_eq!(j.findings, [Finding::Answers]);
        assert_eq!(Must::parse("absent"), Some(Must::Absent));
        assert_eq!(Must::parse("never"), None);
    }
}
