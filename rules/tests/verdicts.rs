//! The verdict corpus: each case is a robots.txt, a crawler, a URL, the
//! verdict Google's matcher gives and the line that decides it (0: none).
//! Every case runs against the fast engine and against the reference model.
//!
//! Names say where the behaviour comes from: `rfc_*` cites RFC 9309,
//! `google_only_*` is leniency only Google's library has.

use rules::{Robots, reference};

struct Case {
    name: &'static str,
    robots: &'static [u8],
    agent: &'static str,
    url: &'static str,
    allowed: bool,
    line: u32,
}

macro_rules! cases {
    ($($name:ident: $robots:expr, $agent:expr, $url:expr => $allowed:expr, $line:expr;)*) => {
        &[$(Case { name: stringify!($name), robots: $robots, agent: $agent, url: $url, allowed: $allowed, line: $line }),*]
    };
}

const ALLOW: bool = true;
const BLOCK: bool = false;

const CASES: &[Case] = cases! {
    // Groups (RFC 9309 2.1, 2.2.1).
    rfc_2_1_empty_file_allows: b"", "FooBot", "http://foo.bar/x/y" => ALLOW, 0;
    rfc_2_1_no_rules_allows: b"User-agent: FooBot\n", "FooBot", "http://foo.bar/x/y" => ALLOW, 0;
    rfc_2_2_1_specific_group: b"User-agent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/x/y" => BLOCK, 2;
    rfc_2_2_1_other_agent_unaffected: b"User-agent: FooBot\nDisallow: /\n", "BarBot", "http://foo.bar/x/y" => ALLOW, 0;
    rfc_2_2_1_consecutive_agents_share_group:
        b"User-agent: FooBot\nUser-agent: BarBot\nDisallow: /\n", "BarBot", "http://foo.bar/" => BLOCK, 3;
    rfc_2_2_1_group_ends_at_next_agent_after_rules:
        b"User-agent: FooBot\nDisallow: /a\nUser-agent: BarBot\nDisallow: /b\n", "FooBot", "http://foo.bar/b" => ALLOW, 0;
    rfc_2_2_1_agent_case_insensitive: b"User-agent: FOOBOT\nDisallow: /\n", "foobot", "http://foo.bar/" => BLOCK, 2;
    rfc_2_2_1_global_applies_without_specific:
        b"User-agent: *\nDisallow: /x/\n", "FooBot", "http://foo.bar/x/y" => BLOCK, 2;
    rfc_2_2_1_specific_beats_global:
        b"User-agent: *\nDisallow: /\nUser-agent: FooBot\nAllow: /\n", "FooBot", "http://foo.bar/x" => ALLOW, 4;
    rfc_2_2_1_specific_group_without_match_ignores_global:
        b"User-agent: FooBot\nDisallow: /a\nUser-agent: *\nDisallow: /\n", "FooBot", "http://foo.bar/b" => ALLOW, 0;
    rfc_2_2_1_empty_specific_group_ignores_global:
        b"User-agent: *\nDisallow: /\nUser-agent: FooBot\n", "FooBot", "http://foo.bar/b" => ALLOW, 0;
    rfc_2_2_1_groups_merge:
        b"User-agent: FooBot\nDisallow: /a\nUser-agent: BarBot\nDisallow: /b\nUser-agent: FooBot\nDisallow: /c\n",
        "FooBot", "http://foo.bar/c/d" => BLOCK, 6;
    rfc_2_2_1_merged_longest_wins:
        b"User-agent: FooBot\nDisallow: /a\nUser-agent: BarBot\nDisallow: /\nUser-agent: FooBot\nAllow: /a/b\n",
        "FooBot", "http://foo.bar/a/b" => ALLOW, 6;
    rfc_2_2_1_global_groups_merge:
        b"User-agent: *\nDisallow: /a\nUser-agent: FooBot\nDisallow: /\nUser-agent: *\nDisallow: /b\n",
        "BarBot", "http://foo.bar/b" => BLOCK, 6;
    google_only_rules_before_agent_ignored: b"Disallow: /\nUser-agent: FooBot\nAllow: /x\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    google_only_rules_before_agent_ignored_global: b"Disallow: /\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    google_only_sitemap_does_not_end_group:
        b"User-agent: FooBot\nSitemap: http://x/s.xml\nUser-agent: BarBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 4;
    google_only_unknown_does_not_end_group:
        b"User-agent: FooBot\nCrawl-delay: 5\nUser-agent: BarBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 4;
    google_only_global_with_trailing_text: b"User-agent: * baz\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_star_prefix_not_global: b"User-agent: *baz\nDisallow: /\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    google_only_agent_value_cut_to_token: b"User-agent: FooBot/1.2\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_agent_value_cut_at_digit: b"User-agent: MJ12bot\nDisallow: /\n", "MJ12bot", "http://foo.bar/" => ALLOW, 0;
    google_only_agent_value_cut_matches_short: b"User-agent: MJ12bot\nDisallow: /\n", "MJ", "http://foo.bar/" => BLOCK, 2;
    google_only_agent_value_cut_at_space: b"User-agent: Foo Bar\nDisallow: /\n", "Foo", "http://foo.bar/" => BLOCK, 2;
    google_only_queried_agent_not_cut: b"User-agent: FooBot\nDisallow: /\n", "FooBot/2.1", "http://foo.bar/" => ALLOW, 0;
    google_only_queried_agent_not_cut_falls_to_global:
        b"User-agent: FooBot\nAllow: /\nUser-agent: *\nDisallow: /\n", "FooBot/2.1", "http://foo.bar/" => BLOCK, 4;
    google_only_agent_with_underscore_and_dash: b"User-agent: Foo_Bar-Baz\nDisallow: /\n", "foo_bar-baz", "http://foo.bar/" => BLOCK, 2;

    // Lines and keys.
    google_only_crlf: b"User-agent: FooBot\r\nDisallow: /\r\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_lone_cr: b"User-agent: FooBot\rAllow: /\rDisallow: /x\r", "FooBot", "http://foo.bar/x" => BLOCK, 3;
    google_only_bom: b"\xEF\xBB\xBFUser-agent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_partial_bom: b"\xEF\xBBUser-agent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_broken_bom_spoils_key: b"\xEF\x11User-agent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    rfc_2_2_comment_anywhere: b"User-agent: FooBot # me\nDisallow: /x # not /\n", "FooBot", "http://foo.bar/y" => ALLOW, 0;
    rfc_2_2_comment_hides_rule: b"User-agent: FooBot\n# Disallow: /\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    google_only_nul_ends_line: b"User-agent: FooBot\nDisallow: /x\0yz\n", "FooBot", "http://foo.bar/xq" => BLOCK, 2;
    google_only_key_prefix: b"User-agent: FooBot\nDisallowed: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_key_case: b"USER-AGENT: FooBot\nDISALLOW: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_dissallow: b"User-agent: FooBot\nDissallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_dissalow: b"User-agent: FooBot\nDissalow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_disalow: b"User-agent: FooBot\nDisalow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_diasllow: b"User-agent: FooBot\nDiasllow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_disallaw: b"User-agent: FooBot\nDisallaw: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_useragent: b"Useragent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_typo_user_space_agent: b"User agent: FooBot\nDisallow: /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_no_allow_typos:
        b"User-agent: FooBot\nDisallow: /\nAlow: /x\n", "FooBot", "http://foo.bar/x" => BLOCK, 2;
    google_only_missing_colon: b"User-agent FooBot\nDisallow /\n", "FooBot", "http://foo.bar/" => BLOCK, 2;
    google_only_missing_colon_three_words_ignored: b"User-agent FooBot\nDisallow / x\n", "FooBot", "http://foo.bar/" => ALLOW, 0;
    google_only_first_colon_splits: b"User-agent: FooBot\nDisallow /x:/y\n", "FooBot", "http://foo.bar/y" => BLOCK, 2;
    google_only_whitespace_around: b"  User-agent :  FooBot  \n\t Disallow\t:\t/x \n", "FooBot", "http://foo.bar/x" => BLOCK, 2;

    // Paths and wildcards (RFC 9309 2.2.2, 2.2.3).
    rfc_2_2_2_prefix_match: b"User-agent: *\nDisallow: /fish\n", "a", "http://x/fish.html" => BLOCK, 2;
    rfc_2_2_2_case_sensitive: b"User-agent: *\nDisallow: /fish\n", "a", "http://x/Fish" => ALLOW, 0;
    rfc_2_2_2_query_is_matched: b"User-agent: *\nDisallow: /a?b\n", "a", "http://x/a?b=c" => BLOCK, 2;
    rfc_2_2_2_fragment_ignored: b"User-agent: *\nDisallow: /a#\n", "a", "http://x/a#b" => BLOCK, 2;
    rfc_2_2_2_params_matched: b"User-agent: *\nDisallow: /a;b\n", "a", "http://x/a;b" => BLOCK, 2;
    rfc_2_2_3_star: b"User-agent: *\nDisallow: /*.php\n", "a", "http://x/a/b.php?x" => BLOCK, 2;
    rfc_2_2_3_dollar: b"User-agent: *\nDisallow: /*.php$\n", "a", "http://x/a/b.php?x" => ALLOW, 0;
    rfc_2_2_3_dollar_end: b"User-agent: *\nDisallow: /*.php$\n", "a", "http://x/a/b.php" => BLOCK, 2;
    rfc_2_2_3_dollar_middle_is_literal: b"User-agent: *\nDisallow: /a$b\n", "a", "http://x/a$bc" => BLOCK, 2;
    rfc_2_2_3_leading_star: b"User-agent: *\nDisallow: *x\n", "a", "http://x/abcx" => BLOCK, 2;
    google_only_pattern_without_slash_never_matches: b"User-agent: *\nDisallow: fish\n", "a", "http://x/fish" => ALLOW, 0;
    rfc_2_2_2_root: b"User-agent: *\nDisallow: /\n", "a", "http://x" => BLOCK, 2;
    google_only_url_without_path: b"User-agent: *\nDisallow: /$\n", "a", "http://x?q" => ALLOW, 0;
    google_only_url_query_only: b"User-agent: *\nDisallow: /?\n", "a", "http://x?q" => BLOCK, 2;
    google_only_relative_path_url: b"User-agent: *\nDisallow: /a\n", "a", "/a/b" => BLOCK, 2;

    // Percent-encoding (RFC 9309 2.2.2): patterns are normalised, URLs are not.
    rfc_2_2_2_pattern_utf8_encoded: "User-agent: *\nDisallow: /foo/ツ\n".as_bytes(), "a", "http://x/foo/%E3%83%84" => BLOCK, 2;
    google_only_raw_utf8_url_not_encoded: "User-agent: *\nDisallow: /foo/ツ\n".as_bytes(), "a", "http://x/foo/ツ" => ALLOW, 0;
    rfc_2_2_2_encoded_pattern: b"User-agent: *\nDisallow: /foo/%E3%83%84\n", "a", "http://x/foo/%E3%83%84" => BLOCK, 2;
    google_only_hex_uppercased_in_pattern: b"User-agent: *\nDisallow: /a%3c\n", "a", "http://x/a%3C" => BLOCK, 2;
    google_only_url_hex_not_normalised: b"User-agent: *\nDisallow: /a%3C\n", "a", "http://x/a%3c" => ALLOW, 0;
    google_only_nothing_decoded: b"User-agent: *\nDisallow: /a%62\n", "a", "http://x/ab" => ALLOW, 0;
    google_only_latin1_byte_encoded: b"User-agent: *\nDisallow: /caf\xe9\n", "a", "http://x/caf%E9" => BLOCK, 2;

    // Precedence (RFC 9309 2.2.2).
    rfc_2_2_2_longest_wins_allow: b"User-agent: *\nDisallow: /a\nAllow: /a/b\n", "a", "http://x/a/b/c" => ALLOW, 3;
    rfc_2_2_2_longest_wins_disallow: b"User-agent: *\nAllow: /a\nDisallow: /a/b\n", "a", "http://x/a/b/c" => BLOCK, 3;
    rfc_2_2_2_order_irrelevant: b"User-agent: *\nAllow: /a/b\nDisallow: /a\n", "a", "http://x/a/b" => ALLOW, 2;
    rfc_2_2_2_allow_wins_tie: b"User-agent: *\nDisallow: /a\nAllow: /a\n", "a", "http://x/a" => ALLOW, 3;
    rfc_2_2_2_allow_wins_tie_wildcards: b"User-agent: *\nDisallow: /*b\nAllow: /a*\n", "a", "http://x/ab" => ALLOW, 3;
    google_only_priority_counts_wildcards: b"User-agent: *\nAllow: /page\nDisallow: /*.htm\n", "a", "http://x/page.htm" => BLOCK, 3;
    google_only_priority_counts_dollar: b"User-agent: *\nAllow: /$\nDisallow: /\n", "a", "http://x/" => ALLOW, 2;
    google_only_priority_counts_dollar_b: b"User-agent: *\nAllow: /$\nDisallow: /\n", "a", "http://x/page" => BLOCK, 3;
    google_only_priority_after_encoding: "User-agent: *\nAllow: /ツ\nDisallow: /%E3%83%84/\n".as_bytes(), "a", "http://x/%E3%83%84/a" => BLOCK, 3;
    google_only_first_line_among_equals: b"User-agent: *\nDisallow: /a\nDisallow: /a\n", "a", "http://x/a" => BLOCK, 2;
    rfc_2_2_2_empty_disallow_allows: b"User-agent: FooBot\nDisallow:\n", "FooBot", "http://x/a" => ALLOW, 0;
    rfc_2_2_2_empty_disallow_specific_over_global:
        b"User-agent: *\nDisallow: /\nUser-agent: FooBot\nDisallow:\n", "FooBot", "http://x/a" => ALLOW, 0;
    google_only_empty_allow_no_effect: b"User-agent: *\nDisallow: /\nAllow:\n", "a", "http://x/a" => BLOCK, 2;
    google_only_index_html_allows_directory:
        b"User-agent: *\nDisallow: /\nAllow: /allowed-slash/index.html\n", "a", "http://x/allowed-slash/" => ALLOW, 3;
    google_only_index_html_not_subpaths:
        b"User-agent: *\nDisallow: /\nAllow: /allowed-slash/index.html\n", "a", "http://x/allowed-slash/other" => BLOCK, 2;
    google_only_index_htm_allows_directory:
        b"User-agent: *\nDisallow: /\nAllow: /d/index.htm\n", "a", "http://x/d/" => ALLOW, 3;
    google_only_index_html_itself: b"User-agent: *\nDisallow: /\nAllow: /d/index.html\n", "a", "http://x/d/index.html" => ALLOW, 3;
    google_only_index_priority_is_bare_dir:
        b"User-agent: *\nAllow: /d/index.html\nDisallow: /d/\n", "a", "http://x/d/" => ALLOW, 2;
    google_only_index_root: b"User-agent: *\nDisallow: /\nAllow: /index.html\n", "a", "http://x/" => ALLOW, 3;
    google_only_index_html_directory_keeps_its_wildcard:
        b"User-agent: *\nDisallow: /\nAllow: /a*/index.html\n", "a", "http://x/abc/" => ALLOW, 3;
    google_only_index_html_after_an_escape:
        b"User-agent: *\nDisallow: /\nAllow: /%c3%a9*/index.html\n", "a", "http://x/%C3%A9t%C3%A9/" => ALLOW, 3;
    google_only_index_not_for_disallow: b"User-agent: *\nDisallow: /d/index.html\n", "a", "http://x/d/" => ALLOW, 0;
};

fn label(c: &Case) -> String {
    format!("{} ({:?} {})", c.name, c.agent, c.url)
}

#[test]
fn engine_matches_corpus() {
    for c in CASES {
        let robots = Robots::parse(c.robots);
        let v = robots.check(c.agent, c.url);
        assert_eq!(v.allowed, c.allowed, "{}", label(c));
        assert_eq!(v.rule.map_or(0, |r| r.line), c.line, "deciding line of {}", label(c));
    }
}

#[test]
fn reference_matches_corpus() {
    for c in CASES {
        let (allowed, line) = reference::check(c.robots, c.agent.as_bytes(), c.url.as_bytes());
        assert_eq!((allowed, line), (c.allowed, c.line), "{}", label(c));
    }
}

#[test]
fn names_are_unique() {
    let mut names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len());
}

#[test]
fn google_only_long_line_cut_still_applies() {
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    let keep = rules::parse::MAX_LINE_BYTES - b"Disallow: /".len();
    body.extend(std::iter::repeat_n(b'a', keep));
    body.extend_from_slice(b"bcdef\n");
    let robots = Robots::parse(&body);
    let mut url = b"http://x/".to_vec();
    url.extend(std::iter::repeat_n(b'a', keep));
    // The cut rule is /aaa…a and blocks anything starting with it.
    assert!(!robots.check_bytes(b"a", &url).allowed);
    url.extend_from_slice(b"zzz");
    assert!(!robots.check_bytes(b"a", &url).allowed);
    assert_eq!(reference::check(&body, b"a", &url), (false, 2));
}

#[test]
fn rules_past_500_kib_ignored() {
    let mut body = b"User-agent: *\nDisallow: /a\n".to_vec();
    body.resize(rules::parse::MAX_FILE_BYTES, b'\n');
    body.extend_from_slice(b"Disallow: /b\n");
    let robots = Robots::parse(&body);
    assert!(!robots.is_allowed("x", "http://x/a"));
    assert!(robots.is_allowed("x", "http://x/b"));
}

#[test]
fn explain_lists_every_match() {
    let robots = Robots::parse(b"User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /*b\nAllow:\n");
    let agent = robots.agent("x");
    let hits = agent.matching_rules(b"/a/b");
    let lines: Vec<u32> = hits.iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![3, 4, 2, 5]);
    assert_eq!(hits[0].priority(), 4);
}

#[test]
fn verdict_names_group() {
    let robots =
        Robots::parse(b"User-agent: a\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n\nuser-agent: a\nallow: /y\n");
    let v = robots.check("A", "http://h/y");
    let g = v.group.unwrap();
    assert!(!g.global);
    assert_eq!(g.lines, &[1, 7]);
    let v = robots.check("other", "http://h/x");
    assert!(v.group.unwrap().global);
    assert!(Robots::parse(b"User-agent: a\nDisallow: /\n").check("b", "/").group.is_none());
}

#[test]
fn sitemaps_and_extras_keep_lines() {
    let robots =
        Robots::parse(b"Sitemap: https://x/s.xml\nUser-agent: *\nCrawl-delay: 10\nsite-map: https://x/t.xml\n");
    let maps: Vec<(u32, &[u8])> = robots.sitemaps().collect();
    assert_eq!(maps, vec![(1, &b"https://x/s.xml"[..]), (4, &b"https://x/t.xml"[..])]);
    let extras: Vec<_> = robots.extras().collect();
    assert_eq!(extras.len(), 3);
    assert_eq!((extras[1].line, extras[1].key, extras[1].value), (3, &b"Crawl-delay"[..], &b"10"[..]));
}

#[test]
fn written_pattern_kept() {
    let robots = Robots::parse("User-agent: *\nDisallow: /ツ\nAllow: /d/index.html\n".as_bytes());
    let v = robots.check("x", "http://h/%E3%83%84");
    let r = v.rule.unwrap();
    assert_eq!(r.written, "/ツ".as_bytes());
    assert_eq!(r.pattern, b"/%E3%83%84");
    let v = robots.check("x", "http://h/d/");
    let r = v.rule.unwrap();
    assert!(r.from_index_html);
    assert_eq!(r.written, b"/d/index.html");
    assert_eq!(r.pattern, b"/d/$");
}

/// Google's matcher reads the path as a C string: a NUL ends it.
#[test]
fn google_only_a_nul_in_the_url_ends_the_path() {
    let star_a = Robots::parse(b"User-agent: *\nDisallow: /*a\n");
    assert!(star_a.is_allowed("Googlebot", "http://example.com/\0a"));
    assert!(!star_a.is_allowed("Googlebot", "http://example.com/a\0"));
    let root_only = Robots::parse(b"User-agent: *\nDisallow: /$\n");
    assert!(!root_only.is_allowed("Googlebot", "http://example.com/\0x"));
    assert!(root_only.is_allowed("Googlebot", "http://example.com/x\0"));
}
