//! The alerting part of the config: channels (email, webhooks), their
//! severities and digests, and the SMTP settings mail goes out through.

use std::path::PathBuf;

use serde::Deserialize;

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

impl Channel {
    /// Whether an alert of `severity` about `site` goes to this channel.
    pub fn takes(&self, site: &str, severity: AlertSeverity) -> bool {
        (self.severities.is_empty() || self.severities.contains(&severity))
            && (self.sites.is_empty() || self.sites.iter().any(|s| s == site))
    }
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
