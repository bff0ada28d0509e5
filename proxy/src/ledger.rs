//! The gateway's share of the compliance ledger (`proxy.ledger`): every
//! request that names a crawler, and every crawler's `/robots.txt` fetch,
//! judged against the robots.txt that crawler could hold
//! (`robotsgate-compliance`) and written to the shared database as counts.
//!
//! The request path only hands a small record to a bounded queue
//! ([`Ledger::request`], [`Ledger::fetch`]): no lock, no judgement, no
//! database. A background task ([`Judge`]) judges, adds the counts up in
//! memory (one row per site, crawler, identity answer, revision, deciding
//! line, class and UTC day) and writes them every `ledger.flush` in one
//! transaction that adds to what is there. So N gateways on one database
//! count each request once, by the gateway that served it. Past the
//! queue's or the rows' bound, requests are dropped and counted
//! (`robotsgate_ledger_dropped_total`, `/status`), never waited for: a
//! down or slow database never slows serving. Counts not yet written when
//! the process is killed (at most one `flush` of them) are lost; a stop
//! signal writes them first.
//!
//! What the gateway served is what it judges by: the timeline is its own
//! store's states, seen at each request and sampled every second. A row's
//! revision is the stored revision of the origin's file behind the served
//! copy (the one the monitor's history holds too), and its line is the
//! served copy's (the managed groups come after the origin's lines, so the
//! origin's keep their numbers).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use robotsgate_compliance::{At, Fetch, Identity as Judged, Outcome, Request, Slashes, Timeline};
use robotsgate_config::LedgerSettings;
use robotsgate_crawlers::Catalogue;
use robotsgate_history::ledger::{Key, Read, Tally};
use rules::Policy;
use serde_json::json;

use crate::identity::{Answer, Identity};
use crate::metrics::Metrics;
use crate::shared::{CALL_TIMEOUT, Shared};
use crate::store::{RobotsStore, Served, State};

/// Whether a ledger runs in this process, and whether its last write on
/// a stop signal is done: the process waits for it before it exits.
static RUNNING: AtomicBool = AtomicBool::new(false);
static SETTLED: AtomicBool = AtomicBool::new(false);

/// Whether the process may exit without losing counts: no ledger runs,
/// or its last write is done.
pub fn settled() -> bool {
    !RUNNING.load(Ordering::SeqCst) || SETTLED.load(Ordering::SeqCst)
}

/// Milliseconds in a UTC day: rows are per day.
const DAY_MS: i64 = 86_400_000;
/// How often the judge takes the events the request path left.
const DRAIN_EVERY: Duration = Duration::from_millis(50);
/// How often the served states are sampled, besides at each request.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The longest window the timeline is kept for: the longest cache window
/// in the catalogue, at least RFC 9309's 24 hours.
const KEEP_AT_LEAST: Duration = robotsgate_compliance::DEFAULT_CACHE;

/// One event, as the request path hands it over.
#[derive(Debug)]
struct Event {
    site: Arc<str>,
    /// The User-Agent word that claimed the crawler.
    word: Box<str>,
    /// Verification's answer then; `None` with verification off.
    identity: Option<Answer>,
    client: Option<IpAddr>,
    at: At,
    /// What the gateway served at `/robots.txt` then.
    state: Arc<State>,
    /// The request's target; `None` for a robots.txt fetch.
    target: Option<Box<[u8]>>,
}

/// The request path's handle on the ledger.
#[derive(Debug)]
pub struct Ledger {
    /// Events not yet judged. A plain buffer the judge takes whole every
    /// [`DRAIN_EVERY`], not a channel: a channel wakes the judge's thread
    /// at every event, and on a busy machine those wake-ups cost the
    /// request path more than anything the ledger does.
    buffer: Mutex<Vec<Event>>,
    /// Most events the buffer holds.
    cap: usize,
    seq: AtomicU64,
    dropped: AtomicU64,
    /// Rows in memory, not yet written.
    pending: AtomicU64,
    metrics: Arc<Metrics>,
    report: Mutex<Report>,
}

/// What `/status` shows of the ledger.
#[derive(Clone, Debug, Default)]
struct Report {
    written: u64,
    last_write: Option<u64>,
    last_error: Option<String>,
}

fn now() -> (i64, SystemTime) {
    let t = SystemTime::now();
    (i64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(i64::MAX), t)
}

impl Ledger {
    /// The ledger and the task that judges and writes for it.
    pub fn new(
        settings: &LedgerSettings,
        catalogue: Catalogue,
        identity: Option<Arc<Identity>>,
        store: Arc<RobotsStore>,
        shared: Arc<Shared>,
        metrics: Arc<Metrics>,
        slashes: HashMap<String, Slashes>,
    ) -> (Arc<Ledger>, Judge) {
        let ledger = Arc::new(Ledger {
            buffer: Mutex::new(Vec::with_capacity(settings.queue.min(4096))),
            cap: settings.queue,
            seq: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            metrics,
            report: Mutex::default(),
        });
        let judge = Judge {
            ledger: Arc::clone(&ledger),
            catalogue,
            identity,
            store,
            shared,
            flush: settings.flush,
            max_rows: settings.max_rows,
            slashes,
        };
        (ledger, judge)
    }

    fn push(
        &self,
        site: &str,
        word: &str,
        identity: Option<Answer>,
        client: Option<IpAddr>,
        state: Arc<State>,
        target: Option<&[u8]>,
    ) {
        let at = At { ms: now().0, seq: self.seq.fetch_add(1, Ordering::Relaxed) };
        let event = Event {
            site: Arc::from(site),
            word: Box::from(word),
            identity,
            client,
            at,
            state,
            target: target.map(Box::from),
        };
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        if buffer.len() < self.cap {
            buffer.push(event);
        } else {
            drop(buffer);
            self.drop_one();
        }
    }

    fn drop_one(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        self.metrics.ledger_dropped.inc();
    }

    /// A crawler's request (not `/robots.txt`), as served: its origin-form
    /// target, and what the gateway answered its claim with.
    pub fn request(
        &self,
        site: &str,
        word: &str,
        identity: Option<Answer>,
        client: Option<IpAddr>,
        state: Arc<State>,
        target: &[u8],
    ) {
        self.push(site, word, identity, client, state, Some(target));
    }

    /// A crawler's `/robots.txt` fetch, and what the store served then
    /// (or, with no copy to serve, what the origin last answered).
    pub fn fetch(&self, site: &str, word: &str, identity: Option<Answer>, client: Option<IpAddr>, state: Arc<State>) {
        self.push(site, word, identity, client, state, None);
    }

    /// The ledger's part of `/status`.
    pub fn status(&self) -> serde_json::Value {
        let r = self.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
        json!({
            "pending_rows": self.pending.load(Ordering::Relaxed),
            "queued": self.buffer.lock().unwrap_or_else(|e| e.into_inner()).len(),
            "dropped": self.dropped.load(Ordering::Relaxed),
            "written_rows": r.written,
            "last_write": r.last_write,
            "last_error": r.last_error,
        })
    }
}

/// One site's book: what it served, each crawler's last fetch, and the
/// counts not yet written.
#[derive(Debug, Default)]
struct Book {
    timeline: Timeline,
    /// What the timeline's last outcome is, to tell a change.
    last: Option<Seen>,
    /// When `last` was served from.
    last_at: At,
    fetches: HashMap<String, Fetch>,
    rows: HashMap<Key, Tally>,
    reads: HashMap<String, Read>,
}

/// A served state, told apart from another.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    File(String),
    Status(u16),
    Unreachable,
}

/// The background task: judges, counts and writes.
#[derive(Debug)]
pub struct Judge {
    ledger: Arc<Ledger>,
    catalogue: Catalogue,
    identity: Option<Arc<Identity>>,
    store: Arc<RobotsStore>,
    shared: Arc<Shared>,
    flush: Duration,
    max_rows: usize,
    /// How each site's origin reads slashes (see `Site::slashes`).
    slashes: HashMap<String, Slashes>,
}

/// A served copy, as the judge knows it.
#[derive(Debug)]
struct Known {
    /// Its stand-in revision: negative, until the database names it.
    id: i64,
    served: Arc<Served>,
    /// What it means to crawlers, made once: its compiled rules are cloned
    /// here, not at every request judged against it.
    outcome: Outcome,
}

/// The judge's memory, owned by its task.
#[derive(Debug, Default)]
struct Books {
    sites: HashMap<Arc<str>, Book>,
    /// Every served copy seen, by site and ETag.
    copies: HashMap<(Arc<str>, String), Known>,
    /// Stand-in to stored revision.
    stored: HashMap<i64, i64>,
    next: i64,
    rows: usize,
    /// The longest cache window of any crawler seen.
    longest: Duration,
}

impl Judge {
    /// The outcome of a state, registering a served copy under a stand-in
    /// revision; `None` when the gateway knows nothing yet.
    fn outcome(&self, books: &mut Books, site: &Arc<str>, state: &State) -> Option<(Seen, Outcome)> {
        match state {
            State::Serve(served) => {
                let key = (Arc::clone(site), served.etag.clone());
                let next = books.next - 1;
                let copy = books.copies.entry(key).or_insert_with(|| Known {
                    id: next,
                    served: Arc::clone(served),
                    outcome: Outcome {
                        revision: Some(next),
                        status: Some(200),
                        policy: Arc::new(Policy::Rules(served.robots.clone())),
                    },
                });
                if copy.id == next {
                    books.next = next;
                }
                Some((Seen::File(served.etag.clone()), copy.outcome.clone()))
            }
            State::NoFile(status) => Some((Seen::Status(*status), Outcome::status(*status))),
            // Requests for robots.txt went through to the origin: what it
            // last answered is what crawlers got.
            State::Unknown => {
                let health = self.store.health(site);
                match (health.last_status, &health.last_error) {
                    (Some(s), _) => Some((Seen::Status(s), Outcome::status(s))),
                    (None, Some(_)) => Some((Seen::Unreachable, Outcome::unreachable())),
                    (None, None) => None,
                }
            }
        }
    }

    /// Puts `state` on the site's timeline at `at` if it is a change.
    ///
    /// Events reach the judge a little after they happened, interleaved
    /// with its own samples, so `at` may be earlier than the timeline's
    /// last entry. What an event saw is what was served at its instant:
    /// if the timeline knows nothing that early, the state goes in at
    /// `at` even when it is the one last seen. (Without this, a request
    /// made just after a start, drained after the first sample, found no
    /// outcome at its instant and was judged obeyed.)
    fn saw(&self, books: &mut Books, site: &Arc<str>, state: &State, at: At) {
        let book = books.sites.get(site);
        let covered = book.is_some_and(|b| b.timeline.at(at).is_some());
        // The common case, the copy served before: nothing to build.
        if let (true, State::Serve(served), Some(Seen::File(etag))) =
            (covered, state, book.and_then(|b| b.last.as_ref()))
            && *etag == served.etag
        {
            return;
        }
        let Some((seen, outcome)) = self.outcome(books, site, state) else { return };
        let book = books.sites.entry(Arc::clone(site)).or_default();
        if book.last.as_ref() != Some(&seen) || !covered {
            book.timeline.push(at, outcome);
            // The last state is the latest one on the timeline.
            if book.last_at <= at {
                book.last = Some(seen);
                book.last_at = at;
            }
        }
    }

    /// The answer to count: a pending one asked again, off the request path.
    async fn settle(&self, crawler: &robotsgate_crawlers::Crawler, e: &Event) -> Judged {
        let answer = match (e.identity, &self.identity, e.client) {
            (Some(Answer::Pending), Some(identity), Some(ip)) => Some(identity.verify(crawler, ip, None).await.answer),
            (a, _, _) => a,
        };
        // Verification off: the claim is neither confirmed nor refuted.
        answer.map_or(Judged::Unverifiable, Judged::from)
    }

    /// Judges every event the request path left since the last drain.
    async fn drain(&self, books: &mut Books, taken: &mut Vec<Event>) {
        {
            let mut buffer = self.ledger.buffer.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *buffer, taken);
        }
        for e in taken.drain(..) {
            self.take(books, e).await;
        }
    }

    async fn take(&self, books: &mut Books, e: Event) {
        self.saw(books, &e.site, &e.state, e.at);
        let Some((crawler, _)) = self.catalogue.claim(&e.word) else { return };
        let identity = self.settle(crawler, &e).await;
        let window = crawler.robots_cache();
        books.longest = books.longest.max(window);
        let token = crawler.token.clone();
        let Some(target) = &e.target else {
            // A fetch is recorded, never judged; a spoofer's is not the crawler's.
            if identity == Judged::Spoofed {
                return;
            }
            let Some((_, outcome)) = self.outcome(books, &e.site, &e.state) else { return };
            let book = books.sites.entry(Arc::clone(&e.site)).or_default();
            let read = Read {
                at: e.at.ms,
                seq: i64::try_from(e.at.seq).unwrap_or(i64::MAX),
                revision: outcome.revision.unwrap_or(0),
                status: i64::from(outcome.status.unwrap_or(0)),
            };
            book.reads.insert(token.clone(), read);
            book.fetches.insert(token, Fetch { at: e.at, outcome });
            return;
        };
        let full = books.rows >= self.max_rows;
        let book = books.sites.entry(Arc::clone(&e.site)).or_default();
        let slashes = self.slashes.get(&*e.site).copied().unwrap_or_default();
        let request = Request { at: e.at, crawler: &e.word, identity, target, slashes };
        let j = robotsgate_compliance::judge(&request, book.fetches.get(&token), window, &book.timeline);
        let key = Key {
            crawler: token,
            identity: identity.as_str(),
            revision: j.revision.unwrap_or(0),
            line: i64::from(j.line.unwrap_or(0)),
            status: i64::from(j.status.unwrap_or(0)),
            class: j.class.as_str(),
            day: e.at.ms.div_euclid(DAY_MS),
        };
        let url = String::from_utf8_lossy(target);
        match book.rows.get_mut(&key) {
            Some(tally) => tally.add(e.at.ms, &url, j.stale),
            None if full => self.ledger.drop_one(),
            None => {
                let mut tally = Tally::default();
                tally.add(e.at.ms, &url, j.stale);
                book.rows.insert(key, tally);
                books.rows += 1;
                self.ledger.pending.store(books.rows as u64, Ordering::Relaxed);
                self.ledger.metrics.ledger_rows.set(i64::try_from(books.rows).unwrap_or(i64::MAX));
            }
        }
        if j.class == robotsgate_compliance::Class::Violation {
            self.ledger
                .metrics
                .ledger_violations
                .with_label_values(&[&*e.site, crawler.token.as_str(), identity.as_str()])
                .inc();
        }
    }

    /// Samples every site's served state, and forgets what no window reaches.
    fn sample(&self, books: &mut Books) {
        let (ms, _) = now();
        let at = At { ms, seq: self.ledger.seq.fetch_add(1, Ordering::Relaxed) };
        let names: Vec<Arc<str>> = self.store.sites().map(Arc::from).collect();
        let keep = i64::try_from(books.longest.max(KEEP_AT_LEAST).as_millis()).unwrap_or(i64::MAX);
        for site in names {
            let state = self.store.state(&site);
            self.saw(books, &site, &state, at);
            if let Some(book) = books.sites.get_mut(&site) {
                book.timeline.forget_before(At::ms(ms.saturating_sub(keep)));
            }
        }
    }

    /// Writes the counts in one transaction; on failure they stay for the
    /// next write (within the bound).
    async fn write(&self, books: &mut Books) {
        let pending = books.sites.values().any(|b| !b.rows.is_empty() || !b.reads.is_empty());
        if !pending {
            self.learn(books).await;
            return;
        }
        let result = match self.shared.db().await {
            Some(db) => match tokio::time::timeout(CALL_TIMEOUT * 2, write_books(&db, books)).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("timed out".to_string()),
            },
            None => Err("the database cannot be reached".to_string()),
        };
        self.settle_write(books, result);
        self.learn(books).await;
    }

    /// Clears what was written, or keeps it, and reports either.
    fn settle_write(&self, books: &mut Books, result: Result<u64, String>) {
        let mut report = self.ledger.report.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(written) => {
                for book in books.sites.values_mut() {
                    book.rows.clear();
                    book.reads.clear();
                }
                books.rows = 0;
                report.written += written;
                report.last_write = Some(u64::try_from(now().0 / 1000).unwrap_or(0));
                report.last_error = None;
                self.ledger.metrics.ledger_writes.with_label_values(&["ok"]).inc();
            }
            Err(e) => {
                tracing::warn!("cannot write the compliance ledger: {e}; keeping the counts for the next write");
                report.last_error = Some(e);
                self.ledger.metrics.ledger_writes.with_label_values(&["error"]).inc();
            }
        }
        self.ledger.pending.store(books.rows as u64, Ordering::Relaxed);
        self.ledger.metrics.ledger_rows.set(i64::try_from(books.rows).unwrap_or(i64::MAX));
    }

    /// Takes the fetches other gateways saw (newer than this one's) from
    /// the database, so a crawler that read robots.txt through a replica
    /// is judged by what it got there.
    async fn learn(&self, books: &mut Books) {
        let Some(db) = self.shared.db().await else { return };
        let sites: Vec<Arc<str>> = books.sites.keys().cloned().collect();
        for site in sites {
            let Ok(Ok(reads)) =
                tokio::time::timeout(CALL_TIMEOUT, robotsgate_history::ledger::reads(&db.pool, &site)).await
            else {
                return;
            };
            for (token, r) in reads {
                let at = At { ms: r.at, seq: u64::try_from(r.seq).unwrap_or(0) };
                let book = books.sites.entry(Arc::clone(&site)).or_default();
                if book.fetches.get(&token).is_some_and(|f| f.at >= at)
                    || book.reads.contains_key(&token)
                    || r.content_unknown()
                {
                    continue;
                }
                let outcome = if r.revision > 0 {
                    let local = books.stored.iter().find(|(_, s)| **s == r.revision).map(|(l, _)| *l);
                    let known =
                        local.and_then(|l| books.copies.values().find(|c| c.id == l)).map(|c| c.outcome.clone());
                    match known {
                        Some(o) => o,
                        None => {
                            let body = robotsgate_history::ledger::revision_body(&db.pool, &site, r.revision).await;
                            match body {
                                Ok(Some(body)) => Outcome::body(r.revision, &body),
                                _ => continue,
                            }
                        }
                    }
                } else if r.status > 0 {
                    Outcome::status(u16::try_from(r.status).unwrap_or(500))
                } else {
                    Outcome::unreachable()
                };
                let book = books.sites.entry(Arc::clone(&site)).or_default();
                book.fetches.insert(token, Fetch { at, outcome });
            }
        }
    }
}

/// Writes every book's rows and reads, stand-in revisions replaced by the
/// stored ones, in one transaction; returns the rows written.
async fn write_books(db: &robotsgate_history::Db, books: &mut Books) -> Result<u64, robotsgate_history::DbError> {
    let mut tx = db.pool.begin().await?;
    let mut written = 0u64;
    let names: Vec<Arc<str>> = books.sites.keys().cloned().collect();
    for site in names {
        let (ms, _) = now();
        // Name every stand-in this site's rows and reads use.
        let book = &books.sites[&site];
        let mut used: Vec<i64> = book
            .rows
            .keys()
            .map(|k| k.revision)
            .chain(book.reads.values().map(|r| r.revision))
            .filter(|r| *r < 0)
            .collect();
        used.sort_unstable();
        used.dedup();
        for local in used {
            if books.stored.contains_key(&local) {
                continue;
            }
            let Some(served) = books
                .copies
                .iter()
                .find(|((s, _), c)| **s == *site && c.id == local)
                .map(|(_, c)| Arc::clone(&c.served))
            else {
                continue;
            };
            let recorded = robotsgate_history::record(&mut tx, &site, &served.origin, ms).await?;
            books.stored.insert(local, recorded.id);
        }
        let stored = |r: i64| if r < 0 { books.stored.get(&r).copied().unwrap_or(0) } else { r };
        let book = &books.sites[&site];
        let rows: HashMap<Key, Tally> = book
            .rows
            .iter()
            .map(|(k, t)| (Key { revision: stored(k.revision), ..k.clone() }, t.clone()))
            .fold(HashMap::new(), |mut acc, (k, t)| {
                acc.entry(k).and_modify(|have: &mut Tally| have.merge(&t)).or_insert(t);
                acc
            });
        let reads: HashMap<String, Read> =
            book.reads.iter().map(|(c, r)| (c.clone(), Read { revision: stored(r.revision), ..*r })).collect();
        robotsgate_history::ledger::write_rows(&mut tx, &site, &rows).await?;
        robotsgate_history::ledger::write_reads(&mut tx, &site, &reads).await?;
        written += rows.len() as u64;
    }
    tx.commit().await?;
    Ok(written)
}

#[async_trait]
impl BackgroundService for Judge {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        RUNNING.store(true, Ordering::SeqCst);
        let mut books = Books::default();
        let mut flush = tokio::time::interval(self.flush);
        let mut sample = tokio::time::interval(SAMPLE_EVERY);
        let mut drain = tokio::time::interval(DRAIN_EVERY);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut taken = Vec::new();
        loop {
            tokio::select! {
                _ = drain.tick() => self.drain(&mut books, &mut taken).await,
                _ = sample.tick() => self.sample(&mut books),
                _ = flush.tick() => {
                    self.drain(&mut books, &mut taken).await;
                    self.write(&mut books).await;
                }
                _ = shutdown.changed() => {
                    // What is left, then one last write.
                    self.drain(&mut books, &mut taken).await;
                    self.write(&mut books).await;
                    SETTLED.store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}
