//! The `sites:` part of the config: each site, how it is fetched (`url`,
//! `file`, `git`, or through the gateway's origin), how the gateway fronts
//! it, its AI policy and access logs; and the HTTP client settings for
//! fetching.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::{GateMode, Spoofed, UrlSet, default_true, humantime_serde_compat, origin};

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
    /// The site's host variants (both schemes, `www.` and the bare host,
    /// listed hosts), each fetched and judged against the canonical file.
    #[serde(default)]
    pub variants: crate::places::Variants,
    /// The public (cached) copy against the origin's.
    #[serde(default)]
    pub edge: crate::places::Edge,
    /// The sitemaps its robots.txt names: read, checked against it, and
    /// (with `keep_open`) guarded by the gate.
    #[serde(default)]
    pub sitemaps: crate::sitemaps::Sitemaps,
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
    /// Crawl budgets: crawler requests over a rate get 429 with
    /// `Retry-After`, never `/robots.txt`.
    #[serde(default)]
    pub budgets: Vec<crate::budgets::Budget>,
    /// `budget`: a crawler the catalogue says honours `Crawl-delay` is
    /// held to the delay its group of the served robots.txt states (one
    /// request per delay, burst 1), so the file and the edge say the same;
    /// `off` (the default) leaves `Crawl-delay` to the crawlers.
    #[serde(default)]
    pub crawl_delay: crate::budgets::CrawlDelay,
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
    /// Where to connect for a `host:port` instead of where DNS says, as
    /// curl's `--connect-to` does: `{"www.shop.example:443": "10.0.0.7:8443"}`.
    /// The port is the scheme's own (80 or 443); `*.example.com:443`
    /// covers every name below `example.com`. `Host` and SNI stay the
    /// host's. For staging set-ups and tests on loopback.
    #[serde(default)]
    pub connect_to: BTreeMap<String, String>,
    /// A PEM file of CA certificates trusted besides the system's, for
    /// HTTPS fetches (a private CA, a test CA).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl Default for Http {
    fn default() -> Self {
        Http {
            timeout: default_timeout(),
            user_agent: default_user_agent(),
            connect_to: BTreeMap::new(),
            ca_file: None,
        }
    }
}

impl Http {
    /// `connect_to`, read: (host, port, address). Validation refuses what
    /// this cannot read, so here a bad entry is skipped.
    pub fn connect_to(&self) -> Vec<(String, u16, std::net::SocketAddr)> {
        self.connect_to
            .iter()
            .filter_map(|(k, v)| {
                let (host, port) = k.rsplit_once(':')?;
                Some((host.to_ascii_lowercase(), port.parse().ok()?, v.parse().ok()?))
            })
            .collect()
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(20)
}

fn default_user_agent() -> String {
    concat!("robotsgate-monitor/", env!("CARGO_PKG_VERSION"), " (robots.txt monitor)").into()
}
