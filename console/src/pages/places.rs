//! The site page's "where crawlers look" part: every host variant in a
//! matrix of host × scheme, and the edge against the origin, as the last
//! polls judged them (`rules::coverage`, stored by `monitor::places`).

use super::*;

/// One place as the page and the API show it.
#[derive(Serialize, Clone, utoipa::ToSchema)]
pub(crate) struct PlaceView {
    /// `scheme://host[:port]`, or `edge`.
    pub(super) place: String,
    /// What it must be: `same`, `redirect`, `own` or `absent`.
    pub(super) must: String,
    /// What it serves, as a key: `same`, `redirect`, `additions`, `own`,
    /// `html`, `no-file`, `broken-redirect`, `unavailable`, `not-served`, or
    /// `unknown` for an edge whose origin copy could not be read apart.
    pub(super) serves: String,
    /// What a crawler gets there, in words.
    pub(super) summary: String,
    /// What is wrong, one finding a line; empty when it is what it must be.
    pub(super) findings: Vec<String>,
    /// The verdicts that differ from the canonical place's.
    pub(super) differs: Vec<String>,
    /// Since when it serves this (UTC).
    pub(super) since: String,
    /// When it was last fetched (UTC).
    pub(super) checked: String,
    /// Off what it must be.
    pub(super) off: bool,
    /// For the edge: what it said of its cache.
    pub(super) cache: Vec<String>,
}

/// One host's row of the variants matrix.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct MatrixRow {
    pub(super) host: String,
    /// Over HTTPS; `None` where it is the canonical place or not checked.
    pub(super) https: Option<PlaceView>,
    /// Over HTTP.
    pub(super) http: Option<PlaceView>,
    /// The canonical place is this host over `https` or `http`.
    pub(super) canonical: Option<String>,
}

impl MatrixRow {
    /// The row's two cells, HTTPS first, for the template: (scheme, is the
    /// canonical place, the place).
    pub(super) fn cells(&self) -> [(&'static str, bool, Option<&PlaceView>); 2] {
        let canonical = |s: &str| self.canonical.as_deref() == Some(s);
        [("https", canonical("https"), self.https.as_ref()), ("http", canonical("http"), self.http.as_ref())]
    }
}

/// The places of `name`: the variants' matrix and the edge.
pub(super) async fn places(
    m: &Monitor,
    site: &robotsgate_config::Site,
) -> Result<(Vec<MatrixRow>, Option<PlaceView>), Failure> {
    let rows = monitor::places::rows(m.store().pool(), &site.name)
        .await
        .map_err(|e| Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let views: Vec<PlaceView> = rows.iter().map(view).collect();
    let edge = views.iter().find(|v| v.place == monitor::places::EDGE).cloned();
    let canonical = match site.source() {
        robotsgate_config::Source::Url(u) => url::Url::parse(&u).ok(),
        _ => None,
    };
    let mut matrix: Vec<MatrixRow> = Vec::new();
    if let Some(c) = &canonical {
        let i = row_of(&mut matrix, &authority(c));
        matrix[i].canonical = Some(c.scheme().to_string());
    }
    for v in views.into_iter().filter(|v| v.place != monitor::places::EDGE) {
        let Ok(u) = url::Url::parse(&v.place) else { continue };
        let i = row_of(&mut matrix, &authority(&u));
        if u.scheme() == "https" {
            matrix[i].https = Some(v);
        } else {
            matrix[i].http = Some(v);
        }
    }
    Ok((matrix, edge))
}

fn row_of(matrix: &mut Vec<MatrixRow>, host: &str) -> usize {
    match matrix.iter().position(|r| r.host == host) {
        Some(i) => i,
        None => {
            matrix.push(MatrixRow { host: host.to_string(), https: None, http: None, canonical: None });
            matrix.len() - 1
        }
    }
}

fn authority(u: &url::Url) -> String {
    let host = u.host_str().unwrap_or_default();
    match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

fn view(r: &monitor::places::PlaceRow) -> PlaceView {
    PlaceView {
        place: r.place.clone(),
        must: r.must.clone(),
        serves: r.serves.clone(),
        summary: r.summary.clone(),
        findings: r.findings.lines().map(|l| l.split_once(": ").map_or(l, |(_, t)| t).to_string()).collect(),
        differs: r.flips.lines().map(str::to_string).collect(),
        since: when(Some(r.since)),
        checked: when(Some(r.checked_at)),
        off: r.trouble_since.is_some(),
        cache: r.cache.lines().map(str::to_string).collect(),
    }
}
