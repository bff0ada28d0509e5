//! Fetching a site's robots.txt, remote or local, into a `FetchOutcome`
//! plus what the daemons need besides (latency, validators for conditional
//! requests). A 4xx or 5xx is an outcome, not an error. Both the monitor and
//! the gateway fetch through this crate, so they see origins the same way.

pub mod origin;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use rules::fetch::{MAX_REDIRECTS, cache_control_max_age};
use rules::{FetchOutcome, TransportError};

/// The most body bytes kept: Google's 500 KiB plus a margin, so that an
/// oversized file is seen to be oversized.
pub const BODY_CAP: usize = rules::parse::MAX_FILE_BYTES + 64 * 1024;

/// One fetch, as the monitor records it.
#[derive(Clone, Debug)]
pub struct Observation {
    /// What the fetch says about crawling.
    pub outcome: FetchOutcome,
    /// How long it took.
    pub latency: Duration,
    /// The server answered 304: the body is the last revision's.
    pub not_modified: bool,
    /// ETag, for the next conditional request.
    pub etag: Option<String>,
    /// Last-Modified, for the next conditional request.
    pub last_modified: Option<String>,
}

/// Validators from the last good fetch.
#[derive(Clone, Debug, Default)]
pub struct Validators {
    /// `If-None-Match`.
    pub etag: Option<String>,
    /// `If-Modified-Since`.
    pub last_modified: Option<String>,
}

/// Builds the HTTP client: no automatic redirects (each hop is recorded),
/// a whole-request timeout and a clear User-Agent.
pub fn client(timeout: Duration, user_agent: &str) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(user_agent)
        .build()
}

/// Fetches `url`, following up to five redirects by hand.
pub async fn fetch_remote(client: &reqwest::Client, url: &str, validators: &Validators) -> Observation {
    let started = Instant::now();
    let mut hops: Vec<String> = Vec::new();
    let mut current = url.to_string();
    loop {
        let mut request = client.get(&current);
        if hops.is_empty() {
            if let Some(etag) = &validators.etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &validators.last_modified {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failed(classify(&e), hops, started),
        };
        let status = response.status().as_u16();
        if (300..400).contains(&status) && status != 304 {
            let next = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| reqwest::Url::parse(&current).ok()?.join(l).ok());
            if let Some(next) = next {
                hops.push(next.to_string());
                if hops.len() > MAX_REDIRECTS {
                    // Google stops here and treats the file as missing.
                    let outcome = FetchOutcome::status(status).with_redirects(hops);
                    return done(outcome, started, false, None, None);
                }
                current = next.to_string();
                continue;
            }
        }
        let header = |name: reqwest::header::HeaderName| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
        };
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let max_age = header(reqwest::header::CACHE_CONTROL).and_then(|c| cache_control_max_age(&c));
        let age = header(reqwest::header::AGE).and_then(|a| a.trim().parse::<u64>().ok()).map(Duration::from_secs);
        let (body, truncated, error) = read_capped(response).await;
        if let Some(e) = error {
            return failed(e, hops, started);
        }
        let mut outcome = FetchOutcome::status(status).with_body(body).with_redirects(hops);
        outcome.truncated = truncated;
        outcome.max_age = max_age;
        outcome.age = age.unwrap_or_default();
        return done(outcome, started, status == 304, etag, last_modified);
    }
}

/// Reads a body up to [`BODY_CAP`] bytes, then stops: a 10 MB answer costs
/// no more than the cap.
async fn read_capped(mut response: reqwest::Response) -> (Vec<u8>, bool, Option<TransportError>) {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = BODY_CAP - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    return (body, true, None);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return (body, false, None),
            Err(e) => return (body, false, Some(classify(&e))),
        }
    }
}

fn classify(e: &reqwest::Error) -> TransportError {
    if e.is_timeout() {
        return TransportError::Timeout;
    }
    let text = format!("{e:?}").to_ascii_lowercase();
    if text.contains("dns") || text.contains("failed to lookup") || text.contains("resolve") {
        TransportError::Dns
    } else if text.contains("refused") {
        TransportError::Refused
    } else if text.contains("certificate") || text.contains("tls") || text.contains("ssl") {
        TransportError::Tls
    } else if e.is_connect() || text.contains("reset") || text.contains("closed") || e.is_body() || e.is_request() {
        TransportError::Reset
    } else {
        TransportError::Other
    }
}

/// An observation for a fetch that could not even be attempted (no client,
/// no source): a transport failure, which policies treat as the origin
/// being unreachable, never as "no file".
pub fn unreachable(error: TransportError) -> Observation {
    failed(error, Vec::new(), Instant::now())
}

fn failed(error: TransportError, hops: Vec<String>, started: Instant) -> Observation {
    done(FetchOutcome::transport(error).with_redirects(hops), started, false, None, None)
}

fn done(
    mut outcome: FetchOutcome,
    started: Instant,
    not_modified: bool,
    etag: Option<String>,
    last_modified: Option<String>,
) -> Observation {
    outcome.fetched_at = SystemTime::now();
    Observation { outcome, latency: started.elapsed(), not_modified, etag, last_modified }
}

/// A robots.txt given as text (a gateway's `robots_static`): a 200 with
/// that body, as a file of the same bytes would read.
pub fn given(body: &[u8]) -> Observation {
    let mut body = body.to_vec();
    let truncated = body.len() > BODY_CAP;
    body.truncate(BODY_CAP);
    let mut outcome = FetchOutcome::status(200).with_body(body);
    outcome.truncated = truncated;
    done(outcome, Instant::now(), false, None, None)
}

/// Reads a local robots.txt. A missing file is a 404 (there is no file); a
/// file that cannot be read is a transport failure.
pub async fn read_local(path: &Path) -> Observation {
    let started = Instant::now();
    match tokio::fs::read(path).await {
        Ok(mut body) => {
            let truncated = body.len() > BODY_CAP;
            body.truncate(BODY_CAP);
            let mut outcome = FetchOutcome::status(200).with_body(body);
            outcome.truncated = truncated;
            done(outcome, started, false, None, None)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            done(FetchOutcome::status(404), started, false, None, None)
        }
        Err(_) => failed(TransportError::Other, Vec::new(), started),
    }
}
