//! The gate's data: what a site's owner declared (pins, floor, mode), the
//! change the gate holds, and the key an outcome is held and released by.
//! The store, the fleet's database and the judgement all speak of these;
//! the judgement itself is in `gate`.

use std::time::SystemTime;

use bytes::Bytes;
use rules::gate::{Breach, Floor, Mode, Pin};

/// One site's declarations.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// `hold`, `warn` or `off`.
    pub mode: Mode,
    /// Pins, expanded to (URL, crawler) pairs.
    pub pins: Vec<Pin>,
    /// The floor.
    pub floor: Floor,
    /// The URLs the site's sitemaps list, when it asks the gate to keep
    /// them open (`sitemaps.keep_open`).
    pub listed: Option<std::sync::Arc<super::listed::Listed>>,
}

impl Declared {
    /// The declarations of `site` in `config`, with the crawlers of
    /// `catalogue` (the built-in one with the config's entries, made once).
    pub fn of(
        site: &robotsgate_config::Site,
        config: &robotsgate_config::Config,
        catalogue: &robotsgate_crawlers::Catalogue,
    ) -> Declared {
        Declared {
            mode: site.gate.gate(),
            pins: site.pins(config.agents_of(site), catalogue),
            floor: site.floor(catalogue),
            listed: site
                .sitemaps
                .keep_open
                .then(|| std::sync::Arc::new(super::listed::Listed::new(site.sitemaps.every))),
        }
    }

    /// The floor as the gate judges with it now: with the sitemap URLs read
    /// last, for a site that keeps them open.
    pub fn floor(&self) -> Floor {
        let mut floor = self.floor.clone();
        if let Some(listed) = &self.listed {
            floor.listed = listed.urls();
        }
        floor
    }
}

/// A change the gate holds.
#[derive(Clone, Debug)]
pub struct Hold {
    /// The held outcome: the body's hash, or `status:NNN`.
    pub key: String,
    /// The origin's status.
    pub status: Option<u16>,
    /// The held body, when the origin answered with a file.
    pub body: Option<Bytes>,
    /// What it breaks.
    pub breaches: Vec<Breach>,
    /// Since when it is held.
    pub since: SystemTime,
}

impl Hold {
    /// One sentence: "it disallows / for Googlebot (line 3: disallow: /)…".
    pub fn summary(&self) -> String {
        rules::gate::summary(&self.breaches)
    }

    /// What it breaks, one line per page and deciding line with its
    /// crawlers ([`rules::gate::grouped`]), as the database keeps it and
    /// the console and alerts show it.
    pub fn lines(&self) -> String {
        rules::gate::grouped(&self.breaches).iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    }

    /// The `/status` form.
    pub fn json(&self) -> serde_json::Value {
        let ms = |t: SystemTime| t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let breaks: Vec<_> = self
            .breaches
            .iter()
            .map(|b| {
                serde_json::json!({
                    "url": b.url,
                    "crawler": b.agent,
                    "expected": b.expect.as_str(),
                    "declared": b.declared.as_str(),
                    "listed": b.listed.map(|l| serde_json::json!({ "closed": l.closed, "of": l.of })),
                    "now": b.new.to_string(),
                    "line": b.new.rule.as_ref().map(|r| r.line),
                    "was": b.old.to_string(),
                })
            })
            .collect();
        serde_json::json!({
            "outcome": self.key,
            "status": self.status,
            "since": ms(self.since),
            "summary": self.summary(),
            "grouped": rules::gate::grouped(&self.breaches).iter().map(ToString::to_string).collect::<Vec<_>>(),
            "breaks": breaks,
        })
    }
}

/// The key of a fetched body, as the database names revisions.
pub fn outcome_key(body: &[u8]) -> String {
    robotsgate_history::body_hash(body)
}
