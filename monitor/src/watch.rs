//! Watching local robots.txt files with notify. The parent directory is
//! watched, not the file, because deploy tools replace files by rename and
//! a watch on the old inode would go quiet. Only events that can change a
//! file's bytes count (create, write, rename, remove): inotify also reports
//! every open and read, and the daemon's own read of the file would wake
//! the next poll, for ever. Events are sent as site names; the daemon
//! debounces them and still re-reads on every interval, so a missed event
//! costs at most one interval.

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
        if !can_change_bytes(&event.kind) {
            return;
        }
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

/// Whether an event can have changed a file's bytes: opens, reads and
/// metadata changes (times, permissions) cannot; a finished write can.
fn can_change_bytes(kind: &notify::EventKind) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode, ModifyKind};
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any | EventKind::Other => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, MetadataKind, ModifyKind, RenameMode};

    #[test]
    fn reads_and_metadata_are_not_changes() {
        for quiet in [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Read),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
        ] {
            assert!(!can_change_bytes(&quiet), "{quiet:?}");
        }
        for change in [
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            EventKind::Remove(notify::event::RemoveKind::File),
        ] {
            assert!(can_change_bytes(&change), "{change:?}");
        }
    }
}
