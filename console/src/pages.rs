//! The console's handlers: each page gathers its data, then renders it as
//! HTML (a template in `monitor/templates`) or as JSON (`/api/…`).

use std::sync::Arc;

use askama::Template;
use axum::Json;
use axum::extract::{Form, FromRequest, Multipart, Path, Query, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use super::tester::{self, Input, Report, Saved};
use monitor::Monitor;
use monitor::change::Target;
use monitor::clock::now_ms;
use monitor::clock::when;
use monitor::links::encode;
use monitor::overview::{self, Filter, PAGE, SiteLine};
use monitor::store::{DAY_MS, StoreError, VerdictRow};
use rules::Policy;

type App = State<Arc<Monitor>>;

/// A failure shown to the reader.
pub struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        tracing::error!("console: {e}");
        Failure(StatusCode::SERVICE_UNAVAILABLE, format!("the history database did not answer: {e}"))
    }
}

fn render(t: &impl Template) -> Result<Html<String>, Failure> {
    t.render().map(Html).map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, format!("rendering: {e}")))
}

/// The policy and reason of a site's current state.
#[derive(Default)]
struct CurrentState {
    policy: String,
    reason: String,
}

/// The states a site can be in, for the filter.
const STATES: [&str; 7] = ["ok", "blocked", "open", "unreachable", "too-large", "stale", "unknown"];

/// A site line as the sites page shows it.
struct SiteView {
    name: String,
    href: String,
    state: &'static str,
    detail: String,
    changed: String,
    fetched: String,
    open_alerts: i64,
}

#[derive(Template)]
#[template(path = "sites.html")]
struct SitesPage {
    filter: Filter,
    states: [&'static str; 7],
    sites: Vec<SiteView>,
    total: i64,
    page: i64,
    pages: i64,
    prev: Option<String>,
    next: Option<String>,
}

async fn site_lines(m: &Monitor, filter: &Filter) -> Result<(Vec<SiteLine>, i64), StoreError> {
    overview::sites(m.store(), filter, now_ms(), monitor::monitor::stale_ms(m.config())).await
}

/// `GET /`: every site, filterable and paginated.
pub async fn sites(State(m): App, Query(filter): Query<Filter>) -> Result<Html<String>, Failure> {
    let (lines, total) = site_lines(&m, &filter).await?;
    let pages = ((total + PAGE - 1) / PAGE).max(1);
    let page = filter.page.unwrap_or(1).clamp(1, pages);
    let link = |p: i64| format!("/?q={}&state={}&page={p}", encode(&filter.q), encode(&filter.state));
    let sites = lines
        .into_iter()
        .map(|s| SiteView {
            href: format!("/sites/{}", encode(&s.name)),
            name: s.name,
            state: s.state,
            detail: s.detail,
            changed: when(s.changed_at),
            fetched: when(s.fetched_at),
            open_alerts: s.open_alerts,
        })
        .collect();
    let (prev, next) = ((page > 1).then(|| link(page - 1)), (page < pages).then(|| link(page + 1)));
    render(&SitesPage { filter, states: STATES, sites, total, page, pages, prev, next })
}

/// `GET /api/sites`: the sites page as JSON.
#[utoipa::path(get, path = "/api/sites", tag = "sites",
    params(
        ("q" = Option<String>, Query, description = "Part of the site's name"),
        ("state" = Option<String>, Query, description = "Only sites in this state: ok, blocked, open, unreachable, too-large, stale or unknown"),
        ("page" = Option<i64>, Query, description = "1-based page"),
    ),
    responses(
        (status = 200, description = "One page of sites", body = SitesList),
        (status = 400, description = "A query value of the wrong type", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_sites(State(m): App, Query(filter): Query<Filter>) -> Result<Json<SitesList>, Failure> {
    let (sites, total) = site_lines(&m, &filter).await?;
    Ok(Json(SitesList { total, page: filter.page.unwrap_or(1).max(1), page_size: PAGE, sites }))
}

/// One day of the 30-day strip.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct DayCell {
    date: String,
    /// The date as the strip labels it (`11-25`).
    label: String,
    fetches: i64,
    worst: String,
    slowest_ms: i64,
    /// `ok`, `warn` (4xx, 429), `bad` (5xx, errors) or `none`.
    class: &'static str,
}

/// A change of what crawlers obey, on a site's timeline.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct StateView {
    at: String,
    policy: String,
    reason: String,
    revision: i64,
    raw_href: Option<String>,
}

/// Today's verdict for one saved URL and crawler.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct VerdictView {
    url: String,
    agent: String,
    purpose: &'static str,
    allowed: bool,
    rule: String,
    broken: bool,
}

/// A site's page: its 30-day strip, its timeline and today's verdicts.
#[derive(Serialize, Template, utoipa::ToSchema)]
#[template(path = "site.html")]
pub(crate) struct SitePage {
    name: String,
    location: String,
    /// `ok`, `blocked`, `open`, `unreachable`, `too-large`, `stale`,
    /// `unknown`, or `held` while the gate holds a change.
    state: &'static str,
    /// Why, in words (the status a blocked site answers, the size of a
    /// file past 500 KiB).
    detail: String,
    days: Vec<DayCell>,
    states: Vec<StateView>,
    /// What crawlers get now: under the last good copy while a change is
    /// held, else under the current state.
    verdicts: Vec<VerdictView>,
    /// While a change is held: the verdicts under what the origin serves.
    origin_verdicts: Vec<VerdictView>,
    /// Changes the gate holds at the edge now.
    held: Vec<HeldView>,
    /// What a release just did.
    notice: Option<String>,
}

/// A change the gate holds: what it breaks, since when, and its diff
/// against the last good copy.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct HeldView {
    /// The held body's hash, or `status:NNN`.
    outcome: String,
    /// Since when a gateway holds it (UTC).
    since: String,
    /// What it breaks, one declaration a line.
    breaks: Vec<String>,
    /// Its revision's page, when it is a body.
    href: Option<String>,
    /// The change against the last good copy, as a unified diff.
    diff: String,
}

/// The last good copy of `name` (a held body is none), empty when there is none.
async fn last_good(m: &Monitor, name: &str) -> Result<Vec<u8>, Failure> {
    Ok(robotsgate_history::latest(m.store().pool(), name, 1)
        .await
        .map_err(|e| Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?
        .into_iter()
        .next()
        .map(|s| s.body)
        .unwrap_or_default())
}

/// The changes held for `name`, each diffed against `good`, the last good copy.
async fn held_views(m: &Monitor, name: &str, good: &[u8]) -> Result<Vec<HeldView>, Failure> {
    let holds =
        monitor::release::held(m, name).await.map_err(|e| Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let mut out = Vec::new();
    for h in holds {
        let id = match h.status {
            Some(s) if h.outcome == robotsgate_history::gate::outcome_of_status(s) => None,
            _ => m.store().revision_by_hash(name, &h.outcome).await?,
        };
        let diff = match id {
            Some(id) => {
                let body = m.store().revision_body(name, id).await?.unwrap_or_default();
                monitor::excerpt::diff(name, good, &body)
            }
            None => format!("robots.txt answered {}: no file, everything allowed\n", h.status.unwrap_or(404)),
        };
        out.push(HeldView {
            since: when(Some(h.first_held)),
            breaks: h.breaks.lines().map(str::to_string).collect(),
            href: id.map(|id| format!("/sites/{}/revisions/{id}", encode(name))),
            outcome: h.outcome,
            diff,
        });
    }
    Ok(out)
}

fn day_class(worst: &str) -> &'static str {
    match worst.parse::<u16>() {
        Ok(s) if s >= 500 => "bad",
        Ok(s) if s >= 400 => "warn",
        Ok(_) => "ok",
        Err(_) => "bad",
    }
}

async fn site_page(m: &Monitor, name: &str) -> Result<SitePage, Failure> {
    let Some(site) = m.site(name) else {
        return Err(Failure(StatusCode::NOT_FOUND, format!("no site named `{name}` in the config")));
    };
    let today = now_ms().div_euclid(DAY_MS);
    let recorded = m.store().fetch_days(name, (today - 29) * DAY_MS).await?;
    let days = (today - 29..=today)
        .map(|day| {
            let date = when(Some(day * DAY_MS))[..10].to_string();
            match recorded.iter().find(|d| d.day == day) {
                None => DayCell {
                    label: date[5..].to_string(),
                    date,
                    fetches: 0,
                    worst: "none".into(),
                    slowest_ms: 0,
                    class: "none",
                },
                Some(d) => {
                    let worst = d
                        .outcomes
                        .iter()
                        .map(|(o, _)| o.clone())
                        .max_by_key(|o| match day_class(o) {
                            "bad" => 3,
                            "warn" => 2,
                            _ => 1,
                        })
                        .unwrap_or_default();
                    DayCell {
                        label: date[5..].to_string(),
                        date,
                        fetches: d.fetches,
                        class: day_class(&worst),
                        worst,
                        slowest_ms: d.slowest_ms,
                    }
                }
            }
        })
        .collect();
    let history = m.store().history(name).await?;
    let mut states: Vec<StateView> = history
        .iter()
        .rev()
        .map(|s| StateView {
            at: when(Some(s.at)),
            policy: s.policy.clone(),
            reason: s.reason.clone().unwrap_or_default(),
            revision: s.revision_id.unwrap_or(0),
            raw_href: s.revision_id.map(|id| format!("/sites/{}/revisions/{id}", encode(name))),
        })
        .collect();
    // History from before monitoring (`import-history`), with its source.
    let first = history.first().map_or(i64::MAX, |s| s.at);
    let imported = robotsgate_history::imported::imported(m.store().pool(), name)
        .await
        .map_err(|e| Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    states.extend(imported.into_iter().rev().filter(|i| i.at < first).map(|i| StateView {
        at: when(Some(i.at)),
        policy: if i.revision_id.is_some() { "rules (imported)" } else { "allow-all (imported)" }.to_string(),
        reason: format!("imported from {}", i.source),
        revision: i.revision_id.unwrap_or(0),
        raw_href: i.revision_id.map(|id| format!("/sites/{}/revisions/{id}", encode(name))),
    }));
    let row = m.store().site(name).await?;
    let targets = Monitor::targets(site);
    // What the site's page says first: its state as the sites page shows it.
    let filter = Filter { q: name.to_string(), ..Filter::default() };
    let line = site_lines(m, &filter).await?.0.into_iter().find(|l| l.name == name);
    let (state, detail) = line.map_or(("unknown", "not fetched yet".to_string()), |l| (l.state, l.detail));
    let current = history
        .iter()
        .find(|s| Some(s.id) == row.state_id)
        .map(|s| CurrentState { policy: s.policy.clone(), reason: s.reason.clone().unwrap_or_default() })
        .unwrap_or_default();
    let recorded = match row.state_id {
        None => Vec::new(),
        Some(id) => m.store().verdicts(id).await?,
    };
    let good = last_good(m, name).await?;
    let held = held_views(m, name, &good).await?;
    let agents = m.config().agents_of(site).to_vec();
    // While a change is held, crawlers get the last good copy: its verdicts
    // are "now", and what the origin serves is shown apart.
    let (verdicts, origin_verdicts) = if held.is_empty() {
        (verdict_views(m, &targets, &current, recorded), Vec::new())
    } else {
        let served = monitor::change::verdicts(&Policy::Rules(rules::Robots::parse(&good)), &targets, &agents);
        let rules = CurrentState { policy: "rules".into(), reason: String::new() };
        (verdict_views(m, &targets, &rules, served), verdict_views(m, &targets, &current, recorded))
    };
    let location = site.source().location();
    let (state, detail) = match held.first() {
        Some(h) => ("held", format!("a change is held at the edge since {}: crawlers get the last good copy", h.since)),
        None => (state, detail),
    };
    Ok(SitePage {
        name: name.to_string(),
        location,
        state,
        detail,
        days,
        states,
        verdicts,
        origin_verdicts,
        held,
        notice: None,
    })
}

/// The verdict rows of `rows` (decided under `current`) as the page shows
/// them: the config's URL order, each URL's crawlers by purpose, a broken
/// pin marked.
fn verdict_views(m: &Monitor, targets: &[Target], current: &CurrentState, rows: Vec<VerdictRow>) -> Vec<VerdictView> {
    let mut out: Vec<VerdictView> = rows
        .into_iter()
        .map(|v| {
            let expect = targets.iter().find(|t| t.url == v.url).and_then(|t| t.expect.as_ref());
            let broken = expect.and_then(|p| p.of(&v.agent, m.catalogue())).is_some_and(|e| !e.kept_by(v.allowed));
            VerdictView {
                rule: match (v.line, &v.rule) {
                    (Some(l), Some(r)) => format!("line {l}: {r}"),
                    // Not a rule: the fetch outcome decided (a 5xx or
                    // 429 reads as disallow all, a 4xx as allow all).
                    _ if !current.policy.eq("rules") => format!("no rule: {}", current.reason),
                    _ => "no rule".into(),
                },
                url: v.url,
                purpose: m.catalogue().purpose_of(&v.agent),
                agent: v.agent,
                allowed: v.allowed,
                broken,
            }
        })
        .collect();
    let order = |url: &str| targets.iter().position(|t| t.url == url).unwrap_or(usize::MAX);
    out.sort_by_key(|v| (order(&v.url), m.catalogue().purpose_rank(&v.agent)));
    out
}

/// `GET /sites/{name}`: the 30-day strip, the timeline, today's verdicts.
pub async fn site(State(m): App, Path(name): Path<String>) -> Result<Html<String>, Failure> {
    render(&site_page(&m, &name).await?)
}

/// `GET /api/sites/{name}`: the site page as JSON.
#[utoipa::path(get, path = "/api/sites/{name}", tag = "sites",
    params(("name" = String, Path, description = "The site's name in the config")),
    responses(
        (status = 200, description = "The site's 30-day strip, timeline and verdicts", body = SitePage),
        (status = 404, description = "No such site", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_site(State(m): App, Path(name): Path<String>) -> Result<Json<serde_json::Value>, Failure> {
    let page = site_page(&m, &name).await?;
    serde_json::to_value(&page).map(Json).map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// `GET /sites/{name}/revisions/{id}/raw`: the exact bytes, as a download.
pub async fn raw_revision(State(m): App, Path((name, id)): Path<(String, i64)>) -> Result<Response, Failure> {
    let Some(body) = m.store().revision_body(&name, id).await? else {
        return Err(Failure(StatusCode::NOT_FOUND, format!("site `{name}` has no revision {id}")));
    };
    let disposition = format!("attachment; filename=\"robots-{}-{id}.txt\"", encode(&name));
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream".to_string()), (header::CONTENT_DISPOSITION, disposition)],
        body,
    )
        .into_response())
}

#[derive(Template)]
#[template(path = "tester.html")]
struct TesterPage {
    input: Input,
    /// The file's exact bytes in base64, when the text cannot carry them.
    carried: Option<String>,
    sites: Vec<String>,
    sets: Vec<String>,
    report: Option<Report>,
    error: Option<String>,
    share: Option<String>,
}

/// Longest link a result is shared by; past it, the form is the way.
const SHARE_MAX: usize = 8_000;

/// Every saved URL set, as `SITE/SET`, the way the tester names them.
fn set_names(m: &Monitor) -> Vec<String> {
    let sites = m.config().sites.iter();
    sites.flat_map(|site| site.url_sets.keys().map(move |set| format!("{}/{set}", site.name))).collect()
}

/// The URLs of the saved set named `SITE/SET`, with their pins.
fn saved_set(m: &Monitor, name: &str) -> Result<Vec<Saved>, String> {
    if name.is_empty() {
        return Ok(Vec::new());
    }
    for site in &m.config().sites {
        for (set, entries) in &site.url_sets {
            if name.strip_prefix(site.name.as_str()).and_then(|rest| rest.strip_prefix('/')) == Some(set.as_str()) {
                return Ok(entries
                    .iter()
                    .map(|e| Saved { url: e.url().to_string(), expect: e.expect().cloned() })
                    .collect());
            }
        }
    }
    Err(format!("no saved URL set named `{name}` (give it as SITE/SET)"))
}

async fn test(m: &Monitor, input: &Input) -> Result<Report, String> {
    let set = saved_set(m, &input.set)?;
    let (live, saved) = if input.site.is_empty() {
        (None, Vec::new())
    } else {
        let site = m.site(&input.site).ok_or_else(|| format!("no site named `{}` in the config", input.site))?;
        let row = m.store().site(&input.site).await.map_err(|e| e.to_string())?;
        let state = match row.state_id {
            Some(id) => m.store().state(id).await.map_err(|e| e.to_string())?,
            None => None,
        };
        let live = match state.and_then(|s| s.revision_id) {
            Some(rev) => m
                .store()
                .revision_body(&input.site, rev)
                .await
                .map_err(|e| e.to_string())?
                .map(|body| rules::Policy::Rules(rules::Robots::parse(&body))),
            None => None,
        };
        (live, Monitor::targets(site).into_iter().map(|t| t.url).collect())
    };
    tester::run(input, &set, live.as_ref(), &saved, m.catalogue()).map_err(|e| e.to_string())
}

/// A stored revision as the tester's file, when one is asked for and no
/// text was given.
async fn with_revision(m: &Monitor, mut input: Input) -> Result<Input, Failure> {
    if let (false, Some(rev)) = (input.has_file(), input.revision) {
        let body = m.store().revision_body(&input.site, rev).await?;
        let Some(body) = body else {
            return Err(Failure(StatusCode::NOT_FOUND, format!("site `{}` has no revision {rev}", input.site)));
        };
        // Judged byte for byte, as the site's page judges it.
        input.set_file(body);
    }
    Ok(input)
}

/// The tester's page for `input`; `submitted` when the form was sent
/// (a POST), so that an empty one is told what to give.
async fn tester_page(m: &Monitor, input: Input, submitted: bool) -> Result<Html<String>, Failure> {
    let input = with_revision(m, input).await?;
    let sites = m.config().sites.iter().map(|s| s.name.clone()).collect();
    let sets = set_names(m);
    let ran = input.has_file() || !input.urls.is_empty() || !input.set.is_empty();
    let (report, error) = if ran {
        match test(m, &input).await {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        }
    } else if submitted {
        let nothing = "Nothing to test: paste or upload a robots.txt (or open a stored revision), and give URLs or a saved URL set";
        (None, Some(nothing.to_string()))
    } else {
        (None, None)
    };
    let carried = input.carried_b64();
    // A file that is not UTF-8 is shared by its bytes.
    let file = match &carried {
        Some(b64) => format!("robots_b64={}", encode(b64)),
        None => format!("robots={}", encode(&input.robots)),
    };
    let query = format!(
        "/tester?{file}&agents={}&urls={}&site={}&set={}",
        encode(&input.agents),
        encode(&input.urls),
        encode(&input.site),
        encode(&input.set)
    );
    let share = (report.is_some() && query.len() <= SHARE_MAX).then_some(query);
    render(&TesterPage { input, carried, sites, sets, report, error, share })
}

/// Largest tester request: the file, its upload copy and 5,000 long URLs.
pub const TESTER_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Reads the tester's form sent as `multipart/form-data`, the way a form
/// with a file input sends it. An uploaded file replaces the pasted text;
/// both keep their exact bytes. A file over the tester's limit is refused
/// here, by its byte count; what was typed stays, with the error.
async fn multipart_input(mut form: Multipart) -> (Input, Option<String>) {
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        format!("the form could not be read ({e}); the tester takes at most {} MiB in all", TESTER_BODY_LIMIT >> 20)
    };
    let mut input = Input::default();
    let mut upload: Option<Vec<u8>> = None;
    let mut pasted: Option<Vec<u8>> = None;
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return (input, Some(unreadable(e))),
        };
        let name = field.name().unwrap_or_default().to_string();
        let bytes = match field.bytes().await {
            Ok(b) => b,
            Err(e) => return (input, Some(unreadable(e))),
        };
        let text = || String::from_utf8_lossy(&bytes).into_owned();
        match name.as_str() {
            "robots" => {
                input.robots = text();
                pasted = Some(bytes.to_vec());
            }
            "robots_b64" => input.robots_b64 = text(),
            "agents" => input.agents = text(),
            "urls" => input.urls = tester::url_text(bytes.to_vec()),
            "site" => input.site = text(),
            "set" => input.set = text(),
            "revision" => match tester::revision_number(&text()) {
                Ok(r) => input.revision = r,
                Err(e) => return (input, Some(e)),
            },
            "file" if !bytes.is_empty() => upload = Some(bytes.to_vec()),
            _ => {}
        }
    }
    if let Some(bytes) = upload {
        if bytes.len() > tester::MAX_ROBOTS_BYTES {
            return (input, Some(tester::InputError::RobotsTooLarge(bytes.len()).to_string()));
        }
        input.robots_b64.clear();
        input.set_file(bytes);
    } else if let Some(bytes) = pasted.filter(|b| !b.is_empty())
        && let Err(e) = input.set_typed(bytes)
    {
        return (input, Some(e.to_string()));
    }
    (input, None)
}

/// `GET /tester`: the form, and the result when the query carries one (a
/// shared link).
pub async fn tester_get(State(m): App, RawQuery(query): RawQuery) -> Result<Html<String>, Failure> {
    let input =
        Input::from_form(query.unwrap_or_default().as_bytes()).map_err(|e| Failure(StatusCode::BAD_REQUEST, e))?;
    tester_page(&m, input, false).await
}

/// `POST /tester`: the result of the form, sent as `multipart/form-data`
/// (with an uploaded file) or URL-encoded.
pub async fn tester_post(State(m): App, request: Request) -> Result<Html<String>, Failure> {
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let input = if content_type.starts_with("multipart/form-data") {
        let form = Multipart::from_request(request, &()).await.map_err(|e| Failure(e.status(), e.body_text()))?;
        match multipart_input(form).await {
            (input, None) => input,
            (input, Some(e)) => {
                let page = TesterPage {
                    carried: None,
                    input,
                    sites: m.config().sites.iter().map(|s| s.name.clone()).collect(),
                    sets: set_names(&m),
                    report: None,
                    error: Some(e),
                    share: None,
                };
                return render(&page);
            }
        }
    } else {
        let body = axum::body::to_bytes(request.into_body(), TESTER_BODY_LIMIT)
            .await
            .map_err(|e| Failure(StatusCode::PAYLOAD_TOO_LARGE, format!("the form could not be read: {e}")))?;
        Input::from_form(&body).map_err(|e| Failure(StatusCode::BAD_REQUEST, e))?
    };
    tester_page(&m, input, true).await
}

async fn api_test(m: &Monitor, input: Input) -> Response {
    let input = match with_revision(m, input).await {
        Ok(i) => i,
        Err(f) => return f.into_response(),
    };
    match test(m, &input).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => super::problem::problem(StatusCode::UNPROCESSABLE_ENTITY, e),
    }
}

/// `GET /api/test`: the tester as JSON, input in the query.
#[utoipa::path(get, path = "/api/test", tag = "tester",
    params(
        ("robots" = Option<String>, Query, description = "The robots.txt; its bytes exactly, percent-encoded"),
        ("robots_b64" = Option<String>, Query, description = "The robots.txt's bytes in standard base64"),
        ("agents" = Option<String>, Query, description = "Crawler product tokens, one per line or comma-separated"),
        ("urls" = Option<String>, Query, description = "URLs or paths, one per line"),
        ("site" = Option<String>, Query, description = "A site whose live file the tested one is compared with"),
        ("revision" = Option<i64>, Query, description = "A stored revision of `site` to test, when no file is given"),
        ("set" = Option<String>, Query, description = "A saved URL set, as SITE/SET"),
    ),
    responses(
        (status = 200, description = "Every verdict with its group and deciding line, and the lint", body = tester::Report),
        (status = 400, description = "A field that cannot be read", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such revision", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 414, description = "A query longer than the console reads (64 KiB): send the file with POST", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Input past a limit, or a site or set that does not exist", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_test_get(State(m): App, RawQuery(query): RawQuery) -> Response {
    match Input::from_form(query.unwrap_or_default().as_bytes()) {
        Ok(input) => api_test(&m, input).await,
        Err(e) => Failure(StatusCode::BAD_REQUEST, e).into_response(),
    }
}

/// `POST /api/test`: the tester as JSON, input as a JSON object.
#[utoipa::path(post, path = "/api/test", tag = "tester",
    request_body(content = Input, description = "What to test; `revision` may be given as `/api/sites/{name}` gives it", content_type = "application/json"),
    responses(
        (status = 200, description = "Every verdict with its group and deciding line, and the lint", body = tester::Report),
        (status = 400, description = "The body is not JSON", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such revision", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not `application/json`", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "JSON of another shape, input past a limit, or a site or set that does not exist", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_test_post(State(m): App, Json(input): Json<Input>) -> Response {
    api_test(&m, input).await
}

async fn revision_page(m: &Monitor, name: &str, id: i64) -> Result<super::revision::RevisionPage, Failure> {
    match super::revision::page(m, name, id).await {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(Failure(StatusCode::NOT_FOUND, format!("site `{name}` has no revision {id}"))),
        Err(e) => Err(Failure(StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}"))),
    }
}

/// `GET /sites/{name}/revisions/{id}`: the diff, flips and lint.
pub async fn revision(State(m): App, Path((name, id)): Path<(String, i64)>) -> Result<Html<String>, Failure> {
    render(&revision_page(&m, &name, id).await?)
}

/// `GET /sites/{name}/revisions/by-hash/{hash}`: the revision whose body
/// has this SHA-256, by a redirect to its page. Alert mails link here, as
/// they are written before the revision has an id.
pub async fn revision_by_hash(State(m): App, Path((name, hash)): Path<(String, String)>) -> Result<Response, Failure> {
    match m.store().revision_by_hash(&name, &hash).await? {
        Some(id) => {
            Ok(axum::response::Redirect::to(&format!("/sites/{}/revisions/{id}", encode(&name))).into_response())
        }
        None => Err(Failure(StatusCode::NOT_FOUND, format!("site `{name}` has no revision with hash {hash}"))),
    }
}

/// `GET /api/sites/{name}/revisions/{id}`: the revision page as JSON.
#[utoipa::path(get, path = "/api/sites/{name}/revisions/{id}", tag = "sites",
    params(
        ("name" = String, Path, description = "The site's name in the config"),
        ("id" = i64, Path, description = "The revision's id, as `/api/sites/{name}` gives it"),
    ),
    responses(
        (status = 200, description = "The revision against the one before: diff, flips, lint", body = super::revision::RevisionPage),
        (status = 400, description = "The id is not a number", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such site or revision", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_revision(State(m): App, Path((name, id)): Path<(String, i64)>) -> Result<Response, Failure> {
    Ok(Json(revision_page(&m, &name, id).await?).into_response())
}

/// `GET /alerts`.
pub async fn alerts(State(m): App) -> Result<Html<String>, Failure> {
    let alerts = super::alerts::list(m.store(), m.config().email.is_some()).await?;
    render(&super::alerts::AlertsPage { alerts, notice: None, email_off: m.config().email.is_none() })
}

/// `GET /api/alerts`.
#[utoipa::path(get, path = "/api/alerts", tag = "alerts",
    responses(
        (status = 200, description = "The newest 500 alerts, with their delivery state", body = Vec<super::alerts::AlertLine>),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_alerts(State(m): App) -> Result<Response, Failure> {
    Ok(Json(super::alerts::list(m.store(), m.config().email.is_some()).await?).into_response())
}

/// The retry form's fields.
#[derive(serde::Deserialize)]
pub struct RetryForm {
    #[serde(default)]
    token: String,
}

async fn retry(m: &Monitor, id: i64, token: &str) -> Result<String, Failure> {
    if !super::alerts::authorised(m.config(), token) {
        return Err(Failure(
            StatusCode::FORBIDDEN,
            "retrying needs the admin token (ROBOTSGATE_ADMIN_TOKEN or proxy.admin_token_file)".into(),
        ));
    }
    if super::alerts::retry(m.store(), id, now_ms()).await? {
        Ok(format!("Alert {id} will be sent on the next delivery round."))
    } else {
        Err(Failure(StatusCode::NOT_FOUND, format!("no undelivered alert {id}")))
    }
}

/// `POST /alerts/{id}/retry` (form with `token`).
pub async fn retry_alert(
    State(m): App,
    Path(id): Path<i64>,
    Form(form): Form<RetryForm>,
) -> Result<Html<String>, Failure> {
    let notice = retry(&m, id, &form.token).await?;
    let alerts = super::alerts::list(m.store(), m.config().email.is_some()).await?;
    render(&super::alerts::AlertsPage { alerts, notice: Some(notice), email_off: m.config().email.is_none() })
}

/// `POST /api/alerts/{id}/retry` with `Authorization: Bearer TOKEN`.
#[utoipa::path(post, path = "/api/alerts/{id}/retry", tag = "alerts",
    params(("id" = i64, Path, description = "The alert's id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The alert is queued again", body = Retried),
        (status = 400, description = "The id is not a number", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 403, description = "No or a wrong admin token", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No undelivered alert with this id", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_retry_alert(
    State(m): App,
    Path(id): Path<i64>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Failure> {
    let token = bearer(&headers);
    let notice = retry(&m, id, token).await?;
    Ok(Json(Retried { retried: id, notice }).into_response())
}

/// The release form's fields.
#[derive(serde::Deserialize)]
pub struct ReleaseForm {
    #[serde(default)]
    token: String,
    /// A revision id; empty for every change held now.
    #[serde(default)]
    revision: String,
}

async fn release(
    m: &Monitor,
    name: &str,
    revision: Option<i64>,
    token: &str,
) -> Result<monitor::release::Released, Failure> {
    if !super::alerts::authorised(m.config(), token) {
        return Err(Failure(
            StatusCode::FORBIDDEN,
            "releasing needs the admin token (ROBOTSGATE_ADMIN_TOKEN or proxy.admin_token_file)".into(),
        ));
    }
    use monitor::release::ReleaseError;
    monitor::release::release(m, name, revision, "the console").await.map_err(|e| match e {
        ReleaseError::NoSite(_) | ReleaseError::NoRevision(..) => Failure(StatusCode::NOT_FOUND, e.to_string()),
        ReleaseError::NothingHeld(_) => Failure(StatusCode::CONFLICT, e.to_string()),
        ReleaseError::Database(_) => Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    })
}

/// `POST /sites/{name}/release` (form with `token` and an optional `revision`).
pub async fn release_page(
    State(m): App,
    Path(name): Path<String>,
    Form(form): Form<ReleaseForm>,
) -> Result<Html<String>, Failure> {
    let revision = match form.revision.trim() {
        "" => None,
        id => {
            Some(id.parse::<i64>().map_err(|_| Failure(StatusCode::BAD_REQUEST, format!("`{id}` is no revision id")))?)
        }
    };
    let released = release(&m, &name, revision, &form.token).await?;
    let mut page = site_page(&m, &name).await?;
    page.notice = Some(released.notice);
    render(&page)
}

/// Which revision to release, for `POST /api/sites/{name}/release`.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReleaseQuery {
    /// The revision id; without it, every change held for the site now.
    revision: Option<i64>,
}

/// `POST /api/sites/{name}/release` with `Authorization: Bearer TOKEN`.
#[utoipa::path(post, path = "/api/sites/{name}/release", tag = "gate",
    params(("name" = String, Path, description = "The site's name in the config"), ReleaseQuery),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Released: every gateway sharing the database serves it at its next refresh", body = monitor::release::Released),
        (status = 400, description = "The revision is not a number, or the query names an unknown parameter", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 403, description = "No or a wrong admin token", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such site or revision", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing is held for the site", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The history database did not answer", body = super::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_release(
    State(m): App,
    Path(name): Path<String>,
    axum::extract::Query(query): axum::extract::Query<ReleaseQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Failure> {
    let token = bearer(&headers);
    Ok(Json(release(&m, &name, query.revision, token).await?).into_response())
}

/// The token of an `Authorization: Bearer TOKEN` field; empty without one.
fn bearer(headers: &axum::http::HeaderMap) -> &str {
    super::access::credentials(headers, "Bearer").unwrap_or_default()
}

/// `GET /static/console.css`.
pub async fn stylesheet() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../templates/console.css")).into_response()
}

/// The sites page as JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SitesList {
    /// Sites matching the filter, on every page.
    pub total: i64,
    /// This page (1-based).
    pub page: i64,
    /// Sites per page.
    pub page_size: i64,
    /// This page's sites.
    pub sites: Vec<monitor::overview::SiteLine>,
}

/// What a retry did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Retried {
    /// The alert.
    pub retried: i64,
    /// In words.
    pub notice: String,
}
