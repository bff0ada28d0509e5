//! Extracts the part of a URL that robots.txt patterns are matched against
//! (path, params and query), the way Google's matcher does, odd URLs included.
//!
//! Nothing is decoded or re-encoded: Google expects callers to pass URLs in
//! their escaped form, and so do we.

use std::borrow::Cow;

/// The path, params and query of `url`, without the fragment, always
/// starting with `/`.
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
    // A leading "//" is a scheme-relative URL: skip it so the host is not
    // mistaken for the path.
    let search_start = if url.starts_with(b"//") { 2 } else { 0 };
    let early_path = find_any(url, search_start, b"/?;");
    let mut authority_start = find_sub(url, search_start, b"://");
    // "://" after the path has started is part of the path, not a scheme.
    if let (Some(path), Some(authority)) = (early_path, authority_start)
        && path < authority
    {
        authority_start = None;
    }
    let authority_start = match authority_start {
        Some(i) => i + 3,
        None => search_start,
    };
    let Some(path_start) = find_any(url, authority_start, b"/?;") else {
        return Cow::Borrowed(b"/");
    };
    let hash = memchr::memchr(b'#', &url[search_start..]).map(|i| i + search_start);
    if hash.is_some_and(|h| h < path_start) {
        return Cow::Borrowed(b"/");
    }
    let path = &url[path_start..hash.unwrap_or(url.len())];
    if path[0] == b'/' {
        Cow::Borrowed(path)
    } else {
        let mut owned = Vec::with_capacity(path.len() + 1);
        owned.push(b'/');
        owned.extend_from_slice(path);
        Cow::Owned(owned)
    }
}

/// Index of the first byte at or after `from` that is one of `set`.
fn find_any(hay: &[u8], from: usize, set: &[u8; 3]) -> Option<usize> {
    memchr::memchr3(set[0], set[1], set[2], hay.get(from..)?).map(|i| i + from)
}

fn find_sub(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    crate::pattern::find(hay.get(from..)?, needle).map(|i| i + from)
}

#[cfg(test)]
mod tests {
    use super::path_of;

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
        ] {
            assert_eq!(p(url), want, "{url:?}");
        }
    }
}
