//! The normal form of a request target: one spelling for every way of
//! writing the path an origin will serve, so that enforcement judges the
//! resource and not the spelling.
//!
//! Google's matcher compares bytes: `/%70rivate` does not match
//! `Disallow: /private`, yet every origin serves the same file for both
//! (RFC 3986 section 6.2.2). A gateway that judged only the raw target
//! could be walked around by re-spelling it. The normal form is:
//!
//! - **Percent-escapes of unreserved characters are decoded**
//!   (`A-Z a-z 0-9 - . _ ~`, RFC 3986 section 2.3): `%70` is `p`, `%2E` is
//!   `.`. Escapes of anything else stay escaped, with upper-case hex
//!   (`%2f` is written `%2F`): `%25` stays `%25`, so `/%2570rivate` is not
//!   `/private`.
//! - **Bytes that may not stand raw in a target are escaped**, upper-case:
//!   bytes past ASCII (as Google's matcher escapes them in patterns, so
//!   `Disallow: /café` meets a raw UTF-8 request), controls, space,
//!   `"<>\^`{|}` and `#`. A `#` cannot start a fragment in a request
//!   target (RFC 9112 section 3.2), so it is data, not an end.
//! - **Dot segments are removed** from the path (RFC 3986 section 5.2.4):
//!   `/a/../private` is `/private`, `/./private` is `/private`.
//! - With [`Slashes::Merged`] (what nginx and most frameworks do, and the
//!   gateway's default): `%2F`, `\` and `%5C` are read as `/`, and runs of
//!   `/` become one, before dot segments are removed.
//!
//! The query keeps its structure: only its unreserved escapes are decoded,
//! its hex upper-cased and its unsafe bytes escaped (`%3D` is not `=`
//! there). Case is never changed outside escapes: `/Private` is another
//! path. Patterns are not rewritten: verdicts stay Google's.

use std::borrow::Cow;

use crate::{Agent, Verdict};

/// How the origin reads slashes in a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Slashes {
    /// RFC 3986 alone: `%2F` is data and `//` an empty segment.
    Strict,
    /// `%2F`, `\` and `%5C` are `/`, and repeated slashes are one (nginx's
    /// `merge_slashes`, and most frameworks).
    #[default]
    Merged,
}

/// RFC 3986's unreserved characters: their escaped and raw forms are the
/// same character.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes kept escaped: everything not allowed raw in a request target.
/// `%` is left alone (an escape's start; a stray one stays as written).
fn must_escape(b: u8) -> bool {
    !b.is_ascii_graphic() || matches!(b, b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}' | b'#')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_escaped(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// The normal form of an origin-form request target (path and optional
/// query). Borrows `target` when it is already in normal form.
///
/// ```
/// use rules::normal::{normalize, Slashes};
/// let n = |t: &str| String::from_utf8(normalize(t.as_bytes(), Slashes::Merged).into_owned()).unwrap();
/// assert_eq!(n("/%70rivate/./secret"), "/private/secret");
/// assert_eq!(n("/a/%2E%2E/private//secret"), "/private/secret");
/// assert_eq!(n("/private%2fsecret"), "/private/secret");
/// assert_eq!(n("/search?%71=shoes&x=%2f"), "/search?q=shoes&x=%2F");
/// assert_eq!(n("/%2570rivate"), "/%2570rivate");
/// assert_eq!(n("/Private"), "/Private");
/// ```
pub fn normalize(target: &[u8], slashes: Slashes) -> Cow<'_, [u8]> {
    let split = memchr::memchr(b'?', target).unwrap_or(target.len());
    let (path, query) = target.split_at(split);
    if is_normal_path(path, slashes) && is_normal_query(query) {
        return Cow::Borrowed(target);
    }
    let mut out = Vec::with_capacity(target.len() + 8);
    normal_path(path, slashes, &mut out);
    normal_query(query, &mut out);
    Cow::Owned(out)
}

/// Whether the path needs no change: no escape to touch, no byte to
/// escape, no dot segment, and (merged) no `//` or `\`.
fn is_normal_path(path: &[u8], slashes: Slashes) -> bool {
    if path.first() != Some(&b'/') {
        return false;
    }
    let merged = slashes == Slashes::Merged;
    let mut prev = 0u8;
    for (i, &b) in path.iter().enumerate() {
        if b == b'%' || must_escape(b) || (merged && b == b'/' && prev == b'/') {
            return false;
        }
        if b == b'.' && prev == b'/' {
            let rest = &path[i..];
            if rest == b"." || rest == b".." || rest.starts_with(b"./") || rest.starts_with(b"../") {
                return false;
            }
        }
        prev = b;
    }
    true
}

fn is_normal_query(query: &[u8]) -> bool {
    !query.iter().any(|&b| b == b'%' || must_escape(b))
}

/// Decodes and escapes the path's bytes into segments, then removes dot
/// segments while writing them to `out`.
fn normal_path(path: &[u8], slashes: Slashes, out: &mut Vec<u8>) {
    let merged = slashes == Slashes::Merged;
    // First pass: one spelling per byte, `/` only where the origin splits.
    let mut flat = Vec::with_capacity(path.len() + 1);
    if path.first() != Some(&b'/') {
        flat.push(b'/');
    }
    let mut i = 0;
    while i < path.len() {
        let b = path[i];
        if b == b'%'
            && let (Some(h), Some(l)) = (path.get(i + 1).copied().and_then(hex), path.get(i + 2).copied().and_then(hex))
        {
            let v = h << 4 | l;
            if unreserved(v) {
                flat.push(v);
            } else if merged && (v == b'/' || v == b'\\') {
                flat.push(b'/');
            } else {
                push_escaped(&mut flat, v);
            }
            i += 3;
            continue;
        }
        if merged && b == b'\\' {
            flat.push(b'/');
        } else if must_escape(b) {
            push_escaped(&mut flat, b);
        } else {
            flat.push(b);
        }
        i += 1;
    }
    // Second pass: RFC 3986 section 5.2.4 over the segments, with empty
    // segments dropped when slashes merge.
    let start = out.len();
    let segments = flat[1..].split(|&b| b == b'/');
    let count = flat[1..].iter().filter(|&&b| b == b'/').count() + 1;
    for (n, seg) in segments.enumerate() {
        let last = n + 1 == count;
        match seg {
            b"." => {
                if last {
                    out.push(b'/');
                }
            }
            b".." => {
                // Drop the last written segment, keeping its leading slash
                // out: `/a/b/..` is `/a/`.
                let cut = out[start..].iter().rposition(|&b| b == b'/').map_or(start, |p| start + p);
                out.truncate(cut);
                if last {
                    out.push(b'/');
                }
            }
            b"" if merged && !last => {}
            _ => {
                out.push(b'/');
                out.extend_from_slice(seg);
            }
        }
    }
    if out.len() == start {
        out.push(b'/');
    }
}

/// The query, `?` included: unreserved escapes decoded, the rest kept
/// escaped in upper case, unsafe bytes escaped.
fn normal_query(query: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < query.len() {
        let b = query[i];
        if b == b'%'
            && let (Some(h), Some(l)) =
                (query.get(i + 1).copied().and_then(hex), query.get(i + 2).copied().and_then(hex))
        {
            let v = h << 4 | l;
            if unreserved(v) {
                out.push(v)
            } else {
                push_escaped(out, v)
            }
            i += 3;
            continue;
        }
        if must_escape(b) {
            push_escaped(out, b)
        } else {
            out.push(b)
        }
        i += 1;
    }
}

impl<'r> Agent<'r> {
    /// The verdict for an origin-form request target as the origin will
    /// serve it: disallowed when Google's matcher disallows the raw target
    /// or its [normal form](normalize). A compliant crawler never asks for
    /// a target its raw form disallows, so nothing it may fetch is refused;
    /// a re-spelling of a disallowed path is.
    ///
    /// The raw target is read as Google reads the URL a crawler holds:
    /// up to any `#`. The verdict returned is the disallowing one, else
    /// the raw target's.
    ///
    /// ```
    /// use rules::{normal::Slashes, Robots};
    /// let robots = Robots::parse(b"User-agent: *\nDisallow: /private/\n");
    /// let bot = robots.agent("Googlebot");
    /// assert!(!bot.check_request(b"/%70rivate/x", Slashes::Merged).allowed);
    /// assert!(bot.check_request(b"/Private/x", Slashes::Merged).allowed);
    /// ```
    pub fn check_request(&self, target: &[u8], slashes: Slashes) -> Verdict<'r> {
        let raw = &target[..memchr::memchr(b'#', target).unwrap_or(target.len())];
        let verdict = self.check_path(if raw.is_empty() { b"/" } else { raw });
        if !verdict.allowed {
            return verdict;
        }
        let normal = normalize(target, slashes);
        if *normal == *raw {
            return verdict;
        }
        let second = self.check_path(&normal);
        if second.allowed { verdict } else { second }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(t: &str, s: Slashes) -> String {
        String::from_utf8(normalize(t.as_bytes(), s).into_owned()).unwrap()
    }

    #[test]
    fn spellings_of_one_resource_meet() {
        for (target, merged, strict) in [
            ("/", "/", "/"),
            ("", "/", "/"),
            ("/private/secret", "/private/secret", "/private/secret"),
            ("/%70rivate/secret", "/private/secret", "/private/secret"),
            ("/./private/secret", "/private/secret", "/private/secret"),
            ("/a/../private/secret", "/private/secret", "/private/secret"),
            ("/a/%2E%2E/private/secret", "/private/secret", "/private/secret"),
            ("/a/%2e%2E/private/secret", "/private/secret", "/private/secret"),
            ("/private%2Fsecret", "/private/secret", "/private%2Fsecret"),
            ("/private%2fsecret", "/private/secret", "/private%2Fsecret"),
            ("//private/secret", "/private/secret", "//private/secret"),
            ("/private\\secret", "/private/secret", "/private%5Csecret"),
            ("/private%5csecret", "/private/secret", "/private%5Csecret"),
            ("/a//..//private", "/private", "/a//private"),
            ("/..", "/", "/"),
            ("/../../x", "/x", "/x"),
            ("/a/b/..", "/a/", "/a/"),
            ("/a/b/.", "/a/b/", "/a/b/"),
            ("/a/.b/..c", "/a/.b/..c", "/a/.b/..c"),
            ("/a//", "/a/", "/a//"),
            ("/files/a.pd%66", "/files/a.pdf", "/files/a.pdf"),
            ("/search?%71=shoes", "/search?q=shoes", "/search?q=shoes"),
            ("/s?a=%2f&b=%3d/../x", "/s?a=%2F&b=%3D/../x", "/s?a=%2F&b=%3D/../x"),
            ("/pub#/../private", "/private", "/private"),
            ("/pub#x", "/pub%23x", "/pub%23x"),
            ("/caf\u{e9}", "/caf%C3%A9", "/caf%C3%A9"),
            ("/%2570rivate", "/%2570rivate", "/%2570rivate"),
            ("/Private/secret", "/Private/secret", "/Private/secret"),
            ("/a%zz", "/a%zz", "/a%zz"),
            ("/a%", "/a%", "/a%"),
        ] {
            assert_eq!(n(target, Slashes::Merged), merged, "merged {target:?}");
            assert_eq!(n(target, Slashes::Strict), strict, "strict {target:?}");
        }
    }

    #[test]
    fn normal_targets_are_borrowed() {
        for t in ["/", "/a/b?c=d", "/a.b/.c/..d", "/a;b=c"] {
            assert!(matches!(normalize(t.as_bytes(), Slashes::Merged), Cow::Borrowed(_)), "{t}");
        }
        for t in ["/a//b", "/./a", "/a/..", "/%41", "/a?%41"] {
            assert!(matches!(normalize(t.as_bytes(), Slashes::Merged), Cow::Owned(_)), "{t}");
        }
    }
}
