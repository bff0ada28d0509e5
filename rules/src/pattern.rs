//! Matching one normalised rule pattern against one URL path.
//!
//! `*` matches any run of bytes and a `$` at the very end anchors the match
//! at the end of the path; a `$` anywhere else is a plain byte. Matching is
//! by bytes and case-sensitive. Patterns are classified once, at compile
//! time, into the cheapest shape that is exact for them.
//!
//! The wildcard matcher is greedy and never backtracks: each literal segment
//! is searched once, left to right, with `memchr::memmem`. Leftmost
//! placement of every segment leaves the most room for the ones after it, so
//! greedy search finds a match whenever one exists, in
//! O(path length + pattern length) time for one rule, which is within
//! Google's O(path × pattern) bound.

use memchr::memmem;

use crate::bytes::{find_any, find_pair, has_prefix};

/// How a pattern must be matched once its leading literal is known to be a
/// prefix of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The literal, then nothing or only `*`s: a prefix match says it all.
    Prefix,
    /// The literal, then a final `$`: the path must be exactly the literal.
    Exact,
    /// The literal, one `*`, then one literal segment, perhaps anchored
    /// by a final `$`, perhaps followed by `*`s, which say nothing
    /// (`/*?sessionid=`, `/*.pdf$`, `/*print*`): the most common wildcard
    /// rules, matched by one search without splitting the pattern.
    Segment,
    /// A `*` follows the literal and more must be checked.
    Wild,
}

/// Splits a pattern into the length of its leading literal (the bytes
/// before the first `*`, without a final anchoring `$`) and its [`Shape`].
pub(crate) fn classify(pattern: &[u8]) -> (usize, Shape) {
    classify_at(pattern, memchr::memchr(b'*', pattern))
}

/// [`classify`] for a pattern whose first `*` is already known to be at
/// `star`.
pub(crate) fn classify_at(pattern: &[u8], star: Option<usize>) -> (usize, Shape) {
    match star {
        None => match pattern.split_last() {
            Some((b'$', lit)) => (lit.len(), Shape::Exact),
            _ => (pattern.len(), Shape::Prefix),
        },
        Some(star) => {
            // Only `*`s, perhaps then the final `$`: `*` reaches any end, so
            // the anchor adds nothing but priority.
            let tail = &pattern[star..];
            let tail = tail.strip_suffix(b"$").unwrap_or(tail);
            if tail.iter().all(|b| *b == b'*') {
                (star, Shape::Prefix)
            } else if trim_stars(&tail[1..]).contains(&b'*') {
                (star, Shape::Wild)
            } else {
                (star, Shape::Segment)
            }
        }
    }
}

/// Checks the part of `pattern` after its leading literal, given that the
/// path starts with that literal.
#[inline]
pub(crate) fn matches_after_literal(path: &[u8], pattern: &[u8], lit: usize, shape: Shape) -> bool {
    match shape {
        Shape::Prefix => true,
        Shape::Exact => path.len() == lit,
        Shape::Segment => {
            let rest = &pattern[lit + 1..];
            let (body, anchored) = match rest.split_last() {
                Some((b'$', body)) => (body, true),
                _ => (rest, false),
            };
            let segment = trim_stars(body);
            // After a `*`, a `$` anchors nothing.
            if anchored && segment.len() == body.len() {
                path.len() - lit >= segment.len() && path.ends_with(segment)
            } else {
                find(&path[lit..], segment).is_some()
            }
        }
        Shape::Wild => wild(path, lit, &pattern[lit..]),
    }
}

/// `bytes` without the `*`s it ends with.
#[inline]
fn trim_stars(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., b'*'] = bytes {
        bytes = rest;
    }
    bytes
}

/// Whether `pattern` (already normalised) matches `path`, as Google's
/// matcher decides it.
///
/// ```
/// use rules::pattern::matches;
/// assert!(matches(b"/fish.php?id=1", b"/*.php"));
/// assert!(!matches(b"/fish.php?id=1", b"/*.php$"));
/// assert!(matches(b"/a$b", b"/a$b"));
/// assert!(matches(b"/anything", b""));
/// ```
pub fn matches(path: &[u8], pattern: &[u8]) -> bool {
    let (lit, shape) = classify(pattern);
    path.starts_with(&pattern[..lit]) && matches_after_literal(path, pattern, lit, shape)
}

/// `rest` starts with `*`. Places each literal segment at its leftmost
/// possible position; a final `$` then requires the last segment to end the
/// path at or after where the others stopped.
fn wild(path: &[u8], mut pos: usize, rest: &[u8]) -> bool {
    let (body, anchored) = match rest.split_last() {
        Some((b'$', body)) => (body, true),
        _ => (rest, false),
    };
    let (middle, tail) = if anchored && body.last() != Some(&b'*') {
        // A `*` exists: the literal stopped at one.
        let star = memchr::memrchr(b'*', body).unwrap_or(0);
        (&body[..star], Some(&body[star + 1..]))
    } else {
        (body, None)
    };
    for segment in middle.split(|b| *b == b'*').filter(|s| !s.is_empty()) {
        match find(&path[pos..], segment) {
            Some(i) => pos += i + segment.len(),
            None => return false,
        }
    }
    match tail {
        None => true,
        Some(tail) => path.len() - pos >= tail.len() && path.ends_with(tail),
    }
}

/// Paths up to this long are searched by `memchr` on the needle's first
/// byte, whatever the needle's length.
const SHORT_HAY: usize = 256;

/// Finds `needle` in `hay`. Short needles (the usual `.php`, `?sort=`)
/// and short paths go through `memchr` on the needle's first byte, which
/// costs nothing to set up; a long needle in a long path uses `memmem`,
/// which is linear. `memmem::find` builds its searcher on every call: on a
/// small file, where a check is a few `/*?fbclid=`-like rules matched in
/// full, that was half of a check. Below [`SHORT_HAY`] bytes, the
/// quadratic worst case of the first-byte search is bounded by a constant.
#[inline]
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, rest)) = needle.split_first() else { return Some(0) };
    if needle.len() > 4 && hay.len() > SHORT_HAY {
        return memmem::find(hay, needle);
    }
    // Inlined, sixteen positions a step: paths are a few dozen bytes, and
    // `memchr` and `memcmp` calls cost more than the search itself.
    let Some((&second, rest)) = rest.split_first() else { return find_any(hay, 0, [first]) };
    let mut from = 0;
    while let Some(at) = find_pair(hay, from, [first, second]) {
        if has_prefix(&hay[at + 2..], rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_short_and_long() {
        assert_eq!(find(b"abcabd", b"abd"), Some(3));
        assert_eq!(find(b"abcabd", b"abcabd"), Some(0));
        assert_eq!(find(b"abcab", b"abd"), None);
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"", b""), Some(0));
        assert_eq!(find(b"xxxxxyz", b"xyz"), Some(4));
        assert_eq!(find(b"aaaaaaaaab", b"aaaab"), Some(5));
    }

    #[test]
    fn shapes() {
        assert_eq!(classify(b"/a/b"), (4, Shape::Prefix));
        assert_eq!(classify(b"/a/b**"), (4, Shape::Prefix));
        assert_eq!(classify(b"/a/b$"), (4, Shape::Exact));
        assert_eq!(classify(b"/a$b"), (4, Shape::Prefix));
        assert_eq!(classify(b"/a$$"), (3, Shape::Exact));
        assert_eq!(classify(b"/a*b"), (2, Shape::Segment));
        assert_eq!(classify(b"/*.pdf$"), (1, Shape::Segment));
        assert_eq!(classify(b"/*a$b"), (1, Shape::Segment));
        assert_eq!(classify(b"/**a"), (1, Shape::Wild));
        assert_eq!(classify(b"/*a*b"), (1, Shape::Wild));
        assert_eq!(classify(b"/*a*"), (1, Shape::Segment));
        assert_eq!(classify(b"/*a**$"), (1, Shape::Segment));
        assert_eq!(classify(b"/x*a*$"), (2, Shape::Segment));
        assert_eq!(classify(b"/*a*b*"), (1, Shape::Wild));
        assert_eq!(classify(b"*"), (0, Shape::Prefix));
        assert_eq!(classify(b""), (0, Shape::Prefix));
        assert_eq!(classify(b"/*$"), (1, Shape::Prefix));
        assert_eq!(classify(b"/a**$"), (2, Shape::Prefix));
        assert_eq!(classify(b"/a*b$"), (2, Shape::Segment));
    }

    #[test]
    fn rfc_2_2_3_special_characters() {
        let yes = [
            ("/", "/"),
            ("/fish", "/fish*"),
            ("/fish/salmon.html", "/fish*"),
            ("/fish.php?id=anything", "/*.php"),
            ("/folder/filename.php", "/*.php$"),
            ("/filename.php", "/*.php$"),
            ("/a/b/c", "/*/c$"),
            ("/x/y.php", "*.php"),
            ("/a$", "/a$$"),
            ("/aXbXb", "/a*b$"),
            ("/ab", "/a*b*$"),
            ("/abab", "/*ab*ab$"),
            ("/xaby", "/*ab*"),
            ("/xab", "/*ab**"),
            ("/xab/", "/*ab*$"),
            ("/x.pdf", "/*.pdf$"),
        ];
        let no = [
            ("/Fish.asp", "/fish"),
            ("/catfish", "/fish"),
            ("/filename.php?parameters", "/*.php$"),
            ("/filename.php/", "/*.php$"),
            ("/aba", "/*ab*ab$"),
            ("/ab", "/*ab*ab$"),
            ("/a", "$"),
            ("/abc", "/ab$"),
            ("/", "x"),
            ("/xa", "/*ab*"),
            ("/x.pdfs", "/*.pdf$"),
            ("/.pd", "/*.pdf*$"),
        ];
        for (path, pat) in yes {
            assert!(matches(path.as_bytes(), pat.as_bytes()), "{pat} should match {path}");
        }
        for (path, pat) in no {
            assert!(!matches(path.as_bytes(), pat.as_bytes()), "{pat} should not match {path}");
        }
    }
}
