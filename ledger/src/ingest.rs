//! `robots-monitor ingest --site NAME FILE…`: access logs read, each
//! crawler request judged against the robots.txt the crawler could hold,
//! and counted into the ledger.
//!
//! - A file is known by the hash of its first line, so a rotated copy, or
//!   the same bytes compressed (`.gz`), is the same file; how far it was
//!   read is kept in the database and written in the same transaction as
//!   the counts it produced. Importing the same bytes twice counts them
//!   once, and a kill at any moment loses and doubles nothing.
//! - Only complete lines are read; a last line still being written waits
//!   for the next import.
//! - The client address is verified as the gateway verifies it (the same
//!   `robotsgate-identity`, its feeds and DNS settings from `proxy.identity`),
//!   each (crawler, address) once per import.
//! - Memory stays bounded: a file is streamed, and counts are written every
//!   [`BATCH_LINES`] lines.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use robotsgate_compliance::log::{Format, Skip};
use robotsgate_compliance::{At, Fetch, Identity, Outcome, Request, Timeline};
use robotsgate_crawlers::Catalogue;

use super::ledger::{self, FileState, Key, Read as Fetched, Tally};
use super::prefetch::{self, Prefetch};
use super::{DAY_MS, timeline};
use crate::Host;

/// Lines between commits.
pub const BATCH_LINES: i64 = 100_000;
/// Unreadable lines kept as samples, per file.
pub const BAD_SAMPLES: i64 = 20;
/// Distinct User-Agents remembered while reading (bounded memory).
const MAX_AGENTS: usize = 50_000;

/// What one file's import did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FileReport {
    /// The file.
    pub path: String,
    /// Its identity (the hash of its first line).
    pub file_id: String,
    /// Lines read by this import: every physical line (a last line with no
    /// line end included), so that the buckets below add up to them.
    pub lines: i64,
    /// Lines an earlier import had read already.
    pub already: i64,
    /// Crawler requests: judged, or unjudged (before the first known robots.txt).
    pub judged: i64,
    /// Of them, before the site's first known robots.txt: no verdict.
    pub unjudged: i64,
    /// When the site's first known robots.txt begins (Unix ms), if any: what
    /// the unjudged requests came before.
    pub first_known: Option<i64>,
    /// Requests read before, unjudged then, judged now against history
    /// imported since.
    pub rejudged: i64,
    /// Requests older than `compliance_retention`: not judged, as their
    /// rows would be deleted at once.
    pub too_old: i64,
    /// The site has no host names (a `file:` site without `proxy.hosts`),
    /// so an absolute-form target cannot be placed: counted for other hosts.
    pub no_hosts: bool,
    /// robots.txt fetches by crawlers, recorded.
    pub fetches: i64,
    /// robots.txt fetches by clients that claim a crawler and fail its
    /// verification: they hold nothing for the crawler, so are counted apart.
    pub spoofed_fetches: i64,
    /// Whether claims were verified at all (`identity:` or
    /// `proxy.identity` configured); without it no claim is found spoofed,
    /// and reports say "not checked", never "0 by spoofers".
    pub identity_checked: bool,
    /// robots.txt fetches by crawlers answered with a redirect (3xx): the
    /// crawler fetched again elsewhere, so they hold no file.
    pub redirected: i64,
    /// Requests from no catalogued crawler.
    pub others: i64,
    /// Requests for another host.
    pub other_hosts: i64,
    /// Lines whose request is no HTTP request line.
    pub not_http: i64,
    /// Lines not of the format.
    pub malformed: i64,
    /// Blank lines (a line end written twice).
    pub blank: i64,
    /// Directive lines (W3C's `#Fields:`, `#Version:`, `#Date:`).
    pub directives: i64,
    /// The first malformed lines, with their numbers.
    pub bad_samples: Vec<(i64, String)>,
    /// Why the file was not read to its end, or not counted at all.
    pub error: Option<String>,
}

/// Whether crawler claims are verified for `config`'s ledger: the
/// monitor's own `identity:`, or the gateway's `proxy.identity`. Without
/// either, nothing is found verified or spoofed, and every surface says
/// "not checked" rather than a count of 0.
pub fn identity_checked(config: &robotsgate_config::Config) -> bool {
    config.identity.is_some() || config.proxy.as_ref().is_some_and(|p| p.identity.is_some())
}

/// Verification for imports: the gateway's, from `proxy.identity`.
async fn verification(m: &dyn Host) -> anyhow::Result<Option<robotsgate_identity::Identity>> {
    let config = m.config();
    let proxy = config.proxy.as_ref();
    // The monitor's own `identity:` first; else the gateway's.
    let Some(id) = config.identity.as_ref().or_else(|| proxy.and_then(|p| p.identity.as_ref())) else {
        return Ok(None);
    };
    let dir = id.feeds_dir.clone().unwrap_or_else(|| match proxy {
        Some(p) => p.state_dir.join("feeds"),
        None => PathBuf::from("var/feeds"),
    });
    let dns = id.reverse_dns.then(|| robotsgate_identity::dns::DnsOptions {
        servers: id.dns_servers.clone(),
        timeout: id.dns_timeout,
        budget: id.budget,
        in_flight: id.dns_in_flight,
    });
    let identity = robotsgate_identity::Identity::setup(m.catalogue().clone(), &dir, dns.as_ref(), &id.only)
        .map_err(anyhow::Error::msg)?;
    if id.fetch {
        identity.refresh_now(Duration::from_secs(10)).await;
    }
    Ok(Some(identity))
}

/// The hosts that name `site`: its URL's, and the gateway's `hosts`.
fn hosts_of(m: &dyn Host, site: &str) -> Vec<String> {
    let Some(s) = m.site(site) else { return Vec::new() };
    let mut hosts: Vec<String> = s.proxy.as_ref().map(|p| p.hosts.clone()).unwrap_or_default();
    if let Some(u) = s.url.as_deref().and_then(|u| url::Url::parse(u).ok())
        && let Some(h) = u.host_str()
    {
        hosts.push(h.to_string());
    }
    hosts.iter().map(|h| h.to_ascii_lowercase()).collect()
}

/// An opened log: its lines, and whether it is compressed (a compressed
/// file is finished: its last line counts even without a line end).
struct Opened {
    lines: Box<dyn BufRead + Send>,
    compressed: bool,
}

/// Opens `path`, decompressing gzip, xz and zstd (by their magic bytes,
/// whatever the name: logrotate's `compresscmd` writes all three); a
/// compression it cannot read (bzip2) is an error naming it, rather than
/// hundreds of "malformed" lines.
fn open(path: &Path) -> anyhow::Result<Opened> {
    let mut file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut magic = [0u8; 6];
    let mut n = 0;
    while n < magic.len() {
        match file.read(&mut magic[n..]).with_context(|| format!("reading {}", path.display()))? {
            0 => break,
            k => n += k,
        }
    }
    let magic = &magic[..n];
    for (mark, name, tool) in [(&b"BZh"[..], "bzip2", "bzip2 -dk")] {
        if magic.starts_with(mark) {
            anyhow::bail!(
                "{} is {name}-compressed, which ingest does not read; decompress it first (`{tool} {}`), or give the .gz",
                path.display(),
                path.display()
            );
        }
    }
    let gzip = magic.starts_with(&[0x1f, 0x8b]);
    let xz = magic.starts_with(b"\xFD7zXZ\0");
    let zstd = magic.starts_with(b"\x28\xB5\x2F\xFD");
    let head = std::io::Cursor::new(magic.to_vec()).chain(file);
    let lines: Box<dyn BufRead + Send> = if gzip {
        Box::new(BufReader::with_capacity(1 << 16, flate2::read::MultiGzDecoder::new(head)))
    } else if xz {
        // Concatenated streams too, as `cat a.xz b.xz` and gzip's reader allow.
        Box::new(BufReader::with_capacity(1 << 16, liblzma::read::XzDecoder::new_multi_decoder(head)))
    } else if zstd {
        let decoder = zstd::stream::read::Decoder::new(head)
            .with_context(|| format!("starting to decompress {} (zstd)", path.display()))?;
        Box::new(BufReader::with_capacity(1 << 16, decoder))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, head))
    };
    Ok(Opened { lines, compressed: gzip || xz || zstd })
}

/// A file's identity: the SHA-256 of its first complete line (of its first
/// 64 KiB, for a longer one); `None` while it has neither. A file that
/// opens with `#` directives (W3C: every IIS and CloudFront file starts
/// with the same `#Software:` or `#Version:` line) is known by them and its
/// first request line together.
pub(crate) fn file_id(path: &Path) -> anyhow::Result<Option<String>> {
    Ok(head(&mut *open(path)?.lines, path)?.map(|lines| identity(&lines)))
}

/// The identity of a file's [`head`].
fn identity(head: &[Vec<u8>]) -> String {
    robotsgate_history::body_hash(&head.concat())
}

/// Most directive lines a file's identity takes in.
const HEAD_LINES: usize = 64;

/// The lines a file is known by: its first line, and, when that is a `#`
/// directive, every directive after it and the first other line; `None`
/// while they are not all there.
fn head(reader: &mut dyn BufRead, path: &Path) -> anyhow::Result<Option<Vec<Vec<u8>>>> {
    let Some(first) = first_line(reader, path)? else { return Ok(None) };
    let directives = first.first() == Some(&b'#');
    let mut lines = vec![first];
    while directives && lines.len() < HEAD_LINES && lines.last().is_some_and(|l| l.first() == Some(&b'#')) {
        match first_line(reader, path)? {
            Some(next) => lines.push(next),
            None => return Ok(None),
        }
    }
    Ok(Some(lines))
}

/// The longest first line a file is known by.
const FIRST_LINE_MAX: u64 = 64 * 1024;

/// The first complete line `reader` holds, or the first 64 KiB of a longer
/// one, which it has then read past; `None` while there is neither.
fn first_line(reader: &mut dyn BufRead, path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let mut first = Vec::new();
    reader.take(FIRST_LINE_MAX).read_until(b'\n', &mut first).with_context(|| format!("reading {}", path.display()))?;
    Ok((first.ends_with(b"\n") || first.len() as u64 == FIRST_LINE_MAX).then_some(first))
}

/// What a crawler's robots.txt fetch got, read from its log line: a 200
/// or 304 got what the site served then; another status is that status.
fn fetched(timeline: &Timeline, at: At, status: u16) -> Option<Outcome> {
    match status {
        // Before the site's first known state, what a 200 carried is
        // unknown: no evidence, so no read to judge by.
        200 | 304 => timeline.at(at).cloned(),
        300..=399 => None,
        s => Some(Outcome::status(s)),
    }
}

/// A fetch as the ledger kept it, read back against the timeline's bodies;
/// `None` for a read whose content is unknown (a 200 or 304 before the
/// first known robots.txt), which judges nothing.
fn fetch_of(read: &Fetched, bodies: &HashMap<i64, Outcome>) -> Option<Fetch> {
    if read.content_unknown() {
        return None;
    }
    let outcome = match (read.revision, read.status) {
        (rev, _) if rev > 0 => bodies.get(&rev).cloned().unwrap_or_else(|| Outcome::status(200)),
        (_, s) if s > 0 => Outcome::status(u16::try_from(s).unwrap_or(500)),
        _ => Outcome::unreachable(),
    };
    Some(Fetch { at: At { ms: read.at, seq: u64::try_from(read.seq).unwrap_or(0) }, outcome })
}

/// Imports `paths` for `site` in `format`, then applies retention.
pub async fn ingest(m: &dyn Host, site: &str, paths: &[PathBuf], format: &Format) -> anyhow::Result<Vec<FileReport>> {
    let mut importer = Importer::new(m, site, format.clone()).await?;
    let mut reports = Vec::new();
    // A file that cannot be read (a compression ingest does not read, say)
    // is reported, and the files after it are read all the same.
    for path in paths {
        match importer.files(m, std::slice::from_ref(path)).await {
            Ok(mut r) => reports.append(&mut r),
            Err(e) => reports.push(FileReport {
                path: path.display().to_string(),
                error: Some(format!("{e:#}")),
                ..FileReport::default()
            }),
        }
    }
    prune(m).await?;
    Ok(reports)
}

/// Takes `paths` back for `site`: what each added to the ledger is
/// subtracted and how far it was read forgotten, so that an import reads it
/// again from its start (with the right `--format`, say) and nothing counts
/// twice. A file is known as an import knows it (by its first line), so a
/// rotated or compressed copy names the same file.
pub async fn forget(m: &dyn Host, site: &str, paths: &[PathBuf]) -> anyhow::Result<Vec<(String, ledger::Forgotten)>> {
    anyhow::ensure!(m.site(site).is_some(), "no site named `{site}` in the config");
    let mut out = Vec::new();
    for path in paths {
        let Opened { lines: mut input, .. } = open(path)?;
        let shown = path.display().to_string();
        let Some(head) = head(&mut input, path)? else {
            out.push((shown, ledger::Forgotten::default()));
            continue;
        };
        out.push((shown, ledger::forget_file(m.store(), site, &identity(&head)).await?));
    }
    Ok(out)
}

/// Deletes ledger rows older than `compliance_retention`.
pub async fn prune(m: &dyn Host) -> anyhow::Result<()> {
    let keep = m.config().compliance_retention.as_millis() as i64;
    let before = (monitor::clock::now_ms() - keep).div_euclid(DAY_MS);
    ledger::prune(m.store(), before).await?;
    Ok(())
}

/// One site's importer, kept between imports by a tail: its verification,
/// its caches, the site's timeline and crawlers' last fetches.
pub struct Importer {
    site: String,
    format: Format,
    reader: Reader,
    fetches: HashMap<String, Fetch>,
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer").field("site", &self.site).field("format", &self.format).finish_non_exhaustive()
    }
}

impl Importer {
    /// An importer for `site`'s logs in `format`.
    pub async fn new(m: &dyn Host, site: &str, format: Format) -> anyhow::Result<Importer> {
        anyhow::ensure!(m.site(site).is_some(), "no site named `{site}` in the config");
        let reader = Reader {
            catalogue: m.catalogue().clone(),
            verified: HashMap::new(),
            identity: verification(m).await?,
            timeline: Timeline::new(),
            hosts: hosts_of(m, site),
            slashes: m.site(site).map(robotsgate_config::Site::slashes).unwrap_or_default(),
            oldest: (monitor::clock::now_ms() - m.config().compliance_retention.as_millis() as i64).div_euclid(DAY_MS)
                * DAY_MS,
            start: None,
        };
        let mut importer = Importer { site: site.to_string(), format, reader, fetches: HashMap::new() };
        importer.reload(m).await?;
        Ok(importer)
    }

    /// Reads the site's timeline and crawlers' last fetches again, for
    /// what the monitor and other importers recorded since.
    pub async fn reload(&mut self, m: &dyn Host) -> anyhow::Result<()> {
        let (timeline, bodies, start) = timeline::of(m.store(), &self.site).await?;
        self.reader.timeline = timeline;
        self.reader.start = start;
        self.fetches = ledger::reads(m.store(), &self.site)
            .await?
            .iter()
            .filter_map(|(c, r)| Some((c.clone(), fetch_of(r, &bodies)?)))
            .collect();
        Ok(())
    }

    /// Imports what `paths` hold that no import counted yet.
    pub async fn files(&mut self, m: &dyn Host, paths: &[PathBuf]) -> anyhow::Result<Vec<FileReport>> {
        let mut reports = Vec::new();
        for path in paths {
            reports.push(self.reader.file(m, &self.site, path, &self.format, &mut self.fetches).await?);
        }
        Ok(reports)
    }
}

/// The state one import carries from line to line.
struct Reader {
    catalogue: Catalogue,
    /// (crawler index, address) to the identity answer.
    verified: HashMap<(usize, IpAddr), Identity>,
    identity: Option<robotsgate_identity::Identity>,
    timeline: Timeline,
    hosts: Vec<String>,
    /// How the site's origin reads slashes: requests are judged in the
    /// gateway's normal form.
    slashes: robotsgate_compliance::Slashes,
    /// The oldest request time kept (Unix ms): `compliance_retention` ago.
    oldest: i64,
    /// When the site's timeline starts (its first known state), if it does.
    start: Option<i64>,
}

impl Reader {
    /// The rows read so far, keyed by the crawler's token; empties `rows`.
    fn keyed(&self, rows: &mut HashMap<(usize, Key), Tally>) -> HashMap<Key, Tally> {
        rows.drain()
            .map(|((crawler, mut key), tally)| {
                key.crawler = self.catalogue.crawlers()[crawler].token.clone();
                (key, tally)
            })
            .collect()
    }

    async fn verify(&mut self, crawler: usize, ip: IpAddr) -> Identity {
        let Some(identity) = &self.identity else { return Identity::Unverifiable };
        if let Some(a) = self.verified.get(&(crawler, ip)) {
            return *a;
        }
        let c = &self.catalogue.crawlers()[crawler];
        let a = Identity::from(identity.verify(c, ip, None).await.answer);
        if self.verified.len() >= MAX_AGENTS {
            self.verified.clear();
        }
        self.verified.insert((crawler, ip), a);
        a
    }

    async fn file(
        &mut self,
        m: &dyn Host,
        site: &str,
        path: &Path,
        format: &Format,
        fetches: &mut HashMap<String, Fetch>,
    ) -> anyhow::Result<FileReport> {
        let shown = path.display().to_string();
        let mut report = FileReport {
            path: shown.clone(),
            no_hosts: self.hosts.is_empty(),
            first_known: self.start,
            identity_checked: self.identity.is_some(),
            ..FileReport::default()
        };
        // The identity and the lines come from one opening of the file.
        // Opened twice, a file truncated and written again in between
        // (copytruncate) had its new lines read against the old file's
        // offset: some counted twice, some never.
        let Opened { lines: mut input, compressed } = open(path)?;
        let Some(head) = head(&mut input, path)? else { return Ok(report) };
        let id = identity(&head);
        report.file_id = id.clone();
        let mut state = ledger::file_state(m.store(), site, &id).await?;
        // Where this batch began: the commit counts it only if no other
        // import moved the file's offset meanwhile.
        let mut from = state.read_bytes;
        // Keyed by the crawler's index while reading (no string to hash or
        // copy a line); the catalogue's token replaces it on commit.
        let (mut rows, mut reads): (HashMap<(usize, Key), Tally>, HashMap<String, Fetched>) = Default::default();
        let mut bad: Vec<(i64, String, String)> = Vec::new();
        let (mut offset, mut line_no, mut since_commit) = (0i64, 0i64, 0i64);
        let w3c = matches!(format, Format::W3c(_));
        // Lines read before `unjudged_before` were unjudged: those at or
        // after the timeline's start now (history imported since) are
        // judged again, moved out of their unjudged rows.
        let start = self.start.unwrap_or(i64::MAX);
        let rejudge = state.unjudged_before.filter(|before| start < *before).map(|before| (before, start));
        state.unjudged_before = Some(state.unjudged_before.map_or(start, |b| b.min(start)));
        // Lines are parsed ahead on every core; those read before are not
        // parsed at all unless history imported since judges them again.
        let parsed_after = if rejudge.is_some() { 0 } else { state.read_bytes };
        let mut lines = Prefetch::start(input, head, format, &self.catalogue, parsed_after);
        'file: while let Some(mut batch) = lines.next_batch() {
            let parsed = std::mem::take(&mut batch.parsed);
            for (i, parsed) in parsed.into_iter().enumerate() {
                let raw = batch.raw(i);
                let n = raw.len();
                // A byte-order mark before the first line is no part of it.
                let text = prefetch::text_of(raw, batch.first_line(i));
                // The last line has no line end: in a finished (compressed) file
                // it is complete; in a live one, only if it reads as a whole
                // line (a line cut short reads as malformed), or was read
                // before, else it waits for the rest.
                let whole = match &parsed {
                    Some(p) => !matches!(p.entry, Err(Skip::Malformed(_))),
                    None => offset + n as i64 <= state.read_bytes,
                };
                if !raw.ends_with(b"\n") && !compressed && !whole {
                    break 'file;
                }
                offset += n as i64;
                line_no += 1;
                // A W3C directive (`#Fields:`, `#Date:`) is no request: it names
                // the fields of the lines after it (the parsers apply it), in a
                // resumed read too.
                if w3c && text.first() == Some(&b'#') {
                    if offset <= state.read_bytes {
                        report.already += 1;
                    } else {
                        (report.lines, report.directives, state.lines) =
                            (report.lines + 1, report.directives + 1, state.lines + 1);
                    }
                    state.read_bytes = state.read_bytes.max(offset);
                    continue;
                }
                // Blank lines (a line end written twice) hold no request, and
                // are counted as what they are.
                let blank = text.iter().all(u8::is_ascii_whitespace);
                // A line read before is read again only to judge it anew: when
                // it was unjudged, and history imported since reaches its time.
                let rejudging = offset <= state.read_bytes;
                if rejudging {
                    report.already += 1;
                    if blank || rejudge.is_none() {
                        continue;
                    }
                } else {
                    state.read_bytes = offset;
                    report.lines += 1;
                    state.lines += 1;
                    if blank {
                        report.blank += 1;
                        continue;
                    }
                }
                let Some(parsed) = parsed else { continue };
                match parsed.entry {
                    Err(_) if rejudging => {}
                    Err(Skip::NotHttp) => {
                        state.not_http += 1;
                        report.not_http += 1;
                    }
                    Err(Skip::Malformed(why)) => {
                        state.malformed += 1;
                        report.malformed += 1;
                        if state.malformed <= BAD_SAMPLES {
                            let sample = String::from_utf8_lossy(&text[..text.len().min(500)]).into_owned();
                            report.bad_samples.push((line_no, why.clone()));
                            bad.push((line_no, why, sample));
                        }
                    }
                    Ok(entry)
                        if rejudging
                            && !rejudge.is_some_and(|(before, start)| (start..before).contains(&entry.at_ms)) => {}
                    Ok(entry) => {
                        let other_host = entry.host.as_deref().is_some_and(|h| {
                            let h = h
                                .rsplit_once(':')
                                .map_or(h, |(a, p)| if p.bytes().all(|b| b.is_ascii_digit()) { a } else { h });
                            !self.hosts.is_empty() && !self.hosts.iter().any(|x| x.eq_ignore_ascii_case(h))
                        });
                        if entry.at_ms < self.oldest {
                            // Its rows would be pruned in this same run.
                            report.too_old += i64::from(!rejudging);
                        } else if other_host || !robotsgate_compliance::for_site(&entry.target, &self.hosts) {
                            report.other_hosts += i64::from(!rejudging);
                        } else if let Some((crawler, word)) = parsed.claim {
                            let identity = self.verify(crawler, entry.client).await;
                            let at = At { ms: entry.at_ms, seq: u64::try_from(line_no).unwrap_or(0) };
                            let target = robotsgate_compliance::origin_form(&entry.target);
                            if robotsgate_compliance::is_robots_fetch(target) && (300..400).contains(&entry.status) {
                                // Redirected: the file came from elsewhere, or not at all.
                                report.redirected += i64::from(!rejudging);
                            } else if robotsgate_compliance::is_robots_fetch(target) {
                                // Recorded, never judged; a spoofer's fetch is not the
                                // crawler's, and is counted apart.
                                if identity == Identity::Spoofed {
                                    report.spoofed_fetches += i64::from(!rejudging);
                                } else {
                                    report.fetches += i64::from(!rejudging);
                                }
                                let token = self.catalogue.crawlers()[crawler].token.clone();
                                let known = fetched(&self.timeline, at, entry.status);
                                // A read before the first known robots.txt: seen, its
                                // content unknown (revision 0 with a 200 or 304), and
                                // never used to judge.
                                if identity != Identity::Spoofed
                                    && known.is_none()
                                    && matches!(entry.status, 200 | 304)
                                    && reads.get(&token).is_none_or(|r| (r.at, r.seq) < (at.ms, line_no))
                                {
                                    let read = Fetched {
                                        at: at.ms,
                                        seq: line_no,
                                        revision: 0,
                                        status: i64::from(entry.status),
                                    };
                                    reads.insert(token.clone(), read);
                                }
                                if identity != Identity::Spoofed
                                    && let Some(outcome) = known
                                {
                                    let read = Fetched {
                                        at: at.ms,
                                        seq: line_no,
                                        revision: outcome.revision.unwrap_or(0),
                                        status: i64::from(outcome.status.unwrap_or(0)),
                                    };
                                    if fetches.get(&token).is_none_or(|f| f.at < at) {
                                        fetches.insert(token.clone(), Fetch { at, outcome });
                                        reads.insert(token, read);
                                    }
                                }
                            } else {
                                let window = self.catalogue.crawlers()[crawler].robots_cache();
                                let request = Request { at, crawler: &word, identity, target, slashes: self.slashes };
                                let last = fetches.get(&self.catalogue.crawlers()[crawler].token);
                                let j = robotsgate_compliance::judge(&request, last, window, &self.timeline);
                                let key = Key {
                                    crawler: String::new(),
                                    identity: identity.as_str(),
                                    revision: j.revision.unwrap_or(0),
                                    line: i64::from(j.line.unwrap_or(0)),
                                    status: i64::from(j.status.unwrap_or(0)),
                                    class: j.class.as_str(),
                                    day: entry.at_ms.div_euclid(DAY_MS),
                                };
                                let unjudged = j.class == robotsgate_compliance::Class::Unjudged;
                                if rejudging {
                                    // Moved from the unjudged row it was counted in.
                                    if !unjudged {
                                        let before = Key {
                                            revision: 0,
                                            line: 0,
                                            status: 0,
                                            class: robotsgate_compliance::Class::Unjudged.as_str(),
                                            ..key.clone()
                                        };
                                        let t = rows.entry((crawler, before)).or_default();
                                        if t.requests == 0 {
                                            (t.first_at, t.last_at) = (i64::MAX, i64::MIN);
                                        }
                                        t.requests -= 1;
                                        let target = String::from_utf8_lossy(target);
                                        rows.entry((crawler, key)).or_default().add(entry.at_ms, &target, j.stale);
                                        report.rejudged += 1;
                                    }
                                } else {
                                    rows.entry((crawler, key)).or_default().add(
                                        entry.at_ms,
                                        &String::from_utf8_lossy(target),
                                        j.stale,
                                    );
                                    state.judged += 1;
                                    report.judged += 1;
                                    report.unjudged += i64::from(unjudged);
                                }
                            }
                        } else {
                            report.others += i64::from(!rejudging);
                        }
                    }
                }
                since_commit += 1;
                if since_commit >= BATCH_LINES && !(from == 0 && all_malformed(&report)) {
                    commit(m, site, &id, &shown, from, &state, &self.keyed(&mut rows), &mut reads, &mut bad).await?;
                    from = state.read_bytes;
                    since_commit = 0;
                }
            }
            // A truncated .gz, a disk error: what was read counts, and the
            // next file is read; the error is reported.
            if let Some(e) = batch.error {
                report.error = Some(format!("{shown}: read up to line {line_no}, then: {e}"));
                break;
            }
        }
        if from == 0 && all_malformed(&report) {
            // Read with the wrong format, most likely: not marked read, so
            // that the right `--format` can read it.
            let why = report.bad_samples.first().map_or(String::new(), |(_, why)| format!(" (line 1: {why})"));
            report.error = Some(format!(
                "{shown}: none of its {} is a `{}` line{why}; nothing was counted, and the file is not marked read",
                monitor::words::plural(report.lines - report.blank - report.directives, "line", "lines"),
                format.name()
            ));
            return Ok(report);
        }
        commit(m, site, &id, &shown, from, &state, &self.keyed(&mut rows), &mut reads, &mut bad).await?;
        Ok(report)
    }
}

/// Whether every line read so far was malformed (and there were some).
fn all_malformed(report: &FileReport) -> bool {
    report.malformed > 0 && report.malformed == report.lines - report.blank - report.directives
}

/// Writes what was read since the last commit, with the file's offset,
/// in one transaction.
#[allow(clippy::too_many_arguments)]
async fn commit(
    m: &dyn Host,
    site: &str,
    file_id: &str,
    path: &str,
    from: i64,
    state: &FileState,
    rows: &HashMap<Key, Tally>,
    reads: &mut HashMap<String, Fetched>,
    bad: &mut Vec<(i64, String, String)>,
) -> anyhow::Result<()> {
    let mut tx = m.store().pool().begin().await.context("starting an import transaction")?;
    ledger::write_rows(&mut tx, site, rows).await.context("adding to the ledger")?;
    ledger::write_file_rows(&mut tx, site, file_id, rows).await?;
    ledger::write_reads(&mut tx, site, reads).await.context("recording robots.txt reads")?;
    for (line, why, text) in bad.iter() {
        ledger::write_bad_line(&mut tx, site, file_id, *line, why, text).await?;
    }
    if !ledger::write_file(&mut tx, site, file_id, path, from, state, monitor::clock::now_ms()).await? {
        // Another import read these lines first (a second tail of the same
        // file): they are its to count. Nothing of this batch is kept.
        tx.rollback().await.context("rolling back an import")?;
        anyhow::bail!("{path}: another import counted these lines first; nothing of this batch was kept");
    }
    tx.commit().await.context("committing an import")?;
    reads.clear();
    bad.clear();
    Ok(())
}
