//! The history, in SQL: sites and their leases, revisions (deduplicated by
//! hash), fetches, states, verdicts and the alert outbox. The same queries
//! run on embedded SQLite and on PostgreSQL through sqlx's `Any` driver;
//! only the migrations differ (`migrations/sqlite`, `migrations/postgres`).

use std::path::Path;

use sqlx::any::AnyRow;
use sqlx::{AnyPool, FromRow, Row};

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Open(#[from] robotsgate_history::OpenError),
    /// Other monitors kept recording states of this site while this poll
    /// tried to record its own; the site is polled again shortly.
    #[error("site `{0}` kept changing under other monitors")]
    Contended(String),
    /// A query failed.
    #[error("database error while {doing}: {source}")]
    Query {
        /// What the store was doing.
        doing: &'static str,
        /// The driver's error.
        source: sqlx::Error,
    },
}

/// Names what the store was doing when a query failed: the one way every
/// query in the monitor, the ledger and the console maps its error
/// (`.map_err(q("reading sites"))`).
pub fn q(doing: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |source| StoreError::Query { doing, source }
}

pub use robotsgate_history::Backend;

/// The history database.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// The engine behind it.
    pub backend: Backend,
}

/// A site's row.
#[derive(Clone, Debug, Default)]
pub struct SiteRow {
    /// ETag of the last 200, for conditional requests.
    pub etag: Option<String>,
    /// Last-Modified of the last 200.
    pub last_modified: Option<String>,
    /// The current state, if any observation was recorded.
    pub state_id: Option<i64>,
    /// Its key (see `change::state_key`).
    pub state_key: Option<String>,
    /// The site's current run of identical fetch outcomes, and its key
    /// (see `PollRecord::run_key`).
    pub run: Option<(i64, String)>,
}

/// One recorded state.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StateRow {
    /// Its id.
    pub id: i64,
    /// When it began (Unix ms).
    pub at: i64,
    /// The revision, when the state is a file's rules.
    pub revision_id: Option<i64>,
    /// `rules`, `allow-all` or `disallow-all`.
    pub policy: String,
    /// Why, for the last two.
    pub reason: Option<String>,
    /// When the outage's critical alert was queued, if it was.
    pub escalated_at: Option<i64>,
}

/// One stored verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerdictRow {
    /// The URL.
    pub url: String,
    /// The crawler.
    pub agent: String,
    /// The verdict.
    pub allowed: bool,
    /// The deciding line, if a rule decided.
    pub line: Option<i64>,
    /// The deciding rule as `Kind: pattern`, if any.
    pub rule: Option<String>,
}

/// The `next_attempt_at` of an alert the mail server refused for good
/// (an SMTP 5xx): never due again. It stays in the outbox, unsent, with
/// the server's reply in `last_error`, for the alerts page to show.
pub const GIVEN_UP: i64 = i64::MAX / 2;

/// An alert waiting in the outbox.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AlertRow {
    /// Its id.
    pub id: i64,
    /// The site.
    pub site: String,
    /// Email subject.
    pub subject: String,
    /// Plain-text body.
    pub body_text: String,
    /// HTML body.
    pub body_html: String,
    /// Delivery attempts so far.
    pub attempts: i64,
}

/// Everything one poll writes, committed in one transaction.
#[derive(Clone, Debug)]
pub struct PollRecord {
    /// The site.
    pub site: String,
    /// When the fetch ended (Unix ms).
    pub at: i64,
    /// HTTP status, if any.
    pub status: Option<i64>,
    /// Transport error, if any.
    pub error: Option<String>,
    /// Fetch latency.
    pub latency_ms: i64,
    /// Redirects followed.
    pub redirects: i64,
    /// The body was cut at the fetcher's cap.
    pub truncated: bool,
    /// The body, when the fetch gave one worth keeping (2xx).
    pub body: Option<Vec<u8>>,
    /// For conditional requests next time.
    pub etag: Option<String>,
    /// For conditional requests next time.
    pub last_modified: Option<String>,
    /// When this site is due again (Unix ms).
    pub next_poll_at: i64,
    /// The site's run of fetch outcomes as the poll read it.
    pub run: Option<(i64, String)>,
    /// The body is this stored revision's, and its `last_seen` was moved
    /// forward recently enough: nothing to write for it.
    pub known_revision: Option<i64>,
}

/// A new state to record with its verdicts and, maybe, an alert.
#[derive(Clone, Debug)]
pub struct NewState {
    /// The state it follows, as this poll read it (`None` for a site's
    /// first). The change is recorded only if that is still the site's
    /// current state when the transaction commits.
    pub previous: Option<i64>,
    /// Its key (see `change::state_key`).
    pub key: String,
    /// The state is the rules of the body being recorded.
    pub with_revision: bool,
    /// `rules`, `allow-all` or `disallow-all`.
    pub policy: String,
    /// Why, for the last two.
    pub reason: Option<String>,
    /// The verdict of every URL x crawler under it.
    pub verdicts: Vec<VerdictRow>,
    /// The alert to send, if the change is worth one: (subject, text, html).
    pub alert: Option<(String, String, String)>,
    /// How much the alert matters: `critical`, `warning` or `info`.
    pub severity: &'static str,
    /// The channels (besides email) the alert goes to.
    pub channels: Vec<String>,
    /// The outcome (body hash or `status:NNN`) when the change is one the
    /// gate holds at the edge: its alert is the hold's, raised once whether
    /// this poll or a gateway's hold record comes first
    /// (`robotsgate_history::gate::claim_alert`).
    pub held_outcome: Option<String>,
}

/// A site's fetches in one UTC day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchDay {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    /// Fetches that day.
    pub fetches: i64,
    /// The slowest fetch that day.
    pub slowest_ms: i64,
    /// Each outcome (a status such as `200`, or a transport error) and how
    /// many fetches ended so.
    pub outcomes: Vec<(String, i64)>,
}

/// What a committed poll produced.
#[derive(Clone, Debug, Default)]
pub struct Committed {
    /// The revision of the body, if it had one.
    pub revision_id: Option<i64>,
    /// Whether that revision was new.
    pub new_revision: bool,
    /// The state recorded, if the state changed.
    pub state_id: Option<i64>,
    /// Whether an alert was queued.
    pub alerted: bool,
    /// The run of fetch outcomes the fetch joined, for the next poll.
    pub run: Option<(i64, String)>,
}

impl Store {
    /// Opens (creating if needed) and migrates the database: a
    /// `postgres://` URL, or a SQLite file path relative to `base`.
    pub async fn open(database: &str, base: &Path) -> Result<Store, StoreError> {
        let db = robotsgate_history::open(database, base, robotsgate_history::Options::default()).await?;
        Ok(Store { pool: db.pool, backend: db.backend })
    }

    /// The pool, for read-only views (the console) that keep their queries
    /// beside the pages that use them.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Makes sure every configured site has a row.
    pub async fn ensure_sites(&self, names: &[&str]) -> Result<(), StoreError> {
        // Many rows a statement: one round trip a site was a tenth of a
        // `once` over 10,000 sites.
        for chunk in names.chunks(500) {
            let rows: Vec<String> = (1..=chunk.len()).map(|i| format!("(${i})")).collect();
            let sql = format!("INSERT INTO sites (name) VALUES {} ON CONFLICT (name) DO NOTHING", rows.join(", "));
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for name in chunk {
                insert = insert.bind(name.to_string());
            }
            insert.execute(&self.pool).await.map_err(q("adding sites"))?;
        }
        Ok(())
    }

    /// Gives a lease back without recording a poll (the poll failed).
    pub async fn release(&self, site: &str, next_poll_at: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sites SET leased_until = 0, leased_by = NULL, next_poll_at = $1 WHERE name = $2")
            .bind(next_poll_at)
            .bind(site)
            .execute(&self.pool)
            .await
            .map_err(q("releasing a site"))?;
        Ok(())
    }

    /// When the earliest site is due (Unix ms).
    pub async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query("SELECT MIN(next_poll_at) AS due FROM sites")
            .fetch_one(&self.pool)
            .await
            .map_err(q("finding the next due site"))?;
        row.try_get::<Option<i64>, _>("due").map_err(q("reading the next due time"))
    }

    /// A site's row.
    pub async fn site(&self, site: &str) -> Result<SiteRow, StoreError> {
        let row =
            sqlx::query("SELECT etag, last_modified, state_id, state_key, run_id, run_key FROM sites WHERE name = $1")
                .bind(site)
                .fetch_optional(&self.pool)
                .await
                .map_err(q("reading a site"))?;
        row.map(|r| site_row(&r)).transpose().map(Option::unwrap_or_default).map_err(q("reading a site"))
    }

    /// A revision's body.
    pub async fn revision_body(&self, site: &str, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        let row = sqlx::query("SELECT body FROM revisions WHERE site = $1 AND id = $2")
            .bind(site)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(q("reading a revision"))?;
        row.map(|r| r.try_get::<Vec<u8>, _>("body")).transpose().map_err(q("reading a revision body"))
    }

    /// The id of `site`'s revision whose body hashes to `hash`, if recorded.
    pub async fn revision_by_hash(&self, site: &str, hash: &str) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query("SELECT id FROM revisions WHERE site = $1 AND hash = $2")
            .bind(site)
            .bind(hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(q("finding a revision by its hash"))?;
        row.map(|r| r.try_get::<i64, _>("id")).transpose().map_err(q("finding a revision by its hash"))
    }

    /// The revision a state points at.
    pub async fn state(&self, id: i64) -> Result<Option<StateRow>, StoreError> {
        let row = sqlx::query("SELECT id, at, revision_id, policy, reason, escalated_at FROM states WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(q("reading a state"))?;
        row.map(|r| StateRow::from_row(&r)).transpose().map_err(q("reading a state"))
    }

    /// The HTTP status of `site`'s fetch at `at` (Unix ms), if that fetch
    /// is still kept and had one: what began the state recorded then.
    pub async fn status_at(&self, site: &str, at: i64) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query("SELECT status FROM fetches WHERE site = $1 AND at = $2 ORDER BY id LIMIT 1")
            .bind(site)
            .bind(at)
            .fetch_optional(&self.pool)
            .await
            .map_err(q("reading a fetch's status"))?;
        row.map(|r| r.try_get::<Option<i64>, _>("status"))
            .transpose()
            .map(Option::flatten)
            .map_err(q("reading a status"))
    }

    /// Queues the critical alert of an outage that outlasted
    /// `critical_after`, unless one was queued for `state_id` already (by
    /// this monitor or another sharing the database). Returns whether this
    /// call queued it.
    pub async fn escalate(&self, site: &str, state_id: i64, at: i64, a: &QueuedAlert<'_>) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(q("starting an escalation"))?;
        let marked = sqlx::query("UPDATE states SET escalated_at = $1 WHERE id = $2 AND escalated_at IS NULL")
            .bind(at)
            .bind(state_id)
            .execute(&mut *tx)
            .await
            .map_err(q("marking an outage escalated"))?;
        if marked.rows_affected() != 1 {
            return Ok(false);
        }
        queue_alert(&mut tx, site, state_id, at, a).await?;
        tx.commit().await.map_err(q("committing an escalation"))?;
        Ok(true)
    }

    /// Claims the oldest alert due for delivery, for `lease_ms`, so that
    /// monitors sharing the database do not send it twice at once.
    pub async fn claim_alert(&self, now: i64, lease_ms: i64) -> Result<Option<AlertRow>, StoreError> {
        let rows =
            sqlx::query("SELECT id FROM alerts WHERE sent_at IS NULL AND next_attempt_at <= $1 ORDER BY id LIMIT 5")
                .bind(now)
                .fetch_all(&self.pool)
                .await
                .map_err(q("finding due alerts"))?;
        for row in rows {
            let id: i64 = row.try_get("id").map_err(q("reading an alert id"))?;
            let claimed = sqlx::query(
                "UPDATE alerts SET next_attempt_at = $1 WHERE id = $2 AND sent_at IS NULL AND next_attempt_at <= $3",
            )
            .bind(now + lease_ms)
            .bind(id)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(q("claiming an alert"))?;
            if claimed.rows_affected() == 1 {
                return sqlx::query_as::<_, AlertRow>(
                    "SELECT id, site, subject, body_text, body_html, attempts FROM alerts WHERE id = $1",
                )
                .bind(id)
                .fetch_one(&self.pool)
                .await
                .map(Some)
                .map_err(q("reading an alert"));
            }
        }
        Ok(None)
    }

    /// Marks an alert delivered.
    pub async fn alert_sent(&self, id: i64, now: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE alerts SET sent_at = $1, attempts = attempts + 1, last_error = NULL WHERE id = $2")
            .bind(now)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(q("marking an alert sent"))?;
        Ok(())
    }

    /// Marks every alert due and never tried as waiting on `error` (the
    /// mail server failed on another alert, so they were not tried), so
    /// the alerts page says why they sit in the queue.
    pub async fn alerts_waiting(&self, error: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE alerts SET last_error = $1 WHERE sent_at IS NULL AND attempts = 0 AND next_attempt_at <= $2",
        )
        .bind(error)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(q("marking alerts waiting"))?;
        Ok(())
    }

    /// Records a failed delivery and when to try again ([`GIVEN_UP`]: never).
    pub async fn alert_failed(&self, id: i64, error: &str, retry_at: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE alerts SET attempts = attempts + 1, last_error = $1, next_attempt_at = $2 WHERE id = $3")
            .bind(error)
            .bind(retry_at)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(q("recording a failed delivery"))?;
        Ok(())
    }

    /// Every state of a site, oldest first.
    pub async fn history(&self, site: &str) -> Result<Vec<StateRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, at, revision_id, policy, reason, escalated_at FROM states WHERE site = $1 ORDER BY at, id",
        )
        .bind(site)
        .fetch_all(&self.pool)
        .await
        .map_err(q("reading history"))?;
        rows.iter().map(StateRow::from_row).collect::<Result<_, _>>().map_err(q("reading history"))
    }

    /// The verdicts recorded for a state.
    pub async fn verdicts(&self, state_id: i64) -> Result<Vec<VerdictRow>, StoreError> {
        let rows =
            sqlx::query("SELECT url, agent, allowed, line, rule FROM verdicts WHERE state_id = $1 ORDER BY url, agent")
                .bind(state_id)
                .fetch_all(&self.pool)
                .await
                .map_err(q("reading verdicts"))?;
        let read = |r: &AnyRow| -> Result<VerdictRow, sqlx::Error> {
            Ok(VerdictRow {
                url: r.try_get("url")?,
                agent: r.try_get("agent")?,
                allowed: r.try_get::<i64, _>("allowed")? != 0,
                line: r.try_get("line")?,
                rule: r.try_get("rule")?,
            })
        };
        rows.iter().map(read).collect::<Result<_, _>>().map_err(q("reading verdicts"))
    }

    /// Revision ids of a site, oldest first.
    pub async fn revisions(&self, site: &str) -> Result<Vec<(i64, i64, i64)>, StoreError> {
        let rows = sqlx::query("SELECT id, first_seen, size FROM revisions WHERE site = $1 ORDER BY id")
            .bind(site)
            .fetch_all(&self.pool)
            .await
            .map_err(q("listing revisions"))?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("first_seen")?, r.try_get("size")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(q("listing revisions"))
    }

    /// Sites due at `now` and not leased, at most `limit`.
    pub async fn due_sites(&self, now: i64, limit: i64) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT name FROM sites WHERE next_poll_at <= $1 AND leased_until <= $1 ORDER BY next_poll_at LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(q("finding due sites"))?;
        rows.iter().map(|r| r.try_get("name")).collect::<Result<_, _>>().map_err(q("finding due sites"))
    }

    /// Deletes fetch runs that ended before `before` (Unix ms), and the
    /// daily counts of days wholly before it.
    pub async fn prune_fetches(&self, before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM fetches WHERE COALESCE(last_at, at) < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(q("pruning fetches"))?;
        let days = sqlx::query("DELETE FROM fetch_days WHERE day < $1")
            .bind(before.div_euclid(DAY_MS))
            .execute(&self.pool)
            .await
            .map_err(q("pruning daily fetch counts"))?;
        Ok(done.rows_affected() + days.rows_affected())
    }

    /// A site's fetches per UTC day since `from` (Unix ms), oldest first:
    /// how many, which outcomes, and the slowest.
    pub async fn fetch_days(&self, site: &str, from: i64) -> Result<Vec<FetchDay>, StoreError> {
        let rows = sqlx::query(
            "SELECT day, outcome, fetches, max_latency_ms FROM fetch_days WHERE site = $1 AND day >= $2 ORDER BY day, outcome",
        )
        .bind(site)
        .bind(from.div_euclid(DAY_MS))
        .fetch_all(&self.pool)
        .await
        .map_err(q("reading daily fetch counts"))?;
        let mut days: Vec<FetchDay> = Vec::new();
        for r in &rows {
            let read = || -> Result<(i64, String, i64, i64), sqlx::Error> {
                Ok((r.try_get("day")?, r.try_get("outcome")?, r.try_get("fetches")?, r.try_get("max_latency_ms")?))
            };
            let (day, outcome, fetches, slowest) = read().map_err(q("reading daily fetch counts"))?;
            match days.last_mut() {
                Some(d) if d.day == day => {
                    d.fetches += fetches;
                    d.slowest_ms = d.slowest_ms.max(slowest);
                    d.outcomes.push((outcome, fetches));
                }
                _ => days.push(FetchDay { day, fetches, slowest_ms: slowest, outcomes: vec![(outcome, fetches)] }),
            }
        }
        Ok(days)
    }
}

/// Adds one fetch to the site's history: it lengthens the site's current
/// run when the outcome is the same, or starts a new run; and it counts the
/// fetch in its UTC day. Returns the run (id and key) the fetch is in.
/// One UTC day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

impl PollRecord {
    /// What makes two fetches one run: the same status, error, revision,
    /// redirect count and truncation.
    pub fn run_key(&self, revision_id: Option<i64>) -> String {
        let opt = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        format!(
            "{}|{}|{}|{}|{}",
            opt(self.status),
            self.error.as_deref().unwrap_or("-"),
            opt(revision_id),
            self.redirects,
            u8::from(self.truncated)
        )
    }

    /// How a fetch ended, as `fetch_days` groups it: the status, or the
    /// transport error.
    pub fn outcome(&self) -> String {
        match (self.status, &self.error) {
            (Some(s), _) => s.to_string(),
            (None, Some(e)) => e.clone(),
            (None, None) => "error".to_string(),
        }
    }
}

pub(crate) fn site_row(row: &AnyRow) -> Result<SiteRow, sqlx::Error> {
    let run_id: Option<i64> = row.try_get("run_id")?;
    let run_key: Option<String> = row.try_get("run_key")?;
    Ok(SiteRow {
        etag: row.try_get("etag")?,
        last_modified: row.try_get("last_modified")?,
        state_id: row.try_get("state_id")?,
        state_key: row.try_get("state_key")?,
        run: run_id.zip(run_key),
    })
}

/// An alert to queue: its (subject, text, html), severity and channels.
#[derive(Debug)]
pub struct QueuedAlert<'a> {
    /// (subject, plain text, HTML).
    pub alert: &'a (String, String, String),
    /// `critical`, `warning` or `info`.
    pub severity: &'a str,
    /// The channels (besides email) it is delivered to one by one.
    pub channels: &'a [String],
    /// `change` or `escalation`: a state has at most one of each.
    pub kind: &'a str,
}

/// Queues an alert about `state_id` and its channel deliveries, in the
/// caller's transaction.
pub async fn queue_alert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    site: &str,
    state_id: i64,
    at: i64,
    a: &QueuedAlert<'_>,
) -> Result<i64, StoreError> {
    let (subject, text, html) = a.alert;
    let row = sqlx::query(
        "INSERT INTO alerts (site, state_id, created_at, subject, body_text, body_html, next_attempt_at, severity, kind) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(site)
    .bind(state_id)
    .bind(at)
    .bind(subject)
    .bind(text)
    .bind(html)
    .bind(at)
    .bind(a.severity)
    .bind(a.kind)
    .fetch_one(&mut **tx)
    .await
    .map_err(q("queueing an alert"))?;
    let alert_id: i64 = row.try_get("id").map_err(q("reading an alert id"))?;
    for channel in a.channels {
        sqlx::query("INSERT INTO deliveries (alert_id, channel, next_attempt_at) VALUES ($1, $2, $3)")
            .bind(alert_id)
            .bind(channel)
            .bind(at)
            .execute(&mut **tx)
            .await
            .map_err(q("queueing a delivery"))?;
    }
    Ok(alert_id)
}

pub use robotsgate_history::body_hash;
