//! `lastmod` values: the W3C datetime profile of ISO 8601 the sitemaps
//! protocol requires (YYYY, YYYY-MM, YYYY-MM-DD, and with a time of day
//! hh:mm, hh:mm:ss or hh:mm:ss.s+, always with a zone, Z or ±hh:mm).

/// Whether `value` is a W3C datetime.
pub fn is_w3c(value: &str) -> bool {
    let b = value.as_bytes();
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let num = |s: &[u8]| s.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
    let in_range = |s: &[u8], lo: u32, hi: u32| s.len() == 2 && digits(s) && (lo..=hi).contains(&num(s));
    if b.len() < 4 || !digits(&b[..4]) {
        return false;
    }
    match b.len() {
        4 => return true,
        7 => return b[4] == b'-' && in_range(&b[5..7], 1, 12),
        _ => {}
    }
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' || !in_range(&b[5..7], 1, 12) || !in_range(&b[8..10], 1, 31) {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    // A time needs a zone.
    if b[10] != b'T' || b.len() < 17 || b[13] != b':' {
        return false;
    }
    if !in_range(&b[11..13], 0, 23) || !in_range(&b[14..16], 0, 59) {
        return false;
    }
    let mut rest = &b[16..];
    if let [b':', s1, s2, tail @ ..] = rest {
        if !in_range(&[*s1, *s2], 0, 60) {
            return false;
        }
        rest = tail;
        if let [b'.', tail @ ..] = rest {
            let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return false;
            }
            rest = &tail[n..];
        }
    }
    match rest {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => in_range(&[*h1, *h2], 0, 23) && in_range(&[*m1, *m2], 0, 59),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_w3c;

    #[test]
    fn the_profile_and_nothing_else() {
        for ok in [
            "2026",
            "2026-11",
            "2026-11-29",
            "2026-11-29T17:05Z",
            "2026-11-29T17:05:09+01:00",
            "2026-11-29T17:05:09.123-05:30",
            "2026-11-29T17:05:60Z",
        ] {
            assert!(is_w3c(ok), "{ok}");
        }
        for bad in [
            "",
            "26",
            "2026-13",
            "2026-11-32",
            "2026/11/29",
            "2026-11-29T17:05",
            "2026-11-29T17:05:09",
            "2026-11-29 17:05:09Z",
            "2026-11-29T25:00Z",
            "2026-11-29T17:05:09.Z",
            "2026-11-29T17:05:09+0100",
            "29 Nov 2026",
            "2026-11-29T17:05:09Zjunk",
        ] {
            assert!(!is_w3c(bad), "{bad}");
        }
    }
}
