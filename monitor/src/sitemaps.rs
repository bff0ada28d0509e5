//! The sitemaps a site's robots.txt names, read on their own schedule and
//! checked against the file that names them (issue #62).
//!
//! After a poll, a site whose robots.txt names sitemaps has them read when
//! the file changed or `sitemaps.every` (6 h) has passed since the last
//! check, with conditional requests; `rules::sitemap` counts the listed
//! URLs the file disallows for the catalogue's search crawlers, grouped by
//! deciding line. A check whose outcome differs from the last is a new
//! `sitemap_checks` row (counts, conflicts with samples, each file's hash,
//! state and validators; never every URL). Conflicts raise one alert per
//! episode and its end one resolved notice, claimed in `sitemap_alerts`
//! in the transaction that queues them, so monitors sharing a database
//! raise each once. A check that could not read every file never resolves
//! an episode: no evidence is not "clear".

use std::collections::HashMap;
use std::fmt::Write as _;

use robotsgate_config::{AlertSeverity, Site, Source};
use robotsgate_crawlers::Purpose;
use robotsgate_sitemaps::{File, Options, walk};
use rules::Policy;
use rules::sitemap::{Conflicts, Tally};
use serde_json::{Value, json};
use sqlx::Row;

use crate::Monitor;
use crate::clock::{now_ms, when};
use crate::letter::esc;
use crate::source::{Observation, Validators};
use crate::store::{QueuedAlert, StoreError, body_hash, q, queue_alert};

/// How the crawlers of a conflict are named.
const KIND: &str = "search crawlers";
/// How often an unchanged check's `checked_at` is moved forward, at most.
const TOUCH_EVERY_MS: i64 = 15 * 60 * 1000;
/// An index's sitemaps are kept for conditional requests up to this many.
const KEEP_CHILDREN: usize = 1_000;

/// The latest check of a site, as the database holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitemapCheck {
    /// Its row.
    pub id: i64,
    /// When its outcome began (Unix ms).
    pub at: i64,
    /// The robots.txt body it was checked against.
    pub robots_hash: String,
    /// The state key: the files' hashes and the conflicts.
    pub state: String,
    /// Distinct URLs listed.
    pub listed: i64,
    /// URLs robots.txt disallows for a search crawler.
    pub closed: i64,
    /// Every file was read (no 5xx, timeout or transport failure).
    pub complete: bool,
    /// The conflicts, a JSON array.
    pub conflicts: String,
    /// The files, a JSON array.
    pub files: String,
    /// When its conflicts began.
    pub trouble_since: Option<i64>,
    /// When it was last checked.
    pub checked_at: i64,
}

impl SitemapCheck {
    /// The files as JSON values.
    pub fn files_json(&self) -> Vec<Value> {
        serde_json::from_str(&self.files).unwrap_or_default()
    }

    /// The conflicts as JSON values.
    pub fn conflicts_json(&self) -> Vec<Value> {
        serde_json::from_str(&self.conflicts).unwrap_or_default()
    }

    /// The whole check, as `/api/sites/NAME` gives it.
    pub fn json(&self) -> Value {
        json!({
            "checked_at": self.checked_at,
            "since": self.at,
            "robots_hash": self.robots_hash,
            "listed": self.listed,
            "disallowed": self.closed,
            "complete": self.complete,
            "conflicts": self.conflicts_json(),
            "files": self.files_json(),
            "conflict_since": self.trouble_since,
        })
    }
}

/// The latest sitemap check of `site`, if any.
pub async fn latest(pool: &sqlx::AnyPool, site: &str) -> Result<Option<SitemapCheck>, StoreError> {
    let row = sqlx::query(
        "SELECT id, at, robots_hash, state, listed, closed, complete, conflicts, files, trouble_since, checked_at \
         FROM sitemap_checks WHERE site = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(site)
    .fetch_optional(pool)
    .await
    .map_err(q("reading a sitemap check"))?;
    row.map(|r| read_row(&r)).transpose().map_err(q("reading a sitemap check"))
}

fn read_row(r: &sqlx::any::AnyRow) -> Result<SitemapCheck, sqlx::Error> {
    Ok(SitemapCheck {
        id: r.try_get("id")?,
        at: r.try_get("at")?,
        robots_hash: r.try_get("robots_hash")?,
        state: r.try_get("state")?,
        listed: r.try_get("listed")?,
        closed: r.try_get("closed")?,
        complete: r.try_get::<i64, _>("complete")? != 0,
        conflicts: r.try_get("conflicts")?,
        files: r.try_get("files")?,
        trouble_since: r.try_get("trouble_since")?,
        checked_at: r.try_get("checked_at")?,
    })
}

/// The check in words, as `robots-monitor show SITE` prints it.
pub fn text(check: Option<&SitemapCheck>) -> String {
    let Some(c) = check else {
        return "Sitemaps: none read yet (robots.txt names none, sitemaps.check is off, or no poll since).\n".into();
    };
    let mut out = String::new();
    let verdict = if c.closed > 0 {
        "OFF"
    } else if c.complete {
        "ok"
    } else {
        "?"
    };
    let _ = writeln!(
        out,
        "Sitemaps: {verdict} {} URLs listed, {} disallowed for a search crawler; checked {}",
        rules::sitemap::thousands(c.listed.max(0) as u64),
        rules::sitemap::thousands(c.closed.max(0) as u64),
        when(Some(c.checked_at))
    );
    for conflict in c.conflicts_json() {
        let _ = writeln!(out, "  conflict: {}", conflict["sentence"].as_str().unwrap_or_default());
        for s in conflict["sample"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "      {}", s.as_str().unwrap_or_default());
        }
    }
    for f in c.files_json() {
        let _ = writeln!(
            out,
            "  {:<9} {} ({}, {} URLs{})",
            f["state"].as_str().unwrap_or_default(),
            f["url"].as_str().unwrap_or_default(),
            f["kind"].as_str().unwrap_or("unread"),
            f["listed"].as_u64().unwrap_or(0),
            f["status"].as_u64().map(|s| format!(", status {s}")).unwrap_or_default()
        );
        for finding in f["findings"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "      {}: {}",
                finding["key"].as_str().unwrap_or_default(),
                finding["text"].as_str().unwrap_or_default()
            );
        }
    }
    if !c.complete {
        out.push_str("  Not every file could be read: the counts cover the files that were.\n");
    }
    out
}

/// What the schedule remembers of a site between polls, so that a site's
/// poll does not read the database to learn its sitemaps are not due.
#[derive(Clone, Debug)]
pub(crate) struct Due {
    robots_hash: String,
    checked_at: i64,
}

/// The schedule of every site, by name.
pub(crate) type Schedule = std::sync::Mutex<HashMap<String, Due>>;

/// One check's outcome, ready to compare and write.
struct Outcome {
    conflicts: Conflicts,
    files: Vec<File>,
    complete: bool,
}

impl Outcome {
    fn files_json(&self) -> String {
        let files: Vec<Value> = self.files.iter().map(file_json).collect();
        Value::Array(files).to_string()
    }

    fn conflicts_json(&self, listed: u64) -> String {
        let list: Vec<Value> = self
            .conflicts
            .groups
            .iter()
            .map(|g| {
                json!({
                    "sentence": g.sentence(listed, KIND),
                    "decided": g.decided.to_string(),
                    "line": match &g.decided { rules::sitemap::Decided::Rule(r) => Some(r.line), _ => None },
                    "crawlers": g.agents,
                    "count": g.count,
                    "sample": g.sample,
                })
            })
            .collect();
        Value::Array(list).to_string()
    }

    /// The key two checks compare by: each file's hash and state, and the
    /// conflicts' lines, crawlers and counts.
    fn state(&self, robots_hash: &str) -> String {
        let mut key = String::from(robots_hash);
        for f in &self.files {
            let hash = f.reading.as_ref().map_or("-", |r| r.sha256.as_str());
            let _ = write!(key, "|{}={}:{}", f.url, f.state(), hash);
        }
        for g in &self.conflicts.groups {
            let _ = write!(key, "|{}:{}:{}", g.decided, g.agents.join(","), g.count);
        }
        key
    }
}

fn file_json(f: &File) -> Value {
    let reading = f.reading.as_ref();
    let children: Vec<&String> =
        reading.filter(|r| r.children.len() <= KEEP_CHILDREN).map(|r| r.children.iter().collect()).unwrap_or_default();
    json!({
        "url": f.url,
        "from": f.from,
        "line": f.line,
        "status": f.status,
        "state": f.state(),
        "kind": reading.map(|r| r.kind.as_str()),
        "entries": reading.map(|r| r.entries),
        "listed": f.listed(),
        "bytes": reading.map(|r| r.bytes),
        "gzip": reading.map(|r| r.gzip),
        "sha256": reading.map(|r| r.sha256.clone()),
        "hops": f.hops,
        "etag": f.validators.etag,
        "last_modified": f.validators.last_modified,
        "children": children,
        "findings": f.findings.0.iter().map(|x| json!({
            "key": x.what.key(),
            "error": x.what.is_error(),
            "count": x.count,
            "line": x.line,
            "column": x.column,
            "text": x.to_string(),
        })).collect::<Vec<_>>(),
    })
}

/// The `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

impl Monitor {
    /// Reads the sitemaps `public` (this poll's answer) names when they are
    /// due, checks them against it, records a changed outcome and raises or
    /// resolves the conflict alert. Sites whose robots.txt names no
    /// sitemap cost nothing here: no request, no database read.
    pub(crate) async fn check_sitemaps(&self, site: &Site, public: &Observation) -> Result<(), StoreError> {
        let url = match site.source() {
            Source::Url(u) => Some(u),
            _ => None,
        };
        if !site.sitemaps.checked(url.is_some()) {
            return Ok(());
        }
        let outcome = &public.outcome;
        // A failed fetch says nothing of the sitemaps; the file's lines are
        // needed to know them.
        if !matches!(outcome.status, Some(200..=299)) || !mentions_sitemap(&outcome.body) {
            return Ok(());
        }
        let robots_hash = body_hash(&outcome.body);
        let now = now_ms();
        let every = site.sitemaps.every.as_millis() as i64;
        let remembered = self.sitemap_schedule().lock().map(|m| m.get(&site.name).cloned()).unwrap_or(None);
        let previous = match &remembered {
            Some(d) if d.robots_hash == robots_hash && now - d.checked_at < every => return Ok(()),
            _ => latest(self.store().pool(), &site.name).await?,
        };
        if let Some(p) = &previous
            && p.robots_hash == robots_hash
            && now - p.checked_at < every
        {
            self.remember(site, &robots_hash, p.checked_at);
            return Ok(());
        }
        let policy = Policy::from_fetch(outcome);
        let Some(robots) = policy.robots() else { return Ok(()) };
        let named = robotsgate_sitemaps::named(robots);
        if named.is_empty() {
            return Ok(());
        }
        let agents = self.catalogue().tokens_of(Purpose::Search);
        let mut options = Options::new(url.as_deref().and_then(origin_of));
        options.deadline = self.config().http.timeout.max(std::time::Duration::from_secs(30));
        // Unchanged files may answer 304 only when robots.txt is the one
        // they were checked against: a new file needs every URL again.
        if let Some(p) = previous.as_ref().filter(|p| p.robots_hash == robots_hash) {
            for f in p.files_json() {
                let Some(u) = f["url"].as_str() else { continue };
                let v = Validators {
                    etag: f["etag"].as_str().map(str::to_string),
                    last_modified: f["last_modified"].as_str().map(str::to_string),
                };
                if v.etag.is_some() || v.last_modified.is_some() {
                    options.validators.insert(u.to_string(), v);
                }
                let children: Vec<String> = f["children"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_str().map(str::to_string))
                    .collect();
                if !children.is_empty() {
                    options.children.insert(u.to_string(), children);
                }
            }
        }
        let mut checked = self.walk_sitemaps(&named, &options, &policy, &agents).await;
        let unchanged = checked.files.iter().all(|f| f.not_modified);
        if unchanged && let Some(p) = &previous {
            // Nothing changed: the last outcome stands.
            if now - p.checked_at >= TOUCH_EVERY_MS.min(every) {
                touch(self.store().pool(), p.id, now).await?;
            }
            self.remember(site, &robots_hash, now);
            return Ok(());
        }
        if checked.files.iter().any(|f| f.not_modified) {
            // Some changed, some did not: the tally needs every URL.
            options.validators.clear();
            options.children.clear();
            checked = self.walk_sitemaps(&named, &options, &policy, &agents).await;
        }
        self.record_sitemaps(site, &robots_hash, previous.as_ref(), &checked, now).await?;
        self.remember(site, &robots_hash, now);
        Ok(())
    }

    fn remember(&self, site: &Site, robots_hash: &str, checked_at: i64) {
        if let Ok(mut m) = self.sitemap_schedule().lock() {
            m.insert(site.name.clone(), Due { robots_hash: robots_hash.to_string(), checked_at });
        }
    }

    async fn walk_sitemaps(
        &self,
        named: &[(u32, String)],
        options: &Options,
        policy: &Policy,
        agents: &[String],
    ) -> Outcome {
        let tally = Tally::new(None, policy.clone(), agents);
        let walked = walk(self.fetcher(), named, options, tally).await;
        let complete = !walked.files.iter().any(File::unread);
        Outcome { conflicts: walked.sink.finish(), files: walked.files, complete }
    }

    /// Writes a changed outcome, and claims the alert or its end.
    async fn record_sitemaps(
        &self,
        site: &Site,
        robots_hash: &str,
        previous: Option<&SitemapCheck>,
        o: &Outcome,
        now: i64,
    ) -> Result<(), StoreError> {
        let listed = o.conflicts.listed;
        let state = o.state(robots_hash);
        let trouble = !o.conflicts.is_clear();
        let was = previous.and_then(|p| p.trouble_since);
        // No evidence is not "clear": a check that could not read a file
        // keeps an episode open.
        let trouble_since = match (trouble, o.complete) {
            (true, _) => was.or(Some(now)),
            (false, true) => None,
            (false, false) => was,
        };
        let ended = was.is_some() && trouble_since.is_none();
        if let Some(p) = previous.filter(|p| p.state == state && p.trouble_since == trouble_since) {
            return touch(self.store().pool(), p.id, now).await;
        }
        let mut tx = self.store().pool().begin().await.map_err(q("starting a sitemap check"))?;
        if previous.is_some_and(|p| p.state == state) {
            sqlx::query("UPDATE sitemap_checks SET checked_at = $1, trouble_since = $2 WHERE id = $3")
                .bind(now)
                .bind(trouble_since)
                .bind(previous.map_or(0, |p| p.id))
                .execute(&mut *tx)
                .await
                .map_err(q("touching a sitemap check"))?;
        } else {
            sqlx::query(
                "INSERT INTO sitemap_checks (site, at, robots_hash, state, listed, closed, complete, conflicts, files, \
                 trouble_since, checked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(&site.name)
            .bind(now)
            .bind(robots_hash)
            .bind(&state)
            .bind(listed as i64)
            .bind(o.conflicts.closed as i64)
            .bind(i64::from(o.complete))
            .bind(o.conflicts_json(listed))
            .bind(o.files_json())
            .bind(trouble_since)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(q("writing a sitemap check"))?;
        }
        let mut queued = None;
        if let Some(episode) = trouble_since {
            let claimed = sqlx::query(
                "INSERT INTO sitemap_alerts (site, episode, raised_at) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING RETURNING id",
            )
            .bind(&site.name)
            .bind(episode)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(q("claiming a sitemap alert"))?;
            if let Some(r) = claimed {
                let id: i64 = r.try_get("id").map_err(q("reading a sitemap alert's id"))?;
                let alert = self.sitemap_alert(site, o);
                let channels = self.channels_for(&site.name, AlertSeverity::Critical);
                let a = QueuedAlert {
                    alert: &alert,
                    severity: AlertSeverity::Critical.as_str(),
                    channels: &channels,
                    kind: "sitemap",
                };
                queue_alert(&mut tx, &site.name, -id, now, &a).await?;
                queued = Some(alert.0);
            }
        }
        if ended {
            let resolved = sqlx::query(
                "UPDATE sitemap_alerts SET resolved_at = $1 WHERE site = $2 AND resolved_at IS NULL RETURNING id",
            )
            .bind(now)
            .bind(&site.name)
            .fetch_all(&mut *tx)
            .await
            .map_err(q("resolving a sitemap alert"))?;
            if let Some(r) = resolved.first() {
                let id: i64 = r.try_get("id").map_err(q("reading a sitemap alert's id"))?;
                let notice = self.sitemap_resolved(site, o, was);
                let channels = self.channels_for(&site.name, AlertSeverity::Critical);
                let a = QueuedAlert {
                    alert: &notice,
                    severity: AlertSeverity::Info.as_str(),
                    channels: &channels,
                    kind: "sitemap-resolved",
                };
                queue_alert(&mut tx, &site.name, -id, now, &a).await?;
                queued = Some(notice.0);
            }
        }
        tx.commit().await.map_err(q("committing a sitemap check"))?;
        if let Some(subject) = queued {
            tracing::warn!(site = %site.name, %subject, "alert queued for the sitemaps");
        }
        Ok(())
    }

    /// The alert: (subject, text, HTML).
    fn sitemap_alert(&self, site: &Site, o: &Outcome) -> (String, String, String) {
        let c = &o.conflicts;
        let subject = format!(
            "[robotsgate] {}: robots.txt disallows {} of {} sitemap URLs",
            site.name,
            rules::sitemap::thousands(c.closed),
            rules::sitemap::thousands(c.listed)
        );
        let mut text = String::new();
        let _ = writeln!(text, "robots.txt disallows URLs the site's sitemaps list, for search crawlers:");
        for g in &c.groups {
            let _ = writeln!(text, "\n  {}", g.sentence(c.listed, KIND));
            for s in &g.sample {
                let _ = writeln!(text, "    {s}");
            }
        }
        let _ = writeln!(
            text,
            "\nSearch Console reports each as \"Sitemap contains URLs which are blocked by robots.txt\". Open the lines, or take the URLs out of the sitemaps."
        );
        let _ = writeln!(text, "\nSitemaps read:");
        for f in &o.files {
            let _ = writeln!(text, "  {} {} ({} URLs)", f.state(), f.url, f.listed());
        }
        if !o.complete {
            let _ = writeln!(text, "Not every sitemap could be read: the counts cover those that were.");
        }
        let link = self.console_url().map(|base| crate::links::site_page(base, &site.name));
        if let Some(link) = &link {
            let _ = writeln!(text, "\nIn the console: {link}");
        }
        let first = c.groups.first().map(|g| g.sentence(c.listed, KIND)).unwrap_or_default();
        let inner = format!("<p><strong>{}</strong></p><pre>{}</pre>", esc(&first), esc(&text));
        (subject, text, crate::letter::page(AlertSeverity::Critical, &inner, link.as_deref()))
    }

    /// The notice that no listed URL is disallowed any more.
    fn sitemap_resolved(&self, site: &Site, o: &Outcome, since: Option<i64>) -> (String, String, String) {
        let subject = format!("[robotsgate] {}: resolved: robots.txt disallows no sitemap URL", site.name);
        let text = format!(
            "Resolved: none of the {} sitemap URLs is disallowed for a search crawler any more.\nConflicting since {}, until {}.\n",
            rules::sitemap::thousands(o.conflicts.listed),
            when(since),
            when(Some(now_ms()))
        );
        let link = self.console_url().map(|base| crate::links::site_page(base, &site.name));
        let inner = format!("<p><strong>{}</strong></p>", esc(&text));
        (subject, text, crate::letter::page(AlertSeverity::Info, &inner, link.as_deref()))
    }
}

/// Moves an unchanged check's `checked_at` forward.
async fn touch(pool: &sqlx::AnyPool, id: i64, now: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE sitemap_checks SET checked_at = $1 WHERE id = $2")
        .bind(now)
        .bind(id)
        .execute(pool)
        .await
        .map_err(q("touching a sitemap check"))?;
    Ok(())
}

/// Whether a robots.txt body may name a sitemap: a byte scan that keeps
/// the check free for the files that do not.
fn mentions_sitemap(body: &[u8]) -> bool {
    body.windows(7).any(|w| w.eq_ignore_ascii_case(b"sitemap"))
}
