//! The sitemaps of a site that asks the gate to keep them open
//! (`sites[].sitemaps.keep_open`): the refresher reads the sitemaps the
//! served good copy names, off the request path, on their own schedule
//! (`sitemaps.every`, and whenever the good copy changes), and keeps the
//! URLs they list for the gate's floor ([`rules::gate::Floor::listed`]). A
//! change to robots.txt that disallows them for a search crawler is then
//! held like any other breach.
//!
//! Read as crawlers read them: the public URLs through `http` (with
//! `http.connect_to` and `http.ca_file`, as the monitor reads them). A read
//! that fails keeps the URLs of the last one that did not, so an origin's
//! bad minute never drops the protection.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use robotsgate_sitemaps::{Options, walk};

use super::listed::Listed;
use super::refresher::{Refresher, SiteRobots};
use super::store::State;

impl Refresher {
    /// Starts reading `site`'s sitemaps when they are due, in a task of
    /// their own, so that a large sitemap never delays a robots.txt refresh.
    pub(super) fn read_sitemaps(&self, site: &SiteRobots) {
        let (Some(listed), Some(fetcher)) = (&site.declared.listed, &self.sitemap_fetcher) else { return };
        let state = self.store.state(&site.name);
        let State::Serve(served) = &*state else { return };
        let hash = robotsgate_history::body_hash(&served.origin);
        if !listed.due(&hash) || listed.reading.swap(true, Ordering::SeqCst) {
            return;
        }
        let named = robotsgate_sitemaps::named(&served.robots);
        let (listed, fetcher, name): (Arc<Listed>, _, _) = (Arc::clone(listed), fetcher.clone(), site.name.clone());
        tokio::spawn(async move {
            let walked = walk(&fetcher, &named, &Options::new(None), Vec::new()).await;
            // A partial read replaces nothing but an empty list: the URLs
            // of the files it could not read would be lost to the gate.
            let failed = walked.files.iter().any(robotsgate_sitemaps::File::unread);
            if failed && !listed.urls().is_empty() {
                tracing::warn!(site = %name, "the sitemaps could not be read; the gate keeps the URLs it read before");
            } else {
                tracing::info!(site = %name, urls = walked.sink.len(), files = walked.files.len(), "sitemaps read for the gate");
                listed.urls.store(Arc::new(walked.sink));
            }
            *listed.read.lock().unwrap_or_else(|e| e.into_inner()) = Some((hash, Instant::now()));
            listed.reading.store(false, Ordering::SeqCst);
        });
    }
}
