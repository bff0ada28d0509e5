//! The `proxy:` part of the config: the gateway's listeners, TLS, threads,
//! state folder, timeouts, staleness, the compliance ledger and crawler
//! identity.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::{default_interval, default_true, humantime_serde_compat};

/// `robots-proxy` settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySettings {
    /// Plain-HTTP listeners, `host:port`.
    #[serde(default)]
    pub listen: Vec<String>,
    /// TLS listeners with their certificate and key (PEM files).
    #[serde(default)]
    pub tls_listen: Vec<TlsListener>,
    /// Offer HTTP/2 on the TLS listeners (ALPN `h2`, then `http/1.1`), as
    /// nginx and CDNs do and Googlebot uses where offered. On by default;
    /// `false` offers HTTP/1.1 alone.
    #[serde(default = "default_true")]
    pub http2: bool,
    /// The admin listener (`/healthz`, `/metrics`, `/status`); localhost by default.
    #[serde(default = "default_admin")]
    pub admin: String,
    /// Token for admin endpoints beyond health and metrics. Prefer the
    /// environment variable `ROBOTSGATE_ADMIN_TOKEN`, which wins.
    #[serde(default)]
    pub admin_token: Option<String>,
    /// A file holding the admin token (its first line), read at start: what
    /// systemd's `LoadCredential=` gives (`$CREDENTIALS_DIRECTORY/admin-token`).
    /// Every process started from the config, an upgrade's included, reads
    /// the same token. `ROBOTSGATE_ADMIN_TOKEN` still wins.
    #[serde(default)]
    pub admin_token_file: Option<PathBuf>,
    /// Where last-known-good copies are kept across restarts.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// The Unix socket a new process (`robots-proxy --upgrade`) takes the
    /// listening sockets over on; default `<state_dir>/upgrade.sock`, which
    /// survives systemd's `PrivateTmp=` as `/tmp` does not.
    #[serde(default)]
    pub upgrade_sock: Option<PathBuf>,
    /// How often each origin's robots.txt is refreshed.
    #[serde(default = "default_interval", with = "humantime_serde_compat")]
    pub refresh: Duration,
    /// How old a last-known-good copy may be and still be served when the
    /// origin fails (Google's own fallback is 30 days).
    #[serde(default = "default_staleness", with = "humantime_serde_compat")]
    pub max_staleness: Duration,
    /// Product tokens of crawlers to recognise besides the built-in list.
    #[serde(default)]
    pub crawlers: Vec<String>,
    /// Status for requests whose Host names no site.
    #[serde(default = "default_unknown_status")]
    pub unknown_host_status: u16,
    /// How long in-flight requests get to finish on SIGTERM.
    #[serde(default = "default_grace", with = "humantime_serde_compat")]
    pub grace_period: Duration,
    /// How long a proxied request waits on the origin: for its answer to
    /// begin, and between reads of its body (nginx's `proxy_read_timeout`).
    /// Past it, the client gets 504, or the connection closes mid-body.
    #[serde(default = "default_origin_timeout", with = "humantime_serde_compat")]
    pub origin_timeout: Duration,
    /// How long a client may take over one request head, from its first
    /// byte to its blank line, and how long a request body may pause
    /// (nginx's `client_header_timeout` and `client_body_timeout`). Past
    /// it the client gets 408 and the connection closes. Both paths apply it.
    #[serde(default = "default_origin_timeout", with = "humantime_serde_compat")]
    pub client_timeout: Duration,
    /// A PEM bundle of CA certificates trusted for TLS origins
    /// (`origin_tls: true`), instead of the system's roots.
    #[serde(default)]
    pub origin_ca_file: Option<PathBuf>,
    /// Worker threads of the proxy service: `auto` (the default: one per
    /// core available to the process) or a number. Set a number where the
    /// gateway shares its machine with the origin or a database: it then
    /// takes no more than its share.
    #[serde(default)]
    pub threads: Threads,
    /// Serve plain HTTP/1.1 requests on the gateway's own lean path (the
    /// default). `false` sends every request through Pingora's full proxy
    /// pipeline, for comparison or as a fallback.
    #[serde(default = "default_true")]
    pub fast_path: bool,
    /// Crawler verification: whether a request whose User-Agent claims a
    /// catalogued crawler comes from it. Off without this section.
    #[serde(default)]
    pub identity: Option<IdentitySettings>,
    /// The compliance ledger of the crawler requests this gateway serves,
    /// judged against the robots.txt each crawler could hold and written
    /// to `database:` as counts. Off without this section.
    #[serde(default)]
    pub ledger: Option<LedgerSettings>,
    /// How gateways on one `database:` see each other, to share each
    /// site's crawl budgets.
    #[serde(default)]
    pub fleet: FleetSettings,
}

/// `proxy.fleet`: each gateway says it is alive in the shared database
/// every `heartbeat`; one not heard from for `dead_after` is gone, and
/// the others take its share of each budget. The share is re-read every
/// `heartbeat`, so a death is taken up within `dead_after + heartbeat`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSettings {
    /// How often a gateway says it is alive and re-reads the fleet.
    #[serde(default = "default_heartbeat", with = "humantime_serde_compat")]
    pub heartbeat: Duration,
    /// How long a gateway not heard from still counts as alive.
    #[serde(default = "default_dead_after", with = "humantime_serde_compat")]
    pub dead_after: Duration,
}

impl Default for FleetSettings {
    fn default() -> FleetSettings {
        FleetSettings { heartbeat: default_heartbeat(), dead_after: default_dead_after() }
    }
}

fn default_heartbeat() -> Duration {
    Duration::from_secs(5)
}

fn default_dead_after() -> Duration {
    Duration::from_secs(15)
}

/// `proxy.ledger`: how the gateway keeps its share of the compliance ledger.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerSettings {
    /// How often the counts in memory are written to the database.
    #[serde(default = "default_ledger_flush", with = "humantime_serde_compat")]
    pub flush: Duration,
    /// Most distinct rows held in memory between writes (while the
    /// database is down, too); requests past it are dropped and counted.
    #[serde(default = "default_ledger_rows")]
    pub max_rows: usize,
    /// Most requests waiting to be judged; past it they are dropped and
    /// counted, so serving never waits on the ledger.
    #[serde(default = "default_ledger_queue")]
    pub queue: usize,
    /// Size in MiB of the journal under `state_dir/ledger/` that keeps
    /// every event until the database counts it, so a `kill -9` loses
    /// none; 0 turns it off. Written out at start (a full disk is an error
    /// then, never a crash later).
    #[serde(default = "default_ledger_journal_mib")]
    pub journal_mib: usize,
}

impl Default for LedgerSettings {
    fn default() -> LedgerSettings {
        LedgerSettings {
            flush: default_ledger_flush(),
            max_rows: default_ledger_rows(),
            queue: default_ledger_queue(),
            journal_mib: default_ledger_journal_mib(),
        }
    }
}

fn default_ledger_flush() -> Duration {
    Duration::from_secs(10)
}

fn default_ledger_rows() -> usize {
    100_000
}

fn default_ledger_journal_mib() -> usize {
    64
}

fn default_ledger_queue() -> usize {
    65_536
}

/// `proxy.identity`: how claims to be a crawler are verified.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySettings {
    /// Verify only these crawlers, by token; empty (the default): every
    /// catalogued crawler. Others are judged by their claim alone.
    #[serde(default)]
    pub only: Vec<String>,
    /// Where the IP-range feeds' last good copies are kept; default
    /// `<state_dir>/feeds`.
    #[serde(default)]
    pub feeds_dir: Option<PathBuf>,
    /// How often feeds are fetched again.
    #[serde(default = "default_feed_refresh", with = "humantime_serde_compat")]
    pub refresh: Duration,
    /// `false`: fetch no feed, use the copies in `feeds_dir` only.
    #[serde(default = "default_true")]
    pub fetch: bool,
    /// Forward-confirmed reverse DNS for crawlers whose operators publish
    /// host names.
    #[serde(default = "default_true")]
    pub reverse_dns: bool,
    /// DNS servers, `host:port`; default: the system's (/etc/resolv.conf).
    #[serde(default)]
    pub dns_servers: Vec<std::net::SocketAddr>,
    /// Longest one DNS query waits.
    #[serde(default = "default_dns_timeout", with = "humantime_serde_compat")]
    pub dns_timeout: Duration,
    /// Longest a request waits for its verification; past it the request
    /// goes on unverified and the answer serves the next one.
    #[serde(default = "default_budget", with = "humantime_serde_compat")]
    pub budget: Duration,
    /// Most reverse-DNS lookups at once.
    #[serde(default = "default_in_flight")]
    pub dns_in_flight: usize,
    /// Peers (CIDRs, like `10.0.0.0/8`) whose `X-Forwarded-For` names the
    /// client; from any other peer the socket's address is the client's.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Peers in `trusted_proxies` open each plain-HTTP connection with a
    /// PROXY protocol header (version 1 or 2) naming the client, as HAProxy
    /// and most load balancers can send. Required from them when on.
    #[serde(default)]
    pub proxy_protocol: bool,
}

fn default_feed_refresh() -> Duration {
    Duration::from_secs(24 * 3600)
}

fn default_dns_timeout() -> Duration {
    Duration::from_secs(2)
}

fn default_budget() -> Duration {
    Duration::from_millis(200)
}

fn default_in_flight() -> usize {
    256
}

/// What the gateway does with a request whose claim to be a crawler fails
/// verification.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Spoofed {
    /// Answer 403.
    Refuse,
    /// Forward it, judged as the anonymous client it is (the `*` group),
    /// with `Robotsgate-Crawler: TOKEN; identity=spoofed` for the origin.
    #[default]
    Tag,
    /// Forward it, judged as the crawler it claims to be.
    Allow,
}

/// A TLS listener.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsListener {
    /// `host:port`.
    pub addr: String,
    /// Certificate chain, PEM: the one served to a client that names no
    /// host (no SNI) or a host no certificate covers.
    pub cert: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
    /// More certificates on this listener, each chosen for the host names
    /// it covers (its subject alternative names, wildcards included) by the
    /// name the client asks for (SNI).
    #[serde(default)]
    pub certs: Vec<CertPair>,
    /// The oldest TLS version accepted: `"1.2"` (the default, Mozilla's
    /// intermediate profile, as nginx's and most CDNs' default) or `"1.3"`.
    #[serde(default)]
    pub min_version: Option<String>,
    /// TLS 1.2 cipher suites, as an OpenSSL cipher list; default Mozilla's
    /// intermediate list (ECDHE with AES-GCM or ChaCha20-Poly1305).
    #[serde(default)]
    pub ciphers: Option<String>,
    /// TLS 1.3 cipher suites, as OpenSSL names them, `:`-separated; default
    /// OpenSSL's (all three).
    #[serde(default)]
    pub ciphersuites: Option<String>,
}

/// A certificate chain and its key, PEM files.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertPair {
    /// Certificate chain.
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
}

/// `proxy.threads`: `auto` or a count.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Threads {
    /// A count (validated to be at least 1).
    Count(usize),
    /// A word: only `auto` is valid.
    Word(String),
}

impl Default for Threads {
    fn default() -> Threads {
        Threads::Word("auto".into())
    }
}

impl Threads {
    /// The worker threads to run: `auto` is the cores available.
    pub fn count(&self) -> usize {
        match self {
            Threads::Count(n) => (*n).max(1),
            Threads::Word(_) => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        }
    }

    /// Why the value is not one, if it is not.
    pub(crate) fn invalid(&self) -> Option<String> {
        match self {
            Threads::Count(0) => Some("0 threads serve nothing: give `auto` or a number from 1".into()),
            Threads::Word(w) if w != "auto" => Some(format!("`{w}`: give `auto` or a number of threads")),
            _ => None,
        }
    }
}

fn default_admin() -> String {
    "127.0.0.1:9180".into()
}

fn default_state_dir() -> PathBuf {
    "var/proxy".into()
}

fn default_staleness() -> Duration {
    Duration::from_secs(30 * 24 * 3600)
}

fn default_unknown_status() -> u16 {
    421
}

fn default_origin_timeout() -> Duration {
    Duration::from_secs(60)
}

fn default_grace() -> Duration {
    Duration::from_secs(10)
}
