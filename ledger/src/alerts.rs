//! `violation` alerts: when a verified crawler requests what the robots.txt
//! it could hold disallows, one alert per site, crawler, deciding rule and
//! UTC day, through the same channels, digests and email as every alert.
//! Spoofed traffic is on the Compliance page; it is alerted only with
//! `compliance_alert_spoofed: true` (a spoofer ignoring robots.txt is the
//! common case, and would drown the alerts that matter).
//!
//! The ledger rows come from every writer (gateways, tails, imports); the
//! monitor raises alerts from them as it delivers. The alert's key row
//! (`violation_alerts`) is claimed in the transaction that queues the
//! alert, so monitors sharing a database raise each once.

use sqlx::Row as _;

use super::DAY_MS;
use crate::Host;
use monitor::clock::now_ms;
use monitor::letter::{self, esc};
use monitor::store::QueuedAlert;

/// One violation not yet alerted.
#[derive(Debug)]
struct Found {
    site: String,
    crawler: String,
    identity: String,
    revision: i64,
    line: i64,
    status: i64,
    day: i64,
    requests: i64,
    samples: String,
}

/// Queues the alerts of violations seen today and yesterday that have
/// none yet; returns how many this call queued.
pub async fn raise(m: &dyn Host) -> anyhow::Result<usize> {
    let today = now_ms().div_euclid(DAY_MS);
    let spoofed = if m.config().compliance_alert_spoofed { "spoofed" } else { "verified" };
    let rows = sqlx::query(
        "SELECT l.site, l.crawler, l.identity, l.revision_id, l.line, l.status, l.day, l.requests, l.samples \
         FROM ledger l WHERE l.class = 'violation' AND l.day >= $1 AND l.identity IN ('verified', $2) \
         AND NOT EXISTS (SELECT 1 FROM violation_alerts v WHERE v.site = l.site AND v.crawler = l.crawler \
         AND v.identity = l.identity AND v.revision_id = l.revision_id AND v.line = l.line \
         AND v.status = l.status AND v.day = l.day) ORDER BY l.first_at",
    )
    .bind(today - 1)
    .bind(spoofed)
    .fetch_all(m.store().pool())
    .await?;
    let mut queued = 0;
    for r in &rows {
        let f = Found {
            site: r.try_get("site")?,
            crawler: r.try_get("crawler")?,
            identity: r.try_get("identity")?,
            revision: r.try_get("revision_id")?,
            line: r.try_get("line")?,
            status: r.try_get("status")?,
            day: r.try_get("day")?,
            requests: r.try_get("requests")?,
            samples: r.try_get("samples")?,
        };
        if m.site(&f.site).is_none() {
            continue;
        }
        if queue(m, &f).await? {
            queued += 1;
            tracing::warn!(site = %f.site, crawler = %f.crawler, identity = %f.identity, line = f.line, "a crawler ignored robots.txt");
        }
    }
    Ok(queued)
}

/// Claims the alert's key and queues it; `false` when another monitor did.
async fn queue(m: &dyn Host, f: &Found) -> anyhow::Result<bool> {
    let rule = rule_text(m, f).await;
    let alert = letter_of(m, f, rule.as_deref());
    let severity = robotsgate_config::AlertSeverity::Warning;
    let channels: Vec<String> = m
        .config()
        .channels
        .iter()
        .filter(|c| c.digest.is_none() && c.takes(&f.site, severity))
        .map(|c| c.name.clone())
        .collect();
    let now = now_ms();
    let mut tx = m.store().pool().begin().await?;
    let claimed = sqlx::query(
        "INSERT INTO violation_alerts (site, crawler, identity, revision_id, line, status, day, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(&f.site)
    .bind(&f.crawler)
    .bind(&f.identity)
    .bind(f.revision)
    .bind(f.line)
    .bind(f.status)
    .bind(f.day)
    .bind(now)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = claimed else { return Ok(false) };
    let id: i64 = row.try_get("id")?;
    let q = QueuedAlert { alert: &alert, severity: severity.as_str(), channels: &channels, kind: "violation" };
    monitor::store::queue_alert(&mut tx, &f.site, -id, now, &q).await?;
    tx.commit().await?;
    Ok(true)
}

/// The deciding line as written, from its revision.
async fn rule_text(m: &dyn Host, f: &Found) -> Option<String> {
    if f.revision <= 0 || f.line <= 0 {
        return None;
    }
    let body = m.store().revision_body(&f.site, f.revision).await.ok()??;
    let text = String::from_utf8_lossy(&body);
    text.lines().nth(usize::try_from(f.line - 1).ok()?).map(|l| l.trim().to_string())
}

/// The alert: subject, text and HTML.
fn letter_of(m: &dyn Host, f: &Found, rule: Option<&str>) -> (String, String, String) {
    let decided = match (rule, f.status) {
        (Some(rule), _) => format!("line {} of revision {} (`{rule}`)", f.line, f.revision),
        (None, s) if s > 0 => format!("the robots.txt answer {s}, which disallows everything"),
        _ => "the robots.txt it could hold".to_string(),
    };
    let date = super::date_of_day(f.day);
    let subject = format!("[robotsgate] {}: {} ({}) ignored robots.txt", f.site, f.crawler, f.identity);
    let first = format!(
        "{} ({}) requested URLs that {} disallows, in the robots.txt it could hold: {} so far on {date} (UTC).",
        f.crawler,
        f.identity,
        decided,
        monitor::words::plural(f.requests, "request", "requests"),
    );
    let samples: Vec<&str> = f.samples.lines().take(5).collect();
    let link = m.config().console.as_ref().and_then(|c| c.url.as_deref()).map(|base| {
        format!(
            "{}/compliance?crawler={}",
            monitor::links::site_page(base, &f.site),
            monitor::links::encode(&f.crawler)
        )
    });
    let mut text = format!("{first}\n\nSite: {}\n\nSample URLs:\n", f.site);
    for s in &samples {
        text.push_str(&format!("  {s}\n"));
    }
    if let Some(link) = &link {
        text.push_str(&format!("\nIn the console: {link}\n"));
    }
    let list: String = samples.iter().map(|s| format!("<li><code>{}</code></li>", esc(s))).collect();
    let inner = format!("<p><strong>{}</strong></p><h2>{}</h2><ul>{list}</ul>", esc(&first), esc(&f.site));
    (subject, text, letter::page(robotsgate_config::AlertSeverity::Warning, &inner, link.as_deref()))
}
