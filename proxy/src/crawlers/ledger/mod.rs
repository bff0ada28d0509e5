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
//! ([`crate::crawlers::journal`]), in the same step and without a system call; a
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

mod judge;
mod queue;
mod record;

pub use judge::Judge;
use queue::Event;
pub use queue::Ledger;
use record::{Recorded, decode, encode};

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
use crate::robots::shared::{CALL_TIMEOUT, Shared};
use crate::robots::store::{RobotsStore, Served, State};

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

/// Now, as Unix milliseconds and as a time.
fn now() -> (i64, SystemTime) {
    let t = SystemTime::now();
    (i64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(i64::MAX), t)
}
