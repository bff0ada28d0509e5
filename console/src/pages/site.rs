//! One site's page (`/sites/{name}`, `/api/sites/{name}`): its state, a
//! calendar of days, the held change beside the good copy, its pinned
//! verdicts; and a stored revision's raw bytes.

use super::*;

/// The policy and reason of a site's current state.
#[derive(Clone, Default)]
pub(super) struct CurrentState {
    pub(super) policy: String,
    pub(super) reason: String,
}

/// One day of the 30-day strip.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct DayCell {
    pub(super) date: String,
    /// The date as the strip labels it (`11-25`).
    pub(super) label: String,
    pub(super) fetches: i64,
    pub(super) worst: String,
    pub(super) slowest_ms: i64,
    /// `ok`, `warn` (4xx, 429), `bad` (5xx, errors) or `none`.
    pub(super) class: &'static str,
}

/// A change of what crawlers obey, on a site's timeline.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct StateView {
    pub(super) at: String,
    pub(super) policy: String,
    pub(super) reason: String,
    pub(super) revision: i64,
    pub(super) raw_href: Option<String>,
}

/// Today's verdict for one saved URL and crawler.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct VerdictView {
    pub(super) url: String,
    pub(super) agent: String,
    pub(super) purpose: &'static str,
    pub(super) allowed: bool,
    pub(super) rule: String,
    pub(super) broken: bool,
}

/// A site's page: its 30-day strip, its timeline and today's verdicts.
#[derive(Serialize, Template, utoipa::ToSchema)]
#[template(path = "site.html")]
pub(crate) struct SitePage {
    pub(super) name: String,
    pub(super) location: String,
    /// `ok`, `blocked`, `open`, `unreachable`, `too-large`, `stale`,
    /// `unknown`, or `held` while the gate holds a change.
    pub(super) state: &'static str,
    /// Why, in words (the status a blocked site answers, the size of a
    /// file past 500 KiB).
    pub(super) detail: String,
    pub(super) days: Vec<DayCell>,
    pub(super) states: Vec<StateView>,
    /// What crawlers get now: under the last good copy while a change is
    /// held, else under the current state.
    pub(super) verdicts: Vec<VerdictView>,
    /// While a change is held: the verdicts under what the origin serves.
    pub(super) origin_verdicts: Vec<VerdictView>,
    /// Changes the gate holds at the edge now.
    pub(super) held: Vec<HeldView>,
    /// What a release just did.
    pub(super) notice: Option<String>,
    /// Every host variant, host by scheme: what each serves, since when,
    /// and which verdicts differ from the canonical place's.
    pub(super) variants: Vec<super::places::MatrixRow>,
    /// The edge's copy against the origin's, when compared.
    pub(super) edge: Option<super::places::PlaceView>,
    /// The sitemaps its robots.txt names, as the latest check read them.
    pub(super) sitemaps: Option<super::sitemaps::SitemapsView>,
}

/// A change the gate holds: what it breaks, since when, and its diff
/// against the last good copy.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct HeldView {
    /// The held body's hash, or `status:NNN`.
    pub(super) outcome: String,
    /// Since when a gateway holds it (UTC).
    pub(super) since: String,
    /// What it breaks, one declaration a line.
    pub(super) breaks: Vec<String>,
    /// Its revision's page, when it is a body.
    pub(super) href: Option<String>,
    /// The change against the last good copy, as a unified diff.
    pub(super) diff: String,
}

/// The last good copy of `name` (a held body is none), empty when there is none.
pub(super) async fn last_good(m: &Monitor, name: &str) -> Result<Vec<u8>, Failure> {
    Ok(robotsgate_history::latest(m.store().pool(), name, 1)
        .await
        .map_err(|e| Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?
        .into_iter()
        .next()
        .map(|s| s.body)
        .unwrap_or_default())
}

/// The changes held for `name`, each diffed against `good`, the last good copy.
pub(super) async fn held_views(m: &Monitor, name: &str, good: &[u8]) -> Result<Vec<HeldView>, Failure> {
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

pub(super) fn day_class(worst: &str) -> &'static str {
    match worst.parse::<u16>() {
        Ok(s) if s >= 500 => "bad",
        Ok(s) if s >= 400 => "warn",
        Ok(_) => "ok",
        Err(_) => "bad",
    }
}

pub(super) async fn site_page(m: &Monitor, name: &str) -> Result<SitePage, Failure> {
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
        // Both judged afresh over the saved URLs and the root (which the
        // floor guards for every site), so a site with no `url_sets` still
        // shows what the hold spares crawlers.
        let judged = Monitor::judged(site);
        let served = monitor::change::verdicts(&Policy::Rules(rules::Robots::parse(&good)), &judged, &agents);
        let rules = CurrentState { policy: "rules".into(), reason: String::new() };
        // What the origin serves is the held change itself (the newest
        // hold): its body, or the status it answered.
        let newest = &held[0];
        let origin_policy = match &newest.href {
            Some(_) => match m.store().revision_by_hash(name, &newest.outcome).await? {
                Some(id) => m.store().revision_body(name, id).await?.map(|b| Policy::Rules(rules::Robots::parse(&b))),
                None => None,
            },
            None => newest
                .outcome
                .strip_prefix("status:")
                .and_then(|s| s.parse::<u16>().ok())
                .map(|s| Policy::from_fetch(&rules::FetchOutcome::status(s))),
        };
        let origin = match origin_policy {
            Some(policy) => {
                let fresh = monitor::change::verdicts(&policy, &judged, &agents);
                let said = match &policy {
                    Policy::Rules(_) => rules.clone(),
                    other => CurrentState {
                        policy: other.label().to_string(),
                        reason: newest.outcome.replace("status:", "robots.txt answered "),
                    },
                };
                verdict_views(m, &judged, &said, fresh)
            }
            None => verdict_views(m, &targets, &current, recorded),
        };
        (verdict_views(m, &judged, &rules, served), origin)
    };
    let location = site.source().location();
    let (state, detail) = match held.first() {
        Some(h) => ("held", format!("a change is held at the edge since {}: crawlers get the last good copy", h.since)),
        None => (state, detail),
    };
    let (variants, edge) = super::places::places(m, site).await?;
    let sitemaps = super::sitemaps::sitemaps(m, site).await?;
    Ok(SitePage {
        variants,
        edge,
        sitemaps,
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
pub(super) fn verdict_views(
    m: &Monitor,
    targets: &[Target],
    current: &CurrentState,
    rows: Vec<VerdictRow>,
) -> Vec<VerdictView> {
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
        (status = 404, description = "No such site", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
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
