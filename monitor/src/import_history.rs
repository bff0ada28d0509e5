//! `robots-monitor import-history SITE`: a site's robots.txt as it stood
//! before monitoring began, from where people keep it, so that access logs
//! from before then can be judged:
//!
//! - a git repository and the file's path in it: every commit that changed
//!   the file, at its commit time, or the tags that mark deploys (`--tags`);
//! - a folder of dated copies (`robots-2026-11-01.txt`,
//!   `2026-11-01T10:00:00Z.txt`): the date in each file's name;
//! - the Internet Archive's CDX API (`--archive BASE`), in its documented
//!   JSON form: every capture of the site's robots.txt that differs from
//!   the one before.
//!
//! Each state keeps its source (`history/src/imported.rs`). Importing the
//! same history twice adds nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::Monitor;

/// Where the history comes from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A git repository.
    Git {
        /// The repository.
        repo: PathBuf,
        /// The file's path in it.
        path: String,
        /// Only tags matching this pattern (`v*`, `deploy-*`), at their times.
        tags: Option<String>,
    },
    /// A folder of dated copies.
    Dir(PathBuf),
    /// The Internet Archive's CDX API at `base` (`https://web.archive.org`).
    Archive {
        /// The archive's base URL.
        base: String,
        /// The robots.txt URL captured.
        url: String,
    },
}

/// One state found: when, the body (`None`: no file), and its source.
type Found = (i64, Option<Vec<u8>>, String);

/// What an import did.
#[derive(Debug, Default)]
pub struct Report {
    /// States found.
    pub found: usize,
    /// Of them, new to the database.
    pub new: usize,
    /// The oldest and newest (Unix ms).
    pub span: Option<(i64, i64)>,
}

/// Imports the history of `site` from `origin`.
pub async fn import(m: &Monitor, site: &str, origin: &Origin) -> anyhow::Result<Report> {
    anyhow::ensure!(m.site(site).is_some(), "no site named `{site}` in the config");
    let mut found = match origin {
        Origin::Git { repo, path, tags } => from_git(repo, path, tags.as_deref())?,
        Origin::Dir(dir) => from_dir(dir)?,
        Origin::Archive { base, url } => from_archive(base, url).await?,
    };
    found.sort_by_key(|(at, _, _)| *at);
    // Consecutive identical states are one.
    found.dedup_by(|b, a| a.1 == b.1);
    let mut report = Report { found: found.len(), ..Report::default() };
    report.span = found.first().zip(found.last()).map(|(a, b)| (a.0, b.0));
    let mut conn = m.store().pool().acquire().await.context("opening the history database")?;
    for (at, body, source) in &found {
        if robotsgate_history::imported::record_imported(&mut conn, site, *at, body.as_deref(), source)
            .await
            .context("recording an imported state")?
        {
            report.new += 1;
        }
    }
    Ok(report)
}

fn git(repo: &Path, args: &[&str]) -> anyhow::Result<std::process::Output> {
    Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .with_context(|| format!("running git in {}", repo.display()))
}

/// The file at `rev`, or `None` where the revision has no such file.
fn git_file(repo: &Path, rev: &str, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let out = git(repo, &["show", &format!("{rev}:{path}")])?;
    Ok(out.status.success().then_some(out.stdout))
}

fn from_git(repo: &Path, path: &str, tags: Option<&str>) -> anyhow::Result<Vec<Found>> {
    let listed = match tags {
        Some(pattern) => git(
            repo,
            &[
                "for-each-ref",
                "--format=%(objectname) %(creatordate:unix) %(refname:short)",
                &format!("refs/tags/{pattern}"),
            ],
        )?,
        None => git(repo, &["log", "--format=%H %ct %h", "--", path])?,
    };
    if !listed.status.success() {
        bail!(
            "{}: not a git repository, or git failed: {}",
            repo.display(),
            String::from_utf8_lossy(&listed.stderr).trim()
        );
    }
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let mut parts = line.split(' ');
        let (Some(rev), Some(secs), Some(name)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let secs: i64 = secs.parse().with_context(|| format!("git gave `{line}`"))?;
        let body = git_file(repo, rev, path)?;
        out.push((secs * 1000, body, format!("git:{}@{name}", repo.display())));
    }
    if out.is_empty() {
        // Where the file is in the repository, if it is anywhere: the hint.
        let found = git(repo, &["log", "--all", "--format=", "--name-only", "--", "*robots.txt"])
            .ok()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).lines().find(|l| !l.is_empty() && *l != path).map(str::to_string)
            })
            .unwrap_or_default();
        let hint = match found {
            Some(elsewhere) => format!("; the repository has `{elsewhere}`: give `--path {elsewhere}`"),
            None => "; give its path in the repository with `--path`".to_string(),
        };
        bail!(
            "{}: no commit touches `{path}`{}{hint}",
            repo.display(),
            tags.map_or(String::new(), |t| format!(" (tags `{t}`)"))
        );
    }
    Ok(out)
}

/// A date in a file name: `2026-11-01`, with an optional time
/// (`T10:00:00`, `_10-00`, `T1000Z`); UTC.
fn date_in(name: &str) -> Option<i64> {
    let b = name.as_bytes();
    let digits = |i: usize, n: usize| -> Option<i64> {
        let s = name.get(i..i + n)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok()).flatten()
    };
    for i in 0..b.len() {
        let (Some(y), Some(mo), Some(d)) = (digits(i, 4), digits(i + 5, 2), digits(i + 8, 2)) else { continue };
        if b.get(i + 4) != Some(&b'-')
            || b.get(i + 7) != Some(&b'-')
            || !(1..=12).contains(&mo)
            || !(1..=31).contains(&d)
        {
            continue;
        }
        let mut j = i + 10;
        let (mut h, mut mi, mut s) = (0, 0, 0);
        if matches!(b.get(j), Some(b'T' | b'_' | b' '))
            && let Some(hh) = digits(j + 1, 2)
        {
            h = hh;
            j += 3;
            let sep = usize::from(matches!(b.get(j), Some(b':' | b'-')));
            if let Some(mm) = digits(j + sep, 2) {
                mi = mm;
                j += sep + 2;
                let sep = usize::from(matches!(b.get(j), Some(b':' | b'-')));
                if let Some(ss) = digits(j + sep, 2) {
                    s = ss;
                }
            }
        }
        let stamp = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
        return robotsgate_compliance::log::parse_rfc3339(&stamp);
    }
    None
}

fn from_dir(dir: &Path) -> anyhow::Result<Vec<Found>> {
    let mut out = Vec::new();
    let mut undated = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        match date_in(&name) {
            Some(at) => {
                let body =
                    std::fs::read(entry.path()).with_context(|| format!("reading {}", entry.path().display()))?;
                out.push((at, Some(body), format!("dir:{}", entry.path().display())));
            }
            None => undated.push(name),
        }
    }
    if !undated.is_empty() {
        undated.sort();
        bail!(
            "{}: no date in the name of {} (name copies like robots-2026-11-01.txt or 2026-11-01T10:00:00Z.txt)",
            dir.display(),
            undated.join(", ")
        );
    }
    if out.is_empty() {
        bail!("{}: no dated copies", dir.display());
    }
    Ok(out)
}

/// A CDX timestamp (`20261101123456`) as Unix ms.
fn cdx_time(ts: &str) -> Option<i64> {
    if ts.len() < 14 || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    robotsgate_compliance::log::parse_rfc3339(&format!(
        "{}-{}-{}T{}:{}:{}Z",
        &ts[0..4],
        &ts[4..6],
        &ts[6..8],
        &ts[8..10],
        &ts[10..12],
        &ts[12..14]
    ))
}

async fn from_archive(base: &str, url: &str) -> anyhow::Result<Vec<Found>> {
    let base = base.trim_end_matches('/');
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .user_agent("robotsgate-monitor (import-history)")
        .build()
        .context("building the HTTP client")?;
    let query = url::Url::parse_with_params(
        &format!("{base}/cdx/search/cdx"),
        [("url", url), ("output", "json"), ("fl", "timestamp,statuscode,digest"), ("collapse", "digest")],
    )
    .with_context(|| format!("`{base}` is not a URL"))?;
    let answer = client.get(query.clone()).send().await.with_context(|| format!("asking {query}"))?;
    anyhow::ensure!(answer.status().is_success(), "{query}: the archive answered {}", answer.status());
    let rows: Vec<Vec<String>> = serde_json::from_slice(&answer.bytes().await.context("reading the CDX answer")?)
        .context("the CDX answer is not its JSON form")?;
    let mut out = Vec::new();
    // The first row names the fields.
    for row in rows.iter().skip(1) {
        let (Some(ts), Some(status)) = (row.first(), row.get(1)) else { continue };
        let Some(at) = cdx_time(ts) else { continue };
        let source = format!("archive:{ts}");
        match status.as_str() {
            "200" => {
                let capture = format!("{base}/web/{ts}id_/{url}");
                let got = client.get(&capture).send().await.with_context(|| format!("fetching {capture}"))?;
                anyhow::ensure!(got.status().is_success(), "{capture}: the archive answered {}", got.status());
                out.push((at, Some(got.bytes().await.context("reading a capture")?.to_vec()), source));
            }
            "404" | "410" => out.push((at, None, source)),
            // Redirects and failures say nothing of the file.
            _ => {}
        }
    }
    if out.is_empty() {
        bail!("{base}: no capture of {url}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_in_names() {
        let at = |n: &str| super::date_in(n);
        assert_eq!(at("robots-2026-11-01.txt"), at("2026-11-01T00:00:00Z.txt"));
        assert_eq!(at("2026-11-01T10:30:00Z.txt").map(|t| t - at("2026-11-01.txt").unwrap()), Some(37_800_000));
        assert_eq!(at("robots_2026-11-01_10-30.txt").map(|t| t - at("2026-11-01.txt").unwrap()), Some(37_800_000));
        assert_eq!(at("robots.txt"), None);
        assert_eq!(at("2026-13-01.txt"), None);
        assert_eq!(super::cdx_time("20261101103000").map(|t| t - at("2026-11-01.txt").unwrap()), Some(37_800_000));
    }
}
