//! `robots-proxy`: the Pingora gateway that will own `/robots.txt` in front
//! of websites (see docs/ARCHITECTURE.md). Not built yet: this binary only
//! reserves the name and says so, rather than pretending to run.

use std::process::ExitCode;

use clap::Parser;

/// The robotsgate gateway (not built yet).
#[derive(Parser, Debug)]
#[command(name = "robots-proxy", version)]
struct Cli {
    /// The shared configuration file.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let _cli = Cli::parse();
    eprintln!("robots-proxy: the gateway is not built yet; the `robots` CLI and the `rules` library are");
    ExitCode::from(2)
}
