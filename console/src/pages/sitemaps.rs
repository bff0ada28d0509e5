//! The site page's sitemaps section: each sitemap its robots.txt names,
//! its state and URL count, and the listed URLs robots.txt disallows with
//! their deciding lines, as the latest check found them
//! (`rules::sitemap`, stored by `monitor::sitemaps`).

use super::*;

/// One sitemap file as the page and the API show it.
#[derive(Serialize, Clone, utoipa::ToSchema)]
pub(crate) struct SitemapFileView {
    /// Its URL.
    pub(super) url: String,
    /// The index that listed it, if one did.
    pub(super) from: Option<String>,
    /// `ok`, `warnings`, `error` or `unchanged`.
    pub(super) state: String,
    /// `urlset`, `index`, `text`, `other`, or `unread`.
    pub(super) kind: String,
    /// The final status, if any.
    pub(super) status: Option<u64>,
    /// URLs it lists that a crawler takes (valid, on the host, new).
    pub(super) listed: u64,
    /// What is wrong, one finding a line.
    pub(super) findings: Vec<String>,
}

/// One group of listed URLs robots.txt disallows.
#[derive(Serialize, Clone, utoipa::ToSchema)]
pub(crate) struct ConflictView {
    /// "1,204 of 48,000 sitemap URLs are disallowed for Googlebot and 13
    /// other search crawlers (line 7: `Disallow: /products/`)".
    pub(super) sentence: String,
    /// The deciding line, when a rule decided.
    pub(super) line: Option<u64>,
    /// The crawlers.
    pub(super) crawlers: Vec<String>,
    /// How many URLs.
    pub(super) count: u64,
    /// A few of them.
    pub(super) sample: Vec<String>,
}

/// The latest sitemap check of a site.
#[derive(Serialize, Clone, utoipa::ToSchema)]
pub(crate) struct SitemapsView {
    /// Distinct URLs listed.
    pub(super) listed: i64,
    /// URLs robots.txt disallows for a search crawler.
    pub(super) disallowed: i64,
    /// Every file could be read.
    pub(super) complete: bool,
    /// When it was last checked (UTC).
    pub(super) checked: String,
    /// Since when listed URLs are disallowed (UTC), if they are.
    pub(super) conflict_since: Option<String>,
    /// The conflicts, the largest first.
    pub(super) conflicts: Vec<ConflictView>,
    /// The files, in the order read.
    pub(super) files: Vec<SitemapFileView>,
}

/// The latest sitemap check of `site`, if there is one.
pub(super) async fn sitemaps(m: &Monitor, site: &robotsgate_config::Site) -> Result<Option<SitemapsView>, Failure> {
    let Some(c) = monitor::sitemaps::latest(m.store().pool(), &site.name).await.map_err(Failure::from)? else {
        return Ok(None);
    };
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let conflicts = c
        .conflicts_json()
        .iter()
        .map(|g| ConflictView {
            sentence: text(&g["sentence"]),
            line: g["line"].as_u64(),
            crawlers: g["crawlers"].as_array().into_iter().flatten().map(text).collect(),
            count: g["count"].as_u64().unwrap_or(0),
            sample: g["sample"].as_array().into_iter().flatten().map(text).collect(),
        })
        .collect();
    let files = c
        .files_json()
        .iter()
        .map(|f| SitemapFileView {
            url: text(&f["url"]),
            from: f["from"].as_str().map(str::to_string),
            state: text(&f["state"]),
            kind: f["kind"].as_str().unwrap_or("unread").to_string(),
            status: f["status"].as_u64(),
            listed: f["listed"].as_u64().unwrap_or(0),
            findings: f["findings"].as_array().into_iter().flatten().map(|x| text(&x["text"])).collect(),
        })
        .collect();
    Ok(Some(SitemapsView {
        listed: c.listed,
        disallowed: c.closed,
        complete: c.complete,
        checked: when(Some(c.checked_at)),
        conflict_since: c.trouble_since.map(|t| when(Some(t))),
        conflicts,
        files,
    }))
}
