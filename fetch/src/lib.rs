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
    /// What the answer says of the caches it came through (`Age`,
    /// `Cache-Control`, `ETag`, `Last-Modified`, `Via`, `X-Cache`,
    /// `CF-Cache-Status` and the like), as (lower-case name, value).
    pub cache: Vec<(String, String)>,
    /// The redirects reached the URL the fetch was told to stop at (the
    /// canonical robots.txt, fetched already): no answer was read.
    pub landed: bool,
}

/// The headers a cache or CDN says itself in, recorded for reports.
pub const CACHE_HEADERS: &[&str] = &[
    "age",
    "cache-control",
    "etag",
    "last-modified",
    "expires",
    "via",
    "x-cache",
    "x-cache-hits",
    "x-cache-status",
    "cf-cache-status",
    "x-served-by",
    "x-proxy-cache",
    "server-timing",
    "x-vercel-cache",
    "x-nf-request-id",
    "akamai-cache-status",
    "cdn-cache-control",
];

impl Observation {
    /// The value of a recorded cache header.
    pub fn cache_header(&self, name: &str) -> Option<&str> {
        self.cache.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Whether a cache says it answered: an `Age` above zero, or a HIT,
    /// STALE or the like in `X-Cache`, `CF-Cache-Status` and their kin.
    pub fn from_cache(&self) -> bool {
        let hit = |v: &str| {
            let v = v.to_ascii_uppercase();
            ["HIT", "STALE", "UPDATING", "REVALIDATED"].iter().any(|w| v.contains(w))
        };
        self.cache_header("age").and_then(|a| a.trim().parse::<u64>().ok()).is_some_and(|a| a > 0)
            || [
                "x-cache",
                "x-cache-status",
                "cf-cache-status",
                "x-proxy-cache",
                "x-vercel-cache",
                "akamai-cache-status",
            ]
            .iter()
            .any(|h| self.cache_header(h).is_some_and(hit))
    }

    /// Whether the answer came through a cache at all (it names one), hit
    /// or not.
    pub fn through_cache(&self) -> bool {
        self.from_cache()
            || [
                "via",
                "x-cache",
                "x-cache-status",
                "cf-cache-status",
                "x-served-by",
                "x-proxy-cache",
                "akamai-cache-status",
            ]
            .iter()
            .any(|h| self.cache_header(h).is_some())
    }

    /// How long the answer stays fresh by its own word: `s-maxage` (a
    /// shared cache's), else `max-age`, less its `Age`.
    pub fn freshness(&self) -> Option<Duration> {
        let control = self.cache_header("cache-control")?;
        let declared = control
            .split(',')
            .filter_map(|d| d.trim().split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("s-maxage"))
            .and_then(|(_, v)| v.trim().trim_matches('"').parse::<u64>().ok())
            .map(Duration::from_secs)
            .or_else(|| cache_control_max_age(control))?;
        Some(declared.saturating_sub(self.outcome.age))
    }
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

/// The monitor's HTTP clients: one for everywhere, and one per port with
/// `http.connect_to`'s hosts steered to their addresses (a client's DNS
/// overrides apply to a name whatever the port, so the steering is split
/// by the port a URL reaches).
#[derive(Clone, Debug)]
pub struct Fetcher {
    plain: reqwest::Client,
    steered: Vec<(u16, Vec<String>, reqwest::Client)>,
}

impl Fetcher {
    /// Clients with a whole-request `timeout`, sending `user_agent`,
    /// trusting `ca` besides the system's roots, and connecting each
    /// (host, port) of `connect_to` to its address.
    pub fn new(
        timeout: Duration,
        user_agent: &str,
        connect_to: &[(String, u16, std::net::SocketAddr)],
        ca: Option<reqwest::Certificate>,
    ) -> reqwest::Result<Fetcher> {
        let builder = || {
            let mut b = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(10)))
                .user_agent(user_agent);
            if let Some(ca) = &ca {
                b = b.add_root_certificate(ca.clone());
            }
            b
        };
        let plain = builder().build()?;
        let mut ports: Vec<u16> = connect_to.iter().map(|c| c.1).collect();
        ports.sort_unstable();
        ports.dedup();
        let mut steered = Vec::new();
        for port in ports {
            let names: Vec<(String, std::net::SocketAddr)> =
                connect_to.iter().filter(|c| c.1 == port).map(|(h, _, a)| (h.clone(), *a)).collect();
            let hosts = names.iter().map(|(h, _)| h.clone()).collect();
            // The URL names no port of its own here (it is the scheme's),
            // so the address's port is the one dialled.
            let client = builder().dns_resolver(std::sync::Arc::new(Steer { names })).build()?;
            steered.push((port, hosts, client));
        }
        Ok(Fetcher { plain, steered })
    }

    /// The client for a URL: steered when `http.connect_to` names its
    /// host, the plain one otherwise. Redirects are never followed by it.
    pub fn client_for(&self, url: &reqwest::Url) -> &reqwest::Client {
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else { return &self.plain };
        if url.port().is_none()
            && let Some((_, _, c)) =
                self.steered.iter().find(|(p, hosts, _)| *p == port && hosts.iter().any(|h| steers(h, host)))
        {
            return c;
        }
        &self.plain
    }

    /// Fetches `url`, following up to five redirects by hand.
    pub async fn fetch(&self, url: &str, validators: &Validators) -> Observation {
        follow(&|u| self.client_for(u), url, validators, None).await
    }

    /// Fetches a variant's `url`, stopping without a request when a
    /// redirect reaches `canonical` (fetched already this poll).
    pub async fn fetch_until(&self, url: &str, validators: &Validators, canonical: &str) -> Observation {
        follow(&|u| self.client_for(u), url, validators, Some(canonical)).await
    }

    /// Fetches `url` past caches: a query no cache has seen, and
    /// `Cache-Control: no-cache`. A CDN that keys its cache on the path
    /// alone still answers from its copy; the caller sees that in
    /// [`Observation::from_cache`].
    pub async fn fetch_busting(&self, url: &str) -> Observation {
        let mut target = match reqwest::Url::parse(url) {
            Ok(u) => u,
            Err(_) => return unreachable(TransportError::Other),
        };
        let nonce = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        target.query_pairs_mut().append_pair("robotsgate-nocache", &nonce.to_string());
        follow(&|u| self.client_for(u), target.as_str(), &Validators::default(), None).await
    }
}

/// Whether the `connect_to` name `pattern` covers `host`: the same name, or
/// for `*.suffix`, any name ending in `.suffix`.
fn steers(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => {
            host.len() > suffix.len() + 1 && host.ends_with(suffix) && host[..host.len() - suffix.len()].ends_with('.')
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// The resolver of a steered client: the `connect_to` names of one port to
/// their addresses; any other name through the system's resolver.
struct Steer {
    names: Vec<(String, std::net::SocketAddr)>,
}

impl reqwest::dns::Resolve for Steer {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let found = self.names.iter().find(|(p, _)| steers(p, &host)).map(|(_, a)| *a);
        Box::pin(async move {
            if let Some(addr) = found {
                let addrs: reqwest::dns::Addrs = Box::new(std::iter::once(addr));
                return Ok(addrs);
            }
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Fetches `url` with `client`, following up to five redirects by hand.
pub async fn fetch_remote(client: &reqwest::Client, url: &str, validators: &Validators) -> Observation {
    follow(&|_| client, url, validators, None).await
}

async fn follow<'c>(
    pick: &(dyn Fn(&reqwest::Url) -> &'c reqwest::Client + Sync),
    url: &str,
    validators: &Validators,
    stop_at: Option<&str>,
) -> Observation {
    let started = Instant::now();
    let mut hops: Vec<String> = Vec::new();
    let mut current = url.to_string();
    let busting = url.contains("robotsgate-nocache=");
    loop {
        let Ok(parsed) = reqwest::Url::parse(&current) else {
            return failed(TransportError::Other, hops, started);
        };
        let mut request = pick(&parsed).get(parsed);
        if busting {
            request =
                request.header(reqwest::header::CACHE_CONTROL, "no-cache").header(reqwest::header::PRAGMA, "no-cache");
        }
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
                if stop_at.is_some_and(|s| s == next.as_str()) {
                    let mut obs = done(FetchOutcome::status(status).with_redirects(hops), started, false, None, None);
                    obs.landed = true;
                    return obs;
                }
                current = next.to_string();
                continue;
            }
        }
        let header = |name: reqwest::header::HeaderName| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
        };
        let cache: Vec<(String, String)> = CACHE_HEADERS
            .iter()
            .filter_map(|h| {
                response.headers().get(*h).and_then(|v| v.to_str().ok()).map(|v| (h.to_string(), v.to_string()))
            })
            .collect();
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
        let mut obs = done(outcome, started, status == 304, etag, last_modified);
        obs.cache = cache;
        return obs;
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

/// What kind of transport failure a request error is ("timed out",
/// "connection refused", …), said without the URL.
pub fn describe(e: &reqwest::Error) -> String {
    classify(e).to_string()
}

fn classify(e: &reqwest::Error) -> TransportError {
    if e.is_timeout() {
        return TransportError::Timeout;
    }
    // What went wrong, without the URL (a host named `tls.` or `dns.`
    // would otherwise classify its own failures).
    let mut text = String::new();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!("{c:?} {c} "));
        cause = c.source();
    }
    let text = text.to_ascii_lowercase();
    // TLS first: a certificate for the wrong name is reported with the
    // name it was checked against, a `DnsName`, which is no DNS failure.
    if text.contains("certificate") || text.contains("tls") || text.contains("ssl") {
        TransportError::Tls
    } else if text.contains("dns error") || text.contains("failed to lookup") || text.contains("resolve") {
        TransportError::Dns
    } else if text.contains("refused") {
        TransportError::Refused
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
    Observation {
        outcome,
        latency: started.elapsed(),
        not_modified,
        etag,
        last_modified,
        cache: Vec::new(),
        landed: false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_to_names_cover_a_name_or_every_name_below_a_suffix() {
        assert!(steers("shop.test", "shop.test"));
        assert!(steers("Shop.Test", "shop.test"));
        assert!(!steers("shop.test", "www.shop.test"));
        assert!(steers("*.shop.test", "www.shop.test"));
        assert!(steers("*.shop.test", "a.b.shop.test"));
        assert!(!steers("*.shop.test", "shop.test"));
        assert!(!steers("*.shop.test", "evilshop.test"));
    }

    #[tokio::test]
    async fn a_wildcard_connect_to_reaches_its_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 2048];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let host = String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .find(|l| l.to_ascii_lowercase().starts_with("host:"))
                    .unwrap_or("")
                    .to_string();
                let body = format!("# {host}\nUser-agent: *\nDisallow: /x\n");
                let _ = s
                    .write_all(
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                            .as_bytes(),
                    )
                    .await;
            }
        });
        let f = Fetcher::new(Duration::from_secs(3), "t", &[("*.shop.test".into(), 80, addr)], None).unwrap();
        let obs = f.fetch("http://www.shop.test/robots.txt", &Validators::default()).await;
        assert_eq!(obs.outcome.status, Some(200), "{obs:?}");
        // Host names the site, not the address dialled.
        assert!(String::from_utf8_lossy(&obs.outcome.body).contains("www.shop.test"), "{obs:?}");
    }

    #[test]
    fn freshness_is_the_shared_caches_word_less_the_age() {
        let mut obs = given(b"x");
        obs.cache = vec![("cache-control".into(), "public, max-age=600, s-maxage=300".into())];
        obs.outcome.age = Duration::from_secs(100);
        assert_eq!(obs.freshness(), Some(Duration::from_secs(200)));
        obs.cache = vec![("cache-control".into(), "max-age=60".into())];
        assert_eq!(obs.freshness(), Some(Duration::from_secs(0)));
        obs.cache = vec![("x-cache".into(), "HIT from edge".into())];
        assert!(obs.from_cache() && obs.through_cache() && obs.freshness().is_none());
        obs.cache = vec![("via".into(), "1.1 varnish".into())];
        assert!(!obs.from_cache() && obs.through_cache());
    }
}
