//! An importer for the community list of AI crawlers kept by the
//! ai.robots.txt project (`robots.json`): an object keyed by User-Agent
//! token, each value with `operator` (often a Markdown link), `respect`
//! ("Yes", "No", or prose), `function`, `frequency` and `description`.
//!
//! The list says what a crawler is for in prose, so the purpose is read
//! from `function` and `description` by keywords; it says nothing about how
//! to verify a crawler, so imported entries are unverifiable until an
//! operator entry (built-in or in the config) says otherwise.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{Catalogue, Crawler, Groups, Purpose, Verify};

/// Where imported entries say they come from.
pub const SOURCE: &str = "https://github.com/ai-robots-txt/ai.robots.txt (robots.json)";

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    operator: String,
    #[serde(default)]
    respect: String,
    #[serde(default)]
    function: String,
    #[serde(default)]
    description: String,
}

/// Why a `robots.json` could not be imported.
#[derive(Debug, thiserror::Error)]
#[error("robots.json: {0}")]
pub struct ImportError(String);

/// The entries of `json` that `known` does not list already, as catalogue
/// entries, in token order. Tokens that are not product tokens (with
/// spaces, say) are skipped.
pub fn ai_robots_txt(json: &str, known: &Catalogue) -> Result<Vec<Crawler>, ImportError> {
    let list: BTreeMap<String, Entry> = serde_json::from_str(json).map_err(|e| ImportError(e.to_string()))?;
    let mut out = Vec::new();
    for (token, e) in list {
        let valid = !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid || known.get(&token).is_some() {
            continue;
        }
        let (operator, link) = markdown_link(&e.operator);
        out.push(Crawler {
            token,
            user_agents: Vec::new(),
            operator: if operator.is_empty() { "unknown".to_string() } else { operator },
            purpose: purpose(&format!("{} {}", e.function, e.description)),
            obeys: e.respect.trim_start().to_ascii_lowercase().starts_with("yes"),
            sends: true,
            groups: Groups::Own,
            verify: Verify::default(),
            source: link.map_or_else(|| SOURCE.to_string(), |l| format!("{l} (via {SOURCE})")),
            purpose_source: Some(SOURCE.to_string()),
            robots_cache: None,
            robots_cache_source: None,
            crawl_delay: false,
        });
    }
    Ok(out)
}

/// `[name](url)` as name and url; anything else as itself.
fn markdown_link(s: &str) -> (String, Option<String>) {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('[')
        && let Some((name, tail)) = rest.split_once("](")
        && let Some(url) = tail.strip_suffix(')')
    {
        return (name.trim().to_string(), Some(url.trim().to_string()));
    }
    (s.to_string(), None)
}

/// The purpose a prose description names, by keywords, most specific first.
fn purpose(prose: &str) -> Purpose {
    let p = prose.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| p.contains(w));
    if has(&["train", "training", "dataset", "llm", "language model"]) {
        Purpose::AiTraining
    } else if has(&["user prompt", "user request", "on behalf", "user-initiated", "when a user", "assistant"]) {
        Purpose::UserFetch
    } else if has(&["search", "answer", "retriev", "citation"]) {
        Purpose::AiSearch
    } else if has(&["archive"]) {
        Purpose::Archive
    } else if has(&["seo", "backlink"]) {
        Purpose::SeoTool
    } else {
        Purpose::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
        "GPTBot": {"operator": "[OpenAI](https://openai.com/gptbot)", "respect": "Yes", "function": "Scrapes data to train OpenAI's products.", "frequency": "", "description": ""},
        "ExampleTrainer": {"operator": "[Example Labs](https://example.com/bot)", "respect": "Yes", "function": "Collects data to train language models.", "frequency": "", "description": ""},
        "Example-User": {"operator": "Example Inc.", "respect": "No", "function": "Fetches pages when a user asks the assistant.", "frequency": "", "description": ""},
        "ExampleSearch": {"operator": "Example", "respect": "Unclear at this time.", "function": "AI search engine answers.", "frequency": "", "description": ""},
        "Not a token": {"operator": "x", "respect": "Yes", "function": "", "frequency": "", "description": ""}
    }"#;

    #[test]
    fn imports_new_entries_with_their_purpose() {
        let got = ai_robots_txt(SAMPLE, Catalogue::builtin()).unwrap();
        let tokens: Vec<_> = got.iter().map(|c| c.token.as_str()).collect();
        assert_eq!(tokens, ["Example-User", "ExampleSearch", "ExampleTrainer"], "GPTBot is known; bad tokens skipped");
        let trainer = &got[2];
        assert_eq!(
            (trainer.purpose, trainer.obeys, trainer.operator.as_str()),
            (Purpose::AiTraining, true, "Example Labs")
        );
        assert!(trainer.source.starts_with("https://example.com/bot"));
        assert_eq!((got[0].purpose, got[0].obeys), (Purpose::UserFetch, false));
        assert_eq!((got[1].purpose, got[1].obeys), (Purpose::AiSearch, false));
        // The imported entries make a valid catalogue with the built-in one.
        let all = Catalogue::builtin().with(&got, "test").unwrap();
        assert_eq!(all.claimed_by("ExampleTrainer/1.0").unwrap().operator, "Example Labs");
    }

    #[test]
    fn a_bad_file_is_an_error() {
        assert!(ai_robots_txt("[1, 2]", Catalogue::builtin()).is_err());
        assert!(ai_robots_txt("{", Catalogue::builtin()).is_err());
    }
}
