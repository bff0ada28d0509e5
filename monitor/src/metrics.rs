//! The monitor's Prometheus metrics, served at `/metrics` on the console's
//! listener. Labels are bounded: sites and channels come from the config,
//! states and outcomes from fixed sets, crawlers from the catalogue.
//!
//! Counters of what this process did (polls, deliveries) live in memory;
//! what the database holds (each site's state and last good poll, alerts
//! waiting and failing, the ledger's violations) is read at each scrape,
//! so every monitor sharing a database reports the same, and the time
//! those reads take is the database latency metric.

use prometheus::{Encoder, IntGaugeVec, Opts, Registry};
use sqlx::Row;

use crate::clock::now_ms;
use crate::counters::counters;
use crate::monitor::Monitor;
use crate::store::q;

fn gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    IntGaugeVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("metric {name}: {e}"))
}

/// The metrics text: the counters, and the gauges read from the database now.
pub async fn render(m: &Monitor) -> Result<String, crate::store::StoreError> {
    let c = counters();
    let registry = Registry::new();
    let now = now_ms();
    let started = std::time::Instant::now();

    let info = gauge("robotsgate_monitor_info", "The monitor's version and its lease owner id", &["version", "owner"]);
    info.with_label_values(&[env!("CARGO_PKG_VERSION"), m.owner()]).set(1);
    let state = gauge("robotsgate_monitor_site_state", "1 for each site's current state", &["site", "state"]);
    let age = gauge(
        "robotsgate_monitor_last_success_age_seconds",
        "Seconds since each site's last successful poll (-1: never)",
        &["site"],
    );
    let stale = crate::monitor::stale_ms(m.config());
    let filter = crate::overview::Filter::default();
    let mut page = 1;
    loop {
        let filter = crate::overview::Filter { page: Some(page), ..filter.clone() };
        let (lines, total) = crate::overview::sites(m.store(), &filter, now, stale).await?;
        for l in &lines {
            state.with_label_values(&[&l.name, l.state]).set(1);
        }
        if page * crate::overview::PAGE >= total {
            break;
        }
        page += 1;
    }
    let rows = sqlx::query(
        "SELECT site, MAX(COALESCE(last_at, at)) AS at FROM fetches WHERE status >= 200 AND status < 300 GROUP BY site",
    )
    .fetch_all(m.store().pool())
    .await
    .map_err(q("reading last good polls"))?;
    for s in &m.config().sites {
        let at = rows
            .iter()
            .find(|r| r.try_get::<String, _>("site").is_ok_and(|n| n == s.name))
            .and_then(|r| r.try_get::<Option<i64>, _>("at").ok().flatten());
        age.with_label_values(&[&s.name]).set(at.map_or(-1, |at| (now - at).max(0) / 1000));
    }
    // Which monitor holds which sites' leases now: a replica that holds
    // none for long is idle or cut off from the database.
    let leases = gauge("robotsgate_monitor_leases", "Sites whose poll lease each monitor holds now", &["owner"]);
    let rows = sqlx::query(
        "SELECT leased_by, CAST(COUNT(*) AS BIGINT) AS n FROM sites WHERE leased_until > $1 AND leased_by IS NOT NULL GROUP BY leased_by",
    )
    .bind(now)
    .fetch_all(m.store().pool())
    .await
    .map_err(q("reading leases"))?;
    for r in &rows {
        leases
            .with_label_values(&[&r.try_get::<String, _>("leased_by").unwrap_or_default()])
            .set(r.try_get("n").unwrap_or(0));
    }
    leases.with_label_values(&[m.owner()]).add(0);
    let alerts = gauge(
        "robotsgate_monitor_alerts",
        "Undelivered alerts: waiting (not yet tried) and failing",
        &["channel", "status"],
    );
    let row = sqlx::query(
        "SELECT CAST(COALESCE(SUM(CASE WHEN attempts = 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS waiting, \
         CAST(COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS failing FROM alerts WHERE sent_at IS NULL",
    )
    .fetch_one(m.store().pool())
    .await
    .map_err(q("counting alerts"))?;
    // Without email nothing will send them: they are not waiting on a channel.
    if m.config().email.is_some() {
        alerts.with_label_values(&["email", "waiting"]).set(row.try_get("waiting").unwrap_or(0));
        alerts.with_label_values(&["email", "failing"]).set(row.try_get("failing").unwrap_or(0));
    }
    let rows = sqlx::query(
        "SELECT channel, CAST(COALESCE(SUM(CASE WHEN attempts = 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS waiting, \
         CAST(COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS failing FROM deliveries \
         WHERE sent_at IS NULL GROUP BY channel",
    )
    .fetch_all(m.store().pool())
    .await
    .unwrap_or_default();
    for r in &rows {
        let channel: String = r.try_get("channel").unwrap_or_default();
        if m.config().channels.iter().any(|c| c.name == channel) {
            alerts.with_label_values(&[&channel, "waiting"]).set(r.try_get("waiting").unwrap_or(0));
            alerts.with_label_values(&[&channel, "failing"]).set(r.try_get("failing").unwrap_or(0));
        }
    }
    let violations = prometheus::IntCounterVec::new(
        Opts::new(
            "robotsgate_crawler_violations_total",
            "Crawler requests judged violations, in the ledger's retention",
        ),
        &["site", "crawler", "identity"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // A gauge beside the counter, for alerting: the counter is rebuilt
    // from the ledger at each scrape, so a crawler's first violation
    // starts a series at its count (never at 0, so `increase()` misses it),
    // and importing last month's log raises it as if the violations were
    // new. The gauge counts the violations of rows whose latest request
    // fell in the last hour, by request time.
    let recent = IntGaugeVec::new(
        Opts::new(
            "robotsgate_crawler_violations_recent",
            "Violations (that day) of crawlers whose latest violation was within the last hour, by request time",
        ),
        &["site", "crawler", "identity"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rows = sqlx::query(
        // PostgreSQL sums BIGINT as NUMERIC, which the Any driver cannot read.
        "SELECT site, crawler, identity, CAST(SUM(requests) AS BIGINT) AS n, \
         CAST(SUM(CASE WHEN last_at >= $1 THEN requests ELSE 0 END) AS BIGINT) AS recent FROM ledger \
         WHERE class = 'violation' GROUP BY site, crawler, identity",
    )
    .bind(now_ms() - 3_600_000)
    .fetch_all(m.store().pool())
    .await
    .map_err(q("summing violations"))?;
    for r in &rows {
        let (site, crawler, identity): (String, String, String) = (
            r.try_get("site").unwrap_or_default(),
            r.try_get("crawler").unwrap_or_default(),
            r.try_get("identity").unwrap_or_default(),
        );
        // Bounded labels: the config's sites, the catalogue's tokens.
        if m.site(&site).is_some() && m.catalogue().get(&crawler).is_some() {
            let n: i64 = r.try_get("n").unwrap_or(0);
            violations.with_label_values(&[&site, &crawler, &identity]).inc_by(n.max(0) as u64);
            let last_hour: i64 = r.try_get("recent").unwrap_or(0);
            if last_hour > 0 {
                recent.with_label_values(&[&site, &crawler, &identity]).set(last_hour);
            }
        }
    }
    let _ = registry.register(Box::new(recent));
    // Every place crawlers look (host variants, the edge): what it serves,
    // and whether it is off what it must be, with the seconds since. One
    // series per place the config names; a place's labels are bounded by
    // its variants (at most four by default) and listed hosts.
    let serves = gauge(
        "robotsgate_place_serves",
        "1 for what each host variant or the edge serves (same, redirect, additions, own, html, no-file, broken-redirect, unavailable, not-served, unknown)",
        &["site", "place", "serves"],
    );
    let off = gauge(
        "robotsgate_place_off_seconds",
        "How long a host variant or the edge has been off what it must be, in seconds; 0 while it is what it must be",
        &["site", "place", "finding"],
    );
    let rows = sqlx::query("SELECT site, place, serves, findings, trouble_since FROM places")
        .fetch_all(m.store().pool())
        .await
        .map_err(q("reading places"))?;
    for r in &rows {
        let (site, place, kind): (String, String, String) = (
            r.try_get("site").unwrap_or_default(),
            r.try_get("place").unwrap_or_default(),
            r.try_get("serves").unwrap_or_default(),
        );
        if m.site(&site).is_none() {
            continue;
        }
        serves.with_label_values(&[&site, &place, &kind]).set(1);
        let findings: String = r.try_get("findings").unwrap_or_default();
        let since: Option<i64> = r.try_get("trouble_since").unwrap_or(None);
        let first = findings.lines().next().and_then(|l| l.split_once(':')).map_or("none", |(k, _)| k);
        off.with_label_values(&[&site, &place, first]).set(since.map_or(0, |t| ((now - t) / 1000).max(0)));
    }
    let _ = registry.register(Box::new(serves));
    let _ = registry.register(Box::new(off));
    // The sitemaps: URLs listed, those robots.txt disallows for a search
    // crawler, and each file's state; from each site's latest check.
    let listed =
        gauge("robotsgate_sitemap_urls", "Distinct URLs the site's sitemaps list, at the latest check", &["site"]);
    let closed = gauge(
        "robotsgate_sitemap_disallowed_urls",
        "Sitemap URLs robots.txt disallows for at least one search crawler, at the latest check",
        &["site"],
    );
    let files = gauge(
        "robotsgate_sitemap_files",
        "Sitemap files by state at the latest check (ok, warnings, error, unchanged)",
        &["site", "state"],
    );
    let conflict = gauge(
        "robotsgate_sitemap_conflict_seconds",
        "How long robots.txt has disallowed listed sitemap URLs, in seconds; 0 when it disallows none",
        &["site"],
    );
    let rows = sqlx::query(
        "SELECT c.site, c.listed, c.closed, c.files, c.trouble_since FROM sitemap_checks c \
         WHERE c.id = (SELECT MAX(id) FROM sitemap_checks d WHERE d.site = c.site)",
    )
    .fetch_all(m.store().pool())
    .await
    .map_err(q("reading sitemap checks"))?;
    for r in &rows {
        let site: String = r.try_get("site").unwrap_or_default();
        if m.site(&site).is_none() {
            continue;
        }
        listed.with_label_values(&[&site]).set(r.try_get("listed").unwrap_or(0));
        closed.with_label_values(&[&site]).set(r.try_get("closed").unwrap_or(0));
        let since: Option<i64> = r.try_get("trouble_since").unwrap_or(None);
        conflict.with_label_values(&[&site]).set(since.map_or(0, |t| ((now - t) / 1000).max(0)));
        let text: String = r.try_get("files").unwrap_or_default();
        let parsed: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        for state in ["ok", "warnings", "error", "unchanged"] {
            let n = parsed.iter().filter(|f| f["state"].as_str() == Some(state)).count();
            files.with_label_values(&[&site, state]).set(n as i64);
        }
    }
    for g in [listed, closed, files, conflict] {
        let _ = registry.register(Box::new(g));
    }
    c.db_seconds.observe(started.elapsed().as_secs_f64());
    for g in [info, state, age, alerts, leases] {
        let _ = registry.register(Box::new(g));
    }
    let _ = registry.register(Box::new(violations));
    let mut families = c.registry.gather();
    families.extend(registry.gather());
    let mut out = Vec::new();
    let _ = prometheus::TextEncoder::new().encode(&families, &mut out);
    Ok(String::from_utf8_lossy(&out).into_owned())
}
