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
        LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(false).map_event_format(Handshakes).try_init()
        }
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .map_event_format(Handshakes)
            .try_init(),
    };
}

/// TLS handshakes that failed on the gateway's listeners since start (an
/// old client, a scanner, a port probe), counted as Pingora reports them.
pub static TLS_HANDSHAKE_FAILURES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set when Pingora reports that a graceful upgrade could not hand the
/// listening sockets to the new process: the gateway then exits non-zero
/// (Pingora exits 0), so that the service manager restarts it.
pub static HANDOVER_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where Pingora reports a failed downstream TLS handshake, at ERROR, with
/// OpenSSL's whole text: one line per scanner probe.
const LISTENER_TARGET: &str = "pingora_core::services::listening";

/// The log's formatter, less Pingora's "Downstream handshake error" lines:
/// those are counted into [`TLS_HANDSHAKE_FAILURES`] (the gateway exports
/// `robotsgate_tls_handshake_failures_total`) and not written, as scanners
/// and old clients would flood the log at ERROR. (A layer cannot demote
/// them: events from the `log` bridge skip `event_enabled`, and an event
/// emitted while another is dispatched is dropped.)
struct Handshakes<F>(F);

impl<S, N, F> tracing_subscriber::fmt::FormatEvent<S, N> for Handshakes<F>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
    F: tracing_subscriber::fmt::FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        // Pingora logs through the `log` crate: its events arrive with the
        // target `log` and the real one in the field `log.target`.
        if *event.metadata().level() == tracing::Level::ERROR && event.metadata().target() == "log" {
            let mut message = Message::default();
            event.record(&mut message);
            if message.target.starts_with(LISTENER_TARGET) && message.text.starts_with("Downstream handshake") {
                TLS_HANDSHAKE_FAILURES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(());
            }
            if message.text.starts_with("Unable to send listener sockets") {
                HANDOVER_FAILED.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        self.0.format_event(ctx, writer, event)
    }
}

/// An event's `message` and `log.target` fields, as text.
#[derive(Default)]
struct Message {
    text: String,
    target: String,
}

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.text = format!("{value:?}");
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "message" => self.text = value.to_string(),
            "log.target" => self.target = value.to_string(),
            _ => {}
        }
    }
}
