//! The read-only commands: `history`, `show`, `diff` and `test`, printed
//! for people at a terminal.

use std::fmt::Write as _;

use anyhow::{Context, bail};
use rules::{FetchOutcome, Policy};

use crate::monitor::Monitor;
use crate::source::Validators;

fn when(ms: i64) -> String {
    crate::clock::when(Some(ms))
}

/// `history SITE`: every state, and with `url`/`agent` the moments that
/// verdict changed ("when did /checkout become blocked for Googlebot?").
pub async fn history(m: &Monitor, site: &str, url: Option<&str>, agent: Option<&str>) -> anyhow::Result<String> {
    m.site(site).with_context(|| format!("no site named `{site}` in the config"))?;
    let states = m.store().history(site).await?;
    let mut out = String::new();
    // History from before monitoring, with where it came from.
    if (url, agent) == (None, None) {
        let first = states.first().map_or(i64::MAX, |s| s.at);
        for i in robotsgate_history::imported::imported(m.store().pool(), site).await? {
            let what =
                i.revision_id.map_or_else(|| format!("no file ({})", i.status.unwrap_or(404)), |r| format!("rev {r}"));
            let note = if i.at < first { "" } else { " (after monitoring began: the monitor's states stand)" };
            writeln!(out, "{}  imported {what} from {}{note}", when(i.at), i.source)?;
        }
    }
    if states.is_empty() {
        writeln!(out, "{site}: nothing recorded yet")?;
        return Ok(out);
    }
    match (url, agent) {
        (Some(url), Some(agent)) => {
            // A URL and crawler the sets record are read back; any other is
            // judged again on each state's stored revision, so that every
            // URL has its history.
            let mut last: Option<bool> = None;
            let mut judged_again = false;
            let mut lines = String::new();
            let mut policies: std::collections::HashMap<i64, Policy> = std::collections::HashMap::new();
            let target = [crate::change::Target { url: url.to_string(), expect: None }];
            for s in &states {
                let verdicts = m.store().verdicts(s.id).await?;
                let v = match verdicts.into_iter().find(|v| v.url == url && v.agent == agent) {
                    Some(v) => v,
                    None => {
                        judged_again = true;
                        let policy = match (s.revision_id, s.policy.as_str()) {
                            (Some(rev), _) => {
                                if let std::collections::hash_map::Entry::Vacant(e) = policies.entry(rev) {
                                    e.insert(Policy::Rules(rules::Robots::parse(&show(m, site, rev).await?)));
                                }
                                &policies[&rev]
                            }
                            (None, "allow-all") => &Policy::AllowAll(rules::Reason::ClientError(404)),
                            (None, "disallow-all") => &Policy::DisallowAll(rules::Reason::ServerError(503)),
                            _ => continue,
                        };
                        let mut judged = crate::change::verdicts(policy, &target, &[agent.to_string()]);
                        let Some(v) = judged.pop() else { continue };
                        v
                    }
                };
                if last != Some(v.allowed) {
                    let why = v.rule.clone().or_else(|| s.reason.clone()).unwrap_or_else(|| "no rule".into());
                    let verb = if v.allowed { "allowed" } else { "BLOCKED" };
                    writeln!(lines, "{}  {verb:<8} {agent} {url}  ({why})", when(s.at))?;
                    last = Some(v.allowed);
                }
            }
            if judged_again {
                writeln!(out, "{url} for {agent} is in no saved URL set of {site}: judged on each stored revision")?;
            }
            out.push_str(&lines);
        }
        (None, None) => {
            for s in &states {
                let verdicts = m.store().verdicts(s.id).await?;
                let blocked = verdicts.iter().filter(|v| !v.allowed).count();
                let rev = s.revision_id.map_or("-".to_string(), |r| format!("rev {r}"));
                let reason = s.reason.as_deref().unwrap_or("");
                writeln!(
                    out,
                    "{}  state {:<4} {:<12} {rev:<8} {blocked}/{} blocked  {reason}",
                    when(s.at),
                    s.id,
                    s.policy,
                    verdicts.len()
                )?;
            }
        }
        _ => bail!("give both --url and --agent, or neither"),
    }
    Ok(out)
}

/// `show SITE REV`: a stored revision's bytes.
pub async fn show(m: &Monitor, site: &str, rev: i64) -> anyhow::Result<Vec<u8>> {
    m.store().revision_body(site, rev).await?.with_context(|| format!("site `{site}` has no revision {rev}"))
}

/// `show SITE`: every place crawlers look for the site's robots.txt, as
/// the last polls judged it (`rules::coverage`).
pub async fn places(m: &Monitor, site: &str) -> anyhow::Result<String> {
    let s = m.site(site).with_context(|| format!("no site named `{site}` in the config"))?;
    let rows = crate::places::rows(m.store().pool(), site).await?;
    let mut out = format!("{site}: {} ({})\n", s.source().location(), s.source().how());
    out.push_str(&crate::places::text(&rows));
    let check = crate::sitemaps::latest(m.store().pool(), site).await?;
    out.push_str(&crate::sitemaps::text(check.as_ref()));
    Ok(out)
}

/// `diff SITE [A B]`: the text diff and the verdict flips between two
/// revisions (the last two by default).
pub async fn diff(m: &Monitor, site_name: &str, revs: Option<(i64, i64)>) -> anyhow::Result<String> {
    let site = m.site(site_name).with_context(|| format!("no site named `{site_name}` in the config"))?;
    let (a, b) = match revs {
        Some(ab) => ab,
        None => {
            let all = m.store().revisions(site_name).await?;
            match all.as_slice() {
                [.., x, y] => (x.0, y.0),
                _ => bail!("site `{site_name}` has fewer than two revisions"),
            }
        }
    };
    let (old, new, flips) = revision_pair(m, site, a, b).await?;
    let mut out = similar::TextDiff::from_lines(&*String::from_utf8_lossy(&old), &*String::from_utf8_lossy(&new))
        .unified_diff()
        .context_radius(2)
        .header(&format!("rev {a}"), &format!("rev {b}"))
        .to_string();
    let (urls, agents) = (Monitor::judged(site).len(), m.config().agents_of(site).len());
    writeln!(
        out,
        "\n{} for {} x {}{}",
        crate::words::plural(flips.len() as i64, "verdict flip", "verdict flips"),
        crate::words::plural(urls as i64, "URL", "URLs"),
        crate::words::plural(agents as i64, "crawler", "crawlers"),
        if site.url_sets.is_empty() { " (only /: the site saves no url_sets)" } else { "" }
    )?;
    for f in &flips {
        writeln!(out, "  {}  {}\n    was {}\n    now {}", f.agent, f.url, f.old, f.new)?;
    }
    Ok(out)
}

/// Two revisions of `site` and the verdicts of its saved URLs and crawlers
/// that flip from the first to the second.
pub async fn revision_pair(
    m: &Monitor,
    site: &robotsgate_config::Site,
    a: i64,
    b: i64,
) -> anyhow::Result<(Vec<u8>, Vec<u8>, Vec<rules::Flip>)> {
    let old = show(m, &site.name, a).await?;
    let new = show(m, &site.name, b).await?;
    let policy = |body: &[u8]| Policy::from_fetch(&FetchOutcome::status(200).with_body(body.to_vec()));
    let targets = Monitor::judged(site);
    let urls: Vec<&str> = targets.iter().map(|t| t.url.as_str()).collect();
    let flips = rules::flips(&policy(&old), &policy(&new), &urls, m.config().agents_of(site));
    Ok((old, new, flips))
}

/// `fetches SITE`: one line per UTC day of the last `days` with fetches:
/// how many, each outcome with its count (worst first), and the slowest.
pub async fn fetches(m: &Monitor, site: &str, days: u32) -> anyhow::Result<String> {
    m.site(site).with_context(|| format!("no site named `{site}` in the config"))?;
    let today = crate::clock::now_ms().div_euclid(crate::store::DAY_MS);
    let from = (today - i64::from(days.max(1)) + 1) * crate::store::DAY_MS;
    let mut out = String::new();
    let rows = m.store().fetch_days(site, from).await?;
    if rows.is_empty() {
        let window = if days <= 1 { "today (UTC)".to_string() } else { format!("in the last {days} UTC days") };
        writeln!(out, "{site}: no fetches {window}")?;
    }
    for mut d in rows {
        // Errors and 5xx first: what an operator looks for.
        d.outcomes.sort_by_key(|(o, _)| std::cmp::Reverse(outcome_rank(o)));
        let outcomes: Vec<String> = d.outcomes.iter().map(|(o, n)| format!("{o} x{n}")).collect();
        let date = &when(d.day * crate::store::DAY_MS)[..10];
        writeln!(out, "{date}  {:>6} fetches  slowest {:>6} ms  {}", d.fetches, d.slowest_ms, outcomes.join(", "))?;
    }
    Ok(out)
}

/// How bad an outcome is for crawling: transport errors and 5xx block it,
/// 429 slows it, 4xx opens it, 2xx and 3xx are normal.
fn outcome_rank(outcome: &str) -> u8 {
    match outcome.parse::<u16>() {
        Ok(s) if s >= 500 => 4,
        Ok(429) => 3,
        Ok(s) if s >= 400 => 2,
        Ok(_) => 1,
        Err(_) => 5,
    }
}

/// `test SITE`: fetches now (recording nothing) and prints today's verdict
/// for every URL and crawler.
pub async fn test(m: &Monitor, site_name: &str) -> anyhow::Result<String> {
    let site = m.site(site_name).with_context(|| format!("no site named `{site_name}` in the config"))?;
    let obs = m.observe(site, &Validators::default()).await;
    let policy = Policy::from_fetch(&obs.outcome);
    let agents = m.config().agents_of(site);
    let mut out = String::new();
    let status = obs.outcome.status.map_or_else(|| format!("{:?}", obs.outcome.error), |s| s.to_string());
    writeln!(
        out,
        "{site_name}: fetched in {} ms, status {status}, policy {}",
        obs.latency.as_millis(),
        policy.label()
    )?;
    if site.url_sets.is_empty() {
        writeln!(
            out,
            "{site_name} saves no URLs to test: only / is judged here. List the pages that matter under `url_sets:` in the config (with `expect:` to pin a verdict)"
        )?;
    }
    for t in Monitor::judged(site) {
        for agent in agents {
            let v = policy.verdict(agent, &t.url);
            let mark = match t.expect.as_ref().and_then(|p| p.of(agent, m.catalogue())) {
                Some(e) if !e.kept_by(v.allowed) => "  <-- breaks expectation",
                _ => "",
            };
            writeln!(out, "{:<10} {agent:<12} {}  {v}{mark}", if v.allowed { "allowed" } else { "DISALLOWED" }, t.url)?;
        }
    }
    Ok(out)
}
