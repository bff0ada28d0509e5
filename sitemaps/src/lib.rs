//! The sitemaps a robots.txt names, read as crawlers read them.
//!
//! - [`read`]: one file as a stream (XML `urlset` or `sitemapindex`, gzip,
//!   plain text) within the protocol's limits, with Search Console's
//!   findings, handing each URL on instead of keeping it.
//! - [`walk`]: every sitemap a robots.txt names, fetched over HTTP with
//!   redirects followed and reported, an index's sitemaps one level down,
//!   conditional requests, and a deadline per file.
//!
//! What the URLs mean against the robots.txt is [`rules::sitemap`]'s
//! judgement; this crate only reads.

pub mod finding;
pub mod lastmod;
pub mod read;
pub mod walk;

pub use finding::{Finding, Findings, What};
pub use read::{Context, Kind, Reading, Seen, read};
pub use walk::{File, Options, Sink, Walked, named, walk};
