//! The sites overview, read from the store: one row per site with its
//! state, last change, last fetch and open alerts, in one query per page so
//! that the console's sites page and the metrics stay fast at 10,000 sites.

use serde::Serialize;
use sqlx::Row;

use crate::store::{Store, StoreError, q};

/// Rows per page.
pub const PAGE: i64 = 50;

/// A site's row on the sites page.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SiteLine {
    /// The site.
    pub name: String,
    /// `held` (a gateway holds a change at the edge: crawlers get the last
    /// good copy), `ok`, `blocked`, `open`, `unreachable`, `too-large`,
    /// `stale` or `unknown` (never fetched).
    pub state: &'static str,
    /// Why, in words.
    pub detail: String,
    /// When what crawlers obey last changed (Unix ms).
    pub changed_at: Option<i64>,
    /// When the site was last fetched (Unix ms).
    pub fetched_at: Option<i64>,
    /// Alerts not yet delivered.
    pub open_alerts: i64,
}

/// The filters of the sites page.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Filter {
    /// Part of the site's name.
    #[serde(default)]
    pub q: String,
    /// Only sites in this state.
    #[serde(default)]
    pub state: String,
    /// 1-based page.
    #[serde(default)]
    pub page: Option<i64>,
}

/// The state of a site, from its current state row, its current fetch run
/// and how long ago that ran.
fn classify(policy: Option<&str>, reason: Option<&str>, truncated: bool, stale: bool) -> (&'static str, String) {
    let reason = reason.unwrap_or_default().to_string();
    match policy {
        None => ("unknown", "not fetched yet".to_string()),
        Some(_) if stale => ("stale", "no fetch for more than three intervals".to_string()),
        Some("rules") if truncated => ("too-large", "larger than 500 KiB: Google ignores the rest".to_string()),
        Some("rules") => ("ok", "rules".to_string()),
        Some("disallow-all") if reason.contains("unreachable") || reason.contains("timed out") => {
            ("unreachable", reason)
        }
        Some("disallow-all") => ("blocked", reason),
        Some(_) => ("open", reason),
    }
}

/// One page of sites matching `filter`, and how many match in all.
/// `stale_ms` is how old a last fetch may be before the site is stale.
pub async fn sites(
    store: &Store,
    filter: &Filter,
    now: i64,
    stale_ms: i64,
) -> Result<(Vec<SiteLine>, i64), StoreError> {
    let pattern = format!("%{}%", filter.q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
    // The state filter needs the classification, which is computed here,
    // so a filtered listing reads every matching name and pages after.
    let rows = sqlx::query(
        "SELECT s.name, st.policy, st.reason, st.at AS changed_at, f.last_at, f.truncated, r.size, \
         (SELECT COUNT(*) FROM alerts a WHERE a.site = s.name AND a.sent_at IS NULL) AS open_alerts, \
         (SELECT COUNT(*) FROM gate_holds h WHERE h.site = s.name AND h.released_at IS NULL AND h.ended_at IS NULL \
          AND h.breaks <> '') AS holds, \
         (SELECT MAX(h.summary) FROM gate_holds h WHERE h.site = s.name AND h.released_at IS NULL \
          AND h.ended_at IS NULL AND h.breaks <> '') AS hold_summary \
         FROM sites s LEFT JOIN states st ON st.id = s.state_id LEFT JOIN fetches f ON f.id = s.run_id \
         LEFT JOIN revisions r ON r.id = f.revision_id \
         WHERE s.name LIKE $1 ESCAPE '\\' ORDER BY s.name",
    )
    .bind(&pattern)
    .fetch_all(store.pool())
    .await
    .map_err(q("listing sites"))?;
    let mut all = Vec::with_capacity(rows.len());
    for r in &rows {
        let read = || -> Result<SiteLine, sqlx::Error> {
            let policy: Option<String> = r.try_get("policy")?;
            let reason: Option<String> = r.try_get("reason")?;
            let fetched_at: Option<i64> = r.try_get("last_at")?;
            // Past 500 KiB Google reads no further, whether or not the
            // fetcher's own cap (a little more) cut the body.
            let size: Option<i64> = r.try_get("size")?;
            let past = size.is_some_and(|n| n > rules::parse::MAX_FILE_BYTES as i64);
            let truncated = r.try_get::<Option<i64>, _>("truncated")?.unwrap_or(0) != 0 || past;
            let stale = fetched_at.is_some_and(|f| now - f > stale_ms);
            let (mut state, mut detail) = classify(policy.as_deref(), reason.as_deref(), truncated, stale);
            // A change held at the edge is what crawlers are spared: said
            // before what the origin serves, which they do not get.
            if r.try_get::<i64, _>("holds")? > 0 && state != "unknown" {
                let summary: Option<String> = r.try_get("hold_summary")?;
                let name: String = r.try_get("name")?;
                state = "held";
                detail = format!(
                    "a change is held at the edge{}; crawlers get the last good copy (release it: robots-monitor release {name})",
                    summary.map(|s| format!(": {s}")).unwrap_or_default()
                );
            }
            Ok(SiteLine {
                name: r.try_get("name")?,
                state,
                detail,
                changed_at: r.try_get("changed_at")?,
                fetched_at,
                open_alerts: r.try_get("open_alerts")?,
            })
        };
        let line = read().map_err(q("reading a site line"))?;
        if filter.state.is_empty() || filter.state == line.state {
            all.push(line);
        }
    }
    let total = all.len() as i64;
    let page = filter.page.unwrap_or(1).max(1);
    let start = ((page - 1) * PAGE).min(total) as usize;
    let end = (start + PAGE as usize).min(all.len());
    Ok((all.drain(start..end).collect(), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_in_words() {
        assert_eq!(classify(None, None, false, false).0, "unknown");
        assert_eq!(classify(Some("rules"), None, false, false).0, "ok");
        assert_eq!(classify(Some("rules"), None, true, false).0, "too-large");
        assert_eq!(classify(Some("rules"), None, false, true).0, "stale");
        assert_eq!(classify(Some("disallow-all"), Some("robots.txt answered 503"), false, false).0, "blocked");
        assert_eq!(classify(Some("allow-all"), Some("robots.txt answered 404"), false, false).0, "open");
    }
}
