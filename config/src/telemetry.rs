//! Logging setup both daemons share: `tracing` to stderr, filtered by
//! `ROBOTSGATE_LOG` (default `info`), as text (colours only on a terminal)
//! or, with `ROBOTSGATE_LOG_FORMAT=json` or the config's `log_format:
//! json`, one JSON object per line for Vector, Loki and the like. Event
//! fields are top-level members, under stable names (`site`, `crawler`,
//! `identity`, `verdict`, `revision`, `url`, `status`, `error`), beside
//! `timestamp`, `level`, `target` and `message`.

use serde::Deserialize;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// `ROBOTSGATE_LOG_FORMAT` when set to `json` or `text`, else `config`.
    pub fn chosen(config: Option<LogFormat>) -> LogFormat {
        match std::env::var("ROBOTSGATE_LOG_FORMAT").ok().as_deref().map(str::trim) {
            Some("json") => LogFormat::Json,
            Some("text") => LogFormat::Text,
            _ => config.unwrap_or_default(),
        }
    }
}

/// Installs the global subscriber, in the format the environment asks
/// for. Calling it twice is harmless: the second call is ignored.
pub fn init() {
    init_as(LogFormat::chosen(None));
}

/// Installs the global subscriber in `format`.
pub fn init_as(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROBOTSGATE_LOG").unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
    };
}
