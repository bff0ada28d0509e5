//! The robots.txt tester: a file, crawlers and URLs in; every verdict with
//! its group and deciding line, the lint, and, against a site's live
//! revision, the verdicts the file would change. It stands in for the tester
//! Google retired in 2023, and answers from the same engine the monitor and
//! the gateway use, so its answers are Google's.

use serde::{Deserialize, Serialize};

use rules::{Policy, Robots};

/// URLs as the form sent them. Bytes that are not UTF-8 (`%E9`, or a raw
/// 0xE9) are kept as the bytes they are, percent-encoded as a crawler sends
/// them and as Google's matcher reads them, rather than replaced by U+FFFD,
/// which would match no rule the bytes match.
pub fn url_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let mut out = String::new();
            for b in e.into_bytes() {
                if b.is_ascii() {
                    out.push(char::from(b));
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            out
        }
    }
}

/// Largest file the tester takes. Google reads 500 KiB; a little more is
/// accepted so that a file past the limit can be tested and linted for it.
pub const MAX_ROBOTS_BYTES: usize = 1024 * 1024;
/// Most crawlers in one test.
pub const MAX_AGENTS: usize = 20;
/// Most URLs in one test.
pub const MAX_URLS: usize = 5_000;
/// Longest URL.
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// Crawlers tested when none are given.
pub const DEFAULT_AGENTS: [&str; 7] =
    ["Googlebot", "bingbot", "OAI-SearchBot", "PerplexityBot", "GPTBot", "ClaudeBot", "ChatGPT-User"];

/// What to test, as a form or a query string sends it: crawlers and URLs
/// one per line (crawlers may also be separated by commas).
///
/// The file is judged byte for byte, as Google's library judges it: a
/// stored revision, an uploaded file and a form's field keep their exact
/// bytes ([`Input::exact`]); JSON, which holds only text, can send them as
/// `robots_b64`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
pub struct Input {
    /// The robots.txt, as text (bytes that are not UTF-8 shown as U+FFFD).
    #[serde(default)]
    pub robots: String,
    /// The robots.txt's exact bytes in standard base64: for files that are
    /// not UTF-8. Used when `robots` is empty, or is these bytes' text
    /// reading (the form sends both, and an edit of the text wins).
    #[serde(default)]
    pub robots_b64: String,
    /// The exact bytes, when they came as bytes (a revision, an upload, a
    /// form field); never sent.
    #[serde(skip)]
    #[schema(ignore)]
    pub exact: Option<Vec<u8>>,
    /// Crawler product tokens.
    #[serde(default)]
    pub agents: String,
    /// URLs or paths.
    #[serde(default)]
    pub urls: String,
    /// A site whose live revision the file is compared with.
    #[serde(default)]
    pub site: String,
    /// A stored revision of `site` to test, when `robots` is empty.
    #[serde(default, deserialize_with = "empty_as_none")]
    #[schema(value_type = Option<i64>)]
    pub revision: Option<i64>,
    /// A saved URL set, as `SITE/SET`: its URLs are tested after `urls`,
    /// and their pinned verdicts checked.
    #[serde(default)]
    pub set: String,
}

/// A URL of a saved set, with the verdict it is pinned to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// The URL or path.
    pub url: String,
    /// Its pinned verdicts, by crawler or purpose.
    pub expect: Option<robotsgate_config::Pins>,
}

/// A form sends an empty field for "none"; JSON may send the number as
/// `/api/sites/NAME` gives it, or as text.
fn empty_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Number(i64),
        Text(String),
    }
    match Option::<Given>::deserialize(d)? {
        None => Ok(None),
        Some(Given::Number(n)) => Ok(Some(n)),
        Some(Given::Text(s)) => match s.trim() {
            "" => Ok(None),
            v => v.parse().map(Some).map_err(|_| serde::de::Error::custom(format!("revision `{v}` is not a number"))),
        },
    }
}

/// A revision number as a form field gives it: empty for none.
pub fn revision_number(v: &str) -> Result<Option<i64>, String> {
    match v.trim() {
        "" => Ok(None),
        v => v.parse().map(Some).map_err(|_| format!("revision `{v}` is not a number")),
    }
}

/// Text as a browser's textarea sends it back: CRLF line ends.
fn same_text(a: &str, b: &str) -> bool {
    a.replace("\r\n", "\n") == b.replace("\r\n", "\n")
}

/// Why an input was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The file is too large.
    #[error("the robots.txt is {0} bytes; the tester takes at most {MAX_ROBOTS_BYTES} (Google reads 500 KiB)")]
    RobotsTooLarge(usize),
    /// Too many crawlers.
    #[error("{0} crawlers given; the tester takes at most {MAX_AGENTS}")]
    TooManyAgents(usize),
    /// Too many URLs.
    #[error("{0} URLs given; the tester takes at most {MAX_URLS}")]
    TooManyUrls(usize),
    /// A URL is too long.
    #[error("URL {0} is {1} bytes; the tester takes URLs of at most {MAX_URL_BYTES}")]
    UrlTooLong(usize, usize),
    /// `robots_b64` is not base64.
    #[error("robots_b64 is not standard base64: {0}")]
    Base64(String),
}

impl Input {
    /// Sets the file from its exact bytes; `robots` becomes their text.
    pub fn set_file(&mut self, bytes: Vec<u8>) {
        self.robots = String::from_utf8_lossy(&bytes).into_owned();
        self.exact = Some(bytes);
    }

    /// The file's exact bytes: as they came, or from `robots_b64` unless
    /// the text was edited since, or the text's.
    pub fn file(&self) -> Result<std::borrow::Cow<'_, [u8]>, InputError> {
        if let Some(bytes) = &self.exact {
            return Ok(bytes.as_slice().into());
        }
        if let Some(bytes) = self.carried()?
            && (self.robots.is_empty() || same_text(&String::from_utf8_lossy(&bytes), &self.robots))
        {
            return Ok(bytes.into());
        }
        Ok(self.robots.as_bytes().into())
    }

    /// The bytes `robots_b64` carries, if any.
    fn carried(&self) -> Result<Option<Vec<u8>>, InputError> {
        use base64::Engine;
        let b64 = self.robots_b64.trim();
        if b64.is_empty() {
            return Ok(None);
        }
        base64::engine::general_purpose::STANDARD.decode(b64).map(Some).map_err(|e| InputError::Base64(e.to_string()))
    }

    /// Sets the file from a form's text field, `typed` as its exact bytes.
    /// The form also carries, for a file that is not UTF-8, that file's
    /// bytes (`robots_b64`): they are the file unless the text was edited,
    /// that is, unless it is no longer their reading.
    pub fn set_typed(&mut self, typed: Vec<u8>) -> Result<(), InputError> {
        match self.carried()? {
            Some(carried) if same_text(&String::from_utf8_lossy(&carried), &String::from_utf8_lossy(&typed)) => {
                self.set_file(carried);
            }
            _ => {
                self.robots_b64.clear();
                self.set_file(typed);
            }
        }
        Ok(())
    }

    /// Whether a file was given, in any form.
    pub fn has_file(&self) -> bool {
        !self.robots.is_empty() || !self.robots_b64.trim().is_empty() || self.exact.is_some()
    }

    /// The exact bytes as base64, for the form to carry, when they are not
    /// UTF-8 (the text cannot carry them then).
    pub fn carried_b64(&self) -> Option<String> {
        use base64::Engine;
        let bytes = self.file().ok()?;
        std::str::from_utf8(&bytes).is_err().then(|| base64::engine::general_purpose::STANDARD.encode(&bytes))
    }

    /// Reads a form body or query string, the file's bytes exactly.
    pub fn from_form(raw: &[u8]) -> Result<Input, String> {
        let mut input = Input::default();
        let mut typed = None;
        for (name, value) in super::form::pairs(raw) {
            let text = || String::from_utf8_lossy(&value).into_owned();
            match name.as_str() {
                "robots" if !value.is_empty() => typed = Some(value),
                "robots_b64" => input.robots_b64 = text(),
                "agents" => input.agents = text(),
                "urls" => input.urls = url_text(value.to_vec()),
                "site" => input.site = text(),
                "set" => input.set = text(),
                "revision" => input.revision = revision_number(&text())?,
                _ => {}
            }
        }
        if let Some(typed) = typed {
            input.set_typed(typed).map_err(|e| e.to_string())?;
        }
        Ok(input)
    }
    /// The crawlers, trimmed and deduplicated; the defaults when none.
    pub fn agents(&self) -> Result<Vec<String>, InputError> {
        let mut out: Vec<String> = Vec::new();
        for a in self.agents.split(['\n', ',']).map(str::trim).filter(|a| !a.is_empty()) {
            if !out.iter().any(|o| o.eq_ignore_ascii_case(a)) {
                out.push(a.to_string());
            }
        }
        if out.is_empty() {
            out = DEFAULT_AGENTS.iter().map(|a| a.to_string()).collect();
        }
        if out.len() > MAX_AGENTS {
            return Err(InputError::TooManyAgents(out.len()));
        }
        Ok(out)
    }

    /// The URLs, trimmed, then those of `set` not given already, each with
    /// its pin; `/` when none.
    pub fn urls(&self, set: &[Saved]) -> Result<Vec<Saved>, InputError> {
        let mut out: Vec<Saved> = self
            .urls
            .lines()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| Saved { url: u.to_string(), expect: None })
            .collect();
        for s in set {
            match out.iter_mut().find(|o| o.url == s.url) {
                Some(o) => o.expect = o.expect.take().or_else(|| s.expect.clone()),
                None => out.push(s.clone()),
            }
        }
        if out.is_empty() {
            out.push(Saved { url: "/".to_string(), expect: None });
        }
        if out.len() > MAX_URLS {
            return Err(InputError::TooManyUrls(out.len()));
        }
        if let Some((i, u)) = out.iter().enumerate().find(|(_, u)| u.url.len() > MAX_URL_BYTES) {
            return Err(InputError::UrlTooLong(i + 1, u.url.len()));
        }
        Ok(out)
    }
}

/// One verdict.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Row {
    /// The URL as given.
    pub url: String,
    /// The crawler.
    pub agent: String,
    /// What its fetches are for, from the crawler catalogue (`unknown`
    /// for a token it does not hold).
    pub purpose: &'static str,
    /// May it fetch the URL.
    pub allowed: bool,
    /// The group it obeyed: the lines of its `user-agent` lines, or `*`.
    pub group: String,
    /// The deciding line, when a rule decided.
    pub line: Option<u32>,
    /// The deciding rule as written (`Disallow: /private`).
    pub rule: Option<String>,
    /// The verdict a saved set pins this URL to, if any.
    pub expect: Option<bool>,
    /// The verdict breaks that pin.
    pub broken: bool,
    /// Google's open-source library's verdict, when it is not this row's
    /// (which is the crawler's own reading, see [`Report::reading`]).
    pub library: Option<Library>,
}

/// The library's reading of one row, where it differs from the crawler's.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Library {
    /// May it fetch the URL, by the library.
    pub allowed: bool,
    /// The group the library chose, as [`Row::group`] says it.
    pub group: String,
    /// The deciding line.
    pub line: Option<u32>,
    /// The deciding rule as written.
    pub rule: Option<String>,
    /// Why the two readings differ, in one sentence.
    pub why: String,
}

/// One lint finding.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Finding {
    /// 1-based line.
    pub line: u32,
    /// `error`, `warning` or `info`.
    pub severity: String,
    /// What is wrong.
    pub message: String,
}

/// A verdict the file would change against the live revision.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Change {
    /// The URL.
    pub url: String,
    /// The crawler.
    pub agent: String,
    /// The verdict today, with its reason.
    pub live: String,
    /// The verdict under the tested file.
    pub tested: String,
}

/// Everything the tester answers.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// Which reading the rows give: Google's crawlers as documented. Where
    /// Google's open-source library (`robots check`) differs, a row says
    /// so in [`Row::library`].
    pub reading: &'static str,
    /// Bytes tested.
    pub bytes: usize,
    /// Every URL x crawler.
    pub rows: Vec<Row>,
    /// The lint.
    pub lint: Vec<Finding>,
    /// Against the live revision of `Input::site`, when one was named and
    /// has rules: the verdicts that would change, over the tested URLs and
    /// the site's saved URLs.
    pub changes: Option<Vec<Change>>,
    /// How many verdicts break a pin of the saved set.
    pub broken: usize,
    /// What the verdicts may not say on their own: URLs written with
    /// characters crawlers would percent-encode, with the form they send.
    pub notes: Vec<String>,
}

/// Tests `input`, with the URLs of its saved `set`; `live` is the site's
/// current policy when a site was named, and `saved_urls` its saved URLs.
/// `catalogue` adds its lint (token typos, usage tokens) to the engine's.
pub fn run(
    input: &Input,
    set: &[Saved],
    live: Option<&Policy>,
    saved_urls: &[String],
    catalogue: &robotsgate_crawlers::Catalogue,
) -> Result<Report, InputError> {
    let file = input.file()?;
    let bytes = file.len();
    if bytes > MAX_ROBOTS_BYTES {
        return Err(InputError::RobotsTooLarge(bytes));
    }
    // Grouped by purpose (search, AI search, AI training, ...), as given
    // within each.
    let mut agents = input.agents()?;
    agents.sort_by_key(|a| catalogue.purpose_rank(a));
    let urls = input.urls(set)?;
    let robots = Robots::parse(&file);
    let findings = robotsgate_crawlers::lint::all(&file, catalogue);
    let policy = Policy::Rules(robots);
    let mut rows = Vec::with_capacity(urls.len() * agents.len());
    for Saved { url, expect } in &urls {
        for agent in &agents {
            let v = policy.verdict(agent, url);
            let library = policy
                .robots()
                .and_then(|robots| rules::reading::readings(robots, agent, url))
                .filter(|both| both.differ())
                .map(|both| Library {
                    allowed: both.library.allowed,
                    group: group_label(&both.library),
                    line: both.library.rule.map(|r| r.line),
                    rule: monitor::change::rule_text(&both.library),
                    why: both.why,
                });
            let pinned = expect.as_ref().and_then(|p| p.of(agent, catalogue)).map(|e| e.kept_by(true));
            rows.push(Row {
                url: url.clone(),
                agent: agent.clone(),
                purpose: catalogue.purpose_of(agent),
                allowed: v.allowed,
                group: group_label(&v),
                line: v.rule.map(|r| r.line),
                rule: monitor::change::rule_text(&v),
                expect: pinned,
                broken: pinned.is_some_and(|e| e != v.allowed),
                library,
            });
        }
    }
    let lint = findings
        .iter()
        .map(|d| Finding { line: d.line, severity: d.severity.as_str().to_string(), message: d.message.clone() })
        .collect();
    let changes = live.map(|live| {
        let mut all: Vec<&str> = urls.iter().map(|u| u.url.as_str()).collect();
        for u in saved_urls {
            if !all.contains(&u.as_str()) {
                all.push(u);
            }
        }
        rules::flips(live, &policy, &all, &agents)
            .into_iter()
            .map(|f| Change { url: f.url, agent: f.agent, live: f.old.to_string(), tested: f.new.to_string() })
            .collect()
    });
    let broken = rows.iter().filter(|r| r.broken).count();
    let notes = urls.iter().filter_map(|u| sent_form(&u.url)).collect();
    Ok(Report { reading: rules::reading::CRAWLER, bytes, rows, lint, changes, broken, notes })
}

/// A note for a URL typed with characters outside ASCII: a crawler sends
/// them percent-encoded as UTF-8, and Google's matcher compares the URL as
/// sent, so the verdict of the typed form may not be the crawler's.
fn sent_form(url: &str) -> Option<String> {
    if url.is_ascii() {
        return None;
    }
    let mut sent = String::with_capacity(url.len() * 3);
    for b in url.bytes() {
        if b.is_ascii() {
            sent.push(char::from(b));
        } else {
            sent.push_str(&format!("%{b:02X}"));
        }
    }
    Some(format!(
        "`{url}` is tested as written; a crawler sends it percent-encoded, as `{sent}`, and Google matches what is sent: test that form too"
    ))
}

/// The group a verdict came from: `*` with its lines, a named group's
/// lines, or `none`.
fn group_label(v: &rules::Verdict<'_>) -> String {
    match v.group {
        None => "none".to_string(),
        Some(g) if g.global => format!("* (line {})", lines(g.lines)),
        Some(g) => format!("line {}", lines(g.lines)),
    }
}

fn lines(lines: &[u32]) -> String {
    lines.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(robots: &str, agents: &str, urls: &str) -> Input {
        Input { robots: robots.into(), agents: agents.into(), urls: urls.into(), ..Input::default() }
    }

    #[test]
    fn verdicts_name_their_group_and_line() {
        let r = run(
            &input(
                "User-agent: *\nDisallow: /private\n\nUser-agent: GPTBot\nDisallow: /\n",
                "Googlebot, GPTBot",
                "/private/x\n/public",
            ),
            &[],
            None,
            &[],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        assert_eq!(r.rows.len(), 4);
        let g = &r.rows[0];
        assert!(!g.allowed && g.line == Some(2) && g.group == "* (line 1)", "{g:?}");
        assert_eq!(g.rule.as_deref(), Some("Disallow: /private"));
        let gpt = &r.rows[3];
        assert!(!gpt.allowed && gpt.group == "line 4" && gpt.line == Some(5), "{gpt:?}");
    }

    #[test]
    fn rows_show_the_library_where_it_reads_otherwise() {
        let file = "User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /private\n";
        let r = run(
            &input(file, "Googlebot-Image, AdsBot-Google, Googlebot", "/about"),
            &[],
            None,
            &[],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        assert!(r.reading.contains("as Google documents them"), "{}", r.reading);
        let image = r.rows.iter().find(|row| row.agent == "Googlebot-Image").unwrap();
        assert!(image.allowed && image.group == "line 4", "{image:?}");
        let lib = image.library.as_ref().expect("the library reads it otherwise");
        assert!(!lib.allowed && lib.group == "* (line 1)" && lib.line == Some(2), "{lib:?}");
        assert!(lib.why.contains("obeys Googlebot's group"), "{}", lib.why);
        let ads = r.rows.iter().find(|row| row.agent == "AdsBot-Google").unwrap();
        assert!(ads.allowed && ads.group == "none" && ads.library.as_ref().is_some_and(|l| !l.allowed), "{ads:?}");
        let google = r.rows.iter().find(|row| row.agent == "Googlebot").unwrap();
        assert!(google.library.is_none(), "one reading where they agree: {google:?}");
    }

    #[test]
    fn urls_outside_ascii_name_the_form_crawlers_send() {
        let r = run(
            &input("User-agent: *\nDisallow: /caf%C3%A9\n", "Googlebot", "/café/menu\n/plain"),
            &[],
            None,
            &[],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("`/caf%C3%A9/menu`"), "{}", r.notes[0]);
    }

    #[test]
    fn the_catalogue_lints_beside_the_engine() {
        let r = run(
            &input(
                "User-agent: Googelbot\nDissallow: /x\n\nUser-agent: Google-Extended\nDisallow: /\n",
                "Googlebot",
                "/",
            ),
            &[],
            None,
            &[],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        let lines: Vec<(u32, &str)> = r.lint.iter().map(|f| (f.line, f.severity.as_str())).collect();
        assert_eq!(lines, [(1, "warning"), (2, "warning"), (4, "info")], "{:?}", r.lint);
        assert!(r.lint[0].message.contains("`Googlebot`"), "{:?}", r.lint);
    }

    /// Google blocks `/caf%E9` under `Disallow: /caf\xE9`; so must the
    /// tester, however the bytes come.
    #[test]
    fn the_file_is_judged_byte_for_byte() {
        use base64::Engine;
        let file = b"User-agent: *\nDisallow: /caf\xE9\n".to_vec();
        let catalogue = robotsgate_crawlers::Catalogue::builtin();
        let judge = |i: &Input| run(i, &[], None, &[], catalogue).unwrap().rows[0].allowed;
        let mut exact = input("", "Googlebot", "/caf%E9");
        exact.set_file(file.clone());
        assert!(!judge(&exact), "exact bytes");
        let lossy = input(&String::from_utf8_lossy(&file), "Googlebot", "/caf%E9");
        assert!(judge(&lossy), "the lossy text is another rule (this is why bytes are kept)");
        let mut b64 = input("", "Googlebot", "/caf%E9");
        b64.robots_b64 = base64::engine::general_purpose::STANDARD.encode(&file);
        assert!(!judge(&b64), "robots_b64");
        let form =
            Input::from_form(b"robots=User-agent%3A+*%0ADisallow%3A+%2Fcaf%E9&agents=Googlebot&urls=%2Fcaf%25E9")
                .unwrap();
        assert!(!judge(&form), "a URL-encoded form");
        // The page's round trip: the text as the browser sends it back, and the carried bytes.
        let carried = exact.carried_b64().expect("not UTF-8, so carried");
        let back = format!(
            "robots={}&robots_b64={}&agents=Googlebot&urls=%2Fcaf%25E9",
            monitor::links::encode(&exact.robots.replace('\n', "\r\n")),
            monitor::links::encode(&carried)
        );
        assert!(!judge(&Input::from_form(back.as_bytes()).unwrap()), "the form's round trip");
        // An edit of the text wins over the carried bytes.
        let edited = format!(
            "robots=User-agent%3A+*%0ADisallow%3A+%2Fother&robots_b64={}&agents=Googlebot&urls=%2Fcaf%25E9",
            monitor::links::encode(&carried)
        );
        assert!(judge(&Input::from_form(edited.as_bytes()).unwrap()), "the edited text");
    }

    #[test]
    fn a_revision_is_a_number_or_text() {
        let i: Input = serde_json::from_str(r#"{"site":"shop","revision":3}"#).unwrap();
        assert_eq!(i.revision, Some(3));
        let i: Input = serde_json::from_str(r#"{"site":"shop","revision":"4"}"#).unwrap();
        assert_eq!(i.revision, Some(4));
        let i: Input = serde_json::from_str(r#"{"site":"shop","revision":""}"#).unwrap();
        assert_eq!(i.revision, None);
        assert!(serde_json::from_str::<Input>(r#"{"revision":"x"}"#).is_err());
    }

    #[test]
    fn limits_give_clear_errors() {
        let big = "#".repeat(MAX_ROBOTS_BYTES + 1);
        assert_eq!(
            run(&input(&big, "", ""), &[], None, &[], robotsgate_crawlers::Catalogue::builtin()).unwrap_err(),
            InputError::RobotsTooLarge(big.len())
        );
        let many: String = (0..MAX_URLS + 1).map(|i| format!("/{i}\n")).collect();
        assert!(matches!(
            run(&input("", "", &many), &[], None, &[], robotsgate_crawlers::Catalogue::builtin()),
            Err(InputError::TooManyUrls(_))
        ));
        let agents: String = (0..30).map(|i| format!("bot{i},")).collect();
        assert!(matches!(
            run(&input("", &agents, ""), &[], None, &[], robotsgate_crawlers::Catalogue::builtin()),
            Err(InputError::TooManyAgents(30))
        ));
    }

    #[test]
    fn changes_against_the_live_file() {
        let live = Policy::Rules(Robots::parse(b"User-agent: *\nDisallow: /a\n"));
        let r = run(
            &input("User-agent: *\nDisallow: /b\n", "Googlebot", "/a"),
            &[],
            Some(&live),
            &["/b/1".into()],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        let changes = r.changes.unwrap();
        assert_eq!(changes.len(), 2, "{changes:?}");
    }

    fn allowed() -> robotsgate_config::Pins {
        robotsgate_config::Pins { every: Some(robotsgate_config::Expectation::Allow), each: Vec::new() }
    }

    #[test]
    fn a_saved_set_adds_its_urls_and_checks_its_pins() {
        let set = [
            Saved { url: "/a".into(), expect: Some(allowed()) },
            Saved { url: "/b".into(), expect: Some(allowed()) },
            Saved { url: "/c".into(), expect: None },
        ];
        let r = run(
            &input("User-agent: *\nDisallow: /b\n", "Googlebot", "/a\n/z"),
            &set,
            None,
            &[],
            robotsgate_crawlers::Catalogue::builtin(),
        )
        .unwrap();
        let urls: Vec<_> = r.rows.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(urls, ["/a", "/z", "/b", "/c"], "typed URLs first, then the set's new ones");
        assert_eq!(r.rows[0].expect, Some(true), "a typed URL takes the set's pin");
        assert!(r.rows[2].broken && !r.rows[0].broken && !r.rows[3].broken);
        assert_eq!(r.broken, 1);
    }
}
