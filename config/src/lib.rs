//! What both robotsgate daemons share at start-up: the configuration (one
//! YAML file, one schema, defined here once so the proxy and the monitor
//! never disagree about what a key means; every key is documented in
//! `config.example.yaml`) and the logging setup ([`telemetry`]).
//!
//! Loading is strict: unknown keys, wrong types and duplicate keys fail with
//! the file, line and column at fault; values that parse but make no sense
//! (a relative robots.txt URL, a zero interval) fail with the key's path.

#![deny(missing_docs)]

mod credentials;
mod explain;
pub mod origin;
pub mod pins;
pub mod telemetry;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use credentials::{ADMIN_TOKEN_ENV, same_token};
pub use pins::{Expectation, GateMode, Pins, UrlEntry, UrlSet};

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    // The cause is part of the message, not a source: printed as a chain
    // (`{:#}`), a source would say "No such file or directory" twice.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The YAML is malformed, or does not fit the schema.
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value parsed but is not acceptable.
    #[error("{path}: `{key}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key's path, like `sites[0].url`.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the monitor keeps its history: a file path for embedded SQLite
    /// (created on first start), or a `postgres://` URL. Unset, the monitor
    /// uses `var/robotsgate.db` (see [`Config::database`]); set, gateways
    /// keep their last good copies there too.
    #[serde(default)]
    pub database: Option<String>,
    /// Crawlers, by product token, whose verdicts are tested for every site
    /// that does not list its own.
    #[serde(default = "default_agents")]
    pub agents: Vec<String>,
    /// Default poll interval, e.g. `5m`.
    #[serde(default = "default_interval", with = "humantime_serde_compat")]
    pub interval: Duration,
    /// How long fetch rows are kept; revisions are kept forever.
    #[serde(default = "default_retention", with = "humantime_serde_compat")]
    pub fetch_retention: Duration,
    /// Log lines as `text` (the default) or `json`, one object per line;
    /// `ROBOTSGATE_LOG_FORMAT` overrides it.
    #[serde(default)]
    pub log_format: Option<telemetry::LogFormat>,
    /// How long compliance ledger rows are kept (by their UTC day).
    #[serde(default = "default_retention", with = "humantime_serde_compat")]
    pub compliance_retention: Duration,
    /// Crawler verification for the access logs the monitor imports
    /// (`ingest`, `logs:`), for a monitor with no gateway. Unset, the
    /// monitor uses `proxy.identity` when there is one; with neither,
    /// imported requests' identity is "not checked".
    #[serde(default)]
    pub identity: Option<IdentitySettings>,
    /// Alert on violations by spoofed claims too, not only verified ones
    /// (they are on the Compliance page either way).
    #[serde(default)]
    pub compliance_alert_spoofed: bool,
    /// How long robots.txt may fail (5xx, 429, no answer) before the outage
    /// is critical. Google stops crawling at the first failure, but short
    /// CDN blips are common: with `15m`, an outage is a warning when it
    /// starts and, if it lasts, a second, critical alert follows. `0s`
    /// (the default) makes every outage critical at once.
    #[serde(default, with = "humantime_serde_compat")]
    pub critical_after: Duration,
    /// The sites to watch.
    pub sites: Vec<Site>,
    /// Where alerts are emailed. Without it, alerts are recorded and logged.
    #[serde(default)]
    pub email: Option<Email>,
    /// HTTP client settings for fetching robots.txt.
    #[serde(default)]
    pub http: Http,
    /// The gateway's settings; `robots-proxy` needs them, the monitor
    /// ignores them.
    #[serde(default)]
    pub proxy: Option<ProxySettings>,
    /// Where alerts go besides email: webhooks and Slack, each for some
    /// sites and severities.
    #[serde(default)]
    pub channels: Vec<Channel>,
    /// The monitor's web console. `robots-monitor run` serves it when this
    /// is set; `robots-monitor serve` always does.
    #[serde(default)]
    pub console: Option<Console>,
    /// Crawler catalogue entries, in the format of the built-in
    /// `crawlers/catalogue.yaml`: added to it, or replacing the built-in
    /// entry with the same token. Both daemons read them.
    #[serde(default)]
    pub crawlers: Vec<robotsgate_crawlers::Crawler>,
}

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

/// How the gateway fronts one site.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteProxy {
    /// Host header values routed to this site.
    pub hosts: Vec<String>,
    /// The origin: `host:port`, or a URL (`http://host:port`,
    /// `https://host`); read through [`SiteProxy::endpoint`].
    pub origin: String,
    /// Connect to the origin over TLS.
    #[serde(default)]
    pub origin_tls: bool,
    /// Tell the origin who the client is: `X-Forwarded-For`,
    /// `X-Forwarded-Proto` and `Forwarded` (the default). At the edge the
    /// gateway writes them from what it saw, dropping what the client
    /// sent; behind `proxy.identity.trusted_proxies` it keeps their chain
    /// and appends the peer. `false` passes them as the client sent them.
    #[serde(default = "default_true")]
    pub forwarded_headers: bool,
    /// SNI and Host for the origin; the first of `hosts` by default.
    #[serde(default)]
    pub sni: Option<String>,
    /// Answer 403 to crawlers robots.txt disallows (opt-in).
    #[serde(default)]
    pub enforce: bool,
    /// How enforcement reads the origin's paths: with `true` (the
    /// default, what nginx and most frameworks do) `%2F`, `\` and `%5C`
    /// are `/` and repeated slashes are one; `false` keeps RFC 3986 alone.
    /// See `rules::normal` and docs/OPERATIONS.md.
    #[serde(default = "default_true")]
    pub merge_slashes: bool,
    /// Serve this file's contents as robots.txt instead of the origin's.
    #[serde(default)]
    pub robots_file: Option<PathBuf>,
    /// Serve this text as robots.txt instead of the origin's.
    #[serde(default)]
    pub robots_static: Option<String>,
    /// Groups appended to the origin's robots.txt (for example a block
    /// list of AI crawlers).
    #[serde(default)]
    pub managed_groups: Option<String>,
    /// What to do with a request that claims to be a crawler and fails
    /// verification (with `proxy.identity`): `refuse`, `tag` (the default)
    /// or `allow`.
    #[serde(default)]
    pub spoofed: Spoofed,
    /// One AI policy by purpose, compiled into robots.txt (groups for the
    /// catalogue's crawlers of each denied purpose, `Content-Signal` and
    /// `Content-Usage` lines), the `Content-Usage` header on proxied
    /// pages, and, if asked, enforcement.
    #[serde(default)]
    pub ai_policy: Option<AiPolicySettings>,
}

impl SiteProxy {
    /// The origin to connect to and whether over TLS, from `origin` and
    /// `origin_tls` (validation refuses what this cannot read).
    pub fn endpoint(&self) -> Result<origin::Endpoint, String> {
        origin::endpoint(&self.origin, self.origin_tls)
    }
}

/// Allowed or not, for one purpose.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Stance {
    /// Welcome.
    #[default]
    Allow,
    /// Not for this purpose.
    Deny,
}

/// What enforcement answers a crawler whose purpose the policy denies.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AiEnforce {
    /// No enforcement: the policy is stated, not imposed.
    #[default]
    Off,
    /// 403.
    Refuse,
    /// 402 with `payment_body` and `payment_headers`, for owners who sell access.
    Pay,
    /// 429 with `Retry-After`, to slow crawlers down.
    Slow,
}

/// `sites[].proxy.ai_policy`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AiPolicySettings {
    /// Search engines.
    #[serde(default)]
    pub search: Stance,
    /// AI search and answers.
    #[serde(default)]
    pub ai_search: Stance,
    /// Training AI models.
    #[serde(default)]
    pub ai_training: Stance,
    /// Fetches a person asks an AI assistant for.
    #[serde(default)]
    pub user_fetch: Stance,
    /// What a crawler of a denied purpose gets (not spoofed: a spoofed
    /// claim is the site's `spoofed:` business).
    #[serde(default)]
    pub enforce: AiEnforce,
    /// The 402 body.
    #[serde(default)]
    pub payment_body: Option<String>,
    /// Extra 402 headers (a price, a link to terms).
    #[serde(default)]
    pub payment_headers: BTreeMap<String, String>,
    /// The 429's `Retry-After`.
    #[serde(default = "default_retry_after", with = "humantime_serde_compat")]
    pub retry_after: Duration,
}

impl AiPolicySettings {
    /// The engine's policy for these settings.
    pub fn policy(&self) -> rules::ai_policy::AiPolicy {
        let stance = |s: Stance| match s {
            Stance::Allow => rules::ai_policy::Stance::Allow,
            Stance::Deny => rules::ai_policy::Stance::Deny,
        };
        rules::ai_policy::AiPolicy {
            search: stance(self.search),
            ai_search: stance(self.ai_search),
            ai_training: stance(self.ai_training),
            user_fetch: stance(self.user_fetch),
        }
    }
}

fn default_retry_after() -> Duration {
    Duration::from_secs(3600)
}

/// One site.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Site {
    /// A short unique name, used in commands and emails.
    pub name: String,
    /// The robots.txt URL to poll. Exactly one of `url` and `file`.
    #[serde(default)]
    pub url: Option<String>,
    /// A local robots.txt to watch. Exactly one of `url` and `file`.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Poll interval for this site; the top-level `interval` if absent.
    #[serde(default, with = "humantime_serde_compat::option")]
    pub interval: Option<Duration>,
    /// Crawlers for this site; the top-level `agents` if absent.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
    /// Named URL sets re-tested on every change, with the verdicts they
    /// must keep (`expect`).
    #[serde(default)]
    pub url_sets: BTreeMap<String, UrlSet>,
    /// What the gate does with a robots.txt change that breaks a pin or
    /// the floor: `hold` (the default), `warn` or `off`.
    #[serde(default)]
    pub gate: GateMode,
    /// How `robots-proxy` fronts this site, if it does.
    #[serde(default)]
    pub proxy: Option<SiteProxy>,
    /// Access logs of this site that the monitor tails into the compliance
    /// ledger, following rotation (rename-and-create and copytruncate).
    #[serde(default)]
    pub logs: Vec<LogSource>,
}

/// `sites[].logs[]`: one access log to tail.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSource {
    /// The live log file (its rotated copy, `PATH.1`, is read too when it
    /// holds lines not yet counted).
    pub path: PathBuf,
    /// `combined` (nginx's and Apache's; the default), `common`,
    /// `vhost_combined` (Apache's, Debian's `other_vhosts_access.log`),
    /// `nginx` / `apache` with `layout`, `caddy`, `json`, `cloudflare`,
    /// `fastly`, `w3c` / `iis`, `cloudfront`, `alb` or `elb`
    /// (`robotsgate_compliance::log::NAMES`).
    #[serde(default = "default_log_format")]
    pub format: String,
    /// For `nginx` and `apache`: the server's own `log_format` or
    /// `LogFormat` text, as in its configuration.
    #[serde(default)]
    pub layout: Option<String>,
    /// For `json`: the field names, by key (`time`, `client`, `method`,
    /// `target`, `status`, `user_agent`, `host`).
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

fn default_log_format() -> String {
    "combined".into()
}

impl LogSource {
    /// The reader of this log's lines; why not, naming the key at fault.
    pub fn reader(&self) -> Result<robotsgate_compliance::log::Format, (&'static str, String)> {
        use robotsgate_compliance::log::Format;
        match (&self.layout, self.format.as_str()) {
            (Some(text), kind) => Format::with_layout(kind, text).map_err(|e| {
                let key = if matches!(kind, "nginx" | "apache") { "layout" } else { "format" };
                (key, e)
            }),
            (None, name) => Format::named(name, self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| ("format", e)),
        }
    }
}

/// Where the monitor reads a site's robots.txt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Polled over HTTP(S).
    Url(String),
    /// Read from disk and watched.
    File(PathBuf),
    /// Neither, but gateways front it: its origin, asked the way
    /// robots-proxy asks it (`proxy.origin`, naming the site's host).
    Origin {
        /// `host:port`.
        origin: String,
        /// The name sent as `Host` and SNI (`proxy.sni`, else the first host).
        host: String,
        /// Over TLS.
        tls: bool,
    },
    /// Gateways serve this text (`proxy.robots_static`): the config is
    /// the file.
    Static(String),
    /// Nothing to read: no `url`, `file` or `proxy`.
    None,
}

impl Source {
    /// Where the site's robots.txt is read, as alerts, pages and
    /// `check-config` name it.
    pub fn location(&self) -> String {
        match self {
            Source::Url(u) => u.clone(),
            Source::File(p) => p.display().to_string(),
            Source::Origin { origin, host, tls } => {
                let scheme = if *tls { "https" } else { "http" };
                format!("{scheme}://{host}/robots.txt at the gateway's origin {origin}")
            }
            Source::Static(_) => "the gateway's robots_static text".to_string(),
            Source::None => String::new(),
        }
    }

    /// How the monitor watches the site, in words.
    pub fn how(&self) -> &'static str {
        match self {
            Source::Url(_) => "polled (url)",
            Source::File(_) => "watched file",
            Source::Origin { .. } => "polled at the gateway's origin (proxy.origin), as robots-proxy fetches it",
            Source::Static(_) => "static text the gateway serves (proxy.robots_static)",
            Source::None => "not watched",
        }
    }
}

impl Site {
    /// How this site's origin reads slashes in a path, for every judgement
    /// of a request (the gateway's enforcement and both compliance ledgers):
    /// merged (nginx's default) unless `proxy.merge_slashes: false`.
    pub fn slashes(&self) -> rules::normal::Slashes {
        match &self.proxy {
            Some(p) if !p.merge_slashes => rules::normal::Slashes::Strict,
            _ => rules::normal::Slashes::Merged,
        }
    }

    /// Where the monitor reads this site's robots.txt.
    pub fn source(&self) -> Source {
        match (&self.url, &self.file, &self.proxy) {
            (Some(u), _, _) => Source::Url(u.clone()),
            (None, Some(f), _) => Source::File(f.clone()),
            // What the gateways serve is what the monitor watches.
            (None, None, Some(p)) => match (&p.robots_static, &p.robots_file) {
                (Some(text), _) => Source::Static(text.clone()),
                (None, Some(f)) => Source::File(f.clone()),
                (None, None) => Source::Origin {
                    origin: p.origin.clone(),
                    host: p.sni.clone().or_else(|| p.hosts.first().cloned()).unwrap_or_default(),
                    tls: p.origin_tls,
                },
            },
            (None, None, None) => Source::None,
        }
    }
}

/// How much an alert matters.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum AlertSeverity {
    /// A change that disallows `/` for a tested crawler, or robots.txt
    /// failing (5xx, 429, unreachable): Google stops crawling the site.
    Critical,
    /// Verdicts of saved URLs flipped, or pinned verdicts broke.
    Warning,
    /// The file changed and nothing tested moved.
    Info,
}

impl AlertSeverity {
    /// `critical`, `warning` or `info`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AlertSeverity::Critical => "critical",
            AlertSeverity::Warning => "warning",
            AlertSeverity::Info => "info",
        }
    }
}

/// An alert channel besides email: a signed JSON webhook, or a Slack
/// incoming webhook. Alerts reach it through the same outbox as mail,
/// retried until it answers 2xx.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Channel {
    /// A unique name (it keys deliveries in the database).
    pub name: String,
    /// Where to POST the alert as JSON.
    #[serde(default)]
    pub webhook: Option<String>,
    /// A Slack incoming-webhook URL.
    #[serde(default)]
    pub slack: Option<String>,
    /// The environment variable holding the webhook's HMAC-SHA256 secret
    /// (never the file); unsigned without it.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// Only alerts of these severities (default: all).
    #[serde(default)]
    pub severities: Vec<AlertSeverity>,
    /// Only alerts of these sites (default: all).
    #[serde(default)]
    pub sites: Vec<String>,
    /// `daily`: one message a day listing the alerts this channel takes,
    /// instead of one message per alert.
    #[serde(default)]
    pub digest: Option<Digest>,
    /// The UTC hour (0-23) the daily digest goes out; 8 by default.
    #[serde(default = "default_digest_hour")]
    pub digest_hour: u8,
}

/// How often a digest channel receives its digest.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Digest {
    /// Once a day, at the channel's `digest_hour`, covering the 24 hours
    /// before it.
    Daily,
}

fn default_digest_hour() -> u8 {
    8
}

impl Channel {
    /// Whether an alert of `severity` about `site` goes to this channel.
    pub fn takes(&self, site: &str, severity: AlertSeverity) -> bool {
        (self.severities.is_empty() || self.severities.contains(&severity))
            && (self.sites.is_empty() || self.sites.iter().any(|s| s == site))
    }
}

/// The monitor's web console. Reading needs nothing; anything that writes
/// needs the admin token (see [`Config::admin_token`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Console {
    /// `host:port`; localhost by default, so nothing is exposed unasked.
    #[serde(default = "default_console_listen")]
    pub listen: String,
    /// The address people reach the console at (`https://robots.example.com`),
    /// for links in alerts; none without it.
    #[serde(default)]
    pub url: Option<String>,
    /// Show the console to anyone who reaches `listen`, with no token. Off
    /// by default: on an address others can reach, readers sign in with
    /// `ROBOTSGATE_CONSOLE_TOKEN`, since the pages show client addresses
    /// and sample URLs.
    #[serde(default)]
    pub public: bool,
    /// An htpasswd file of readers who sign in with a name and a password
    /// (HTTP basic auth), one `name:hash` a line, the hashes bcrypt, as
    /// `htpasswd -B` writes them; relative to the config file. With it,
    /// every page and API call asks, on any address, loopback included.
    #[serde(default)]
    pub htpasswd: Option<PathBuf>,
}

impl Default for Console {
    fn default() -> Console {
        Console { listen: default_console_listen(), url: None, public: false, htpasswd: None }
    }
}

/// SMTP settings. Credentials come from the environment
/// (`ROBOTSGATE_SMTP_USER`, `ROBOTSGATE_SMTP_PASSWORD`), never the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Email {
    /// SMTP host.
    pub host: String,
    /// SMTP port.
    pub port: u16,
    /// Transport security.
    #[serde(default)]
    pub security: Security,
    /// Sender address.
    pub from: String,
    /// Recipients.
    pub to: Vec<String>,
    /// A PEM CA certificate to trust for the SMTP server besides the
    /// system's (a private relay's CA); relative to the config file.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// How the SMTP connection is secured.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// Plain, then upgraded with STARTTLS (port 587).
    #[default]
    Starttls,
    /// TLS from the start (port 465).
    Tls,
    /// No encryption: only for a relay on localhost.
    None,
}

/// HTTP client settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    /// Whole-request timeout.
    #[serde(default = "default_timeout", with = "humantime_serde_compat")]
    pub timeout: Duration,
    /// The User-Agent sent with every fetch.
    #[serde(default = "default_user_agent")]
    pub user_agent: String,
}

impl Default for Http {
    fn default() -> Self {
        Http { timeout: default_timeout(), user_agent: default_user_agent() }
    }
}

fn default_agents() -> Vec<String> {
    vec!["Googlebot".into()]
}
fn default_interval() -> Duration {
    Duration::from_secs(300)
}
fn default_retention() -> Duration {
    Duration::from_secs(90 * 24 * 3600)
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
fn default_true() -> bool {
    true
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
    fn invalid(&self) -> Option<String> {
        match self {
            Threads::Count(0) => Some("0 threads serve nothing: give `auto` or a number from 1".into()),
            Threads::Word(w) if w != "auto" => Some(format!("`{w}`: give `auto` or a number of threads")),
            _ => None,
        }
    }
}
fn default_origin_timeout() -> Duration {
    Duration::from_secs(60)
}
fn default_grace() -> Duration {
    Duration::from_secs(10)
}
fn default_console_listen() -> String {
    "127.0.0.1:8484".to_string()
}
fn default_timeout() -> Duration {
    Duration::from_secs(20)
}
fn default_user_agent() -> String {
    concat!("robotsgate-monitor/", env!("CARGO_PKG_VERSION"), " (robots.txt monitor)").into()
}

/// The YAML reader's limits. Its defaults (250,000 nodes) guard against
/// hostile documents, but a monitor's config lists every site, about ten
/// nodes each, so a 100,000-site fleet needs more; the file is the
/// operator's own. Depth and alias limits stay at the defaults.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = 20_000_000;
    budget.max_events = 40_000_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

impl Config {
    /// The monitor's database: the `database:` value, or the embedded
    /// default `var/robotsgate.db`.
    pub fn database(&self) -> &str {
        self.database.as_deref().unwrap_or("var/robotsgate.db")
    }

    /// [`Config::load`], then the daemon's logging, in the format the
    /// config and `ROBOTSGATE_LOG_FORMAT` choose (text when the config
    /// cannot be read, so that its error is logged plainly).
    pub fn load_and_log(path: &Path) -> Result<Config, ConfigError> {
        match Config::load(path) {
            Ok(config) => {
                telemetry::init_as(telemetry::LogFormat::chosen(config.log_format));
                Ok(config)
            }
            Err(e) => {
                telemetry::init();
                Err(e)
            }
        }
    }

    /// Reads, parses and validates `path`. Every relative path the file
    /// names (`file:`, `robots_file`, `logs[].path`, `state_dir`,
    /// `admin_token_file`, certificates, `htpasswd`, `database:` for
    /// SQLite, ...) is taken relative to the config file's directory, never
    /// the working directory, so that every process started from the file
    /// reads the same files wherever it starts.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read { path: path.into(), error })?;
        let mut config = Config::parse(&text, path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let anchor = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for site in &mut config.sites {
            if let Some(f) = &mut site.file {
                anchor(f);
            }
            if let Some(f) = site.proxy.as_mut().and_then(|p| p.robots_file.as_mut()) {
                anchor(f);
            }
        }
        if let Some(ca) = config.email.as_mut().and_then(|e| e.ca_file.as_mut()) {
            anchor(ca);
        }
        if let Some(file) = config.console.as_mut().and_then(|c| c.htpasswd.as_mut()) {
            anchor(file);
        }
        if let Some(dir) = config.identity.as_mut().and_then(|i| i.feeds_dir.as_mut()) {
            anchor(dir);
        }
        for log in config.sites.iter_mut().flat_map(|s| s.logs.iter_mut()) {
            anchor(&mut log.path);
        }
        if let Some(p) = &mut config.proxy {
            anchor(&mut p.state_dir);
            if let Some(file) = &mut p.admin_token_file {
                anchor(file);
            }
            if let Some(sock) = &mut p.upgrade_sock {
                anchor(sock);
            }
            if let Some(dir) = p.identity.as_mut().and_then(|i| i.feeds_dir.as_mut()) {
                anchor(dir);
            }
            if let Some(ca) = &mut p.origin_ca_file {
                anchor(ca);
            }
            for l in &mut p.tls_listen {
                anchor(&mut l.cert);
                anchor(&mut l.key);
                for pair in &mut l.certs {
                    anchor(&mut pair.cert);
                    anchor(&mut pair.key);
                }
            }
        }
        Ok(config)
    }

    /// Parses and validates YAML text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
            ConfigError::Syntax { path: path.into(), message: explain::message(&e.to_string(), path, text) }
        })?;
        let mut config = config;
        config.validate(path)?;
        // One form for every reader: `host:port` and its TLS flag, whether
        // `origin:` was written as that or as a URL (validated above).
        for p in config.sites.iter_mut().filter_map(|s| s.proxy.as_mut()) {
            if let Ok(e) = p.endpoint() {
                (p.origin, p.origin_tls) = (e.authority, e.tls);
            }
        }
        Ok(config)
    }

    /// The built-in crawler catalogue with this file's `crawlers:` added.
    pub fn catalogue(&self) -> Result<robotsgate_crawlers::Catalogue, robotsgate_crawlers::CatalogueError> {
        if self.crawlers.is_empty() {
            return Ok(robotsgate_crawlers::Catalogue::builtin().clone());
        }
        robotsgate_crawlers::Catalogue::builtin().with(&self.crawlers, "crawlers")
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid =
            |key: String, message: &str| ConfigError::Invalid { path: path.into(), key, message: message.into() };
        if self.interval.is_zero() {
            return Err(invalid("interval".into(), "must be more than zero"));
        }
        let mut channel_names = std::collections::HashSet::new();
        for (i, ch) in self.channels.iter().enumerate() {
            let key = |k: &str| format!("channels[{i}].{k}");
            if ch.name.trim().is_empty() || !channel_names.insert(ch.name.as_str()) {
                return Err(invalid(key("name"), "must be present and unique"));
            }
            let url = match (&ch.webhook, &ch.slack) {
                (Some(u), None) | (None, Some(u)) => u,
                _ => return Err(invalid(key("webhook"), "give exactly one of `webhook` and `slack`")),
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(
                    key(if ch.webhook.is_some() { "webhook" } else { "slack" }),
                    "must be an http(s) URL",
                ));
            }
            if ch.digest_hour > 23 {
                return Err(invalid(key("digest_hour"), "must be an hour of the day, 0 to 23 (UTC)"));
            }
            if let Some(s) = ch.sites.iter().find(|s| !self.sites.iter().any(|site| &site.name == *s)) {
                return Err(ConfigError::Invalid {
                    path: path.into(),
                    key: key("sites"),
                    message: format!("names `{s}`, which is not a site in this file"),
                });
            }
        }
        let mut names = std::collections::HashSet::new();
        for (i, site) in self.sites.iter().enumerate() {
            let key = |k: &str| format!("sites[{i}].{k}");
            if site.name.trim().is_empty() {
                return Err(invalid(key("name"), "must not be empty"));
            }
            if !names.insert(site.name.as_str()) {
                return Err(invalid(key("name"), &format!("`{}` is used by another site", site.name)));
            }
            match (&site.url, &site.file) {
                (Some(_), Some(_)) => return Err(invalid(key("url"), "give `url` or `file`, not both")),
                (None, None) if site.proxy.is_none() => {
                    return Err(invalid(key("url"), "give `url` (to poll), `file` (to watch) or `proxy` (to front)"));
                }
                (None, None) => {}
                (Some(u), None) => {
                    let parsed =
                        url::Url::parse(u).map_err(|e| invalid(key("url"), &format!("not an absolute URL: {e}")))?;
                    if !matches!(parsed.scheme(), "http" | "https") {
                        return Err(invalid(key("url"), "must be http or https"));
                    }
                }
                (None, Some(_)) => {}
            }
            if site.interval.is_some_and(|d| d.is_zero()) {
                return Err(invalid(key("interval"), "must be more than zero"));
            }
            if site.agents.as_ref().is_some_and(Vec::is_empty) {
                return Err(invalid(key("agents"), "list at least one crawler, or leave the key out"));
            }
        }
        if self.agents.is_empty() {
            return Err(invalid("agents".into(), "list at least one crawler"));
        }
        for (i, site) in self.sites.iter().enumerate() {
            let Some(p) = &site.proxy else { continue };
            let key = |k: &str| format!("sites[{i}].proxy.{k}");
            if p.hosts.is_empty() {
                return Err(invalid(key("hosts"), "list at least one Host name"));
            }
            if let Err(why) = p.endpoint() {
                return Err(invalid(key("origin"), &why));
            }
            if p.robots_file.is_some() && p.robots_static.is_some() {
                return Err(invalid(key("robots_file"), "give `robots_file` or `robots_static`, not both"));
            }
            if let Some(ai) = &p.ai_policy {
                for (name, value) in &ai.payment_headers {
                    let token = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !token || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                        return Err(invalid(
                            key(&format!("ai_policy.payment-headers.{name}")),
                            "must be a header field name, with a value on one line",
                        ));
                    }
                }
            }
        }
        if let Some(p) = &self.proxy
            && p.listen.is_empty()
            && p.tls_listen.is_empty()
        {
            return Err(invalid("proxy.listen".into(), "give at least one listener"));
        }
        if let Err(e) = self.catalogue() {
            return Err(invalid("crawlers".into(), &e.to_string()));
        }
        if let Some(l) = self.proxy.as_ref().and_then(|p| p.ledger.as_ref()) {
            if self.database.is_none() {
                return Err(invalid("proxy.ledger".into(), "the ledger is written to `database:`; set one"));
            }
            if l.journal_mib > 4096 {
                return Err(invalid("proxy.ledger.journal_mib".into(), "at most 4096 (4 GiB)"));
            }
            if l.flush.is_zero() || l.max_rows == 0 || l.queue == 0 {
                return Err(invalid("proxy.ledger".into(), "`flush`, `max_rows` and `queue` must be more than zero"));
            }
        }
        for (i, l) in self.proxy.iter().flat_map(|p| p.tls_listen.iter()).enumerate() {
            if let Some(v) = l.min_version.as_deref().filter(|v| !["1.2", "1.3"].contains(v)) {
                return Err(invalid(
                    format!("proxy.tls_listen[{i}].min_version"),
                    &format!("`{v}`: give \"1.2\" or \"1.3\" (older versions are broken)"),
                ));
            }
        }
        if let Some(why) = self.proxy.as_ref().and_then(|p| p.threads.invalid()) {
            return Err(invalid("proxy.threads".into(), &why));
        }
        let identities = [
            ("identity", self.identity.as_ref()),
            ("proxy.identity", self.proxy.as_ref().and_then(|p| p.identity.as_ref())),
        ];
        for (at, id) in identities.into_iter().filter_map(|(at, id)| Some((at, id?))) {
            for (i, cidr) in id.trusted_proxies.iter().enumerate() {
                if !is_cidr(cidr) {
                    return Err(invalid(
                        format!("{at}.trusted_proxies[{i}]"),
                        &format!("`{cidr}` is not a CIDR like 10.0.0.0/8 or fd00::/8"),
                    ));
                }
            }
            let catalogue = self.catalogue().unwrap_or_else(|_| robotsgate_crawlers::Catalogue::builtin().clone());
            for (i, token) in id.only.iter().enumerate() {
                if catalogue.get(token).is_none() {
                    return Err(invalid(
                        format!("{at}.only[{i}]"),
                        &format!("`{token}` is no catalogued crawler (add it under `crawlers:`)"),
                    ));
                }
            }
            if id.budget.is_zero() || id.dns_timeout.is_zero() || id.refresh.is_zero() || id.dns_in_flight == 0 {
                return Err(invalid(
                    at.into(),
                    "`budget`, `dns_timeout`, `refresh` and `dns_in_flight` must be more than zero",
                ));
            }
        }
        for (i, site) in self.sites.iter().enumerate() {
            for (j, log) in site.logs.iter().enumerate() {
                if let Err((key, why)) = log.reader() {
                    return Err(invalid(format!("sites[{i}].logs[{j}].{key}"), &why));
                }
                const KEYS: [&str; 7] = ["time", "client", "method", "target", "status", "user_agent", "host"];
                if let Some(k) = log.fields.keys().find(|k| !KEYS.contains(&k.as_str())) {
                    return Err(invalid(
                        format!("sites[{i}].logs[{j}].fields.{k}"),
                        "the keys are time, client, method, target, status, user_agent, host",
                    ));
                }
            }
        }
        if let Some(email) = &self.email
            && email.to.is_empty()
        {
            return Err(invalid("email.to".into(), "list at least one recipient"));
        }
        Ok(())
    }

    /// The poll interval of `site`.
    pub fn interval_of(&self, site: &Site) -> Duration {
        site.interval.unwrap_or(self.interval)
    }

    /// The crawlers tested for `site`.
    pub fn agents_of<'a>(&'a self, site: &'a Site) -> &'a [String] {
        site.agents.as_deref().unwrap_or(&self.agents)
    }
}

/// Durations as human strings (`90s`, `5m`, `1h 30m`), through `humantime`.
mod humantime_serde_compat {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| serde::de::Error::custom(format!("`{s}` is not a duration: {e}")))
    }

    pub mod option {
        use super::*;
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

/// Whether `text` is an address and a prefix length that fits it.
fn is_cidr(text: &str) -> bool {
    let Some((addr, len)) = text.split_once('/') else { return false };
    let (Ok(addr), Ok(len)) = (addr.parse::<std::net::IpAddr>(), len.parse::<u8>()) else { return false };
    len <= if addr.is_ipv4() { 32 } else { 128 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("test.yaml"))
    }

    #[test]
    fn identity_settings_are_checked_by_key() {
        let base = "proxy:\n  listen: [\"127.0.0.1:8080\"]\n  identity:\n";
        let site = "sites:\n  - name: s\n    proxy: { hosts: [s.test], origin: \"127.0.0.1:1\", spoofed: refuse }\n";
        let ok =
            parse(&format!("{base}    trusted_proxies: [10.0.0.0/8, \"fd00::/8\"]\n    only: [googlebot]\n{site}"))
                .unwrap();
        let id = ok.proxy.unwrap().identity.unwrap();
        assert_eq!(id.trusted_proxies.len(), 2);
        assert_eq!(ok.sites[0].proxy.as_ref().unwrap().spoofed, Spoofed::Refuse);
        let err = parse(&format!("{base}    trusted_proxies: [10.0.0.0/33]\n{site}")).unwrap_err().to_string();
        assert!(err.contains("proxy.identity.trusted_proxies[0]") && err.contains("10.0.0.0/33"), "{err}");
        let err = parse(&format!("{base}    only: [Googelbot]\n{site}")).unwrap_err().to_string();
        assert!(err.contains("proxy.identity.only[0]"), "{err}");
        let err = parse(&format!("{base}    budget: 0s\n{site}")).unwrap_err().to_string();
        assert!(err.contains("budget"), "{err}");
        let err = parse(&format!("{base}    only: []\n{}", site.replace("refuse", "block"))).unwrap_err().to_string();
        assert!(err.contains("test.yaml") && err.contains("block"), "{err}");
        // Catalogue entries in the config are checked as the built-in ones.
        let err = parse(&format!(
            "crawlers:\n  - {{ token: \"bad token\", operator: x, purpose: search, obeys: true, source: x }}\n{site}"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("`crawlers`") && err.contains("product token"), "{err}");
    }

    #[test]
    fn example_file_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config.example.yaml");
        let c = Config::load(&path).expect("config.example.yaml must load");
        assert_eq!(c.sites[0].name, "example-shop");
        assert!(matches!(c.sites[0].source(), Source::File(p) if p.exists()));
    }

    #[test]
    fn durations_entries_and_defaults() {
        let c = parse("interval: 90s\nsites:\n  - name: a\n    url: https://a.example/robots.txt\n    interval: 1m\n    url_sets:\n      main:\n        - /x\n        - { url: /checkout, expect: disallow }\n").unwrap();
        assert_eq!(c.interval, Duration::from_secs(90));
        assert_eq!(c.interval_of(&c.sites[0]), Duration::from_secs(60));
        let set = &c.sites[0].url_sets["main"];
        assert_eq!(set[1].expect().and_then(|p| p.every), Some(Expectation::Disallow));
        assert_eq!(set[0].url(), "/x");
        assert_eq!(c.agents_of(&c.sites[0]), ["Googlebot"]);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse("sites: []\nbogus: 1\n").unwrap_err().to_string();
        assert!(e.starts_with("test.yaml:") && e.contains("bogus") && e.contains('2'), "{e}");
        let e = parse("sites: []\nsites: []\n").unwrap_err().to_string();
        assert!(e.contains("test.yaml") && e.contains("given twice"), "{e}");
        let e = parse("interval: 5\nsites: []\n").unwrap_err().to_string();
        assert!(e.contains("test.yaml"), "{e}");
        let e = parse("sites:\n  - name: a\n    url: /robots.txt\n").unwrap_err().to_string();
        assert!(e.contains("sites[0].url") && e.contains("absolute"), "{e}");
        let e = parse("sites:\n  - name: a\n").unwrap_err().to_string();
        assert!(e.contains("sites[0].url"), "{e}");
        let e = parse(
            "sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - { url: /x, expekt: allow }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 6") && e.contains("unknown key `expekt`; did you mean `expect`?"), "{e}");
        assert!(!e.contains("untagged") && e.contains("--> test.yaml:6:"), "{e}");
        // A 100,000-site fleet loads (the reader's default budget stops at
        // 250,000 nodes).
        let mut fleet = String::from("sites:\n");
        for i in 0..100_000 {
            fleet.push_str(&format!(
                "  - name: s{i}\n    url: http://a/s/{i}/robots.txt\n    url_sets: {{ main: [/, /x] }}\n"
            ));
        }
        assert_eq!(parse(&fleet).expect("a fleet config").sites.len(), 100_000);
        let e = parse("sites: []\ninterval: 1m\ninterval: 2m\n").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("key `interval` is given twice") && !e.contains("Policy"), "{e}");
        let e = parse("sites:\n  - {name: a, file: x}\n  - {name: a, file: y}\n").unwrap_err().to_string();
        assert!(e.contains("sites[1].name"), "{e}");
    }

    /// Every value error names the innermost key at fault, in block and in
    /// flow style, and the snippet's column is the line's own.
    #[test]
    fn value_errors_name_the_innermost_key() {
        let site =
            "sites:\n  - name: s\n    proxy:\n      hosts: [s.test]\n      origin: \"127.0.0.1:1\"\n      ai_policy:\n";
        let flow = "sites:\n  - name: s\n    proxy: { hosts: [s.test], origin: \"127.0.0.1:1\", ai_policy: { ";
        for (text, key, at) in [
            ("sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - { url: /x, expect: maybe }\n".to_string(), "expect", "6:22"),
            ("sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - url: /x\n          expect: maybe\n".to_string(), "expect", "7:11"),
            (format!("{site}        ai-training: maybe\n"), "ai-training", "7:22"),
            (format!("{site}        enforce: slow\n        retry-after: soon\n"), "retry-after", "8:22"),
            (format!("{flow}ai-training: maybe }} }}\n"), "ai-training", "3:80"),
            (format!("{flow}ai-training: deny, enforce: slow, retry-after: soon }} }}\n"), "retry-after", "3:114"),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(&format!("key `{key}`:")), "{key} in\n{e}");
            assert!(!e.contains("key `proxy`") && !e.contains("key `url`"), "{e}");
            assert!(e.contains(&format!("line {} column {}", &at[..1], &at[2..])), "{at} in\n{e}");
            assert!(e.contains(&format!("--> test.yaml:{at}\n")), "{at} in\n{e}");
        }
    }
}
