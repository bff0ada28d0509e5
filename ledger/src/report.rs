//! `robots-monitor compliance SITE`: per crawler, grouped by purpose and
//! operator, its requests, violations and grace, the identity answers, and
//! its last robots.txt read: when, which revision, and how far behind.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{DAY_MS, ledger};
use crate::Host;

/// One crawler's summary.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct CrawlerLine {
    /// Its token.
    pub crawler: String,
    /// Its operator, from the catalogue.
    pub operator: String,
    /// Its purpose, from the catalogue.
    pub purpose: String,
    /// Requests judged.
    pub requests: i64,
    /// Of them, obeyed.
    pub obeyed: i64,
    /// In grace.
    pub grace: i64,
    /// Violations.
    pub violations: i64,
    /// Before the site's first known robots.txt: no verdict.
    pub unjudged: i64,
    /// Allowed, and answered 429 by a crawl budget at the edge (a
    /// disallowed request over budget is counted a violation).
    pub throttled: i64,
    /// Requests per identity answer.
    pub identity: BTreeMap<String, i64>,
    /// Its last robots.txt read (Unix ms), if seen.
    pub last_read: Option<i64>,
    /// The revision it got then (none: a status).
    pub read_revision: Option<i64>,
    /// The status it got then.
    pub read_status: Option<i64>,
    /// How many revisions the site served after the one it holds.
    pub behind: Option<i64>,
    /// Its violations, by what decided them.
    pub violated: Vec<Decided>,
    /// Its requests in grace, by what allowed them: the file it could still
    /// hold (inside its cache window, with no newer fetch seen) that the
    /// current one no longer allows.
    pub in_grace: Vec<Decided>,
}

/// What decided a request: the ledger's (revision, line, status) read as
/// one word, so that no reader has to know that 0 means "none".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// A line of a revision.
    #[default]
    Line,
    /// A revision, by no line of it: nothing in it matched.
    Revision,
    /// An answer with no body: a 404 (allow all), a 5xx or 429
    /// (disallow all).
    Status,
    /// No answer at all (unreachable): read as disallow all.
    Unreachable,
}

/// Requests of one crawler, with one identity answer, decided alike.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Decided {
    /// What decided.
    pub by: DecidedBy,
    /// The revision whose lines decided, when a body did.
    pub revision: Option<i64>,
    /// The deciding line, when one did.
    pub line: Option<i64>,
    /// The status that decided, when no body did.
    pub status: Option<i64>,
    /// Identity answer.
    pub identity: String,
    /// Requests.
    pub requests: i64,
    /// The first of them (Unix ms).
    pub first_at: i64,
    /// The last of them (Unix ms).
    pub last_at: i64,
    /// Sample URLs.
    pub samples: Vec<String>,
    /// The deciding line as written, when a line decided.
    pub rule: Option<String>,
    /// Where the deciding revision came from, when it was imported history
    /// (`git:REPO@COMMIT`, `dir:FILE`, `archive:TIMESTAMP`).
    pub source: Option<String>,
}

impl Decided {
    /// The ledger's row read as what decided it.
    fn of(r: &ledger::Line) -> Decided {
        let some = |n: i64| (n > 0).then_some(n);
        let by = match (some(r.revision), some(r.line), some(r.status)) {
            (Some(_), Some(_), _) => DecidedBy::Line,
            (Some(_), None, _) => DecidedBy::Revision,
            (None, _, Some(_)) => DecidedBy::Status,
            (None, _, None) => DecidedBy::Unreachable,
        };
        Decided {
            by,
            revision: some(r.revision),
            line: some(r.revision).and(some(r.line)),
            status: if some(r.revision).is_some() { None } else { some(r.status) },
            identity: r.identity.clone(),
            requests: 0,
            first_at: r.first_at,
            last_at: r.last_at,
            ..Decided::default()
        }
    }

    /// Counts `r` into the list of what decided alike.
    fn fold(list: &mut Vec<Decided>, r: &ledger::Line) {
        let new = Decided::of(r);
        let same = |d: &&mut Decided| {
            (d.by, d.revision, d.line, d.status, d.identity.as_str())
                == (new.by, new.revision, new.line, new.status, new.identity.as_str())
        };
        let d = match list.iter_mut().find(|d| same(d)) {
            Some(d) => d,
            None => {
                list.push(new);
                list.last_mut().expect("just pushed")
            }
        };
        d.requests += r.requests;
        d.first_at = d.first_at.min(r.first_at);
        d.last_at = d.last_at.max(r.last_at);
        for s in &r.samples {
            if d.samples.len() < ledger::SAMPLES && !d.samples.contains(s) {
                d.samples.push(s.clone());
            }
        }
    }

    /// What decided, in words: a violation's deciding rule or answer, or
    /// what allowed a request in grace.
    pub fn words(&self, grace: bool) -> String {
        let (r, l, s) = (self.revision.unwrap_or(0), self.line.unwrap_or(0), self.status.unwrap_or(0));
        match (self.by, grace) {
            (DecidedBy::Line, _) => format!("revision {r} line {l}"),
            (DecidedBy::Revision, false) => format!("revision {r}"),
            (DecidedBy::Revision, true) => format!("revision {r}, by no rule"),
            (DecidedBy::Status, false) => format!("a {s} answer (disallow all)"),
            (DecidedBy::Status, true) => format!("a {s} answer (allow all)"),
            (DecidedBy::Unreachable, _) => "no answer (disallow all)".to_string(),
        }
    }
}

/// UTC days, today included, that a duration back from now reaches.
/// The refusal names `since` as the caller spells it (`since` on the API,
/// `--since` on the CLI) by `name`, and says what is wrong in words
/// rather than the parser's offsets.
pub fn window_days(name: &str, since: &str) -> Result<i64, String> {
    let d = humantime::parse_duration(since).map_err(|e| {
        use humantime::DurationError as E;
        let why = match e {
            E::Empty => "it is empty".to_string(),
            E::NumberExpected(_) | E::InvalidCharacter(_) => "it is not a number and a unit".to_string(),
            E::UnknownUnit { unit, .. } => format!("`{unit}` is not a unit (s, m, h, d, w)"),
            E::NumberOverflow => "it is too long".to_string(),
        };
        format!("{name} `{since}` is no duration: {why}; give one such as 7d or 12h")
    })?;
    Ok(i64::try_from(d.as_secs().div_ceil(86_400)).unwrap_or(i64::MAX).max(1))
}

/// The catalogue's token for `name`, in any case, or why it names no
/// crawler robotsgate knows (the built-in catalogue and the config's
/// `crawlers:`), with the nearest token where one is a likely slip: the
/// ledger only records crawlers the catalogue names, so any other name
/// would read as "nothing recorded" and hide the typo.
///
/// The refusal names the parameter as the caller spells it (`crawler` on
/// the API, `--crawler` on the CLI) by `flag`, as [`window_days`] does.
///
pub fn crawler_named(m: &dyn Host, flag: &str, name: &str) -> Result<String, String> {
    if let Some(c) = m.catalogue().get(name) {
        return Ok(c.token.clone());
    }
    // No token is near a name far longer than any: no edit distances over a
    // query string's worth of text, and no echo of all of it.
    let (near, shown) = match name.char_indices().nth(64) {
        Some((cut, _)) => (None, format!("{}…", &name[..cut])),
        None => (nearest(m.catalogue(), name), name.to_string()),
    };
    let hint = match near {
        Some(token) => format!("; did you mean `{token}`?"),
        None => " (a crawler of your own goes under the config's `crawlers:`)".to_string(),
    };
    Err(format!("{flag} `{shown}` is no crawler robotsgate knows{hint}"))
}

/// The catalogue token `name` is most likely a slip of: the lint's typo
/// finder first; then, as a name typed on a command line is more often a
/// slip than a crawler of its own, the token at most two edits away (one
/// for short names).
fn nearest(catalogue: &robotsgate_crawlers::Catalogue, name: &str) -> Option<String> {
    if let Some(c) = catalogue.near(name) {
        return Some(c.token.clone());
    }
    let lower = name.to_ascii_lowercase();
    let most = if lower.chars().count() < 6 { 1 } else { 2 };
    catalogue
        .crawlers()
        .iter()
        .map(|c| (robotsgate_crawlers::edits(&lower, &c.token.to_ascii_lowercase()), &c.token))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, t)| t.clone())
}

/// How many files behind a crawler is that read `held` (a revision id) at
/// `read_at`: the files the site served after its read that differ from
/// the one it holds, counted once each. A crawler holding the file the site
/// serves now is current (0), however often polls recorded that file
/// again, and a body recorded but never served (a change held at the edge)
/// is not counted. `served` is the site's states (when each began, and its
/// revision when it was a file), oldest first; with none, the revisions
/// first seen after the held one (`revisions`: id, first seen, size).
/// `None` when the held revision is unknown.
pub fn behind(served: &[(i64, Option<i64>)], revisions: &[(i64, i64, i64)], held: i64, read_at: i64) -> Option<i64> {
    let first_seen = revisions.iter().find(|r| r.0 == held).map(|r| r.1)?;
    let files: Vec<(i64, i64)> = served.iter().filter_map(|(at, r)| r.map(|r| (*at, r))).collect();
    let Some(&(_, now)) = files.last() else {
        return Some(revisions.iter().filter(|r| r.1 > first_seen).count() as i64);
    };
    if now == held {
        return Some(0);
    }
    let mut since: Vec<i64> = files.iter().filter(|(at, r)| *at > read_at && *r != held).map(|(_, r)| *r).collect();
    // The file being served when it read, if it was not the one it holds
    // (it read a copy older than the site's, a cache, say).
    if let Some(&(_, then)) = files.iter().rev().find(|(at, _)| *at <= read_at)
        && then != held
    {
        since.push(then);
    }
    since.sort_unstable();
    since.dedup();
    Some(since.len() as i64)
}

/// The summary of `site` over the last `days`, for `crawler` if given.
pub async fn summary(m: &dyn Host, site: &str, days: i64, crawler: Option<&str>) -> anyhow::Result<Vec<CrawlerLine>> {
    anyhow::ensure!(m.site(site).is_some(), "no site named `{site}` in the config");
    let since = monitor::clock::now_ms().div_euclid(DAY_MS) - days + 1;
    let rows = ledger::rows(m.store(), site, since, crawler).await?;
    let reads = ledger::reads(m.store(), site).await?;
    let revisions = m.store().revisions(site).await?;
    let served: Vec<(i64, Option<i64>)> =
        m.store().history(site).await?.into_iter().map(|s| (s.at, s.revision_id)).collect();
    let mut by: BTreeMap<String, CrawlerLine> = BTreeMap::new();
    for r in rows {
        let line = by
            .entry(r.crawler.clone())
            .or_insert_with(|| CrawlerLine { crawler: r.crawler.clone(), ..Default::default() });
        line.requests += r.requests;
        match r.class.as_str() {
            "obeyed" => line.obeyed += r.requests,
            "grace" => {
                line.grace += r.requests;
                Decided::fold(&mut line.in_grace, &r);
            }
            "unjudged" => line.unjudged += r.requests,
            "throttled" => line.throttled += r.requests,
            "violation" => {
                line.violations += r.requests;
                Decided::fold(&mut line.violated, &r);
            }
            _ => {}
        }
        *line.identity.entry(r.identity).or_default() += r.requests;
    }
    for (c, read) in reads {
        if crawler.is_some_and(|x| !x.eq_ignore_ascii_case(&c)) {
            continue;
        }
        let line = by.entry(c.clone()).or_insert_with(|| CrawlerLine { crawler: c.clone(), ..Default::default() });
        line.last_read = Some(read.at);
        line.read_revision = (read.revision > 0).then_some(read.revision);
        line.read_status = (read.status > 0).then_some(read.status);
        line.behind = behind(&served, &revisions, read.revision, read.at);
    }
    // The deciding lines as written, each revision read once; and where an
    // imported revision came from.
    let mut bodies: std::collections::HashMap<i64, Vec<u8>> = std::collections::HashMap::new();
    let imported = robotsgate_history::imported::imported(m.store().pool(), site).await?;
    for line in by.values_mut() {
        for v in line.violated.iter_mut().chain(line.in_grace.iter_mut()) {
            v.source =
                v.revision.and_then(|r| imported.iter().find(|i| i.revision_id == Some(r))).map(|i| i.source.clone());
            let (Some(revision), Some(at)) = (v.revision, v.line) else { continue };
            if let std::collections::hash_map::Entry::Vacant(slot) = bodies.entry(revision) {
                slot.insert(m.store().revision_body(site, revision).await?.unwrap_or_default());
            }
            v.rule = bodies[&revision]
                .split(|&b| b == b'\n')
                .nth(usize::try_from(at - 1).unwrap_or(usize::MAX))
                .map(|l| String::from_utf8_lossy(l).trim_end_matches('\r').to_string());
        }
    }
    let catalogue = m.catalogue();
    let mut out: Vec<CrawlerLine> = by
        .into_values()
        .map(|mut l| {
            if let Some(c) = catalogue.get(&l.crawler) {
                l.operator = c.operator.clone();
                l.purpose = c.purpose.as_str().to_string();
            }
            l
        })
        .collect();
    out.sort_by(|a, b| {
        (catalogue.purpose_rank(&a.crawler), &a.operator, &a.crawler).cmp(&(
            catalogue.purpose_rank(&b.crawler),
            &b.operator,
            &b.crawler,
        ))
    });
    Ok(out)
}

/// One UTC day's counts.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Day {
    /// The date (`2026-11-25`).
    pub date: String,
    /// Requests judged.
    pub requests: i64,
    /// Violations.
    pub violations: i64,
    /// In grace.
    pub grace: i64,
    /// Violations by verified crawlers.
    pub verified_violations: i64,
    /// Answered 429 by a crawl budget.
    pub throttled: i64,
}

/// Every day of the last `days`, oldest first, for `site` (every site when
/// `None`).
pub async fn per_day(m: &dyn Host, site: Option<&str>, days: i64, crawler: Option<&str>) -> anyhow::Result<Vec<Day>> {
    let today = monitor::clock::now_ms().div_euclid(DAY_MS);
    let since = today - days + 1;
    let mut out: Vec<Day> = (since..=today).map(|d| Day { date: super::date_of_day(d), ..Day::default() }).collect();
    let sites: Vec<String> = match site {
        Some(s) => vec![s.to_string()],
        None => m.config().sites.iter().map(|s| s.name.clone()).collect(),
    };
    for s in sites {
        for r in ledger::rows(m.store(), &s, since, crawler).await? {
            let Some(d) = out.get_mut((r.day - since) as usize) else { continue };
            d.requests += r.requests;
            match r.class.as_str() {
                "violation" => {
                    d.violations += r.requests;
                    if r.identity == "verified" {
                        d.verified_violations += r.requests;
                    }
                }
                "grace" => d.grace += r.requests,
                "throttled" => d.throttled += r.requests,
                _ => {}
            }
        }
    }
    Ok(out)
}

/// A crawler's last robots.txt read in words (`3days 2h ago; it holds
/// revision 11, 2 behind`), or `None` when none was seen.
pub fn read_words(l: &CrawlerLine, now: i64) -> Option<String> {
    let at = l.last_read?;
    let ago = humantime::format_duration(std::time::Duration::from_secs(((now - at).max(0) / 1000) as u64));
    let held = match (l.read_revision, l.read_status) {
        (Some(r), _) => format!("it holds revision {r}"),
        // A file read before the first robots.txt robotsgate knows.
        (None, Some(200 | 304)) => {
            "what it got is unknown: it came before the first robots.txt robotsgate knows".to_string()
        }
        (None, Some(s)) => format!("it got {s}"),
        _ => "it got no answer".to_string(),
    };
    let behind = match l.behind {
        Some(0) => ", the file the site serves now".to_string(),
        Some(n) => format!(", {n} behind"),
        None => String::new(),
    };
    Some(format!("{ago} ago; {held}{behind}"))
}

/// An identity answer as reports and pages say it: "unverifiable" is
/// what the ledger records when nothing was checked (no verification
/// configured, or none possible), so it reads "not checked", not as a
/// finding against the crawler.
pub fn identity_words(answer: &str) -> &str {
    if answer == "unverifiable" { "not checked" } else { answer }
}

/// One violation's or grace row's line of the text report: what decided,
/// where it came from, its identity answer, its requests from first to
/// last, and samples.
fn decided_words(v: &Decided, grace: bool) -> String {
    let rule = v.rule.as_ref().map_or(String::new(), |r| format!(" (`{r}`)"));
    let from = v.source.as_ref().map_or(String::new(), |s| format!(", imported from {s}"));
    let span = if v.first_at == v.last_at {
        format!("at {}", monitor::clock::when(Some(v.first_at)))
    } else {
        format!("from {} to {}", monitor::clock::when(Some(v.first_at)), monitor::clock::when(Some(v.last_at)))
    };
    format!(
        "{}{rule}{from} ({}): {} {span}, e.g. {}",
        v.words(grace),
        identity_words(&v.identity),
        monitor::words::plural(v.requests, "request", "requests"),
        v.samples.join(" ")
    )
}

/// The summary as text, one block per crawler.
pub fn text(site: &str, lines: &[CrawlerLine], now: i64, days: i64, crawler: Option<&str>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let window =
        if days == 1 { "today (UTC)".to_string() } else { format!("in the last {days} UTC days, today included") };
    let _ = writeln!(out, "{site}: what crawlers did {window}, judged against the robots.txt each could hold");
    match (lines.is_empty(), crawler) {
        (true, Some(c)) => {
            let _ = writeln!(out, "  no requests of `{c}` recorded on {site} in that time");
        }
        (true, None) => {
            let _ = writeln!(
                out,
                "  no crawler requests recorded (import logs with `robots-monitor ingest --site {site} FILE`)"
            );
        }
        _ => {}
    }
    for l in lines {
        let ids: Vec<String> = l.identity.iter().map(|(k, v)| format!("{v} {}", identity_words(k))).collect();
        let _ = writeln!(
            out,
            "{} ({}, {}): {}, {} obeyed, {} in grace, {}{}{} [identity: {}]",
            l.crawler,
            if l.operator.is_empty() { "unknown operator" } else { &l.operator },
            if l.purpose.is_empty() { "unknown purpose" } else { &l.purpose },
            monitor::words::plural(l.requests, "request", "requests"),
            l.obeyed,
            l.grace,
            monitor::words::plural(l.violations, "violation", "violations"),
            if l.unjudged > 0 { format!(", {} unjudged", l.unjudged) } else { String::new() },
            if l.throttled > 0 { format!(", {} throttled at the edge (429)", l.throttled) } else { String::new() },
            ids.join(", ")
        );
        if l.unjudged > 0 {
            let _ = writeln!(
                out,
                "  unjudged: before the first robots.txt robotsgate knows of {site}, there is no evidence of what it could hold"
            );
        }
        match read_words(l, now) {
            Some(read) => {
                let _ = writeln!(out, "  last read robots.txt {read}");
            }
            None => {
                let _ = writeln!(out, "  no robots.txt read seen");
            }
        }
        for v in &l.violated {
            let _ = writeln!(out, "  violation of {}", decided_words(v, false));
        }
        for v in &l.in_grace {
            let _ = writeln!(out, "  in grace (a file it could still hold allowed it): {}", decided_words(v, true));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::behind;

    #[test]
    fn a_crawler_holding_the_file_served_now_is_current() {
        let revisions = [(1, 100, 10), (2, 200, 10), (3, 300, 10), (4, 400, 10)];
        // Revision 1 served, then 2, then held bodies 3 and 4 (never served), then 1 again.
        let served = [(100, Some(1)), (200, Some(2)), (250, None), (500, Some(1))];
        assert_eq!(behind(&served, &revisions, 1, 150), Some(0), "holds the file served now");
        assert_eq!(behind(&served, &revisions, 2, 210), Some(1), "one file (1) differs since");
        assert_eq!(behind(&[(100, Some(1)), (200, Some(2)), (300, Some(3))], &revisions, 1, 150), Some(2));
        assert_eq!(behind(&[(100, Some(1)), (200, Some(2))], &revisions, 1, 250), Some(1), "read late, still behind");
        assert_eq!(behind(&served, &revisions, 9, 150), None, "an unknown revision");
        assert_eq!(behind(&[], &revisions, 2, 0), Some(2), "no states: revisions first seen after");
    }
}
