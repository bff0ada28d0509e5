//! Tailing sites' access logs (`sites[].logs`) in the daemon, into the
//! compliance ledger, through log rotation:
//!
//! - **rename and create** (logrotate's default, nginx reopening on
//!   USR1): the tail keeps the old file open, so when the path names a new
//!   file it reads what the old one still held through that handle, then
//!   moves to the new file;
//! - **copytruncate**: the live file shrinks; what it held past the last
//!   read is in the copy, `PATH.1`, which is the same file by its first
//!   line, so reading the copy counts just those lines.
//!
//! Every read goes through the importer ([`super::ingest`]), whose offsets
//! live in the database with the counts, so a restart, a second tail of
//! the same file or an `ingest` of its rotated copies counts no line twice.
//! notify wakes a tail when the log's folder changes; a tail also reads
//! every [`BACKSTOP`], so a missed event costs at most that.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};
use robotsgate_compliance::log::Format;
use tokio::sync::Notify;

use super::ingest::Importer;
use crate::Host;

/// The longest a tail waits for an event before it reads anyway.
pub const BACKSTOP: Duration = Duration::from_secs(5);
/// How often a tail takes the site's timeline again from the history.
const RELOAD_EVERY: Duration = Duration::from_secs(2);

/// The live file a tail has open.
#[derive(Debug)]
struct Held {
    file: std::fs::File,
    inode: u64,
    len: u64,
    /// Its identity (the hash of its first line) when last read.
    id: Option<String>,
}

/// One log being tailed.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    importer: Importer,
    held: Option<Held>,
    reloaded: Instant,
}

/// The copy copytruncate leaves: `PATH.1`.
fn copy_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// A path that opens the file behind `file`, wherever it was renamed to.
fn by_handle(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

impl Tail {
    /// A tail of `path`, in `format`, for `site`.
    pub async fn new(m: &dyn Host, site: &str, path: PathBuf, format: Format) -> anyhow::Result<Tail> {
        let importer = Importer::new(m, site, format).await?;
        Ok(Tail { path, importer, held: None, reloaded: Instant::now() })
    }

    /// Reads what is new, following a rotation since the last read.
    pub async fn step(&mut self, m: &dyn Host) -> anyhow::Result<()> {
        if self.reloaded.elapsed() >= RELOAD_EVERY {
            self.importer.reload(m).await?;
            self.reloaded = Instant::now();
        }
        let now = std::fs::metadata(&self.path).ok();
        let mut paths = Vec::new();
        let mut rotated = false;
        if let Some(held) = &self.held {
            match &now {
                // Renamed away (and perhaps created anew): the rest of the
                // old file, through the handle.
                Some(meta) if meta.ino() != held.inode => {
                    paths.push(by_handle(&held.file));
                    rotated = true;
                }
                None => paths.push(by_handle(&held.file)),
                // Truncated in place (shorter now, or a new first line,
                // when it grew past its old length before this read): the
                // rest is in the copy.
                Some(meta)
                    if meta.len() < held.len
                        || (held.id.is_some() && super::ingest::file_id(&self.path).ok().flatten() != held.id) =>
                {
                    let copy = copy_of(&self.path);
                    if copy.exists() {
                        paths.push(copy);
                    }
                }
                Some(_) => {}
            }
        }
        if now.is_some() {
            paths.push(self.path.clone());
        }
        let reports = self.importer.files(m, &paths).await?;
        if rotated {
            self.held = None;
        }
        // The live file's identity as the import read it. Taken again after
        // the read, it could be that of a file truncated and written anew
        // meanwhile (copytruncate), and the next step would not see the
        // rotation: the copy's last lines were never read.
        let id = now.as_ref().and_then(|_| reports.last()).map(|r| r.file_id.clone()).filter(|id| !id.is_empty());
        match (&mut self.held, now) {
            (Some(held), Some(meta)) => {
                held.len = meta.len();
                held.id = id;
            }
            (None, Some(meta)) => {
                if let Ok(file) = std::fs::File::open(&self.path) {
                    self.held = Some(Held { file, inode: meta.ino(), len: meta.len(), id });
                }
            }
            (_, None) => {}
        }
        Ok(())
    }
}

/// Starts a task per configured log; they run until the daemon stops.
/// Returns the watcher, which must be kept alive.
pub fn start(m: &Arc<dyn Host>) -> anyhow::Result<Option<notify::RecommendedWatcher>> {
    let mut logs = Vec::new();
    for (i, site) in m.config().sites.iter().enumerate() {
        for (j, log) in site.logs.iter().enumerate() {
            let format: Format = log.reader().map_err(|(key, e)| anyhow::anyhow!("sites[{i}].logs[{j}].{key}: {e}"))?;
            let path = std::path::absolute(&log.path).unwrap_or_else(|_| log.path.clone());
            logs.push((site.name.clone(), path, format, Arc::new(Notify::new())));
        }
    }
    if logs.is_empty() {
        return Ok(None);
    }
    let wakers: Vec<(PathBuf, Arc<Notify>)> = logs.iter().map(|(_, p, _, n)| (p.clone(), Arc::clone(n))).collect();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        for (path, wake) in &wakers {
            let copy = copy_of(path);
            if event.paths.iter().any(|p| p == path || *p == copy) {
                wake.notify_one();
            }
        }
    })?;
    let mut folders: Vec<PathBuf> = logs.iter().filter_map(|(_, p, _, _)| p.parent().map(Path::to_path_buf)).collect();
    folders.sort();
    folders.dedup();
    for folder in &folders {
        if let Err(e) = watcher.watch(folder, RecursiveMode::NonRecursive) {
            tracing::warn!(folder = %folder.display(), "cannot watch for log changes ({e}); reading every {}s", BACKSTOP.as_secs());
        }
    }
    for (site, path, format, wake) in logs {
        let m = Arc::clone(m);
        tokio::spawn(async move {
            let mut tail = loop {
                match Tail::new(&*m, &site, path.clone(), format.clone()).await {
                    Ok(t) => break t,
                    Err(e) => {
                        tracing::error!(site = %site, log = %path.display(), "cannot tail: {e:#}");
                        tokio::time::sleep(BACKSTOP).await;
                    }
                }
            };
            tracing::info!(site = %site, log = %path.display(), "tailing an access log into the compliance ledger");
            loop {
                if let Err(e) = tail.step(&*m).await {
                    tracing::warn!(site = %site, log = %path.display(), "reading the log: {e:#}");
                }
                let _ = tokio::time::timeout(BACKSTOP, wake.notified()).await;
                // Let a burst of writes settle into one read.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
    Ok(Some(watcher))
}
