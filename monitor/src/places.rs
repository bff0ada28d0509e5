//! Every other place crawlers look for a site's robots.txt: its host
//! variants and the edge in front of its origin (issue #61).
//!
//! After each poll of a site's public URL, the monitor fetches each
//! variant (both schemes, `www.` and the bare host, listed hosts) and, for
//! a site served through a cache, the origin's copy; `rules::coverage::judge`
//! says what each serves and what is wrong. A change of what a place serves
//! is recorded (`places`, `place_events`, `place_bodies`); findings that
//! outlast their grace raise one alert per episode, and its end one
//! resolved notice, claimed in `place_alerts` in the transaction that queues
//! them, so monitors sharing a database raise each once.

use std::fmt::Write as _;
use std::time::Duration;

use robotsgate_config::{AlertSeverity, EdgeCheck, Site, Source, Variant};
use rules::coverage::{Ask, Judgement, Must, Serves};
use rules::{FetchOutcome, Policy};
use sqlx::Row;

use crate::Monitor;
use crate::clock::{now_ms, when};
use crate::letter::esc;
use crate::source::{Observation, Validators};
use crate::store::{QueuedAlert, StoreError, body_hash, q, queue_alert};

/// The edge's place name.
pub const EDGE: &str = "edge";
/// How often an unchanged place's `checked_at` is moved forward.
const TOUCH_EVERY_MS: i64 = 15 * 60 * 1000;

/// One place as the database holds it: what it serves, since when, and
/// what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceRow {
    /// `scheme://host[:port]` of a variant, or `edge`.
    pub place: String,
    /// `variant` or `edge`.
    pub kind: String,
    /// What it must be (`same`, `redirect`, `own`, `absent`).
    pub must: String,
    /// The state key: what it serves, its findings, the bodies' hashes.
    pub state: String,
    /// What it serves, as a key (`rules::coverage::Serves::key`).
    pub serves: String,
    /// What a crawler gets there, in words.
    pub summary: String,
    /// The findings, one `key: text` per line; empty when all is well.
    pub findings: String,
    /// The verdicts that differ from the canonical place's, one per line.
    pub flips: String,
    /// The final HTTP status, if any.
    pub status: Option<i64>,
    /// Redirects followed.
    pub hops: i64,
    /// The hash of the body served there.
    pub body_hash: Option<String>,
    /// For the edge: the hash of the origin's body.
    pub origin_hash: Option<String>,
    /// What the answer said of caches, one `name: value` per line.
    pub cache: String,
    /// When this state began (Unix ms).
    pub since: i64,
    /// When its findings began; `None` when it is what it must be.
    pub trouble_since: Option<i64>,
    /// When it was last fetched (moved forward at most every 15 minutes
    /// while nothing changes).
    pub checked_at: i64,
}

impl PlaceRow {
    /// The findings' keys.
    pub fn finding_keys(&self) -> Vec<&str> {
        self.findings.lines().filter_map(|l| l.split_once(':').map(|(k, _)| k)).collect()
    }
}

/// Every place of `site` on record, variants first, by name.
pub async fn rows(pool: &sqlx::AnyPool, site: &str) -> Result<Vec<PlaceRow>, StoreError> {
    let rows = sqlx::query(
        "SELECT place, kind, must, state, serves, summary, findings, flips, status, hops, body_hash, origin_hash, \
         cache, since, trouble_since, checked_at FROM places WHERE site = $1 ORDER BY kind DESC, place",
    )
    .bind(site)
    .fetch_all(pool)
    .await
    .map_err(q("reading places"))?;
    rows.iter().map(|r| read_row(r).map_err(q("reading a place"))).collect()
}

fn read_row(r: &sqlx::any::AnyRow) -> Result<PlaceRow, sqlx::Error> {
    Ok(PlaceRow {
        place: r.try_get("place")?,
        kind: r.try_get("kind")?,
        must: r.try_get("must")?,
        state: r.try_get("state")?,
        serves: r.try_get("serves")?,
        summary: r.try_get("summary")?,
        findings: r.try_get("findings")?,
        flips: r.try_get("flips")?,
        status: r.try_get("status")?,
        hops: r.try_get("hops")?,
        body_hash: r.try_get("body_hash")?,
        origin_hash: r.try_get("origin_hash")?,
        cache: r.try_get("cache")?,
        since: r.try_get("since")?,
        trouble_since: r.try_get("trouble_since")?,
        checked_at: r.try_get("checked_at")?,
    })
}

/// The places in words, as `robots-monitor show SITE` prints them.
pub fn text(rows: &[PlaceRow]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("No other place checked yet: no variants (an IP address, a one-label host or a URL with its own port, and none listed) and no edge, or no poll since.\n");
        return out;
    }
    out.push_str("Where crawlers look:\n");
    for r in rows {
        // No evidence either way (an edge with no origin copy) is not "ok".
        let verdict = match (r.trouble_since, r.serves.as_str()) {
            (Some(_), _) => "OFF",
            (None, "unknown") => "?",
            (None, _) => "ok",
        };
        let _ = writeln!(out, "  {:<3} {}: {}", verdict, r.place, r.summary);
        let _ = writeln!(
            out,
            "      must be: {}; since {}; checked {}",
            r.must,
            when(Some(r.since)),
            when(Some(r.checked_at))
        );
        for f in r.findings.lines() {
            let _ = writeln!(out, "      finding: {f}");
        }
        for f in r.flips.lines().take(10) {
            let _ = writeln!(out, "      differs: {f}");
        }
        let more = r.flips.lines().count().saturating_sub(10);
        if more > 0 {
            let _ = writeln!(out, "      and {more} more verdicts differ");
        }
        if r.kind == "edge" {
            for c in r.cache.lines() {
                let _ = writeln!(out, "      cache: {c}");
            }
        }
    }
    out
}

/// One `places` row to write, owned, so that a plain one can go to the
/// group commit ([`crate::batch`]).
#[derive(Clone, Debug)]
pub struct PlaceWrite {
    site: String,
    place: String,
    kind: &'static str,
    must: &'static str,
    state: String,
    serves: &'static str,
    summary: String,
    findings: String,
    flips: String,
    status: Option<i64>,
    hops: i64,
    body_hash: Option<String>,
    origin_hash: Option<String>,
    cache: String,
    since: i64,
    trouble_since: Option<i64>,
    checked_at: i64,
}

impl PlaceWrite {
    /// The row's key: (site, place).
    pub fn key(&self) -> (String, String) {
        (self.site.clone(), self.place.clone())
    }

    fn new(site: &str, s: &Seen, row: Option<&PlaceRow>, p: &Plan, now: i64) -> PlaceWrite {
        PlaceWrite {
            site: site.to_string(),
            place: s.place.clone(),
            kind: s.kind,
            must: s.must.as_str(),
            state: p.state.clone(),
            serves: s.serves_key(),
            summary: s.summary(),
            findings: s.findings(),
            flips: s.flips(),
            status: s.outcome.status.map(i64::from),
            hops: s.outcome.redirects.len() as i64,
            body_hash: s.body().map(body_hash),
            origin_hash: s.origin_body().map(body_hash),
            cache: s.cache.clone(),
            since: if p.changed { now } else { row.map_or(now, |r| r.since) },
            trouble_since: p.trouble_since,
            checked_at: now,
        }
    }
}

/// Writes `rows` (distinct places), 32 to a statement.
pub async fn write_rows(conn: &mut sqlx::AnyConnection, rows: &[PlaceWrite]) -> Result<(), StoreError> {
    const COLUMNS: usize = 17;
    // Small statements: sqlx binds each SQLite parameter by looking its
    // name up among all of them, so a statement's binding costs the square
    // of its parameters (perf: at 500 rows, a tenth of `once`'s time).
    for chunk in rows.chunks(32) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                format!("({})", (1..=COLUMNS).map(|c| format!("${}", r * COLUMNS + c)).collect::<Vec<_>>().join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO places (site, place, kind, must, state, serves, summary, findings, flips, status, hops, \
             body_hash, origin_hash, cache, since, trouble_since, checked_at) VALUES {} \
             ON CONFLICT (site, place) DO UPDATE SET kind = excluded.kind, must = excluded.must, \
             state = excluded.state, serves = excluded.serves, summary = excluded.summary, \
             findings = excluded.findings, flips = excluded.flips, status = excluded.status, hops = excluded.hops, \
             body_hash = excluded.body_hash, origin_hash = excluded.origin_hash, cache = excluded.cache, \
             since = excluded.since, trouble_since = excluded.trouble_since, checked_at = excluded.checked_at",
            values.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for w in chunk {
            query = query
                .bind(w.site.clone())
                .bind(w.place.clone())
                .bind(w.kind)
                .bind(w.must)
                .bind(w.state.clone())
                .bind(w.serves)
                .bind(w.summary.clone())
                .bind(w.findings.clone())
                .bind(w.flips.clone())
                .bind(w.status)
                .bind(w.hops)
                .bind(w.body_hash.clone())
                .bind(w.origin_hash.clone())
                .bind(w.cache.clone())
                .bind(w.since)
                .bind(w.trouble_since)
                .bind(w.checked_at);
        }
        query.execute(&mut *conn).await.map_err(q("writing places"))?;
    }
    Ok(())
}

/// What one poll must write of a place, against its row.
#[derive(Clone, Debug)]
struct Plan {
    state: String,
    changed: bool,
    trouble_since: Option<i64>,
    /// The episode whose alert is due (its grace is over).
    due: Option<i64>,
    /// The place is back to what it must be after an episode.
    ended: bool,
    /// Only `checked_at` moves forward.
    touch: bool,
}

/// What to write of `s` against `row`; `None` when nothing.
fn plan(s: &Seen, row: Option<&PlaceRow>, now: i64) -> Option<Plan> {
    let state = s.state();
    let raising = !s.judgement.findings.is_empty();
    let changed = row.is_none_or(|r| r.state != state);
    let trouble_since = match (raising, row) {
        (false, _) => None,
        (true, Some(r)) => r.trouble_since.or(Some(now)),
        (true, None) => Some(now),
    };
    let due = trouble_since.filter(|t| now - t >= s.grace.as_millis() as i64);
    let ended = !raising && row.is_some_and(|r| r.trouble_since.is_some());
    let touch = row.is_some_and(|r| now - r.checked_at >= TOUCH_EVERY_MS);
    (changed || due.is_some() || ended || touch).then_some(Plan { state, changed, trouble_since, due, ended, touch })
}

/// One place fetched and judged in this poll.
struct Seen {
    place: String,
    kind: &'static str,
    must: Must,
    judgement: Judgement,
    /// The place's answer (for the edge, the public one).
    outcome: FetchOutcome,
    /// The origin's answer, for the edge.
    origin: Option<FetchOutcome>,
    /// What the place is judged against: the public answer for a
    /// variant, the origin's for the edge.
    canonical: FetchOutcome,
    cache: String,
    /// How long its findings may last before they alert.
    grace: Duration,
    /// What the report must say of how the origin was read.
    note: Option<String>,
}

impl Seen {
    fn body(&self) -> Option<&[u8]> {
        matches!(self.outcome.status, Some(200..=299)).then_some(self.outcome.body.as_slice())
    }

    fn origin_body(&self) -> Option<&[u8]> {
        self.origin.as_ref().filter(|o| matches!(o.status, Some(200..=299))).map(|o| o.body.as_slice())
    }

    /// The bodies `place_bodies` keeps of this answer: the edge's public
    /// body and a variant's canonical file are the site's own revisions;
    /// a file of a place's own and the origin's copy are kept here.
    fn kept_bodies(&self) -> Vec<&[u8]> {
        let own = self.kind != "edge" && !matches!(self.judgement.serves, Serves::Canonical { .. });
        [if own { self.body() } else { None }, self.origin_body()].into_iter().flatten().collect()
    }

    fn state(&self) -> String {
        let hash = |b: Option<&[u8]>| b.map(body_hash).unwrap_or_default();
        let status = self.outcome.status.map_or_else(|| "-".to_string(), |s| s.to_string());
        format!(
            "{}|{}|{status}|{}|{}",
            self.serves_key(),
            self.judgement.findings_key(),
            hash(self.body()),
            hash(self.origin_body())
        )
    }

    /// The edge could not be compared: no origin copy was read.
    fn unknown(&self) -> bool {
        self.kind == "edge" && self.origin.is_none()
    }

    /// What it serves, as a key; `unknown` for an edge with no origin copy
    /// to compare, which is never called the same.
    fn serves_key(&self) -> &'static str {
        if self.unknown() { "unknown" } else { self.judgement.serves.key() }
    }

    fn summary(&self) -> String {
        if self.unknown() {
            return self.note.clone().unwrap_or_else(|| "unknown: no origin copy to compare".into());
        }
        let mut s = self.judgement.serves.to_string();
        if let Some(note) = &self.note {
            let _ = write!(s, " ({note})");
        }
        s
    }

    fn findings(&self) -> String {
        self.judgement.findings.iter().map(|f| format!("{}: {f}\n", f.key())).collect()
    }

    fn flips(&self) -> String {
        self.judgement
            .flips
            .iter()
            .map(|f| format!("{} for {}: {} here, {} at the canonical place\n", f.url, f.agent, f.new, f.old))
            .collect()
    }
}

impl Monitor {
    /// Fetches and judges every other place of `site` against `public`
    /// (this poll's answer at its URL), records what changed and raises or
    /// resolves alerts. Sites without a `url:` have no public URL to vary.
    /// `first_sight`: the site was never polled before, so no place of it
    /// is on record and none is read.
    pub(crate) async fn check_places(
        &self,
        site: &Site,
        public: &Observation,
        first_sight: bool,
    ) -> Result<(), StoreError> {
        let Source::Url(url) = site.source() else { return Ok(()) };
        let variants = robotsgate_config::places::variants(&url, &site.variants);
        let edge = self.edge_wanted(site, public);
        if variants.is_empty() && !edge {
            return Ok(());
        }
        let agents = self.config().agents_of(site).to_vec();
        let mut urls: Vec<String> = Monitor::targets(site).into_iter().map(|t| t.url).collect();
        // The site's root too: a file that closes everything closes it.
        if let Ok(root) = reqwest::Url::parse(&url).and_then(|u| u.join("/")) {
            let root = root.to_string();
            if !urls.contains(&root) {
                urls.insert(0, root);
            }
        }
        // The variants and the edge's origin are requests to different
        // hosts: all at once, so that a poll lasts one fetch timeout more at
        // most, within the site's lease.
        let fetches = variants.iter().map(|v| self.fetch_variant(v, &url, public));
        let edge_fetch = async {
            match edge {
                true => self.fetch_edge(site, &url, public).await,
                false => None,
            }
        };
        let (mut seen, edge_seen): (Vec<Seen>, Option<Seen>) =
            tokio::join!(futures_util::future::join_all(fetches), edge_fetch);
        for (s, v) in seen.iter_mut().zip(&variants) {
            let ask = Ask { must: v.must, listed: v.listed, edge: false, urls: &urls, agents: &agents };
            s.judgement = rules::coverage::judge(&public.outcome, &s.outcome, false, &ask);
            s.grace = site.variants.grace;
        }
        if let Some(mut e) = edge_seen {
            if let Some(origin) = &e.origin {
                let ask = Ask { must: Must::Same, listed: true, edge: true, urls: &urls, agents: &agents };
                e.judgement = rules::coverage::judge(origin, &public.outcome, false, &ask);
            }
            seen.push(e);
        }
        let known = if first_sight { Vec::new() } else { rows(self.store().pool(), &site.name).await? };
        let now = now_ms();
        let plans: Vec<(&Seen, Option<&PlaceRow>, Plan)> = seen
            .iter()
            .filter_map(|s| {
                let row = known.iter().find(|r| r.place == s.place);
                plan(s, row, now).map(|p| (s, row, p))
            })
            .collect();
        // A place whose new row is all there is to write (a first sight
        // with nothing wrong, a touch) goes to the group commit with the
        // polls' writes; the rest (history, bodies, alerts) in one
        // transaction for the site.
        let (plain, full): (Vec<_>, Vec<_>) = plans.into_iter().partition(|(s, row, p)| {
            !p.ended && p.due.is_none() && (!p.changed || (row.is_none() && s.kept_bodies().is_empty()))
        });
        let writes = |list: &[(&Seen, Option<&PlaceRow>, Plan)]| -> Vec<PlaceWrite> {
            list.iter()
                .filter(|(_, _, p)| p.changed || p.touch)
                .map(|(s, row, p)| PlaceWrite::new(&site.name, s, *row, p, now))
                .collect()
        };
        let plain_rows = writes(&plain);
        if !plain_rows.is_empty() {
            self.batch().places(plain_rows).await?;
        }
        if full.is_empty() {
            return Ok(());
        }
        let plans = full;
        let mut tx = self.store().pool().begin().await.map_err(q("starting a site's places"))?;
        write_rows(&mut tx, &writes(&plans)).await?;
        let mut queued = Vec::new();
        for (s, row, p) in &plans {
            if let Some(subject) = self.record_place(&mut tx, site, s, *row, p, now).await? {
                queued.push((s.place.clone(), subject));
            }
        }
        tx.commit().await.map_err(q("committing a site's places"))?;
        for (place, subject) in queued {
            tracing::warn!(site = %site.name, %place, %subject, "alert queued for a place");
        }
        Ok(())
    }

    /// Whether to compare the edge with the origin on this poll.
    fn edge_wanted(&self, site: &Site, public: &Observation) -> bool {
        match site.edge.check {
            EdgeCheck::Off => false,
            EdgeCheck::On => true,
            EdgeCheck::Auto => site.edge.origin.is_some() || site.proxy.is_some() || public.through_cache(),
        }
    }

    async fn fetch_variant(&self, v: &Variant, canonical: &str, public: &Observation) -> Seen {
        let obs = self.fetcher().fetch_until(&v.url, &Validators::default(), canonical).await;
        let outcome = if obs.landed {
            // The chain reached the canonical URL: what it serves is what
            // this poll read there, after these hops.
            let mut o = public.outcome.clone();
            o.redirects = obs.outcome.redirects.clone();
            o
        } else {
            obs.outcome.clone()
        };
        let judgement = Judgement { serves: Serves::Canonical { hops: 0 }, findings: Vec::new(), flips: Vec::new() };
        let landed = obs.landed;
        let mut seen = Seen {
            place: v.origin.clone(),
            kind: "variant",
            must: v.must,
            judgement,
            outcome,
            origin: None,
            canonical: public.outcome.clone(),
            cache: cache_lines(&obs),
            grace: Duration::ZERO,
            note: None,
        };
        if landed {
            seen.note = Some("the chain reaches the canonical URL".into());
        }
        seen
    }

    /// The origin's copy, fetched as the site says: its `edge.origin`, the
    /// gateway's `proxy.origin`, or a cache-busting request.
    async fn fetch_edge(&self, site: &Site, url: &str, public: &Observation) -> Option<Seen> {
        let (origin, how) = if let Some(o) = &site.edge.origin {
            (self.fetcher().fetch(o, &Validators::default()).await, format!("origin read at {o}"))
        } else if let Some(p) = &site.proxy {
            let host = p.sni.clone().or_else(|| p.hosts.first().cloned()).unwrap_or_default();
            let at = crate::source::origin::OriginAddress { origin: &p.origin, host: &host, tls: p.origin_tls };
            (
                self.origins().fetch(&site.name, at, &Validators::default()).await,
                format!("origin read at the gateway's origin {}", p.origin),
            )
        } else {
            (self.fetcher().fetch_busting(url).await, "origin read with a cache-busting request".to_string())
        };
        let grace = site
            .edge
            .grace
            .unwrap_or_else(|| public.freshness().unwrap_or(site.edge.max_grace).min(site.edge.max_grace));
        let judgement = Judgement { serves: Serves::Canonical { hops: 0 }, findings: Vec::new(), flips: Vec::new() };
        let mut seen = Seen {
            place: EDGE.into(),
            kind: "edge",
            must: Must::Same,
            judgement,
            outcome: public.outcome.clone(),
            origin: Some(origin.outcome.clone()),
            canonical: origin.outcome.clone(),
            cache: cache_lines(public),
            grace,
            note: Some(how),
        };
        if site.edge.origin.is_none() && site.proxy.is_none() && origin.from_cache() {
            // The cache answered the busting request from its copy too: no
            // origin copy to compare, and the report says so.
            seen.origin = None;
            seen.judgement.serves = Serves::Canonical { hops: 0 };
            seen.note = Some(
                "unknown: the cache answered the cache-busting request from its copy; name the origin in `edge.origin`"
                    .into(),
            );
        }
        Some(seen)
    }

    /// Writes a place's new state (with its event and bodies) as `plan`
    /// says, and raises or resolves its alert, in the site's transaction;
    /// the subject of what it queued.
    async fn record_place(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        site: &Site,
        s: &Seen,
        row: Option<&PlaceRow>,
        plan: &Plan,
        now: i64,
    ) -> Result<Option<String>, StoreError> {
        let Plan { changed, due, ended, .. } = plan.clone();
        if changed {
            // The state the place leaves goes to its history; the current
            // one is the `places` row (so a first sight writes no event).
            if let Some(old) = row {
                sqlx::query(
                    "INSERT INTO place_events (site, place, at, state, summary, findings, status, body_hash, origin_hash, cache) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(&site.name)
                .bind(&s.place)
                .bind(old.since)
                .bind(&old.state)
                .bind(&old.summary)
                .bind(&old.findings)
                .bind(old.status)
                .bind(&old.body_hash)
                .bind(&old.origin_hash)
                .bind(&old.cache)
                .execute(&mut **tx)
                .await
                .map_err(q("writing a place's event"))?;
            }
            for body in s.kept_bodies() {
                sqlx::query(
                    "INSERT INTO place_bodies (site, hash, body, first_seen) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (site, hash) DO NOTHING",
                )
                .bind(&site.name)
                .bind(body_hash(body))
                .bind(body.to_vec())
                .bind(now)
                .execute(&mut **tx)
                .await
                .map_err(q("keeping a place's body"))?;
            }
        }
        let mut queued = None;
        if let Some(episode) = due {
            let claimed = sqlx::query(
                "INSERT INTO place_alerts (site, place, episode, raised_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING RETURNING id",
            )
            .bind(&site.name)
            .bind(&s.place)
            .bind(episode)
            .bind(now)
            .fetch_optional(&mut **tx)
            .await
            .map_err(q("claiming a place's alert"))?;
            if let Some(r) = claimed {
                let id: i64 = r.try_get("id").map_err(q("reading a place alert's id"))?;
                let alert = self.place_alert(site, s, episode, tx).await?;
                let severity =
                    if s.judgement.flips.is_empty() { AlertSeverity::Warning } else { AlertSeverity::Critical };
                let channels = self.channels_for(&site.name, severity);
                let a = QueuedAlert { alert: &alert, severity: severity.as_str(), channels: &channels, kind: "place" };
                queue_alert(tx, &site.name, -id, now, &a).await?;
                queued = Some(alert.0);
            }
        }
        if ended {
            let resolved = sqlx::query(
                "UPDATE place_alerts SET resolved_at = $1 WHERE site = $2 AND place = $3 AND resolved_at IS NULL RETURNING id",
            )
            .bind(now)
            .bind(&site.name)
            .bind(&s.place)
            .fetch_all(&mut **tx)
            .await
            .map_err(q("resolving a place's alert"))?;
            if let Some(r) = resolved.first() {
                let id: i64 = r.try_get("id").map_err(q("reading a place alert's id"))?;
                let since = row.and_then(|r| r.trouble_since);
                let notice = self.place_resolved(site, s, since);
                let channels = self.channels_for(&site.name, AlertSeverity::Critical);
                let a = QueuedAlert {
                    alert: &notice,
                    severity: AlertSeverity::Info.as_str(),
                    channels: &channels,
                    kind: "place-resolved",
                };
                queue_alert(tx, &site.name, -id, now, &a).await?;
                queued = Some(notice.0);
            }
        }
        Ok(queued)
    }

    /// The alert of a place off what it must be: (subject, text, HTML).
    async fn place_alert(
        &self,
        site: &Site,
        s: &Seen,
        since: i64,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    ) -> Result<(String, String, String), StoreError> {
        let findings: Vec<String> = s.judgement.findings.iter().map(ToString::to_string).collect();
        let first = findings.first().cloned().unwrap_or_default();
        let subject = match s.judgement.findings.first() {
            Some(rules::coverage::Finding::Stale) => {
                format!("[robotsgate] {}: the edge serves another robots.txt than the origin", site.name)
            }
            Some(f) if s.kind == "edge" => format!("[robotsgate] {}: the edge {}", site.name, f.short()),
            Some(f) => format!("[robotsgate] {}: {} {}", site.name, s.place, f.short()),
            None => format!("[robotsgate] {}: {} {}", site.name, s.place, s.judgement.serves.key()),
        };
        let mut text = String::new();
        let where_ = if s.kind == "edge" { "At the edge".to_string() } else { format!("At {}", s.place) };
        let _ = writeln!(text, "{where_}, crawlers get {}.", s.summary());
        for f in &findings {
            let _ = writeln!(text, "Finding: {f}.");
        }
        let _ = writeln!(text, "It must be {}. Since {}.", s.must, when(Some(since)));
        if s.kind == "edge" {
            let (edge_hash, origin_hash) = (s.body().map(body_hash), s.origin_body().map(body_hash));
            let edge_rev = match &edge_hash {
                Some(h) => revision_of(tx, &site.name, h).await?,
                None => None,
            };
            let origin_first = match &origin_hash {
                Some(h) => body_first_seen(tx, &site.name, h).await?,
                None => None,
            };
            let _ = writeln!(
                text,
                "\nThe edge serves {}.",
                match (&edge_hash, edge_rev) {
                    (Some(h), Some((id, at))) =>
                        format!("revision {id} ({}…, first seen {})", &h[..12.min(h.len())], when(Some(at))),
                    (Some(h), None) => format!("a body {}…", &h[..12.min(h.len())]),
                    (None, _) => s.judgement.serves.to_string(),
                }
            );
            let _ = writeln!(
                text,
                "The origin serves {}.",
                match (&origin_hash, origin_first) {
                    (Some(h), Some(at)) => format!("{}… since {}", &h[..12.min(h.len())], when(Some(at))),
                    (Some(h), None) => format!("{}…", &h[..12.min(h.len())]),
                    (None, _) => "no file".to_string(),
                }
            );
            if !s.cache.is_empty() {
                let _ = writeln!(text, "What the edge says of its cache:");
                for l in s.cache.lines() {
                    let _ = writeln!(text, "  {l}");
                }
            }
        }
        let flips = &s.judgement.flips;
        if flips.is_empty() {
            let _ = writeln!(text, "\nNo saved URL's verdict differs from the canonical place's.");
        } else {
            let _ = writeln!(text, "\nVerdicts that differ from the canonical place's ({}):", flips.len());
            for f in flips.iter().take(20) {
                let _ = writeln!(text, "  {} for {}: {} here; {} at the canonical place", f.url, f.agent, f.new, f.old);
            }
            if flips.len() > 20 {
                let _ = writeln!(text, "  and {} more", flips.len() - 20);
            }
        }
        let pins = site.pins(self.config().agents_of(site), self.catalogue());
        let canon = Policy::from_fetch(&s.canonical);
        let here = Policy::from_fetch(&s.outcome);
        let breaches = rules::gate::breaches(&canon, &here, &pins, &site.floor(self.catalogue()));
        if !breaches.is_empty() {
            let _ = writeln!(text, "\nWhat it breaks of what the site declares: {}.", rules::gate::summary(&breaches));
        }
        let link = self.console_url().map(|base| crate::links::site_page(base, &site.name));
        if let Some(link) = &link {
            let _ = writeln!(text, "\nIn the console: {link}");
        }
        let inner = format!("<p><strong>{}</strong></p><pre>{}</pre>", esc(&first), esc(&text));
        let severity = if flips.is_empty() { AlertSeverity::Warning } else { AlertSeverity::Critical };
        Ok((subject, text, crate::letter::page(severity, &inner, link.as_deref())))
    }

    /// The notice that a place is what it must be again.
    fn place_resolved(&self, site: &Site, s: &Seen, since: Option<i64>) -> (String, String, String) {
        let what = if s.kind == "edge" {
            "the edge and the origin agree again".to_string()
        } else {
            format!("{} is what it must be again", s.place)
        };
        let subject = format!("[robotsgate] {}: resolved: {what}", site.name);
        let text = format!(
            "Resolved: {what}. Crawlers get {} there.\nOff since {}, until {}.\n",
            s.summary(),
            when(since),
            when(Some(now_ms()))
        );
        let link = self.console_url().map(|base| crate::links::site_page(base, &site.name));
        let inner = format!("<p><strong>{}</strong></p>", esc(&text));
        (subject, text, crate::letter::page(AlertSeverity::Info, &inner, link.as_deref()))
    }
}

async fn revision_of(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    site: &str,
    hash: &str,
) -> Result<Option<(i64, i64)>, StoreError> {
    let row = sqlx::query("SELECT id, first_seen FROM revisions WHERE site = $1 AND hash = $2")
        .bind(site)
        .bind(hash)
        .fetch_optional(&mut **tx)
        .await
        .map_err(q("reading a revision"))?;
    row.map(|r| Ok((r.try_get("id")?, r.try_get("first_seen")?))).transpose().map_err(q("reading a revision"))
}

async fn body_first_seen(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    site: &str,
    hash: &str,
) -> Result<Option<i64>, StoreError> {
    let row = sqlx::query("SELECT first_seen FROM place_bodies WHERE site = $1 AND hash = $2")
        .bind(site)
        .bind(hash)
        .fetch_optional(&mut **tx)
        .await
        .map_err(q("reading a place's body"))?;
    row.map(|r| r.try_get("first_seen")).transpose().map_err(q("reading a place's body"))
}

fn cache_lines(obs: &Observation) -> String {
    obs.cache.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}
