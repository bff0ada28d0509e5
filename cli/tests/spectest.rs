//! Google's robots.txt spec-test cases (`../shared/spectest/CTC`), run the
//! way Google's runner runs a parser: the built `robots` binary as
//! `robots check FILE AGENT URL`, exit 0 for allowed and 1 for disallowed,
//! empty strings included. Every case of every file must pass.
//!
//! The cases are in protobuf's text format (`specification.proto`); the
//! small reader below knows what these files use: fields, nested messages
//! and lists, enum names, comments, and adjacent string literals joined,
//! with C escapes (`\n`, `\"`, `\xHH`, octal) in bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One expectation: a robots.txt body, a crawler, a URL and the verdict.
#[derive(Debug)]
struct Case {
    file: String,
    robots: Vec<u8>,
    agent: Vec<u8>,
    url: Vec<u8>,
    allowed: bool,
}

#[derive(Debug, PartialEq)]
enum Token {
    Name(String),
    Text(Vec<u8>),
    Punct(u8),
}

/// Splits a text-format file into tokens; adjacent strings become one.
fn tokens(text: &[u8], file: &str) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                let (bytes, next) = string(text, i, file);
                i = next;
                match out.last_mut() {
                    Some(Token::Text(prev)) => prev.extend(bytes),
                    _ => out.push(Token::Text(bytes)),
                }
            }
            b'{' | b'}' | b'[' | b']' | b':' | b',' | b';' | b'<' | b'>' => {
                out.push(Token::Punct(c));
                i += 1;
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.' => {
                let start = i;
                while i < text.len() && (text[i].is_ascii_alphanumeric() || b"_-.".contains(&text[i])) {
                    i += 1;
                }
                out.push(Token::Name(String::from_utf8_lossy(&text[start..i]).into_owned()));
            }
            _ => panic!("{file}: unexpected byte {c:#04x} at offset {i}"),
        }
    }
    out
}

/// One quoted literal starting at `start`: its bytes and the offset after it.
fn string(text: &[u8], start: usize, file: &str) -> (Vec<u8>, usize) {
    let quote = text[start];
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = text.get(i) else { panic!("{file}: a string opened at offset {start} never closes") };
        i += 1;
        if c == quote {
            return (out, i);
        }
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = text[i];
        i += 1;
        match e {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'v' => out.push(0x0b),
            b'x' | b'X' => {
                let digits = text[i..].iter().take(2).take_while(|d| d.is_ascii_hexdigit()).count();
                let hex = std::str::from_utf8(&text[i..i + digits]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("{file}: bad \\x at {i}")));
                i += digits;
            }
            b'0'..=b'7' => {
                let digits = 1 + text[i..].iter().take(2).take_while(|d| (b'0'..=b'7').contains(d)).count();
                let oct = std::str::from_utf8(&text[i - 1..i - 1 + digits]).unwrap();
                out.push(u8::from_str_radix(oct, 8).unwrap_or_else(|_| panic!("{file}: bad octal at {i}")));
                i += digits - 1;
            }
            other => out.push(other),
        }
    }
}

/// Every expectation in one file.
fn cases(path: &Path) -> Vec<Case> {
    let file = path.display().to_string();
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let tokens = tokens(&text, &file);
    let mut out = Vec::new();
    // Messages nest as RobotsTxtSpecification > tests (depth 1) >
    // test_expectations (depth 2); a field belongs to the innermost.
    let mut depth = 0usize;
    let mut robots: Vec<u8> = Vec::new();
    let (mut agent, mut url, mut outcome): (Vec<u8>, Vec<u8>, Option<bool>) = (Vec::new(), Vec::new(), None);
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct(b'{' | b'<') => depth += 1,
            Token::Punct(b'}' | b'>') => {
                if depth == 2 {
                    let allowed = outcome.take().unwrap_or_else(|| panic!("{file}: an expectation with no outcome"));
                    out.push(Case {
                        file: file.clone(),
                        robots: robots.clone(),
                        agent: std::mem::take(&mut agent),
                        url: std::mem::take(&mut url),
                        allowed,
                    });
                } else if depth == 1 {
                    robots.clear();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Name(name) if matches!(tokens.get(i + 1), Some(Token::Punct(b':'))) => {
                let value = tokens.get(i + 2);
                match (name.as_str(), value) {
                    ("robotstxt", Some(Token::Text(t))) => robots = t.clone(),
                    ("useragent", Some(Token::Text(t))) => agent = t.clone(),
                    ("testurl", Some(Token::Text(t))) => url = t.clone(),
                    ("expected_outcome", Some(Token::Name(o))) => {
                        outcome = Some(match o.as_str() {
                            "ALLOWED" | "1" => true,
                            "DISALLOWED" | "2" => false,
                            other => panic!("{file}: outcome {other}"),
                        })
                    }
                    _ => {}
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn spec_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spectest/CTC");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "CI has ../shared/spectest beside the clone: {}", dir.display());
    eprintln!("{} not found; skipping the spec-test run", dir.display());
    None
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["correctness", "stress"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(sub).display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "textproto"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

#[test]
fn the_reader_joins_strings_and_decodes_escapes() {
    let text = br#"tests: [ { robotstxt: "a\n" 'b\x41\101' # c
        test_expectations: [ { testurl: "" useragent: "\"Foo\"" expected_outcome: DISALLOWED } ] } ]"#;
    let dir = std::env::temp_dir().join(format!("spectest-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.textproto");
    std::fs::write(&path, text).unwrap();
    let found = cases(&path);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].robots, b"a\nbAA");
    assert_eq!(
        (found[0].agent.as_slice(), found[0].url.as_slice(), found[0].allowed),
        (&b"\"Foo\""[..], &b""[..], false)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every case, through the binary, exactly as Google's runner calls it.
#[test]
fn googles_spec_test_passes_in_full_with_the_plain_command() {
    use std::os::unix::ffi::OsStrExt;
    let Some(dir) = spec_dir() else { return };
    let all: Vec<Case> = files(&dir).iter().flat_map(|f| cases(f)).collect();
    assert!(all.len() >= 400, "only {} cases read from {}", all.len(), dir.display());
    let scratch = std::env::temp_dir().join(format!("spectest-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let robots_file = scratch.join("robots.txt");
    let mut failed = Vec::new();
    for (n, case) in all.iter().enumerate() {
        std::fs::write(&robots_file, &case.robots).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_robots"))
            .arg("check")
            .arg(&robots_file)
            .arg(std::ffi::OsStr::from_bytes(&case.agent))
            .arg(std::ffi::OsStr::from_bytes(&case.url))
            .output()
            .expect("robots");
        let got = match out.status.code() {
            Some(0) => Some(true),
            Some(1) => Some(false),
            _ => None,
        };
        if got != Some(case.allowed) {
            failed.push(format!(
                "#{n} {}: agent {:?} url {:?}: expected {}, got exit {:?} ({})",
                case.file,
                String::from_utf8_lossy(&case.agent),
                String::from_utf8_lossy(&case.url),
                if case.allowed { "ALLOWED" } else { "DISALLOWED" },
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!("spec-test: {} of {} cases pass", all.len() - failed.len(), all.len());
    assert!(failed.is_empty(), "{} of {} cases failed:\n{}", failed.len(), all.len(), failed.join("\n"));
}
