//! Config errors in the reader's terms. The YAML parser's messages are
//! right about where, but speak about the parser: its snippet names the
//! file `<input>`, a duplicate key mentions a library setting, and an
//! unknown key lists the allowed ones in declaration order. This rewrites
//! them to name the file, say what is wrong, and put the nearest known key
//! first.

use std::path::Path;

/// The parser's `message` about `path` (whose contents are `text`),
/// rewritten for people.
pub fn message(message: &str, path: &Path, text: &str) -> String {
    let shown = path.display().to_string();
    let mut out = true_column(&message.replace("<input>:", &format!("{shown}:")), &shown);
    if let Some(fixed) = duplicate_key(&out) {
        out = fixed;
    } else if let Some(fixed) = unknown_key(&out) {
        out = fixed;
    } else if let Some(key) = key_at(&out, text) {
        // A value of the wrong type or form: say whose value it is.
        let head = if out.starts_with("error: ") { "error: ".len() } else { 0 };
        if let Some(at) = out[head..].find(": ") {
            out.insert_str(head + at + 2, &format!("key `{key}`: "));
        }
    }
    out
}

/// The innermost mapping key on the line a "line L column C" message
/// points at whose value holds the column: the last `key:` before it, in
/// block style (`expect: maybe`) and in flow style alike
/// (`{ url: /x, expect: maybe }`, `proxy: { ai_policy: { ai-training: maybe } }`).
fn key_at(message: &str, text: &str) -> Option<String> {
    let (line, column) = position(message)?;
    let source = text.lines().nth(line.checked_sub(1)?)?;
    let bytes = source.as_bytes();
    let keyish = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    // A value read through `deserialize_any` (a pin: `allowed`, or a
    // mapping of crawlers) is reported at its key: name that key.
    if let Some(rest) = source.get(column.saturating_sub(1)..) {
        let len = rest.bytes().take_while(|b| keyish(*b)).count();
        let before = source[..column.saturating_sub(1)].trim_end().chars().last();
        if len > 0 && rest[len..].starts_with(": ") && matches!(before, None | Some('{' | ',' | '-')) {
            return Some(rest[..len].to_string());
        }
    }
    let mut found = None;
    let mut i = 0;
    while i < bytes.len() && i + 1 < column {
        // A key ends at `:` followed by a space, and starts after a space,
        // `{`, `,` or the line's start.
        if bytes[i] == b':' && bytes.get(i + 1) == Some(&b' ') && i > 0 && keyish(bytes[i - 1]) {
            let start =
                source[..i].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).map_or(0, |p| p + 1);
            let before = source[..start].trim_end().chars().last();
            if matches!(before, None | Some('{' | ',' | '-')) {
                found = Some(source[start..i].to_string());
            }
        }
        i += 1;
    }
    found
}

/// The line and column of a "line L column C" message.
fn position(message: &str) -> Option<(usize, usize)> {
    let at = message.find("line ")?;
    let (line, rest) = message[at + "line ".len()..].split_once(" column ")?;
    let column: usize = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    Some((line.parse().ok()?, column))
}

/// The snippet's ` --> FILE:L:C` line gives the column within its cropped
/// copy of a long line; this puts the line's own column there, as the
/// message's head gives it.
fn true_column(message: &str, shown: &str) -> String {
    let Some((line, column)) = position(message) else { return message.to_string() };
    let arrow = format!("--> {shown}:{line}:");
    let mut out = String::with_capacity(message.len());
    for part in message.split_inclusive('\n') {
        match part.find(&arrow) {
            Some(at) => {
                let end = part.trim_end_matches('\n');
                out.push_str(&end[..at + arrow.len()]);
                out.push_str(&column.to_string());
                if part.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(part),
        }
    }
    out
}

/// "duplicate mapping key: K, set DuplicateKeyPolicy …" becomes a sentence
/// about the file.
fn duplicate_key(message: &str) -> Option<String> {
    const TAIL: &str = ", set DuplicateKeyPolicy in Options if acceptable";
    if !message.contains(TAIL) {
        return None;
    }
    let mut out = String::new();
    for line in message.split_inclusive('\n') {
        match line.find("duplicate mapping key: ") {
            Some(at) => {
                let rest = &line[at + "duplicate mapping key: ".len()..];
                let key = rest.split(TAIL).next().unwrap_or(rest).trim_end();
                out.push_str(&line[..at]);
                out.push_str(&format!("key `{key}` is given twice in the same mapping; keep one"));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    Some(out)
}

/// "unknown field `k`, expected one of a, b, c" gains the nearest known
/// key ("did you mean") and lists the known keys nearest first.
fn unknown_key(message: &str) -> Option<String> {
    let start = message.find("unknown field `")? + "unknown field `".len();
    let key = &message[start..start + message[start..].find('`')?];
    let list_at = start + message[start..].find(", expected ")? + ", expected ".len();
    let list_end = list_at + message[list_at..].find('\n').unwrap_or(message.len() - list_at);
    let list = message[list_at..list_end].trim_start_matches("one of ");
    let mut known: Vec<&str> = list
        .split(", ")
        .flat_map(|k| k.split(" or "))
        .map(|k| k.trim().trim_matches('`'))
        .filter(|k| !k.is_empty())
        .collect();
    known.sort_by_key(|k| robotsgate_crawlers::edits(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()));
    let hint = match known.first() {
        Some(best) if robotsgate_crawlers::edits(key, best) <= key.len().max(2) / 2 => {
            format!("; did you mean `{best}`?")
        }
        _ => String::new(),
    };
    let sorted = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    let replacement = format!("unknown key `{key}`{hint} Known keys here, nearest first: {sorted}");
    let old = format!("unknown field `{key}`, expected {}", &message[list_at..list_end]);
    Some(message.replace(&old, &replacement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_keys_come_first() {
        let m = "line 2 column 1: unknown field `intervall`, expected one of database, agents, interval, sites\n --> <input>:2:1\n";
        let out = message(m, Path::new("/etc/robotsgate.yaml"), "");
        assert!(out.contains("unknown key `intervall`; did you mean `interval`?"), "{out}");
        assert!(out.contains("nearest first: `interval`, "), "{out}");
        assert!(out.contains("--> /etc/robotsgate.yaml:2:1"), "{out}");
        let m = "unknown field `expekt`, expected `url` or `expect`";
        assert!(message(m, Path::new("c.yaml"), "").contains("did you mean `expect`?"));
        let m = "unknown field `zzzzzzzz`, expected `url` or `expect`";
        assert!(!message(m, Path::new("c.yaml"), "").contains("did you mean"));
    }

    #[test]
    fn duplicate_keys_are_explained_without_library_terms() {
        let m = "line 3 column 1: duplicate mapping key: interval, set DuplicateKeyPolicy in Options if acceptable\n  |\n3 | interval: 2m\n  | ^ duplicate mapping key: interval, set DuplicateKeyPolicy in Options if acceptable\n";
        let out = message(m, Path::new("c.yaml"), "");
        assert!(!out.contains("DuplicateKeyPolicy") && out.contains("key `interval` is given twice"), "{out}");
        assert_eq!(out.matches("given twice").count(), 2, "{out}");
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let m = "line 3 column 12: `5` is not a duration: time unit needed";
        let out = message(m, Path::new("c.yaml"), "sites: []\nhttp:\n  timeout: 5\n");
        assert_eq!(out, "line 3 column 12: key `timeout`: `5` is not a duration: time unit needed");
        let m = "error: line 3 column 12: `5` is not a duration";
        let out = message(m, Path::new("c.yaml"), "sites: []\nhttp:\n  timeout: 5\n");
        assert_eq!(out, "error: line 3 column 12: key `timeout`: `5` is not a duration");
    }

    #[test]
    fn distances() {
        assert_eq!(robotsgate_crawlers::edits("interval", "interval"), 0);
        assert_eq!(robotsgate_crawlers::edits("intervl", "interval"), 1);
        assert_eq!(robotsgate_crawlers::edits("expekt", "expect"), 1);
        assert_eq!(robotsgate_crawlers::edits("ab", "ba"), 1);
    }
}
