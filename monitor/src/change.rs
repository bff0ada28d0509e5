//! What a change of state means and what to tell people about it: the state
//! key that says whether anything changed, the verdict table recorded for
//! every state, and the one alert (subject, text, HTML) sent per change.

use std::fmt::Write as _;

use rules::flip::Decision;
use rules::gate::Expect;
use rules::lint::Severity;
use rules::{Flip, Policy, Reason};

use crate::excerpt;
use crate::letter::{self, esc};
use crate::store::VerdictRow;
use crate::words::plural;

/// One URL to test, with its pinned verdict if any.
#[derive(Clone, Debug)]
pub struct Target {
    /// The URL (or path).
    pub url: String,
    /// The verdicts it must keep, by crawler or purpose.
    pub expect: Option<robotsgate_config::Pins>,
}

/// The key that identifies what crawlers obey. Equal keys mean no change:
/// new bytes, or a new policy class (`disallow-all:5xx`), are a change; a
/// 503 turning into a 502 is not. `body_hash` is the hash of the rules'
/// body (see `store::body_hash`).
pub fn state_key(policy: &Policy, body_hash: &str) -> String {
    match policy {
        Policy::Rules(_) => format!("rules:{body_hash}"),
        Policy::AllowAll(r) => format!("allow-all:{}", reason_class(r)),
        Policy::DisallowAll(r) => format!("disallow-all:{}", reason_class(r)),
    }
}

/// Rebuilds a rule-less policy from its stored key and the status of the
/// fetch that began it, for the first change after a restart (or the next
/// `once`). Without that fetch (pruned by `fetch_retention`) the status is
/// the class's representative (a `disallow-all:5xx` comes back as a 500);
/// only `allowed` matters for flips, the status for what the mail says.
pub fn policy_from_key(key: &str, status: Option<u16>) -> Option<Policy> {
    let (kind, class) = key.split_once(':')?;
    let within = |range: std::ops::RangeInclusive<u16>, or: u16| status.filter(|s| range.contains(s)).unwrap_or(or);
    let reason = match class {
        "4xx" => Reason::ClientError(within(400..=499, 404)),
        "redirects" => Reason::TooManyRedirects(rules::fetch::MAX_REDIRECTS + 1),
        "5xx" => Reason::ServerError(within(500..=599, 500)),
        "429" => Reason::TooManyRequests,
        "status" => Reason::UnexpectedStatus(status.unwrap_or(0)),
        "unreachable" => Reason::Unreachable(rules::TransportError::Other),
        "fallback" => Reason::FailingWithoutCopy,
        _ => return None,
    };
    match kind {
        "allow-all" => Some(Policy::AllowAll(reason)),
        "disallow-all" => Some(Policy::DisallowAll(reason)),
        _ => None,
    }
}

fn reason_class(r: &Reason) -> &'static str {
    match r {
        Reason::ClientError(_) => "4xx",
        Reason::TooManyRedirects(_) | Reason::UnfollowedRedirect(_) => "redirects",
        Reason::ServerError(_) => "5xx",
        Reason::TooManyRequests => "429",
        Reason::UnexpectedStatus(_) => "status",
        Reason::Unreachable(_) => "unreachable",
        Reason::FailingWithoutCopy => "fallback",
    }
}

/// The rule that decided a verdict as written (`Disallow: /private`), as
/// the stored verdicts, the console and the tester show it.
pub fn rule_text(v: &rules::Verdict<'_>) -> Option<String> {
    v.rule.map(|r| format!("{}: {}", r.kind, String::from_utf8_lossy(r.written)))
}

/// The verdict of every target for every crawler under `policy`.
pub fn verdicts(policy: &Policy, targets: &[Target], agents: &[String]) -> Vec<VerdictRow> {
    let mut out = Vec::with_capacity(targets.len() * agents.len());
    for t in targets {
        for agent in agents {
            let v = policy.verdict(agent, &t.url);
            out.push(VerdictRow {
                url: t.url.clone(),
                agent: agent.clone(),
                allowed: v.allowed,
                line: v.rule.map(|r| i64::from(r.line)),
                rule: rule_text(&v),
            });
        }
    }
    out.sort_by(|a, b| (&a.url, &a.agent).cmp(&(&b.url, &b.agent)));
    out
}

/// Everything about one change that may deserve an alert.
#[derive(Debug)]
pub struct Change<'a> {
    /// The site's name.
    pub site: &'a str,
    /// Where its robots.txt lives.
    pub location: &'a str,
    /// The policy before, if there was one.
    pub old: Option<&'a Policy>,
    /// The policy now.
    pub new: &'a Policy,
    /// The body before and now, when both were files.
    pub old_body: Option<&'a [u8]>,
    /// The body now.
    pub new_body: Option<&'a [u8]>,
    /// Redirects followed by the fetch.
    pub redirects: usize,
    /// The body was larger than the fetcher keeps.
    pub truncated: bool,
    /// Verdicts that flipped.
    pub flips: &'a [Flip],
    /// URLs and crawlers that break their pinned verdict now.
    pub broken: Vec<(String, String, Expect)>,
    /// An outage is critical as it starts (`critical_after` is zero);
    /// otherwise it starts as a warning and [`escalation`] follows.
    pub outage_critical: bool,
    /// The console's public address, for links in the alert.
    pub console: Option<&'a str>,
    /// Where the file now says otherwise than the site's AI policy
    /// (`proxy.ai_policy`) and did not before.
    pub ai_policy: Vec<String>,
    /// What the change breaks of the site's pins and floor
    /// ([`rules::gate::breaches`]), and what the gate does with it.
    pub gate: Option<GateNote>,
}

/// A change the gate judges broken.
#[derive(Debug)]
pub struct GateNote {
    /// What it breaks.
    pub breaches: Vec<rules::gate::Breach>,
    /// True when robots-proxy fronts the site with `gate: hold`: the change
    /// is held at the edge. False: it is served (`gate: warn`, or no gateway).
    pub held: bool,
}

impl GateNote {
    /// The sentence the alert opens with.
    pub fn sentence(&self) -> String {
        let what = rules::gate::summary(&self.breaches);
        if self.held {
            format!(
                "A change to robots.txt is held at the edge: {what}. Crawlers keep the last good copy until it is released."
            )
        } else {
            format!("This change to robots.txt would have been held at the edge: {what}.")
        }
    }
}

/// What the gate says of a change from `old` to `new` on `site` with its
/// `pins` (`Site::pins`), judged as robots-proxy judges it; `None` when it
/// breaks nothing or the site's gate is off.
pub fn gate_note(
    site: &robotsgate_config::Site,
    pins: &[rules::gate::Pin],
    catalogue: &robotsgate_crawlers::Catalogue,
    old: Option<&Policy>,
    new: &Policy,
) -> Option<GateNote> {
    let old = old?;
    if site.gate == robotsgate_config::GateMode::Off {
        return None;
    }
    let breaches = rules::gate::breaches(old, new, pins, &site.floor(catalogue));
    if breaches.is_empty() {
        return None;
    }
    Some(GateNote { breaches, held: site.proxy.is_some() && site.gate == robotsgate_config::GateMode::Hold })
}

/// The contradictions of the site's AI policy that `new` has and `old` had
/// not, compared without their line numbers (an edit elsewhere moves them).
pub fn ai_contradictions(
    settings: Option<&robotsgate_config::AiPolicySettings>,
    catalogue: &robotsgate_crawlers::Catalogue,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Vec<String> {
    let (Some(settings), Some(new)) = (settings, new) else { return Vec::new() };
    let policy = settings.policy();
    let denied = catalogue.denied_senders(&policy);
    let unlined = |c: &String| match c.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((_, rest)) => rest.to_string(),
        None => c.clone(),
    };
    let before: Vec<String> =
        old.map(|b| policy.contradictions(&denied, b)).unwrap_or_default().iter().map(unlined).collect();
    policy.contradictions(&denied, new).into_iter().filter(|c| !before.contains(&unlined(c))).collect()
}

/// Renders the alert for a change, or `None` when nothing in it is worth
/// an email (content changed but no verdict moved and nothing is wrong).
pub fn alert(c: &Change<'_>) -> Option<(String, String, String)> {
    let mut events: Vec<String> = Vec::new();
    if let Some(g) = &c.gate {
        events.push(g.sentence());
    }
    let was_blocked = c.old.is_some_and(Policy::blocks_everything);
    match c.new {
        Policy::DisallowAll(r) if !was_blocked => events.push(format!("Crawling is blocked: {r}.")),
        Policy::AllowAll(
            r @ (Reason::ClientError(_) | Reason::TooManyRedirects(_) | Reason::UnfollowedRedirect(_)),
        ) => events.push(format!("Every URL is now open to crawlers: {r}.")),
        _ => {}
    }
    if was_blocked && !c.new.blocks_everything() {
        events.push("Recovered: robots.txt answers again and crawling is no longer blocked.".into());
    }
    if c.redirects > rules::fetch::MAX_REDIRECTS {
        events.push(format!("robots.txt redirected {} times; Google gives up after 5.", c.redirects));
    }
    let size = c.new_body.map_or(0, <[u8]>::len);
    if c.truncated || size > rules::parse::MAX_FILE_BYTES {
        events.push(format!(
            "robots.txt is larger than 500 KiB ({}{size} bytes kept); Google ignores every rule past 500 KiB.",
            if c.truncated { "at least " } else { "" }
        ));
    }
    let new_errors = c.new_body.map(lint_errors).unwrap_or_default();
    let old_errors = c.old_body.map(lint_errors).unwrap_or_default();
    let fresh_errors: Vec<&String> = new_errors.iter().filter(|e| !old_errors.contains(e)).collect();
    if !fresh_errors.is_empty() {
        events.push(format!("{} in robots.txt.", plural(fresh_errors.len(), "new lint error", "new lint errors")));
    }
    if !c.flips.is_empty() {
        events.push(format!("{}.", plural(c.flips.len(), "verdict flipped", "verdicts flipped")));
    }
    if let Some(first) = c.ai_policy.first() {
        let more = match c.ai_policy.len() {
            1 => String::new(),
            n => format!(" (and {} more)", plural(n - 1, "other", "others")),
        };
        events.push(format!("robots.txt now contradicts the site's AI policy: {first}{more}."));
    }
    if let Some((url, agent, expect)) = c.broken.first() {
        let more = match c.broken.len() {
            1 => String::new(),
            n => format!(" (and {} more)", plural(n - 1, "URL and crawler pair", "URL and crawler pairs")),
        };
        events.push(format!("{url} is {} for {agent}, expected {}{more}.", opposite(*expect), expectation(*expect)));
    }
    if events.is_empty() {
        return None;
    }

    let headline = if let Some(g) = &c.gate {
        if g.held { "change held at the edge".to_string() } else { "change would have been held".to_string() }
    } else if c.new.blocks_everything() && !was_blocked {
        "crawling blocked".to_string()
    } else if was_blocked && !c.new.blocks_everything() {
        "recovered".to_string()
    } else if !c.flips.is_empty() {
        plural(c.flips.len(), "verdict flipped", "verdicts flipped")
    } else {
        lower_first(events[0].trim_end_matches('.'))
    };
    let subject = format!("[robotsgate] {}: {headline}", c.site);

    let diff = match (c.old_body, c.new_body) {
        (Some(a), Some(b)) if a != b => Some(excerpt::diff(c.site, a, b)),
        (None, Some(b)) if !excerpt::is_text(b) => Some(format!("robots.txt is {}\n", excerpt::describe_binary(b))),
        _ => None,
    };
    // Every list and line below is cut (see `excerpt`), so that the mail
    // stays small whatever the change.
    let short = |s: &str| excerpt::line(s, excerpt::LINE_CHARS);
    let (flips, more_flips) = excerpt::list(c.flips);
    let (broken, more_broken) = excerpt::list(&c.broken);
    let (fresh_errors, more_errors) = excerpt::list(&fresh_errors);

    let first = first_line(c, &events);
    // The gate's sentence is the first line: not said again in the list.
    let headline = c.gate.as_ref().map(GateNote::sentence);
    let listed: Vec<&String> = events.iter().filter(|e| Some(*e) != headline.as_ref()).collect();
    let mut text = String::new();
    let _ = writeln!(text, "{first}\n");
    let _ = writeln!(text, "Site: {} ({})\n", c.site, c.location);
    for e in &listed {
        let _ = writeln!(text, "- {e}");
    }
    // A held change says how to free it, as the gateway-raised alert does.
    let held = c.gate.as_ref().is_some_and(|g| g.held);
    if held {
        let _ = writeln!(text, "\nRelease it: robots-monitor release {}", c.site);
    }
    if !flips.is_empty() {
        let _ = writeln!(text, "\nVerdict flips:");
        for f in flips {
            let (agent, url, old, new) =
                (short(&f.agent), short(&f.url), short(&f.old.to_string()), short(&f.new.to_string()));
            let _ = writeln!(text, "  {agent}  {url}\n    was {old}\n    now {new}");
        }
    }
    if let Some(more) = &more_flips {
        let _ = writeln!(text, "  {more}: `robots-monitor history {}`", c.site);
    }
    if !broken.is_empty() {
        let _ = writeln!(text, "\nExpectations broken:");
        for (url, agent, expect) in broken {
            let _ = writeln!(text, "  {}  {}: expected {}", short(agent), short(url), expectation(*expect));
        }
    }
    if let Some(more) = &more_broken {
        let _ = writeln!(text, "  {more}");
    }
    if !fresh_errors.is_empty() {
        let _ = writeln!(text, "\nLint errors:");
        for e in fresh_errors {
            let _ = writeln!(text, "  {}", short(e));
        }
    }
    if let Some(more) = &more_errors {
        let _ = writeln!(text, "  {more}: `robots lint`");
    }
    if let Some(d) = &diff {
        let _ = writeln!(text, "\nChange to robots.txt:\n{d}");
    }

    // A change of content links to its revision's page, by the body's hash
    // (the revision's id is only known once it is recorded); an outage to
    // the site's page.
    let link = c.console.map(|base| match c.new_body {
        Some(body) => format!("{}/revisions/by-hash/{}", site_link(base, c.site), crate::store::body_hash(body)),
        None => site_link(base, c.site),
    });
    if let Some(link) = &link {
        let _ = writeln!(text, "\nIn the console: {link}");
    }

    let mut html = String::new();
    let _ =
        write!(html, "<p><strong>{}</strong></p><h2>{}</h2><p>{}</p><ul>", esc(&first), esc(c.site), esc(c.location));
    for e in &listed {
        let _ = write!(html, "<li>{}</li>", esc(e));
    }
    html.push_str("</ul>");
    if held {
        let _ = write!(html, "<p>Release it: <code>robots-monitor release {}</code></p>", esc(c.site));
    }
    if !flips.is_empty() {
        html.push_str("<h3>Verdict flips</h3>");
        let rows: Vec<[String; 4]> = flips
            .iter()
            .map(|f| [short(&f.agent), short(&f.url), short(&f.old.to_string()), short(&f.new.to_string())])
            .collect();
        html.push_str(&letter::table(&["Crawler", "URL", "Was", "Now"], &rows));
    }
    if let Some(more) = &more_flips {
        let _ = write!(html, "<p>{}: <code>robots-monitor history {}</code></p>", esc(more), esc(c.site));
    }
    if !broken.is_empty() {
        html.push_str("<h3>Expectations broken</h3><ul>");
        for (url, agent, expect) in broken {
            let _ =
                write!(html, "<li>{} {}: expected {}</li>", esc(&short(agent)), esc(&short(url)), expectation(*expect));
        }
        if let Some(more) = &more_broken {
            let _ = write!(html, "<li>{}</li>", esc(more));
        }
        html.push_str("</ul>");
    }
    if !fresh_errors.is_empty() {
        html.push_str("<h3>Lint errors</h3><ul>");
        for e in fresh_errors {
            let _ = write!(html, "<li>{}</li>", esc(&short(e)));
        }
        if let Some(more) = &more_errors {
            let _ = write!(html, "<li>{}</li>", esc(more));
        }
        html.push_str("</ul>");
    }
    if let Some(d) = &diff {
        let decided = |side: fn(&Flip) -> &Decision| -> Vec<u32> {
            c.flips.iter().filter_map(|f| side(f).rule.as_ref().map(|r| r.line)).collect()
        };
        let _ = write!(
            html,
            "<h3>Change to robots.txt</h3>{}",
            letter::diff_table(d, &decided(|f| &f.old), &decided(|f| &f.new))
        );
    }
    Some((subject, text, letter::page(severity(c), &html, link.as_deref())))
}

/// The console's page of `site`.
fn site_link(base: &str, site: &str) -> String {
    crate::links::site_page(base, site)
}

/// The alert of an outage that outlasted `critical_after`: robots.txt has
/// failed since `since` (Unix ms), and Google has not crawled since.
pub fn escalation(
    site: &str,
    location: &str,
    reason: &str,
    since: i64,
    now: i64,
    console: Option<&str>,
) -> (String, String, String) {
    let minutes = (now - since).max(0) / 60_000;
    let lasted = if minutes >= 120 { format!("{} hours", minutes / 60) } else { plural(minutes, "minute", "minutes") };
    let subject = format!("[robotsgate] {site}: crawling still blocked after {lasted}");
    let first =
        format!("robots.txt has failed for {lasted} ({reason}); Google crawls nothing on the site until it answers.");
    let link = console.map(|base| site_link(base, site));
    let mut text = format!("{first}\n\nSite: {site} ({location})\n");
    if let Some(link) = &link {
        let _ = writeln!(text, "\nIn the console: {link}");
    }
    let inner = format!("<p><strong>{}</strong></p><h2>{}</h2><p>{}</p>", esc(&first), esc(site), esc(location));
    (subject, text, letter::page(robotsgate_config::AlertSeverity::Critical, &inner, link.as_deref()))
}

/// How much a change matters. Critical: Google stops crawling the site
/// (robots.txt now fails with 5xx, 429 or no answer; a warning instead
/// when `critical_after` gives the outage time), a tested crawler may no
/// longer fetch `/`, or the change breaks a pin or the floor (the gate
/// holds it, or would have). Warning: verdicts of saved URLs flipped, or pins
/// broke. Info: anything else worth an alert.
pub fn severity(c: &Change<'_>) -> robotsgate_config::AlertSeverity {
    use robotsgate_config::AlertSeverity;
    let was_blocked = c.old.is_some_and(Policy::blocks_everything);
    let outage = c.new.blocks_everything() && !was_blocked;
    // An outage closes `/` too; it is judged by `critical_after` instead.
    let root_lost = !c.new.blocks_everything()
        && c.flips.iter().any(|f| !f.new.allowed && &*rules::target::path_of(f.url.as_bytes()) == b"/");
    if (outage && c.outage_critical) || root_lost || c.gate.is_some() {
        AlertSeverity::Critical
    } else if outage || !c.flips.is_empty() || !c.broken.is_empty() || !c.ai_policy.is_empty() {
        AlertSeverity::Warning
    } else {
        AlertSeverity::Info
    }
}

/// What happened, in one sentence: the outage as Google reads it, or the
/// first crawler and URL that changed and the line that decided.
fn first_line(c: &Change<'_>, events: &[String]) -> String {
    if let Some(g) = &c.gate {
        return excerpt::line(&g.sentence(), 2 * excerpt::LINE_CHARS);
    }
    if let Policy::DisallowAll(r) | Policy::AllowAll(r) = c.new {
        return excerpt::line(&format!("{r}."), excerpt::LINE_CHARS);
    }
    let Some(f) = c.flips.first() else { return events.first().cloned().unwrap_or_default() };
    let why = match (&f.new.rule, &f.new.reason) {
        (Some(r), _) => format!(" (line {}: {}: {})", r.line, r.kind, r.pattern),
        (None, Some(reason)) => format!(" ({reason})"),
        (None, None) => String::new(),
    };
    let verb = if f.new.allowed { "can now crawl" } else { "can no longer crawl" };
    let more = match c.flips.len() {
        1 => String::new(),
        n => format!("; {}", plural(n - 1, "more verdict changed", "more verdicts changed")),
    };
    excerpt::line(&format!("{} {verb} {}{why}{more}.", f.agent, f.url), 2 * excerpt::LINE_CHARS)
}

fn lint_errors(body: &[u8]) -> Vec<String> {
    rules::lint(body).into_iter().filter(|d| d.severity == Severity::Error).map(|d| d.to_string()).collect()
}

/// "Crawling is blocked" -> "crawling is blocked", leaving URLs and crawler
/// names further on as they are.
fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

fn opposite(e: Expect) -> &'static str {
    match e {
        Expect::Allowed => "disallowed",
        Expect::Disallowed => "allowed",
    }
}

fn expectation(e: Expect) -> &'static str {
    e.as_str()
}

/// URL x crawler pins (see `Site::pins`) whose verdict under `policy`
/// breaks them.
pub fn broken(policy: &Policy, pins: &[rules::gate::Pin]) -> Vec<(String, String, Expect)> {
    pins.iter()
        .filter(|p| !p.expect.kept_by(policy.verdict(&p.agent, &p.url).allowed))
        .map(|p| (p.url.clone(), p.agent.clone(), p.expect))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rules::FetchOutcome;

    fn rules_policy(body: &str) -> Policy {
        Policy::from_fetch(&FetchOutcome::status(200).with_body(body.as_bytes().to_vec()))
    }

    #[test]
    fn keys_change_only_when_crawling_can_change() {
        let p503 = Policy::from_fetch(&FetchOutcome::status(503));
        let p502 = Policy::from_fetch(&FetchOutcome::status(502));
        let p429 = Policy::from_fetch(&FetchOutcome::status(429));
        assert_eq!(state_key(&p503, ""), state_key(&p502, ""));
        assert_ne!(state_key(&p503, ""), state_key(&p429, ""));
        assert_eq!(state_key(&rules_policy(""), "ab"), "rules:ab");
    }

    #[test]
    fn outage_alert_names_flips_and_reason() {
        let old = rules_policy("User-agent: *\nDisallow: /admin\n");
        let new = Policy::from_fetch(&FetchOutcome::status(503));
        let flips = rules::flips(&old, &new, &["https://s/", "https://s/admin"], &["Googlebot"]);
        let c = Change {
            site: "shop",
            location: "https://s/robots.txt",
            old: Some(&old),
            new: &new,
            old_body: None,
            new_body: None,
            redirects: 0,
            truncated: false,
            flips: &flips,
            broken: Vec::new(),
            outage_critical: true,
            console: None,
            ai_policy: Vec::new(),
            gate: None,
        };
        let (subject, text, html) = alert(&c).expect("an outage alerts");
        assert_eq!(subject, "[robotsgate] shop: crawling blocked");
        assert!(
            text.contains("503")
                && text.contains("https://s/")
                && text.contains("1 verdict flipped")
                && !text.contains("1 verdicts"),
            "{text}"
        );
        assert!(html.contains("<table") && html.contains("Googlebot"), "{html}");
    }

    #[test]
    fn quiet_content_change_is_not_alerted() {
        let old = rules_policy("User-agent: *\nDisallow: /admin\n");
        let new = rules_policy("# comment\nUser-agent: *\nDisallow: /admin\n");
        let c = Change {
            site: "shop",
            location: "f",
            old: Some(&old),
            new: &new,
            old_body: Some(b"a"),
            new_body: Some(b"b"),
            redirects: 0,
            truncated: false,
            flips: &[],
            broken: Vec::new(),
            outage_critical: true,
            console: None,
            ai_policy: Vec::new(),
            gate: None,
        };
        assert!(alert(&c).is_none());
    }

    /// A deploy drops the GPTBot group, then a CDN prepends its own signal:
    /// each is an alert against the site's AI policy, with no verdict moved
    /// for the crawlers the monitor tests.
    #[test]
    fn contradicting_the_ai_policy_is_alerted() {
        let settings = robotsgate_config::AiPolicySettings {
            search: robotsgate_config::Stance::Allow,
            ai_search: robotsgate_config::Stance::Allow,
            ai_training: robotsgate_config::Stance::Deny,
            user_fetch: robotsgate_config::Stance::Allow,
            enforce: robotsgate_config::AiEnforce::Off,
            payment_body: None,
            payment_headers: Default::default(),
            retry_after: std::time::Duration::from_secs(60),
        };
        let catalogue = robotsgate_crawlers::Catalogue::builtin();
        let mut blocked = String::from("User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n\n");
        for t in catalogue.denied_senders(&settings.policy()) {
            blocked.push_str(&format!("User-agent: {t}\n"));
        }
        blocked.push_str("Disallow: /\n");
        let dropped = "User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n";
        let prepended = blocked.replace("ai-train=no", "ai-train=yes");
        let found = ai_contradictions(Some(&settings), catalogue, Some(blocked.as_bytes()), Some(dropped.as_bytes()));
        assert!(found.iter().any(|c| c.starts_with("GPTBot may crawl")), "{found:?}");
        let found = ai_contradictions(Some(&settings), catalogue, Some(blocked.as_bytes()), Some(prepended.as_bytes()));
        assert_eq!(found.len(), 1, "{found:?}");
        // Unchanged contradictions are not news, even on another line.
        let moved = format!("# a new first line\n{prepended}");
        assert!(
            ai_contradictions(Some(&settings), catalogue, Some(prepended.as_bytes()), Some(moved.as_bytes()))
                .is_empty()
        );
        assert!(ai_contradictions(None, catalogue, Some(blocked.as_bytes()), Some(dropped.as_bytes())).is_empty());

        let (old, new) = (rules_policy(&blocked), rules_policy(&prepended));
        let c = Change {
            site: "shop",
            location: "f",
            old: Some(&old),
            new: &new,
            old_body: Some(blocked.as_bytes()),
            new_body: Some(prepended.as_bytes()),
            redirects: 0,
            truncated: false,
            flips: &[],
            broken: Vec::new(),
            outage_critical: true,
            console: None,
            ai_policy: found_for(&settings, &blocked, &prepended),
            gate: None,
        };
        let (subject, text, _) = alert(&c).expect("an alert");
        assert!(text.contains("robots.txt now contradicts the site's AI policy"), "{subject}\n{text}");
        assert_eq!(severity(&c), robotsgate_config::AlertSeverity::Warning);
    }

    fn found_for(settings: &robotsgate_config::AiPolicySettings, old: &str, new: &str) -> Vec<String> {
        ai_contradictions(
            Some(settings),
            robotsgate_crawlers::Catalogue::builtin(),
            Some(old.as_bytes()),
            Some(new.as_bytes()),
        )
    }
}
