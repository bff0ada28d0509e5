//! The URLs a site's sitemaps list, as the gate judges with them
//! (`sitemaps.keep_open`): swapped in whole when a read ends
//! (`robots::sitemaps`), read by the gate's judgement without a lock.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

/// The listed URLs of one site, and when they were read.
#[derive(Debug)]
pub struct Listed {
    /// How often to read them again while the good copy stays the same.
    pub(super) every: Duration,
    /// The URLs, as the gate judges with them.
    pub(super) urls: ArcSwap<Vec<String>>,
    /// The good copy they were read for (its body hash) and when.
    pub(super) read: std::sync::Mutex<Option<(String, Instant)>>,
    /// A read is under way.
    pub(super) reading: AtomicBool,
}

impl Listed {
    /// Nothing read yet; read again every `every`.
    pub fn new(every: Duration) -> Listed {
        Listed {
            every,
            urls: ArcSwap::from_pointee(Vec::new()),
            read: std::sync::Mutex::new(None),
            reading: AtomicBool::new(false),
        }
    }

    /// The URLs now.
    pub fn urls(&self) -> Arc<Vec<String>> {
        self.urls.load_full()
    }

    /// Whether the copy with hash `hash` needs its sitemaps read.
    pub(super) fn due(&self, hash: &str) -> bool {
        let read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.as_ref().is_none_or(|(h, at)| h != hash || at.elapsed() >= self.every)
    }
}
