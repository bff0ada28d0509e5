//! Extracts the part of a URL that robots.txt patterns are matched against
//! (path, params and query), the way Google's matcher does, odd URLs included.
//!
//! Nothing is decoded or re-encoded: Google expects callers to pass URLs in
//! their escaped form, and so do we.

use std::borrow::Cow;

use crate::bytes::find_any;

/// The bytes that can end the scan for where a path starts.
const STOPS: [u8; 5] = [b'/', b'?', b';', b':', b'#'];

/// The path, params and query of `url`, without the fragment, always
/// starting with `/`, and cut at a NUL byte as Google's matcher cuts it.
///
/// Borrows from `url` unless the result must gain a leading `/` (a URL whose
/// path part starts with `?` or `;`).
///
/// ```
/// use rules::target::path_of;
/// assert_eq!(&*path_of(b"https://example.com/a/b?c=d#frag"), b"/a/b?c=d");
/// assert_eq!(&*path_of(b"https://example.com"), b"/");
/// assert_eq!(&*path_of(b"example.com?q"), b"/?q");
/// assert_eq!(&*path_of(b"/just/a/path"), b"/just/a/path");
/// ```
pub fn path_of(url: &[u8]) -> Cow<'_, [u8]> {
    // Google's steps search the URL four times: for the first of `/?;`,
    // for `://`, for the first `/?;` after the authority, and for `#`. One
    // pass up to where the path starts finds the same places: a `#` met
    // before the path starts means there is no path, and only the first
    // `://` can end a scheme, and only before any `/?;`. The checks of
    // short URLs spent a third of their time in those four searches.
    //
    // A leading "//" is a scheme-relative URL: skip it so the host is not
    // mistaken for the path.
    //
    // `http://` and `https://`, as nearly every URL starts, are what the
    // scan would find first; taking them at once saves a search and a
    // branch that flips between the scheme and the path.
    let (mut i, mut scheme_seen) = if url.starts_with(b"https://") {
        (8, true)
    } else if url.starts_with(b"http://") {
        (7, true)
    } else {
        (if url.starts_with(b"//") { 2 } else { 0 }, false)
    };
    let path_start = loop {
        // Host names are long runs of ordinary bytes: skip them sixteen at a
        // time.
        let Some(at) = find_any(url, i, STOPS) else { return Cow::Borrowed(b"/") };
        let b = url[at];
        if b == b'/' || b == b'?' || b == b';' {
            break at;
        }
        if b == b'#' {
            return Cow::Borrowed(b"/");
        }
        // A `:`: it ends the scheme if it is the first `://`.
        i = at + 1;
        if !scheme_seen && url[i..].starts_with(b"//") {
            scheme_seen = true;
            i += 2;
        }
    };
    // The path ends at the fragment's `#` and, Google-specific, at a NUL:
    // the matcher takes the path as a C string, so only the bytes before a
    // NUL count (`/\0a` is `/`). Both cut, so the first of either ends it.
    let end = find_any(url, path_start, [0, b'#']).unwrap_or(url.len());
    let path = &url[path_start..end];
    if path[0] == b'/' {
        Cow::Borrowed(path)
    } else {
        let mut owned = Vec::with_capacity(path.len() + 1);
        owned.push(b'/');
        owned.extend_from_slice(path);
        Cow::Owned(owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_matches_googles_four_searches() {
        let alphabet = b"/?;:#a\0";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 12) as usize;
            let mut r = seed >> 4;
            // The schemes taken at once, their near misses, and none.
            let prefixes: [&[u8]; 6] = [b"", b"https://", b"http://", b"http:/", b"https:", b"HTTPS://"];
            let mut url = prefixes[(r % 6) as usize].to_vec();
            r /= 6;
            url.extend((0..len).map(|_| {
                let b = alphabet[(r % 7) as usize];
                r /= 7;
                b
            }));
            assert_eq!(
                &*path_of(&url),
                &crate::reference::path_by_searches(&url)[..],
                "{:?}",
                String::from_utf8_lossy(&url)
            );
        }
    }

    fn p(u: &str) -> String {
        String::from_utf8(path_of(u.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn google_path_extraction() {
        for (url, want) in [
            ("", "/"),
            ("http://www.example.com", "/"),
            ("http://www.example.com/", "/"),
            ("http://www.example.com/a", "/a"),
            ("http://www.example.com/a/", "/a/"),
            ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
            ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
            ("example.com", "/"),
            ("example.com/", "/"),
            ("example.com/a", "/a"),
            ("example.com/a/", "/a/"),
            ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
            ("a", "/"),
            ("a/", "/"),
            ("/a", "/a"),
            ("a/b", "/b"),
            ("example.com?a", "/?a"),
            ("example.com/a;b#c", "/a;b"),
            ("//a/b/c", "/b/c"),
            ("http://a#frag/b", "/"),
            ("http://a/b#c?d", "/b"),
            ("x;y://z/w", "/;y://z/w"),
            ("http://example.com/\0a", "/"),
            ("http://example.com/a\0b?c", "/a"),
            ("http://example.com\0/x", "/x"),
        ] {
            assert_eq!(p(url), want, "{url:?}");
        }
    }
}
