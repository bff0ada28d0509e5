//! Lint that needs the catalogue, which the engine does not hold: a group
//! named for a token no crawler sends but that looks like a typo of one
//! (the group then applies to nobody, and the crawler meant falls to `*`),
//! and a group named for a usage token, which states a preference that no
//! request carries, so no gateway can enforce it.

use rules::lint::{Code, Diagnostic, Severity};
use rules::parse::{self, Directive, Handler, KeyKind};

use crate::Catalogue;

/// The whole lint of `body`: the engine's findings and the catalogue's
/// (token typos, usage tokens, preference conflicts), by line. What the
/// `robots lint` command, the monitor and the console's tester report.
pub fn all(body: &[u8], catalogue: &Catalogue) -> Vec<Diagnostic> {
    let agents = agent_lines(body);
    let mut found = rules::lint(body);
    operators_tokens(&mut found, &agents, catalogue);
    found.extend(lint_agents(body, &agents, catalogue));
    found.sort_by_key(|d| d.line);
    found
}

/// Every `user-agent` line's value, with its line number.
fn agent_lines(body: &[u8]) -> Vec<(u32, String)> {
    struct Agents(Vec<(u32, String)>);
    impl Handler for Agents {
        fn directive(&mut self, d: &Directive<'_>) {
            if d.kind == KeyKind::UserAgent {
                self.0.push((d.line, String::from_utf8_lossy(d.value).into_owned()));
            }
        }
    }
    let mut agents = Agents(Vec::new());
    parse::parse(body, &mut agents);
    agents.0
}

/// The engine says Google reads `AI2Bot` as `AI`, which is true of Google's
/// parser and beside the point when the line names a catalogued crawler by
/// the token its operator documents: no Google crawler is meant, and a
/// crawler that is warned "will not obey" may well obey. Such findings
/// say so instead, as information.
fn operators_tokens(found: &mut [Diagnostic], agents: &[(u32, String)], catalogue: &Catalogue) {
    for d in found.iter_mut().filter(|d| d.code == Code::AgentTruncated && d.severity != Severity::Error) {
        let Some((_, value)) = agents.iter().find(|(line, _)| *line == d.line) else { continue };
        let Some(c) = catalogue.get(value.trim()).filter(|c| !c.operator.eq_ignore_ascii_case("Google")) else {
            continue;
        };
        d.severity = Severity::Info;
        d.message = format!(
            "`{}` is the token {} documents for its crawler; it holds characters outside RFC 9309's product-token \
             grammar, so Google's parser reads it as `{}`, which matters only to Google's crawlers (none is meant here); \
             whether {} obeys it is up to its own parser",
            c.token,
            c.operator,
            rules::parse::product_token(value.trim().as_bytes()).iter().map(|&b| b as char).collect::<String>(),
            c.token
        );
        d.hint = "keep it as its operator documents it".into();
    }
}

/// The catalogue's findings on `body`, sorted by line.
///
/// ```
/// use robotsgate_crawlers::{Catalogue, lint::lint};
/// let found = lint(b"User-agent: Googelbot\nDisallow: /\n\nUser-agent: Google-Extended\nDisallow: /\n", Catalogue::builtin());
/// let codes: Vec<&str> = found.iter().map(|d| d.code.as_str()).collect();
/// assert_eq!(codes, ["unknown-crawler", "usage-token"]);
/// ```
pub fn lint(body: &[u8], catalogue: &Catalogue) -> Vec<Diagnostic> {
    lint_agents(body, &agent_lines(body), catalogue)
}

/// [`lint`], with the file's `user-agent` lines read already.
fn lint_agents(body: &[u8], agents: &[(u32, String)], catalogue: &Catalogue) -> Vec<Diagnostic> {
    let mut found = conflicts(body, catalogue);
    for (line, value) in agents {
        let line = *line;
        // Google keeps the leading product token: letters, `-` and `_`.
        let token: String = value.chars().take_while(|c| c.is_ascii_alphabetic() || *c == '-' || *c == '_').collect();
        if token.is_empty() {
            continue;
        }
        match catalogue.get(&token) {
            Some(c) if !c.sends => found.push(Diagnostic {
                line,
                column: 1,
                severity: Severity::Info,
                code: Code::UsageToken,
                message: format!(
                    "`{}` is a usage token: {} reads this group as a preference ({}), but no request carries it, so it cannot be enforced",
                    c.token,
                    c.operator,
                    c.purpose.as_str()
                ),
                hint: "keep it for the preference; to refuse requests, name the crawlers that fetch".into(),
            }),
            Some(_) => {}
            None => {
                if let Some(near) = catalogue.near(&token) {
                    found.push(Diagnostic {
                        line,
                        column: 1,
                        severity: Severity::Warning,
                        code: Code::UnknownCrawler,
                        message: format!(
                            "no known crawler sends `{token}`; `{}` ({}) is one edit or two away, and without its own group it follows `*`",
                            near.token, near.operator
                        ),
                        hint: format!("write `User-agent: {}`", near.token),
                    });
                }
            }
        }
    }
    found.sort_by_key(|d| d.line);
    found
}

/// The AI-training preferences a file states, against what its groups let
/// the catalogue's AI-training crawlers do (at the site's root): a
/// `yes` that every one of them is blocked from, or a `no` in the group the
/// best-known ones obey while they may crawl everything.
fn conflicts(body: &[u8], catalogue: &Catalogue) -> Vec<Diagnostic> {
    let prefs = rules::prefs::Preferences::read(body);
    if prefs.signals.is_empty() && prefs.usages.is_empty() {
        return Vec::new();
    }
    let robots = rules::Robots::parse(body);
    let trainers: Vec<&crate::Crawler> =
        catalogue.crawlers().iter().filter(|c| c.sends && c.purpose == crate::Purpose::AiTraining).collect();
    // (line, group, says yes) for every statement about AI training.
    let mut said: Vec<(u32, Option<u32>, bool)> = Vec::new();
    for s in &prefs.signals {
        for e in s.entries.iter().filter(|e| e.key == "ai-train") {
            if let Some(a) = e.allow {
                said.push((s.line, s.group, a));
            }
        }
    }
    // A rule with no path covers every path, `/` included.
    for u in prefs.usages.iter().filter(|u| u.path.as_deref().is_none_or(|p| p == "/")) {
        for e in u.entries.iter().filter(|e| e.key == "train-ai") {
            if let Some(a) = e.allow {
                said.push((u.line, u.group, a));
            }
        }
    }
    // The two vocabularies in one group, saying opposite things about
    // training: a reader of `Content-Signal` and one of `Content-Usage`
    // would each obey a different answer.
    let mut found = Vec::new();
    for s in &prefs.signals {
        for e in s.entries.iter().filter(|e| e.key == "ai-train") {
            let Some(signal) = e.allow else { continue };
            let opposite = prefs.usages.iter().filter(|u| u.group.is_some() && u.group == s.group).find_map(|u| {
                let said = u.entries.iter().find(|e| e.key == "train-ai")?.allow?;
                (said != signal && u.path.as_deref().is_none_or(|p| p == "/")).then_some((u.line, said))
            });
            if let Some((line, usage)) = opposite {
                found.push(Diagnostic {
                    line: line.max(s.line),
                    column: 1,
                    severity: Severity::Warning,
                    code: Code::PreferenceConflict,
                    message: format!(
                        "`Content-Signal: ai-train={}` (line {}) and `Content-Usage: train-ai={}` (line {line}) in one group say opposite things about AI training: a crawler that reads one vocabulary obeys a different answer than one that reads the other",
                        if signal { "yes" } else { "no" },
                        s.line,
                        if usage { "y" } else { "n" },
                    ),
                    hint: "say the same in both, or keep one of the two lines".into(),
                });
            }
        }
    }
    let reads = |c: &crate::Crawler, group: Option<u32>| {
        let agent = robots.crawler(&c.token);
        group.is_some_and(|g| agent.group().is_some_and(|choice| choice.lines.contains(&g)))
    };
    for (line, group, yes) in said {
        let blocked: Vec<&str> =
            trainers.iter().filter(|c| !robots.crawler(&c.token).is_allowed("/")).map(|c| c.token.as_str()).collect();
        let conflict = |message: String, hint: &str| Diagnostic {
            line,
            column: 1,
            severity: Severity::Warning,
            code: Code::PreferenceConflict,
            message,
            hint: hint.into(),
        };
        // The best-known trainers, as the file treats them.
        let best: Vec<&str> = ["GPTBot", "ClaudeBot"].into_iter().filter(|t| blocked.contains(t)).collect();
        if yes && !trainers.is_empty() && blocked.len() == trainers.len() {
            found.push(conflict(
                format!(
                    "this line allows AI training, yet every AI-training crawler the catalogue knows ({}) is disallowed at `/`",
                    trainers.len()
                ),
                "say `no`, or allow the crawlers you mean to let train",
            ));
        } else if yes && best.len() == 2 {
            found.push(conflict(
                format!(
                    "this line allows AI training, yet {} are disallowed at `/`: the preference says yes where the rules say no",
                    best.join(" and ")
                ),
                "say `no`, or allow the crawlers you mean to let train",
            ));
        }
        let main: Vec<&str> = ["GPTBot", "ClaudeBot"]
            .into_iter()
            .filter(|t| catalogue.get(t).is_some_and(|c| reads(c, group)) && robots.crawler(t).is_allowed("/"))
            .collect();
        if !yes && main.len() == 2 {
            found.push(conflict(
                format!(
                    "this line asks for no AI training, yet {} read this group and may crawl the whole site: a preference does not block them",
                    main.join(" and ")
                ),
                "add groups that disallow the AI-training crawlers you mean to stop",
            ));
        }
    }
    found
}

/// The usage tokens among `agents` (a file's group names, as
/// `rules::Robots::named_agents` gives them): groups a gateway asked to
/// enforce cannot, since no request carries the token.
///
/// ```
/// use robotsgate_crawlers::{Catalogue, lint::unenforceable};
/// let robots = rules::Robots::parse(b"User-agent: Google-Extended\nDisallow: /\n\nUser-agent: GPTBot\nDisallow: /\n");
/// assert_eq!(unenforceable(robots.named_agents(), Catalogue::builtin()), ["Google-Extended"]);
/// ```
pub fn unenforceable<'a>(agents: impl Iterator<Item = &'a [u8]>, catalogue: &Catalogue) -> Vec<String> {
    let mut found: Vec<String> = agents
        .filter_map(|a| std::str::from_utf8(a).ok())
        .filter_map(|a| catalogue.get(a).filter(|c| !c.sends).map(|c| c.token.clone()))
        .collect();
    found.sort();
    found.dedup();
    found
}
