//! `robots diff OLD NEW`: the unified text diff, then every verdict that
//! flips for the given crawlers and URLs. Exit code 1 when any verdict
//! flips: the dry run to put in CI before a robots.txt change ships.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use rules::{FetchOutcome, Policy, flips};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The robots.txt as it is now.
    old: PathBuf,
    /// The robots.txt as it would be.
    new: PathBuf,
    /// A crawler to test; repeat for several.
    #[arg(long = "agent", short = 'a', required = true)]
    agents: Vec<String>,
    /// A file of URLs (or paths), one per line; `-` for stdin.
    #[arg(long)]
    urls: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let old = super::read_robots(&args.old)?;
    let new = super::read_robots(&args.new)?;
    let urls = read_urls(&args.urls)?;
    let text_diff = similar::TextDiff::from_lines(&*String::from_utf8_lossy(&old), &*String::from_utf8_lossy(&new))
        .unified_diff()
        .context_radius(2)
        .header(&args.old.display().to_string(), &args.new.display().to_string())
        .to_string();
    if text_diff.is_empty() {
        println!("no text changes");
    } else {
        print!("{text_diff}");
    }
    let as_policy = |body: Vec<u8>| Policy::from_fetch(&FetchOutcome::status(200).with_body(body));
    let flipped = flips(&as_policy(old), &as_policy(new), &urls, &args.agents);
    println!();
    if flipped.is_empty() {
        println!("no verdict flips for {} URLs x {} crawlers", urls.len(), args.agents.len());
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} verdict flips for {} URLs x {} crawlers:", flipped.len(), urls.len(), args.agents.len());
    for f in &flipped {
        println!("  {}  {}\n    was {}\n    now {}", f.agent, f.url, f.old, f.new);
    }
    Ok(ExitCode::from(1))
}

fn read_urls(path: &Path) -> anyhow::Result<Vec<String>> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| format!("cannot read URL list {}", path.display()))?,
        ))
    };
    let mut urls = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: not UTF-8 text", path.display(), n + 1))?;
        let url = line.trim();
        if !url.is_empty() && !url.starts_with('#') {
            urls.push(url.to_string());
        }
    }
    Ok(urls)
}
