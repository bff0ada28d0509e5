//! How one fetch of a robots.txt ended, as the fetcher (the proxy's or the
//! monitor's HTTP client) reports it. Turning that into what crawlers do is
//! [`crate::Policy`]'s job; this type only records facts.

use std::fmt;
use std::time::{Duration, SystemTime};

/// Why a fetch got no HTTP response at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportError {
    /// No answer in time (connect or read).
    Timeout,
    /// The connection was refused.
    Refused,
    /// The connection was reset or closed mid-response.
    Reset,
    /// The host name did not resolve.
    Dns,
    /// The TLS handshake or certificate check failed.
    Tls,
    /// Any other network failure.
    Other,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportError::Timeout => "timed out",
            TransportError::Refused => "connection refused",
            TransportError::Reset => "connection reset",
            TransportError::Dns => "DNS lookup failed",
            TransportError::Tls => "TLS failed",
            TransportError::Other => "network error",
        })
    }
}

/// The most redirects Google follows for robots.txt; one more and it treats
/// the file as missing.
pub const MAX_REDIRECTS: usize = 5;

/// Everything a fetch of robots.txt can tell.
///
/// ```
/// use rules::{FetchOutcome, Policy};
/// let ok = FetchOutcome::status(200).with_body(b"User-agent: *\nDisallow: /x\n".to_vec());
/// assert!(!Policy::from_fetch(&ok).verdict("bot", "https://a/x").allowed);
/// let down = FetchOutcome::status(503);
/// assert!(!Policy::from_fetch(&down).verdict("bot", "https://a/").allowed);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchOutcome {
    /// The final HTTP status, or `None` when the transport failed.
    pub status: Option<u16>,
    /// The URLs redirected to, in order; more than [`MAX_REDIRECTS`] means
    /// the fetcher gave up following.
    pub redirects: Vec<String>,
    /// The body as received (the fetcher may cap it; see `truncated`).
    pub body: Vec<u8>,
    /// The fetcher stopped reading a body larger than its cap.
    pub truncated: bool,
    /// `Cache-Control: max-age`, if the response carried one.
    pub max_age: Option<Duration>,
    /// The `Age` header: how long the response sat in caches before us.
    pub age: Duration,
    /// Why no response came, if none did.
    pub error: Option<TransportError>,
    /// When the fetch ended.
    pub fetched_at: SystemTime,
}

impl FetchOutcome {
    /// A response with `status` and an empty body, fetched now.
    pub fn status(status: u16) -> FetchOutcome {
        FetchOutcome {
            status: Some(status),
            redirects: Vec::new(),
            body: Vec::new(),
            truncated: false,
            max_age: None,
            age: Duration::ZERO,
            error: None,
            fetched_at: SystemTime::now(),
        }
    }

    /// No response: the transport failed with `error`.
    pub fn transport(error: TransportError) -> FetchOutcome {
        FetchOutcome { status: None, error: Some(error), ..FetchOutcome::status(0) }
    }

    /// This outcome with `body`.
    pub fn with_body(mut self, body: Vec<u8>) -> FetchOutcome {
        self.body = body;
        self
    }

    /// This outcome having followed `hops` redirects.
    pub fn with_redirects(mut self, hops: Vec<String>) -> FetchOutcome {
        self.redirects = hops;
        self
    }

    /// This outcome fetched at `at`.
    pub fn at(mut self, at: SystemTime) -> FetchOutcome {
        self.fetched_at = at;
        self
    }

    /// This outcome with a `Cache-Control: max-age`.
    pub fn with_max_age(mut self, max_age: Duration) -> FetchOutcome {
        self.max_age = Some(max_age);
        self
    }
}

/// Reads `max-age` from a `Cache-Control` header value. `no-store` and
/// `no-cache` count as zero; `s-maxage` wins for shared caches.
///
/// ```
/// use rules::fetch::cache_control_max_age;
/// use std::time::Duration;
/// assert_eq!(cache_control_max_age("public, max-age=3600"), Some(Duration::from_secs(3600)));
/// assert_eq!(cache_control_max_age("no-cache"), Some(Duration::ZERO));
/// assert_eq!(cache_control_max_age("private"), None);
/// ```
pub fn cache_control_max_age(header: &str) -> Option<Duration> {
    let mut max_age = None;
    for directive in header.split(',') {
        let directive = directive.trim();
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        let seconds = || value.trim().trim_matches('"').parse::<u64>().ok().map(Duration::from_secs);
        match name.trim().to_ascii_lowercase().as_str() {
            "no-store" | "no-cache" => return Some(Duration::ZERO),
            "s-maxage" => return seconds(),
            "max-age" => max_age = seconds(),
            _ => {}
        }
    }
    max_age
}
