//! A log's lines, read ahead and parsed on every core, handed back in file
//! order.
//!
//! Judging stays in order, one line after the other: a request is judged
//! by the crawler's robots.txt fetches before it. Parsing a line (its time,
//! address, request line and User-Agent), most of an import's work, needs
//! nothing but the line and the format (and for W3C logs the `#Fields:` in
//! force), so it runs ahead on every core:
//!
//! - one thread reads lines (decompressing) into batches, numbered, each
//!   one buffer with its line ends (no allocation a line);
//! - one worker a core parses batches as they come, and names the crawler
//!   each User-Agent claims (with its own cache), so the importer touches
//!   a browser's line only to count it;
//! - the importer takes the batches back in their numbers' order.
//!
//! Every channel is bounded, so memory stays bounded however large the file;
//! and a reader dropped early (a read error, a live file's unfinished last
//! line) stops the threads at their next hand-over.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use robotsgate_compliance::log::{Entry, Format, Skip};
use robotsgate_compliance::w3c::Directives;
use robotsgate_crawlers::Catalogue;

/// Lines a batch holds: enough that handing it over costs nothing next to
/// parsing it, few enough that every core gets work on a small file.
const BATCH_LINES: usize = 4096;
/// Distinct User-Agents a worker remembers (bounded memory).
const MAX_AGENTS: usize = 50_000;

/// The crawler a User-Agent claims: its index in the catalogue, and the
/// word that claimed it.
pub type Claim = Option<(usize, String)>;

/// What a worker made of one line.
#[derive(Debug)]
pub struct Parsed {
    /// What the format reads in it.
    pub entry: Result<Entry, Skip>,
    /// The crawler its User-Agent claims.
    pub claim: Claim,
}

/// Lines of the file, in order: one buffer, where each line ends, and what
/// the workers made of each.
#[derive(Debug)]
pub struct Batch {
    seq: u64,
    directives: Option<Directives>,
    buf: Vec<u8>,
    ends: Vec<usize>,
    /// Per line whether to parse it (on the way in), then what it read.
    wanted: Vec<bool>,
    /// What each line read; `None` for a line not parsed (read before,
    /// blank, or a W3C directive).
    pub parsed: Vec<Option<Parsed>>,
    first: bool,
    /// The error that ended the reading after these lines (a truncated .gz).
    pub error: Option<std::io::Error>,
}

impl Batch {
    /// How many lines.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i` as read, with its line end when it had one.
    pub fn raw(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.buf[start..self.ends[i]]
    }

    /// Whether line `i` is the file's first.
    pub fn first_line(&self, i: usize) -> bool {
        self.first && i == 0
    }
}

/// The text of a raw line: without its line end, and, for the file's first
/// line, without a byte-order mark.
pub fn text_of(raw: &[u8], first: bool) -> &[u8] {
    let text = raw.strip_suffix(b"\n").unwrap_or(raw);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if first { text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text) } else { text }
}

/// The crawler `user_agent` claims, remembered in `cache`.
pub fn claim(catalogue: &Catalogue, cache: &mut HashMap<String, Claim>, user_agent: &str) -> Claim {
    if let Some(c) = cache.get(user_agent) {
        return c.clone();
    }
    let found = catalogue.claim(user_agent).and_then(|(c, word)| {
        let i = catalogue.crawlers().iter().position(|x| std::ptr::eq(x, c))?;
        Some((i, word.to_string()))
    });
    if cache.len() >= MAX_AGENTS {
        cache.clear();
    }
    cache.insert(user_agent.to_string(), found.clone());
    found
}

/// Batches read and parsed ahead, in file order.
pub struct Prefetch {
    done: Receiver<Batch>,
    waiting: BTreeMap<u64, Batch>,
    next: u64,
}

impl std::fmt::Debug for Prefetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetch").field("next", &self.next).finish_non_exhaustive()
    }
}

impl Prefetch {
    /// Starts reading `input` after the `head` lines already taken from it
    /// (the last of which may be the start of a longer line, which the
    /// reader completes). Lines ending at or before byte `parsed_after` are
    /// not parsed: the importer reads them again only to skip them.
    pub fn start(
        input: Box<dyn BufRead + Send>,
        head: Vec<Vec<u8>>,
        format: &Format,
        catalogue: &Catalogue,
        parsed_after: i64,
    ) -> Prefetch {
        let workers = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let (work_tx, work_rx) = sync_channel::<Batch>(workers * 2);
        let (done_tx, done) = sync_channel::<Batch>(workers * 2);
        let w3c = match format {
            Format::W3c(assumed) => Some(assumed.clone()),
            _ => None,
        };
        std::thread::spawn(move || read(input, head.into(), w3c, parsed_after, &work_tx));
        let work_rx = Arc::new(Mutex::new(work_rx));
        for _ in 0..workers {
            let (work_rx, done_tx) = (Arc::clone(&work_rx), done_tx.clone());
            let (format, catalogue) = (format.clone(), catalogue.clone());
            std::thread::spawn(move || work(&work_rx, &done_tx, &format, &catalogue));
        }
        Prefetch { done, waiting: BTreeMap::new(), next: 0 }
    }

    /// The next batch in file order; `None` at the end of the file.
    pub fn next_batch(&mut self) -> Option<Batch> {
        while !self.waiting.contains_key(&self.next) {
            // Every worker gone: the file is read to its end.
            let batch = self.done.recv().ok()?;
            self.waiting.insert(batch.seq, batch);
        }
        let batch = self.waiting.remove(&self.next);
        self.next += 1;
        batch
    }
}

/// The reader thread: `input`'s lines into numbered batches, until its end,
/// an error, or nobody takes them any more.
fn read(
    mut input: Box<dyn BufRead + Send>,
    mut head: std::collections::VecDeque<Vec<u8>>,
    w3c: Option<Directives>,
    parsed_after: i64,
    work: &SyncSender<Batch>,
) {
    // A W3C file's fields until its first `#Fields:` line.
    let mut directives = w3c;
    let (mut offset, mut seq) = (0i64, 0u64);
    loop {
        let mut batch = Batch {
            seq,
            directives: directives.clone(),
            buf: Vec::with_capacity(BATCH_LINES * 256),
            ends: Vec::with_capacity(BATCH_LINES),
            wanted: Vec::with_capacity(BATCH_LINES),
            parsed: Vec::new(),
            first: seq == 0,
            error: None,
        };
        while batch.ends.len() < BATCH_LINES {
            let start = batch.buf.len();
            let read = match head.pop_front() {
                Some(known) => {
                    batch.buf.extend_from_slice(&known);
                    if known.ends_with(b"\n") || !head.is_empty() {
                        Ok(known.len())
                    } else {
                        // The first line past what the file's identity took: the rest.
                        input.read_until(b'\n', &mut batch.buf).map(|more| known.len() + more)
                    }
                }
                None => input.read_until(b'\n', &mut batch.buf),
            };
            match read {
                Ok(0) => break,
                Ok(n) => {
                    offset += n as i64;
                    let line = &batch.buf[start..];
                    if let Some(d) = directives.as_mut() {
                        let text = text_of(line, batch.first && batch.ends.is_empty());
                        if text.first() == Some(&b'#') {
                            d.directive(text);
                        }
                    }
                    batch.ends.push(batch.buf.len());
                    batch.wanted.push(offset > parsed_after);
                }
                Err(e) => {
                    batch.buf.truncate(start);
                    batch.error = Some(e);
                    break;
                }
            }
        }
        let end = batch.ends.len() < BATCH_LINES || batch.error.is_some();
        if (batch.ends.is_empty() && batch.error.is_none()) || work.send(batch).is_err() || end {
            return;
        }
        seq += 1;
    }
}

/// A worker thread: parses the batches it takes, until none come.
fn work(batches: &Mutex<Receiver<Batch>>, done: &SyncSender<Batch>, format: &Format, catalogue: &Catalogue) {
    let mut agents: HashMap<String, Claim> = HashMap::new();
    loop {
        let next = match batches.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut batch) = next else { return };
        let mut directives = batch.directives.take();
        let mut parsed = Vec::with_capacity(batch.len());
        for i in 0..batch.len() {
            let text = text_of(batch.raw(i), batch.first_line(i));
            let one = match directives.as_mut() {
                Some(d) if text.first() == Some(&b'#') => {
                    d.directive(text);
                    None
                }
                _ if !batch.wanted[i] || text.iter().all(u8::is_ascii_whitespace) => None,
                d => {
                    let entry = match d {
                        Some(d) => d.read(text),
                        None => format.read(text),
                    };
                    let claim = entry.as_ref().ok().and_then(|e| claim(catalogue, &mut agents, &e.user_agent));
                    Some(Parsed { entry, claim })
                }
            };
            parsed.push(one);
        }
        batch.parsed = parsed;
        if done.send(batch).is_err() {
            return;
        }
    }
}
