//! Logging setup both daemons share: `tracing` to stderr, filtered by
//! `ROBOTSGATE_LOG` (default `info`), with colours only on a terminal.
//! Installed once, at the top of `main`.

/// Installs the global subscriber. Calling it twice is harmless: the
/// second call is ignored.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROBOTSGATE_LOG").unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
