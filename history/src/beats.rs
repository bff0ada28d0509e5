//! Gateways' heartbeats (`gateway_beats`): how a fleet of gateways on one
//! database knows how many of them front each site, so that each enforces
//! its share of the site's crawl budgets with no database on the request
//! path. A gateway writes one row per site it fronts every heartbeat; the
//! live count of a site is the rows seen within the dead-after window.

use sqlx::{AnyPool, Row as _};

/// Rows of gateways silent this long are deleted by the next beat.
pub const FORGET_AFTER_MS: i64 = 86_400_000;

/// Says that `gateway` (started at `started`, Unix ms) fronts each of
/// `sites` at `now`, and deletes rows of gateways long gone. One
/// transaction: a beat is whole or not at all.
pub async fn beat(pool: &AnyPool, gateway: &str, started: i64, sites: &[&str], now: i64) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for site in sites {
        sqlx::query(
            "INSERT INTO gateway_beats (gateway, site, seen_at, started_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (gateway, site) DO UPDATE SET seen_at = excluded.seen_at, started_at = excluded.started_at \
             WHERE gateway_beats.seen_at <= excluded.seen_at",
        )
        .bind(gateway)
        .bind(*site)
        .bind(now)
        .bind(started)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("DELETE FROM gateway_beats WHERE seen_at < $1").bind(now - FORGET_AFTER_MS).execute(&mut *tx).await?;
    tx.commit().await
}

/// For each site, how many gateways were heard from since `since` (Unix
/// ms), `gateway` itself always among them: a gateway whose own beat did
/// not land still enforces, and never takes more than its share.
pub async fn alive(pool: &AnyPool, gateway: &str, since: i64) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT site, COUNT(*) AS n, SUM(CASE WHEN gateway = $1 THEN 1 ELSE 0 END) AS mine \
         FROM gateway_beats WHERE seen_at >= $2 GROUP BY site ORDER BY site",
    )
    .bind(gateway)
    .bind(since)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            let n: i64 = r.try_get("n")?;
            let mine: i64 = r.try_get("mine")?;
            Ok((r.try_get("site")?, n + i64::from(mine == 0)))
        })
        .collect()
}
