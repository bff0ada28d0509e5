//! History from before monitoring (`imported_states`): a site's robots.txt
//! as it stood at earlier times, imported from a git repository, a folder
//! of dated copies or the Internet Archive, each state with its source.

use sqlx::{AnyConnection, AnyPool, Row};

/// One imported state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// From when (Unix ms).
    pub at: i64,
    /// The revision served, when there was a file.
    pub revision_id: Option<i64>,
    /// The status, when there was no file (a 404).
    pub status: Option<u16>,
    /// Where it came from: `git:REPO@COMMIT`, `dir:FILE`, `archive:TIMESTAMP`.
    pub source: String,
}

/// Records that `site` served `body` (or, with `None`, had no file: a 404)
/// from `at` on, as `source` says. Idempotent: a state already imported
/// for that time stays as it was. Returns whether it was new.
pub async fn record_imported(
    conn: &mut AnyConnection,
    site: &str,
    at: i64,
    body: Option<&[u8]>,
    source: &str,
) -> Result<bool, sqlx::Error> {
    let revision = match body {
        Some(body) => Some(crate::record(conn, site, body, at).await?.id),
        None => None,
    };
    let done = sqlx::query(
        "INSERT INTO imported_states (site, at, revision_id, status, source) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (site, at) DO NOTHING",
    )
    .bind(site)
    .bind(at)
    .bind(revision)
    .bind(if body.is_none() { Some(404_i32) } else { None })
    .bind(source)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The states imported for `site`, oldest first.
pub async fn imported(pool: &AnyPool, site: &str) -> Result<Vec<Imported>, sqlx::Error> {
    let rows = sqlx::query("SELECT at, revision_id, status, source FROM imported_states WHERE site = $1 ORDER BY at")
        .bind(site)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Imported {
                at: r.try_get("at")?,
                revision_id: r.try_get("revision_id")?,
                status: r.try_get::<Option<i32>, _>("status")?.and_then(|s| u16::try_from(s).ok()),
                source: r.try_get("source")?,
            })
        })
        .collect()
}
