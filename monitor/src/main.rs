//! `robots-monitor`: the daemon that will keep every robots.txt revision in
//! SQL and email when crawling would change (see docs/ARCHITECTURE.md). Not
//! built yet: this binary only reserves the name and says so, rather than
//! pretending to run.

use std::process::ExitCode;

use clap::Parser;

/// The robotsgate monitor (not built yet).
#[derive(Parser, Debug)]
#[command(name = "robots-monitor", version)]
struct Cli {
    /// The shared configuration file.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let _cli = Cli::parse();
    eprintln!("robots-monitor: the monitor is not built yet; the `robots` CLI and the `rules` library are");
    ExitCode::from(2)
}
