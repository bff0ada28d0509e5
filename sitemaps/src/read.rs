//! Reading one sitemap file as a stream: gzip or not, XML (`urlset` or
//! `sitemapindex`) or plain text, within the protocol's limits (50,000 URLs,
//! 50 MB uncompressed). Memory is bounded whatever the file: the reader
//! holds one buffer and the URL being read, and hands each listed URL to a
//! visitor instead of keeping it.
//!
//! No DTD is read and no entity but XML's five and character references is
//! ever expanded: a "billion laughs" file is a finding, not a gigabyte.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, BufReader};

use quick_xml::events::Event;
use sha2::{Digest, Sha256};

use crate::finding::{Findings, What};

/// The protocol's limit on URLs a file.
pub const MAX_URLS: u64 = 50_000;
/// The protocol's limit on a file's uncompressed size: 50 MB (52,428,800 bytes).
pub const MAX_BYTES: u64 = 52_428_800;
/// The longest URL the protocol allows.
pub const MAX_LOC: usize = 2_048;
/// The sitemaps.org namespace.
pub const NAMESPACE: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// What kind of file it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `<urlset>`: URLs.
    Urlset,
    /// `<sitemapindex>`: other sitemaps.
    Index,
    /// One URL a line.
    Text,
    /// Not a sitemap (HTML, another XML root, nothing).
    Other,
}

impl Kind {
    /// `urlset`, `index`, `text` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Urlset => "urlset",
            Kind::Index => "index",
            Kind::Text => "text",
            Kind::Other => "other",
        }
    }
}

/// Where the reading stands for the URLs it checks.
#[derive(Clone, Debug)]
pub struct Context {
    /// The robots.txt's origin (`https://example.com`, with a port when
    /// not the scheme's): listed URLs elsewhere are off its host.
    pub origin: Option<String>,
    /// At most this many URLs.
    pub max_urls: u64,
    /// At most this many uncompressed bytes.
    pub max_bytes: u64,
}

impl Context {
    /// The protocol's limits, for URLs on `origin`'s host.
    pub fn new(origin: Option<String>) -> Context {
        Context { origin, max_urls: MAX_URLS, max_bytes: MAX_BYTES }
    }
}

/// URLs already listed, across the files of one check: each is counted
/// and checked once. Eight bytes a URL, whatever its length.
#[derive(Debug, Default)]
pub struct Seen {
    hashes: HashSet<u64>,
    state: std::hash::RandomState,
}

impl Seen {
    /// Whether `url` is new (and now seen).
    fn first(&mut self, url: &str) -> bool {
        let mut h = self.state.build_hasher();
        h.write(url.as_bytes());
        self.hashes.insert(h.finish())
    }

    /// Distinct URLs seen.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}

/// What reading one file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// What the file is.
    pub kind: Kind,
    /// Entries listed (URLs of a urlset or a text file, sitemaps of an
    /// index), valid or not, up to the limit.
    pub entries: u64,
    /// Entries handed on: valid, on the host, not listed before.
    pub listed: u64,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Whether it was gzip.
    pub gzip: bool,
    /// SHA-256 of the uncompressed bytes read, hex.
    pub sha256: String,
    /// The sitemaps an index lists (valid, on the host).
    pub children: Vec<String>,
    /// What is wrong.
    pub findings: Findings,
}

/// Reads one sitemap from `input` (compressed or not), handing each URL a
/// crawler would take from it to `visit`. Never fails: what goes wrong is
/// a finding.
pub fn read<'i>(input: impl io::Read + 'i, cx: &Context, seen: &mut Seen, visit: &mut dyn FnMut(&str)) -> Reading {
    let mut raw = BufReader::with_capacity(64 * 1024, input);
    let gzip = matches!(raw.fill_buf(), Ok([0x1f, 0x8b, ..]));
    let inner: Box<dyn BufRead + 'i> = if gzip {
        Box::new(BufReader::with_capacity(64 * 1024, flate2::bufread::MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let mut counted = Counted::new(inner, cx.max_bytes);
    let mut r = Reader {
        cx,
        seen,
        visit,
        out: Reading {
            kind: Kind::Other,
            entries: 0,
            listed: 0,
            bytes: 0,
            gzip,
            sha256: String::new(),
            children: Vec::new(),
            findings: Findings::default(),
        },
        full: false,
    };
    match first_byte(&mut counted) {
        Ok(Some(b'<')) => r.xml(&mut counted),
        Ok(Some(_)) => r.text(&mut counted),
        Ok(None) => {}
        Err(e) => r.io_error(&e, &counted),
    }
    if counted.over {
        r.out.findings.add(What::TooLarge, 0, 0, || {
            format!("the file is larger than {} bytes uncompressed; only that much was read", cx.max_bytes)
        });
    }
    if r.out.entries == 0 && !r.out.findings.has_error() {
        r.out.findings.add(What::Empty, 0, 0, || "the file lists no URL".to_string());
    }
    r.out.bytes = counted.offset;
    r.out.sha256 = counted.hex();
    r.out
}

/// The first byte after a byte-order mark and white space, left unread.
fn first_byte(c: &mut Counted<'_>) -> io::Result<Option<u8>> {
    loop {
        let buf = c.fill_buf()?;
        let Some(&b) = buf.first() else { return Ok(None) };
        if buf.starts_with(&[0xef, 0xbb, 0xbf]) {
            c.consume(3);
        } else if b.is_ascii_whitespace() {
            c.consume(1);
        } else {
            return Ok(Some(b));
        }
    }
}

struct Reader<'a> {
    cx: &'a Context,
    seen: &'a mut Seen,
    visit: &'a mut dyn FnMut(&str),
    out: Reading,
    /// The URL limit was reached: stop.
    full: bool,
}

/// Which element's text is being gathered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    None,
    Loc,
    Lastmod,
}

impl Reader<'_> {
    fn xml(&mut self, input: &mut Counted<'_>) {
        let mut xml = quick_xml::Reader::from_reader(&mut *input);
        xml.config_mut().expand_empty_elements = false;
        let mut buf = Vec::new();
        let mut depth = 0usize;
        let mut root_seen = false;
        let mut field = Field::None;
        let mut value = String::new();
        let mut entry_depth_ok = false;
        loop {
            buf.clear();
            // Where the event starts: the reader has consumed up to here.
            let (line, column) = xml.get_ref().place(xml.buffer_position());
            let event = xml.read_event_into(&mut buf);
            let is_start = matches!(event, Ok(Event::Start(_)));
            match event {
                Err(e) => {
                    let at = xml.error_position();
                    let (line, column) = xml.get_ref().place(at);
                    if let quick_xml::Error::Io(io) = &e {
                        self.io_error(io, xml.get_ref());
                    } else if !xml.get_ref().over {
                        self.out
                            .findings
                            .add(What::NotXml, line, column, || format!("the XML is not well-formed: {e}"));
                    }
                    return;
                }
                Ok(Event::Eof) => return,
                Ok(Event::DocType(d)) => {
                    let text = String::from_utf8_lossy(&d);
                    if text.trim_start().get(..4).is_some_and(|s| s.eq_ignore_ascii_case("html")) {
                        self.html(line);
                        return;
                    }
                    self.out.findings.add(What::Dtd, line, column, || {
                        "the file has a DOCTYPE; it is ignored, never expanded".to_string()
                    });
                }
                Ok(Event::Start(e)) | Ok(Event::Empty(e)) if !root_seen => {
                    root_seen = true;
                    let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                    let prefix = e.name().prefix().map(|p| String::from_utf8_lossy(p.as_ref()).into_owned());
                    self.out.kind = match name.as_str() {
                        "urlset" => Kind::Urlset,
                        "sitemapindex" => Kind::Index,
                        "html" | "HTML" => {
                            self.html(line);
                            return;
                        }
                        _ => {
                            self.out.findings.add(What::Root, line, column, || {
                                format!("the root element is <{name}>, not <urlset> or <sitemapindex>")
                            });
                            return;
                        }
                    };
                    let want = match &prefix {
                        Some(p) => format!("xmlns:{p}"),
                        None => "xmlns".to_string(),
                    };
                    let ns = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == want.as_bytes())
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                    if ns.as_deref().map(str::trim) != Some(NAMESPACE) {
                        self.out.findings.add(What::Namespace, line, column, || match ns {
                            Some(ns) => format!("the namespace is {ns:?}, not {NAMESPACE}"),
                            None => format!("the root element has no namespace; it must be {NAMESPACE}"),
                        });
                    }
                    if is_start {
                        depth = 1;
                    }
                }
                Ok(Event::Start(e)) => {
                    depth += 1;
                    let name = e.local_name();
                    let name = name.as_ref();
                    let entry = if self.out.kind == Kind::Index { &b"sitemap"[..] } else { &b"url"[..] };
                    if depth == 2 {
                        entry_depth_ok = name == entry;
                    } else if depth == 3 && entry_depth_ok {
                        field = match name {
                            b"loc" => Field::Loc,
                            b"lastmod" => Field::Lastmod,
                            _ => Field::None,
                        };
                        value.clear();
                    }
                    if self.out.kind == Kind::Urlset && depth == 2 && name == b"sitemap" {
                        self.out.findings.add(What::Root, line, column, || {
                            "a <urlset> holds <sitemap> entries; an index is a <sitemapindex>".to_string()
                        });
                    }
                }
                Ok(Event::End(_)) => {
                    if depth == 3 && field != Field::None {
                        let v = std::mem::take(&mut value);
                        match field {
                            Field::Loc => self.entry(v.trim(), line),
                            Field::Lastmod if !crate::lastmod::is_w3c(v.trim()) => {
                                let v = v.trim().to_string();
                                self.out.findings.add(What::Lastmod, line, 0, || {
                                    format!("lastmod {v:?} is not a W3C datetime (such as 2026-11-29 or 2026-11-29T17:05:00+00:00)")
                                })
                            }
                            _ => {}
                        }
                        field = Field::None;
                        if self.full {
                            return;
                        }
                    }
                    depth = depth.saturating_sub(1);
                }
                Ok(Event::Text(t)) if field != Field::None => match t.decode() {
                    Ok(s) => value.push_str(&s),
                    Err(_) => {
                        self.out.findings.add(What::Encoding, line, column, || "the file is not UTF-8".to_string());
                        return;
                    }
                },
                Ok(Event::CData(t)) if field != Field::None => match std::str::from_utf8(&t) {
                    Ok(s) => value.push_str(s),
                    Err(_) => {
                        self.out.findings.add(What::Encoding, line, column, || "the file is not UTF-8".to_string());
                        return;
                    }
                },
                Ok(Event::GeneralRef(r)) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Some(c),
                        Ok(None) => match &*r {
                            b"amp" => Some('&'),
                            b"lt" => Some('<'),
                            b"gt" => Some('>'),
                            b"quot" => Some('"'),
                            b"apos" => Some('\''),
                            _ => None,
                        },
                        Err(_) => None,
                    };
                    match resolved {
                        Some(c) if field != Field::None => value.push(c),
                        Some(_) => {}
                        None => {
                            let name = String::from_utf8_lossy(&r).into_owned();
                            self.out.findings.add(What::Entity, line, column, || {
                                format!("the entity &{name}; is not one of XML's own; it is never expanded")
                            });
                            // The URL it sits in is not what the file meant: drop it.
                            if field == Field::Loc {
                                field = Field::None;
                            }
                        }
                    }
                }
                Ok(Event::Text(t)) if depth == 0 => {
                    if std::str::from_utf8(&t).is_err() {
                        self.out.findings.add(What::Encoding, line, column, || "the file is not UTF-8".to_string());
                        return;
                    }
                }
                Ok(_) => {}
            }
        }
    }

    fn html(&mut self, line: u64) {
        self.out.kind = Kind::Other;
        self.out.findings.add(What::Html, line, 0, || {
            "the sitemap answered with an HTML page (a login page or an error page?), not a sitemap".to_string()
        });
    }

    fn text(&mut self, input: &mut Counted<'_>) {
        self.out.kind = Kind::Text;
        let mut line = Vec::new();
        let mut n = 0u64;
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) => {
                    self.io_error(&e, input);
                    return;
                }
            }
            n += 1;
            let Ok(text) = std::str::from_utf8(&line) else {
                self.out.findings.add(What::Encoding, n, 0, || "the line is not UTF-8".to_string());
                continue;
            };
            let url = text.trim();
            if url.is_empty() {
                continue;
            }
            if n == 1 && url.as_bytes().get(..5).is_some_and(|b| b.eq_ignore_ascii_case(b"<html")) {
                self.html(1);
                return;
            }
            self.entry(url, n);
            if self.full {
                return;
            }
        }
    }

    /// One `<loc>` or text line.
    fn entry(&mut self, loc: &str, line: u64) {
        self.out.entries += 1;
        if self.out.entries > self.cx.max_urls {
            self.out.entries -= 1;
            self.full = true;
            let max = self.cx.max_urls;
            self.out.findings.add(What::TooManyUrls, line, 0, || {
                format!("the file lists more than {max} URLs; the rest are not read, as crawlers do not read them")
            });
            return;
        }
        if loc.len() > MAX_LOC {
            self.out.findings.add(What::TooLong, line, 0, || {
                format!("a URL is {} characters long; the limit is {MAX_LOC}", loc.len())
            });
        }
        let parsed = match url::Url::parse(loc) {
            Ok(u) if u.has_host() && matches!(u.scheme(), "http" | "https") => u,
            _ => {
                let shown = shorten(loc);
                self.out.findings.add(What::Relative, line, 0, || {
                    format!("{shown:?} is not an absolute http(s) URL; sitemaps list full URLs")
                });
                return;
            }
        };
        if let Some(origin) = &self.cx.origin
            && !same_origin(&parsed, origin)
        {
            let shown = shorten(loc);
            let origin = origin.clone();
            self.out.findings.add(What::OtherHost, line, 0, || {
                format!("{shown} is not on {origin}, the host whose robots.txt names this sitemap")
            });
            return;
        }
        if !self.seen.first(loc) {
            let shown = shorten(loc);
            self.out.findings.add(What::Duplicate, line, 0, || format!("{shown} is listed more than once"));
            return;
        }
        self.out.listed += 1;
        if self.out.kind == Kind::Index {
            self.out.children.push(loc.to_string());
        } else {
            (self.visit)(loc);
        }
    }

    fn io_error(&mut self, e: &io::Error, input: &Counted<'_>) {
        let (line, column) = input.place(input.offset);
        match e.kind() {
            io::ErrorKind::TimedOut => {
                self.out.findings.add(What::Timeout, 0, 0, || format!("the file did not arrive in time: {e}"))
            }
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof
                if self.out.gzip =>
            {
                self.out.findings.add(What::Gzip, line, column, || format!("the gzip stream is corrupt: {e}"))
            }
            _ => self.out.findings.add(What::Unavailable, 0, 0, || format!("reading the file failed: {e}")),
        }
    }
}

/// Whether `url` is on `origin` (`scheme://host[:port]`), without
/// building the URL's own origin string.
fn same_origin(url: &url::Url, origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix(url.scheme()).and_then(|r| r.strip_prefix("://")) else { return false };
    let host = url.host_str().unwrap_or_default();
    // An IPv6 literal keeps its brackets, as `host_str` gives it.
    let (want_host, want_port) = match rest.find(']') {
        Some(end) => (&rest[..=end], rest[end + 1..].strip_prefix(':').and_then(|p| p.parse::<u16>().ok())),
        None => match rest.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().ok()),
            None => (rest, None),
        },
    };
    let default = if url.scheme() == "https" { 443 } else { 80 };
    want_host.eq_ignore_ascii_case(host)
        && want_port.unwrap_or(default) == url.port_or_known_default().unwrap_or(default)
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 120 {
        return s.to_string();
    }
    let cut: String = s.chars().take(117).collect();
    format!("{cut}...")
}

/// The uncompressed stream, counted: bytes up to the limit, lines for
/// findings' places, and the hash of what was read.
struct Counted<'i> {
    inner: Box<dyn BufRead + 'i>,
    limit: u64,
    offset: u64,
    /// Newlines consumed, and the offset just past the last one.
    lines: u64,
    line_start: u64,
    /// More bytes were there past the limit.
    over: bool,
    hash: Sha256,
}

impl<'i> Counted<'i> {
    fn new(inner: Box<dyn BufRead + 'i>, limit: u64) -> Counted<'i> {
        Counted { inner, limit, offset: 0, lines: 0, line_start: 0, over: false, hash: Sha256::new() }
    }

    /// Line and column (1-based) of `offset`, which is at or before what
    /// was consumed; the column is 0 when it lies on an earlier line.
    fn place(&self, offset: u64) -> (u64, u64) {
        if offset >= self.line_start { (self.lines + 1, offset - self.line_start + 1) } else { (self.lines + 1, 0) }
    }

    fn hex(&self) -> String {
        self.hash.clone().finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl io::Read for Counted<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Counted<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let left = self.limit.saturating_sub(self.offset);
        if left == 0 {
            if !self.over && !self.inner.fill_buf().map(<[u8]>::is_empty).unwrap_or(true) {
                self.over = true;
            }
            return Ok(&[]);
        }
        let buf = self.inner.fill_buf()?;
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        Ok(&buf[..n])
    }

    fn consume(&mut self, n: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let seen = &buf[..n.min(buf.len())];
            self.hash.update(seen);
            let newlines = memchr::memchr_iter(b'\n', seen).count() as u64;
            if newlines > 0 {
                self.lines += newlines;
                let last = memchr::memrchr(b'\n', seen).unwrap_or(0);
                self.line_start = self.offset + last as u64 + 1;
            }
        }
        self.offset += n as u64;
        self.inner.consume(n);
    }
}

/// Reads all of a byte slice (for `robots lint --sitemap` on a file).
pub fn read_bytes(bytes: &[u8], cx: &Context, seen: &mut Seen, visit: &mut dyn FnMut(&str)) -> Reading {
    read(io::Cursor::new(bytes), cx, seen, visit)
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        let yes = |u: &str, o: &str| same_origin(&url::Url::parse(u).unwrap(), o);
        assert!(yes("https://Shop.Example/a", "https://shop.example"));
        assert!(yes("https://shop.example:443/a", "https://shop.example"));
        assert!(yes("http://127.0.0.1:8080/a", "http://127.0.0.1:8080"));
        assert!(yes("http://[::1]/a", "http://[::1]"));
        assert!(yes("http://[::1]:81/a", "http://[::1]:81"));
        assert!(!yes("http://shop.example/a", "https://shop.example"));
        assert!(!yes("https://shop.example:8443/a", "https://shop.example"));
        assert!(!yes("https://www.shop.example/a", "https://shop.example"));
        assert!(!yes("https://shop.example.evil/a", "https://shop.example"));
        assert!(!yes("http://[::1]:81/a", "http://[::1]"));
    }
}
