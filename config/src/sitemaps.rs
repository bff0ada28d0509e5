//! `sites[].sitemaps`: the sitemaps a site's robots.txt names, read on
//! their own schedule (they change less often than robots.txt) and checked
//! against the file that names them; and whether the gate keeps their URLs
//! open to search crawlers, as the floor keeps `/` open.
//!
//! ```yaml
//! sitemaps:
//!   check: auto        # on for a site with a url:, off otherwise
//!   every: 6h          # conditional requests; and after every robots.txt change
//!   keep_open: true    # the gate holds a change that closes listed URLs
//! ```

use std::time::Duration;

use serde::Deserialize;

use crate::humantime_serde_compat;

/// `sites[].sitemaps`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sitemaps {
    /// `auto` (the default: read them for a site the monitor fetches over
    /// HTTP), `on` or `off`.
    #[serde(default)]
    pub check: Check,
    /// How often to read them again when robots.txt has not changed (with
    /// conditional requests): 6 hours by default. A robots.txt change
    /// reads them at once.
    #[serde(default = "default_every", with = "humantime_serde_compat")]
    pub every: Duration,
    /// Hold (or warn of, with `gate: warn`) a robots.txt change that
    /// disallows listed URLs for a search crawler.
    #[serde(default)]
    pub keep_open: bool,
}

fn default_every() -> Duration {
    Duration::from_secs(6 * 3600)
}

impl Default for Sitemaps {
    fn default() -> Self {
        Sitemaps { check: Check::Auto, every: default_every(), keep_open: false }
    }
}

/// Whether sitemaps are read.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// For a site with a robots.txt URL.
    #[default]
    Auto,
    /// Always (a gateway-fronted site's origin included).
    On,
    /// Never.
    Off,
}

impl Sitemaps {
    /// Whether they are read for a site that does (or does not) have a
    /// robots.txt URL of its own.
    pub fn checked(&self, has_url: bool) -> bool {
        match self.check {
            Check::Auto => has_url,
            Check::On => true,
            Check::Off => false,
        }
    }
}
