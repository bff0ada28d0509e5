//! The gate's holds and releases, shared by a fleet (`gate_holds`): a
//! gateway records each change it holds, with what it breaks; the monitor,
//! the console and the API release one; every gateway asks at each refresh
//! whether the change it holds was released.
//!
//! An outcome is the held body's hash (its revision's `hash`), or
//! `status:NNN` for a status that means "no file" (see
//! [`outcome_of_status`]).

use sqlx::{AnyConnection, AnyPool, Row};

/// The outcome key of a status that means "no file" (a 4xx).
pub fn outcome_of_status(status: u16) -> String {
    format!("status:{status}")
}

/// One held change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The site.
    pub site: String,
    /// The body's hash, or `status:NNN`.
    pub outcome: String,
    /// The origin's status, when it was not a file.
    pub status: Option<u16>,
    /// What it breaks, one declaration a line.
    pub breaks: String,
    /// When a gateway first held it (Unix ms).
    pub first_held: i64,
    /// When a gateway last held it (Unix ms).
    pub last_held: i64,
    /// When it was released (Unix ms), if it was.
    pub released_at: Option<i64>,
    /// Who released it.
    pub released_by: Option<String>,
}

/// Records that a gateway holds `outcome` of `site` at `at` (Unix ms),
/// with the body when it is a file (kept as a revision, so nothing the
/// origin said is lost). Safe from many gateways at once: the first hold
/// time stays the earliest, the last the latest, and a release stands.
pub async fn record_hold(
    conn: &mut AnyConnection,
    site: &str,
    outcome: &str,
    status: Option<u16>,
    body: Option<&[u8]>,
    breaks: &str,
    at: i64,
) -> Result<(), sqlx::Error> {
    if let Some(body) = body {
        crate::record(conn, site, body, at).await?;
    }
    sqlx::query(
        "INSERT INTO gate_holds (site, outcome, status, breaks, first_held, last_held) VALUES ($1, $2, $3, $4, $5, $5) \
         ON CONFLICT (site, outcome) DO UPDATE SET breaks = excluded.breaks, \
         last_held = CASE WHEN gate_holds.last_held < excluded.last_held THEN excluded.last_held ELSE gate_holds.last_held END, \
         first_held = CASE WHEN gate_holds.first_held > excluded.first_held THEN excluded.first_held ELSE gate_holds.first_held END",
    )
    .bind(site)
    .bind(outcome)
    .bind(status.map(i32::from))
    .bind(breaks)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Releases `outcome` of `site` (every unreleased hold of the site when
/// `None`) at `at`, by `by`. Returns the outcomes released; a release of an
/// outcome no gateway held yet is recorded too, so that the change passes
/// when it arrives.
pub async fn release(
    conn: &mut AnyConnection,
    site: &str,
    outcome: Option<&str>,
    by: &str,
    at: i64,
) -> Result<Vec<String>, sqlx::Error> {
    match outcome {
        Some(outcome) => {
            sqlx::query(
                "INSERT INTO gate_holds (site, outcome, breaks, first_held, last_held, released_at, released_by) \
                 VALUES ($1, $2, '', $3, $3, $3, $4) \
                 ON CONFLICT (site, outcome) DO UPDATE SET released_at = excluded.released_at, released_by = excluded.released_by \
                 WHERE gate_holds.released_at IS NULL",
            )
            .bind(site)
            .bind(outcome)
            .bind(at)
            .bind(by)
            .execute(&mut *conn)
            .await?;
            Ok(vec![outcome.to_string()])
        }
        None => {
            let rows = sqlx::query("SELECT outcome FROM gate_holds WHERE site = $1 AND released_at IS NULL")
                .bind(site)
                .fetch_all(&mut *conn)
                .await?;
            let outcomes: Vec<String> = rows.iter().map(|r| r.try_get("outcome")).collect::<Result<_, _>>()?;
            sqlx::query(
                "UPDATE gate_holds SET released_at = $2, released_by = $3 WHERE site = $1 AND released_at IS NULL",
            )
            .bind(site)
            .bind(at)
            .bind(by)
            .execute(&mut *conn)
            .await?;
            Ok(outcomes)
        }
    }
}

/// Whether `outcome` of `site` was released.
pub async fn is_released(pool: &AnyPool, site: &str, outcome: &str) -> Result<bool, sqlx::Error> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM gate_holds WHERE site = $1 AND outcome = $2 AND released_at IS NOT NULL",
    )
    .bind(site)
    .bind(outcome)
    .fetch_one(pool)
    .await?;
    Ok(row.try_get::<i64, _>("n")? > 0)
}

/// The holds of `site` (every site when `None`), newest first, released
/// ones included when `released`.
pub async fn holds(pool: &AnyPool, site: Option<&str>, released: bool) -> Result<Vec<Held>, sqlx::Error> {
    // Spelled out per case: PostgreSQL cannot type a parameter that is only
    // compared with NULL.
    let released = if released { "" } else { " AND released_at IS NULL" };
    let columns =
        "SELECT site, outcome, status, breaks, first_held, last_held, released_at, released_by FROM gate_holds";
    let rows = match site {
        Some(site) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "{columns} WHERE site = $1{released} ORDER BY last_held DESC, outcome"
            )))
            .bind(site)
            .fetch_all(pool)
            .await?
        }
        None => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "{columns} WHERE 1 = 1{released} ORDER BY last_held DESC, site, outcome"
            )))
            .fetch_all(pool)
            .await?
        }
    };
    rows.iter()
        .map(|r| {
            Ok(Held {
                site: r.try_get("site")?,
                outcome: r.try_get("outcome")?,
                status: r.try_get::<Option<i32>, _>("status")?.and_then(|s| u16::try_from(s).ok()),
                breaks: r.try_get("breaks")?,
                first_held: r.try_get("first_held")?,
                last_held: r.try_get("last_held")?,
                released_at: r.try_get("released_at")?,
                released_by: r.try_get("released_by")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, latest, open, record};

    #[test]
    fn a_held_body_is_no_good_copy_until_released() {
        let dir = std::env::temp_dir().join(format!("history-gate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            let db = open("h.db", &dir, Options::default()).await.unwrap();
            let mut conn = db.pool.acquire().await.unwrap();
            record(&mut conn, "shop", b"good", 1_000).await.unwrap();
            let bad = crate::body_hash(b"bad");
            record_hold(&mut conn, "shop", &bad, Some(200), Some(b"bad"), "it disallows /", 2_000).await.unwrap();
            record_hold(&mut conn, "shop", &bad, Some(200), Some(b"bad"), "it disallows /", 1_500).await.unwrap();
            drop(conn);
            let seen = latest(&db.pool, "shop", 5).await.unwrap();
            assert_eq!(seen.len(), 1, "the held body is kept as a revision but is no good copy");
            assert_eq!(seen[0].body, b"good");
            let held = holds(&db.pool, Some("shop"), false).await.unwrap();
            assert_eq!((held[0].first_held, held[0].last_held), (1_500, 2_000));
            assert!(!is_released(&db.pool, "shop", &bad).await.unwrap());
            let mut conn = db.pool.acquire().await.unwrap();
            assert_eq!(release(&mut conn, "shop", None, "test", 3_000).await.unwrap(), vec![bad.clone()]);
            drop(conn);
            assert!(is_released(&db.pool, "shop", &bad).await.unwrap());
            assert_eq!(latest(&db.pool, "shop", 5).await.unwrap()[0].body, b"bad");
            assert!(holds(&db.pool, Some("shop"), false).await.unwrap().is_empty());
            assert_eq!(holds(&db.pool, None, true).await.unwrap()[0].released_by.as_deref(), Some("test"));
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
