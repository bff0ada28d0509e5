//! `--sitemap FILE|URL` for `robots lint` and `robots diff`: the URLs a
//! sitemap lists, read as the monitor reads them (a local file, or fetched
//! with its index's sitemaps one level down), with the reader's findings.

use std::time::Duration;

use anyhow::Context;
use robotsgate_crawlers::{Catalogue, Purpose};
use robotsgate_sitemaps::read::{Context as ReadContext, Kind, Seen};
use robotsgate_sitemaps::{Findings, Options};

/// Every URL the sitemaps list (each once), and each file's findings.
pub struct Listed {
    /// The URLs.
    pub urls: Vec<String>,
    /// Each file: its name, what it was, how many entries, its findings.
    pub files: Vec<(String, &'static str, u64, Findings)>,
}

impl Listed {
    /// Whether a file could not be read as a sitemap.
    pub fn has_error(&self) -> bool {
        self.files.iter().any(|(_, _, _, f)| f.has_error())
    }

    /// Each file's line and its findings, as `lint` prints them.
    pub fn print(&self) {
        for (name, kind, entries, findings) in &self.files {
            println!("{name}: {kind}, {entries} {}", if *entries == 1 { "entry" } else { "entries" });
            for f in &findings.0 {
                let level = if f.what.is_error() { "error" } else { "warning" };
                println!("{name}: {level}[{}]: {f}", f.what.key());
            }
        }
    }
}

/// The search crawlers of the built-in catalogue: whom sitemap URLs must
/// stay open for.
pub fn search_crawlers() -> Vec<String> {
    Catalogue::builtin().tokens_of(Purpose::Search)
}

/// Reads every source: `http(s)://` URLs are fetched, anything else is a
/// local file (an index's sitemaps are fetched).
pub fn load(sources: &[String]) -> anyhow::Result<Listed> {
    let mut listed = Listed { urls: Vec::new(), files: Vec::new() };
    let mut remote: Vec<(u32, String)> = Vec::new();
    let mut seen = Seen::default();
    for source in sources {
        if source.starts_with("http://") || source.starts_with("https://") {
            remote.push((0, source.clone()));
            continue;
        }
        let file = std::fs::File::open(source).with_context(|| format!("cannot read sitemap {source}"))?;
        let mut urls = Vec::new();
        let reading =
            robotsgate_sitemaps::read(file, &ReadContext::new(None), &mut seen, &mut |u| urls.push(u.to_string()));
        if reading.kind == Kind::Index {
            remote.extend(reading.children.iter().map(|c| (0, c.clone())));
        }
        listed.files.push((source.clone(), reading.kind.as_str(), reading.entries, reading.findings));
        listed.urls.extend(urls);
    }
    if !remote.is_empty() {
        let fetcher = robotsgate_fetch::Fetcher::new(Duration::from_secs(60), "robotsgate (robots CLI)", &[], None)?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let walked = runtime.block_on(robotsgate_sitemaps::walk(&fetcher, &remote, &Options::new(None), Vec::new()));
        for f in walked.files {
            let kind = f.reading.as_ref().map_or("unread", |r| r.kind.as_str());
            let entries = f.reading.as_ref().map_or(0, |r| r.entries);
            listed.files.push((f.url, kind, entries, f.findings));
        }
        for u in walked.sink {
            listed.urls.push(u);
        }
    }
    Ok(listed)
}
