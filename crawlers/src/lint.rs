//! Lint that needs the catalogue, which the engine does not hold: a group
//! named for a token no crawler sends but that looks like a typo of one
//! (the group then applies to nobody, and the crawler meant falls to `*`),
//! and a group named for a usage token, which states a preference that no
//! request carries, so no gateway can enforce it.

use rules::lint::{Code, Diagnostic, Severity};
use rules::parse::{self, Directive, Handler, KeyKind};

use crate::Catalogue;

/// The catalogue's findings on `body`, sorted by line.
///
/// ```
/// use robotsgate_crawlers::{Catalogue, lint::lint};
/// let found = lint(b"User-agent: Googelbot\nDisallow: /\n\nUser-agent: Google-Extended\nDisallow: /\n", Catalogue::builtin());
/// let codes: Vec<&str> = found.iter().map(|d| d.code.as_str()).collect();
/// assert_eq!(codes, ["unknown-crawler", "usage-token"]);
/// ```
pub fn lint(body: &[u8], catalogue: &Catalogue) -> Vec<Diagnostic> {
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
    let mut found = Vec::new();
    for (line, value) in agents.0 {
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
