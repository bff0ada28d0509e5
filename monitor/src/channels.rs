//! Alert channels besides email: a JSON webhook signed with HMAC-SHA256,
//! and Slack's incoming-webhook format. Deliveries wait in the
//! `deliveries` table, written with their alert, and are claimed, sent and
//! retried like mail, so a receiver that is down loses nothing; a crash
//! between its 2xx and the mark can repeat one delivery (at-least-once,
//! which the `X-Robotsgate-Delivery` id lets a receiver fold).

use std::time::Duration;

use hmac::{KeyInit, Mac};
use robotsgate_config::Channel;

use crate::store::{Store, StoreError, q};

/// The channels that take an alert of `severity` about `site` one by one
/// (digest channels collect theirs in their digest instead).
pub fn direct(
    config: &robotsgate_config::Config,
    site: &str,
    severity: robotsgate_config::AlertSeverity,
) -> Vec<String> {
    config.channels.iter().filter(|c| c.digest.is_none() && c.takes(site, severity)).map(|c| c.name.clone()).collect()
}

/// Longest one delivery may take.
pub const SEND_LIMIT: Duration = Duration::from_secs(10);
/// How long a claim on a delivery lasts: past the longest send.
const CLAIM_MS: i64 = SEND_LIMIT.as_millis() as i64 + 5_000;
/// Longest text a Slack message carries (Slack cuts at 40,000; a short
/// message reads better, and the console has the rest).
const SLACK_TEXT: usize = 3_000;

/// A delivery waiting to go out, with its alert.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Delivery {
    /// The alert.
    pub alert_id: i64,
    /// The channel's name.
    pub channel: String,
    /// The site.
    pub site: String,
    /// `critical`, `warning` or `info`.
    pub severity: String,
    /// The alert's subject.
    pub subject: String,
    /// The alert's plain text.
    #[sqlx(rename = "body_text")]
    pub text: String,
    /// When the alert was queued (Unix ms).
    pub created_at: i64,
    /// Attempts so far.
    pub attempts: i64,
}

/// Claims the oldest delivery that is due on a channel not in `skip`, so
/// that monitors sharing the database do not send it at once.
pub async fn claim(store: &Store, now: i64, skip: &[String]) -> Result<Option<Delivery>, StoreError> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT alert_id, channel FROM deliveries WHERE sent_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at, alert_id LIMIT 50",
    )
    .bind(now)
    .fetch_all(store.pool())
    .await
    .map_err(q("finding due deliveries"))?;
    for (alert_id, channel) in rows {
        if skip.contains(&channel) {
            continue;
        }
        let claimed = sqlx::query(
            "UPDATE deliveries SET next_attempt_at = $1 WHERE alert_id = $2 AND channel = $3 AND sent_at IS NULL AND next_attempt_at <= $4",
        )
        .bind(now + CLAIM_MS)
        .bind(alert_id)
        .bind(&channel)
        .bind(now)
        .execute(store.pool())
        .await
        .map_err(q("claiming a delivery"))?;
        if claimed.rows_affected() != 1 {
            continue;
        }
        return sqlx::query_as::<_, Delivery>(
            "SELECT d.alert_id, d.channel, a.site, a.severity, a.subject, a.body_text, a.created_at, d.attempts \
             FROM alerts a JOIN deliveries d ON d.alert_id = a.id AND d.channel = $2 WHERE a.id = $1",
        )
        .bind(alert_id)
        .bind(&channel)
        .fetch_one(store.pool())
        .await
        .map(Some)
        .map_err(q("reading a delivery"));
    }
    Ok(None)
}

/// Records the outcome of one attempt: sent, or when to try again.
pub async fn finish(store: &Store, d: &Delivery, result: Result<(), String>, now: i64) -> Result<(), StoreError> {
    let query = match result {
        Ok(()) => sqlx::query(
            "UPDATE deliveries SET sent_at = $1, attempts = attempts + 1, last_error = NULL \
             WHERE alert_id = $2 AND channel = $3",
        )
        .bind(now)
        .bind(d.alert_id)
        .bind(d.channel.clone()),
        Err(e) => sqlx::query(
            "UPDATE deliveries SET next_attempt_at = $1, attempts = attempts + 1, last_error = $4 \
                 WHERE alert_id = $2 AND channel = $3",
        )
        .bind(now + backoff(d.attempts))
        .bind(d.alert_id)
        .bind(d.channel.clone())
        .bind(Some(e)),
    };
    query.execute(store.pool()).await.map_err(q("recording a delivery"))?;
    Ok(())
}

/// The JSON a webhook receives.
pub fn webhook_body(d: &Delivery) -> String {
    serde_json::json!({
        "id": format!("{}:{}", d.alert_id, d.channel),
        "site": d.site,
        "severity": d.severity,
        "subject": d.subject,
        "text": d.text,
        "created_at": d.created_at,
    })
    .to_string()
}

/// The JSON a Slack incoming webhook takes: one message.
pub fn slack_body(d: &Delivery) -> String {
    let mark = match d.severity.as_str() {
        "critical" => ":rotating_light:",
        "warning" => ":warning:",
        _ => ":information_source:",
    };
    let text = crate::excerpt::line(&d.text, SLACK_TEXT);
    serde_json::json!({ "text": format!("{mark} *{}*\n{text}", d.subject) }).to_string()
}

/// `sha256=` and the hex HMAC-SHA256 of `timestamp.body` under `secret`.
pub fn signature(secret: &[u8], timestamp: i64, body: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let tag = mac.finalize().into_bytes();
    format!("sha256={}", tag.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Sends one delivery to its channel; `Err` with what went wrong.
pub async fn send(client: &reqwest::Client, channel: &Channel, d: &Delivery, now: i64) -> Result<(), String> {
    let id = format!("{}:{}", d.alert_id, d.channel);
    post(client, channel, &id, || webhook_body(d), || slack_body(d), now).await
}

/// POSTs one message to `channel`: the webhook's JSON (signed when the
/// channel has a secret) or Slack's, with `id` for receivers to fold
/// repeats by.
pub async fn post(
    client: &reqwest::Client,
    channel: &Channel,
    id: &str,
    webhook: impl FnOnce() -> String,
    slack: impl FnOnce() -> String,
    now: i64,
) -> Result<(), String> {
    let (url, body) = match (&channel.webhook, &channel.slack) {
        (Some(url), _) => (url, webhook()),
        (None, Some(url)) => (url, slack()),
        (None, None) => return Err("the channel has no URL".into()),
    };
    let mut request = client
        .post(url)
        .timeout(SEND_LIMIT)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-Robotsgate-Delivery", id);
    if channel.webhook.is_some()
        && let Some(var) = &channel.secret_env
    {
        let secret = std::env::var(var).map_err(|_| format!("the secret variable {var} is not set"))?;
        let timestamp = now / 1000;
        request = request
            .header("X-Robotsgate-Timestamp", timestamp.to_string())
            .header("X-Robotsgate-Signature", signature(secret.as_bytes(), timestamp, &body));
    }
    match request.body(body).send().await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("the channel answered {}", r.status())),
        Err(e) => Err(format!("cannot reach the channel: {e}")),
    }
}

/// The wait before the next attempt after `attempts` failed ones: 30 s,
/// 1 min, 2 min … capped at 1 h, as mail.
pub fn backoff(attempts: i64) -> i64 {
    30_000i64.saturating_mul(1 << attempts.clamp(0, 7)).min(3_600_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_cover_the_timestamp_and_the_body() {
        let a = signature(b"secret", 1_700_000_000, "{}");
        assert!(a.starts_with("sha256=") && a.len() == 7 + 64);
        assert_ne!(a, signature(b"secret", 1_700_000_001, "{}"));
        assert_ne!(a, signature(b"other", 1_700_000_000, "{}"));
        // RFC 4231 test case 2 shape: key "Jefe", data "what do ya want for nothing?"
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }
}
