//! The sites page (`/`, `/api/sites`): every site's state, filtered and
//! paged.

use super::*;

/// The states a site can be in, for the filter.
pub(super) const STATES: [&str; 8] = ["held", "ok", "blocked", "open", "unreachable", "too-large", "stale", "unknown"];

/// A site line as the sites page shows it.
pub(super) struct SiteView {
    pub(super) name: String,
    pub(super) href: String,
    pub(super) state: &'static str,
    pub(super) detail: String,
    pub(super) changed: String,
    pub(super) fetched: String,
    pub(super) open_alerts: i64,
}

#[derive(Template)]
#[template(path = "sites.html")]
pub(super) struct SitesPage {
    pub(super) filter: Filter,
    pub(super) states: [&'static str; 8],
    pub(super) sites: Vec<SiteView>,
    pub(super) total: i64,
    pub(super) page: i64,
    pub(super) pages: i64,
    pub(super) prev: Option<String>,
    pub(super) next: Option<String>,
}

pub(super) async fn site_lines(m: &Monitor, filter: &Filter) -> Result<(Vec<SiteLine>, i64), StoreError> {
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
        (status = 400, description = "A query value of the wrong type", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_sites(State(m): App, Query(filter): Query<Filter>) -> Result<Json<SitesList>, Failure> {
    let (sites, total) = site_lines(&m, &filter).await?;
    Ok(Json(SitesList { total, page: filter.page.unwrap_or(1).max(1), page_size: PAGE, sites }))
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
