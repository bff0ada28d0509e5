//! A log's lines, read ahead and parsed on every core, handed back in file
//! order.
//!
//! Judging stays in order, one line after the other: a request is judged
//! by the crawler's robots.txt fetches before it. Parsing a line (its time,
//! address, request line and User-Agent), most of an import's work, needs
//! nothing but the line and the format (and for W3C logs the `#Fields:` in
//! force), so it runs ahead on every core:
//!
//! - one thread reads lines (decompressing) into batches, numbered;
//! - one worker a core parses batches as they come;
//! - the importer takes the batches back in their numbers' order.
//!
//! Every channel is bounded, so memory stays bounded however large the file;
//! and a reader dropped early (a read error, a live file's unfinished last
//! line) stops the threads at their next hand-over.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use robotsgate_compliance::log::{Entry, Format, Skip};
use robotsgate_compliance::w3c::Directives;

/// Lines a batch holds: enough that handing it over costs nothing next to
/// parsing it, few enough that every core gets work on a small file.
const BATCH_LINES: usize = 2048;

/// One line of the log as read.
#[derive(Debug)]
pub struct Line {
    /// The line's bytes, with its line end when it had one.
    pub raw: Vec<u8>,
    /// What the format reads in it; `None` for a line the importer said it
    /// would not judge (read before), a blank line or a W3C directive.
    pub parsed: Option<Result<Entry, Skip>>,
}

/// A line, or the error that ended the reading (a truncated .gz).
pub type Item = std::io::Result<Line>;

/// A batch on its way from the reader to a worker.
struct Batch {
    /// Its number: batches are handed back in this order.
    seq: u64,
    /// The `#Fields:` in force at its start (W3C logs).
    directives: Option<Directives>,
    /// Its lines, each with whether to parse it.
    lines: Vec<(Vec<u8>, bool)>,
    /// Whether it starts the file (its first line may carry a BOM).
    first: bool,
    /// The error that ended the reading after its lines.
    error: Option<std::io::Error>,
}

/// The text of a raw line: without its line end, and, for the file's first
/// line, without a byte-order mark.
pub fn text_of(raw: &[u8], first: bool) -> &[u8] {
    let text = raw.strip_suffix(b"\n").unwrap_or(raw);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if first { text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text) } else { text }
}

/// What `format` reads in one line's `text`, under W3C `directives`.
pub fn parse(format: &Format, directives: Option<&Directives>, text: &[u8]) -> Result<Entry, Skip> {
    match directives {
        Some(d) => d.read(text),
        None => format.read(text),
    }
}

/// Lines read and parsed ahead, in file order.
pub struct Prefetch {
    done: Receiver<(u64, Vec<Item>)>,
    waiting: BTreeMap<u64, Vec<Item>>,
    next: u64,
    current: std::vec::IntoIter<Item>,
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
    pub fn start(input: Box<dyn BufRead + Send>, head: Vec<Vec<u8>>, format: &Format, parsed_after: i64) -> Prefetch {
        let workers = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let (work_tx, work_rx) = sync_channel::<Batch>(workers * 2);
        let (done_tx, done) = sync_channel::<(u64, Vec<Item>)>(workers * 2);
        let w3c = matches!(format, Format::W3c);
        std::thread::spawn(move || read(input, head.into(), w3c, parsed_after, &work_tx));
        let work_rx = Arc::new(Mutex::new(work_rx));
        for _ in 0..workers {
            let (work_rx, done_tx, format) = (Arc::clone(&work_rx), done_tx.clone(), format.clone());
            std::thread::spawn(move || work(&work_rx, &done_tx, &format));
        }
        Prefetch { done, waiting: BTreeMap::new(), next: 0, current: Vec::new().into_iter() }
    }
}

impl Iterator for Prefetch {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.current.next() {
                return Some(item);
            }
            while !self.waiting.contains_key(&self.next) {
                // Every sender gone: the file is read to its end.
                let (seq, items) = self.done.recv().ok()?;
                self.waiting.insert(seq, items);
            }
            let items = self.waiting.remove(&self.next).unwrap_or_default();
            self.next += 1;
            self.current = items.into_iter();
        }
    }
}

/// The reader thread: `input`'s lines into numbered batches, until its end,
/// an error, or nobody takes them any more.
fn read(
    mut input: Box<dyn BufRead + Send>,
    mut head: std::collections::VecDeque<Vec<u8>>,
    w3c: bool,
    parsed_after: i64,
    work: &SyncSender<Batch>,
) {
    let mut directives = w3c.then(Directives::default);
    let (mut offset, mut seq) = (0i64, 0u64);
    loop {
        let mut batch = Batch {
            seq,
            directives: directives.clone(),
            lines: Vec::with_capacity(BATCH_LINES),
            first: seq == 0,
            error: None,
        };
        while batch.lines.len() < BATCH_LINES {
            let mut line = Vec::new();
            let read = match head.pop_front() {
                Some(known) if known.ends_with(b"\n") || !head.is_empty() => {
                    line = known;
                    Ok(line.len())
                }
                // The first line past what the file's identity took: the rest.
                Some(known) => {
                    line = known;
                    input.read_until(b'\n', &mut line).map(|_| line.len())
                }
                None => input.read_until(b'\n', &mut line),
            };
            match read {
                Ok(0) => break,
                Ok(n) => {
                    offset += n as i64;
                    let text = text_of(&line, batch.first && batch.lines.is_empty());
                    if let Some(d) = directives.as_mut().filter(|_| text.first() == Some(&b'#')) {
                        d.directive(text);
                    }
                    batch.lines.push((line, offset > parsed_after));
                }
                Err(e) => {
                    batch.error = Some(e);
                    break;
                }
            }
        }
        let end = batch.lines.len() < BATCH_LINES || batch.error.is_some();
        if (batch.lines.is_empty() && batch.error.is_none()) || work.send(batch).is_err() || end {
            return;
        }
        seq += 1;
    }
}

/// A worker thread: parses the batches it takes, until none come.
fn work(batches: &Mutex<Receiver<Batch>>, done: &SyncSender<(u64, Vec<Item>)>, format: &Format) {
    loop {
        let batch = match batches.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(Batch { seq, mut directives, lines, first, error }) = batch else { return };
        let mut items: Vec<Item> = Vec::with_capacity(lines.len() + 1);
        for (i, (raw, wanted)) in lines.into_iter().enumerate() {
            let text = text_of(&raw, first && i == 0);
            let parsed = match directives.as_mut() {
                Some(d) if text.first() == Some(&b'#') => {
                    d.directive(text);
                    None
                }
                _ if !wanted || text.iter().all(u8::is_ascii_whitespace) => None,
                d => Some(parse(format, d.as_deref(), text)),
            };
            items.push(Ok(Line { raw, parsed }));
        }
        if let Some(e) = error {
            items.push(Err(e));
        }
        if done.send((seq, items)).is_err() {
            return;
        }
    }
}
