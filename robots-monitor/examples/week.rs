//! How large the history grows: replays a simulated stretch of polls
//! (every site every `interval`, a `change` fraction of sites deploying a
//! new file each day) through the monitor's own `Store::commit`, then
//! prints the rows and the bytes the database holds.
//!
//! `cargo run --release -p robots-monitor --example week -- DATABASE SITES DAYS`
//! (DATABASE is a SQLite path or a `postgres://` URL; it should be empty).

use std::path::Path;
use std::time::Instant;

use monitor::store::{NewState, PollRecord, Store};
use robotsgate_history::Backend;
use sqlx::Row;

const INTERVAL_MS: i64 = 5 * 60 * 1000;
const CHANGE_PER_DAY: f64 = 0.01;
/// Simulated polls in flight at once (PostgreSQL; SQLite has one writer).
const WORKERS: usize = 8;

fn body(site: usize, version: usize) -> Vec<u8> {
    // A realistic small file: a few groups, a sitemap, a per-version line.
    format!(
        "User-agent: *\nDisallow: /cart\nDisallow: /checkout\nDisallow: /search?\nAllow: /search?page=\n\n\
         User-agent: GPTBot\nDisallow: /\n\nUser-agent: AdsBot-Google\nAllow: /\n\n\
         # deploy {version}\nDisallow: /old-{version}/\n\nSitemap: https://site{site}.example/sitemap.xml\n"
    )
    .into_bytes()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let database = args.get(1).map_or("var/week.db", String::as_str);
    let sites: usize = args.get(2).map_or(Ok(10_000), |s| s.parse())?;
    let days: i64 = args.get(3).map_or(Ok(7), |s| s.parse())?;
    let store = Store::open(database, Path::new(".")).await?;
    let names: Vec<String> = (0..sites).map(|i| format!("site{i}")).collect();
    store.ensure_sites(&names.iter().map(String::as_str).collect::<Vec<_>>()).await?;

    // Midnight UTC, so a simulated day is a stored day.
    let start = 20_834 * 86_400_000i64;
    let ticks = days * 86_400_000 / INTERVAL_MS;
    let changing = ((sites as f64) * CHANGE_PER_DAY).ceil() as usize;
    let workers = if store.backend == Backend::Sqlite { 1 } else { WORKERS };
    let began = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let batch = std::sync::Arc::new(monitor::batch::Batcher::start(store.pool().clone()));
    for w in 0..workers {
        let batch = std::sync::Arc::clone(&batch);
        let names = names.clone();
        tasks.spawn(async move {
            let mut version = vec![0usize; names.len()];
            let mut state: Vec<Option<i64>> = vec![None; names.len()];
            let mut revision: Vec<Option<i64>> = vec![None; names.len()];
            let mut run: Vec<Option<(i64, String)>> = vec![None; names.len()];
            for tick in 0..ticks {
                let at = start + tick * INTERVAL_MS;
                let day = (tick * INTERVAL_MS / 86_400_000) as usize;
                for i in (w..names.len()).step_by(workers) {
                    // Each day a different 1% of sites deploys, at a time of
                    // day of its own.
                    let deploys_today = (i + day * changing) % names.len() < changing;
                    let deploy_tick = 1 + (i as i64 * 7919) % (86_400_000 / INTERVAL_MS - 1);
                    let changed = deploys_today && tick % (86_400_000 / INTERVAL_MS) == deploy_tick;
                    if changed || state[i].is_none() {
                        version[i] += usize::from(state[i].is_some());
                    }
                    let rec = PollRecord {
                        site: names[i].clone(),
                        at,
                        status: Some(200),
                        error: None,
                        latency_ms: 20 + (i as i64 + tick) % 180,
                        redirects: 0,
                        truncated: false,
                        body: Some(body(i, version[i])),
                        etag: None,
                        last_modified: None,
                        next_poll_at: at + INTERVAL_MS,
                        run: run[i].clone(),
                        // As the monitor does: the current revision is
                        // rewritten only to move `last_seen`, every 15 min.
                        known_revision: revision[i].filter(|_| !changed && tick % 3 != 0),
                    };
                    let new_state = (changed || state[i].is_none()).then(|| NewState {
                        previous: state[i],
                        key: format!("rules:{}:{}", i, version[i]),
                        with_revision: true,
                        policy: "rules".into(),
                        reason: None,
                        verdicts: Vec::new(),
                        alert: None,
                        severity: "info",
                        channels: Vec::new(),
                        held_outcome: None,
                    });
                    let committed = batch.commit(rec.clone(), new_state).await?.expect("one writer per site");
                    if committed.state_id.is_some() {
                        state[i] = committed.state_id;
                    }
                    revision[i] = committed.revision_id;
                    run[i] = committed.run.clone();
                }
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let polls = ticks * sites as i64;
    let secs = began.elapsed().as_secs_f64();
    println!("{sites} sites x {days} days at 5m: {polls} polls in {secs:.0} s ({:.0} polls/s)", polls as f64 / secs);

    let db = robotsgate_history::open(database, Path::new("."), robotsgate_history::Options::default()).await?;
    for table in ["revisions", "fetches", "fetch_days", "states", "verdicts", "alerts"] {
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) AS n FROM {table}")))
            .fetch_one(&db.pool)
            .await?
            .try_get("n")?;
        println!("{table:<11} {n:>10} rows");
    }
    let bytes: i64 = match db.backend {
        Backend::Sqlite => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&db.pool).await?;
            std::fs::metadata(database)?.len() as i64
        }
        Backend::Postgres => {
            sqlx::query("VACUUM ANALYZE").execute(&db.pool).await?;
            sqlx::query("SELECT CAST(pg_database_size(current_database()) AS BIGINT) AS n")
                .fetch_one(&db.pool)
                .await?
                .try_get("n")?
        }
    };
    println!("database   {:>10.1} MiB", bytes as f64 / 1048576.0);
    Ok(())
}
