//! The shipped catalogue's shape, and that it agrees with the engine.

use super::*;

#[test]
fn the_builtin_catalogue_has_the_required_operators() {
    let c = Catalogue::builtin();
    for token in [
        "Googlebot",
        "Googlebot-Image",
        "Googlebot-News",
        "AdsBot-Google",
        "Google-Extended",
        "FeedFetcher-Google",
        "bingbot",
        "Applebot",
        "Applebot-Extended",
        "GPTBot",
        "OAI-SearchBot",
        "ChatGPT-User",
        "ClaudeBot",
        "Claude-User",
        "Claude-SearchBot",
        "PerplexityBot",
        "CCBot",
        "meta-externalagent",
        "Amazonbot",
        "Bytespider",
        "DuckDuckBot",
        "YandexBot",
        "Baiduspider",
    ] {
        assert!(c.get(token).is_some(), "{token} is missing");
    }
}

#[test]
fn every_entry_is_complete() {
    for e in Catalogue::builtin().crawlers() {
        assert!(!e.operator.is_empty() && e.source.starts_with("https://"), "{}: operator and source", e.token);
        for suffix in &e.verify.rdns {
            assert!(!suffix.starts_with('.') && suffix.contains('.'), "{}: rdns `{suffix}` is a domain", e.token);
        }
        if e.purpose == Purpose::UserFetch && e.obeys {
            // Allowed (Anthropic says Claude-User obeys), but rare: keep the list honest.
            assert!(["Claude-User", "Twitterbot", "LinkedInBot"].contains(&e.token.as_str()), "{}", e.token);
        }
    }
}

#[test]
fn usage_tokens_send_nothing_and_are_never_claimed() {
    let c = Catalogue::builtin();
    for token in ["Google-Extended", "Applebot-Extended"] {
        let e = c.get(token).unwrap();
        assert!(!e.sends && e.verify.is_empty());
        assert!(c.claimed_by(&format!("Mozilla/5.0 (compatible; {token}/1.0)")).is_none(), "{token}");
    }
}

#[test]
fn google_groups_agree_with_the_engine() {
    use rules::crawlers::{Choice, choice};
    for e in Catalogue::builtin().crawlers() {
        let engine = choice(&e.token);
        let here = match &e.groups {
            Groups::Own => Choice::Plain,
            Groups::NamedOnly => Choice::NamedOnly,
            Groups::FallsBackTo(t) => {
                assert!(matches!(engine, Choice::FallsBackTo(x) if x.eq_ignore_ascii_case(t)), "{}", e.token);
                continue;
            }
        };
        assert_eq!(engine, here, "{}", e.token);
    }
}

#[test]
fn user_agents_of_real_crawlers() {
    let c = Catalogue::builtin();
    for (ua, want) in [
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0 Safari/537.36",
            Some("bingbot"),
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)",
            Some("GPTBot"),
        ),
        (
            "Mozilla/5.0 (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)",
            Some("AdsBot-Google-Mobile"),
        ),
        ("Mozilla/5.0 (compatible; YandexImages/3.0; +http://yandex.com/bots)", Some("YandexBot")),
        ("GoogleOther-Image/1.0", Some("GoogleOther")),
        ("curl/8.5.0", None),
        ("Mozilla/5.0 (compatible; NotGooglebotX/1.0)", None),
        ("", None),
    ] {
        assert_eq!(c.claimed_by(ua).map(|c| c.token.as_str()), want, "{ua}");
    }
}

#[test]
fn config_entries_add_and_override() {
    let extra: Vec<Crawler> = serde_saphyr::from_str(
        "- { token: ExampleBot, operator: Example, purpose: search, obeys: true, source: https://example.com/bot }\n\
         - { token: GPTBot, operator: OpenAI, purpose: ai-training, obeys: true, source: https://example.com/mirror,\n    verify: { ip_ranges: [http://127.0.0.1:1/gptbot.json] } }\n",
    )
    .unwrap();
    let c = Catalogue::builtin().with(&extra, "config.yaml").unwrap();
    assert_eq!(c.claimed_by("examplebot/3").unwrap().token, "ExampleBot");
    assert_eq!(c.get("gptbot").unwrap().verify.ip_ranges, ["http://127.0.0.1:1/gptbot.json"]);
    assert_eq!(c.crawlers().len(), Catalogue::builtin().crawlers().len() + 1);
}

#[test]
fn bad_entries_name_the_entry() {
    let e = Catalogue::parse(
        "crawlers:\n  - { token: A, operator: x, purpose: search, obeys: true, source: s }\n  - { token: a, operator: x, purpose: search, obeys: true, source: s }\n",
        "cat.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cat.yaml") && e.contains("crawlers[1]") && e.contains("twice"), "{e}");
    let e = Catalogue::parse(
        "crawlers:\n  - { token: A, operator: x, purpose: crawling, obeys: true, source: s }\n",
        "cat.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cat.yaml") && e.contains("crawling"), "{e}");
    let e = Catalogue::parse(
        "crawlers:\n  - { token: U, operator: x, purpose: ai-training, obeys: true, sends: false, source: s, verify: { rdns: [x.com] } }\n",
        "cat.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("usage token"), "{e}");
}

#[test]
fn typos_of_tokens_are_found() {
    let c = Catalogue::builtin();
    assert_eq!(c.near("Googelbot").unwrap().token, "Googlebot");
    assert_eq!(c.near("GPT-Bot").unwrap().token, "GPTBot");
    assert!(c.near("Googlebot").is_none(), "a token is no typo");
    assert!(c.near("MyOwnCrawler").is_none());
    assert!(c.near("abc").is_none(), "too short to guess");
}

#[test]
fn lint_finds_typos_and_usage_tokens_only() {
    use crate::lint::lint;
    let body = b"User-agent: Googelbot\nDisallow: /a\n\nUser-agent: GPTbot\nUser-agent: ClaudeBot/1.0\nDisallow: /\n\nUser-agent: Applebot-Extended\nDisallow: /\n\nUser-agent: *\nUser-agent: SomeOtherSpider\nDisallow: /tmp\n";
    let found = lint(body, Catalogue::builtin());
    let got: Vec<(u32, &str)> = found.iter().map(|d| (d.line, d.code.as_str())).collect();
    assert_eq!(got, [(1, "unknown-crawler"), (8, "usage-token")], "{found:#?}");
    assert!(found[0].message.contains("`Googlebot`") && found[0].hint == "write `User-agent: Googlebot`");
    assert_eq!(found[1].severity, rules::lint::Severity::Info);
}

/// Over the real-world corpus, the typo finder flags few groups, and each
/// flagged token really is a near miss of a catalogued one (a token of at
/// least four letters, not itself catalogued).
#[test]
fn lint_over_the_realworld_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/realworld/robots");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let (mut files, mut flagged) = (0, Vec::new());
    for e in entries.flatten() {
        let Ok(body) = std::fs::read(e.path()) else { continue };
        files += 1;
        for d in crate::lint::lint(&body, Catalogue::builtin()) {
            if d.code == rules::lint::Code::UnknownCrawler {
                flagged.push(d.message);
            }
        }
    }
    assert!(files > 1000, "{files}");
    assert!(flagged.len() <= 10, "{} flagged: {flagged:#?}", flagged.len());
    eprintln!("{} groups flagged in {files} files: {flagged:#?}", flagged.len());
}

#[test]
fn lint_finds_preferences_the_groups_contradict() {
    use crate::lint::lint;
    let conflicts = |body: &str| -> Vec<u32> {
        lint(body.as_bytes(), Catalogue::builtin())
            .into_iter()
            .filter(|d| d.code == rules::lint::Code::PreferenceConflict)
            .map(|d| d.line)
            .collect()
    };
    // Cloudflare's default: a `no` for training, and nothing blocks GPTBot.
    assert_eq!(conflicts("User-agent: *\nContent-Signal: search=yes,ai-train=no\nAllow: /\n"), [2]);
    // The same, with the crawlers blocked: the preference and the groups agree.
    let agree = "User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nUser-agent: ClaudeBot\nDisallow: /\n";
    assert!(conflicts(agree).is_empty());
    // A `yes` while every AI-training crawler is blocked (here by `*`).
    assert_eq!(conflicts("User-agent: *\nContent-Usage: / train-ai=y\nDisallow: /\n"), [2]);
    // A `yes` with them allowed is no conflict.
    assert!(conflicts("User-agent: *\nContent-Signal: ai-train=yes\nDisallow: /private\n").is_empty());
    // A `yes` while the best-known trainers are blocked, others not.
    let best = "User-agent: *\nContent-Signal: ai-train=yes\nAllow: /\n\nUser-agent: GPTBot\nUser-agent: ClaudeBot\nDisallow: /\n";
    assert_eq!(conflicts(best), [2]);
}

/// A catalogued crawler's own token that Google's parser would cut
/// (`AI2Bot` as `AI`) is information about Google's reading, not a
/// warning that the crawler "will not obey"; a token no catalogue holds
/// keeps the warning.
#[test]
fn operators_tokens_are_not_warned_as_truncated() {
    let found = crate::lint::all(b"User-agent: AI2Bot\nDisallow: /\n", Catalogue::builtin());
    let d = found.iter().find(|d| d.code == rules::lint::Code::AgentTruncated).expect("still said");
    assert_eq!(d.severity, rules::lint::Severity::Info, "{d:?}");
    assert!(d.message.contains("the token Ai2 documents") && d.message.contains("as `AI`"), "{}", d.message);
    assert!(!d.message.contains("will not obey"), "{}", d.message);
    let found = crate::lint::all(b"User-agent: Shop2Bot\nDisallow: /\n", Catalogue::builtin());
    let d = found.iter().find(|d| d.code == rules::lint::Code::AgentTruncated).unwrap();
    assert_eq!(d.severity, rules::lint::Severity::Warning, "{d:?}");
}

/// Compiling an AI policy onto any real-world file changes no Google
/// verdict for the crawlers whose purpose it does not deny, and denies
/// every crawler whose purpose it does, unless the owner's own group for
/// it says otherwise (then the compiled policy reports a conflict).
#[test]
fn an_ai_policy_changes_no_other_crawler_s_verdict_on_the_corpus() {
    use rules::ai_policy::{AiPolicy, Stance};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/realworld");
    let Ok(entries) = std::fs::read_dir(dir.join("robots")) else { return };
    let policies = [
        AiPolicy { ai_training: Stance::Deny, ..AiPolicy::default() },
        AiPolicy {
            ai_training: Stance::Deny,
            ai_search: Stance::Deny,
            user_fetch: Stance::Deny,
            ..AiPolicy::default()
        },
    ];
    let catalogue = Catalogue::builtin();
    let (mut files, mut checks) = (0, 0);
    for e in entries.flatten() {
        let Ok(origin) = std::fs::read(e.path()) else { continue };
        let urls = std::fs::read_to_string(dir.join("urls").join(e.file_name())).unwrap_or_default();
        let urls: Vec<&str> = urls.lines().take(20).collect();
        files += 1;
        for policy in &policies {
            // Usage tokens too (`Google-Extended`): they are how Google and
            // Apple read a training preference.
            let denied: Vec<&str> = catalogue
                .crawlers()
                .iter()
                .filter(|c| policy.allows(c.purpose.as_str()) == Some(false))
                .map(|c| c.token.as_str())
                .collect();
            let compiled = policy.compile(&denied, &origin);
            let Some(merged) = rules::merge::append(&origin, &compiled.groups) else { continue };
            let (before, after) = (rules::Robots::parse(&origin), rules::Robots::parse(&merged));
            let others = catalogue
                .crawlers()
                .iter()
                .filter(|c| c.sends && !denied.contains(&c.token.as_str()))
                .map(|c| c.token.as_str())
                .chain(["someunknowncrawler"]);
            for agent in others {
                for url in &urls {
                    assert_eq!(
                        before.crawler(agent).is_allowed(url),
                        after.crawler(agent).is_allowed(url),
                        "{:?} {agent} {url}",
                        e.path()
                    );
                    checks += 1;
                }
            }
            for token in &denied {
                let owner_allows = before.named_agents().any(|a| a.eq_ignore_ascii_case(token.as_bytes()));
                // A token Google's reading cuts short (`AI2Bot` is read as
                // `AI`) cannot be named as Google reads a file; the gateway's
                // policy alone decides for it.
                let nameable = rules::parse::agent_key(token.as_bytes()).is_some_and(|k| k.len() == token.len());
                if !owner_allows && nameable {
                    assert!(!after.crawler(token).is_allowed("/"), "{:?}: {token} is not denied", e.path());
                }
            }
        }
    }
    assert!(files > 1000, "{files}");
    eprintln!("{files} files, {checks} verdicts unchanged");
}

#[test]
fn a_user_agent_naming_two_crawlers_claims_both() {
    let c = Catalogue::builtin();
    let tokens = |ua: &str| {
        let claims = c.claims(ua);
        claims.first.into_iter().chain(claims.others).map(|(c, w)| format!("{}:{w}", c.token)).collect::<Vec<_>>()
    };
    let two = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) GPTBot/1.0";
    assert_eq!(tokens(two), ["Googlebot:Googlebot", "GPTBot:GPTBot"]);
    assert_eq!(c.claim(two).map(|(c, _)| c.token.as_str()), Some("Googlebot"), "the longest word still leads");
    // One crawler named twice, or by two of its words, is one claim.
    assert_eq!(tokens("msnbot/2.0b bingbot/2.0"), ["bingbot:bingbot"]);
    assert_eq!(tokens("Googlebot/2.1 Googlebot/2.1"), ["Googlebot:Googlebot"]);
    // A longer word containing another is one claim (`Googlebot` does
    // not stand on its own in `Googlebot-Image`).
    assert_eq!(tokens("Googlebot-Image/1.0"), ["Googlebot-Image:Googlebot-Image"]);
    assert_eq!(tokens("Mozilla/5.0 ClaudeBot/1.0; GPTBot/1.1; CCBot/2.0").len(), 3);
    assert!(tokens("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0").is_empty());
}

/// The README says how many crawlers the catalogue holds: the same number.
#[test]
fn the_readme_counts_the_catalogue_right() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    let said: usize = readme
        .split("built: ")
        .filter_map(|rest| rest.split_once(" crawlers with operator"))
        .find_map(|(n, _)| n.trim().parse().ok())
        .expect("the README's count of crawlers");
    assert_eq!(said, Catalogue::builtin().crawlers().len(), "README.md's crawler count");
}

/// Issue #64: `Content-Signal: ai-train=no` beside `Content-Usage:
/// train-ai=y` in one group is a contradiction, said at the later line;
/// the same statements agreeing, or in different groups, are not.
#[test]
fn the_two_vocabularies_contradicting_in_one_group() {
    use crate::lint::lint;
    let said = |body: &str| -> Vec<(u32, String)> {
        lint(body.as_bytes(), Catalogue::builtin())
            .into_iter()
            .filter(|d| d.code == rules::lint::Code::PreferenceConflict && d.message.contains("opposite"))
            .map(|d| (d.line, d.message))
            .collect()
    };
    let both = "User-agent: *\nContent-Signal: ai-train=no\nContent-Usage: train-ai=y\nDisallow: /private\n";
    let found = said(both);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 3);
    assert!(found[0].1.contains("ai-train=no` (line 2)") && found[0].1.contains("train-ai=y` (line 3)"), "{found:?}");
    assert!(said("User-agent: *\nContent-Signal: ai-train=no\nContent-Usage: train-ai=n\nDisallow: /x\n").is_empty());
    let apart = "User-agent: *\nContent-Signal: ai-train=no\nDisallow: /x\n\nUser-agent: GPTBot\nContent-Usage: train-ai=y\nDisallow: /y\n";
    assert!(said(apart).is_empty(), "different groups speak to different crawlers");
    // A path-bound usage speaks of its paths only.
    assert!(
        said("User-agent: *\nContent-Signal: ai-train=no\nContent-Usage: /blog/ train-ai=y\nDisallow: /x\n").is_empty()
    );
}
