//! Last good copies shared through the database (`database:` in the
//! config), so a gateway that starts while an origin is failing serves
//! what another gateway, or the monitor, saw last instead of passing the
//! failure on (a 5xx for robots.txt reads to Google as "disallow all").
//!
//! The copies live in the `revisions` table the monitor writes
//! (`robotsgate-history`). The database is never on the request path and
//! never holds the gateway up: every call is bounded by [`CALL_TIMEOUT`],
//! a failure parks the database for [`RETRY_AFTER`], and the gateway goes
//! on with its own disk copies meanwhile.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use robotsgate_history::{Db, Options, Seen};

/// The longest any database call may take before the gateway goes on without it.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the database is left alone after a failure.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// An unchanged copy's `last_seen` is moved forward at most this often
/// per site and gateway, so a fleet polling every few seconds writes
/// little, while a copy's age as another gateway sees it stays this close
/// to the truth (far inside `max_staleness`, 30 days by default).
pub const TOUCH_EVERY: Duration = Duration::from_secs(15 * 60);
/// How many recent revisions a gateway looks through for one it can serve
/// (the newest may be an HTML page the monitor recorded, say).
const CANDIDATES: i64 = 5;

/// The shared copies of every site.
#[derive(Debug)]
pub struct Shared {
    database: String,
    base: PathBuf,
    link: tokio::sync::Mutex<Link>,
    /// Per site: the hash last written and when.
    written: Mutex<HashMap<String, (String, Instant)>>,
}

/// The connection, or when it last failed.
#[derive(Debug, Default)]
struct Link {
    db: Option<Db>,
    failed_at: Option<Instant>,
}

impl Shared {
    /// Copies kept in `database` (a `postgres://` URL, or a SQLite path
    /// relative to `base`). Nothing is opened until first used.
    pub fn new(database: &str, base: PathBuf) -> Shared {
        Shared { database: database.to_string(), base, link: Default::default(), written: Default::default() }
    }

    /// The database, if it is reachable now; opens it on first use.
    pub async fn db(&self) -> Option<Db> {
        let mut link = self.link.lock().await;
        if let Some(db) = &link.db {
            return Some(db.clone());
        }
        if link.failed_at.is_some_and(|at| at.elapsed() < RETRY_AFTER) {
            return None;
        }
        let options = Options { max_connections: 2, acquire_timeout: CALL_TIMEOUT };
        let opened =
            tokio::time::timeout(CALL_TIMEOUT * 2, robotsgate_history::open(&self.database, &self.base, options));
        match opened.await {
            Ok(Ok(db)) => {
                tracing::info!(database = %robotsgate_history::shown(&self.database), "sharing last good copies through the database");
                link.db = Some(db.clone());
                link.failed_at = None;
                Some(db)
            }
            Ok(Err(e)) => {
                tracing::warn!("{e}; serving from local copies, trying again in {}s", RETRY_AFTER.as_secs());
                link.failed_at = Some(Instant::now());
                None
            }
            Err(_) => {
                tracing::warn!(database = %robotsgate_history::shown(&self.database), "the database did not answer; serving from local copies");
                link.failed_at = Some(Instant::now());
                None
            }
        }
    }

    /// Closes the connection, if one is open: for a link used on a runtime
    /// that ends before the gateway's own start (see
    /// `Refresher::adopt_before_start`).
    pub async fn close(&self) {
        if let Some(db) = self.link.lock().await.db.take() {
            db.pool.close().await;
        }
    }

    /// `call`, bounded by [`CALL_TIMEOUT`]; `None` when it failed or timed
    /// out, which parks the database and is logged as happening while `doing`.
    async fn bounded<T, E: std::fmt::Display>(
        &self,
        doing: &str,
        call: impl std::future::Future<Output = Result<T, E>>,
    ) -> Option<T> {
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(e)) => {
                self.failed(doing, e.to_string()).await;
                None
            }
            Err(_) => {
                self.failed(doing, "timed out".into()).await;
                None
            }
        }
    }

    /// Parks the database after a failed call.
    async fn failed(&self, doing: &str, error: String) {
        tracing::warn!("database error while {doing}: {error}; serving from local copies");
        self.link.lock().await.failed_at = Some(Instant::now());
    }

    /// The bodies `site` served most recently, newest first, with when
    /// each was last seen. Empty when the database cannot say.
    pub async fn latest(&self, site: &str) -> Vec<(Vec<u8>, SystemTime)> {
        let Some(db) = self.db().await else { return Vec::new() };
        let seen = self.bounded("reading last good copies", robotsgate_history::latest(&db.pool, site, CANDIDATES));
        seen.await
            .unwrap_or_default()
            .into_iter()
            .map(|Seen { body, last_seen }| (body, from_millis(last_seen)))
            .collect()
    }

    /// Records that `site`'s origin served the good `body` at `at`, unless
    /// this gateway wrote the same bytes less than [`TOUCH_EVERY`] ago.
    pub async fn save(&self, site: &str, body: &[u8], at: SystemTime) {
        let hash = robotsgate_history::body_hash(body);
        {
            let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
            if written.get(site).is_some_and(|(h, when)| *h == hash && when.elapsed() < TOUCH_EVERY) {
                return;
            }
        }
        let Some(db) = self.db().await else { return };
        let millis = i64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(i64::MAX);
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::record(&mut conn, site, body, millis).await
        };
        if self.bounded("keeping a good copy", write).await.is_some() {
            self.written.lock().unwrap_or_else(|e| e.into_inner()).insert(site.to_string(), (hash, Instant::now()));
        }
    }
}

impl Shared {
    /// Records that `site`'s origin has no robots.txt any more (it answered
    /// `status`, a 4xx, at `at`), so that no gateway, after a restart or as
    /// another replica, brings the old copy back from the database.
    pub async fn remove(&self, site: &str, status: u16, at: SystemTime) {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).remove(site);
        let Some(db) = self.db().await else { return };
        let millis = i64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(i64::MAX);
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::record_removal(&mut conn, site, status, millis).await
        };
        self.bounded("recording a removed robots.txt", write).await;
    }
}

fn from_millis(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl Shared {
    /// Records that this gateway holds `hold` for `site`, with the held
    /// body as a revision, so that the fleet, the monitor and the console
    /// see it and nothing the origin said is lost.
    pub async fn hold(&self, site: &str, hold: &crate::robots::hold::Hold, at: SystemTime) {
        let Some(db) = self.db().await else { return };
        let (breaks, summary) = (hold.lines(), hold.summary());
        let holding = robotsgate_history::gate::Holding {
            site,
            outcome: &hold.key,
            status: hold.status,
            body: hold.body.as_deref(),
            breaks: &breaks,
            summary: &summary,
            at: to_millis(at),
        };
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::gate::record_hold(&mut conn, &holding).await
        };
        self.bounded("recording a held change", write).await;
    }

    /// Records that this gateway stopped holding `key` of `site` (fetched at
    /// `at`) for `why`, so that the monitor resolves the hold's alert.
    pub async fn end_hold(&self, site: &str, key: &str, why: &str, at: SystemTime) {
        let Some(db) = self.db().await else { return };
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::gate::end_hold(&mut conn, site, key, why, to_millis(at)).await
        };
        self.bounded("recording the end of a hold", write).await;
    }

    /// Spends the fleet's release of `key` of `site` at `at`: this gateway
    /// served the released outcome and now serves something else, so the
    /// same outcome coming again is held again (see
    /// [`robotsgate_history::gate::spend`]). Awaited by the refresh, so that
    /// a hold of the same outcome at the next refresh finds it spent.
    pub async fn spend(&self, site: &str, key: &str, at: SystemTime) {
        let Some(db) = self.db().await else { return };
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::gate::spend(&mut conn, site, key, to_millis(at)).await
        };
        if self.bounded("spending a release", write).await == Some(true) {
            tracing::info!(site, outcome = key, "the released change was replaced; its release is spent");
        }
    }

    /// The change the fleet holds for `site` now: its status, its body when
    /// a file, and since when. `None` when nothing is held or the database
    /// cannot say.
    pub async fn held_now(&self, site: &str) -> Option<(Option<u16>, Option<Vec<u8>>, SystemTime)> {
        let db = self.db().await?;
        let found = self.bounded("reading the fleet's hold", robotsgate_history::gate::held_now(&db.pool, site));
        let (held, body) = found.await??;
        Some((held.status, body, from_millis(held.first_held)))
    }

    /// Whether the fleet released the held outcome `key` of `site`. False
    /// when the database cannot say: a hold stands until a release is seen.
    pub async fn released(&self, site: &str, key: &str) -> bool {
        let Some(db) = self.db().await else { return false };
        let released = robotsgate_history::gate::is_released(&db.pool, site, key);
        self.bounded("reading releases", released).await.unwrap_or(false)
    }

    /// Records a release of `key` of `site` (every held outcome of the site
    /// when `None`) by `by`; the outcomes released, or why it failed.
    pub async fn release(&self, site: &str, key: Option<&str>, by: &str) -> Result<Vec<String>, String> {
        let Some(db) = self.db().await else { return Err("the database cannot be reached".into()) };
        let write = async {
            let mut conn = db.pool.acquire().await?;
            robotsgate_history::gate::release(&mut conn, site, key, by, to_millis(SystemTime::now())).await
        };
        match tokio::time::timeout(CALL_TIMEOUT, write).await {
            Ok(Ok(released)) => Ok(released),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the database timed out".into()),
        }
    }
}

fn to_millis(at: SystemTime) -> i64 {
    i64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(i64::MAX)
}
