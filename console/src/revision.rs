//! The revision page: one stored robots.txt against the one before it, as a
//! line diff with the lines that decided a flip marked, the flips of the
//! saved URLs, the lint, and the exact bytes to download.

use askama::Template;
use serde::Serialize;

use monitor::Monitor;
use monitor::clock::when;
use monitor::excerpt;
use monitor::links::encode;

/// Most diff lines shown; the download has the rest.
const MAX_LINES: usize = 3_000;

/// One line of the diff.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DiffLine {
    /// Line number in the older file, if the line is in it.
    pub old: String,
    /// Line number in this revision, if the line is in it.
    pub new: String,
    /// `+`, `-` or a space.
    pub sign: &'static str,
    /// `add`, `del` or `same`.
    pub class: &'static str,
    /// The text, without its line end.
    pub text: String,
    /// A flip's deciding rule is on this line (either side).
    pub decided: bool,
}

/// A flip as shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FlipView {
    /// The crawler.
    pub agent: String,
    /// The URL.
    pub url: String,
    /// The verdict before.
    pub old: String,
    /// The verdict now.
    pub new: String,
}

/// A lint finding as shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FindingView {
    /// 1-based line.
    pub line: u32,
    /// `error`, `warning` or `info`.
    pub severity: &'static str,
    /// What is wrong.
    pub message: String,
}

/// Everything on the revision page.
#[derive(Debug, Serialize, Template, utoipa::ToSchema)]
#[template(path = "revision.html")]
pub struct RevisionPage {
    site: String,
    id: i64,
    previous: Option<i64>,
    /// The revision after it, if any.
    next: Option<i64>,
    first_seen: String,
    size: i64,
    raw_href: String,
    test_href: String,
    flips: Vec<FlipView>,
    binary: bool,
    binary_note: String,
    lines: Vec<DiffLine>,
    more: usize,
    lint: Vec<FindingView>,
}

/// The page for revision `id` of `site`; `None` when there is no such
/// site or revision.
pub async fn page(m: &Monitor, site: &str, id: i64) -> anyhow::Result<Option<RevisionPage>> {
    let Some(config) = m.site(site) else { return Ok(None) };
    let revisions = m.store().revisions(site).await?;
    let Some(at) = revisions.iter().position(|r| r.0 == id) else { return Ok(None) };
    let (_, first_seen, size) = revisions[at];
    let previous = at.checked_sub(1).map(|p| revisions[p].0);
    let next = revisions.get(at + 1).map(|r| r.0);
    let (old, new, flips) = match previous {
        Some(p) => monitor::report::revision_pair(m, config, p, id).await?,
        None => (Vec::new(), monitor::report::show(m, site, id).await?, Vec::new()),
    };
    let decided_old: Vec<u32> = flips.iter().filter_map(|f| f.old.rule.as_ref().map(|r| r.line)).collect();
    let decided_new: Vec<u32> = flips.iter().filter_map(|f| f.new.rule.as_ref().map(|r| r.line)).collect();
    let binary = !excerpt::is_text(&old) || !excerpt::is_text(&new);
    let binary_note = if binary {
        let side = |b: &[u8]| {
            if excerpt::is_text(b) { format!("text, {} bytes", b.len()) } else { excerpt::describe_binary(b) }
        };
        format!("Not shown as text. Before: {}. Now: {}.", side(&old), side(&new))
    } else {
        String::new()
    };
    let mut lines = Vec::new();
    let mut more = 0;
    if !binary {
        let (a, b) = (String::from_utf8_lossy(&old), String::from_utf8_lossy(&new));
        let diff = similar::TextDiff::from_lines(&*a, &*b);
        for change in diff.iter_all_changes() {
            if lines.len() == MAX_LINES {
                more += 1;
                continue;
            }
            let (old_n, new_n) = (change.old_index().map(|i| i + 1), change.new_index().map(|i| i + 1));
            let (sign, class) = match change.tag() {
                similar::ChangeTag::Insert => ("+", "add"),
                similar::ChangeTag::Delete => ("-", "del"),
                similar::ChangeTag::Equal => (" ", "same"),
            };
            let decided = old_n.is_some_and(|n| decided_old.contains(&(n as u32)))
                || new_n.is_some_and(|n| decided_new.contains(&(n as u32)));
            lines.push(DiffLine {
                old: old_n.map(|n| n.to_string()).unwrap_or_default(),
                new: new_n.map(|n| n.to_string()).unwrap_or_default(),
                sign,
                class,
                text: excerpt::line(change.value().trim_end_matches(['\n', '\r']), 2_000),
                decided,
            });
        }
    }
    let lint = m
        .lint(&new)
        .into_iter()
        .map(|d| FindingView { line: d.line, severity: d.severity.as_str(), message: d.message })
        .collect();
    let flips = flips
        .iter()
        .map(|f| FlipView {
            agent: f.agent.clone(),
            url: f.url.clone(),
            old: f.old.to_string(),
            new: f.new.to_string(),
        })
        .collect();
    Ok(Some(RevisionPage {
        site: site.to_string(),
        id,
        previous,
        next,
        first_seen: when(Some(first_seen)),
        size,
        raw_href: format!("/sites/{}/revisions/{id}/raw", encode(site)),
        test_href: format!("/tester?site={}&revision={id}", encode(site)),
        flips,
        binary,
        binary_note,
        lines,
        more,
        lint,
    }))
}
