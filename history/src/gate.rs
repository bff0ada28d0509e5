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
    /// When the gateway stopped holding it for another reason (Unix ms).
    pub ended_at: Option<i64>,
    /// Why it stopped: a file that breaks nothing came, or the good copy
    /// outlived `max_staleness`.
    pub ended_why: Option<String>,
    /// Which hold of this outcome it is (0, then 1 when held again after it ended).
    pub episode: i64,
    /// The sentence the alert opens with, as the gateway judged it.
    pub summary: Option<String>,
}

impl Held {
    /// Whether a gateway holds it now: held, neither released nor ended.
    pub fn active(&self) -> bool {
        self.released_at.is_none() && self.ended_at.is_none() && !self.breaks.is_empty()
    }
}

/// A hold as a gateway records it.
#[derive(Clone, Copy, Debug)]
pub struct Holding<'a> {
    /// The site.
    pub site: &'a str,
    /// The body's hash, or `status:NNN`.
    pub outcome: &'a str,
    /// The origin's status.
    pub status: Option<u16>,
    /// The held body, when the origin answered with a file.
    pub body: Option<&'a [u8]>,
    /// What it breaks, one group a line.
    pub breaks: &'a str,
    /// The sentence the alert opens with.
    pub summary: &'a str,
    /// When the gateway fetched what it holds (Unix ms).
    pub at: i64,
}

/// When a hold recorded at `excluded.last_held` is a new episode of its
/// outcome: the last hold ended (not by a release) before it, or its
/// release was spent (a gateway served the released outcome, then
/// something else) before it.
const HELD_AGAIN: &str = "((gate_holds.ended_at IS NOT NULL AND gate_holds.released_at IS NULL \
     AND excluded.last_held > gate_holds.ended_at) \
     OR (gate_holds.spent_at IS NOT NULL AND excluded.last_held > gate_holds.spent_at))";

/// Records that a gateway holds `h.outcome` of `h.site` at `h.at`, with
/// the body when it is a file (kept as a revision, so nothing the origin
/// said is lost). Safe from many gateways at once: the first hold time
/// stays the earliest, the last the latest, and a release stands. A hold
/// of an outcome whose last hold ended before `h.at` is a new episode (a
/// new alert); one fetched before that end (a slower replica) is not. So
/// is a hold of an outcome whose release was spent ([`spend`]).
pub async fn record_hold(conn: &mut AnyConnection, h: &Holding<'_>) -> Result<(), sqlx::Error> {
    // Every column of a row held again is reset in one statement, and
    // PostgreSQL evaluates each CASE against the old row, so one condition
    // serves them all.
    if let Some(body) = h.body {
        crate::record(conn, h.site, body, h.at).await?;
    }
    sqlx::query(
        sqlx::AssertSqlSafe(format!(
            "INSERT INTO gate_holds (site, outcome, status, breaks, summary, first_held, last_held) VALUES ($1, $2, $3, $4, $5, $6, $6) \
         ON CONFLICT (site, outcome) DO UPDATE SET breaks = excluded.breaks, summary = excluded.summary, \
         episode = CASE WHEN {again} THEN gate_holds.episode + 1 ELSE gate_holds.episode END, \
         first_held = CASE WHEN {again} THEN excluded.first_held \
             WHEN gate_holds.first_held > excluded.first_held THEN excluded.first_held ELSE gate_holds.first_held END, \
         last_held = CASE WHEN gate_holds.last_held < excluded.last_held THEN excluded.last_held ELSE gate_holds.last_held END, \
         ended_why = CASE WHEN {again} THEN NULL ELSE gate_holds.ended_why END, \
         ended_at = CASE WHEN {again} THEN NULL ELSE gate_holds.ended_at END, \
         released_by = CASE WHEN {again} THEN NULL ELSE gate_holds.released_by END, \
         released_at = CASE WHEN {again} THEN NULL ELSE gate_holds.released_at END, \
         spent_at = CASE WHEN {again} THEN NULL ELSE gate_holds.spent_at END",
            again = HELD_AGAIN
        )),
    )
    .bind(h.site)
    .bind(h.outcome)
    .bind(h.status.map(i32::from))
    .bind(h.breaks)
    .bind(h.summary)
    .bind(h.at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Records that a gateway stopped holding `outcome` of `site` at `at` for
/// `why` (a release records itself). A hold another gateway recorded after
/// `at` still stands.
pub async fn end_hold(
    conn: &mut AnyConnection,
    site: &str,
    outcome: &str,
    why: &str,
    at: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE gate_holds SET ended_at = $3, ended_why = $4 \
         WHERE site = $1 AND outcome = $2 AND ended_at IS NULL AND released_at IS NULL AND last_held <= $3",
    )
    .bind(site)
    .bind(outcome)
    .bind(at)
    .bind(why)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() > 0)
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
                 ON CONFLICT (site, outcome) DO UPDATE SET released_at = excluded.released_at, released_by = excluded.released_by, \
                 spent_at = NULL WHERE gate_holds.released_at IS NULL OR gate_holds.spent_at IS NOT NULL",
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
            // Only what a gateway holds now: a hold that ended is no longer held.
            let rows = sqlx::query(
                "SELECT outcome FROM gate_holds WHERE site = $1 AND released_at IS NULL AND ended_at IS NULL",
            )
            .bind(site)
            .fetch_all(&mut *conn)
            .await?;
            let outcomes: Vec<String> = rows.iter().map(|r| r.try_get("outcome")).collect::<Result<_, _>>()?;
            sqlx::query(
                "UPDATE gate_holds SET released_at = $2, released_by = $3 \
                 WHERE site = $1 AND released_at IS NULL AND ended_at IS NULL",
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

/// Whether `outcome` of `site` was released, and the release is not spent.
pub async fn is_released(pool: &AnyPool, site: &str, outcome: &str) -> Result<bool, sqlx::Error> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM gate_holds WHERE site = $1 AND outcome = $2 AND released_at IS NOT NULL \
         AND spent_at IS NULL",
    )
    .bind(site)
    .bind(outcome)
    .fetch_one(pool)
    .await?;
    Ok(row.try_get::<i64, _>("n")? > 0)
}

/// Spends the release of `outcome` of `site` at `at`: a gateway served the
/// released outcome and now serves something else. A release frees one
/// change, once; the same outcome arriving later is judged (and held)
/// afresh. True when a release was spent.
pub async fn spend(conn: &mut AnyConnection, site: &str, outcome: &str, at: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE gate_holds SET spent_at = $3 \
         WHERE site = $1 AND outcome = $2 AND released_at IS NOT NULL AND released_at <= $3 AND spent_at IS NULL",
    )
    .bind(site)
    .bind(outcome)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The change a gateway of the fleet holds for `site` now, if any: the
/// newest active hold, with the held body (kept as a revision) when it is
/// a file. What a new replica takes over with the fleet's copy.
pub async fn held_now(pool: &AnyPool, site: &str) -> Result<Option<(Held, Option<Vec<u8>>)>, sqlx::Error> {
    let Some(held) = holds(pool, Some(site), false).await?.into_iter().next() else { return Ok(None) };
    if held.outcome.starts_with("status:") {
        return Ok(Some((held, None)));
    }
    let row = sqlx::query("SELECT body FROM revisions WHERE site = $1 AND hash = $2")
        .bind(site)
        .bind(&held.outcome)
        .fetch_optional(pool)
        .await?;
    let body = row.map(|r| r.try_get::<Vec<u8>, _>("body")).transpose()?;
    Ok(body.map(|b| (held, Some(b))))
}

/// The holds of `site` (every site when `None`), newest first: those a
/// gateway holds now, or every one, released and ended included, when
/// `released`.
pub async fn holds(pool: &AnyPool, site: Option<&str>, released: bool) -> Result<Vec<Held>, sqlx::Error> {
    // Spelled out per case: PostgreSQL cannot type a parameter that is only
    // compared with NULL.
    let released = if released { "" } else { " AND released_at IS NULL AND ended_at IS NULL AND breaks <> ''" };
    let columns = "SELECT site, outcome, status, breaks, first_held, last_held, released_at, released_by, \
         ended_at, ended_why, episode, summary FROM gate_holds";
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
    rows.iter().map(held_row).collect()
}

fn held_row(r: &sqlx::any::AnyRow) -> Result<Held, sqlx::Error> {
    Ok(Held {
        site: r.try_get("site")?,
        outcome: r.try_get("outcome")?,
        status: r.try_get::<Option<i32>, _>("status")?.and_then(|s| u16::try_from(s).ok()),
        breaks: r.try_get("breaks")?,
        first_held: r.try_get("first_held")?,
        last_held: r.try_get("last_held")?,
        released_at: r.try_get("released_at")?,
        released_by: r.try_get("released_by")?,
        ended_at: r.try_get("ended_at")?,
        ended_why: r.try_get("ended_why")?,
        episode: r.try_get("episode")?,
        summary: r.try_get("summary")?,
    })
}

/// Holds no alert was raised for yet: a gateway holds them now, and no
/// monitor claimed their episode ([`claim_alert`]).
pub async fn unalerted(pool: &AnyPool) -> Result<Vec<Held>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT site, outcome, status, breaks, first_held, last_held, released_at, released_by, \
         ended_at, ended_why, episode, summary FROM gate_holds h \
         WHERE released_at IS NULL AND ended_at IS NULL AND breaks <> '' AND NOT EXISTS \
         (SELECT 1 FROM gate_alerts a WHERE a.site = h.site AND a.outcome = h.outcome AND a.episode = h.episode) \
         ORDER BY first_held",
    )
    .fetch_all(pool)
    .await?;
    rows.iter().map(held_row).collect()
}

/// Claims the alert of `outcome` of `site`, for the episode the database
/// holds (the first when no gateway recorded it yet), in the caller's
/// transaction: `Some(id)` when this caller raises it, `None` when someone
/// did already.
pub async fn claim_alert(
    conn: &mut AnyConnection,
    site: &str,
    outcome: &str,
    at: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let row = sqlx::query(
        "INSERT INTO gate_alerts (site, outcome, episode, raised_at) \
         VALUES ($1, $2, COALESCE((SELECT episode FROM gate_holds WHERE site = $1 AND outcome = $2), 0), $3) \
         ON CONFLICT (site, outcome, episode) DO NOTHING RETURNING id",
    )
    .bind(site)
    .bind(outcome)
    .bind(at)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| r.try_get::<i64, _>("id")).transpose()
}

/// Raised alerts whose hold is over (released, ended, or held again as a
/// later episode) and whose resolved notice was not sent: the alert's id
/// with its hold.
pub async fn ended_unresolved(pool: &AnyPool) -> Result<Vec<(i64, Held)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT a.id AS alert_id, h.site, h.outcome, h.status, h.breaks, h.first_held, h.last_held, h.released_at, \
         h.released_by, h.ended_at, h.ended_why, h.episode, h.summary \
         FROM gate_alerts a JOIN gate_holds h ON h.site = a.site AND h.outcome = a.outcome \
         WHERE a.resolved_at IS NULL AND h.breaks <> '' \
         AND (h.released_at IS NOT NULL OR h.ended_at IS NOT NULL OR h.episode > a.episode) \
         ORDER BY a.id",
    )
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| Ok((r.try_get("alert_id")?, held_row(r)?))).collect()
}

/// Marks the alert `id` resolved at `at`, in the caller's transaction;
/// false when another monitor did first.
pub async fn resolve_alert(conn: &mut AnyConnection, id: i64, at: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE gate_alerts SET resolved_at = $2 WHERE id = $1 AND resolved_at IS NULL")
        .bind(id)
        .bind(at)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
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
            let holding = |at| Holding {
                site: "shop",
                outcome: &bad,
                status: Some(200),
                body: Some(b"bad"),
                breaks: "it disallows /",
                summary: "it disallows /",
                at,
            };
            record_hold(&mut conn, &holding(2_000)).await.unwrap();
            record_hold(&mut conn, &holding(1_500)).await.unwrap();
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
