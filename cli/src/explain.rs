//! `robots explain`: the chosen group, every rule that matched with its
//! priority, and the winner.

use std::path::Path;
use std::process::ExitCode;

use rules::Robots;

/// The AI usage preferences that apply (Google's verdict ignores them):
/// the group's `Content-Signal` lines, the `Content-Usage` rules that decide
/// for the path (the longest matching path; a rule with none covers every
/// path) with each category of the current AIPREF vocabulary as allowed,
/// disallowed or unknown, and the file's `License` lines. Preferences apply
/// only to a path the group lets the crawler fetch.
fn preferences(body: &[u8], group: &[u32], target: &[u8], fetchable: bool) {
    use rules::prefs::{AIPREF_ATTACH, AIPREF_VOCAB};
    let prefs = rules::prefs::Preferences::read(body);
    if prefs.is_empty() {
        return;
    }
    let applied = prefs.applied(group, target, fetchable);
    println!("preferences (not part of Google's verdict):");
    let show = |entries: &[rules::prefs::Entry]| -> String {
        entries.iter().map(|e| format!("{}={}", e.key, e.value)).collect::<Vec<_>>().join(", ")
    };
    if applied.signals.is_empty() {
        println!("  Content-Signal: none in this crawler's group");
    }
    for s in &applied.signals {
        println!(
            "  Content-Signal, line {} (in the group at line {}): {}",
            s.line,
            s.group.unwrap_or(0),
            super::human(&show(&s.entries))
        );
        for e in s.entries.iter().filter(|e| e.key == "use") {
            match rules::prefs::use_meaning(&e.value) {
                Some(means) => println!(
                    "    use={}: {means} (Cloudflare's Content Signals Policy; a key it marks as testing)",
                    super::human(&e.value)
                ),
                None => println!("    use={}: not a value the policy defines, so ignored", super::human(&e.value)),
            }
        }
    }
    if !prefs.usages.is_empty() {
        println!("  Content-Usage, read as {AIPREF_ATTACH} and {AIPREF_VOCAB}:");
    }
    if !fetchable && !prefs.usages.is_empty() {
        println!(
            "    none apply: the group disallows this path, and preferences apply only to paths a crawler may fetch"
        );
    } else if applied.usages.is_empty() && !prefs.usages.is_empty() {
        println!("    no rule of this crawler's group matches this path");
    }
    for u in &applied.usages {
        let path = match &u.path {
            Some(p) => format!("path {}, the longest that matches", super::human(p)),
            None => "no path: it covers every path".to_string(),
        };
        let said = match &u.junk {
            Some(junk) => format!("{} (states nothing)", super::human(junk)),
            None => super::human(&show(&u.entries)).into_owned(),
        };
        println!("    line {} ({path}): {said}", u.line);
    }
    if fetchable && !prefs.usages.is_empty() {
        for (key, stated) in &applied.usage {
            let note = match stated {
                rules::prefs::Stated::Unknown => {
                    " (no statement; the vocabulary has no parent category to fall back on)"
                }
                _ => "",
            };
            println!("    {key}: {}{note}", stated.as_str());
        }
        let said = |k: &str| applied.usage.iter().find(|(key, _)| *key == k).map(|(_, s)| *s);
        let disallows_ai = [said("train-ai"), said("ai-use")].contains(&Some(rules::prefs::Stated::Disallowed));
        if said("search") == Some(rules::prefs::Stated::Allowed) && disallows_ai {
            println!("    note: {}", rules::prefs::SEARCH_OVERRIDES);
        }
    }
    for l in &applied.licenses {
        println!("  License, line {}: {}", l.line, super::human(&l.url));
    }
}

/// Google's crawler's own reading, where it differs from the library's.
fn crawler_reading(robots: &Robots, agent: &str, url: &str) {
    let Some(both) = rules::reading::readings(robots, agent, url).filter(|b| b.differ()) else { return };
    let v = both.crawler;
    // The reading's name, without the list the constant carries: the
    // `why` line says what differs for this crawler.
    println!("Google's crawlers, as Google documents them, read it otherwise:");
    match v.group {
        None => println!("  group:    none (no group names this crawler, and it ignores `*`)"),
        Some(g) => {
            let lines: Vec<String> = g.lines.iter().map(u32::to_string).collect();
            let which = if g.global { "the * group" } else { "a named group" };
            println!("  group:    {which}, starting at line {}", lines.join(", "));
        }
    }
    println!("  verdict:  {}", if v.allowed { "ALLOWED" } else { "DISALLOWED" });
    println!("  because:  {}", super::human(&v.to_string()));
    println!("  why:      {}", both.why);
}

pub fn run(path: &Path, agent: &str, url: &str) -> anyhow::Result<ExitCode> {
    let body = super::read_robots(path)?;
    let robots = Robots::parse(&body);
    let prepared = robots.agent(agent);
    let target = rules::target::path_of(url.as_bytes());
    println!("reading:  {}", rules::reading::LIBRARY);
    println!("crawler:  {}", super::human(agent));
    println!("path:     {}", super::human(&String::from_utf8_lossy(&target)));
    match prepared.group() {
        None => {
            println!("group:    none (no group names this crawler and there is no `User-agent: *`)")
        }
        Some(g) => {
            let lines: Vec<String> = g.lines.iter().map(u32::to_string).collect();
            let which = if g.global { "the * group" } else { "this crawler's group" };
            println!("group:    {which}, starting at line {}", lines.join(", "));
        }
    }
    let hits = prepared.matching_rules(&target);
    if hits.is_empty() {
        println!("matched:  no rule");
    } else {
        println!("matched (longest first; Allow wins ties):");
        for r in &hits {
            let note = if r.pattern.is_empty() { "  (empty: never decides)" } else { "" };
            println!("  priority {:>4}  {}{note}", r.priority(), super::human(&r.to_string()));
        }
    }
    let v = prepared.check_path(&target);
    println!("verdict:  {}", if v.allowed { "ALLOWED" } else { "DISALLOWED" });
    println!("because:  {}", super::human(&v.to_string()));
    crawler_reading(&robots, agent, url);
    preferences(&body, prepared.group().map_or(&[][..], |g| g.lines), &target, v.allowed);
    Ok(if v.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
