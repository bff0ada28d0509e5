//! The hold raises the alert. Every change a gateway holds (a row of
//! `gate_holds`, recorded by any gateway sharing the database) gives one
//! critical alert through the monitor's channels and digests, whether or not
//! any monitor polled the change; its end (a release, or a file that breaks
//! nothing) gives one resolved notice.
//!
//! Exactly once across a fleet of monitors, and through a `kill -9` at any
//! moment: each alert is claimed (`gate_alerts`) in the same transaction
//! that queues it, so a monitor that dies before the commit leaves the hold
//! unclaimed for the next scan, and one that dies after has queued it. A
//! monitor whose own poll saw the held change claims the same row
//! (`NewState::held_outcome`), so poll and hold never alert twice.

use std::fmt::Write as _;

use robotsgate_config::{AlertSeverity, Config};
use robotsgate_history::gate::Held;

use crate::clock::{now_ms, when};
use crate::letter::esc;
use crate::store::{QueuedAlert, Store, StoreError, q, queue_alert};

/// The alert of a hold: (subject, text, HTML).
pub fn held_alert(site: &str, location: &str, h: &Held, console: Option<&str>) -> (String, String, String) {
    let what = h.summary.clone().unwrap_or_else(|| h.breaks.lines().next().unwrap_or_default().to_string());
    let first = format!(
        "A change to robots.txt is held at the edge: {what}. Crawlers keep the last good copy until it is released."
    );
    let subject = format!("[robotsgate] {site}: change held at the edge");
    let link = console.map(|base| crate::links::site_page(base, site));
    let mut text = format!("{first}\n\nSite: {site} ({location})\nHeld since: {}\n", when(Some(h.first_held)));
    let _ = writeln!(text, "\nWhat it breaks:");
    for line in h.breaks.lines() {
        let _ = writeln!(text, "  {line}");
    }
    let _ = writeln!(text, "\nRelease it: robots-monitor release {site}");
    if let Some(link) = &link {
        let _ = writeln!(text, "In the console: {link}");
    }
    let mut inner =
        format!("<p><strong>{}</strong></p><h2>{}</h2><p>{}</p><ul>", esc(&first), esc(site), esc(location));
    for line in h.breaks.lines() {
        let _ = write!(inner, "<li>{}</li>", esc(line));
    }
    let _ = write!(inner, "</ul><p>Release it: <code>robots-monitor release {}</code></p>", esc(site));
    (subject, text, crate::letter::page(AlertSeverity::Critical, &inner, link.as_deref()))
}

/// The notice that a hold is over: (subject, text, HTML).
pub fn resolved_notice(site: &str, location: &str, h: &Held, console: Option<&str>) -> (String, String, String) {
    let why = match (&h.released_at, &h.released_by, &h.ended_why) {
        (Some(at), by, _) => format!(
            "it was released{} at {}, and every gateway sharing the database serves it at its next refresh",
            by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default(),
            when(Some(*at))
        ),
        (None, _, Some(why)) => why.clone(),
        (None, _, None) => "the gateway held it again later, as a new hold".to_string(),
    };
    let first = format!("Resolved: the change to robots.txt held at the edge is no longer held: {why}.");
    let subject = format!("[robotsgate] {site}: resolved: change no longer held");
    let link = console.map(|base| crate::links::site_page(base, site));
    let mut text = format!("{first}\n\nSite: {site} ({location})\nHeld since: {}\n", when(Some(h.first_held)));
    if let Some(link) = &link {
        let _ = writeln!(text, "\nIn the console: {link}");
    }
    let inner = format!("<p><strong>{}</strong></p><h2>{}</h2><p>{}</p>", esc(&first), esc(site), esc(location));
    (subject, text, crate::letter::page(AlertSeverity::Info, &inner, link.as_deref()))
}

/// Raises the alert of every hold no monitor alerted yet, and the resolved
/// notice of every alerted hold that is over; returns how many it queued.
/// Holds of sites this monitor's config does not name are another
/// config's to alert.
pub async fn raise(store: &Store, config: &Config) -> Result<usize, StoreError> {
    let pool = store.pool();
    let console = config.console.as_ref().and_then(|c| c.url.as_deref());
    let site_of = |name: &str| config.site(name);
    let mut queued = 0;
    for h in robotsgate_history::gate::unalerted(pool).await.map_err(q("reading holds"))? {
        let Some(site) = site_of(&h.site) else { continue };
        let location = site.source().location();
        let alert = held_alert(&h.site, &location, &h, console);
        let channels = crate::channels::direct(config, &h.site, AlertSeverity::Critical);
        let now = now_ms();
        let mut tx = pool.begin().await.map_err(q("starting a hold's alert"))?;
        let Some(id) = robotsgate_history::gate::claim_alert(&mut tx, &h.site, &h.outcome, now)
            .await
            .map_err(q("claiming a hold's alert"))?
        else {
            continue;
        };
        let alert_row = QueuedAlert {
            alert: &alert,
            severity: AlertSeverity::Critical.as_str(),
            channels: &channels,
            kind: "hold",
        };
        queue_alert(&mut tx, &h.site, -id, now, &alert_row).await?;
        tx.commit().await.map_err(q("committing a hold's alert"))?;
        tracing::warn!(site = %h.site, outcome = %h.outcome, subject = %alert.0, "alert queued for a change held at the edge");
        queued += 1;
    }
    for (id, h) in robotsgate_history::gate::ended_unresolved(pool).await.map_err(q("reading ended holds"))? {
        let Some(site) = site_of(&h.site) else { continue };
        let location = site.source().location();
        let notice = resolved_notice(&h.site, &location, &h, console);
        // Whoever was told of the hold is told it is over.
        let channels = crate::channels::direct(config, &h.site, AlertSeverity::Critical);
        let now = now_ms();
        let mut tx = pool.begin().await.map_err(q("starting a resolved notice"))?;
        if !robotsgate_history::gate::resolve_alert(&mut tx, id, now).await.map_err(q("resolving a hold"))? {
            continue;
        }
        let alert_row = QueuedAlert {
            alert: &notice,
            severity: AlertSeverity::Info.as_str(),
            channels: &channels,
            kind: "hold-resolved",
        };
        queue_alert(&mut tx, &h.site, -id, now, &alert_row).await?;
        tx.commit().await.map_err(q("committing a resolved notice"))?;
        tracing::info!(site = %h.site, outcome = %h.outcome, "resolved notice queued for a hold");
        queued += 1;
    }
    Ok(queued)
}
