//! IP-range feeds: operators publish their crawlers' addresses as JSON,
//! `{"creationTime": "...", "prefixes": [{"ipv4Prefix": "..."} |
//! {"ipv6Prefix": "..."}]}`. A feed is read from a URL or a file, checked,
//! and kept as a prefix table; its last good copy is written to disk, so a
//! restart verifies at once and an operator's outage changes nothing.
//!
//! A feed that parses but holds no prefixes, or has another shape, is
//! refused and the last good copy stays: when Google moved its files in
//! 2026 the old URLs answered 200 with no prefixes, which, taken as the
//! truth, would have turned every real Googlebot into a spoofer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use sha2::Digest;

use super::prefixes::Prefixes;

/// Largest feed read; Google's largest is about 100 KB.
pub const MAX_FEED_BYTES: usize = 8 * 1024 * 1024;

/// Why a feed's body was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    /// Not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// JSON of another shape.
    #[error("not an IP-range feed: {0}")]
    Shape(String),
    /// The shape, with no prefixes.
    #[error("the feed lists no prefixes (kept the last good copy)")]
    Empty,
    /// Could not be fetched or read.
    #[error("{0}")]
    Fetch(String),
}

/// Reads a feed's body into a prefix table.
pub fn parse(body: &[u8]) -> Result<Prefixes, FeedError> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| FeedError::Json(e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| FeedError::Shape("the top level is not an object".into()))?;
    let list = obj
        .get("prefixes")
        .ok_or_else(|| FeedError::Shape("no `prefixes` key".into()))?
        .as_array()
        .ok_or_else(|| FeedError::Shape("`prefixes` is not a list".into()))?;
    if list.is_empty() {
        return Err(FeedError::Empty);
    }
    let mut texts = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let text = p
            .get("ipv4Prefix")
            .or_else(|| p.get("ipv6Prefix"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| FeedError::Shape(format!("prefixes[{i}] has neither `ipv4Prefix` nor `ipv6Prefix`")))?;
        texts.push(text);
    }
    Prefixes::parse(texts).map_err(|e| FeedError::Shape(e.to_string()))
}

/// What a feed holds once read: a prefix table, or (for Web Bot Auth) a
/// key directory. Both are fetched, checked, kept and refreshed alike.
pub trait Table: Default + std::fmt::Debug + Send + Sync + 'static {
    /// Reads a body; an error keeps the last good copy.
    fn read(body: &[u8]) -> Result<Self, FeedError>;
    /// Entries held (prefixes, keys).
    fn entries(&self) -> usize;

    /// The media type to ask for and to require of an HTTP answer (a key
    /// directory's); `None` takes any.
    fn accept_header() -> Option<&'static str> {
        None
    }
}

impl Table for Prefixes {
    fn read(body: &[u8]) -> Result<Self, FeedError> {
        parse(body)
    }
    fn entries(&self) -> usize {
        self.len()
    }
}

/// What `/status` and the metrics say of a feed.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FeedStatus {
    /// The feed's URL or path.
    pub source: String,
    /// Entries (prefixes, or a directory's keys) in the copy in use.
    pub prefixes: usize,
    /// When the copy in use was fetched (Unix seconds), if there is one.
    pub fetched_at: Option<u64>,
    /// The last refresh's error, if it failed.
    pub last_error: Option<String>,
}

/// One feed: its table (swapped whole on refresh) and its status.
#[derive(Debug)]
pub struct Feed<T: Table = Prefixes> {
    source: String,
    table: ArcSwap<T>,
    status: Mutex<FeedStatus>,
    /// Where the last good copy is kept.
    copy: Option<PathBuf>,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl<T: Table> Feed<T> {
    /// A feed from `source` (an http(s) URL or a file path), starting from
    /// its last good copy in `dir` when there is one.
    pub fn new(source: &str, dir: Option<&Path>) -> Feed<T> {
        let copy = dir.map(|d| {
            let digest = sha2::Sha256::digest(source.as_bytes());
            let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
            d.join(format!("feed-{name}.json"))
        });
        let feed = Feed {
            source: source.to_string(),
            table: ArcSwap::from_pointee(T::default()),
            status: Mutex::new(FeedStatus { source: source.to_string(), ..FeedStatus::default() }),
            copy,
        };
        if let Some(path) = &feed.copy
            && let Ok(body) = std::fs::read(path)
            && let Ok(table) = T::read(&body)
        {
            let when = std::fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
            feed.install(table, when);
        }
        feed
    }

    fn install(&self, table: T, at: Option<u64>) {
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.prefixes = table.entries();
        status.fetched_at = at;
        status.last_error = None;
        self.table.store(Arc::new(table));
    }

    /// The table in use (empty until a good copy has been read).
    pub fn table(&self) -> Arc<T> {
        self.table.load_full()
    }

    /// The feed's status.
    pub fn status(&self) -> FeedStatus {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Fetches and checks the feed; on success the table and the copy on
    /// disk are replaced, on failure both stay and the error is recorded.
    pub async fn refresh(&self, client: &reqwest::Client) -> Result<usize, FeedError> {
        match self.read(client).await {
            Ok(body) => self.accept(&body),
            Err(e) => Err(self.refuse(e)),
        }
    }

    /// Checks a feed body and, if good, makes it the copy in use and the
    /// copy on disk; if not, both stay and the error is recorded.
    pub fn accept(&self, body: &[u8]) -> Result<usize, FeedError> {
        let table = T::read(body).map_err(|e| self.refuse(e))?;
        let n = table.entries();
        if let Some(path) = &self.copy {
            // Written aside and renamed, so a crash leaves the old copy whole.
            let tmp = path.with_extension("json.tmp");
            if let Err(e) = std::fs::write(&tmp, body).and_then(|()| std::fs::rename(&tmp, path)) {
                tracing::warn!(feed = %self.source, error = %e, "could not keep the feed's copy on disk");
            }
        }
        self.install(table, Some(now_secs()));
        Ok(n)
    }

    fn refuse(&self, e: FeedError) -> FeedError {
        tracing::warn!(feed = %self.source, error = %e, "IP-range feed refused; the last good copy stays");
        self.status.lock().unwrap_or_else(|e| e.into_inner()).last_error = Some(e.to_string());
        e
    }

    async fn read(&self, client: &reqwest::Client) -> Result<Vec<u8>, FeedError> {
        if !(self.source.starts_with("http://") || self.source.starts_with("https://")) {
            return tokio::fs::read(&self.source).await.map_err(|e| FeedError::Fetch(format!("{}: {e}", self.source)));
        }
        let mut request = client.get(&self.source);
        if let Some(accept) = T::accept_header() {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        let response = request.send().await.map_err(|e| FeedError::Fetch(fetch_error(&e)))?;
        let status = response.status();
        // A key directory is a 200 or nothing: a redirect is not followed
        // (the clients follow none) and reads as a failure.
        if !status.is_success() {
            return Err(FeedError::Fetch(format!("answered {}", status.as_u16())));
        }
        if let Some(want) = T::accept_header()
            && self.source.contains(crate::agent::WELL_KNOWN)
        {
            let got = response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
            let essence = got.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case(want) {
                return Err(FeedError::Fetch(format!("served as `{got}`, not {want}")));
            }
        }
        let body = response.bytes().await.map_err(|e| FeedError::Fetch(fetch_error(&e)))?;
        if body.len() > MAX_FEED_BYTES {
            return Err(FeedError::Fetch(format!("{} bytes; feeds are read up to {MAX_FEED_BYTES}", body.len())));
        }
        Ok(body.to_vec())
    }
}

/// A failed fetch in words an operator can act on: `timeout` for a
/// timeout, else what failed and the innermost cause, not reqwest's
/// "error sending request for url".
pub fn fetch_error(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timeout".to_string();
    }
    let mut cause = std::error::Error::source(e);
    while let Some(next) = cause.and_then(std::error::Error::source) {
        cause = Some(next);
    }
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the body could not be read"
    } else {
        "the request failed"
    };
    match cause {
        Some(cause) => format!("{what}: {cause}"),
        None => what.to_string(),
    }
}

/// Refreshes every feed now, then every `every` (a failed feed is retried
/// after a tenth of that, at least a minute), for ever.
pub async fn keep_fresh<T: Table>(feeds: Vec<Arc<Feed<T>>>, client: reqwest::Client, every: Duration) {
    let retry = (every / 10).max(Duration::from_secs(60));
    loop {
        let mut failed = false;
        for f in &feeds {
            failed |= f.refresh(&client).await.is_err();
        }
        tokio::time::sleep(if failed { retry.min(every) } else { every }).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feed server that accepts and never answers: `/status` says
    /// `timeout`; one that refuses says it cannot connect.
    #[test]
    fn a_feed_that_times_out_says_timeout() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/feed.json", silent.local_addr().unwrap());
        let client = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
        let feed: Feed = Feed::new(&url, None);
        let e = rt.block_on(feed.refresh(&client)).unwrap_err();
        assert_eq!(e, FeedError::Fetch("timeout".into()));
        assert_eq!(feed.status().last_error.as_deref(), Some("timeout"));
        drop(silent);
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/feed.json", closed.local_addr().unwrap());
        drop(closed);
        let feed: Feed = Feed::new(&url, None);
        let e = rt.block_on(feed.refresh(&client)).unwrap_err().to_string();
        assert!(e.starts_with("cannot connect"), "{e}");
        assert!(!e.contains("error sending request"), "{e}");
    }

    #[test]
    fn the_feed_shape() {
        let t = parse(br#"{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"},{"ipv6Prefix":"2001:4860:4801:10::/64"}]}"#).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(parse(br#"{"creationTime":"x","prefixes":[]}"#).unwrap_err(), FeedError::Empty);
        assert!(matches!(parse(b"<html>moved</html>"), Err(FeedError::Json(_))));
        assert!(matches!(parse(br#"{"ranges":["1.2.3.0/24"]}"#), Err(FeedError::Shape(_))));
        assert!(matches!(parse(br#"[{"ipv4Prefix":"1.2.3.0/24"}]"#), Err(FeedError::Shape(_))));
        assert!(
            matches!(parse(br#"{"prefixes":[{"cidr":"1.2.3.0/24"}]}"#), Err(FeedError::Shape(m)) if m.contains("prefixes[0]"))
        );
        assert!(matches!(parse(br#"{"prefixes":[{"ipv4Prefix":"1.2.3.0"}]}"#), Err(FeedError::Shape(_))));
    }
}
