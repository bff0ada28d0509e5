//! What is wrong with a sitemap, in Search Console's terms: each finding
//! has a stable key (for alerts, metrics and the API), a place (line and
//! column when there is one) and a sentence. Findings of one kind are
//! counted, the first kept whole, so 50,000 relative URLs are one line.

/// A kind of finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum What {
    /// The fetch answered 404 or another 4xx.
    NotFound,
    /// A 5xx, 429, or no answer.
    Unavailable,
    /// Redirects were followed to reach the file.
    Redirected,
    /// More than five redirects, or a loop.
    BrokenRedirect,
    /// The file did not come in time (a server trickling bytes).
    Timeout,
    /// A 200 with an HTML page (a login page, a soft 404).
    Html,
    /// Not well-formed XML.
    NotXml,
    /// The root element is neither `urlset` nor `sitemapindex`.
    Root,
    /// The root lacks the sitemaps.org namespace.
    Namespace,
    /// A `<!DOCTYPE>`: never expanded.
    Dtd,
    /// An entity other than XML's five: never expanded.
    Entity,
    /// Not UTF-8.
    Encoding,
    /// A corrupt gzip stream.
    Gzip,
    /// Over 50 MB uncompressed: read up to the limit.
    TooLarge,
    /// Over 50,000 URLs: the rest are not read.
    TooManyUrls,
    /// A URL that is not absolute.
    Relative,
    /// A URL on another host or scheme than the robots.txt speaks for.
    OtherHost,
    /// A URL over 2,048 characters.
    TooLong,
    /// A `lastmod` not in W3C datetime.
    Lastmod,
    /// A URL listed before (in this file or another).
    Duplicate,
    /// A sitemap index lists another index (one level only).
    NestedIndex,
    /// A sitemap lists itself, or one already read.
    Loop,
    /// Nothing listed.
    Empty,
    /// More sitemap files than are read in one check.
    TooManyFiles,
    /// The check's whole time ran out before every file was read.
    OutOfTime,
}

impl What {
    /// The stable key.
    pub fn key(self) -> &'static str {
        match self {
            What::NotFound => "not-found",
            What::Unavailable => "unavailable",
            What::Redirected => "redirected",
            What::BrokenRedirect => "broken-redirect",
            What::Timeout => "timeout",
            What::Html => "html",
            What::NotXml => "not-xml",
            What::Root => "root",
            What::Namespace => "namespace",
            What::Dtd => "dtd",
            What::Entity => "entity",
            What::Encoding => "encoding",
            What::Gzip => "gzip",
            What::TooLarge => "too-large",
            What::TooManyUrls => "too-many-urls",
            What::Relative => "relative",
            What::OtherHost => "other-host",
            What::TooLong => "too-long",
            What::Lastmod => "lastmod",
            What::Duplicate => "duplicate",
            What::NestedIndex => "nested-index",
            What::Loop => "loop",
            What::Empty => "empty",
            What::TooManyFiles => "too-many-files",
            What::OutOfTime => "out-of-time",
        }
    }

    /// Whether crawlers read none of the file's URLs because of it.
    pub fn is_error(self) -> bool {
        matches!(
            self,
            What::NotFound
                | What::Unavailable
                | What::BrokenRedirect
                | What::Timeout
                | What::Html
                | What::NotXml
                | What::Root
                | What::Encoding
                | What::Gzip
                | What::Loop
        )
    }
}

/// One kind of finding in one file: how often, and the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The kind.
    pub what: What,
    /// How many times it was found.
    pub count: u64,
    /// The first one's line (1-based; 0 when it has none).
    pub line: u64,
    /// The first one's column (1-based; 0 when it has none).
    pub column: u64,
    /// The first one, said whole.
    pub message: String,
}

impl std::fmt::Display for Finding {
    /// "line 12, column 5: the URL /a is not absolute (and 311 more)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (0, _) => {}
            (l, 0) => write!(f, "line {l}: ")?,
            (l, c) => write!(f, "line {l}, column {c}: ")?,
        }
        f.write_str(&self.message)?;
        if self.count > 1 {
            write!(f, " (and {} more)", self.count - 1)?;
        }
        Ok(())
    }
}

/// A file's findings, counted by kind in the order first found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings(pub Vec<Finding>);

impl Findings {
    /// Records one.
    pub fn add(&mut self, what: What, line: u64, column: u64, message: impl FnOnce() -> String) {
        match self.0.iter_mut().find(|f| f.what == what) {
            Some(f) => f.count += 1,
            None => self.0.push(Finding { what, count: 1, line, column, message: message() }),
        }
    }

    /// Whether one of this kind was found.
    pub fn has(&self, what: What) -> bool {
        self.0.iter().any(|f| f.what == what)
    }

    /// Whether any makes the file unreadable to crawlers.
    pub fn has_error(&self) -> bool {
        self.0.iter().any(|f| f.what.is_error())
    }
}
