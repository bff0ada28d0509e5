//! Turns robots.txt bytes into a stream of directive events, the way Google's
//! parser does, so that every consumer (the compiler, the lint, the reference
//! matcher) sees exactly the lines Google sees.
//!
//! The parser never fails: any byte sequence yields some events. Each Google
//! tolerance is a small named function below, marked "Google-specific".

mod specials;

use specials::Specials;
use std::borrow::Cow;

/// Google's crawler reads at most this many bytes (500 KiB) of a robots.txt;
/// everything after it is ignored.
pub const MAX_FILE_BYTES: usize = 500 * 1024;

/// Longest line Google keeps; bytes past it are dropped and the rest of the
/// line still counts. Google sizes its buffer at eight times the longest URL
/// browsers accept (2083 bytes) and keeps one byte for the terminator.
pub const MAX_LINE_BYTES: usize = 2083 * 8 - 1;

/// The kind of a directive, decided from its key the way Google does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// `user-agent` and its accepted typos.
    UserAgent,
    /// `allow` (no typos are accepted for it).
    Allow,
    /// `disallow` and its accepted typos.
    Disallow,
    /// `sitemap` or `site-map`.
    Sitemap,
    /// Any other key, such as `crawl-delay`; it does not end a group.
    Unknown,
}

/// What Google notes about a line besides its directive; the lint reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineMeta {
    /// Nothing but whitespace.
    pub is_empty: bool,
    /// A `#` appears on the line.
    pub has_comment: bool,
    /// Nothing but a comment.
    pub is_comment: bool,
    /// The line yields a directive.
    pub has_directive: bool,
    /// The key and value were split by whitespace instead of a colon.
    pub missing_colon: bool,
    /// The line was longer than [`MAX_LINE_BYTES`] and was cut.
    pub too_long: bool,
    /// A NUL byte ended the line early.
    pub has_nul: bool,
}

/// One `key: value` line as Google reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directive<'a> {
    /// 1-based line number, counted as Google counts lines.
    pub line: u32,
    /// The kind Google assigns to the key.
    pub kind: KeyKind,
    /// The key exactly as written (after trimming).
    pub key: &'a [u8],
    /// The value as written (after trimming), before percent-normalisation.
    pub value: &'a [u8],
    /// What the line reader saw of `value` on its way through, so that
    /// compiling a rule needs no second pass over it; `None` when the line
    /// had no colon.
    pub marks: Option<Marks>,
}

/// Facts about a directive's value, found while reading its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marks {
    /// Offset in the value of its first `*`.
    pub star: Option<usize>,
    /// The value holds no `%` and no byte of 0x80 and up, so
    /// [`normalize_pattern`] would return it unchanged.
    pub plain: bool,
}

/// Which group a directive stands in, as the engine groups lines: a run
/// of `user-agent` lines starts a group (named by its first line), a rule
/// ends the run, and any other key neither starts nor ends one. For passes
/// that read group-bound lines the matcher ignores (`Content-Usage`,
/// `Crawl-delay`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Grouping {
    group: Option<u32>,
    in_agents: bool,
}

impl Grouping {
    /// Takes `d` in, and says the first `user-agent` line of its group
    /// (`None` before any group).
    pub fn see(&mut self, d: &Directive<'_>) -> Option<u32> {
        match d.kind {
            KeyKind::UserAgent => {
                if !self.in_agents {
                    self.group = Some(d.line);
                }
                self.in_agents = true;
            }
            KeyKind::Allow | KeyKind::Disallow => self.in_agents = false,
            KeyKind::Sitemap | KeyKind::Unknown => {}
        }
        self.group
    }
}

/// Receives the parser's events. Every method has an empty default, so a
/// consumer implements only what it needs.
pub trait Handler {
    /// Called once for every line, before its directive if it has one.
    /// `raw` is the line as stored by Google (cut at the line limit), before
    /// comment removal and NUL cutting.
    fn line(&mut self, _line: u32, _raw: &[u8], _meta: &LineMeta) {}
    /// Called for every line that carries a directive.
    fn directive(&mut self, _d: &Directive<'_>) {}
}

/// Two handlers fed by one parse, each event to the first, then the
/// second: how a body is compiled and linted in one pass over its bytes.
#[derive(Debug)]
pub struct Both<'a, A: ?Sized, B: ?Sized>(pub &'a mut A, pub &'a mut B);

impl<A: Handler + ?Sized, B: Handler + ?Sized> Handler for Both<'_, A, B> {
    #[inline]
    fn line(&mut self, line: u32, raw: &[u8], meta: &LineMeta) {
        self.0.line(line, raw, meta);
        self.1.line(line, raw, meta);
    }
    #[inline]
    fn directive(&mut self, d: &Directive<'_>) {
        self.0.directive(d);
        self.1.directive(d);
    }
}

/// Parses `body` and feeds the events to `handler`.
///
/// Applies every byte-level rule Google applies: content past
/// [`MAX_FILE_BYTES`] is ignored; a leading UTF-8 byte-order mark, or any
/// leading part of one, is skipped; LF, CRLF and a lone CR each end a line;
/// a line is cut at [`MAX_LINE_BYTES`] and at its first NUL byte.
pub fn parse<H: Handler + ?Sized>(body: &[u8], handler: &mut H) {
    let body = &body[..body.len().min(MAX_FILE_BYTES)];
    let mut start = bom_len(body);
    let mut specials = Specials::new(body, start);
    let mut line_no: u32 = 0;
    loop {
        // Where this line's special bytes are (see `Cuts`).
        let mut cuts = Cuts::NONE;
        let (end, next) = loop {
            // Once a `#` or NUL has ended the content, only the line's end
            // (and, for the lint, a NUL) still matters.
            let found = if cuts.stop == usize::MAX { specials.next() } else { specials.next_cut() };
            let Some(i) = found else { break (body.len(), None) };
            let at = i - start;
            match body[i] {
                b'\n' => break (i, Some(i + 1)),
                b'\r' => {
                    // CRLF is one terminator; "\r\r" or "\n\r" are two.
                    if body.get(i + 1) == Some(&b'\n') {
                        specials.next_cut();
                        break (i, Some(i + 2));
                    }
                    break (i, Some(i + 1));
                }
                b':' => cuts.colon = cuts.colon.min(at),
                b'#' => cuts.stop = at,
                0 => {
                    cuts.stop = cuts.stop.min(at);
                    cuts.nul = cuts.nul.min(at);
                }
                // Only what follows the colon can be in the value.
                b'*' if cuts.colon < at => cuts.star = cuts.star.min(at),
                b'*' => {}
                _ if cuts.colon < at => cuts.escape = cuts.escape.min(at),
                _ => {}
            }
        };
        line_no = line_no.saturating_add(1);
        emit_line(line_no, &body[start..end], cuts, handler);
        match next {
            Some(n) => start = n,
            None => break,
        }
    }
}

/// Offsets in a line of the bytes that shape it, `usize::MAX` for none.
#[derive(Clone, Copy)]
struct Cuts {
    /// The first `:`.
    colon: usize,
    /// The first `#` or NUL: the content ends there.
    stop: usize,
    /// The first NUL.
    nul: usize,
    /// The first `*` after the first colon.
    star: usize,
    /// The first `%` or byte of 0x80 and up after the first colon.
    escape: usize,
}

impl Cuts {
    const NONE: Cuts =
        Cuts { colon: usize::MAX, stop: usize::MAX, nul: usize::MAX, star: usize::MAX, escape: usize::MAX };
}

/// Google-specific: a byte-order mark should never appear in robots.txt, but
/// it does, so any leading prefix of one (EF, EF BB, EF BB BF) is dropped.
fn bom_len(body: &[u8]) -> usize {
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    body.iter().zip(BOM).take_while(|(a, b)| **a == *b).count()
}

fn emit_line<H: Handler + ?Sized>(line_no: u32, raw: &[u8], cuts: Cuts, handler: &mut H) {
    let mut meta = LineMeta::default();
    let raw = if raw.len() > MAX_LINE_BYTES {
        meta.too_long = true;
        &raw[..MAX_LINE_BYTES]
    } else {
        raw
    };
    // A cut past the line limit was dropped with the bytes it stood in.
    let stop = cuts.stop.min(raw.len());
    if stop < raw.len() {
        meta.has_comment = raw[stop] == b'#';
    }
    meta.has_nul = cuts.nul < raw.len();
    let directive = if cuts.colon < stop {
        let key = trim(&raw[..cuts.colon]);
        let value = trimmed(raw, cuts.colon + 1, stop);
        // Whitespace is neither `*` nor an escape, so the first of each
        // after the colon is in the value or past it.
        let marks =
            Marks { star: (cuts.star < value.end).then(|| cuts.star - value.start), plain: cuts.escape >= value.end };
        (!key.is_empty()).then(|| (key, &raw[value], Some(marks)))
    } else {
        let text = trim(&raw[..stop]);
        if text.is_empty() {
            if meta.has_comment {
                meta.is_comment = true;
            } else {
                meta.is_empty = true;
            }
            handler.line(line_no, raw, &meta);
            return;
        }
        whitespace_separator(text).map(|sep| {
            meta.missing_colon = true;
            (trim(&text[..sep]), trim(&text[sep + 1..]), None)
        })
    };
    let directive =
        directive.map(|(key, value, marks)| Directive { line: line_no, kind: classify_key(key), key, value, marks });
    meta.has_directive = directive.is_some();
    handler.line(line_no, raw, &meta);
    if let Some(d) = directive {
        handler.directive(&d);
    }
}

/// Google-specific: people forget the colon, so a line of exactly two
/// space- or tab-separated words is read as `key value`.
fn whitespace_separator(text: &[u8]) -> Option<usize> {
    let is_blank = |b: &u8| *b == b' ' || *b == b'\t';
    let sep = text.iter().position(is_blank)?;
    let value_start = sep + text[sep..].iter().take_while(|b| is_blank(b)).count();
    if text[value_start..].iter().any(is_blank) {
        return None;
    }
    Some(sep)
}

/// Decides a key's kind by case-insensitive prefix, so `Disallowed:` is a
/// disallow, exactly as Google does.
#[inline(always)]
pub fn classify_key(key: &[u8]) -> KeyKind {
    let starts = |p: &str| starts_ignore_case(key, p.as_bytes());
    // Every spelling of a kind starts with the same letter, so the first
    // byte picks the only candidates worth comparing.
    match key.first().map(u8::to_ascii_lowercase) {
        Some(b'u') if starts("user-agent") || USER_AGENT_TYPOS.iter().any(|t| starts(t)) => KeyKind::UserAgent,
        Some(b'a') if starts("allow") => KeyKind::Allow,
        Some(b'd') if starts("disallow") || DISALLOW_TYPOS.iter().any(|t| starts(t)) => KeyKind::Disallow,
        Some(b's') if starts("sitemap") || SITEMAP_TYPOS.iter().any(|t| starts(t)) => KeyKind::Sitemap,
        _ => KeyKind::Unknown,
    }
}

/// Whether `key` starts with `lower` (lower-case letters and other bytes
/// that have no case), ignoring ASCII case, eight bytes at a time: setting
/// bit 0x20 lower-cases a letter and maps no other byte onto a lower-case
/// letter, so it is set only where `lower` has a letter.
#[inline]
fn starts_ignore_case(key: &[u8], lower: &[u8]) -> bool {
    if key.len() < lower.len() {
        return false;
    }
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    key[..lower.len()].chunks(8).zip(lower.chunks(8)).all(|(k, l)| {
        let case = l.iter().enumerate().fold(0u64, |m, (i, b)| m | (u64::from(b.is_ascii_lowercase()) << (8 * i + 5)));
        word(k) | case == word(l)
    })
}

/// Google-specific: frequent misspellings Google accepts for `user-agent`.
pub const USER_AGENT_TYPOS: &[&str] = &["useragent", "user agent"];
/// Google-specific: frequent misspellings Google accepts for `disallow`.
pub const DISALLOW_TYPOS: &[&str] = &["dissallow", "dissalow", "disalow", "diasllow", "disallaw"];
/// Google-specific: the spelling Google accepts besides `sitemap`.
pub const SITEMAP_TYPOS: &[&str] = &["site-map"];

/// Whitespace as Google's parser trims it (C `isspace` in the ASCII range,
/// which, unlike Rust's `is_ascii_whitespace`, includes vertical tab).
#[inline]
pub fn is_space(b: u8) -> bool {
    // One shift and test instead of six comparisons: this runs on both ends
    // of every key and value.
    const SPACES: u64 = 1 << b' ' | 1 << b'\t' | 1 << b'\n' | 1 << 0x0B | 1 << 0x0C | 1 << b'\r';
    b <= b' ' && (SPACES >> b) & 1 != 0
}

/// The range of `s[start..end]` left when Google whitespace is trimmed
/// from both ends.
#[inline]
fn trimmed(s: &[u8], mut start: usize, mut end: usize) -> std::ops::Range<usize> {
    while start < end && is_space(s[start]) {
        start += 1;
    }
    while end > start && is_space(s[end - 1]) {
        end -= 1;
    }
    start..end
}

/// Trims Google whitespace from both ends.
#[inline]
pub fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_space(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_space(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Normalises a rule's pattern as Google does before matching: octets with
/// the high bit set are percent-encoded, and the hex digits of existing
/// `%XX` escapes are upper-cased. Nothing is ever decoded.
///
/// Scans first and borrows when the pattern is already clean, which is
/// nearly always.
///
/// ```
/// use rules::parse::normalize_pattern;
/// assert_eq!(&*normalize_pattern(b"/a%2fb"), b"/a%2Fb");
/// assert_eq!(&*normalize_pattern("/ツ".as_bytes()), b"/%E3%83%84");
/// assert!(matches!(normalize_pattern(b"/plain"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn normalize_pattern(value: &[u8]) -> Cow<'_, [u8]> {
    let is_escape = |i: usize| {
        value[i] == b'%'
            && value.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && value.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    };
    // Fast path: plain ASCII without escapes, nearly every pattern.
    if is_plain(value) {
        return Cow::Borrowed(value);
    }
    let mut clean = true;
    let mut i = 0;
    while i < value.len() {
        if is_escape(i) {
            if value[i + 1].is_ascii_lowercase() || value[i + 2].is_ascii_lowercase() {
                clean = false;
                break;
            }
            i += 3;
        } else if value[i] >= 0x80 {
            clean = false;
            break;
        } else {
            i += 1;
        }
    }
    if clean {
        return Cow::Borrowed(value);
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(value.len() + 8);
    let mut i = 0;
    while i < value.len() {
        if is_escape(i) {
            out.extend_from_slice(&[b'%', value[i + 1].to_ascii_uppercase(), value[i + 2].to_ascii_uppercase()]);
            i += 3;
        } else if value[i] >= 0x80 {
            out.extend_from_slice(&[b'%', HEX[usize::from(value[i] >> 4)], HEX[usize::from(value[i] & 0xF)]]);
            i += 1;
        } else {
            out.push(value[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// No byte of `value` is `%` or non-ASCII: eight bytes at a time, since
/// patterns are too short for a vector search to pay for its set-up.
#[inline]
fn is_plain(value: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bad = |w: u64| {
        let x = w ^ (LOW * u64::from(b'%'));
        // A zero byte of `x` is a `%` in `w` (the classic has-zero-byte test);
        // a high bit in `w` is a non-ASCII byte.
        (x.wrapping_sub(LOW) & !x & HIGH) | (w & HIGH) != 0
    };
    let mut chunks = value.chunks_exact(8);
    for c in &mut chunks {
        if bad(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b != b'%' && b < 0x80)
}

/// Google-specific: the product token Google keeps from a `user-agent`
/// value: its leading run of letters, `-` and `_`. `MJ12bot` becomes `MJ`,
/// `Googlebot/2.1` becomes `Googlebot`.
pub fn product_token(value: &[u8]) -> &[u8] {
    let n = value.iter().take_while(|b| is_token_byte(**b)).count();
    &value[..n]
}

/// Bytes allowed in a product token.
pub fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'-' || b == b'_'
}

/// Google-specific: a `user-agent` value of `*`, or `*` followed by
/// whitespace and anything, names the global group.
pub fn is_global_agent(value: &[u8]) -> bool {
    match value {
        [b'*'] => true,
        [b'*', next, ..] => is_space(*next),
        _ => false,
    }
}

/// The agent a `user-agent` value names, as groups are keyed: `None` for
/// the global `*`, else the product token, lower-cased (matching is
/// case-insensitive).
///
/// ```
/// use rules::parse::agent_key;
/// assert_eq!(agent_key(b"* ignored"), None);
/// assert_eq!(agent_key(b"Googlebot/2.1"), Some(b"googlebot".to_vec()));
/// ```
pub fn agent_key(value: &[u8]) -> Option<Vec<u8>> {
    (!is_global_agent(value)).then(|| product_token(value).to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<(u32, KeyKind, Vec<u8>, Vec<u8>)>, Vec<(u32, LineMeta)>);
    impl Handler for Collect {
        fn line(&mut self, line: u32, _raw: &[u8], meta: &LineMeta) {
            self.1.push((line, *meta));
        }
        fn directive(&mut self, d: &Directive<'_>) {
            self.0.push((d.line, d.kind, d.key.to_vec(), d.value.to_vec()));
        }
    }
    fn events(body: &[u8]) -> Collect {
        let mut c = Collect::default();
        parse(body, &mut c);
        c
    }

    #[test]
    fn rfc_2_2_line_endings_lf_crlf_cr() {
        let c = events(b"a: 1\nb: 2\r\nc: 3\rd: 4");
        let lines: Vec<u32> = c.0.iter().map(|e| e.0).collect();
        assert_eq!(lines, vec![1, 2, 3, 4]);
        let c = events(b"a: 1\r\r\nb: 2\n\rc: 3");
        let lines: Vec<u32> = c.0.iter().map(|e| e.0).collect();
        assert_eq!(lines, vec![1, 3, 5]);
    }

    #[test]
    fn google_only_bom_prefixes_skipped() {
        for prefix in [&b"\xEF\xBB\xBF"[..], b"\xEF\xBB", b"\xEF"] {
            let mut body = prefix.to_vec();
            body.extend_from_slice(b"User-agent: *");
            assert_eq!(events(&body).0[0].2, b"User-agent");
        }
        // A BOM later in the file is not skipped.
        let c = events(b"\nx\xEF\xBB\xBFUser-agent: *");
        assert_eq!(c.0[0].2, b"x\xEF\xBB\xBFUser-agent");
        // A broken BOM keeps the byte that broke it.
        assert_eq!(events(b"\xEF\x11Disallow: /").0[0].2, b"\x11Disallow");
    }

    #[test]
    fn google_only_missing_colon_two_words() {
        let c = events(b"Disallow /x\nDisallow /x /y\nUser-agent \t Foo");
        assert_eq!(c.0.len(), 2);
        assert_eq!((c.0[0].1, c.0[0].3.as_slice()), (KeyKind::Disallow, &b"/x"[..]));
        assert_eq!(c.0[1].3, b"Foo");
        assert!(c.1[0].1.missing_colon);
    }

    #[test]
    fn first_colon_splits() {
        let c = events(b"Disallow /x:y");
        assert_eq!(c.0[0].2, b"Disallow /x");
        assert_eq!(c.0[0].1, KeyKind::Disallow);
        assert_eq!(c.0[0].3, b"y");
    }

    #[test]
    fn comments_and_nul_end_content() {
        let c = events(b"Disallow: /a#b\nDisallow: /c\0/d\n# only\n   \n:novalue");
        assert_eq!(c.0[0].3, b"/a");
        assert_eq!(c.0[1].3, b"/c");
        assert!(c.1[2].1.is_comment && c.1[3].1.is_empty);
        assert_eq!(c.0.len(), 2, "an empty key is no directive");
    }

    #[test]
    fn google_only_key_prefixes_and_typos() {
        for (k, kind) in [
            ("Disallowed", KeyKind::Disallow),
            ("dissallow", KeyKind::Disallow),
            ("DISALOW", KeyKind::Disallow),
            ("diasllow", KeyKind::Disallow),
            ("disallaw", KeyKind::Disallow),
            ("dissalow", KeyKind::Disallow),
            ("useragent", KeyKind::UserAgent),
            ("User Agent", KeyKind::UserAgent),
            ("user-agents", KeyKind::UserAgent),
            ("Allowance", KeyKind::Allow),
            ("alow", KeyKind::Unknown),
            ("site-map", KeyKind::Sitemap),
            ("crawl-delay", KeyKind::Unknown),
            ("USER-AGENT", KeyKind::UserAgent),
            ("User\x0dAgent", KeyKind::Unknown),
            ("user_agent", KeyKind::Unknown),
            ("Disallo", KeyKind::Unknown),
            ("DisAllow:x", KeyKind::Disallow),
            ("Sitemap", KeyKind::Sitemap),
            ("SITE-MAPS", KeyKind::Sitemap),
            ("siteXmap", KeyKind::Unknown),
            ("Allow\x40", KeyKind::Allow),
            ("Al\x4Cow", KeyKind::Allow),
            ("Al\x0Cow", KeyKind::Unknown),
        ] {
            assert_eq!(classify_key(k.as_bytes()), kind, "{k}");
        }
    }

    #[test]
    fn google_only_long_lines_are_cut() {
        let mut body = b"Disallow: /".to_vec();
        body.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES * 2));
        body.extend_from_slice(b"\nAllow: /b");
        let c = events(&body);
        assert_eq!(c.0[0].3.len(), MAX_LINE_BYTES - b"Disallow: ".len());
        assert!(c.1[0].1.too_long);
        assert_eq!(c.0[1].0, 2);
    }

    #[test]
    fn content_past_500_kib_is_ignored() {
        let mut body = vec![b'\n'; MAX_FILE_BYTES - b"Disallow: /".len()];
        body.extend_from_slice(b"Disallow: /x");
        let c = events(&body);
        assert_eq!(c.0[0].3, b"/");
    }

    #[test]
    fn normalisation() {
        assert_eq!(&*normalize_pattern(b"/%aa%Zz%"), b"/%AA%Zz%");
        assert_eq!(&*normalize_pattern(b"/\xff"), b"/%FF");
        assert_eq!(&*normalize_pattern(b"/%E3%83%84"), b"/%E3%83%84");
    }

    #[test]
    fn plain_patterns_are_found_word_by_word() {
        let naive = |v: &[u8]| v.iter().all(|&b| b != b'%' && b < 0x80);
        let mut cases: Vec<Vec<u8>> = vec![b"".to_vec(), b"/".to_vec(), b"/abcdefgh/ijklmnop".to_vec()];
        for len in [1, 7, 8, 9, 16, 17] {
            for at in 0..len {
                for bad in [b'%', 0x80, 0xFF, b'$', 0x24, 0x25 + 0x80, 0x7F] {
                    let mut v = vec![b'a'; len];
                    v[at] = bad;
                    cases.push(v);
                }
            }
        }
        for v in cases {
            assert_eq!(is_plain(&v), naive(&v), "{v:?}");
        }
    }

    #[test]
    fn spaces_are_c_isspace() {
        for b in 0..=255u8 {
            assert_eq!(is_space(b), b.is_ascii_whitespace() || b == 0x0B, "{b:#x}");
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(product_token(b"MJ12bot"), b"MJ");
        assert_eq!(product_token(b"Googlebot/2.1"), b"Googlebot");
        assert_eq!(product_token(b"Foo-Bar_baz x"), b"Foo-Bar_baz");
        assert!(is_global_agent(b"*") && is_global_agent(b"* foo"));
        assert!(!is_global_agent(b"*foo"));
    }

    /// Every event with the raw line, for comparing two readers.
    #[derive(Default, Debug, PartialEq)]
    struct Trace(Vec<(u32, Vec<u8>, LineMeta, Option<Owned>)>);
    type Owned = (KeyKind, Vec<u8>, Vec<u8>, Option<Marks>);
    impl Handler for Trace {
        fn line(&mut self, line: u32, raw: &[u8], meta: &LineMeta) {
            self.0.push((line, raw.to_vec(), *meta, None));
        }
        fn directive(&mut self, d: &Directive<'_>) {
            self.0.last_mut().expect("line before directive").3 =
                Some((d.kind, d.key.to_vec(), d.value.to_vec(), d.marks));
        }
    }

    /// The line reader written the plain way, a search at a time, as the
    /// specification reads; the fast one must produce the same events.
    fn plain_reader(body: &[u8]) -> Trace {
        let mut trace = Trace::default();
        let body = &body[..body.len().min(MAX_FILE_BYTES)];
        let mut rest = &body[bom_len(body)..];
        let mut line_no = 0;
        loop {
            let end = rest.iter().position(|b| *b == b'\n' || *b == b'\r').unwrap_or(rest.len());
            let mut raw = &rest[..end];
            line_no += 1;
            let mut meta = LineMeta { too_long: raw.len() > MAX_LINE_BYTES, ..LineMeta::default() };
            raw = &raw[..raw.len().min(MAX_LINE_BYTES)];
            let stop = raw.iter().position(|b| *b == b'#' || *b == 0).unwrap_or(raw.len());
            meta.has_comment = raw.get(stop) == Some(&b'#');
            meta.has_nul = raw.contains(&0);
            let text = trim(&raw[..stop]);
            let split = match text.iter().position(|b| *b == b':') {
                Some(c) => {
                    Some((trim(&text[..c]), trim(&text[c + 1..]))).filter(|(k, _)| !k.is_empty()).map(|(k, v)| {
                        let marks = Marks {
                            star: v.iter().position(|b| *b == b'*'),
                            plain: !v.iter().any(|b| *b == b'%' || *b >= 0x80),
                        };
                        (k, v, Some(marks))
                    })
                }
                None if text.is_empty() => None,
                None => {
                    let words: Vec<&[u8]> =
                        text.split(|b| *b == b' ' || *b == b'\t').filter(|w| !w.is_empty()).collect();
                    meta.missing_colon = words.len() == 2;
                    (words.len() == 2).then(|| (trim(words[0]), trim(words[1]), None))
                }
            };
            meta.is_comment = text.is_empty() && meta.has_comment;
            meta.is_empty = text.is_empty() && !meta.has_comment;
            meta.has_directive = split.is_some();
            trace.0.push((
                line_no,
                raw.to_vec(),
                meta,
                split.map(|(k, v, m)| (classify_key(k), k.to_vec(), v.to_vec(), m)),
            ));
            if end == rest.len() {
                return trace;
            }
            let skip = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
            rest = &rest[end + skip..];
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn line_reader_matches_the_plain_reading(
            pieces in proptest::collection::vec(prop_oneof![
                8 => proptest::sample::select(b"\n\r#\0: \t\x0bDa/*$%\xef\xbb\xbf\xd0".to_vec()).prop_map(|b| vec![b]),
                1 => proptest::sample::select(vec!["Disallow", "user-agent", "allow:", "sitemap: http://x", "\r\n"])
                    .prop_map(|s| s.as_bytes().to_vec()),
                1 => (0usize..70).prop_map(|n| vec![b'x'; n]),
            ], 0..200),
            long in proptest::option::of(0usize..200),
        ) {
            let mut body: Vec<u8> = pieces.concat();
            if let Some(at) = long {
                // One line around the line limit, with the tail cut off.
                let at = at.min(body.len());
                body.splice(at..at, std::iter::repeat_n(b'y', MAX_LINE_BYTES - 2 + at % 5));
            }
            let mut fast = Trace::default();
            parse(&body, &mut fast);
            prop_assert_eq!(fast, plain_reader(&body));
        }
    }
}
