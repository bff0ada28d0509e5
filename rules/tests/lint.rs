//! Every lint code fires on a file that has the problem, at the right line,
//! and stays quiet on a clean file.

use rules::lint::{Code, Severity, lint};

fn codes_at(body: &[u8]) -> Vec<(Code, u32)> {
    lint(body).into_iter().map(|d| (d.code, d.line)).collect()
}

fn fires(body: &[u8], code: Code, line: u32) {
    let found = codes_at(body);
    assert!(
        found.contains(&(code, line)),
        "{code:?} at line {line} expected in {found:?} for {:?}",
        String::from_utf8_lossy(body)
    );
}

const CLEAN: &[u8] = b"# A clean file
User-agent: Googlebot
User-agent: bingbot
Disallow: /checkout/
Allow: /checkout/help

User-agent: *
Disallow: /admin
Disallow: /*?sessionid=
Allow: /admin/public$

Sitemap: https://www.example.com/sitemap.xml
";

#[test]
fn clean_file_is_quiet() {
    assert_eq!(lint(CLEAN), Vec::new());
    assert_eq!(lint(b""), Vec::new());
    assert_eq!(lint(b"User-agent: *\nDisallow:\n"), Vec::new());
}

#[test]
fn each_code_fires() {
    fires(b"User-agent: *\nDissallow: /x\n", Code::Typo, 2);
    fires(b"Useragent: *\nDisallow: /x\n", Code::Typo, 1);
    fires(b"User-agent: *\nDisallowed: /x\n", Code::Typo, 2);
    fires(b"User-agent *\nDisallow /x\n", Code::MissingColon, 2);
    fires(b"Disallow: /x\nUser-agent: *\nDisallow: /y\n", Code::RuleOutsideGroup, 1);
    fires(b"User-agent: *\nDisallow: private\n", Code::PatternStart, 2);
    fires(b"User-agent: *\nDisallow: /x\nFoo: bar\n", Code::UnknownDirective, 3);
    fires(b"User-agent: *\nAlow: /x\n", Code::UnknownDirective, 2);
    fires(b"User-agent: *\nCrawl-delay: 10\nDisallow: /x\n", Code::CrawlDelay, 2);
    fires(b"User-agent: *\nNoindex: /x\n", Code::Noindex, 2);
    fires(b"User-agent: *\nDisallow: /caf\xe9\n", Code::InvalidUtf8, 2);
    fires(b"\xEF\xBB\xBFUser-agent: *\nDisallow: /x\n", Code::Bom, 1);
    fires(b"<!DOCTYPE html>\n<html><body>Not found</body></html>\n", Code::Html, 1);
    fires(b"User-agent: *\nCrawl-delay: ten\n", Code::CrawlDelay, 2);
    fires(b"User-agent: MJ12bot\nDisallow: /\n", Code::AgentTruncated, 1);
    fires(b"User-agent: *\nDisallow: /x\nUser-agent: Googlebot\n", Code::EmptyGroup, 3);
    fires(b"User-agent: *\nDisallow: /shop\nAllow: /shop\n", Code::ShadowedRule, 2);
    fires(b"User-agent: *\nDisallow: /shop\nAllow: /shop*\n", Code::ShadowedRule, 2);
    // A longer rule of the other kind that matches less does not shadow.
    assert!(
        !codes_at(b"User-agent: *\nDisallow: /shop/cart\nAllow: /shop*\n").iter().any(|c| c.0 == Code::ShadowedRule)
    );
    fires(b"User-agent: *\nDisallow: /x\nDisallow: /x\n", Code::DuplicateRule, 3);
    fires(b"User-agent: *\nDisallow: /x\nSitemap: /sitemap.xml\n", Code::SitemapNotAbsolute, 3);
    fires(b"User-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /x\n", Code::ContentSignal, 2);
    // Junk in either preference line is a syntax finding.
    fires(
        b"User-agent: *\nContent-Signal: search=yes,,, =yes, ai-train=YES\nDisallow: /x\n",
        Code::PreferenceSyntax,
        2,
    );
    fires(b"User-agent: *\nContent-Usage: / train-ai=n,,, =y\nDisallow: /x\n", Code::PreferenceSyntax, 2);
    fires(b"User-agent: *\n", Code::EmptyGroup, 1);
}

/// A `User-agent: *` group that holds only preference lines is where
/// crawlers without a group read them: not an empty group. The gateway
/// appends such a group to every file its AI policy compiles onto.
#[test]
fn a_preferences_only_star_group_is_not_empty() {
    let body = b"User-agent: *\nDisallow: /x\n\n# AI policy: preferences\nUser-agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nContent-Usage: / train-ai=n, search=y\n";
    let found = codes_at(body);
    assert!(!found.iter().any(|c| c.0 == Code::EmptyGroup || c.0 == Code::PreferenceSyntax), "{found:?}");
    // A rule-less group that names a crawler still is one, and says why.
    let named = rules::lint(b"User-agent: *\nDisallow: /x\n\nUser-agent: GPTBot\nContent-Signal: ai-train=no\n");
    let d = named.iter().find(|d| d.code == Code::EmptyGroup).expect("empty-group");
    assert!(d.message.contains("ignore the `*` group"), "{}", d.message);
    let star = rules::lint(b"User-agent: *\n");
    let d = star.iter().find(|d| d.code == Code::EmptyGroup).expect("empty-group");
    assert!(!d.message.contains("ignore the `*` group"), "{}", d.message);
}

#[test]
fn too_large_names_the_line_google_stops_at() {
    let mut body = b"User-agent: *\n".to_vec();
    let mut n = 0;
    while body.len() <= rules::parse::MAX_FILE_BYTES + 100 {
        n += 1;
        body.extend_from_slice(format!("Disallow: /section-{n}/\n").as_bytes());
    }
    let d: Vec<_> = lint(&body).into_iter().filter(|d| d.code == Code::TooLarge).collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].severity, Severity::Error);
    // The line holding byte 512,000 is the last Google reads.
    let cut = &body[..rules::parse::MAX_FILE_BYTES];
    let line = 1 + cut.iter().filter(|b| **b == b'\n').count() as u32;
    assert_eq!(d[0].line, line);
    assert!(d[0].message.contains(&format!("line {line}")), "{}", d[0].message);
}

#[test]
fn long_lines_are_flagged() {
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    body.extend(std::iter::repeat_n(b'a', rules::parse::MAX_LINE_BYTES));
    fires(&body, Code::LineTooLong, 2);
}

#[test]
fn version_suffix_is_only_info_and_empty_token_is_error() {
    let d = lint(b"User-agent: Googlebot/2.1\nDisallow: /x\n");
    assert_eq!((d[0].code, d[0].severity), (Code::AgentTruncated, Severity::Info));
    let d = lint(b"User-agent: 123bot\nDisallow: /x\n");
    assert_eq!((d[0].code, d[0].severity), (Code::AgentTruncated, Severity::Error));
}

#[test]
fn columns_point_at_the_value() {
    let d = lint(b"User-agent: *\nDisallow:   private\n");
    assert_eq!((d[0].line, d[0].column), (2, 13));
}

/// Issue #64: a preference label's finding points at the label, not at
/// the path before it; and the `*` finding says what is wrong.
#[test]
fn label_findings_point_at_the_label() {
    let d = lint(b"User-agent: *\nContent-Usage: /docs/ train-genai=n, search=maybe\nDisallow: /x\n");
    let syntax: Vec<_> = d.iter().filter(|d| d.code == Code::PreferenceSyntax).collect();
    // `Content-Usage: /docs/ ` is 22 bytes: train-genai is at column 23.
    let genai = syntax.iter().find(|d| d.message.contains("train-genai")).unwrap();
    assert_eq!(genai.column, 23, "{genai:?}");
    let maybe = syntax.iter().find(|d| d.message.contains("search=maybe")).unwrap();
    assert_eq!(maybe.column, 38, "{maybe:?}");
    let d = lint(b"User-agent: *\nContent-Signal: search=yes, ai-trian=no\nDisallow: /x\n");
    let typo = d.iter().find(|d| d.message.contains("ai-trian")).unwrap();
    assert_eq!(typo.column, 29, "{typo:?}");
    let d = lint(b"User-agent: *\nContent-Usage: *.pdf train-ai=n\nDisallow: /x\n");
    let star = d.iter().find(|d| d.message.contains("starts with `*`")).unwrap_or_else(|| panic!("{d:?}"));
    assert!(star.message.contains("not `/`") && !star.message.contains("starts otherwise"), "{star:?}");
}

/// Issue #64: Google's guidance (23 October 2026) recommends
/// percent-encoding rule paths; lint suggests the encoded line for a path
/// with characters outside ASCII, at the first such character.
#[test]
fn unencoded_paths_get_the_encoded_line() {
    let d = lint("User-agent: *\nDisallow: /café/menü\nAllow: /caf%C3%A9/ok\n".as_bytes());
    let found: Vec<_> = d.iter().filter(|d| d.code == Code::UnencodedPath).collect();
    assert_eq!(found.len(), 1, "an encoded path is not flagged: {d:?}");
    assert_eq!((found[0].line, found[0].column, found[0].severity), (2, 15, Severity::Info));
    assert_eq!(found[0].hint, "write `Disallow: /caf%C3%A9/men%C3%BC`");
    // Bytes that are not UTF-8 are invalid-utf8's, not this finding's.
    let d = lint(b"User-agent: *\nDisallow: /caf\xe9\n");
    assert!(d.iter().all(|d| d.code != Code::UnencodedPath), "{d:?}");
}

#[test]
fn every_code_is_exercised_here() {
    // Keeps this file honest when a code is added.
    let source = include_str!("lint.rs");
    for code in Code::ALL {
        assert!(source.contains(&format!("Code::{code:?}")), "{code:?} has no test");
    }
}

#[test]
fn realworld_corpus_lints_without_panicking() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/realworld/robots");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let mut files = 0;
    for e in entries.flatten() {
        let body = std::fs::read(e.path()).expect("read");
        let _ = lint(&body);
        files += 1;
    }
    assert!(files > 1000);
}

/// `Code::UnknownCrawler` and `Code::UsageToken` need the crawler
/// catalogue, so `robotsgate-crawlers` finds them (tested there); the
/// engine's own lint never does.
#[test]
fn catalogue_codes_come_from_the_catalogue() {
    let found = lint(b"User-agent: Googelbot\nDisallow: /\n\nUser-agent: Google-Extended\nDisallow: /\n");
    assert!(found.iter().all(|d| !matches!(d.code, Code::UnknownCrawler | Code::UsageToken)), "{found:?}");
    // Code::PreferenceConflict needs the catalogue's purposes too.
    let found = lint(b"User-agent: *\nContent-Signal: ai-train=yes\nDisallow: /\n");
    assert!(found.iter().all(|d| d.code != Code::PreferenceConflict), "{found:?}");
}

/// Preference lines: where they stand and how they are written. Shapes
/// taken from real sites: no path, several statements, signals in `*` and
/// in named groups, and a signal before any group.
#[test]
fn preference_lines() {
    let body = b"Content-Signal: ai-train=no\n\
User-agent: *\n\
Content-Signal: search=yes, ai-input=no, ai-train=no, use=reference\n\
Content-Usage: train-ai=n\n\
Content-Usage: / train-ai=n, search=y\n\
Content-Usage: /blog/ train-ai=maybe, summarize=n\n\
Allow: /\n\
\n\
User-agent: GPTBot\n\
Content-Signal: ai-train=nope, use=partial\n\
Disallow: /\n\
License: https://example.com/license.xml\n\
Content-Usage: / ai-use=n, train-genai=n\n\
Content-Usage: /x Train-AI=n\n";
    let found = lint(body);
    let got: Vec<(u32, Code, Severity)> = found.iter().map(|d| (d.line, d.code, d.severity)).collect();
    for want in [
        (1, Code::PreferenceOutsideGroup, Severity::Warning),
        (1, Code::ContentSignal, Severity::Info),
        (6, Code::PreferenceSyntax, Severity::Warning),
        (6, Code::PreferenceSyntax, Severity::Info),
        (10, Code::PreferenceSyntax, Severity::Warning),
        (12, Code::Preference, Severity::Info),
        (13, Code::PreferenceSyntax, Severity::Warning),
        (14, Code::PreferenceSyntax, Severity::Warning),
    ] {
        assert!(got.contains(&want), "{want:?} in {found:#?}");
    }
    // Well-formed lines (a path-less rule covers every path) raise nothing.
    for line in [3, 4, 5] {
        assert!(!got.iter().any(|g| g.0 == line), "line {line}: {found:#?}");
    }
    let on = |line: u32| -> Vec<&str> {
        found
            .iter()
            .filter(|d| d.line == line && d.code == Code::PreferenceSyntax)
            .map(|d| d.message.as_str())
            .collect()
    };
    assert!(on(6).iter().any(|m| m.contains("train-ai=maybe")) && on(6).iter().any(|m| m.contains("`summarize`")));
    assert!(on(10).iter().any(|m| m.contains("use=partial") && m.contains("immediate, reference or full")));
    // A label the current draft does not define names the draft and what
    // replaced it; `ai-use`, back in -08 (issue #64), is no such label.
    let retired: Vec<&str> = on(13);
    assert!(
        retired.iter().any(|m| m.starts_with(
            "`train-genai` is a label of an earlier AIPREF draft that draft-ietf-aipref-vocab-08 does not define"
        )),
        "{retired:?}"
    );
    assert!(retired.iter().any(|m| m.contains("`train-ai` replaces it")), "{retired:?}");
    assert!(!retired.iter().any(|m| m.contains("`ai-use`")), "ai-use is a label of -08: {retired:?}");
    assert!(on(14).iter().any(|m| m.contains("RFC 9651")), "upper-case keys: {:?}", on(14));
    // Google's ignoring, said once, in the right words.
    let google: Vec<&rules::Diagnostic> = found.iter().filter(|d| d.message.starts_with("Google recognises")).collect();
    assert_eq!(google.len(), 1, "{found:#?}");
    assert!(google[0].message.contains("as with `crawl-delay`") && google[0].message.contains("cost nothing"));
    assert!(!found.iter().any(|d| d.message.contains("flag it as unknown")), "{found:#?}");
}

/// One stray HTML line among rules is a warning about that line, not "an
/// HTML page with no rules"; a page that is HTML throughout stays an error.
#[test]
fn a_stray_html_line_is_not_an_html_page() {
    let stray = lint(b"User-agent: *\nDisallow: /cart\n<html>\nDisallow: /search\n");
    let d = stray.iter().find(|d| d.code == Code::Html).expect("the line is flagged");
    assert!(
        d.severity == Severity::Warning && d.line == 3 && d.message.contains("rules around it still count"),
        "{d:?}"
    );
    let page = lint(b"<!DOCTYPE html>\n<html><body>Not found</body></html>\n");
    let d = page.iter().find(|d| d.code == Code::Html).unwrap();
    assert!(d.severity == Severity::Error && d.message.contains("finds no rules"), "{d:?}");
}

/// `Crawl-delay: ten` is read by nobody; `Crawl-delay: 2.5` is only Google's
/// usual information.
#[test]
fn a_crawl_delay_that_is_not_a_number_is_a_warning() {
    let ten = lint(b"User-agent: *\nCrawl-delay: ten\n");
    assert!(
        ten.iter()
            .any(|d| d.code == Code::CrawlDelay && d.severity == Severity::Warning && d.message.contains("`ten`")),
        "{ten:?}"
    );
    for ok in ["10", "2.5", "0"] {
        let found = lint(format!("User-agent: *\nCrawl-delay: {ok}\n").as_bytes());
        assert!(found.iter().all(|d| d.code != Code::CrawlDelay || d.severity == Severity::Info), "{ok}: {found:?}");
    }
}
