//! `robots lint`: the whole lint (the engine's findings and the crawler
//! catalogue's, as the monitor reports them), as text, JSON or SARIF 2.1.0
//! (which CI systems show inline); exit code 1 when any finding is an error.

use std::path::PathBuf;
use std::process::ExitCode;

use robotsgate_crawlers::Catalogue;
use rules::lint::{Code, Diagnostic, Severity};
use serde_json::{Value, json};

/// Output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `file:line:column: severity[code]: message`, then the hint.
    Text,
    /// One JSON array of findings.
    Json,
    /// A SARIF 2.1.0 log.
    Sarif,
}

pub fn run(paths: &[PathBuf], format: Format, sitemaps: &[String]) -> anyhow::Result<ExitCode> {
    let mut all: Vec<(String, Vec<Diagnostic>)> = Vec::new();
    for path in paths {
        let body = super::read_robots(path)?;
        all.push((path.display().to_string(), robotsgate_crawlers::lint::all(&body, Catalogue::builtin())));
    }
    match format {
        Format::Text => {
            for (name, found) in &all {
                for d in found {
                    println!("{name}:{d}");
                    if !d.hint.is_empty() {
                        println!("    hint: {}", d.hint);
                    }
                }
                let count = |s| found.iter().filter(|d| d.severity == s).count();
                println!(
                    "{name}: {}, {}, {}",
                    crate::diff::plural(count(Severity::Error), "error", "errors"),
                    crate::diff::plural(count(Severity::Warning), "warning", "warnings"),
                    crate::diff::plural(count(Severity::Info), "note", "notes")
                );
            }
        }
        Format::Json => {
            let list: Vec<Value> =
                all.iter().flat_map(|(name, found)| found.iter().map(move |d| to_json(name, d))).collect();
            println!("{}", serde_json::to_string_pretty(&list)?)
        }
        Format::Sarif => println!("{}", serde_json::to_string_pretty(&sarif(&all))?),
    }
    let mut errors = all.iter().flat_map(|(_, f)| f).any(|d| d.severity == Severity::Error);
    if !sitemaps.is_empty() {
        errors |= check_sitemaps(paths, sitemaps)?;
    }
    Ok(if errors { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `--sitemap`: each sitemap's findings, then for each robots.txt the
/// listed URLs it disallows for a search crawler, grouped by deciding line
/// ([`rules::sitemap`], as the monitor and the gate count them). True when
/// a sitemap is unreadable or a listed URL is disallowed.
fn check_sitemaps(paths: &[PathBuf], sources: &[String]) -> anyhow::Result<bool> {
    let listed = crate::sitemap::load(sources)?;
    listed.print();
    let agents = crate::sitemap::search_crawlers();
    let mut bad = listed.has_error();
    for path in paths {
        let body = super::read_robots(path)?;
        let policy = rules::Policy::from_fetch(&rules::FetchOutcome::status(200).with_body(body));
        let found = rules::sitemap::conflicts(None, &policy, &listed.urls, &agents);
        let name = path.display();
        if found.is_clear() {
            println!("{name}: {}", found.summary("search crawlers"));
            continue;
        }
        bad = true;
        for g in &found.groups {
            println!("{name}: error[sitemap-disallowed]: {}", g.sentence(found.listed, "search crawlers"));
            for url in &g.sample {
                println!("    {url}");
            }
        }
    }
    Ok(bad)
}

fn to_json(file: &str, d: &Diagnostic) -> Value {
    json!({
        "file": file,
        "line": d.line,
        "column": d.column,
        "severity": d.severity.as_str(),
        "code": d.code.as_str(),
        "message": d.message,
        "hint": d.hint,
    })
}

fn sarif(files: &[(String, Vec<Diagnostic>)]) -> Value {
    let level = |s: Severity| match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    };
    let rules: Vec<Value> = Code::ALL.iter().map(|c| json!({ "id": c.as_str(), "name": format!("{c:?}") })).collect();
    let results: Vec<Value> = files
        .iter()
        .flat_map(|(file, found)| found.iter().map(move |d| (file, d)))
        .map(|(file, d)| {
            json!({
                "ruleId": d.code.as_str(),
                "level": level(d.severity),
                "message": { "text": if d.hint.is_empty() { d.message.clone() } else { format!("{}. Hint: {}.", d.message.trim_end_matches('.'), d.hint.trim_end_matches('.')) } },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": file },
                        "region": { "startLine": d.line, "startColumn": d.column }
                    }
                }]
            })
        })
        .collect();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": { "driver": { "name": "robots lint", "informationUri": "https://www.rfc-editor.org/rfc/rfc9309", "rules": rules } },
            "results": results
        }]
    })
}
