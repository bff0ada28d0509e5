//! `application/x-www-form-urlencoded` read as bytes. The tester judges a
//! robots.txt byte for byte, as Google's library does, and a form or query
//! may carry bytes that are not UTF-8 (`%E9`): serde's form reader decodes
//! them lossily, as U+FFFD, which turns `Disallow: /caf%E9` into another
//! rule. Every other field is text, read as the form reader would.

/// The pairs of a form body or query string, names as text, values as bytes.
pub fn pairs(raw: &[u8]) -> Vec<(String, Vec<u8>)> {
    raw.split(|&b| b == b'&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = match p.iter().position(|&b| b == b'=') {
                Some(i) => (&p[..i], &p[i + 1..]),
                None => (p, &p[..0]),
            };
            (String::from_utf8_lossy(&decode(name)).into_owned(), decode(value))
        })
        .collect()
}

/// Percent-decodes one name or value, `+` as a space; a `%` not followed
/// by two hex digits stays as it is, as browsers and WHATWG's URL standard do.
fn decode(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => match (s.get(i + 1).copied().and_then(hex), s.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pairs;

    #[test]
    fn bytes_survive_and_text_is_text() {
        let got = pairs(b"robots=User-agent%3A+*%0ADisallow%3A+%2Fcaf%E9&agents=Googlebot&bad=%ZZ&empty=&flag");
        assert_eq!(got[0], ("robots".to_string(), b"User-agent: *\nDisallow: /caf\xE9".to_vec()));
        assert_eq!(got[1], ("agents".to_string(), b"Googlebot".to_vec()));
        assert_eq!(got[2], ("bad".to_string(), b"%ZZ".to_vec()));
        assert_eq!(got[3], ("empty".to_string(), Vec::new()));
        assert_eq!(got[4], ("flag".to_string(), Vec::new()));
        assert_eq!(pairs(b"a=%4"), [("a".to_string(), b"%4".to_vec())]);
    }
}
