//! Appending groups to a robots.txt so that Google reads them as written:
//! the gateway's managed groups and the groups an AI policy compiles to.
//! The origin's text keeps its bytes; a trailing group with no rules gets
//! an explicit empty `Disallow:` (which allows everything, as the empty
//! group did), so the appended `User-agent` lines cannot join it.

use crate::parse::{self, Directive, Handler, KeyKind, MAX_FILE_BYTES};

/// The line that separates the origin's text from what was appended.
pub const MARK: &[u8] = b"\n# Managed by robotsgate\n";

/// `origin` with `groups` appended after [`MARK`]; `None` when the result
/// would pass 500 KiB, where Google would cut what was appended.
pub fn append(origin: &[u8], groups: &str) -> Option<Vec<u8>> {
    let mut out = origin.to_vec();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    if ends_with_open_group(origin) {
        out.extend_from_slice(b"Disallow:\n");
    }
    out.extend_from_slice(MARK);
    out.extend_from_slice(groups.trim_end().as_bytes());
    out.push(b'\n');
    (out.len() <= MAX_FILE_BYTES).then_some(out)
}

/// What [`fit`] left out of the origin's text to make room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The origin's first line left out (1-based); every line after it
    /// went too.
    pub from_line: u32,
    /// How many of the origin's bytes were left out.
    pub bytes: usize,
}

/// `origin` with `groups` appended, within the 500 KiB Google reads: as
/// [`append`] when that fits; else the origin's text is cut at a line end
/// so that the appended groups land whole inside the limit, and the cut is
/// returned. `None` only when the groups alone do not fit.
///
/// The appended groups are the operator's stated policy; an origin file
/// near the limit loses its last lines rather than the policy losing all
/// of its lines, which Google would otherwise never read.
pub fn fit(origin: &[u8], groups: &str) -> Option<(Vec<u8>, Option<Cut>)> {
    if let Some(whole) = append(origin, groups) {
        return Some((whole, None));
    }
    // Room for the mark, the groups, a closing `Disallow:` and line ends.
    let overhead = MARK.len() + groups.trim_end().len() + b"Disallow:\n".len() + 2;
    let budget = MAX_FILE_BYTES.checked_sub(overhead)?;
    let keep = origin[..budget.min(origin.len())].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let kept = &origin[..keep];
    let merged = append(kept, groups)?;
    let from_line = u32::try_from(kept.iter().filter(|&&b| b == b'\n').count() + 1).unwrap_or(u32::MAX);
    Some((merged, Some(Cut { from_line, bytes: origin.len() - keep })))
}

/// Whether the file's last group has `user-agent` lines and no rule yet.
pub fn ends_with_open_group(body: &[u8]) -> bool {
    #[derive(Default)]
    struct Tail {
        open: bool,
    }
    impl Handler for Tail {
        fn directive(&mut self, d: &Directive<'_>) {
            match d.kind {
                KeyKind::UserAgent => self.open = true,
                KeyKind::Allow | KeyKind::Disallow => self.open = false,
                _ => {}
            }
        }
    }
    let mut t = Tail::default();
    parse::parse(body, &mut t);
    t.open
}

/// The agents (lower-cased product tokens, or `*`) that both the managed
/// groups and the origin's file name. Google merges every group naming one
/// agent, so for these the origin's rules join the managed ones, and an
/// origin `Allow` as long as a managed `Disallow` wins over it: the managed
/// rule can silently stop working.
pub fn contested(origin: &[u8], groups: &str) -> Vec<String> {
    let ours = agents_named(groups.as_bytes());
    let theirs = agents_named(origin);
    ours.into_iter().filter(|a| theirs.contains(a)).collect()
}

/// Every agent a file's `user-agent` lines name, once each, in order.
fn agents_named(body: &[u8]) -> Vec<String> {
    #[derive(Default)]
    struct Agents(Vec<String>);
    impl Handler for Agents {
        fn directive(&mut self, d: &Directive<'_>) {
            if d.kind != KeyKind::UserAgent {
                return;
            }
            let name =
                parse::agent_key(d.value).map_or_else(|| "*".to_string(), |t| String::from_utf8_lossy(&t).into_owned());
            if !name.is_empty() && !self.0.contains(&name) {
                self.0.push(name);
            }
        }
    }
    let mut agents = Agents::default();
    parse::parse(body, &mut agents);
    agents.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_past_the_limit_lands_inside_it_and_the_cut_is_named() {
        let groups = "User-agent: GPTBot\nDisallow: /\n";
        assert_eq!(fit(b"User-agent: *\nDisallow: /x\n", groups).unwrap().1, None);
        let mut origin = b"User-agent: *\n".to_vec();
        let mut n = 1;
        while origin.len() < MAX_FILE_BYTES - 10 {
            origin.extend_from_slice(format!("Disallow: /p/{n}/\n").as_bytes());
            n += 1;
        }
        let (merged, cut) = fit(&origin, groups).unwrap();
        assert!(merged.len() <= MAX_FILE_BYTES, "{}", merged.len());
        let cut = cut.expect("a cut");
        assert!(cut.bytes > 0 && cut.from_line > 1);
        let robots = crate::Robots::parse(&merged);
        assert!(!robots.is_allowed("GPTBot", "https://s/page"), "the policy is read");
        assert!(!robots.is_allowed("other", "https://s/p/1/"), "the origin's first lines stay");
        let last = format!("/p/{}/", n - 1);
        assert!(robots.is_allowed("other", &format!("https://s{last}")), "its last lines went");
        // The cut falls at a line end: the kept text is the origin's prefix.
        let kept = origin.len() - cut.bytes;
        assert!(merged.starts_with(&origin[..kept]) && origin[kept - 1] == b'\n');
        assert!(fit(b"", &"# x\n".repeat(MAX_FILE_BYTES / 4)).is_none());
    }

    #[test]
    fn contested_agents_are_found() {
        let origin = b"User-agent: *\nDisallow: /admin\n\nUser-agent: gptbot/1.0\nAllow: /\n";
        let groups = "User-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\n";
        assert_eq!(contested(origin, groups), vec!["gptbot"]);
        // Why it matters: the origin's `Allow: /` joins the managed group and wins the tie.
        let merged = append(origin, groups).unwrap();
        assert!(crate::Robots::parse(&merged).is_allowed("GPTBot", "https://s/page"));
        assert!(contested(origin, "User-agent: *\nDisallow: /x\n") == vec!["*"]);
        assert!(contested(b"User-agent: Foo\nDisallow: /\n", groups).is_empty());
    }

    #[test]
    fn managed_groups_stay_separate() {
        let origin = b"User-agent: *\nDisallow: /admin\nUser-agent: Foo";
        let merged = append(origin, "User-agent: GPTBot\nDisallow: /\n").unwrap();
        let robots = crate::Robots::parse(&merged);
        assert!(!robots.is_allowed("GPTBot", "https://s/"));
        assert!(robots.is_allowed("Foo", "https://s/anything"), "Foo keeps its empty group");
        assert!(!robots.is_allowed("other", "https://s/admin"));
        let plain = append(b"User-agent: *\nDisallow: /x\n", "User-agent: CCBot\nDisallow: /").unwrap();
        assert!(!std::str::from_utf8(&plain).unwrap().contains("Disallow:\n\n"));
        let big = vec![b'#'; MAX_FILE_BYTES];
        assert!(append(&big, "User-agent: x\nDisallow: /").is_none());
    }
}
