//! What the gateway serves at `/robots.txt` for each site, and the
//! last-known-good copy behind it, in memory (one `ArcSwap` per site, so
//! the request path does a single load) and on disk (so a restart during
//! an origin outage still serves the good file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use prometheus::IntCounter;
use rules::Robots;

/// Where the served robots.txt came from; sent as `X-Robots-Source`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The origin's current file, validated.
    Origin,
    /// The last good copy, because the origin is failing.
    LastGood,
    /// A static file or text from the config.
    Static,
    /// The origin's file with the config's managed groups appended.
    Managed,
    /// The last good copy, because the gate holds the origin's new answer.
    Held,
}

impl Origin {
    /// The header value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::Origin => "origin",
            Origin::LastGood => "last-good",
            Origin::Static => "static",
            Origin::Managed => "managed",
            Origin::Held => "held",
        }
    }
}

/// A robots.txt ready to serve.
#[derive(Debug)]
pub struct Served {
    /// The bytes served.
    pub body: Bytes,
    /// A strong ETag of `body`.
    pub etag: String,
    /// Compiled, for crawler verdicts.
    pub robots: Robots,
    /// Where it came from.
    pub source: Origin,
    /// When the origin last gave a good answer (the copy's age).
    pub good_at: SystemTime,
    /// The 200 response header, built once: every request clones it.
    pub head: ResponseHeader,
    /// The same header as HTTP/1.1 bytes, status line included and the
    /// blank line left off, for the own path to write as it is.
    pub wire: Bytes,
    /// The 304 the own path answers a matching `If-None-Match` with, in
    /// the same form: the 200's fields but its length.
    pub wire_304: Bytes,
    /// The `robots_served` counter of this site and source, looked up once.
    pub served: IntCounter,
    /// The origin's lines left out so that the managed groups (the AI
    /// policy's among them) land inside the 500 KiB Google reads.
    pub cut: Option<rules::merge::Cut>,
    /// The origin's file this copy was made from (`body` itself unless
    /// managed groups were added): what the shared history stores as the
    /// revision, and what the compliance ledger names.
    pub origin: Bytes,
}

/// The state of one site's robots.txt.
#[derive(Debug, Default)]
pub enum State {
    /// No good copy yet: `/robots.txt` is proxied to the origin unchanged.
    #[default]
    Unknown,
    /// The origin says there is no file (4xx): honoured, proxied through,
    /// and everything is allowed.
    NoFile(u16),
    /// Served from the store.
    Serve(Arc<Served>),
}

/// What the last refresh saw, for `/status`.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// HTTP status of the last origin fetch.
    pub last_status: Option<u16>,
    /// Transport error of the last origin fetch.
    pub last_error: Option<String>,
    /// When the origin was last fetched (Unix ms, as every time robotsgate's
    /// JSON gives).
    pub last_fetch: Option<u64>,
    /// Lint findings of the current good copy: errors, warnings.
    pub lint: (usize, usize),
    /// Agents named by both the managed groups and the origin's current
    /// good copy (see `rules::merge::contested`).
    pub contested: Vec<String>,
    /// Usage tokens the served file has groups for, on a site that
    /// enforces: no request carries them, so those groups are not enforced.
    pub unenforceable: Vec<String>,
    /// Where the origin's file says otherwise than the site's AI policy.
    pub ai_conflicts: Vec<String>,
    /// The change the gate holds, if it holds one.
    pub held: Option<Arc<crate::robots::hold::Hold>>,
    /// The change the gate would have held on a site in `gate: warn`.
    pub would_hold: Option<Arc<crate::robots::hold::Hold>>,
}

/// Every site's state.
#[derive(Debug)]
pub struct RobotsStore {
    sites: HashMap<String, (ArcSwap<State>, ArcSwap<Health>)>,
    dir: PathBuf,
    /// Outcomes released through the admin API, by site (see
    /// [`crate::robots::hold::outcome_key`]).
    released: std::sync::Mutex<HashMap<String, Vec<String>>>,
}

/// A strong ETag for a body.
pub fn etag_of(body: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(body);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

impl Served {
    /// Prepares `body`, compiled as `robots`, for serving: its response
    /// header and wire bytes. `counter` is the `robots_served` counter for
    /// this site and source.
    pub fn new(
        body: Bytes,
        robots: Robots,
        source: Origin,
        good_at: SystemTime,
        max_age: Duration,
        counter: IntCounter,
    ) -> Served {
        let etag = etag_of(&body);
        let head = response_head(200, &etag, source, max_age, body.len());
        let (mut wire, mut wire_304) = (b"HTTP/1.1 200 OK\r\n".to_vec(), b"HTTP/1.1 304 Not Modified\r\n".to_vec());
        for (name, value) in fields(&etag, source, max_age, body.len()) {
            let line = format!("{name}: {value}\r\n");
            wire.extend_from_slice(line.as_bytes());
            if name != "Content-Length" {
                wire_304.extend_from_slice(line.as_bytes());
            }
        }
        let (wire, wire_304) = (Bytes::from(wire), Bytes::from(wire_304));
        Served {
            robots,
            etag,
            origin: body.clone(),
            body,
            source,
            good_at,
            head,
            wire,
            wire_304,
            served: counter,
            cut: None,
        }
    }

    /// Whether an `If-None-Match` value names this copy.
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match.split(',').any(|t| t.trim() == self.etag || t.trim() == "*")
    }

    /// How old the good copy is.
    pub fn age(&self) -> Duration {
        SystemTime::now().duration_since(self.good_at).unwrap_or_default()
    }
}

/// The header fields `/robots.txt` is served with.
fn fields(etag: &str, source: Origin, max_age: Duration, len: usize) -> [(&'static str, String); 5] {
    [
        ("Content-Type", "text/plain; charset=utf-8".to_string()),
        ("Content-Length", len.to_string()),
        ("ETag", etag.to_string()),
        ("Cache-Control", format!("public, max-age={}", max_age.as_secs())),
        ("X-Robots-Source", source.as_str().to_string()),
    ]
}

/// The header `/robots.txt` is served with.
pub fn response_head(status: u16, etag: &str, source: Origin, max_age: Duration, len: usize) -> ResponseHeader {
    // From `http` parts, which cannot fail, rather than `build`, which can.
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let mut head = ResponseHeader::from(parts);
    for (name, value) in fields(etag, source, max_age, len) {
        // Static names and plain ASCII values: insertion cannot fail.
        let _ = head.insert_header(name, value);
    }
    head
}

impl RobotsStore {
    /// A store for `sites`, keeping copies in `dir`.
    pub fn new<S: AsRef<str>>(sites: &[S], dir: &Path) -> RobotsStore {
        let sites = sites
            .iter()
            .map(|s| {
                (
                    s.as_ref().to_string(),
                    (ArcSwap::from_pointee(State::Unknown), ArcSwap::from_pointee(Health::default())),
                )
            })
            .collect();
        RobotsStore { sites, dir: dir.to_path_buf(), released: Default::default() }
    }

    /// The current state of `site`.
    pub fn state(&self, site: &str) -> Arc<State> {
        self.sites.get(site).map_or_else(|| Arc::new(State::Unknown), |s| s.0.load_full())
    }

    /// Replaces the state of `site`.
    pub fn set(&self, site: &str, state: State) {
        if let Some(s) = self.sites.get(site) {
            s.0.store(Arc::new(state));
        }
    }

    /// What the last refresh saw.
    pub fn health(&self, site: &str) -> Arc<Health> {
        self.sites.get(site).map_or_else(|| Arc::new(Health::default()), |s| s.1.load_full())
    }

    /// Records what a refresh saw.
    pub fn set_health(&self, site: &str, health: Health) {
        if let Some(s) = self.sites.get(site) {
            s.1.store(Arc::new(health));
        }
    }

    fn paths(&self, site: &str) -> (PathBuf, PathBuf) {
        // Site names come from the config; keep them to safe file names.
        let safe: String =
            site.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        (self.dir.join(format!("{safe}.robots.txt")), self.dir.join(format!("{safe}.fetched-at")))
    }

    /// Writes the good copy of `site` to disk, atomically (write, then rename).
    pub fn persist(&self, site: &str, body: &[u8], good_at: SystemTime) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let (body_path, at_path) = self.paths(site);
        let tmp = body_path.with_extension("tmp");
        std::fs::write(&tmp, body)?;
        std::fs::rename(&tmp, &body_path)?;
        let secs = good_at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        std::fs::write(at_path, secs.to_string())
    }

    /// Forgets the disk copy of `site` (the origin removed its file).
    pub fn forget(&self, site: &str) {
        let (body_path, at_path) = self.paths(site);
        let _ = std::fs::remove_file(body_path);
        let _ = std::fs::remove_file(at_path);
    }

    /// The disk copy of `site`, if any: its bytes and when they were good.
    pub fn restore(&self, site: &str) -> Option<(Vec<u8>, SystemTime)> {
        let (body_path, at_path) = self.paths(site);
        let body = std::fs::read(body_path).ok()?;
        let secs: u64 = std::fs::read_to_string(at_path).ok()?.trim().parse().ok()?;
        Some((body, UNIX_EPOCH + Duration::from_secs(secs)))
    }

    fn held_path(&self, site: &str) -> PathBuf {
        self.paths(site).0.with_extension("held")
    }

    /// Keeps the change held for `site` on disk (its status, its body when
    /// a file, since when), so that a restart during an outage still
    /// knows it holds it: the label crawlers get and `/status` stay true.
    pub fn persist_hold(&self, site: &str, status: Option<u16>, body: Option<&[u8]>, since: SystemTime) {
        let secs = since.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let status = status.map_or_else(|| "-".to_string(), |s| s.to_string());
        let mut text = format!("{secs}\n{status}\n{}\n", if body.is_some() { "body" } else { "none" }).into_bytes();
        text.extend_from_slice(body.unwrap_or_default());
        let path = self.held_path(site);
        let tmp = path.with_extension("held-tmp");
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&tmp, text))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!(site, "cannot keep the held change on disk: {e}");
        }
    }

    /// Forgets the held change of `site` on disk.
    pub fn forget_hold(&self, site: &str) {
        let _ = std::fs::remove_file(self.held_path(site));
    }

    /// The held change of `site` kept on disk: status, body, since.
    pub fn restore_hold(&self, site: &str) -> Option<(Option<u16>, Option<Vec<u8>>, SystemTime)> {
        let raw = std::fs::read(self.held_path(site)).ok()?;
        let mut parts = raw.splitn(4, |b| *b == b'\n');
        let secs: u64 = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        let status = std::str::from_utf8(parts.next()?).ok()?.parse().ok();
        let has_body = parts.next()? == b"body";
        let body = has_body.then(|| parts.next().unwrap_or_default().to_vec());
        Some((status, body, UNIX_EPOCH + Duration::from_secs(secs)))
    }

    /// Releases the held outcome `key` of `site`: the gate lets exactly
    /// that outcome through from now on. False for an unknown site.
    pub fn release(&self, site: &str, key: &str) -> bool {
        if !self.sites.contains_key(site) {
            return false;
        }
        let mut released = self.released.lock().unwrap_or_else(|e| e.into_inner());
        let keys = released.entry(site.to_string()).or_default();
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
        true
    }

    /// Whether `key` was released for `site` through the admin API.
    pub fn is_released(&self, site: &str, key: &str) -> bool {
        let released = self.released.lock().unwrap_or_else(|e| e.into_inner());
        released.get(site).is_some_and(|keys| keys.iter().any(|k| k == key))
    }

    /// Spends the admin API's release of `key` for `site`: the released
    /// outcome was served and is replaced, so it is judged afresh when it
    /// comes again. True when there was one.
    pub fn spend(&self, site: &str, key: &str) -> bool {
        let mut released = self.released.lock().unwrap_or_else(|e| e.into_inner());
        let Some(keys) = released.get_mut(site) else { return false };
        let before = keys.len();
        keys.retain(|k| k != key);
        keys.len() != before
    }

    /// The names of all sites.
    pub fn sites(&self) -> impl Iterator<Item = &str> {
        self.sites.keys().map(String::as_str)
    }
}
