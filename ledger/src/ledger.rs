//! The ledger's SQL (SQLite and PostgreSQL alike): batches of judged
//! requests upserted as counts, crawlers' last robots.txt reads, how far
//! each log file was read, and retention. An import writes a batch, its
//! reads and its file's offset in one transaction, so a kill at any moment
//! loses and doubles nothing.

use std::collections::HashMap;

use sqlx::AnyConnection;
use sqlx::Row as _;

pub use robotsgate_history::ledger::{Key, Read, SAMPLES, Tally, write_reads, write_rows};

use monitor::store::{Store, StoreError, q};

/// Every crawler's last robots.txt read on `site`.
pub async fn reads(store: &Store, site: &str) -> Result<HashMap<String, Read>, StoreError> {
    robotsgate_history::ledger::reads(store.pool(), site).await.map_err(q("reading robots.txt reads"))
}

/// How far a log file was read, and what it held so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileState {
    /// Bytes read (of the decompressed text).
    pub read_bytes: i64,
    /// Lines read.
    pub lines: i64,
    /// Crawler requests judged.
    pub judged: i64,
    /// Lines whose request is no HTTP request line.
    pub not_http: i64,
    /// Lines not of the format.
    pub malformed: i64,
    /// Requests before this time (Unix ms) were judged with no known state
    /// (unjudged); `None` for a file read before this was kept.
    pub unjudged_before: Option<i64>,
}

/// The state of file `file_id` of `site`, if it was read before.
pub async fn file_state(store: &Store, site: &str, file_id: &str) -> Result<FileState, StoreError> {
    let row = sqlx::query(
        "SELECT read_bytes, lines, judged, not_http, malformed, unjudged_before FROM log_files WHERE site = $1 AND file_id = $2",
    )
    .bind(site)
    .bind(file_id)
    .fetch_optional(store.pool())
    .await
    .map_err(q("reading a log file's offset"))?;
    let Some(r) = row else { return Ok(FileState::default()) };
    let read = || -> Result<FileState, sqlx::Error> {
        Ok(FileState {
            read_bytes: r.try_get("read_bytes")?,
            lines: r.try_get("lines")?,
            judged: r.try_get("judged")?,
            not_http: r.try_get("not_http")?,
            malformed: r.try_get("malformed")?,
            unjudged_before: r.try_get("unjudged_before")?,
        })
    };
    read().map_err(q("reading a log file's offset"))
}

/// Records how far file `file_id` was read, if it was read only to
/// `from` before (a compare-and-set on the offset): `false` when another
/// import moved it meanwhile, and nothing was written.
#[allow(clippy::too_many_arguments)]
pub async fn write_file(
    conn: &mut AnyConnection,
    site: &str,
    file_id: &str,
    path: &str,
    from: i64,
    state: &FileState,
    now: i64,
) -> Result<bool, StoreError> {
    // A file seen for the first time is inserted; one seen before is
    // updated only if its offset is still where this batch began.
    let done = sqlx::query(
        "INSERT INTO log_files (site, file_id, path, read_bytes, lines, judged, not_http, malformed, updated_at, unjudged_before) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11) \
         ON CONFLICT (site, file_id) DO UPDATE SET path = excluded.path, \
         read_bytes = excluded.read_bytes, lines = excluded.lines, judged = excluded.judged, \
         not_http = excluded.not_http, malformed = excluded.malformed, updated_at = excluded.updated_at, \
         unjudged_before = excluded.unjudged_before \
         WHERE log_files.read_bytes = $10",
    )
    .bind(site)
    .bind(file_id)
    .bind(path)
    .bind(state.read_bytes)
    .bind(state.lines)
    .bind(state.judged)
    .bind(state.not_http)
    .bind(state.malformed)
    .bind(now)
    .bind(from)
    .bind(state.unjudged_before)
    .execute(&mut *conn)
    .await
    .map_err(q("recording a log file's offset"))?;
    Ok(done.rows_affected() == 1)
}

/// Keeps a sample of an unreadable line.
pub async fn write_bad_line(
    conn: &mut AnyConnection,
    site: &str,
    file_id: &str,
    line_no: i64,
    reason: &str,
    text: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO log_bad_lines (site, file_id, line_no, reason, text) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (site, file_id, line_no) DO NOTHING",
    )
    .bind(site)
    .bind(file_id)
    .bind(line_no)
    .bind(reason)
    .bind(text)
    .execute(&mut *conn)
    .await
    .map_err(q("keeping a bad line"))?;
    Ok(())
}

/// Records what one file's batch added to the ledger (its rows' counts),
/// so that [`forget_file`] can take them back.
pub async fn write_file_rows(
    conn: &mut AnyConnection,
    site: &str,
    file_id: &str,
    rows: &HashMap<Key, Tally>,
) -> Result<(), StoreError> {
    let mut ordered: Vec<(&Key, &Tally)> = rows.iter().collect();
    // The ledger's own order: concurrent imports lock rows alike.
    ordered.sort_by(|a, b| a.0.cmp(b.0));
    for (k, t) in ordered {
        let query = sqlx::query(
            "INSERT INTO log_file_rows (site, file_id, crawler, identity, revision_id, line, status, class, day, \
             requests, stale) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (site, file_id, crawler, identity, revision_id, line, status, class, day) DO UPDATE SET \
             requests = log_file_rows.requests + excluded.requests, stale = log_file_rows.stale + excluded.stale",
        )
        .bind(site)
        .bind(file_id);
        k.bind(query)
            .bind(t.requests)
            .bind(t.stale)
            .execute(&mut *conn)
            .await
            .map_err(q("recording what a file added"))?;
    }
    Ok(())
}

/// What forgetting a file took back.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Forgotten {
    /// Whether any import had read the file.
    pub known: bool,
    /// Its path as last imported.
    pub path: String,
    /// Lines it had read.
    pub lines: i64,
    /// Crawler requests taken back out of the ledger.
    pub requests: i64,
}

/// Takes a file back, in one transaction: subtracts what it added to the
/// ledger (rows that reach zero go), and forgets how far it was read and
/// its bad-line samples, so that the next import reads it from its start.
/// First and last times and sample URLs of rows other files share stay as
/// they were: they are bounds, not counts.
pub async fn forget_file(store: &Store, site: &str, file_id: &str) -> Result<Forgotten, StoreError> {
    let mut tx = store.pool().begin().await.map_err(q("starting to forget a file"))?;
    let file = sqlx::query("SELECT path, lines FROM log_files WHERE site = $1 AND file_id = $2")
        .bind(site)
        .bind(file_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(q("reading a log file's state"))?;
    let mut out = Forgotten::default();
    if let Some(row) = file {
        out = Forgotten { known: true, path: row.get(0), lines: row.get(1), requests: 0 };
    }
    let rows = sqlx::query(
        "SELECT crawler, identity, revision_id, line, status, class, day, requests, stale FROM log_file_rows \
         WHERE site = $1 AND file_id = $2 ORDER BY crawler, identity, revision_id, line, status, class, day",
    )
    .bind(site)
    .bind(file_id)
    .fetch_all(&mut *tx)
    .await
    .map_err(q("reading what a file added"))?;
    for r in &rows {
        let (requests, stale): (i64, i64) = (r.get(7), r.get(8));
        out.requests += requests;
        let key = |from: usize| {
            let at = |i: usize| format!("${}", from + i);
            format!(
                "site = {} AND crawler = {} AND identity = {} AND revision_id = {} AND line = {} AND status = {} \
                 AND class = {} AND day = {}",
                at(0),
                at(1),
                at(2),
                at(3),
                at(4),
                at(5),
                at(6),
                at(7)
            )
        };
        let update = format!("UPDATE ledger SET requests = requests - $1, stale = stale - $2 WHERE {}", key(3));
        let delete = format!("DELETE FROM ledger WHERE requests <= 0 AND {}", key(1));
        let bind_key = |query: sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>| {
            query
                .bind(site.to_string())
                .bind(r.get::<String, _>(0))
                .bind(r.get::<String, _>(1))
                .bind(r.get::<i64, _>(2))
                .bind(r.get::<i64, _>(3))
                .bind(r.get::<i64, _>(4))
                .bind(r.get::<String, _>(5))
                .bind(r.get::<i64, _>(6))
        };
        bind_key(sqlx::query(sqlx::AssertSqlSafe(update)).bind(requests).bind(stale))
            .execute(&mut *tx)
            .await
            .map_err(q("taking a file's counts out of the ledger"))?;
        bind_key(sqlx::query(sqlx::AssertSqlSafe(delete)))
            .execute(&mut *tx)
            .await
            .map_err(q("taking a file's counts out of the ledger"))?;
    }
    for table in ["log_file_rows", "log_files", "log_bad_lines"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE site = $1 AND file_id = $2")))
            .bind(site)
            .bind(file_id)
            .execute(&mut *tx)
            .await
            .map_err(q("forgetting a log file"))?;
    }
    tx.commit().await.map_err(q("committing a forgotten file"))?;
    Ok(out)
}

/// Deletes ledger rows of days before `before_day`; returns how many.
pub async fn prune(store: &Store, before_day: i64) -> Result<u64, StoreError> {
    let done = sqlx::query("DELETE FROM ledger WHERE day < $1")
        .bind(before_day)
        .execute(store.pool())
        .await
        .map_err(q("pruning the ledger"))?;
    sqlx::query("DELETE FROM log_file_rows WHERE day < $1")
        .bind(before_day)
        .execute(store.pool())
        .await
        .map_err(q("pruning what files added"))?;
    Ok(done.rows_affected())
}

/// One ledger row as read back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Line {
    /// The crawler.
    pub crawler: String,
    /// The identity answer.
    pub identity: String,
    /// The deciding revision (0: none).
    pub revision: i64,
    /// The deciding line (0: none).
    pub line: i64,
    /// The status that decided (0: none).
    pub status: i64,
    /// The class.
    pub class: String,
    /// The UTC day.
    pub day: i64,
    /// Requests.
    pub requests: i64,
    /// Of them, with a stale fetch.
    pub stale: i64,
    /// First and last (Unix ms).
    pub first_at: i64,
    /// The last.
    pub last_at: i64,
    /// Up to five URLs.
    pub samples: Vec<String>,
}

/// The rows of `site` from `since_day` on, for `crawler` if given.
pub async fn rows(store: &Store, site: &str, since_day: i64, crawler: Option<&str>) -> Result<Vec<Line>, StoreError> {
    let rows = sqlx::query(
        "SELECT crawler, identity, revision_id, line, status, class, day, requests, stale, first_at, last_at, samples \
         FROM ledger WHERE site = $1 AND day >= $2 ORDER BY crawler, day, class, revision_id, line",
    )
    .bind(site)
    .bind(since_day)
    .fetch_all(store.pool())
    .await
    .map_err(q("reading the ledger"))?;
    let mut out = Vec::new();
    for r in &rows {
        let read = || -> Result<Line, sqlx::Error> {
            let samples: String = r.try_get("samples")?;
            Ok(Line {
                crawler: r.try_get("crawler")?,
                identity: r.try_get("identity")?,
                revision: r.try_get("revision_id")?,
                line: r.try_get("line")?,
                status: r.try_get("status")?,
                class: r.try_get("class")?,
                day: r.try_get("day")?,
                requests: r.try_get("requests")?,
                stale: r.try_get("stale")?,
                first_at: r.try_get("first_at")?,
                last_at: r.try_get("last_at")?,
                samples: samples.lines().take(SAMPLES).map(str::to_string).collect(),
            })
        };
        let row = read().map_err(q("reading the ledger"))?;
        if crawler.is_none_or(|c| c.eq_ignore_ascii_case(&row.crawler)) {
            out.push(row);
        }
    }
    Ok(out)
}
