//! What both robotsgate daemons share at start-up: the configuration (one
//! YAML file, one schema, defined here once so the proxy and the monitor
//! never disagree about what a key means; every key is documented in
//! `config.example.yaml`) and the logging setup ([`telemetry`]).
//!
//! Loading is strict: unknown keys, wrong types and duplicate keys fail with
//! the file, line and column at fault; values that parse but make no sense
//! (a relative robots.txt URL, a zero interval) fail with the key's path.
//!
//! The schema is in files by part, each type beside its `impl`: this file
//! holds the whole file's [`Config`]; `proxy` the gateway's settings,
//! `site` sites and their sources, `alerts` channels and mail, `console`
//! the web console, `pins` the gate's declarations; `load` reads a file and
//! `validate` checks what it read.

#![deny(missing_docs)]

mod alerts;
pub mod budgets;
mod console;
mod credentials;
mod explain;
mod load;
pub mod origin;
pub mod pins;
pub mod places;
mod proxy;
mod site;
pub mod sitemaps;
pub mod telemetry;
mod validate;

use std::time::Duration;

use serde::Deserialize;

pub use alerts::{AlertSeverity, Channel, Digest, Email, Security};
pub use console::Console;
pub use credentials::{ADMIN_TOKEN_ENV, same_token};
pub use load::ConfigError;
pub(crate) use load::humantime_serde_compat;
pub use pins::{Expectation, GateMode, Pins, UrlEntry, UrlSet};
pub use places::{Edge, EdgeCheck, MustSetting, Variant, VariantHost, Variants};
pub use proxy::{
    CertPair, FleetSettings, IdentitySettings, LedgerSettings, ProxySettings, Spoofed, Threads, TlsListener,
};
pub use site::{AiEnforce, AiPolicySettings, Http, LogSource, Site, SiteProxy, Source, Stance};

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

fn default_agents() -> Vec<String> {
    vec!["Googlebot".into()]
}

pub(crate) fn default_interval() -> Duration {
    Duration::from_secs(300)
}

fn default_retention() -> Duration {
    Duration::from_secs(90 * 24 * 3600)
}

pub(crate) fn default_true() -> bool {
    true
}

impl Config {
    /// The configured site of this name.
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.sites.iter().find(|s| s.name == name)
    }

    /// The monitor's database: the `database:` value, or the embedded
    /// default `var/robotsgate.db`.
    pub fn database(&self) -> &str {
        self.database.as_deref().unwrap_or("var/robotsgate.db")
    }

    /// The built-in crawler catalogue with this file's `crawlers:` added.
    pub fn catalogue(&self) -> Result<robotsgate_crawlers::Catalogue, robotsgate_crawlers::CatalogueError> {
        if self.crawlers.is_empty() {
            return Ok(robotsgate_crawlers::Catalogue::builtin().clone());
        }
        robotsgate_crawlers::Catalogue::builtin().with(&self.crawlers, "crawlers")
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
