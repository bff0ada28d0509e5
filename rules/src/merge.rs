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
