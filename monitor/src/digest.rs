//! Daily digests: a channel with `digest: daily` receives one message a day
//! listing the alerts it takes, instead of one message per alert.
//!
//! Each day at the channel's `digest_hour` (UTC) one `digests` row is
//! opened for the 24 hours before. Its primary key (channel, day) makes a
//! second insert impossible, so monitors sharing the database open it once.
//! It is then claimed, sent and retried like a delivery: a receiver that is
//! down gets the digest when it is back, and a crash between its 2xx and
//! the mark can repeat it (at-least-once, folded by `X-Robotsgate-Delivery`).
//!
//! A channel's first digest row is a baseline, marked sent when opened:
//! adding a channel does not send it a digest of alerts from before it was
//! configured. Days the monitor was down for entirely are not backfilled;
//! the console keeps every alert.

use std::fmt::Write as _;

use robotsgate_config::{AlertSeverity, Channel};
use sqlx::Row;

use crate::store::{Store, StoreError, q};

const DAY_MS: i64 = 86_400_000;
/// Most alerts a digest lists; the rest are counted.
const LISTED: usize = 100;
/// How long a claim on a digest lasts: past the longest send.
const CLAIM_MS: i64 = crate::channels::SEND_LIMIT.as_millis() as i64 + 5_000;

/// The latest digest time at or before `now` for `hour` (UTC): the end of
/// the window the digest covers.
pub fn cut(now: i64, hour: u8) -> i64 {
    let offset = i64::from(hour) * 3_600_000;
    (now - offset).div_euclid(DAY_MS) * DAY_MS + offset
}

/// Opens the digest of every digest channel whose time has come, unless it
/// is open already. Returns how many this call opened.
pub async fn open_due(store: &Store, channels: &[Channel], now: i64) -> Result<usize, StoreError> {
    let mut opened = 0;
    for ch in channels.iter().filter(|c| c.digest.is_some()) {
        let to = cut(now, ch.digest_hour);
        let any: i64 = sqlx::query("SELECT COUNT(*) AS n FROM digests WHERE channel = $1")
            .bind(&ch.name)
            .fetch_one(store.pool())
            .await
            .and_then(|r| r.try_get("n"))
            .map_err(q("looking for a channel's digests"))?;
        // The baseline is marked sent as it is opened (see the module docs).
        let sent_at = (any == 0).then_some(now);
        let inserted = sqlx::query(
            "INSERT INTO digests (channel, day, window_from, window_to, sent_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (channel, day) DO NOTHING",
        )
        .bind(&ch.name)
        .bind(to.div_euclid(DAY_MS))
        .bind(to - DAY_MS)
        .bind(to)
        .bind(sent_at)
        .bind(to)
        .execute(store.pool())
        .await
        .map_err(q("opening a digest"))?;
        if inserted.rows_affected() == 1 && sent_at.is_none() {
            opened += 1;
        }
    }
    Ok(opened)
}

/// A digest due to go out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// The channel's name.
    pub channel: String,
    /// Days since 1970-01-01 of the digest time.
    pub day: i64,
    /// The window it covers, [from, to) in Unix ms.
    pub from: i64,
    /// See `from`.
    pub to: i64,
    /// Attempts so far.
    pub attempts: i64,
}

/// Claims the oldest digest that is due, so that monitors sharing the
/// database do not send it at once.
pub async fn claim(store: &Store, now: i64) -> Result<Option<Due>, StoreError> {
    let rows = sqlx::query(
        "SELECT channel, day, window_from, window_to, attempts FROM digests \
         WHERE sent_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at, day LIMIT 20",
    )
    .bind(now)
    .fetch_all(store.pool())
    .await
    .map_err(q("finding due digests"))?;
    for r in rows {
        let due = (|| -> Result<Due, sqlx::Error> {
            Ok(Due {
                channel: r.try_get("channel")?,
                day: r.try_get("day")?,
                from: r.try_get("window_from")?,
                to: r.try_get("window_to")?,
                attempts: r.try_get("attempts")?,
            })
        })()
        .map_err(q("reading a digest"))?;
        let claimed = sqlx::query(
            "UPDATE digests SET next_attempt_at = $1 WHERE channel = $2 AND day = $3 AND sent_at IS NULL AND next_attempt_at <= $4",
        )
        .bind(now + CLAIM_MS)
        .bind(&due.channel)
        .bind(due.day)
        .bind(now)
        .execute(store.pool())
        .await
        .map_err(q("claiming a digest"))?;
        if claimed.rows_affected() == 1 {
            return Ok(Some(due));
        }
    }
    Ok(None)
}

/// Records the outcome of one attempt: sent, or when to try again.
pub async fn finish(store: &Store, due: &Due, result: Result<(), String>, now: i64) -> Result<(), StoreError> {
    let (sent_at, next, error) = match result {
        Ok(()) => (Some(now), now, None),
        Err(e) => (None, now + crate::channels::backoff(due.attempts), Some(e)),
    };
    sqlx::query(
        "UPDATE digests SET sent_at = $1, next_attempt_at = $2, attempts = attempts + 1, last_error = $3 \
         WHERE channel = $4 AND day = $5",
    )
    .bind(sent_at)
    .bind(next)
    .bind(error)
    .bind(&due.channel)
    .bind(due.day)
    .execute(store.pool())
    .await
    .map_err(q("recording a digest"))?;
    Ok(())
}

/// One alert as a digest lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The site.
    pub site: String,
    /// `critical`, `warning` or `info`.
    pub severity: String,
    /// The alert's subject.
    pub subject: String,
    /// When it was queued (Unix ms).
    pub created_at: i64,
}

/// The alerts of `due`'s window that `channel` takes, oldest first.
pub async fn entries(store: &Store, channel: &Channel, due: &Due) -> Result<Vec<Entry>, StoreError> {
    let rows = sqlx::query(
        "SELECT site, severity, subject, created_at FROM alerts WHERE created_at >= $1 AND created_at < $2 ORDER BY created_at, id",
    )
    .bind(due.from)
    .bind(due.to)
    .fetch_all(store.pool())
    .await
    .map_err(q("reading a digest's alerts"))?;
    let mut out = Vec::new();
    for r in rows {
        let e = (|| -> Result<Entry, sqlx::Error> {
            Ok(Entry {
                site: r.try_get("site")?,
                severity: r.try_get("severity")?,
                subject: r.try_get("subject")?,
                created_at: r.try_get("created_at")?,
            })
        })()
        .map_err(q("reading a digest's alerts"))?;
        if channel.takes(&e.site, severity_of(&e.severity)) {
            out.push(e);
        }
    }
    Ok(out)
}

fn severity_of(s: &str) -> AlertSeverity {
    match s {
        "critical" => AlertSeverity::Critical,
        "info" => AlertSeverity::Info,
        _ => AlertSeverity::Warning,
    }
}

impl Due {
    /// The digest's delivery id, the same on every attempt, so a receiver
    /// can fold a repeat (`X-Robotsgate-Delivery`).
    pub fn id(&self) -> String {
        format!("digest:{}:{}", self.channel, self.day)
    }
}

/// Counts by severity, in one line: "2 critical, 1 warning, 0 info".
fn counts(entries: &[Entry]) -> String {
    let n = |s: &str| entries.iter().filter(|e| e.severity == s).count();
    format!("{} critical, {} warning, {} info", n("critical"), n("warning"), n("info"))
}

/// The JSON a webhook receives for a digest.
pub fn webhook_body(due: &Due, entries: &[Entry]) -> String {
    serde_json::json!({
        "id": due.id(),
        "digest": true,
        "from": due.from,
        "to": due.to,
        "count": entries.len(),
        "alerts": entries.iter().take(LISTED).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The Slack message of a digest.
pub fn slack_body(entries: &[Entry]) -> String {
    let mut text = format!("*robotsgate daily digest*: {} ({})\n", entries.len(), counts(entries));
    if entries.is_empty() {
        text.push_str("No alerts in the last 24 hours.");
    }
    for e in entries.iter().take(LISTED) {
        let _ = writeln!(text, "• [{}] {}", e.severity, crate::excerpt::line(&e.subject, 200));
    }
    if entries.len() > LISTED {
        let _ = writeln!(text, "… and {} more in the console", entries.len() - LISTED);
    }
    serde_json::json!({ "text": text }).to_string()
}

/// Sends every digest that is due; returns how many went out.
pub async fn deliver(
    store: &Store,
    client: &reqwest::Client,
    channels: &[Channel],
    now: impl Fn() -> i64,
) -> Result<usize, StoreError> {
    open_due(store, channels, now()).await?;
    let mut sent = 0;
    while let Some(due) = claim(store, now()).await? {
        let result = match channels.iter().find(|c| c.name == due.channel) {
            Some(channel) => {
                let list = entries(store, channel, &due).await?;
                let id = due.id();
                crate::channels::post(client, channel, &id, || webhook_body(&due, &list), || slack_body(&list), now())
                    .await
            }
            None => Err(format!("no channel named `{}` in the config", due.channel)),
        };
        match &result {
            Ok(()) => {
                tracing::info!(channel = %due.channel, day = due.day, "digest delivered");
                sent += 1;
            }
            Err(e) => tracing::warn!(channel = %due.channel, error = %e, "digest delivery failed"),
        }
        let failed = result.is_err();
        finish(store, &due, result, now()).await?;
        if failed {
            break;
        }
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_is_the_last_digest_hour_at_or_before_now() {
        let day3 = 3 * DAY_MS;
        assert_eq!(cut(day3 + 8 * 3_600_000, 8), day3 + 8 * 3_600_000);
        assert_eq!(cut(day3 + 8 * 3_600_000 - 1, 8), day3 - DAY_MS + 8 * 3_600_000);
        assert_eq!(cut(day3 + 23 * 3_600_000, 0), day3);
        assert_eq!(cut(day3, 0), day3);
    }
}
