//! Fetching every sitemap a robots.txt names, as a crawler does: redirects
//! followed by hand (five hops, each reported), an index's sitemaps one
//! level down, conditional requests, and a deadline per file that a server
//! trickling a byte a second cannot stretch.
//!
//! Bytes stream from the network into one reading thread, which hands each
//! URL to the caller's visitor there: a 50 MB file is never held whole, and
//! the visitor (the robots.txt tally, say) needs no lock.

use std::collections::HashMap;
use std::io;
use std::time::Duration;

use bytes::Bytes;
use robotsgate_fetch::{Fetcher, Validators};
use tokio::sync::{mpsc, oneshot};

use crate::finding::{Findings, What};
use crate::read::{Context, Kind, Reading, Seen};

/// The most sitemap files one check reads (the named ones and an index's).
pub const MAX_FILES: usize = 200;

/// How a walk goes.
#[derive(Clone, Debug)]
pub struct Options {
    /// The robots.txt's origin, for the host rule.
    pub origin: Option<String>,
    /// The longest one file may take, headers to last byte.
    pub deadline: Duration,
    /// At most this many files.
    pub max_files: usize,
    /// The longest the whole walk may take: files not begun by then are
    /// not read (an `out-of-time` finding), so that a site's sitemaps never
    /// stall its monitor.
    pub budget: Duration,
    /// Validators from the last check, by sitemap URL: a `304` means that
    /// file did not change.
    pub validators: HashMap<String, Validators>,
    /// The sitemaps each index listed at the last check: an index that
    /// answers `304` still has its sitemaps read (they change on their own).
    pub children: HashMap<String, Vec<String>>,
}

impl Options {
    /// The protocol's limits, 60 seconds a file, [`MAX_FILES`] files.
    pub fn new(origin: Option<String>) -> Options {
        Options {
            origin,
            deadline: Duration::from_secs(60),
            max_files: MAX_FILES,
            budget: Duration::from_secs(300),
            validators: HashMap::new(),
            children: HashMap::new(),
        }
    }
}

/// One sitemap file, as fetched and read.
#[derive(Clone, Debug)]
pub struct File {
    /// Its URL, as named (by robots.txt or an index).
    pub url: String,
    /// The index that listed it, if one did.
    pub from: Option<String>,
    /// The robots.txt line that named it (0 for an index's child).
    pub line: u32,
    /// The final status, if a response came.
    pub status: Option<u16>,
    /// The redirects followed, as `status target`.
    pub hops: Vec<String>,
    /// `ETag` and `Last-Modified`, for the next check.
    pub validators: Validators,
    /// The server answered `304 Not Modified`: not read again.
    pub not_modified: bool,
    /// What reading it found (absent when no body was read).
    pub reading: Option<Reading>,
    /// Every finding: the fetch's and the reading's.
    pub findings: Findings,
}

impl File {
    /// `ok`, `warnings`, `error` or `unchanged`: what the file's row says.
    pub fn state(&self) -> &'static str {
        if self.not_modified {
            "unchanged"
        } else if self.findings.has_error() {
            "error"
        } else if self.findings.0.iter().any(|f| f.what != What::Redirected) {
            "warnings"
        } else {
            "ok"
        }
    }

    /// Whether it could not be read (5xx, no answer, a deadline, the
    /// walk's budget): then the walk's counts are no evidence of its URLs.
    pub fn unread(&self) -> bool {
        self.findings.0.iter().any(|x| matches!(x.what, What::Unavailable | What::Timeout | What::OutOfTime))
    }

    /// URLs handed on from it.
    pub fn listed(&self) -> u64 {
        self.reading.as_ref().map_or(0, |r| if r.kind == Kind::Index { 0 } else { r.listed })
    }
}

/// A chunk of a body, or why the body stopped.
type Chunk = Result<Bytes, io::Error>;

/// A body for the reading thread.
struct Job {
    chunks: mpsc::Receiver<Chunk>,
    cx: Context,
    reply: oneshot::Sender<Reading>,
}

/// The blocking side of the stream.
struct Chunks {
    rx: mpsc::Receiver<Chunk>,
    current: Bytes,
}

impl io::Read for Chunks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(b)) => self.current = b,
                Some(Err(e)) => return Err(e),
            }
        }
        let n = self.current.len().min(out.len());
        out[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

/// The sitemaps `robots` names (`Sitemap:` lines), with their lines, as a
/// walk takes them.
pub fn named(robots: &rules::Robots) -> Vec<(u32, String)> {
    robots.sitemaps().map(|(line, v)| (line, String::from_utf8_lossy(v).trim().to_string())).collect()
}

/// Where the URLs of a walk go, on the reading thread.
pub trait Sink: Send + 'static {
    /// One URL a crawler would take from a sitemap (absolute, on the
    /// robots.txt's host, listed for the first time).
    fn url(&mut self, url: &str);
}

impl Sink for Vec<String> {
    fn url(&mut self, url: &str) {
        self.push(url.to_string());
    }
}

impl Sink for rules::sitemap::Tally {
    fn url(&mut self, url: &str) {
        self.add(url);
    }
}

/// What a walk found: every file, the sink back, and how many distinct
/// URLs were listed.
#[derive(Debug)]
pub struct Walked<S> {
    /// The files, in the order read (each index before its sitemaps).
    pub files: Vec<File>,
    /// The sink, with every URL handed to it.
    pub sink: S,
    /// Distinct URLs listed across the files.
    pub distinct: u64,
}

/// Fetches and reads every sitemap in `named` (robots.txt line and URL),
/// each listed URL handed to `sink` on the reading thread. Never fails:
/// what goes wrong is a finding on the file it concerns.
pub async fn walk<S: Sink>(fetcher: &Fetcher, named: &[(u32, String)], options: &Options, sink: S) -> Walked<S> {
    let (jobs_tx, mut jobs_rx) = mpsc::unbounded_channel::<Job>();
    let reader = tokio::task::spawn_blocking(move || {
        let mut sink = sink;
        let mut seen = Seen::default();
        while let Some(job) = jobs_rx.blocking_recv() {
            let body = Chunks { rx: job.chunks, current: Bytes::new() };
            let reading = crate::read::read(body, &job.cx, &mut seen, &mut |u| sink.url(u));
            let _ = job.reply.send(reading);
        }
        (sink, seen.len() as u64)
    });
    let mut files: Vec<File> = Vec::new();
    let mut queue: Vec<(String, Option<String>, u32)> = named.iter().map(|(l, u)| (u.clone(), None, *l)).collect();
    queue.reverse();
    let mut skipped = 0usize;
    let mut late = 0usize;
    let started = tokio::time::Instant::now();
    while let Some((url, from, line)) = queue.pop() {
        if started.elapsed() >= options.budget {
            late += 1;
            continue;
        }
        if files.iter().any(|f| f.url == url) {
            if let Some(parent) = from.as_ref().and_then(|p| files.iter_mut().find(|f| &f.url == p)) {
                parent.findings.add(What::Loop, 0, 0, || format!("the index lists {url}, which is already read"));
            }
            continue;
        }
        if files.len() >= options.max_files {
            skipped += 1;
            continue;
        }
        let mut file = fetch_one(fetcher, &url, options, started + options.budget, &jobs_tx).await;
        file.from = from.clone();
        file.line = line;
        if file.not_modified
            && from.is_none()
            && let Some(children) = options.children.get(&url)
        {
            for child in children.iter().rev() {
                queue.push((child.clone(), Some(url.clone()), 0));
            }
        }
        if let Some(r) = &file.reading
            && r.kind == Kind::Index
        {
            if from.is_some() {
                file.findings.add(What::NestedIndex, 0, 0, || {
                    "an index lists this index; crawlers read one level of index, so its sitemaps are not read"
                        .to_string()
                });
            } else {
                for child in r.children.iter().rev() {
                    if *child == url {
                        file.findings.add(What::Loop, 0, 0, || "the index lists itself".to_string());
                        continue;
                    }
                    queue.push((child.clone(), Some(url.clone()), 0));
                }
            }
        }
        files.push(file);
    }
    if skipped > 0
        && let Some(first) = files.first_mut()
    {
        let max = options.max_files;
        first.findings.add(What::TooManyFiles, 0, 0, || {
            format!("{skipped} more sitemap files are listed; one check reads at most {max}")
        });
    }
    if late > 0
        && let Some(first) = files.first_mut()
    {
        let budget = humantime_secs(options.budget);
        first
            .findings
            .add(What::OutOfTime, 0, 0, || format!("{late} sitemap files were not read: the check's {budget} ran out"));
    }
    drop(jobs_tx);
    let (sink, distinct) = match reader.await {
        Ok(v) => v,
        // The reading thread panicked: a bug, not the input's doing.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    Walked { files, sink, distinct }
}

fn humantime_secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// Fetches one file, following redirects, and reads its body.
async fn fetch_one(
    fetcher: &Fetcher,
    url: &str,
    options: &Options,
    until: tokio::time::Instant,
    jobs: &mpsc::UnboundedSender<Job>,
) -> File {
    let mut file = File {
        url: url.to_string(),
        from: None,
        line: 0,
        status: None,
        hops: Vec::new(),
        validators: Validators::default(),
        not_modified: false,
        reading: None,
        findings: Findings::default(),
    };
    // The file's own deadline, within what is left of the walk's budget.
    let deadline = (tokio::time::Instant::now() + options.deadline).min(until);
    let mut target = match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => u,
        _ => {
            file.findings.add(What::Unavailable, 0, 0, || format!("{url:?} is not an http(s) URL"));
            return file;
        }
    };
    let mut visited = vec![target.to_string()];
    let response = loop {
        let mut request = fetcher.client_for(&target).get(target.clone());
        if visited.len() == 1
            && let Some(v) = options.validators.get(url)
        {
            if let Some(etag) = &v.etag {
                request = request.header("If-None-Match", etag);
            }
            if let Some(lm) = &v.last_modified {
                request = request.header("If-Modified-Since", lm);
            }
        }
        let sent = tokio::time::timeout_at(deadline, request.send()).await;
        let response = match sent {
            Err(_) => {
                file.findings.add(What::Timeout, 0, 0, || "no answer came in time".to_string());
                return file;
            }
            Ok(Err(e)) => {
                let e = robotsgate_fetch::describe(&e);
                file.findings.add(What::Unavailable, 0, 0, || format!("the sitemap could not be fetched: {e}"));
                return file;
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        file.status = Some(status);
        if !(300..400).contains(&status) || status == 304 {
            break response;
        }
        let Some(next) =
            response.headers().get("location").and_then(|l| l.to_str().ok()).and_then(|l| target.join(l).ok())
        else {
            file.findings.add(What::BrokenRedirect, 0, 0, || format!("a {status} without a usable Location"));
            return file;
        };
        file.hops.push(format!("{status} {next}"));
        if visited.iter().any(|v| v == next.as_str()) || file.hops.len() > 5 {
            let hops = file.hops.len();
            file.findings.add(What::BrokenRedirect, 0, 0, || {
                if hops > 5 {
                    "more than five redirects".to_string()
                } else {
                    format!("a redirect loop back to {next}")
                }
            });
            return file;
        }
        visited.push(next.to_string());
        target = next;
    };
    if !file.hops.is_empty() {
        let (n, last) = (file.hops.len(), target.to_string());
        file.findings.add(What::Redirected, 0, 0, || {
            format!(
                "it redirects ({n} hop{}) to {last}; name the final URL in robots.txt",
                if n == 1 { "" } else { "s" }
            )
        });
    }
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    file.validators = Validators { etag: header("etag"), last_modified: header("last-modified") };
    let status = response.status().as_u16();
    match status {
        304 => {
            file.not_modified = true;
            return file;
        }
        200..=299 => {}
        400..=499 if status != 429 => {
            file.findings.add(What::NotFound, 0, 0, || format!("the sitemap answered {status}"));
            return file;
        }
        _ => {
            file.findings.add(What::Unavailable, 0, 0, || format!("the sitemap answered {status}"));
            return file;
        }
    }
    let (tx, rx) = mpsc::channel::<Chunk>(8);
    let (reply_tx, reply_rx) = oneshot::channel();
    let cx = Context::new(options.origin.clone());
    if jobs.send(Job { chunks: rx, cx, reply: reply_tx }).is_err() {
        return file;
    }
    let mut response = response;
    loop {
        let next = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => Some(Err(io::Error::new(io::ErrorKind::TimedOut, "the deadline passed mid-body"))),
            Ok(Ok(Some(b))) => Some(Ok(b)),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                // The client's own whole-request timeout is a timeout too.
                let kind = if e.is_timeout() { io::ErrorKind::TimedOut } else { io::ErrorKind::ConnectionAborted };
                Some(Err(io::Error::new(kind, robotsgate_fetch::describe(&e))))
            }
        };
        let Some(chunk) = next else { break };
        let stop = chunk.is_err();
        // The reader stopped (a limit reached): no more is wanted.
        if tx.send(chunk).await.is_err() || stop {
            break;
        }
    }
    drop(tx);
    if let Ok(reading) = reply_rx.await {
        for f in &reading.findings.0 {
            file.findings.0.push(f.clone());
        }
        file.reading = Some(reading);
    }
    file
}
