//! Watching local robots.txt files with notify. The parent directory is
//! watched, not the file, because deploy tools replace files by rename and
//! a watch on the old inode would go quiet. Events are sent as site names;
//! the daemon debounces them and still re-reads on every interval, so a
//! missed event costs at most one interval.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use robotsgate_config::{Site, Source};
use tokio::sync::mpsc::UnboundedSender;

/// Starts watching the local sites' files; keep the returned watcher alive.
pub fn watch(sites: &[Site], changed: UnboundedSender<String>) -> anyhow::Result<Option<RecommendedWatcher>> {
    let mut by_file: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for site in sites {
        if let Source::File(path) = site.source() {
            let path = std::path::absolute(&path).unwrap_or(path);
            by_file.entry(path).or_default().push(site.name.clone());
        }
    }
    if by_file.is_empty() {
        return Ok(None);
    }
    let files = by_file.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        for path in &event.paths {
            if let Some(names) = files.get(path) {
                for name in names {
                    let _ = changed.send(name.clone());
                }
            }
        }
    })
    .context("starting the file watcher")?;
    let mut dirs: Vec<PathBuf> = by_file.keys().filter_map(|p| p.parent().map(PathBuf::from)).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            // The interval re-read still covers this site.
            tracing::warn!(dir = %dir.display(), "cannot watch directory: {e}");
        }
    }
    Ok(Some(watcher))
}
