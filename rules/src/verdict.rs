//! What a check answers: allowed or not, and why.

use std::fmt;

use crate::policy::Reason;

/// Whether a rule allows or disallows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleKind {
    /// An `Allow:` line.
    Allow,
    /// A `Disallow:` line (or one of its accepted typos).
    Disallow,
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleKind::Allow => "Allow",
            RuleKind::Disallow => "Disallow",
        })
    }
}

/// The rule that decided a verdict, borrowed from the [`crate::Robots`] it
/// came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleRef<'r> {
    /// 1-based line number in the file.
    pub line: u32,
    /// Allow or disallow.
    pub kind: RuleKind,
    /// The pattern as matched: percent-normalised, and for a rule derived
    /// from an `…/index.html` Allow, the bare directory with `$`. Its length
    /// is the rule's priority.
    pub pattern: &'r [u8],
    /// The value as written in the file.
    pub written: &'r [u8],
    /// The rule is the bare-directory Allow Google derives from an Allow
    /// whose last segment starts with `index.htm`.
    pub from_index_html: bool,
}

impl RuleRef<'_> {
    /// The priority Google gives the rule: its normalised pattern's length,
    /// `*` and `$` included.
    pub fn priority(&self) -> usize {
        self.pattern.len()
    }
}

impl fmt::Display for RuleRef<'_> {
    /// `line 3: Disallow: /private`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.kind, String::from_utf8_lossy(self.written))?;
        if self.from_index_html {
            write!(f, " (also allows {})", String::from_utf8_lossy(self.pattern))?;
        }
        Ok(())
    }
}

/// The group a crawler obeys: the merged groups that name it, or the `*`
/// groups when none does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupChoice<'r> {
    /// The crawler fell back to the `*` groups.
    pub global: bool,
    /// The line of the first `user-agent` of each merged group.
    pub lines: &'r [u32],
}

/// The answer to "may this crawler fetch this URL?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict<'r> {
    /// The crawler may fetch the URL.
    pub allowed: bool,
    /// The group that applied; `None` when no group names the crawler and
    /// there is no `*` group (then everything is allowed).
    pub group: Option<GroupChoice<'r>>,
    /// The rule that decided; `None` when no rule with a non-empty pattern
    /// matched (then the URL is allowed).
    pub rule: Option<RuleRef<'r>>,
    /// Why, when the verdict comes from a [`crate::Policy`] with no rules
    /// (a failed fetch, or no file); `None` for verdicts from rules.
    pub reason: Option<Reason>,
}

impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.allowed { "allowed" } else { "disallowed" })?;
        if let Some(reason) = &self.reason {
            return write!(f, " ({reason})");
        }
        match (&self.rule, &self.group) {
            (Some(rule), _) => write!(f, " by {rule}"),
            (None, Some(g)) if g.global => f.write_str(" (no rule matched in the * group)"),
            (None, Some(_)) => f.write_str(" (no rule matched in the crawler's group)"),
            (None, None) => f.write_str(" (no group applies to this crawler)"),
        }
    }
}
