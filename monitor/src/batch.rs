//! Group commit: the claims and the writes of the polls running at once go
//! to the database together, a few statements for the lot.
//!
//! Every poll used to take its lease with one statement and write with a
//! transaction of five to twelve more. On SQLite, whose one connection
//! runs on a thread of its own, each statement is two thread hops, and at
//! 10,000 sites those hops, not the fetches, set the pace (perf: most of
//! the time in the scheduler's wake-ups). So polls hand their claim or
//! their record to one task, which takes whatever is waiting, up to
//! [`MOST`], and writes it as one transaction: one multi-row statement for
//! the leases, the fetches, the daily counts and the sites, and a few
//! statements only for a poll that records a new state.
//!
//! What a poll may assume is unchanged: a claim is atomic (one
//! conditional `UPDATE`), and a state is recorded only if the site still
//! points at the state the poll decided against. A poll whose
//! compare-and-set fails gets `None` and decides again, the others in its
//! batch commit. Should a batch fail, each poll in it is written alone,
//! so one poll's bad data never fails its neighbours.

use std::collections::HashMap;

use sqlx::{AnyPool, Row};
use tokio::sync::{mpsc, oneshot};

use crate::store::{Committed, NewState, PollRecord, QueuedAlert, SiteRow, StoreError, q, queue_alert, site_row};

/// Most jobs of one kind written together. Each adds at most 11 bound
/// parameters to one statement: far below SQLite's 32,766 and
/// PostgreSQL's 65,535.
const MOST: usize = 256;

/// Verdict rows per INSERT: 6 parameters each.
const VERDICTS_PER_INSERT: usize = 200;

/// One UTC day in milliseconds.
const DAY_MS: i64 = crate::store::DAY_MS;

/// A lease asked for.
#[derive(Debug)]
pub struct Claim {
    /// The site.
    pub site: String,
    /// Who asks (`PID:START_MS`), as `sites.leased_by` holds it.
    pub owner: String,
    /// Now (Unix ms).
    pub now: i64,
    /// How long the lease lasts.
    pub lease_ms: i64,
    /// Whether the site is taken even if it is not due yet.
    pub force: bool,
}

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

#[derive(Debug)]
enum Job {
    Claim(Claim, Reply<Option<SiteRow>>),
    Commit(Box<(PollRecord, Option<NewState>)>, Reply<Option<Committed>>),
    /// `places` rows with nothing else to write (`crate::places`).
    Places(Vec<crate::places::PlaceWrite>, Reply<()>),
}

/// The polls' way to the batching task: where they take leases and write.
#[derive(Debug)]
pub struct Batcher {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Batcher {
    /// Starts the task on the current runtime. It ends when the last
    /// sender is dropped.
    pub fn start(pool: AnyPool) -> Batcher {
        let (jobs, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, rx));
        Batcher { jobs }
    }

    /// Takes the lease on a site if it is due (or `force`) and nobody holds
    /// it, and returns the site's row. The conditional update is atomic on
    /// both engines, so of several monitors sharing a database exactly one
    /// wins; the others get `None`.
    pub async fn claim(&self, claim: Claim) -> Result<Option<SiteRow>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(Job::Claim(claim, tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Writes `places` rows that need nothing else written with them.
    pub async fn places(&self, rows: Vec<crate::places::PlaceWrite>) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(Job::Places(rows, tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Writes one poll: the fetch, the revision if new, and, when the state
    /// changed, the state, its verdicts and its alert, all or nothing.
    ///
    /// `Ok(None)` means another monitor recorded a state of this site since
    /// `state.previous` was read: neither the state nor the fetch was
    /// written (the body's revision may have been, as a body the site
    /// served), and the caller decides again against the state now current.
    pub async fn commit(&self, rec: PollRecord, state: Option<NewState>) -> Result<Option<Committed>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(Job::Commit(Box::new((rec, state)), tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

fn gone() -> StoreError {
    StoreError::Query { doing: "handing a poll to the writer", source: sqlx::Error::PoolClosed }
}

async fn run(pool: AnyPool, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = rx.recv().await {
        let mut claims = Vec::new();
        let mut commits = Vec::new();
        let mut places = Vec::new();
        let mut next = Some(first);
        // Whatever queued while the last batch was written goes in this one.
        while let Some(job) = next {
            match job {
                Job::Claim(c, reply) => claims.push((c, reply)),
                Job::Commit(c, reply) => commits.push((*c, reply)),
                Job::Places(rows, reply) => places.push((rows, reply)),
            }
            let room = claims.len() < MOST && commits.len() < MOST && places.len() < MOST;
            next = if room { rx.try_recv().ok() } else { None };
        }
        if !claims.is_empty() {
            claim_all(&pool, claims).await;
        }
        if !commits.is_empty() {
            commit_all(&pool, commits).await;
        }
        if !places.is_empty() {
            places_all(&pool, places).await;
        }
    }
}

/// Writes the places' rows of several polls together; should that fail, each poll's alone, so that one poll's
/// bad row never fails its neighbours'.
async fn places_all(pool: &AnyPool, jobs: Vec<(Vec<crate::places::PlaceWrite>, Reply<()>)>) {
    // One row per place: a statement may not update a row twice.
    let mut all: Vec<crate::places::PlaceWrite> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for w in jobs.iter().flat_map(|(rows, _)| rows).rev() {
        if seen.insert(w.key()) {
            all.push(w.clone());
        }
    }
    let mut conn = match pool.acquire().await {
        Ok(c) => c,
        Err(e) => {
            let text = e.to_string();
            for (_, reply) in jobs {
                let source = sqlx::Error::Protocol(text.clone());
                let _ = reply.send(Err(StoreError::Query { doing: "writing places", source }));
            }
            return;
        }
    };
    if crate::places::write_rows(&mut conn, &all).await.is_ok() {
        for (_, reply) in jobs {
            let _ = reply.send(Ok(()));
        }
        return;
    }
    for (rows, reply) in jobs {
        let _ = reply.send(crate::places::write_rows(&mut conn, &rows).await);
    }
}

/// Leases asked for, each with its answer's way back.
type Claims = Vec<(Claim, Reply<Option<SiteRow>>)>;

/// Takes the leases asked for, one statement per kind of claim.
async fn claim_all(pool: &AnyPool, claims: Claims) {
    let mut groups: HashMap<(String, i64, bool), Claims> = HashMap::new();
    for (c, reply) in claims {
        groups.entry((c.owner.clone(), c.lease_ms, c.force)).or_default().push((c, reply));
    }
    for ((owner, lease_ms, force), group) in groups {
        // The latest time asked: a few milliseconds later than some of the
        // polls asked, which only lets a lease that just ran out go.
        let now = group.iter().map(|(c, _)| c.now).max().unwrap_or_default();
        let names: Vec<&str> = group.iter().map(|(c, _)| c.site.as_str()).collect();
        let mut taken = match claim_sites(pool, &names, &owner, now, lease_ms, force).await {
            Ok(rows) => rows,
            Err(e) => {
                let doing = "claiming sites";
                let text = e.to_string();
                for (_, reply) in group {
                    let _ = reply.send(Err(StoreError::Query { doing, source: sqlx::Error::Protocol(text.clone()) }));
                }
                continue;
            }
        };
        for (c, reply) in group {
            let _ = reply.send(Ok(taken.remove(&c.site)));
        }
    }
}

async fn claim_sites(
    pool: &AnyPool,
    names: &[&str],
    owner: &str,
    now: i64,
    lease_ms: i64,
    force: bool,
) -> Result<HashMap<String, SiteRow>, StoreError> {
    let due = if force { "" } else { " AND next_poll_at <= $3" };
    let list: Vec<String> = (0..names.len()).map(|i| format!("${}", i + 4)).collect();
    let sql = format!(
        "UPDATE sites SET leased_until = $1, leased_by = $2 WHERE leased_until <= $3{due} AND name IN ({}) \
         RETURNING name, etag, last_modified, state_id, state_key, run_id, run_key",
        list.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(now + lease_ms).bind(owner.to_string()).bind(now);
    for name in names {
        query = query.bind(name.to_string());
    }
    let rows = query.fetch_all(pool).await.map_err(q("claiming sites"))?;
    rows.iter()
        .map(|r| Ok((r.try_get::<String, _>("name")?, site_row(r)?)))
        .collect::<Result<_, sqlx::Error>>()
        .map_err(q("claiming sites"))
}

type Polls = Vec<((PollRecord, Option<NewState>), Reply<Option<Committed>>)>;

/// Writes every poll, one transaction for each set of distinct sites (a
/// site's lease makes two of its polls in one batch rare, but the batch's
/// statements match rows by site, so a second one waits for the next set).
async fn commit_all(pool: &AnyPool, mut polls: Polls) {
    while !polls.is_empty() {
        let mut seen = std::collections::HashSet::new();
        let (now, later): (Polls, Polls) = polls.into_iter().partition(|((rec, _), _)| seen.insert(rec.site.clone()));
        commit_set(pool, now).await;
        polls = later;
    }
}

/// Writes polls of distinct sites in one transaction, or, should that
/// fail, each alone.
async fn commit_set(pool: &AnyPool, polls: Polls) {
    let items: Vec<&(PollRecord, Option<NewState>)> = polls.iter().map(|(p, _)| p).collect();
    match write(pool, &items).await {
        Ok(outs) => {
            for ((_, reply), out) in polls.into_iter().zip(outs) {
                let _ = reply.send(Ok(out));
            }
        }
        Err(_) if polls.len() > 1 => {
            for (poll, reply) in polls {
                let _ = reply.send(write(pool, &[&poll]).await.map(|mut o| o.remove(0)));
            }
        }
        // One poll: its own error.
        Err(e) => {
            if let Some((_, reply)) = polls.into_iter().next() {
                let _ = reply.send(Err(e));
            }
        }
    }
}

/// Writes polls in one transaction: per poll its revision and its new
/// state (the only parts that need statements of their own), then the
/// fetches, their days and the sites of every poll not contended, a
/// statement each. `None` for a poll another monitor overtook.
pub(crate) async fn write(
    pool: &AnyPool,
    polls: &[&(PollRecord, Option<NewState>)],
) -> Result<Vec<Option<Committed>>, StoreError> {
    let mut tx = pool.begin().await.map_err(q("starting a transaction"))?;
    let mut outs: Vec<Option<Committed>> = Vec::with_capacity(polls.len());
    for (rec, state) in polls.iter().map(|p| (&p.0, &p.1)) {
        let mut out = Committed::default();
        if let Some(id) = rec.known_revision {
            out.revision_id = Some(id);
        } else if let Some(body) = &rec.body {
            let recorded =
                robotsgate_history::record(&mut tx, &rec.site, body, rec.at).await.map_err(q("storing a revision"))?;
            out.new_revision = recorded.new;
            out.revision_id = Some(recorded.id);
        }
        // A 4xx (429 aside) says the file is gone: gateways sharing this
        // database must not serve an older revision as a good copy.
        if let Some(status) =
            rec.status.and_then(|s| u16::try_from(s).ok()).filter(|s| (400..500).contains(s) && *s != 429)
        {
            robotsgate_history::record_removal(&mut tx, &rec.site, status, rec.at)
                .await
                .map_err(q("recording a removed robots.txt"))?;
        }
        if let Some(state) = state {
            match record_state(&mut tx, rec, state, out.revision_id).await? {
                Some((id, alerted)) => {
                    out.state_id = Some(id);
                    out.alerted = alerted;
                }
                None => {
                    outs.push(None);
                    continue;
                }
            }
        }
        outs.push(Some(out));
    }
    let live: Vec<(&PollRecord, &mut Committed)> =
        polls.iter().zip(outs.iter_mut()).filter_map(|(p, o)| o.as_mut().map(|o| (&p.0, o))).collect();
    if !live.is_empty() {
        write_fetches(&mut tx, live).await?;
        let live: Vec<(&PollRecord, &Committed)> =
            polls.iter().zip(outs.iter()).filter_map(|(p, o)| o.as_ref().map(|o| (&p.0, o))).collect();
        reschedule(&mut tx, &live).await?;
    }
    tx.commit().await.map_err(q("committing polls"))?;
    Ok(outs)
}

/// Records a poll's new state, its verdicts and its alert; `None`, with
/// nothing of it written, when the site no longer points at the state the
/// poll decided against.
async fn record_state(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    rec: &PollRecord,
    state: &NewState,
    revision: Option<i64>,
) -> Result<Option<(i64, bool)>, StoreError> {
    let revision_id = if state.with_revision { revision } else { None };
    let previous = state.previous.unwrap_or(0);
    // The unique (site, previous_id) key makes a second record of one
    // change impossible, however the transactions interleave.
    let row = sqlx::query(
        "INSERT INTO states (site, at, state_key, revision_id, policy, reason, previous_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (site, previous_id) DO NOTHING RETURNING id",
    )
    .bind(&rec.site)
    .bind(rec.at)
    .bind(&state.key)
    .bind(revision_id)
    .bind(&state.policy)
    .bind(state.reason.clone())
    .bind(previous)
    .fetch_optional(&mut **tx)
    .await
    .map_err(q("recording a state"))?;
    let Some(row) = row else { return Ok(None) };
    let state_id: i64 = row.try_get("id").map_err(q("reading a state id"))?;
    // Compare and set: the site still points at the state this change
    // follows. If not, the state row just written is taken back, so the
    // rest of the batch commits without it.
    let moved =
        sqlx::query("UPDATE sites SET state_id = $1, state_key = $2 WHERE name = $3 AND COALESCE(state_id, 0) = $4")
            .bind(state_id)
            .bind(&state.key)
            .bind(&rec.site)
            .bind(previous)
            .execute(&mut **tx)
            .await
            .map_err(q("updating a site's state"))?;
    if moved.rows_affected() != 1 {
        sqlx::query("DELETE FROM states WHERE id = $1")
            .bind(state_id)
            .execute(&mut **tx)
            .await
            .map_err(q("taking back an overtaken state"))?;
        return Ok(None);
    }
    // Many rows per statement: a site's first state has a verdict for every
    // URL x crawler.
    for chunk in state.verdicts.chunks(VERDICTS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO verdicts (state_id, url, agent, allowed, line, rule) VALUES {}",
            placeholders(chunk.len(), 6)
        );
        let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
        for v in chunk {
            insert = insert
                .bind(state_id)
                .bind(v.url.clone())
                .bind(v.agent.clone())
                .bind(i64::from(v.allowed))
                .bind(v.line)
                .bind(v.rule.clone());
        }
        insert.execute(&mut **tx).await.map_err(q("recording verdicts"))?;
    }
    let raised_by_hold = match &state.held_outcome {
        Some(outcome) => robotsgate_history::gate::claim_alert(tx, &rec.site, outcome, rec.at)
            .await
            .map_err(q("claiming a hold's alert"))?
            .is_none(),
        None => false,
    };
    let mut alerted = false;
    if let Some(alert) = state.alert.as_ref().filter(|_| !raised_by_hold) {
        let queued = QueuedAlert { alert, severity: state.severity, channels: &state.channels, kind: "change" };
        queue_alert(tx, &rec.site, state_id, rec.at, &queued).await?;
        alerted = true;
    }
    Ok(Some((state_id, alerted)))
}

/// `($1, $2), ($3, $4)`: `rows` tuples of `width` parameters.
fn placeholders(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|r| {
            let cols: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
            format!("({})", cols.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records each poll's fetch: the run it continues is lengthened, or a
/// new run begins; and counts it in its day. Three statements for all.
async fn write_fetches(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    mut live: Vec<(&PollRecord, &mut Committed)>,
) -> Result<(), StoreError> {
    let keys: Vec<String> = live.iter().map(|(rec, out)| rec.run_key(out.revision_id)).collect();
    // Runs to lengthen: the site's current run has this fetch's key.
    let lengthen: Vec<(usize, i64)> = live
        .iter()
        .zip(&keys)
        .enumerate()
        .filter_map(|(i, ((rec, _), key))| match &rec.run {
            Some((id, run_key)) if run_key == key => Some((i, *id)),
            _ => None,
        })
        .collect();
    let mut lengthened: HashMap<i64, ()> = HashMap::new();
    if !lengthen.is_empty() {
        let sql = format!(
            "UPDATE fetches SET polls = fetches.polls + 1, \
             last_at = CASE WHEN fetches.last_at < v.column3 THEN v.column3 ELSE fetches.last_at END, \
             max_latency_ms = CASE WHEN fetches.max_latency_ms < v.column4 THEN v.column4 ELSE fetches.max_latency_ms END \
             FROM (VALUES {}) AS v WHERE fetches.id = v.column1 AND fetches.site = v.column2 RETURNING fetches.id",
            placeholders(lengthen.len(), 4)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (i, id) in &lengthen {
            let rec = live[*i].0;
            query = query.bind(*id).bind(rec.site.clone()).bind(rec.at).bind(rec.latency_ms);
        }
        for row in query.fetch_all(&mut **tx).await.map_err(q("lengthening fetch runs"))? {
            lengthened.insert(row.try_get("id").map_err(q("lengthening fetch runs"))?, ());
        }
    }
    // A run pruned away meanwhile starts afresh, as does every other fetch.
    let mut ids: Vec<Option<i64>> = vec![None; live.len()];
    for (i, id) in &lengthen {
        if lengthened.contains_key(id) {
            ids[*i] = Some(*id);
        }
    }
    let fresh: Vec<usize> = (0..live.len()).filter(|i| ids[*i].is_none()).collect();
    if !fresh.is_empty() {
        let sql = format!(
            "INSERT INTO fetches (site, at, status, error, latency_ms, redirects, truncated, revision_id, last_at, \
             polls, max_latency_ms) VALUES {} RETURNING id, site",
            (0..fresh.len())
                .map(|r| {
                    let p = |c: usize| format!("${}", r * 8 + c);
                    format!(
                        "({}, {}, {}, {}, {}, {}, {}, {}, {}, 1, {})",
                        p(1),
                        p(2),
                        p(3),
                        p(4),
                        p(5),
                        p(6),
                        p(7),
                        p(8),
                        p(2),
                        p(5)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for &i in &fresh {
            let (rec, out) = &live[i];
            query = query
                .bind(rec.site.clone())
                .bind(rec.at)
                .bind(rec.status)
                .bind(rec.error.clone())
                .bind(rec.latency_ms)
                .bind(rec.redirects)
                .bind(i64::from(rec.truncated))
                .bind(out.revision_id);
        }
        // A batch holds one poll per site (each holds the site's lease).
        let mut by_site: HashMap<String, i64> = HashMap::new();
        for row in query.fetch_all(&mut **tx).await.map_err(q("recording fetches"))? {
            let site: String = row.try_get("site").map_err(q("recording fetches"))?;
            by_site.insert(site, row.try_get("id").map_err(q("recording fetches"))?);
        }
        for &i in &fresh {
            ids[i] = by_site.get(&live[i].0.site).copied();
        }
    }
    for ((i, (_, out)), key) in live.iter_mut().enumerate().zip(keys) {
        let id =
            ids[i].ok_or_else(|| StoreError::Query { doing: "recording fetches", source: sqlx::Error::RowNotFound })?;
        out.run = Some((id, key));
    }
    // Each day's counts: one row per site, day and outcome.
    let mut days: HashMap<(String, i64, String), (i64, i64)> = HashMap::new();
    for (rec, _) in &live {
        let e = days.entry((rec.site.clone(), rec.at.div_euclid(DAY_MS), rec.outcome())).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(rec.latency_ms);
    }
    let sql = format!(
        "INSERT INTO fetch_days (site, day, outcome, fetches, max_latency_ms) VALUES {} \
         ON CONFLICT (site, day, outcome) DO UPDATE SET fetches = fetch_days.fetches + excluded.fetches, \
         max_latency_ms = CASE WHEN fetch_days.max_latency_ms < excluded.max_latency_ms \
         THEN excluded.max_latency_ms ELSE fetch_days.max_latency_ms END",
        placeholders(days.len(), 5)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for ((site, day, outcome), (fetches, latency)) in days {
        query = query.bind(site).bind(day).bind(outcome).bind(fetches).bind(latency);
    }
    query.execute(&mut **tx).await.map_err(q("counting fetches in their days"))?;
    Ok(())
}

/// Gives every site's lease back with its next poll time, validators and
/// run, in one statement.
async fn reschedule(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    live: &[(&PollRecord, &Committed)],
) -> Result<(), StoreError> {
    let sql = format!(
        "UPDATE sites SET next_poll_at = v.column2, leased_until = 0, leased_by = NULL, \
         etag = COALESCE(v.column3, sites.etag), last_modified = COALESCE(v.column4, sites.last_modified), \
         run_id = v.column5, run_key = v.column6 FROM (VALUES {}) AS v WHERE sites.name = v.column1",
        placeholders(live.len(), 6)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (rec, out) in live {
        // Validators are only worth keeping from a response with a body.
        let (etag, last_modified) =
            if rec.body.is_some() { (rec.etag.clone(), rec.last_modified.clone()) } else { (None, None) };
        let (run_id, run_key) = out.run.clone().unzip();
        query = query
            .bind(rec.site.clone())
            .bind(rec.next_poll_at)
            .bind(etag)
            .bind(last_modified)
            .bind(run_id)
            .bind(run_key);
    }
    query.execute(&mut **tx).await.map_err(q("rescheduling sites"))?;
    Ok(())
}
