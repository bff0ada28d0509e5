//! Finds what in a robots.txt Google reads differently from what its author
//! probably meant, and what other crawlers may read differently from Google.
//!
//! The lint listens to the same parser events as the engine, so a line it
//! calls ignored is exactly a line the engine ignores.

use std::collections::HashMap;
use std::fmt;

use crate::parse::{self, Directive, Handler, KeyKind, LineMeta, MAX_FILE_BYTES, MAX_LINE_BYTES};
use crate::pattern::{Shape, classify};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Google ignores or misreads something, or the file cannot work as meant.
    Error,
    /// Google copes, but the author probably meant something else, or other
    /// crawlers may read it differently.
    Warning,
    /// Worth knowing; harmless to Google.
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The stable identifier of each kind of finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// A key Google accepts only as a typo or by prefix (`Dissallow`, `Disallowed`).
    Typo,
    /// Key and value separated by whitespace instead of a colon.
    MissingColon,
    /// An Allow or Disallow before any `user-agent` line.
    RuleOutsideGroup,
    /// A pattern that starts with neither `/` nor `*`, so it never matches.
    PatternStart,
    /// A key Google does not know.
    UnknownDirective,
    /// `crawl-delay`, which Google ignores.
    CrawlDelay,
    /// `noindex` and friends, which no longer work in robots.txt.
    Noindex,
    /// The file is larger than Google reads.
    TooLarge,
    /// Bytes that are not UTF-8.
    InvalidUtf8,
    /// A UTF-8 byte-order mark.
    Bom,
    /// The body is an HTML page, not a robots.txt.
    Html,
    /// A line longer than Google keeps.
    LineTooLong,
    /// A `user-agent` value Google shortens to its leading product token.
    AgentTruncated,
    /// `user-agent` lines with no rules after them.
    EmptyGroup,
    /// A rule that can never decide, because a rule of the other kind that
    /// is at least as long matches wherever it does.
    ShadowedRule,
    /// The same rule twice in one group.
    DuplicateRule,
    /// A sitemap that is not an absolute http(s) URL.
    SitemapNotAbsolute,
    /// A rule path with characters outside ASCII, written unencoded: Google
    /// matches it as if percent-encoded, and its robots.txt guidance (23
    /// October 2026) recommends writing the encoded form, which every
    /// crawler reads alike.
    UnencodedPath,
    /// Google recognises `content-signal` and `content-usage` and ignores
    /// them (said once a file, at the first such line): this code when that
    /// line is a `Content-Signal`.
    ContentSignal,
    /// The same, when the first line is a `Content-Usage`; and each
    /// `License` line, which Google does not recognise.
    Preference,
    /// A preference line that cannot be read as meant: a dictionary that
    /// does not parse, a label of an earlier draft or none at all, a value
    /// other than y/n (yes/no, or `use`'s three).
    PreferenceSyntax,
    /// A `Content-Signal` or `Content-Usage` line before any `user-agent`
    /// line: no group, so no crawler reads it.
    PreferenceOutsideGroup,
    /// A preference the file's own groups contradict: `ai-train=yes` while
    /// every AI-training crawler is disallowed, or `ai-train=no` while the
    /// main ones may crawl everything. Found by `robotsgate-crawlers`.
    PreferenceConflict,
    /// A group named for a token no catalogued crawler sends, that looks
    /// like a typo of one (`Googelbot`). Found by `robotsgate-crawlers`,
    /// which holds the catalogue; this crate only names the code.
    UnknownCrawler,
    /// A group named for a usage token (`Google-Extended`): a preference
    /// no request carries, so a gateway cannot enforce it. Found by
    /// `robotsgate-crawlers`.
    UsageToken,
}

impl Code {
    /// The stable kebab-case name, used in JSON and SARIF output.
    pub fn as_str(&self) -> &'static str {
        match self {
            Code::Typo => "typo",
            Code::MissingColon => "missing-colon",
            Code::RuleOutsideGroup => "rule-outside-group",
            Code::PatternStart => "pattern-start",
            Code::UnknownDirective => "unknown-directive",
            Code::CrawlDelay => "crawl-delay",
            Code::Noindex => "noindex",
            Code::TooLarge => "too-large",
            Code::InvalidUtf8 => "invalid-utf8",
            Code::Bom => "bom",
            Code::Html => "html",
            Code::LineTooLong => "line-too-long",
            Code::AgentTruncated => "agent-truncated",
            Code::EmptyGroup => "empty-group",
            Code::ShadowedRule => "shadowed-rule",
            Code::DuplicateRule => "duplicate-rule",
            Code::SitemapNotAbsolute => "sitemap-not-absolute",
            Code::UnencodedPath => "unencoded-path",
            Code::ContentSignal => "content-signal",
            Code::Preference => "preference",
            Code::PreferenceSyntax => "preference-syntax",
            Code::PreferenceOutsideGroup => "preference-outside-group",
            Code::PreferenceConflict => "preference-conflict",
            Code::UnknownCrawler => "unknown-crawler",
            Code::UsageToken => "usage-token",
        }
    }

    /// Every code, for documentation and SARIF rule lists.
    pub const ALL: [Code; 25] = [
        Code::Typo,
        Code::MissingColon,
        Code::RuleOutsideGroup,
        Code::PatternStart,
        Code::UnknownDirective,
        Code::CrawlDelay,
        Code::Noindex,
        Code::TooLarge,
        Code::InvalidUtf8,
        Code::Bom,
        Code::Html,
        Code::LineTooLong,
        Code::AgentTruncated,
        Code::EmptyGroup,
        Code::ShadowedRule,
        Code::DuplicateRule,
        Code::SitemapNotAbsolute,
        Code::UnencodedPath,
        Code::ContentSignal,
        Code::Preference,
        Code::PreferenceSyntax,
        Code::PreferenceOutsideGroup,
        Code::PreferenceConflict,
        Code::UnknownCrawler,
        Code::UsageToken,
    ];
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line, counted as Google counts lines.
    pub line: u32,
    /// 1-based byte column.
    pub column: u32,
    /// How much it matters.
    pub severity: Severity,
    /// What kind of finding it is.
    pub code: Code,
    /// What is wrong, in words a site owner understands.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}[{}]: {}", self.line, self.column, self.severity.as_str(), self.code.as_str(), self.message)
    }
}

/// Lints a robots.txt body. Never panics; findings are sorted by line.
///
/// ```
/// use rules::lint::{lint, Code};
/// let found = lint(b"User-agent: MJ12bot\nDissallow: /private\n");
/// let codes: Vec<Code> = found.iter().map(|d| d.code).collect();
/// assert_eq!(codes, vec![Code::AgentTruncated, Code::Typo]);
/// ```
pub fn lint(body: &[u8]) -> Vec<Diagnostic> {
    struct Nobody;
    impl Handler for Nobody {}
    lint_alongside(body, &mut Nobody)
}

/// [`lint`], while `other` reads the same parse: one pass over the bytes
/// for both (see [`crate::Robots::parse_linted`]).
pub(crate) fn lint_alongside<H: Handler + ?Sized>(body: &[u8], other: &mut H) -> Vec<Diagnostic> {
    let mut l = Linter::default();
    whole_file_checks(body, &mut l.out);
    parse::parse(body, &mut parse::Both(other, &mut l));
    let has_rules = l.groups.iter().any(|g| g.has_any_rule);
    l.finish(body);
    // An HTML line in a file with rules is a stray line, not an HTML page:
    // Google ignores it and reads the rules around it.
    if has_rules {
        for d in l.out.iter_mut().filter(|d| d.code == Code::Html) {
            d.severity = Severity::Warning;
            d.message = "this line looks like HTML; Google ignores it, and the rules around it still count".into();
            d.hint = "remove it (a template or an error page may have written it into the file)".into();
        }
    }
    l.out.sort_by_key(|d| (d.line, d.column));
    l.out
}

const MAX_UTF8_REPORTS: usize = 20;

#[derive(Debug, Default)]
struct LintRule {
    line: u32,
    column: u32,
    allow: bool,
    pattern: Vec<u8>,
}

#[derive(Debug, Default)]
struct LintGroup {
    first_line: u32,
    rules: Vec<LintRule>,
    has_any_rule: bool,
    /// It names a crawler, not only `*`.
    named: bool,
    /// It holds `Content-Signal` or `Content-Usage` lines.
    preferences: bool,
}

#[derive(Debug, Default)]
struct Linter {
    out: Vec<Diagnostic>,
    raw_start: usize,
    last_line: u32,
    last_line_len: usize,
    utf8_reports: usize,
    groups: Vec<LintGroup>,
    in_rules: bool,
    /// Google's ignoring of `content-signal` and `content-usage` was said
    /// (once a file).
    google_ignores_said: bool,
}

impl Linter {
    fn push(&mut self, line: u32, column: usize, severity: Severity, code: Code, message: String, hint: &str) {
        self.out.push(Diagnostic {
            line,
            column: u32::try_from(column).unwrap_or(u32::MAX),
            severity,
            code,
            message,
            hint: hint.to_string(),
        });
    }

    /// 1-based column of `part`, a slice of the current raw line.
    fn column(&self, part: &[u8]) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.raw_start) + 1
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Handler for Linter {
    fn line(&mut self, line: u32, raw: &[u8], meta: &LineMeta) {
        self.raw_start = raw.as_ptr() as usize;
        self.last_line = line;
        self.last_line_len = raw.len();
        if meta.too_long {
            self.push(
                line,
                MAX_LINE_BYTES + 1,
                Severity::Warning,
                Code::LineTooLong,
                format!("line is longer than the {MAX_LINE_BYTES} bytes Google reads; the rest is cut off"),
                "shorten the line; Google applies the rule as cut",
            );
        }
        if let Err(e) = std::str::from_utf8(raw) {
            self.utf8_reports += 1;
            if self.utf8_reports <= MAX_UTF8_REPORTS {
                self.push(
                    line,
                    e.valid_up_to() + 1,
                    Severity::Warning,
                    Code::InvalidUtf8,
                    "bytes that are not UTF-8; Google percent-encodes them in patterns, other crawlers may not".into(),
                    "save the file as UTF-8, or percent-encode non-ASCII characters (%E2%82%AC)",
                );
            }
        }
        if meta.missing_colon {
            self.push(
                line,
                1,
                Severity::Warning,
                Code::MissingColon,
                "no colon between key and value; Google accepts it, other crawlers may not".into(),
                "write `key: value`",
            );
        }
    }

    fn directive(&mut self, d: &Directive<'_>) {
        self.check_key(d);
        match d.kind {
            KeyKind::UserAgent => self.user_agent(d),
            KeyKind::Allow | KeyKind::Disallow => self.rule(d),
            KeyKind::Sitemap => self.sitemap(d),
            KeyKind::Unknown => self.unknown(d),
        }
    }
}

impl Linter {
    fn check_key(&mut self, d: &Directive<'_>) {
        let canonical = match d.kind {
            KeyKind::UserAgent => "user-agent",
            KeyKind::Allow => "allow",
            KeyKind::Disallow => "disallow",
            KeyKind::Sitemap => "sitemap",
            KeyKind::Unknown => return,
        };
        if !d.key.eq_ignore_ascii_case(canonical.as_bytes()) {
            self.push(
                d.line,
                self.column(d.key),
                Severity::Warning,
                Code::Typo,
                format!("Google reads `{}` as `{canonical}`, but other crawlers may ignore this line", text(d.key)),
                &format!("spell it `{canonical}`"),
            );
        }
    }

    fn user_agent(&mut self, d: &Directive<'_>) {
        if self.in_rules || self.groups.is_empty() {
            self.groups.push(LintGroup { first_line: d.line, ..LintGroup::default() });
            self.in_rules = false;
        }
        let global = parse::is_global_agent(d.value);
        if let Some(g) = self.groups.last_mut() {
            g.named |= !global;
        }
        if global {
            if d.value.len() > 1 {
                self.push(
                    d.line,
                    self.column(d.value),
                    Severity::Warning,
                    Code::AgentTruncated,
                    format!("Google reads `{}` as `*`; other crawlers may not", text(d.value)),
                    "write `User-agent: *` alone",
                );
            }
            return;
        }
        let token = parse::product_token(d.value);
        if token.len() == d.value.len() {
            return;
        }
        let rest = &d.value[token.len()..];
        let (severity, message, hint) = if token.is_empty() {
            (
                Severity::Error,
                format!("Google reads `{}` as an empty name, so this line names no crawler", text(d.value)),
                "use the crawler's product token: letters, `-` and `_` only (for example `Googlebot`)".to_string(),
            )
        } else if rest.starts_with(b"/") {
            (
                Severity::Info,
                format!("Google ignores the version in `{}` and matches `{}`", text(d.value), text(token)),
                format!("write `User-agent: {}`", text(token)),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "Google reads `{}` as `{}`: a crawler called `{}` will not obey this group",
                    text(d.value),
                    text(token),
                    text(d.value)
                ),
                "product tokens may contain only letters, `-` and `_`; check the crawler's documented token"
                    .to_string(),
            )
        };
        self.push(d.line, self.column(d.value), severity, Code::AgentTruncated, message, &hint);
    }

    fn rule(&mut self, d: &Directive<'_>) {
        let column = self.column(d.value);
        let Some(group) = self.groups.last_mut() else {
            self.push(
                d.line,
                1,
                Severity::Warning,
                Code::RuleOutsideGroup,
                format!("`{}` comes before any `user-agent` line, so no crawler obeys it", text(d.key)),
                "put a `User-agent:` line (for example `User-agent: *`) above it",
            );
            return;
        };
        self.in_rules = true;
        group.has_any_rule = true;
        if d.value.is_empty() {
            return;
        }
        let pattern = parse::normalize_pattern(d.value).into_owned();
        // UTF-8 beyond ASCII, as written: suggest the encoded line (bytes
        // that are not UTF-8 have their own finding, `invalid-utf8`).
        if !d.value.is_ascii()
            && std::str::from_utf8(d.value).is_ok()
            && let Some(at) = d.value.iter().position(|b| !b.is_ascii())
        {
            let encoded = format!("{}: {}", text(d.key), String::from_utf8_lossy(&pattern));
            self.push(
                d.line,
                column + at,
                Severity::Info,
                Code::UnencodedPath,
                format!(
                    "`{}` has characters outside ASCII: Google matches it as percent-encoded, and its guidance of 23 October 2026 recommends writing it so, which every crawler reads alike",
                    text(d.value)
                ),
                &format!("write `{encoded}`"),
            );
        }
        if let Some(group) = self.groups.last_mut() {
            group.rules.push(LintRule {
                line: d.line,
                column: column as u32,
                allow: d.kind == KeyKind::Allow,
                pattern,
            });
        }
        if !matches!(d.value[0], b'/' | b'*') {
            let fixed = format!("/{}", text(d.value));
            self.push(
                d.line,
                column,
                Severity::Error,
                Code::PatternStart,
                format!("pattern `{}` does not start with `/` or `*`, so it never matches", text(d.value)),
                &format!("write `{fixed}`"),
            );
        }
    }

    fn sitemap(&mut self, d: &Directive<'_>) {
        let ok = std::str::from_utf8(d.value)
            .ok()
            .and_then(|v| url::Url::parse(v).ok())
            .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
        if !ok {
            self.push(
                d.line,
                self.column(d.value),
                Severity::Error,
                Code::SitemapNotAbsolute,
                format!("sitemap `{}` is not an absolute http(s) URL, so crawlers cannot fetch it", text(d.value)),
                "write the full URL, for example `Sitemap: https://www.example.com/sitemap.xml`",
            );
        }
    }

    /// Checks a `Content-Signal` or `Content-Usage` line's shape and place.
    fn preference(&mut self, d: &Directive<'_>) {
        use crate::prefs::{AIPREF_VOCAB, Preferences, RETIRED_USAGE_KEYS, SIGNAL_KEYS, USAGE_KEYS, USE_VALUES};
        let key = d.key.to_ascii_lowercase();
        if key == b"license" {
            return;
        }
        if let Some(g) = self.groups.last_mut() {
            g.preferences = true;
        }
        let line = [d.key, b": ".as_slice(), d.value].concat();
        let prefs = Preferences::read(&line);
        let col = self.column(d.value);
        if self.groups.is_empty() {
            self.push(
                d.line,
                1,
                Severity::Warning,
                Code::PreferenceOutsideGroup,
                format!("`{}` comes before any `user-agent` line, so no crawler's group holds it", text(d.key)),
                "put it in a group, for example under `User-agent: *`",
            );
        }
        if let Some(s) = prefs.signals.first() {
            if let Some(junk) = &s.junk {
                self.push(
                    d.line,
                    col,
                    Severity::Warning,
                    Code::PreferenceSyntax,
                    format!("`{junk}` is no `key=value` member"),
                    "write members as `key=yes` or `key=no`, separated by commas",
                );
            }
            if s.entries.is_empty() {
                self.push(
                    d.line,
                    col,
                    Severity::Warning,
                    Code::PreferenceSyntax,
                    "`Content-Signal` states no preference".into(),
                    "write at least one `key=value`",
                );
            }
            for e in &s.entries {
                // Each member's finding points at its key, not the value's start.
                let col = col + label_offset(d.value, &e.key, 0);
                if !SIGNAL_KEYS.contains(&e.key.as_str()) {
                    self.push(
                        d.line,
                        col,
                        Severity::Warning,
                        Code::PreferenceSyntax,
                        format!("`{}` is not a key `Content-Signal` defines; readers ignore it", e.key),
                        &format!("known keys: {}", SIGNAL_KEYS.join(", ")),
                    );
                } else if e.key == "use" {
                    if !USE_VALUES.contains(&e.value.as_str()) {
                        self.push(
                            d.line,
                            col,
                            Severity::Warning,
                            Code::PreferenceSyntax,
                            format!(
                                "`use={}`: Cloudflare's Content Signals Policy defines `use` as immediate, reference or full (a key it marks as testing), so readers ignore this value",
                                e.value
                            ),
                            "write `use=immediate`, `use=reference` or `use=full`",
                        );
                    }
                } else if e.allow.is_none() {
                    self.push(
                        d.line,
                        col,
                        Severity::Warning,
                        Code::PreferenceSyntax,
                        format!("`{}={}`: the value is neither yes nor no, so readers ignore it", e.key, e.value),
                        "write `yes` or `no`",
                    );
                }
            }
            return;
        }
        let Some(u) = prefs.usages.first() else { return };
        if u.path.is_none() && d.value.first() == Some(&b'*') {
            self.push(
                d.line,
                col,
                Severity::Warning,
                Code::PreferenceSyntax,
                "this value starts with `*`, not `/`, so it has no path: readers take the whole value, the pattern included, as the preference, which then covers every path".into(),
                "start the path with `/`, for example `Content-Usage: /*.pdf train-ai=n`",
            );
        }
        if let Some(junk) = &u.junk {
            self.push(
                d.line,
                col,
                Severity::Warning,
                Code::PreferenceSyntax,
                format!("{junk}, so readers take it to state no preference ({AIPREF_VOCAB})"),
                "write lower-case labels with `y` or `n`, for example `Content-Usage: / train-ai=n, search=y`",
            );
        } else if u.entries.is_empty() {
            self.push(
                d.line,
                col,
                Severity::Warning,
                Code::PreferenceSyntax,
                "`Content-Usage` states no preference".into(),
                "write at least one label, for example `train-ai=n`",
            );
        }
        // Labels come after the path, if there is one.
        let skip = u.path.as_ref().map_or(0, String::len);
        for e in &u.entries {
            let col = col + label_offset(d.value, &e.key, skip);
            if let Some((_, now)) = RETIRED_USAGE_KEYS.iter().find(|(k, _)| *k == e.key) {
                self.push(
                    d.line,
                    col,
                    Severity::Warning,
                    Code::PreferenceSyntax,
                    format!(
                        "`{}` is a label of an earlier AIPREF draft that {AIPREF_VOCAB} does not define: {now}; readers of the current draft ignore it",
                        e.key
                    ),
                    &format!("the labels of {AIPREF_VOCAB} are {}", USAGE_KEYS.join(" and ")),
                );
            } else if !USAGE_KEYS.contains(&e.key.as_str()) {
                self.push(
                    d.line,
                    col,
                    Severity::Info,
                    Code::PreferenceSyntax,
                    format!(
                        "`{}` is no label of {AIPREF_VOCAB}: readers ignore labels they do not know (an extension may define it)",
                        e.key
                    ),
                    &format!("the labels of {AIPREF_VOCAB} are {}", USAGE_KEYS.join(" and ")),
                );
            } else if e.allow.is_none() {
                self.push(
                    d.line,
                    col,
                    Severity::Warning,
                    Code::PreferenceSyntax,
                    format!(
                        "`{}={}`: only the tokens `y` and `n` state a preference, so readers take this one as unknown",
                        e.key, e.value
                    ),
                    "write `y` or `n`",
                );
            }
        }
    }

    /// Google's robots.txt reporting library lists `content-signal` and
    /// `content-usage` among the tags it recognises and does not support,
    /// as it does `crawl-delay`: said once a file, at the first such line.
    fn google_ignores(&mut self, d: &Directive<'_>) {
        if std::mem::replace(&mut self.google_ignores_said, true) {
            return;
        }
        let col = self.column(d.key);
        let code = if d.key.eq_ignore_ascii_case(b"content-signal") { Code::ContentSignal } else { Code::Preference };
        self.push(
            d.line,
            col,
            Severity::Info,
            code,
            "Google recognises `content-signal` and `content-usage` lines and does not support them, as with `crawl-delay` (its robots.txt reporting lists them that way): Google ignores these lines, and they cost nothing".into(),
            "keep them for the crawlers that read them",
        );
    }

    fn unknown(&mut self, d: &Directive<'_>) {
        let key = d.key.to_ascii_lowercase();
        let col = self.column(d.key);
        let (severity, code, message, hint): (Severity, Code, String, String) = match key.as_slice() {
            b"crawl-delay" if crate::delay::seconds(d.value).is_none() => (
                Severity::Warning,
                Code::CrawlDelay,
                format!(
                    "`{}` is not a number of seconds, so Bing and Yandex, which read `crawl-delay`, ignore it (Google ignores the key anyway)",
                    text(d.value)
                ),
                "write the seconds as digits, such as `Crawl-delay: 10`".into(),
            ),
            b"crawl-delay" => (
                Severity::Info,
                Code::CrawlDelay,
                "Google ignores `crawl-delay`; Bing and Yandex read it".into(),
                "to slow Googlebot, answer 429 or 503 to its requests for a while".into(),
            ),
            b"noindex" | b"nofollow" | b"noarchive" => (
                Severity::Warning,
                Code::Noindex,
                format!("`{}` in robots.txt has not worked since Google dropped it in 2019", text(d.key)),
                "use a `noindex` robots meta tag or an `X-Robots-Tag` header, and let the page be crawled".into(),
            ),
            b"content-signal" | b"content-usage" => {
                self.preference(d);
                self.google_ignores(d);
                return;
            }
            b"license" => (
                Severity::Info,
                Code::Preference,
                "`License` points AI crawlers at licence terms (RSL); Google's verdicts ignore it, and Search Console's robots.txt report shows it as unknown".into(),
                "expect that there; it changes no crawling".into(),
            ),
            b"host" | b"clean-param" | b"request-rate" | b"visit-time" => (
                Severity::Info,
                Code::UnknownDirective,
                format!("`{}` is a Yandex extension; Google ignores it", text(d.key)),
                String::new(),
            ),
            _ => {
                let near = ["allow", "disallow", "user-agent", "sitemap"]
                    .into_iter()
                    .find(|k| edit_distance(&key, k.as_bytes()) <= 2);
                let hint = match near {
                    Some("allow") => "did you mean `allow`? Google accepts no misspelling of it".to_string(),
                    Some(k) => format!("did you mean `{k}`?"),
                    None => "remove the line, or check the directive's spelling".to_string(),
                };
                (
                    Severity::Warning,
                    Code::UnknownDirective,
                    format!("Google ignores the unknown directive `{}`", text(d.key)),
                    hint,
                )
            }
        };
        self.push(d.line, col, severity, code, message, &hint);
    }

    fn finish(&mut self, body: &[u8]) {
        if self.utf8_reports > MAX_UTF8_REPORTS {
            let extra = self.utf8_reports - MAX_UTF8_REPORTS;
            self.push(1, 1, Severity::Info, Code::InvalidUtf8, format!("{extra} more lines are not valid UTF-8"), "");
        }
        if body.len() > MAX_FILE_BYTES {
            let (line, col) = (self.last_line, self.last_line_len + 1);
            self.push(
                line,
                col,
                Severity::Error,
                Code::TooLarge,
                format!(
                    "the file is {} bytes; Google reads only the first {MAX_FILE_BYTES} and stops at line {line}, column {col}",
                    body.len()
                ),
                "remove rules until the file is under 500 KiB; group paths with wildcards",
            );
        }
        let groups = std::mem::take(&mut self.groups);
        for g in &groups {
            if !g.has_any_rule && g.named {
                self.push(
                    g.first_line,
                    1,
                    Severity::Warning,
                    Code::EmptyGroup,
                    "this group has no rules: the crawlers it names may fetch everything, and ignore the `*` group"
                        .into(),
                    "add rules under it, or remove it; to allow everything on purpose write `Disallow:`",
                );
            } else if !g.has_any_rule && !g.preferences {
                // A `*` group only: Google merges every `*` group, so one
                // without rules changes nothing; one that holds preference
                // lines is where crawlers without a group read them.
                self.push(
                    g.first_line,
                    1,
                    Severity::Warning,
                    Code::EmptyGroup,
                    "this `User-agent: *` group has no rules, so it restricts no crawler".into(),
                    "add rules under it, or remove it; to allow everything on purpose write `Disallow:`",
                );
            }
            self.dead_rules(&g.rules);
        }
    }

    /// Duplicates, and rules another rule of the other kind always beats.
    fn dead_rules(&mut self, rules: &[LintRule]) {
        let mut seen: HashMap<(&[u8], bool), u32> = HashMap::new();
        let mut found = Vec::new();
        for r in rules {
            if let Some(first) = seen.get(&(r.pattern.as_slice(), r.allow)) {
                found.push((r, Code::DuplicateRule, *first));
            } else {
                seen.insert((r.pattern.as_slice(), r.allow), r.line);
            }
        }
        // A rule S covers R when S matches every path R matches: S is a
        // literal prefix (maybe with trailing `*`s) and R's literal starts
        // with it. R is dead if such an S of the other kind beats it.
        let mut by_literal: Vec<(&[u8], &LintRule)> = rules
            .iter()
            .map(|r| {
                let (lit, _) = classify(&r.pattern);
                (&r.pattern[..lit], r)
            })
            .collect();
        by_literal.sort_by(|a, b| a.0.cmp(b.0));
        for s in rules {
            let (lit, shape) = classify(&s.pattern);
            if shape != Shape::Prefix {
                continue;
            }
            let lit = &s.pattern[..lit];
            let from = by_literal.partition_point(|(l, _)| *l < lit);
            for (rlit, r) in &by_literal[from..] {
                if !rlit.starts_with(lit) {
                    break;
                }
                let beats = s.pattern.len() > r.pattern.len() || (s.pattern.len() == r.pattern.len() && s.allow);
                if r.allow != s.allow && beats {
                    found.push((r, Code::ShadowedRule, s.line));
                }
            }
        }
        let mut reported = std::collections::HashSet::new();
        for (r, code, other) in found {
            if !reported.insert(r.line) {
                continue;
            }
            let kind = if r.allow { "Allow" } else { "Disallow" };
            let (severity, message, hint) = match code {
                Code::DuplicateRule => (
                    Severity::Info,
                    format!("`{kind}: {}` repeats line {other}", text(&r.pattern)),
                    "remove the repeat".to_string(),
                ),
                _ => (
                    Severity::Warning,
                    format!(
                        "`{kind}: {}` never decides anything: line {other} matches wherever it does and wins",
                        text(&r.pattern)
                    ),
                    "remove one of the two, or make this rule longer (more specific) than the other".to_string(),
                ),
            };
            self.push(r.line, r.column as usize, severity, code, message, &hint);
        }
    }
}

/// Findings about the whole body rather than one directive.
fn whole_file_checks(body: &[u8], out: &mut Vec<Diagnostic>) {
    if body.starts_with(&[0xEF, 0xBB, 0xBF]) {
        out.push(Diagnostic {
            line: 1,
            column: 1,
            severity: Severity::Info,
            code: Code::Bom,
            message: "the file starts with a byte-order mark; Google skips it, some crawlers do not".into(),
            hint: "save the file as UTF-8 without BOM".into(),
        });
    }
    let head = &body[..body.len().min(4096)];
    let lower = head.to_ascii_lowercase();
    let markers: [&[u8]; 4] = [b"<!doctype html", b"<html", b"<head", b"<body"];
    if let Some(at) = markers.iter().filter_map(|m| memchr::memmem::find(&lower, m)).min() {
        let line = 1 + head[..at].iter().filter(|b| **b == b'\n').count();
        out.push(Diagnostic {
            line: line as u32,
            column: 1,
            severity: Severity::Error,
            code: Code::Html,
            message: "this is an HTML page, not a robots.txt; Google parses it anyway and finds no rules".into(),
            hint: "serve the real robots.txt as text/plain at /robots.txt, or answer 404 if there is none".into(),
        });
    }
}

/// Where the label or key `key` starts in a preference value, counted
/// from `from` (past a path): the first occurrence that is a whole token
/// (not inside another label), or 0 when it cannot be found as written.
fn label_offset(value: &[u8], key: &str, from: usize) -> usize {
    let key = key.as_bytes();
    let edge = |b: Option<&u8>| b.is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_'));
    let Some(rest) = value.get(from..) else { return 0 };
    (0..rest.len())
        .find(|&i| {
            rest[i..].len() >= key.len()
                && rest[i..i + key.len()].eq_ignore_ascii_case(key)
                && edge(if i == 0 { None } else { rest.get(i - 1) })
                && edge(rest.get(i + key.len()))
        })
        .map_or(0, |i| from + i)
}

/// Levenshtein distance, for "did you mean" hints on short keys.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    if a.len().abs_diff(b.len()) > 2 || a.len() > 32 {
        return usize::MAX;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
