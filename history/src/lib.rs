//! The SQL database robots-monitor and robots-proxy share: opening and
//! migrating it (embedded SQLite or PostgreSQL, through sqlx's `Any`
//! driver), and the robots.txt revisions both daemons read and write.
//!
//! The monitor keeps its whole history here; a gateway keeps only its last
//! good copies, in the same `revisions` table, so a gateway that starts
//! during an origin outage serves what another gateway or the monitor saw
//! last. Both daemons depend on this crate, never on each other.

pub mod beats;
pub mod gate;
pub mod imported;
pub mod ledger;

/// The database driver's error, for callers that hold no `sqlx` of their own.
pub use sqlx::Error as DbError;

use std::path::Path;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyConnection, AnyPool, Row};

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `database:` names neither a PostgreSQL URL nor a SQLite file.
    #[error(
        "database: `{given}` {why}; write a SQLite file path (`history.db`, `/var/lib/robotsgate/history.db`), `sqlite://history.db`, `sqlite:///var/lib/robotsgate/history.db`, or `postgres://user:password@host/name`"
    )]
    Form {
        /// What was given (without password).
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The database could not be reached or created. The driver's error
    /// is said once, in the message, not again as a cause.
    #[error("cannot open database `{target}`: {error}")]
    Open {
        /// The path or URL (without password).
        target: String,
        /// The driver's error.
        error: sqlx::Error,
    },
    /// Migrations failed.
    #[error("cannot migrate database `{target}`: {error}")]
    Migrate {
        /// The path or URL (without password).
        target: String,
        /// The migrator's error.
        error: sqlx::migrate::MigrateError,
    },
}

/// The SQLite file `database` names, relative paths under `base`: a plain
/// path, or one of the URL forms sqlx documents (`sqlite://PATH`,
/// `sqlite:PATH`, `sqlite:///ABSOLUTE`), with any `?options` dropped (the
/// file is always opened read-write, created if missing).
pub fn sqlite_path(database: &str, base: &Path) -> Result<std::path::PathBuf, OpenError> {
    let form = |why| OpenError::Form { given: database.to_string(), why };
    let path = match database.strip_prefix("sqlite:") {
        Some(rest) => {
            let rest = rest.split_once('?').map_or(rest, |(p, _)| p);
            if rest == ":memory:" || rest.is_empty() {
                return Err(form("keeps nothing on disk, and robotsgate's history must outlive the process"));
            }
            // `sqlite://a.db` is relative, `sqlite:///a.db` absolute.
            rest.strip_prefix("//").unwrap_or(rest)
        }
        None if database.contains("://") => return Err(form("is a URL of a database robotsgate does not use")),
        None if database.trim().is_empty() => return Err(form("is empty")),
        None => database,
    };
    let path = Path::new(path);
    Ok(if path.is_absolute() { path.to_path_buf() } else { base.join(path) })
}

/// Which engine is behind the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// An open, migrated database.
#[derive(Clone, Debug)]
pub struct Db {
    /// The connection pool.
    pub pool: AnyPool,
    /// The engine behind it.
    pub backend: Backend,
}

/// How to open a database.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Most connections to PostgreSQL (SQLite always gets one: it
    /// serialises writers anyway, and one connection avoids `SQLITE_BUSY`).
    pub max_connections: u32,
    /// How long to wait for a connection, opening included.
    pub acquire_timeout: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_connections: 8, acquire_timeout: std::time::Duration::from_secs(30) }
    }
}

/// Whether `database` names a PostgreSQL server rather than a SQLite file.
pub fn is_postgres(database: &str) -> bool {
    database.starts_with("postgres://") || database.starts_with("postgresql://")
}

/// `database` as it may be shown: a URL without its password.
pub fn shown(database: &str) -> String {
    if !is_postgres(database) {
        return database.to_string();
    }
    match url::Url::parse(database) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "postgres://…".to_string(),
    }
}

/// Opens (creating if needed) and migrates the database: a `postgres://`
/// URL, or a SQLite file ([`sqlite_path`]) relative to `base`.
pub async fn open(database: &str, base: &Path, options: Options) -> Result<Db, OpenError> {
    sqlx::any::install_default_drivers();
    let (url, backend, target) = if is_postgres(database) {
        (database.to_string(), Backend::Postgres, shown(database))
    } else {
        let path = sqlite_path(database, base)?;
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        (format!("sqlite://{}?mode=rwc", path.display()), Backend::Sqlite, path.display().to_string())
    };
    let pool = AnyPoolOptions::new()
        .max_connections(if backend == Backend::Sqlite { 1 } else { options.max_connections })
        .min_connections(0)
        // No idle timeout and no maximum lifetime: either starts sqlx
        // 0.9.0's maintenance task, which loops over `num_idle()` without
        // yielding. That count is raised after a released connection's
        // permit is given back, so under heavy churn it can be read as
        // 0 - 1 (wrapped): the task then spins forever on a worker thread,
        // starving the tasks queued behind it. Seen at 100,000 sites on
        // PostgreSQL: polling stopped and SIGTERM could not finish. A pool
        // holds at most `max_connections` (8) idle connections instead.
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(options.acquire_timeout)
        // A wait of a second or two for a connection is normal under load
        // (SQLite has one writer); sqlx warns after 2 s, which at 10,000
        // sites flooded the log. A wait this long means the database
        // cannot keep up, which an operator must act on.
        .acquire_slow_threshold(options.acquire_timeout / 3)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    sqlx::query("PRAGMA journal_mode = WAL").execute(&mut *conn).await?;
                    sqlx::query("PRAGMA busy_timeout = 5000").execute(&mut *conn).await?;
                    // In WAL mode NORMAL never corrupts the file; a power cut can
                    // lose the last commits, which the next poll re-observes.
                    sqlx::query("PRAGMA synchronous = NORMAL").execute(&mut *conn).await?;
                }
                Ok(())
            })
        })
        .connect(&url)
        .await
        .map_err(|error| OpenError::Open { target: target.clone(), error })?;
    let migrated = match backend {
        Backend::Sqlite => sqlx::migrate!("../migrations/sqlite").run(&pool).await,
        Backend::Postgres => sqlx::migrate!("../migrations/postgres").run(&pool).await,
    };
    migrated.map_err(|error| OpenError::Migrate { target, error })?;
    Ok(Db { pool, backend })
}

/// The hash revisions are deduplicated by: SHA-256, in hex.
pub fn body_hash(body: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect()
}

/// A revision as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Its id.
    pub id: i64,
    /// Whether this call created it.
    pub new: bool,
}

/// Records that `site` served `body` at `at` (Unix ms): a new revision if
/// the bytes are new, and `last_seen` moved forward either way. Safe to
/// run from many processes at once (the `(site, hash)` key decides).
pub async fn record(conn: &mut AnyConnection, site: &str, body: &[u8], at: i64) -> Result<Recorded, sqlx::Error> {
    let hash = body_hash(body);
    let inserted = sqlx::query(
        "INSERT INTO revisions (site, hash, body, size, first_seen, last_seen) VALUES ($1, $2, $3, $4, $5, $5) \
         ON CONFLICT (site, hash) DO NOTHING",
    )
    .bind(site)
    .bind(&hash)
    .bind(body.to_vec())
    .bind(body.len() as i64)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    let new = inserted.rows_affected() == 1;
    if !new {
        sqlx::query(
            "UPDATE revisions SET last_seen = $3 WHERE site = $1 AND hash = $2 AND (last_seen IS NULL OR last_seen < $3)",
        )
        .bind(site)
        .bind(&hash)
        .bind(at)
        .execute(&mut *conn)
        .await?;
    }
    let row = sqlx::query("SELECT id FROM revisions WHERE site = $1 AND hash = $2")
        .bind(site)
        .bind(&hash)
        .fetch_one(&mut *conn)
        .await?;
    Ok(Recorded { id: row.try_get("id")?, new })
}

/// A body a site served, and when it last did (Unix ms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The bytes.
    pub body: Vec<u8>,
    /// When they were last fetched as the site's file.
    pub last_seen: i64,
}

/// Records that `site`'s origin answered `status` (a 4xx: it has no
/// robots.txt) at `at` (Unix ms). Every revision last seen before then
/// stops being a good copy for [`latest`]; one seen again later (the file
/// came back) is one again. Safe from many processes: the latest time wins.
pub async fn record_removal(conn: &mut AnyConnection, site: &str, status: u16, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO removals (site, at, status) VALUES ($1, $2, $3) \
         ON CONFLICT (site) DO UPDATE SET at = excluded.at, status = excluded.status WHERE removals.at < excluded.at",
    )
    .bind(site)
    .bind(at)
    .bind(i32::from(status))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The `limit` bodies `site` served most recently, newest first, leaving
/// out every body last seen before the origin's latest removal of its file
/// ([`record_removal`]), and every body a gateway holds now: held, neither
/// released nor ended ([`gate::record_hold`]). A body whose hold ended may
/// have been served since (after a 404 there is no good copy to hold it
/// against); the gateway judges each candidate against the next older one.
pub async fn latest(pool: &AnyPool, site: &str, limit: i64) -> Result<Vec<Seen>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT body, COALESCE(last_seen, first_seen) AS seen FROM revisions WHERE site = $1 \
         AND COALESCE(last_seen, first_seen) > COALESCE((SELECT at FROM removals WHERE removals.site = $1), -1) \
         AND hash NOT IN (SELECT outcome FROM gate_holds WHERE gate_holds.site = $1 AND released_at IS NULL \
             AND ended_at IS NULL) \
         ORDER BY COALESCE(last_seen, first_seen) DESC, id DESC LIMIT $2",
    )
    .bind(site)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| Ok(Seen { body: r.try_get("body")?, last_seen: r.try_get("seen")? })).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sqlite_is_a_path_or_a_url_of_the_forms_sqlx_documents() {
        let base = Path::new("/etc/robotsgate");
        for (given, path) in [
            ("history.db", "/etc/robotsgate/history.db"),
            ("/var/lib/r.db", "/var/lib/r.db"),
            ("sqlite://history.db", "/etc/robotsgate/history.db"),
            ("sqlite:history.db?mode=rwc", "/etc/robotsgate/history.db"),
            ("sqlite:///var/lib/r.db", "/var/lib/r.db"),
        ] {
            assert_eq!(sqlite_path(given, base).unwrap(), Path::new(path), "{given}");
        }
        for (given, says) in [("sqlite::memory:", "keeps nothing"), ("mysql://h/db", "does not use"), ("", "is empty")]
        {
            let e = sqlite_path(given, base).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("sqlite:///"), "{given}: {e}");
        }
    }

    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn the_newest_seen_body_comes_first_even_when_it_is_an_old_revision() {
        let dir = std::env::temp_dir().join(format!("history-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        block_on(async {
            let db = open("h.db", &dir, Options::default()).await.unwrap();
            let mut conn = db.pool.acquire().await.unwrap();
            let a = record(&mut conn, "shop", b"A", 1_000).await.unwrap();
            let b = record(&mut conn, "shop", b"B", 2_000).await.unwrap();
            let again = record(&mut conn, "shop", b"A", 3_000).await.unwrap();
            assert!(a.new && b.new && !again.new);
            assert_eq!(again.id, a.id);
            // An older observation never moves last_seen back.
            record(&mut conn, "shop", b"A", 500).await.unwrap();
            record(&mut conn, "other", b"C", 9_000).await.unwrap();
            drop(conn);
            let seen = latest(&db.pool, "shop", 5).await.unwrap();
            let order: Vec<(&[u8], i64)> = seen.iter().map(|s| (s.body.as_slice(), s.last_seen)).collect();
            assert_eq!(order, vec![(b"A".as_slice(), 3_000), (b"B".as_slice(), 2_000)]);
        });
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_removed_file_is_no_good_copy_until_it_is_seen_again() {
        let dir = std::env::temp_dir().join(format!("history-removal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        block_on(async {
            let db = open("h.db", &dir, Options::default()).await.unwrap();
            let mut conn = db.pool.acquire().await.unwrap();
            record(&mut conn, "shop", b"A", 1_000).await.unwrap();
            record_removal(&mut conn, "shop", 404, 2_000).await.unwrap();
            // An older removal, arriving late, moves nothing back.
            record_removal(&mut conn, "shop", 410, 1_500).await.unwrap();
            drop(conn);
            assert!(latest(&db.pool, "shop", 5).await.unwrap().is_empty());
            let mut conn = db.pool.acquire().await.unwrap();
            record(&mut conn, "shop", b"A", 3_000).await.unwrap();
            drop(conn);
            assert_eq!(latest(&db.pool, "shop", 5).await.unwrap().len(), 1);
        });
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(shown("postgres://u:secret@h/db"), "postgres://u@h/db");
        assert_eq!(shown("var/x.db"), "var/x.db");
    }
}
