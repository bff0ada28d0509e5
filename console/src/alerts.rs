//! The alerts page: sent, queued and failed alerts with their attempts and
//! last error, and a retry that needs the admin token.

use askama::Template;
use serde::Serialize;
use sqlx::Row;

use monitor::clock::when;
use monitor::store::{Store, StoreError, q};

/// Most alerts listed, newest first.
const LIMIT: i64 = 500;

/// An alert as listed.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AlertLine {
    /// Its id.
    pub id: i64,
    /// The site.
    pub site: String,
    /// When it was queued.
    pub created: String,
    /// The subject.
    pub subject: String,
    /// `critical`, `warning` or `info`.
    pub severity: String,
    /// `sent`, `queued`, `waiting` (not tried: the mail server failed on
    /// another alert; `last_error` says how), `failed` (to be tried
    /// again), `refused` (the mail server refused it for good, a 5xx: not
    /// tried again unless retried from here), or `recorded`
    /// (no email is configured, so nothing will send it; channels and
    /// digests have their own deliveries).
    pub status: &'static str,
    /// Delivery attempts.
    pub attempts: i64,
    /// The last delivery error.
    pub last_error: String,
}

/// The alerts page.
#[derive(Debug, Template)]
#[template(path = "alerts.html")]
pub struct AlertsPage {
    /// The alerts.
    pub alerts: Vec<AlertLine>,
    /// What the last action did.
    pub notice: Option<String>,
    /// No email is configured: alerts are recorded, not queued.
    pub email_off: bool,
}

/// The newest alerts; `email` says whether mail is configured, without
/// which an unsent alert is only recorded, never "queued".
pub async fn list(store: &Store, email: bool) -> Result<Vec<AlertLine>, StoreError> {
    let rows = sqlx::query(
        "SELECT id, site, created_at, subject, sent_at, attempts, last_error, severity, next_attempt_at FROM alerts ORDER BY id DESC LIMIT $1",
    )
    .bind(LIMIT)
    .fetch_all(store.pool())
    .await
    .map_err(q("listing alerts"))?;
    rows.iter()
        .map(|r| {
            let sent: Option<i64> = r.try_get("sent_at")?;
            let last_error: Option<String> = r.try_get("last_error")?;
            Ok(AlertLine {
                id: r.try_get("id")?,
                site: r.try_get("site")?,
                created: when(Some(r.try_get("created_at")?)),
                subject: r.try_get("subject")?,
                severity: r.try_get("severity")?,
                status: match (sent, &last_error, r.try_get::<i64, _>("attempts")?) {
                    (Some(_), _, _) => "sent",
                    (None, _, _) if !email => "recorded",
                    (None, Some(_), _) if r.try_get::<i64, _>("next_attempt_at")? >= monitor::store::GIVEN_UP => {
                        "refused"
                    }
                    (None, Some(_), 0) => "waiting",
                    (None, Some(_), _) => "failed",
                    (None, None, _) => "queued",
                },
                attempts: r.try_get("attempts")?,
                last_error: last_error.unwrap_or_default(),
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(q("reading alerts"))
}

/// Makes an undelivered alert due now; false when there is none such.
pub async fn retry(store: &Store, id: i64, now: i64) -> Result<bool, StoreError> {
    let done = sqlx::query("UPDATE alerts SET next_attempt_at = $1 WHERE id = $2 AND sent_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(store.pool())
        .await
        .map_err(|source| StoreError::Query { doing: "retrying an alert", source })?;
    Ok(done.rows_affected() == 1)
}

/// Whether `given` is the admin token, read as every surface reads it
/// ([`robotsgate_config::Config::admin_token`]: the environment, then
/// `proxy.admin_token_file`, then `proxy.admin_token`), compared in
/// constant time. Without a configured token nothing may write.
pub fn authorised(config: &robotsgate_config::Config, given: &str) -> bool {
    match config.admin_token() {
        Ok(Some(want)) => robotsgate_config::same_token(&want, given.trim()),
        Ok(None) => false,
        Err(e) => {
            tracing::error!("{e}; refusing writes");
            false
        }
    }
}
