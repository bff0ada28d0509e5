//! `robots`: the robots.txt engine on the command line. `check` stands in
//! for Google's `robots_main` (exit 0 allowed, 1 disallowed, 2 error);
//! the other commands explain, batch, lint and diff.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod batch;
mod check;
mod diff;
mod explain;
mod lint;
mod sitemap;

#[derive(Parser, Debug)]
#[command(
    name = "robots",
    version,
    about = "Google-exact robots.txt verdicts, with the line that decided",
    after_help = "EXIT STATUS:\n  0  allowed (check, explain), clean (lint), no flip and nothing the gate would hold (diff), every line read (batch)\n  1  disallowed (check, explain; any URL for the table form), lint errors, a flip or a change the gate would hold (diff)\n  2  the command could not run: a file that cannot be read, a bad argument, a batch line that failed"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Verdict for one URL (`robots check FILE AGENT URL`), or a table for
    /// many (`robots check FILE --agent A --urls FILE|-`).
    Check(check::Args),
    /// Read JSON lines on stdin, write each back with `"allowed"` added.
    Batch,
    /// Show the chosen group, every matching rule and the winner.
    Explain {
        /// The robots.txt file.
        robots: PathBuf,
        /// The crawler's product token.
        agent: String,
        /// The URL, percent-encoded as it would be sent.
        url: String,
    },
    /// Find problems: typos, dead rules, HTML, oversize, and more. Exit 1 on errors.
    Lint {
        /// The robots.txt files (pre-commit passes several).
        #[arg(required = true)]
        robots: Vec<PathBuf>,
        /// What to print: `text`, `json` or `sarif` (`--format`, its old
        /// name, is still read).
        #[arg(long, alias = "format", value_enum, default_value = "text")]
        output: lint::Format,
        /// A sitemap (a file, or an http(s) URL) to read and check against
        /// each robots.txt for the search crawlers; repeat for several.
        /// Exit 1 when it cannot be read or robots.txt disallows a URL it
        /// lists.
        #[arg(long = "sitemap")]
        sitemaps: Vec<String>,
    },
    /// Text diff plus every verdict that flips. Exit 1 when any verdict flips.
    Diff(diff::Args),
    #[command(flatten)]
    Shell(robotsgate_shell::Command),
}

fn main() -> ExitCode {
    let cli: Cli = robotsgate_shell::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Batch => batch::run(std::io::stdin().lock(), &mut std::io::stdout().lock()),
        Command::Explain { robots, agent, url } => explain::run(&robots, &agent, &url),
        Command::Lint { robots, output, sitemaps } => lint::run(&robots, output, &sitemaps),
        Command::Diff(args) => diff::run(&args),
        Command::Shell(shell) => {
            shell.run(<Cli as clap::CommandFactory>::command()).map(|()| ExitCode::SUCCESS).map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) if robotsgate_shell::is_closed_stdout(e.as_ref()) => ExitCode::from(robotsgate_shell::CLOSED_STDOUT),
        Err(e) => {
            eprintln!("robots: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Reads a robots.txt file, naming it in the error; `-` is standard
/// input, as for `--urls -`.
fn read_robots(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    use std::io::Read;
    if path.as_os_str() == "-" {
        let mut body = Vec::new();
        std::io::stdin().lock().read_to_end(&mut body).context("cannot read robots.txt from standard input")?;
        return Ok(body);
    }
    std::fs::read(path).with_context(|| format!("cannot read robots.txt file {}", path.display()))
}

/// Human output never floods a pipe: google/robotstxt-spec-test's runner
/// reads a command's output only after it exits, so past the 64 KiB pipe
/// buffer both sides would wait for ever. Text longer than `HUMAN_MAX`
/// bytes is cut there (on a character boundary) and its length said;
/// machine formats (JSON, batch) stay whole.
fn human(text: &str) -> std::borrow::Cow<'_, str> {
    const HUMAN_MAX: usize = 100;
    if text.len() <= HUMAN_MAX {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = HUMAN_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_text_is_cut_at_a_character_boundary() {
        assert_eq!(super::human("short"), "short");
        let long = "ツ".repeat(40);
        let cut = super::human(&long);
        assert!(cut.starts_with(&"ツ".repeat(33)) && cut.ends_with("… (120 bytes)"), "{cut}");
    }
}
