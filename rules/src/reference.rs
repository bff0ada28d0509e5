//! A deliberately simple matcher, written from the specification of Google's
//! algorithm rather than for speed, that the fast engine is tested against.
//!
//! It re-reads the whole file for every check, keeps the streaming state
//! Google's matcher keeps (which agents the current lines apply to, and the
//! best Allow and Disallow match so far for the specific and the global
//! groups), and matches patterns with the offset-list algorithm: the set of
//! every path position the pattern so far can end at. It is quadratic and
//! allocates; use [`crate::Robots`] for real work.

use crate::parse::{self, Directive, Handler, KeyKind};

/// The path, params and query of `url` by Google's steps as written: four
/// searches (for the first of `/?;`, for `://`, for the first `/?;` after
/// the authority, and for `#`), then the path as the matcher receives it,
/// a C string, so that only the bytes before a NUL count. The engine's
/// [`crate::target::path_of`] finds the same in one pass, and is tested
/// against this.
pub fn path_by_searches(url: &[u8]) -> Vec<u8> {
    fn find_any(hay: &[u8], from: usize) -> Option<usize> {
        hay.get(from..)?.iter().position(|b| b"/?;".contains(b)).map(|i| i + from)
    }
    fn find_sub(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
        hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
    }
    let search_start = if url.starts_with(b"//") { 2 } else { 0 };
    let early_path = find_any(url, search_start);
    let mut authority = find_sub(url, search_start, b"://");
    if let (Some(p), Some(a)) = (early_path, authority)
        && p < a
    {
        authority = None;
    }
    let authority_start = authority.map_or(search_start, |a| a + 3);
    let Some(path_start) = find_any(url, authority_start) else { return b"/".to_vec() };
    let hash = find_sub(url, search_start, b"#");
    if hash.is_some_and(|h| h < path_start) {
        return b"/".to_vec();
    }
    let path = &url[path_start..hash.unwrap_or(url.len())];
    let path = if path[0] == b'/' { path.to_vec() } else { [b"/", path].concat() };
    // `c_str()`: the matcher stops at the first NUL.
    match path.iter().position(|&b| b == 0) {
        Some(nul) => path[..nul].to_vec(),
        None => path,
    }
}

/// Whether `pattern` matches `path`, by tracking every position in `path`
/// that the pattern read so far can end at.
pub fn offset_list_matches(path: &[u8], pattern: &[u8]) -> bool {
    let mut positions: Vec<usize> = vec![0];
    for (i, &p) in pattern.iter().enumerate() {
        if p == b'$' && i + 1 == pattern.len() {
            return positions.last() == Some(&path.len());
        }
        if p == b'*' {
            positions = (positions[0]..=path.len()).collect();
        } else {
            positions = positions.iter().filter(|&&at| path.get(at) == Some(&p)).map(|at| at + 1).collect();
            if positions.is_empty() {
                return false;
            }
        }
    }
    true
}

/// The best match of one kind: its priority and line, or none (-1).
#[derive(Clone, Copy, Debug)]
struct Best {
    priority: i64,
    line: u32,
}

impl Default for Best {
    fn default() -> Self {
        Best { priority: -1, line: 0 }
    }
}

impl Best {
    fn offer(&mut self, priority: i64, line: u32) {
        if priority > self.priority {
            *self = Best { priority, line };
        }
    }
}

#[derive(Debug)]
struct Streaming<'a> {
    agent: &'a [u8],
    path: &'a [u8],
    allow_specific: Best,
    disallow_specific: Best,
    allow_global: Best,
    disallow_global: Best,
    seen_global: bool,
    seen_specific: bool,
    ever_seen_specific: bool,
    seen_separator: bool,
}

impl Handler for Streaming<'_> {
    fn directive(&mut self, d: &Directive<'_>) {
        match d.kind {
            KeyKind::UserAgent => {
                if self.seen_separator {
                    self.seen_specific = false;
                    self.seen_global = false;
                    self.seen_separator = false;
                }
                if parse::is_global_agent(d.value) {
                    self.seen_global = true;
                } else if parse::product_token(d.value).eq_ignore_ascii_case(self.agent) {
                    self.seen_specific = true;
                    self.ever_seen_specific = true;
                }
            }
            KeyKind::Allow | KeyKind::Disallow => {
                if !(self.seen_global || self.seen_specific) {
                    return;
                }
                self.seen_separator = true;
                let pattern = parse::normalize_pattern(d.value);
                self.rule(d.kind == KeyKind::Allow, &pattern, d.line);
            }
            KeyKind::Sitemap | KeyKind::Unknown => {}
        }
    }
}

impl Streaming<'_> {
    fn rule(&mut self, allow: bool, pattern: &[u8], line: u32) {
        if offset_list_matches(self.path, pattern) {
            let priority = pattern.len() as i64;
            let slot = match (allow, self.seen_specific) {
                (true, true) => &mut self.allow_specific,
                (true, false) => &mut self.allow_global,
                (false, true) => &mut self.disallow_specific,
                (false, false) => &mut self.disallow_global,
            };
            slot.offer(priority, line);
        } else if allow {
            // Google-specific: `…/index.htm(l)` also allows the directory.
            if let Some(slash) = pattern.iter().rposition(|b| *b == b'/')
                && pattern[slash..].starts_with(b"/index.htm")
            {
                let mut bare = pattern[..=slash].to_vec();
                bare.push(b'$');
                self.rule(true, &bare, line);
            }
        }
    }

    /// Google's decision: `Some(line)` of the deciding rule (0 when none)
    /// and whether the URL is disallowed.
    fn outcome(&self) -> (bool, u32) {
        let (a, d) = (self.allow_specific, self.disallow_specific);
        if a.priority > 0 || d.priority > 0 {
            return if d.priority > a.priority { (false, d.line) } else { (true, a.line) };
        }
        if self.ever_seen_specific {
            return (true, 0);
        }
        let (a, d) = (self.allow_global, self.disallow_global);
        if a.priority > 0 || d.priority > 0 {
            return if d.priority > a.priority { (false, d.line) } else { (true, a.line) };
        }
        (true, 0)
    }
}

/// Google's verdict for `agent` fetching `url`: whether it is allowed, and
/// the line of the deciding rule (0 when no rule decided).
///
/// ```
/// use rules::reference::check;
/// assert_eq!(check(b"User-agent: *\nDisallow: /x\n", b"bot", b"http://a/x/y"), (false, 2));
/// ```
pub fn check(body: &[u8], agent: &[u8], url: &[u8]) -> (bool, u32) {
    let path = path_by_searches(url);
    let mut s = Streaming {
        agent,
        path: &path,
        allow_specific: Best::default(),
        disallow_specific: Best::default(),
        allow_global: Best::default(),
        disallow_global: Best::default(),
        seen_global: false,
        seen_specific: false,
        ever_seen_specific: false,
        seen_separator: false,
    };
    parse::parse(body, &mut s);
    s.outcome()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern;

    #[test]
    fn offset_list_agrees_with_greedy_on_small_alphabet() {
        // Every pattern and path over {a, b, *, $} up to a small length.
        fn all(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
            let mut out = vec![Vec::new()];
            let mut frontier = vec![Vec::new()];
            for _ in 0..max {
                let mut next = Vec::new();
                for s in &frontier {
                    for &c in alphabet {
                        let mut t: Vec<u8> = s.clone();
                        t.push(c);
                        next.push(t);
                    }
                }
                out.extend(next.iter().cloned());
                frontier = next;
            }
            out
        }
        let patterns = all(b"ab*$", 5);
        let paths = all(b"ab$", 5);
        for pat in &patterns {
            for path in &paths {
                assert_eq!(
                    offset_list_matches(path, pat),
                    pattern::matches(path, pat),
                    "pattern {:?} path {:?}",
                    String::from_utf8_lossy(pat),
                    String::from_utf8_lossy(path)
                );
            }
        }
    }
}
