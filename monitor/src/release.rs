//! Releasing a change the gate holds: `robots-monitor release SITE
//! [REVISION]`, the console's button and `POST /api/sites/{name}/release`
//! all call [`release`], which records the release in the database every
//! gateway of the fleet reads at each refresh (`gate_holds`). A release
//! names one exact outcome: the next different body is judged again.

use robotsgate_history::gate::Held;

use crate::Monitor;

/// Why a release was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// No such site in the config.
    #[error("no site named `{0}` in the config")]
    NoSite(String),
    /// No such revision of the site.
    #[error("site `{0}` has no revision {1} (see `robots-monitor history {0}`)")]
    NoRevision(String, i64),
    /// Nothing to release.
    #[error(
        "nothing is held for `{0}` in the database; a gateway without `database:` takes a release through its admin API (POST /release?site={0})"
    )]
    NothingHeld(String),
    /// The database failed.
    #[error("the history database: {0}")]
    Database(#[from] robotsgate_history::DbError),
}

/// What a release did.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Released {
    /// The site.
    pub site: String,
    /// The outcomes released: body hashes, or `status:NNN`.
    pub outcomes: Vec<String>,
    /// In words.
    pub notice: String,
}

/// Releases `revision` of `site` (its body, held or not yet held), or
/// every change held for the site now, on behalf of `by`.
pub async fn release(m: &Monitor, site: &str, revision: Option<i64>, by: &str) -> Result<Released, ReleaseError> {
    if m.site(site).is_none() {
        return Err(ReleaseError::NoSite(site.to_string()));
    }
    let pool = m.store().pool();
    let outcome = match revision {
        None => None,
        Some(id) => {
            let hash: Option<String> = {
                use sqlx::Row;
                sqlx::query("SELECT hash FROM revisions WHERE site = $1 AND id = $2")
                    .bind(site)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?
                    .map(|r| r.try_get("hash"))
                    .transpose()?
            };
            Some(hash.ok_or_else(|| ReleaseError::NoRevision(site.to_string(), id))?)
        }
    };
    let mut conn = pool.acquire().await?;
    let outcomes =
        robotsgate_history::gate::release(&mut conn, site, outcome.as_deref(), by, crate::clock::now_ms()).await?;
    if outcomes.is_empty() {
        return Err(ReleaseError::NothingHeld(site.to_string()));
    }
    let notice = match revision {
        Some(id) => format!(
            "Revision {id} of {site} is released: every gateway sharing this database serves it at its next refresh."
        ),
        None => format!(
            "{} of {site} released: every gateway sharing this database serves it at its next refresh.",
            crate::words::plural(outcomes.len(), "held change", "held changes")
        ),
    };
    Ok(Released { site: site.to_string(), outcomes, notice })
}

/// The changes held for `site` now, newest first.
pub async fn held(m: &Monitor, site: &str) -> Result<Vec<Held>, robotsgate_history::DbError> {
    robotsgate_history::gate::holds(m.store().pool(), Some(site), false).await
}
