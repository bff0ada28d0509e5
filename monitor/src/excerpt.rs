//! Shortening what an alert quotes. A robots.txt body is untrusted and may
//! be half a megabyte, binary, or one 16 KB line; an alert must stay
//! readable and small (under 100 KB whatever the change), so every quoted
//! piece goes through here: lines and lists are cut with a count of what
//! was left out, and bytes that are not text are described, not inlined.

/// Longest quoted line, in characters.
pub const LINE_CHARS: usize = 200;
/// Most diff lines quoted in an alert.
pub const DIFF_LINES: usize = 120;
/// Most items quoted from one list (flips, broken pins, lint errors).
pub const LIST_ITEMS: usize = 40;

/// `s` cut to `max` characters, with how much was left out.
pub fn line(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// Whether `body` reads as text: valid UTF-8 (or nearly, as Latin-1 files
/// are), without NUL and with few other control characters.
pub fn is_text(body: &[u8]) -> bool {
    if body.contains(&0) {
        return false;
    }
    let controls = body.iter().filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c)).count();
    let invalid = String::from_utf8_lossy(body).chars().filter(|&c| c == char::REPLACEMENT_CHARACTER).count();
    // A stray byte or two is a typo or a legacy encoding; more is not text.
    controls * 100 <= body.len() && invalid * 20 <= body.len().max(1)
}

/// A description of bytes that are not text: their size and first bytes.
pub fn describe_binary(body: &[u8]) -> String {
    let head: Vec<String> = body.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("not text: {} bytes, starting {}", body.len(), head.join(" "))
}

/// The unified diff of two bodies, at most `DIFF_LINES` lines of at most
/// `LINE_CHARS` characters, ending with how many changed lines were left
/// out and the command that prints them all.
pub fn diff(site: &str, old: &[u8], new: &[u8]) -> String {
    if !is_text(old) || !is_text(new) {
        let side = |b: &[u8]| {
            if is_text(b) {
                format!(
                    "text, {}, {}",
                    crate::words::plural(b.len(), "byte", "bytes"),
                    crate::words::plural(b.split(|&c| c == b'\n').count(), "line", "lines")
                )
            } else {
                describe_binary(b)
            }
        };
        return format!("before: {}\nafter:  {}\n", side(old), side(new));
    }
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let full = similar::TextDiff::from_lines(&*old, &*new)
        .unified_diff()
        .context_radius(2)
        .header("before", "after")
        .to_string();
    let mut out = String::new();
    let mut left_out = 0usize;
    for (i, l) in full.lines().enumerate() {
        if i < DIFF_LINES {
            out.push_str(&line(l, LINE_CHARS));
            out.push('\n');
        } else if l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---") {
            left_out += 1;
        }
    }
    if left_out > 0 {
        out.push_str(&format!("… {left_out} more changed lines: `robots-monitor diff {site}`\n"));
    }
    out
}

/// The first `LIST_ITEMS` of `items`, and a line saying how many more.
pub fn list<T>(items: &[T]) -> (&[T], Option<String>) {
    if items.len() <= LIST_ITEMS {
        (items, None)
    } else {
        (&items[..LIST_ITEMS], Some(format!("… and {} more", items.len() - LIST_ITEMS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let s = "é".repeat(300);
        let cut = line(&s, 200);
        assert!(cut.starts_with(&"é".repeat(200)) && cut.ends_with("… (600 bytes)"), "{cut}");
        assert_eq!(line("short", 200), "short");
    }

    #[test]
    fn binary_is_described_and_latin1_is_text() {
        let gzip = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xff, 0xfe];
        assert!(!is_text(&gzip));
        assert!(describe_binary(&gzip).starts_with("not text: 12 bytes, starting 1f 8b 08 00"));
        assert!(is_text(b"User-agent: *\nDisallow: /caf\xe9\n"));
        let d = diff("shop", b"User-agent: *\n", &gzip);
        assert!(d.contains("before: text, 14 bytes") && d.contains("after:  not text: 12 bytes"), "{d}");
    }

    #[test]
    fn a_huge_diff_is_capped_with_the_command_for_the_rest() {
        let old: String = (0..20_000).map(|i| format!("Disallow: /a{i}\n")).collect();
        let new: String = (0..20_000).map(|i| format!("Disallow: /b{i}\n")).collect();
        let d = diff("shop", old.as_bytes(), new.as_bytes());
        assert!(d.lines().count() <= DIFF_LINES + 1);
        assert!(d.ends_with("more changed lines: `robots-monitor diff shop`\n"), "{}", &d[d.len() - 100..]);
        assert!(d.len() < 30_000);
    }
}
