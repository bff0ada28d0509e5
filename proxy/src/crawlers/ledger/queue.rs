//! The ledger's queue: what the request path hands over ([`Ledger::request`],
//! [`Ledger::fetch`]) without a lock, a judgement or the database, into a
//! bounded queue and the journal in one step; and the ledger's `/status`.

use super::*;

/// One event, as the request path hands it over.
#[derive(Debug)]
pub(super) struct Event {
    pub(super) site: Arc<str>,
    /// The User-Agent word that claimed the crawler.
    pub(super) word: Box<str>,
    /// Verification's answer then; `None` with verification off.
    pub(super) identity: Option<Answer>,
    pub(super) client: Option<IpAddr>,
    pub(super) at: At,
    /// What the gateway served at `/robots.txt` then.
    pub(super) state: Arc<State>,
    /// The request's target; `None` for a robots.txt fetch.
    pub(super) target: Option<Box<[u8]>>,
    /// Answered 429 by a crawl budget, never served.
    pub(super) throttled: bool,
    /// Where its journal record ends, 0 when it has none.
    pub(super) journal_end: u64,
}

/// What the request path holds for the judge: the events, and the journal
/// they are written to as they are handed over.
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) events: Vec<Event>,
    pub(super) journal: Option<crate::crawlers::journal::Journal>,
    /// The record being encoded, kept to reuse its allocation.
    pub(super) scratch: Vec<u8>,
}

/// The request path's handle on the ledger.
#[derive(Debug)]
pub struct Ledger {
    /// Events not yet judged. A plain buffer the judge takes whole every
    /// [`DRAIN_EVERY`], not a channel: a channel wakes the judge's thread
    /// at every event, and on a busy machine those wake-ups cost the
    /// request path more than anything the ledger does.
    pub(super) buffer: Mutex<Pending>,
    /// The journal's id and directory, when there is one.
    pub(super) journal: Option<(String, std::path::PathBuf)>,
    /// Events the journal had no room for (the database lags far behind).
    pub(super) unjournaled: AtomicU64,
    /// Events counted from journals of processes that are gone.
    pub(super) replayed: AtomicU64,
    /// Most events the buffer holds.
    pub(super) cap: usize,
    pub(super) seq: AtomicU64,
    /// Events this process took in from its request path; of them, those
    /// the judge has counted into its rows, and those whose counts a write
    /// has since stored (or that needed none). `/status` shows all three,
    /// so that a caller can tell "all written" from "not arrived yet": the
    /// pipeline hands a visit over after the client has its answer.
    pub(super) recorded: AtomicU64,
    pub(super) judged: AtomicU64,
    pub(super) settled: AtomicU64,
    pub(super) dropped: AtomicU64,
    /// Rows in memory, not yet written.
    pub(super) pending: AtomicU64,
    pub(super) metrics: Arc<Metrics>,
    pub(super) report: Mutex<Report>,
}

/// What `/status` shows of the ledger.
#[derive(Clone, Debug, Default)]
pub(super) struct Report {
    pub(super) written: u64,
    pub(super) last_write: Option<u64>,
    pub(super) last_error: Option<String>,
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
            Some(dir) => match crate::crawlers::journal::Journal::create(dir, settings.journal_mib << 20) {
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

    pub(super) fn push(
        &self,
        site: &str,
        word: &str,
        identity: Option<Answer>,
        client: Option<IpAddr>,
        state: Arc<State>,
        // A request's target and whether a budget throttled it; `None` for
        // a robots.txt fetch, which is never throttled.
        target: Option<(&[u8], bool)>,
    ) {
        let mut event = Event {
            site: Arc::from(site),
            word: Box::from(word),
            identity,
            client,
            at: At { ms: now().0, seq: 0 },
            state,
            target: target.map(|(t, _)| Box::from(t)),
            throttled: target.is_some_and(|(_, throttled)| throttled),
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

    pub(super) fn drop_one(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        self.metrics.ledger_dropped.inc();
    }

    /// A crawler's request (not `/robots.txt`), as served: its origin-form
    /// target, what the gateway answered its claim with, and whether a
    /// crawl budget answered it 429 instead of the origin.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &self,
        site: &str,
        word: &str,
        identity: Option<Answer>,
        client: Option<IpAddr>,
        state: Arc<State>,
        target: &[u8],
        throttled: bool,
    ) {
        self.push(site, word, identity, client, state, Some((target, throttled)));
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
