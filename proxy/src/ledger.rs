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
//! down or slow database never slows serving. Each event is also written
//! into this process's journal, a memory-mapped file under `state_dir`
//! ([`crate::journal`]), in the same step and without a system call; a
//! `kill -9` loses none of it, and the next start (or a live replica of
//! the same `state_dir`, such as an upgrade's new process) counts what the
//! database lacked, exactly once. A stop signal writes everything first.
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
    /// Where its journal record ends, 0 when it has none.
    journal_end: u64,
}

/// What the request path holds for the judge: the events, and the journal
/// they are written to as they are handed over.
#[derive(Debug, Default)]
struct Pending {
    events: Vec<Event>,
    journal: Option<crate::journal::Journal>,
    /// The record being encoded, kept to reuse its allocation.
    scratch: Vec<u8>,
}

/// The request path's handle on the ledger.
#[derive(Debug)]
pub struct Ledger {
    /// Events not yet judged. A plain buffer the judge takes whole every
    /// [`DRAIN_EVERY`], not a channel: a channel wakes the judge's thread
    /// at every event, and on a busy machine those wake-ups cost the
    /// request path more than anything the ledger does.
    buffer: Mutex<Pending>,
    /// The journal's id and directory, when there is one.
    journal: Option<(String, std::path::PathBuf)>,
    /// Events the journal had no room for (the database lags far behind).
    unjournaled: AtomicU64,
    /// Events counted from journals of processes that are gone.
    replayed: AtomicU64,
    /// Most events the buffer holds.
    cap: usize,
    seq: AtomicU64,
    /// Events this process took in from its request path; of them, those
    /// the judge has counted into its rows, and those whose counts a write
    /// has since stored (or that needed none). `/status` shows all three,
    /// so that a caller can tell "all written" from "not arrived yet": the
    /// pipeline hands a visit over after the client has its answer.
    recorded: AtomicU64,
    judged: AtomicU64,
    settled: AtomicU64,
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
    /// The ledger and the task that judges and writes for it; its journal
    /// goes in `journal_dir` (none without one).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: &LedgerSettings,
        catalogue: Catalogue,
        identity: Option<Arc<Identity>>,
        store: Arc<RobotsStore>,
        shared: Arc<Shared>,
        metrics: Arc<Metrics>,
        slashes: HashMap<String, Slashes>,
        journal_dir: Option<&std::path::Path>,
    ) -> (Arc<Ledger>, Judge) {
        let journal = match journal_dir.filter(|_| settings.journal_mib > 0) {
            Some(dir) => match crate::journal::Journal::create(dir, settings.journal_mib << 20) {
                Ok(j) => Some(j),
                Err(e) => {
                    // Serving goes on; the counts are then only as safe as
                    // the flush interval.
                    tracing::error!(dir = %dir.display(), "cannot create the ledger's journal: {e}");
                    None
                }
            },
            None => None,
        };
        let named = journal.as_ref().zip(journal_dir).map(|(j, d)| (j.id().to_string(), d.to_path_buf()));
        let ledger = Arc::new(Ledger {
            buffer: Mutex::new(Pending {
                events: Vec::with_capacity(settings.queue.min(4096)),
                journal,
                scratch: Vec::with_capacity(512),
            }),
            journal: named,
            unjournaled: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
            cap: settings.queue,
            // From 1: a journal's mark 0 means none of it is counted.
            seq: AtomicU64::new(1),
            recorded: AtomicU64::new(0),
            judged: AtomicU64::new(0),
            settled: AtomicU64::new(0),
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
        let mut event = Event {
            site: Arc::from(site),
            word: Box::from(word),
            identity,
            client,
            at: At { ms: now().0, seq: 0 },
            state,
            target: target.map(Box::from),
            journal_end: 0,
        };
        let mut pending = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        if pending.events.len() >= self.cap {
            drop(pending);
            self.drop_one();
            return;
        }
        // Numbered under the lock, so the buffer and the journal hold events
        // in their order: a journal's mark then says which are counted.
        event.at.seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let Pending { events, journal, scratch } = &mut *pending;
        if let Some(journal) = journal {
            scratch.clear();
            encode(&event, scratch);
            match journal.append(event.at.seq, scratch) {
                Some(end) => event.journal_end = end,
                None => {
                    self.unjournaled.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        events.push(event);
        self.recorded.fetch_add(1, Ordering::Relaxed);
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
            "queued": self.buffer.lock().unwrap_or_else(|e| e.into_inner()).events.len(),
            "journal": self.journal.as_ref().map(|(id, _)| id.as_str()),
            "unjournaled": self.unjournaled.load(Ordering::Relaxed),
            "replayed": self.replayed.load(Ordering::Relaxed),
            "dropped": self.dropped.load(Ordering::Relaxed),
            "recorded": self.recorded.load(Ordering::Relaxed),
            "judged": self.judged.load(Ordering::Relaxed),
            "settled": self.settled.load(Ordering::Relaxed),
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
    /// This process's journal: the last event judged (its number and
    /// where its record ends), and the number the database marks counted.
    own: Option<(u64, u64)>,
    marked: u64,
    /// Journals of processes that are gone, judged, with the last number
    /// judged: marked and removed at the next write.
    adopted: Vec<(crate::journal::Orphan, u64)>,
    /// When kept copies were last pruned.
    pruned: Option<std::time::Instant>,
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
                    self.keep_copy(served);
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
            let mut pending = self.ledger.buffer.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut pending.events, taken);
        }
        if let Some(e) = taken.iter().rev().find(|e| e.journal_end > 0) {
            books.own = Some((e.at.seq, e.journal_end));
        }
        for e in taken.drain(..) {
            self.take(books, e).await;
            self.ledger.judged.fetch_add(1, Ordering::Relaxed);
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
        // The judge alone fills `books`, so every event judged by now is in them.
        let judged = self.ledger.judged.load(Ordering::Relaxed);
        let pending = books.sites.values().any(|b| !b.rows.is_empty() || !b.reads.is_empty())
            || books.own.is_some_and(|(seq, _)| seq > books.marked)
            || !books.adopted.is_empty();
        if !pending {
            self.ledger.settled.store(judged, Ordering::Relaxed);
            self.learn(books).await;
            return;
        }
        let result = match self.shared.db().await {
            Some(db) => match tokio::time::timeout(CALL_TIMEOUT * 2, write_books(&db, &self.ledger, books)).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("timed out".to_string()),
            },
            None => Err("the database cannot be reached".to_string()),
        };
        if result.is_ok() {
            self.ledger.settled.store(judged, Ordering::Relaxed);
        }
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
                // The journal's room up to the last event counted is free again.
                if let Some((seq, end)) = books.own {
                    books.marked = seq;
                    let mut pending = self.ledger.buffer.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(journal) = pending.journal.as_mut() {
                        journal.advance(end, seq);
                    }
                }
                for (orphan, _) in books.adopted.drain(..) {
                    orphan.remove();
                }
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

impl Judge {
    /// Keeps a served copy where a replay can find it: a journal names
    /// copies by ETag only. Written once per copy, by this task, never on
    /// the request path.
    fn keep_copy(&self, served: &Served) {
        let Some((_, dir)) = &self.ledger.journal else { return };
        let path = copy_path(dir, &served.etag);
        if path.exists() {
            return;
        }
        let mut bytes = Vec::with_capacity(4 + served.origin.len() + served.body.len());
        bytes.extend_from_slice(&u32::try_from(served.origin.len()).unwrap_or(u32::MAX).to_le_bytes());
        bytes.extend_from_slice(&served.origin);
        bytes.extend_from_slice(&served.body);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
            let part = path.with_extension("part");
            std::fs::write(&part, &bytes)?;
            std::fs::rename(&part, &path)
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), "cannot keep a served copy for the ledger's journal: {e}");
        }
    }

    /// The copy an ETag names: the one served now, one this judge knows,
    /// or one kept on disk.
    fn copy(&self, books: &Books, site: &Arc<str>, etag: &str) -> Option<Arc<Served>> {
        if let State::Serve(now) = &*self.store.state(site)
            && now.etag == etag
        {
            return Some(Arc::clone(now));
        }
        if let Some(k) = books.copies.get(&(Arc::clone(site), etag.to_string())) {
            return Some(Arc::clone(&k.served));
        }
        let (_, dir) = self.ledger.journal.as_ref()?;
        let bytes = std::fs::read(copy_path(dir, etag)).ok()?;
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
        let (origin, body) = (rest.get(..len)?, rest.get(len..)?);
        let body = bytes::Bytes::copy_from_slice(body);
        let robots = rules::Robots::parse(&body);
        // Not registered: a replayed copy is not served.
        let counter = prometheus::IntCounter::new("replayed_copy", "unused").ok()?;
        let mut served = Served::new(body, robots, crate::store::Origin::LastGood, UNIX_EPOCH, Duration::ZERO, counter);
        served.origin = bytes::Bytes::copy_from_slice(origin);
        (served.etag == etag).then(|| Arc::new(served))
    }

    /// Judges the events of journals whose processes are gone, those the
    /// database does not count yet; they are marked counted, and their
    /// files removed, with the next write. Waits for the database.
    async fn adopt(&self, books: &mut Books) {
        let Some((own, dir)) = &self.ledger.journal else { return };
        if books.pruned.is_none_or(|at| at.elapsed() > PRUNE_EVERY) {
            books.pruned = Some(std::time::Instant::now());
            prune_copies(dir);
        }
        let held: Vec<String> = books.adopted.iter().map(|(o, _)| o.id.clone()).collect();
        let orphans: Vec<_> = crate::journal::orphans(dir, own).into_iter().filter(|o| !held.contains(&o.id)).collect();
        if orphans.is_empty() {
            return;
        }
        let Some(db) = self.shared.db().await else { return };
        for orphan in orphans {
            let counted = match robotsgate_history::ledger::journal_counted(&db.pool, &orphan.id).await {
                Ok(c) => u64::try_from(c.unwrap_or(0)).unwrap_or(0),
                // Asked again at the next flush.
                Err(e) => {
                    tracing::warn!("cannot read the ledger journals' marks: {e}");
                    return;
                }
            };
            let (mut judged, mut lost, mut last) = (0u64, 0u64, counted);
            for (seq, payload) in &orphan.records {
                if *seq <= counted {
                    continue;
                }
                last = *seq;
                match self.replayed(books, *seq, payload) {
                    Some(event) => {
                        self.take(books, event).await;
                        judged += 1;
                    }
                    None => lost += 1,
                }
            }
            self.ledger.replayed.fetch_add(judged, Ordering::Relaxed);
            if judged > 0 || lost > 0 {
                tracing::warn!(journal = %orphan.id, judged, lost, "counted the ledger events a stopped process left");
            }
            books.adopted.push((orphan, last));
        }
    }

    /// An event back from a journal record; `None` when the record is not
    /// one, or names a copy no longer to be found.
    fn replayed(&self, books: &Books, seq: u64, payload: &[u8]) -> Option<Event> {
        let r = decode(payload)?;
        let site: Arc<str> = Arc::from(r.site.as_str());
        let state = match r.state {
            Recorded::Unknown => State::Unknown,
            Recorded::NoFile(status) => State::NoFile(status),
            Recorded::Serve(etag) => State::Serve(self.copy(books, &site, &etag)?),
        };
        Some(Event {
            site,
            word: r.word.into_boxed_str(),
            identity: r.identity,
            client: r.client,
            at: At { ms: r.ms, seq },
            state: Arc::new(state),
            target: r.target.map(Vec::into_boxed_slice),
            journal_end: 0,
        })
    }
}

/// How often kept copies are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How long a kept copy outlives its last write: a journal left longer
/// than this by a stopped gateway is replayed against the copies still
/// known (the one served, the judge's) or not at all. A file that changes
/// at every fetch would otherwise leave a copy per fetch forever.
const KEEP_COPIES: Duration = Duration::from_secs(7 * 86_400);

/// Removes kept copies older than [`KEEP_COPIES`].
fn prune_copies(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir.join("copies")) else { return };
    for entry in entries.flatten() {
        let old =
            entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().unwrap_or_default() > KEEP_COPIES);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Where a served copy is kept for replays.
fn copy_path(dir: &std::path::Path, etag: &str) -> std::path::PathBuf {
    let name: String = etag.chars().filter(char::is_ascii_alphanumeric).collect();
    dir.join("copies").join(format!("{name}.copy"))
}

/// What an event's record says was served.
#[derive(Debug, PartialEq, Eq)]
enum Recorded {
    Unknown,
    NoFile(u16),
    Serve(String),
}

/// An event as its journal record holds it.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    site: String,
    word: String,
    identity: Option<Answer>,
    client: Option<IpAddr>,
    ms: i64,
    state: Recorded,
    target: Option<Vec<u8>>,
}

fn put_text(out: &mut Vec<u8>, text: &[u8]) {
    // Sites, words and ETags are short; a longer one is cut, not refused.
    let text = &text[..text.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text);
}

/// An event's journal record: site, word, identity answer, client, time,
/// what was served (by ETag) and target.
fn encode(e: &Event, out: &mut Vec<u8>) {
    put_text(out, e.site.as_bytes());
    put_text(out, e.word.as_bytes());
    out.push(match e.identity {
        None => 0,
        Some(Answer::Verified) => 1,
        Some(Answer::Spoofed) => 2,
        Some(Answer::Unverifiable) => 3,
        Some(Answer::Pending) => 4,
    });
    match e.client {
        None => out.push(0),
        Some(IpAddr::V4(ip)) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        Some(IpAddr::V6(ip)) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&e.at.ms.to_le_bytes());
    match &*e.state {
        State::Unknown => out.push(0),
        State::NoFile(status) => {
            out.push(1);
            out.extend_from_slice(&status.to_le_bytes());
        }
        State::Serve(served) => {
            out.push(2);
            put_text(out, served.etag.as_bytes());
        }
    }
    match &e.target {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&u32::try_from(t.len()).unwrap_or(u32::MAX).to_le_bytes());
            out.extend_from_slice(&t[..t.len().min(u32::MAX as usize)]);
        }
    }
}

/// Reads a record back; `None` for bytes that are not one.
fn decode(mut b: &[u8]) -> Option<Record> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = b.split_at_checked(n)?;
        *b = rest;
        Some(head)
    }
    fn text(b: &mut &[u8]) -> Option<String> {
        let len = u16::from_le_bytes(take(b, 2)?.try_into().ok()?);
        String::from_utf8(take(b, usize::from(len))?.to_vec()).ok()
    }
    let site = text(&mut b)?;
    let word = text(&mut b)?;
    let identity = match take(&mut b, 1)?[0] {
        0 => None,
        1 => Some(Answer::Verified),
        2 => Some(Answer::Spoofed),
        3 => Some(Answer::Unverifiable),
        4 => Some(Answer::Pending),
        _ => return None,
    };
    let client = match take(&mut b, 1)?[0] {
        0 => None,
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(take(&mut b, 4)?).ok()?)),
        6 => Some(IpAddr::from(<[u8; 16]>::try_from(take(&mut b, 16)?).ok()?)),
        _ => return None,
    };
    let ms = i64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
    let state = match take(&mut b, 1)?[0] {
        0 => Recorded::Unknown,
        1 => Recorded::NoFile(u16::from_le_bytes(take(&mut b, 2)?.try_into().ok()?)),
        2 => Recorded::Serve(text(&mut b)?),
        _ => return None,
    };
    let target = match take(&mut b, 1)?[0] {
        0 => None,
        1 => {
            let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?);
            Some(take(&mut b, usize::try_from(len).ok()?)?.to_vec())
        }
        _ => return None,
    };
    b.is_empty().then_some(Record { site, word, identity, client, ms, state, target })
}

/// Writes every book's rows and reads, stand-in revisions replaced by the
/// stored ones, in one transaction; returns the rows written.
async fn write_books(
    db: &robotsgate_history::Db,
    ledger: &Ledger,
    books: &mut Books,
) -> Result<u64, robotsgate_history::DbError> {
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
    let (ms, _) = now();
    let own = ledger.journal.as_ref().zip(books.own).filter(|(_, (seq, _))| *seq > books.marked);
    let marks = own.map(|((id, _), (seq, _))| (id.as_str(), seq)).into_iter();
    for (journal, seq) in marks.chain(books.adopted.iter().map(|(o, seq)| (o.id.as_str(), *seq))) {
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        robotsgate_history::ledger::mark_journal(&mut tx, journal, seq, ms).await?;
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
        // What a killed process left is counted before anything new.
        self.adopt(&mut books).await;
        loop {
            tokio::select! {
                _ = drain.tick() => self.drain(&mut books, &mut taken).await,
                _ = sample.tick() => self.sample(&mut books),
                _ = flush.tick() => {
                    self.adopt(&mut books).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(state: State, target: Option<&[u8]>, client: Option<IpAddr>, identity: Option<Answer>) -> Event {
        Event {
            site: Arc::from("shop"),
            word: Box::from("Googlebot"),
            identity,
            client,
            at: At { ms: 1_764_000_000_123, seq: 9 },
            state: Arc::new(state),
            target: target.map(Box::from),
            journal_end: 0,
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let cases = [
            event(State::Unknown, None, None, None),
            event(State::NoFile(404), Some(b"/a b\xff?x=1"), Some("127.0.0.9".parse().unwrap()), Some(Answer::Spoofed)),
            event(State::NoFile(410), Some(b""), Some("::1".parse().unwrap()), Some(Answer::Pending)),
        ];
        for e in &cases {
            let mut bytes = Vec::new();
            encode(e, &mut bytes);
            let r = decode(&bytes).expect("a record");
            assert_eq!(r.site, "shop");
            assert_eq!(r.word, "Googlebot");
            assert_eq!(r.identity, e.identity);
            assert_eq!(r.client, e.client);
            assert_eq!(r.ms, e.at.ms);
            assert_eq!(r.target.as_deref(), e.target.as_deref());
            let state = match &*e.state {
                State::Unknown => Recorded::Unknown,
                State::NoFile(s) => Recorded::NoFile(*s),
                State::Serve(s) => Recorded::Serve(s.etag.clone()),
            };
            assert_eq!(r.state, state);
            // Every cut of a record is refused, never misread.
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn any_bytes_decode_without_a_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..2000 {
            let bytes: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 24) as u8
                })
                .collect();
            let _ = decode(&bytes);
        }
    }
}
