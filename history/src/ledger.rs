//! The compliance ledger's rows, as both daemons write them: the monitor
//! from access logs, a gateway from the requests it served. Rows grow with
//! distinct facts (site, crawler, identity answer, revision, deciding line,
//! class, UTC day), never with requests: each write adds counts to its row,
//! so writers on one database (replicas, imports) each add what they saw.

use std::collections::HashMap;

use sqlx::{AnyConnection, AnyPool, Row as _};

/// Most sample URLs a row keeps.
pub const SAMPLES: usize = 5;

/// What makes a ledger row.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The crawler's catalogue token.
    pub crawler: String,
    /// `verified`, `unverifiable`, `pending` or `spoofed`.
    pub identity: &'static str,
    /// The revision that decided (0: none).
    pub revision: i64,
    /// The deciding line (0: none).
    pub line: i64,
    /// The status that decided, when no file did (0: none).
    pub status: i64,
    /// `obeyed`, `grace` or `violation`.
    pub class: &'static str,
    /// The UTC day (days since 1970-01-01).
    pub day: i64,
}

impl Key {
    /// Binds the key's seven columns, in the ledger's order (crawler,
    /// identity, revision_id, line, status, class, day), to the next
    /// placeholders of `query`: one order for every table keyed alike.
    pub fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
        query
            .bind(&self.crawler)
            .bind(self.identity)
            .bind(self.revision)
            .bind(self.line)
            .bind(self.status)
            .bind(self.class)
            .bind(self.day)
    }
}

/// A row's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests.
    pub requests: i64,
    /// Of them, judged with a stale fetch.
    pub stale: i64,
    /// The first (Unix ms).
    pub first_at: i64,
    /// The last (Unix ms).
    pub last_at: i64,
    /// Up to [`SAMPLES`] URLs.
    pub samples: Vec<String>,
}

impl Tally {
    /// Counts one request at `at` for `url`.
    pub fn add(&mut self, at: i64, url: &str, stale: bool) {
        if self.requests == 0 || at < self.first_at {
            self.first_at = at;
        }
        self.last_at = self.last_at.max(at);
        self.requests += 1;
        self.stale += i64::from(stale);
        if self.samples.len() < SAMPLES && !self.samples.iter().any(|s| s == url) {
            // One sample a line, so a URL cannot carry a line end.
            self.samples.push(url.replace(['\n', '\r'], " "));
        }
    }
}

impl Tally {
    /// Adds `other`'s counts to this one's.
    pub fn merge(&mut self, other: &Tally) {
        if other.requests == 0 {
            return;
        }
        if self.requests == 0 || other.first_at < self.first_at {
            self.first_at = other.first_at;
        }
        self.last_at = self.last_at.max(other.last_at);
        self.requests += other.requests;
        self.stale += other.stale;
        for s in &other.samples {
            if self.samples.len() < SAMPLES && !self.samples.contains(s) {
                self.samples.push(s.clone());
            }
        }
    }
}

/// A crawler's robots.txt fetch, as the ledger keeps its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// When (Unix ms).
    pub at: i64,
    /// Order within the millisecond.
    pub seq: i64,
    /// The revision it got (0: none, a status).
    pub revision: i64,
    /// The status it got.
    pub status: i64,
}

impl Read {
    /// A read whose content is unknown: a 200 or 304 with no revision, as
    /// an import records a crawler's robots.txt fetch from before the first
    /// robots.txt anyone recorded. It shows the fetch was made; it judges
    /// nothing.
    pub fn content_unknown(&self) -> bool {
        self.revision == 0 && matches!(self.status, 200 | 304)
    }
}

/// Adds `rows` for `site` to the ledger.
pub async fn write_rows(conn: &mut AnyConnection, site: &str, rows: &HashMap<Key, Tally>) -> Result<(), sqlx::Error> {
    let mut ordered: Vec<(&Key, &Tally)> = rows.iter().collect();
    // One order for every writer: concurrent imports lock rows alike.
    ordered.sort_by(|a, b| a.0.cmp(b.0));
    for (k, t) in ordered {
        let samples: String = t.samples.iter().map(|s| format!("{s}\n")).collect();
        let query = sqlx::query(
            "INSERT INTO ledger (site, crawler, identity, revision_id, line, status, class, day, requests, stale, \
             first_at, last_at, samples, sample_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
             ON CONFLICT (site, crawler, identity, revision_id, line, status, class, day) DO UPDATE SET \
             requests = ledger.requests + excluded.requests, stale = ledger.stale + excluded.stale, \
             first_at = CASE WHEN excluded.first_at < ledger.first_at THEN excluded.first_at ELSE ledger.first_at END, \
             last_at = CASE WHEN excluded.last_at > ledger.last_at THEN excluded.last_at ELSE ledger.last_at END, \
             samples = CASE WHEN ledger.sample_count >= 5 THEN ledger.samples ELSE ledger.samples || excluded.samples END, \
             sample_count = CASE WHEN ledger.sample_count >= 5 THEN ledger.sample_count \
             ELSE ledger.sample_count + excluded.sample_count END",
        )
        .bind(site);
        k.bind(query)
            .bind(t.requests)
            .bind(t.stale)
            .bind(t.first_at)
            .bind(t.last_at)
            .bind(samples)
            .bind(t.samples.len() as i64)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Records crawlers' robots.txt fetches; an older one never replaces a newer.
pub async fn write_reads(
    conn: &mut AnyConnection,
    site: &str,
    reads: &HashMap<String, Read>,
) -> Result<(), sqlx::Error> {
    let mut ordered: Vec<(&String, &Read)> = reads.iter().collect();
    ordered.sort_by(|a, b| a.0.cmp(b.0));
    for (crawler, r) in ordered {
        sqlx::query(
            "INSERT INTO crawler_reads (site, crawler, at, seq, revision_id, status) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (site, crawler) DO UPDATE SET at = excluded.at, seq = excluded.seq, \
             revision_id = excluded.revision_id, status = excluded.status \
             WHERE crawler_reads.at < excluded.at OR (crawler_reads.at = excluded.at AND crawler_reads.seq < excluded.seq)",
        )
        .bind(site)
        .bind(crawler)
        .bind(r.at)
        .bind(r.seq)
        .bind(r.revision)
        .bind(r.status)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Every crawler's last robots.txt read on `site`, by token.
pub async fn reads(pool: &AnyPool, site: &str) -> Result<HashMap<String, Read>, sqlx::Error> {
    let rows = sqlx::query("SELECT crawler, at, seq, revision_id, status FROM crawler_reads WHERE site = $1")
        .bind(site)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get::<String, _>("crawler")?,
                Read {
                    at: r.try_get("at")?,
                    seq: r.try_get("seq")?,
                    revision: r.try_get("revision_id")?,
                    status: r.try_get("status")?,
                },
            ))
        })
        .collect()
}

/// The body of revision `id` of `site`, if there is one.
pub async fn revision_body(pool: &AnyPool, site: &str, id: i64) -> Result<Option<Vec<u8>>, sqlx::Error> {
    let row = sqlx::query("SELECT body FROM revisions WHERE site = $1 AND id = $2")
        .bind(site)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    row.map(|r| r.try_get::<Vec<u8>, _>("body")).transpose()
}

/// The sequence number through which a gateway's ledger journal is
/// counted, if any of it is.
pub async fn journal_counted(pool: &AnyPool, journal: &str) -> Result<Option<i64>, sqlx::Error> {
    let row = sqlx::query("SELECT counted_through FROM ledger_journals WHERE journal = $1")
        .bind(journal)
        .fetch_optional(pool)
        .await?;
    row.map(|r| r.try_get::<i64, _>("counted_through")).transpose()
}

/// Marks a journal counted through `seq`, in the transaction that adds
/// those counts; a mark never moves back.
pub async fn mark_journal(conn: &mut AnyConnection, journal: &str, seq: i64, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO ledger_journals (journal, counted_through, at) VALUES ($1, $2, $3) \
         ON CONFLICT (journal) DO UPDATE SET counted_through = excluded.counted_through, at = excluded.at \
         WHERE ledger_journals.counted_through < excluded.counted_through",
    )
    .bind(journal)
    .bind(seq)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
