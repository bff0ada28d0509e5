//! The Compliance pages: what crawlers did, judged against the robots.txt
//! each could hold, across all sites and per site, with a drill-down to the
//! deciding rule and its sample URLs, and violations per day as a
//! server-rendered SVG chart (no script). The same data is JSON under
//! `/api/compliance`.

use askama::Template;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::{Deserialize, Serialize};

use ledger::report::{self, CrawlerLine, Day};
use monitor::Monitor;

use monitor::links::encode;

type App = State<std::sync::Arc<Monitor>>;

/// The period shown, and the crawler drilled into: the same forms as the
/// CLI's `compliance --since 7d --crawler GPTBot`. Unknown parameters are
/// refused, naming them.
#[derive(Clone, Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Period {
    /// Days back, today included (1 to 366; default 30).
    #[serde(default)]
    pub days: Option<i64>,
    /// The same as a duration (`7d`, `12h`, `30days`): the ledger counts by
    /// UTC day, so a part of a day covers that whole day.
    #[serde(default)]
    pub since: Option<String>,
    /// Only this crawler (its catalogue token).
    #[serde(default)]
    pub crawler: Option<String>,
}

impl Period {
    /// The days, or why they are refused.
    fn days(&self) -> Result<i64, String> {
        let days = match (self.days, self.since.as_deref()) {
            (Some(_), Some(_)) => return Err("give `days` or `since`, not both".into()),
            (Some(d), None) => d,
            (None, Some(since)) => report::window_days("since", since)?,
            (None, None) => 30,
        };
        if (1..=366).contains(&days) { Ok(days) } else { Err(format!("days={days} is outside 1 to 366")) }
    }

    /// The window and the crawler's catalogue token, or why either is
    /// refused.
    fn read(&self, m: &Monitor) -> Result<(i64, Option<String>), String> {
        let days = self.days()?;
        let crawler = self.crawler.as_deref().map(|c| report::crawler_named(m, "crawler", c)).transpose()?;
        Ok((days, crawler))
    }
}

/// A query's rejection as a problem naming what was wrong (serde's words,
/// without axum's prefix).
fn refused(rejection: &axum::extract::rejection::QueryRejection) -> Response {
    let text = rejection.body_text();
    let why = text.strip_prefix("Failed to deserialize query string: ").unwrap_or(&text).to_string();
    super::problem::problem(StatusCode::BAD_REQUEST, why)
}

/// One site's totals.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct SiteTotals {
    /// The site.
    pub site: String,
    /// Crawler requests judged.
    pub requests: i64,
    /// Obeyed.
    pub obeyed: i64,
    /// In grace.
    pub grace: i64,
    /// Violations.
    pub violations: i64,
    /// Before the site's first known robots.txt: no verdict.
    pub unjudged: i64,
    /// Answered 429 by a crawl budget at the edge.
    pub throttled: i64,
    /// Violations by verified crawlers; `None` when identity is not
    /// checked (no `identity:` configured), so nothing could be verified.
    pub verified_violations: Option<i64>,
    /// Requests whose claim was spoofed; `None` when identity is not
    /// checked.
    pub spoofed: Option<i64>,
}

/// Every site's compliance.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Overview {
    /// Days shown.
    pub days: Vec<Day>,
    /// Per site.
    pub sites: Vec<SiteTotals>,
}

/// One site's compliance.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SiteCompliance {
    /// The site.
    pub site: String,
    /// Days shown.
    pub days: Vec<Day>,
    /// Per crawler, grouped by purpose and operator.
    pub crawlers: Vec<CrawlerLine>,
    /// When the gate held a change at the edge within the period: crawlers
    /// were judged against the copy they got, the last good one.
    pub holds: Vec<HoldPeriod>,
}

/// A change the gate held at the edge, and for how long.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct HoldPeriod {
    /// The held body's hash, or `status:NNN`.
    pub outcome: String,
    /// When a gateway first held it (Unix ms).
    pub from: i64,
    /// When it was released (Unix ms); `None` while it is held.
    pub released: Option<i64>,
    /// What it broke, one declaration a line.
    pub breaks: String,
}

async fn overview(m: &Monitor, days: i64, crawler: Option<&str>) -> anyhow::Result<Overview> {
    let mut sites = Vec::new();
    for s in &m.config().sites {
        let lines = report::summary(m, &s.name, days, crawler).await?;
        let checked = ledger::ingest::identity_checked(m.config());
        let mut t = SiteTotals {
            site: s.name.clone(),
            verified_violations: checked.then_some(0),
            spoofed: checked.then_some(0),
            ..SiteTotals::default()
        };
        for l in &lines {
            t.requests += l.requests;
            t.obeyed += l.obeyed;
            t.grace += l.grace;
            t.violations += l.violations;
            t.unjudged += l.unjudged;
            t.throttled += l.throttled;
            if checked {
                *t.verified_violations.get_or_insert(0) +=
                    l.violated.iter().filter(|v| v.identity == "verified").map(|v| v.requests).sum::<i64>();
                *t.spoofed.get_or_insert(0) += l.identity.get("spoofed").copied().unwrap_or(0);
            }
        }
        sites.push(t);
    }
    Ok(Overview { days: report::per_day(m, None, days, crawler).await?, sites })
}

async fn site_compliance(
    m: &Monitor,
    site: &str,
    days: i64,
    crawler: Option<&str>,
) -> Result<SiteCompliance, (StatusCode, String)> {
    if m.site(site).is_none() {
        return Err((StatusCode::NOT_FOUND, format!("no site named `{site}` in the config")));
    }
    let unavailable = |e: anyhow::Error| (StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}"));
    let crawlers = report::summary(m, site, days, crawler).await.map_err(unavailable)?;
    let since = monitor::clock::now_ms() - days * ledger::DAY_MS;
    let holds = robotsgate_history::gate::holds(m.store().pool(), Some(site), true)
        .await
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?
        .into_iter()
        .filter(|h| h.released_at.is_none_or(|r| r >= since))
        .map(|h| HoldPeriod { outcome: h.outcome, from: h.first_held, released: h.released_at, breaks: h.breaks })
        .collect();
    let days = report::per_day(m, Some(site), days, crawler).await.map_err(unavailable)?;
    Ok(SiteCompliance { site: site.to_string(), days, crawlers, holds })
}

/// Violations and grace requests per day as an SVG bar chart: stacked
/// bars under a y axis marked at 0, half way and the top, with the dates
/// under them (each week's first and the last day's), all inside the
/// drawing. It has a `viewBox`, so a narrow screen shrinks it instead of
/// scrolling sideways. Days with neither say so rather than draw an axis
/// up to an invented 1.
pub fn chart(days: &[Day]) -> String {
    use std::fmt::Write;
    let (w, h, top_pad, left, right) = (22usize, 120usize, 10usize, 40usize, 28usize);
    let most = days.iter().map(|d| d.violations + d.grace).max().unwrap_or(0);
    let top = round_up(most);
    let width = left + days.len() * w + right;
    let base = top_pad + h;
    let height = base + 20;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart\" class=\"chart\" viewBox=\"0 0 {width} {height}\" \
         width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"Violations and grace requests per day\">"
    );
    let marks: &[(i64, usize)] = match (most, top % 2) {
        (0, _) => &[(0, base)],
        (_, 0) => &[(0, base), (top / 2, base - h / 2), (top, top_pad)],
        _ => &[(0, base), (top, top_pad)],
    };
    for &(value, y) in marks {
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\"/>\
             <text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">{value}</text>",
            width - right,
            left - 6,
            y + 3
        );
    }
    if most == 0 {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" class=\"axis empty\">no violations and no grace requests in these days</text>",
            left + 8,
            base - h / 2
        );
    }
    for (i, d) in days.iter().enumerate() {
        let x = left + i * w;
        let scale = |n: i64| (n.max(0) as usize * h) / top.max(1) as usize;
        let (vh, gh) = (scale(d.violations), scale(d.grace));
        let _ = write!(
            svg,
            "<g class=\"day\"><title>{}: {}, {} in grace, {}</title>\
             <rect class=\"violation\" x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{vh}\"/>\
             <rect class=\"grace\" x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{gh}\"/></g>",
            d.date,
            monitor::words::plural(d.violations, "violation", "violations"),
            d.grace,
            monitor::words::plural(d.requests, "request", "requests"),
            base - vh,
            w - 4,
            base - vh - gh,
            w - 4
        );
        // Weekly labels, and the last day's, never two on top of each
        // other; centred under their bar, inside the drawing.
        let last = i + 1 == days.len();
        if last || (i % 7 == 0 && days.len() - 1 - i >= 3) {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">{}</text>",
                x + (w - 4) / 2,
                base + 14,
                d.date.get(5..).unwrap_or(&d.date)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The chart's top: `n` rounded up to 1, 2 or 5 times a power of ten (at
/// least 1), so the axis reads in round numbers.
fn round_up(n: i64) -> i64 {
    let mut step = 1i64;
    while step <= i64::MAX / 10 {
        for m in [1, 2, 5] {
            if m * step >= n {
                return m * step;
            }
        }
        step *= 10;
    }
    n
}

#[derive(Template)]
#[template(path = "compliance.html")]
struct OverviewPage {
    days: i64,
    chart: String,
    sites: Vec<(SiteTotals, String)>,
    /// Every log format `ingest --format` reads, for the hint.
    formats: &'static [&'static str],
}

#[derive(Template)]
#[template(path = "compliance_site.html")]
struct SitePage {
    site: String,
    site_href: String,
    days: i64,
    chart: String,
    /// Per purpose: the purpose and its crawlers.
    groups: Vec<(String, Vec<CrawlerView>)>,
    /// The crawler drilled into, if any.
    focus: Option<CrawlerView>,
    /// Hold periods, in words.
    holds: Vec<String>,
    /// With `?crawler=`, the page of every crawler.
    all_href: Option<String>,
}

/// A crawler line as the page shows it.
#[derive(Clone)]
struct CrawlerView {
    line: CrawlerLine,
    href: String,
    identity: String,
    read: String,
    violated: Vec<DecidedView>,
    in_grace: Vec<DecidedView>,
}

/// A violation's or grace row as the drill-down shows it.
#[derive(Clone)]
struct DecidedView {
    row: report::Decided,
    /// What decided, in words.
    words: String,
    /// Its identity answer, in words.
    identity: String,
    /// The deciding revision's page.
    href: Option<String>,
    /// The first and last request, as times.
    first: String,
    last: String,
}

fn view(site: &str, l: CrawlerLine, now: i64) -> CrawlerView {
    let identity =
        l.identity.iter().map(|(k, v)| format!("{v} {}", report::identity_words(k))).collect::<Vec<_>>().join(", ");
    let read = report::read_words(&l, now).unwrap_or_else(|| "no robots.txt read seen".to_string());
    let rows = |list: &[report::Decided], grace: bool| -> Vec<DecidedView> {
        list.iter()
            .map(|v| DecidedView {
                row: v.clone(),
                words: v.words(grace),
                identity: report::identity_words(&v.identity).to_string(),
                href: v.revision.map(|r| format!("/sites/{}/revisions/{r}", encode(site))),
                first: monitor::clock::when(Some(v.first_at)),
                last: monitor::clock::when(Some(v.last_at)),
            })
            .collect()
    };
    let (violated, in_grace) = (rows(&l.violated, false), rows(&l.in_grace, true));
    let href = format!("/sites/{}/compliance?crawler={}", encode(site), encode(&l.crawler));
    CrawlerView { line: l, href, identity, read, violated, in_grace }
}

fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("rendering: {e}")).into_response(),
    }
}

/// `GET /compliance`: every site.
pub async fn overview_page(State(m): App, Query(p): Query<Period>) -> Response {
    let (days, crawler) = match p.read(&m) {
        Ok(d) => d,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    match overview(&m, days, crawler.as_deref()).await {
        Ok(o) => {
            let sites = o.sites.into_iter().map(|s| {
                let href = format!("/sites/{}/compliance?days={days}", encode(&s.site));
                (s, href)
            });
            render(&OverviewPage {
                days,
                chart: chart(&o.days),
                sites: sites.collect(),
                formats: &robotsgate_compliance::log::NAMES,
            })
        }
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}")).into_response(),
    }
}

/// `GET /sites/{name}/compliance`: one site, per crawler; `?crawler=` drills in.
pub async fn site_page(State(m): App, Path(name): Path<String>, Query(q): Query<Period>) -> Response {
    let (days, crawler) = match q.read(&m) {
        Ok(d) => d,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let c = match site_compliance(&m, &name, days, None).await {
        Ok(c) => c,
        Err(failure) => return failure.into_response(),
    };
    // Drilled into one crawler, the chart is that crawler's.
    let per_day = match crawler.as_deref() {
        Some(crawler) => match report::per_day(&*m, Some(&name), days, Some(crawler)).await {
            Ok(d) => d,
            Err(e) => return (StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}")).into_response(),
        },
        None => c.days.clone(),
    };
    let now = monitor::clock::now_ms();
    let mut groups: Vec<(String, Vec<CrawlerView>)> = Vec::new();
    let mut focus = None;
    for l in c.crawlers {
        let v = view(&name, l, now);
        if crawler.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(&v.line.crawler)) {
            focus = Some(v.clone());
        }
        // Drilled into one crawler, the table is that crawler's too, as the
        // chart is: no row of another crawler beside a filtered chart.
        if crawler.as_deref().is_some_and(|x| !x.eq_ignore_ascii_case(&v.line.crawler)) {
            continue;
        }
        let purpose = if v.line.purpose.is_empty() { "unknown".to_string() } else { v.line.purpose.clone() };
        match groups.iter_mut().find(|(p, _)| *p == purpose) {
            Some((_, list)) => list.push(v),
            None => groups.push((purpose, vec![v])),
        }
    }
    // A crawler robotsgate knows with nothing recorded here: its drill-down
    // says so (the name was checked above; a typo never gets this far).
    if let (Some(c), None) = (&crawler, &focus) {
        focus = Some(view(&name, CrawlerLine { crawler: c.clone(), ..CrawlerLine::default() }, now));
    }
    let site_href = format!("/sites/{}", encode(&name));
    let stamp = |ms: i64| monitor::clock::when(Some(ms));
    let holds = c
        .holds
        .iter()
        .map(|h| {
            let until =
                h.released.map_or_else(|| "now (still held)".to_string(), |r| format!("{} (released)", stamp(r)));
            let first = h.breaks.lines().next().unwrap_or("it broke a pin");
            format!("{} to {until}: {first}", stamp(h.from))
        })
        .collect();
    let all_href = crawler.as_ref().map(|_| format!("/sites/{}/compliance?days={days}", encode(&name)));
    render(&SitePage { site: name, site_href, days, chart: chart(&per_day), groups, focus, holds, all_href })
}

/// The API's reading of a query: the window and the crawler, or the
/// problem that names what was wrong.
fn api_period(
    m: &Monitor,
    query: Result<Query<Period>, axum::extract::rejection::QueryRejection>,
) -> Result<(i64, Option<String>), Box<Response>> {
    let Query(p) = query.map_err(|rejection| Box::new(refused(&rejection)))?;
    p.read(m).map_err(|why| Box::new(super::problem::problem(StatusCode::BAD_REQUEST, why)))
}

/// `GET /api/compliance`: every site's totals and violations per day.
#[utoipa::path(get, path = "/api/compliance", tag = "compliance", operation_id = "api_compliance", params(Period),
    responses(
        (status = 200, description = "Every site's totals, and every day's counts", body = Overview),
        (status = 400, description = "`days` outside 1 to 366, a `since` that is no duration, or a `crawler` robotsgate does not know", body = super::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_overview(
    State(m): App,
    query: Result<Query<Period>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let (days, crawler) = match api_period(&m, query) {
        Ok(p) => p,
        Err(problem) => return *problem,
    };
    match overview(&m, days, crawler.as_deref()).await {
        Ok(o) => Json(o).into_response(),
        Err(e) => super::problem::problem(StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}")),
    }
}

/// `GET /api/compliance/{site}`: one site, per crawler.
#[utoipa::path(get, path = "/api/compliance/{site}", tag = "compliance", operation_id = "api_compliance_site", params(("site" = String, Path, description = "The site's name in the config"), Period),
    responses(
        (status = 200, description = "Per crawler: requests, violations, grace, identity answers, its last robots.txt read; and every day's counts", body = SiteCompliance),
        (status = 400, description = "`days` outside 1 to 366, a `since` that is no duration, or a `crawler` robotsgate does not know", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such site", body = super::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_site(
    State(m): App,
    Path(site): Path<String>,
    query: Result<Query<Period>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let (days, crawler) = match api_period(&m, query) {
        Ok(p) => p,
        Err(problem) => return *problem,
    };
    match site_compliance(&m, &site, days, crawler.as_deref()).await {
        Ok(c) => Json(c).into_response(),
        Err((status, detail)) => super::problem::problem(status, detail),
    }
}

#[cfg(test)]
mod chart_tests {
    use super::*;

    fn day(date: &str, violations: i64, grace: i64) -> Day {
        Day { date: date.to_string(), requests: violations + grace, violations, grace, ..Day::default() }
    }

    #[test]
    fn the_axis_reads_in_round_numbers_and_the_last_label_fits() {
        let days: Vec<Day> = (1..=30).map(|i| day(&format!("2026-11-{i:02}"), i64::from(i == 30) * 3, 4)).collect();
        let svg = chart(&days);
        assert!(svg.contains("viewBox=\"0 0 "), "it scales: {svg}");
        // 7 at most a day: the axis goes to 10, marked at 0, 5 and 10.
        for mark in [">0</text>", ">5</text>", ">10</text>"] {
            assert!(svg.contains(mark), "{mark}: {svg}");
        }
        let width: usize = svg.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let last = svg.rfind("text-anchor=\"middle\">11-30</text>").expect("the last day's label");
        let x: usize = svg[..last].rsplit("<text x=\"").next().unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(x + 14 <= width, "a 5-character label centred at {x} fits in {width}");
    }

    #[test]
    fn no_violations_say_so() {
        let svg = chart(&[day("2026-11-01", 0, 0), day("2026-11-02", 0, 0)]);
        assert!(svg.contains("no violations and no grace requests"), "{svg}");
        assert!(!svg.contains(">1</text>"), "no invented top of 1: {svg}");
        assert_eq!(
            (round_up(0), round_up(1), round_up(3), round_up(7), round_up(11), round_up(2000)),
            (1, 1, 5, 10, 20, 2000)
        );
    }
}
