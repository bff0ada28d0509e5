//! The HTML part of an alert mail: a banner in the severity's colour, the
//! diff as a table coloured line by line with the lines that decided a flip
//! marked, and a link to the console.
//!
//! Mail clients (Gmail, Outlook) drop `<style>` sheets and scripts and keep
//! tables and `style` attributes, so everything here is a table or an
//! inline style. Every piece of content is escaped: a robots.txt is
//! untrusted.

use std::fmt::Write as _;

use robotsgate_config::AlertSeverity;

/// The colour and the word a severity's banner shows.
fn banner(severity: AlertSeverity) -> (&'static str, &'static str) {
    match severity {
        AlertSeverity::Critical => ("#b42318", "CRITICAL"),
        AlertSeverity::Warning => ("#b54708", "WARNING"),
        AlertSeverity::Info => ("#175cd3", "INFO"),
    }
}

/// The whole HTML part: the banner, `inner` (already escaped), and the link
/// to the console when its address is known.
pub fn page(severity: AlertSeverity, inner: &str, link: Option<&str>) -> String {
    let (colour, label) = banner(severity);
    let mut html = String::from(
        "<!DOCTYPE html><html><body style=\"margin:0;padding:16px;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#101828\">",
    );
    let _ = write!(
        html,
        "<div data-severity=\"{}\" style=\"background:{colour};color:#fff;padding:8px 12px;border-radius:4px;font-weight:bold\">{label} · robotsgate</div>",
        severity.as_str()
    );
    html.push_str(inner);
    if let Some(link) = link {
        let _ = write!(html, "<p><a href=\"{}\" style=\"color:{colour}\">Open it in the console</a></p>", esc(link));
    }
    html.push_str("</body></html>");
    html
}

/// A table with a header row, in inline styles; a cell saying `allowed…`
/// is green and `disallowed…` red, so a flip reads at a glance.
pub fn table<const N: usize>(head: &[&str; N], rows: &[[String; N]]) -> String {
    const EDGE: &str = "border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top";
    let mut html = String::from("<table cellpadding=\"0\" cellspacing=\"0\" style=\"border-collapse:collapse\"><tr>");
    for h in head {
        let _ = write!(html, "<th style=\"{EDGE};background:#f6f8fa\">{}</th>", esc(h));
    }
    html.push_str("</tr>");
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            let colour = if cell.starts_with("disallowed") {
                "color:#b42318;"
            } else if cell.starts_with("allowed") {
                "color:#116329;"
            } else {
                ""
            };
            let _ = write!(html, "<td style=\"{colour}{EDGE}\">{}</td>", esc(cell));
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

/// Cell style shared by every line of the diff.
const CELL: &str = "font-family:SFMono-Regular,Consolas,Menlo,monospace;font-size:13px;white-space:pre-wrap;word-break:break-all;padding:1px 8px";

/// A unified diff (as `excerpt::diff` writes it) as a table: additions on
/// green, removals on red, hunk headers grey, and the lines that decided a
/// flip (`decided_old` lines of the file before, `decided_new` after) in
/// bold with a red edge and the words "decides a flip". Text that is not a
/// unified diff (a binary body's description) is a plain block.
pub fn diff_table(diff: &str, decided_old: &[u32], decided_new: &[u32]) -> String {
    if !diff.starts_with("--- ") {
        return format!("<pre style=\"background:#f6f8fa;padding:8px;{CELL}\">{}</pre>", esc(diff));
    }
    let mut html = String::from(
        "<table cellpadding=\"0\" cellspacing=\"0\" role=\"presentation\" style=\"border-collapse:collapse;width:100%;border:1px solid #d0d7de\">",
    );
    let (mut old_n, mut new_n) = (0u32, 0u32);
    for line in diff.lines() {
        let (background, colour, old_line, new_line) = if line.starts_with("--- ") || line.starts_with("+++ ") {
            ("#f6f8fa", "#57606a", None, None)
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            (old_n, new_n) = hunk_starts(rest);
            ("#ddf4ff", "#57606a", None, None)
        } else if line.starts_with('+') {
            new_n += 1;
            ("#e6ffec", "#116329", None, Some(new_n - 1))
        } else if line.starts_with('-') {
            old_n += 1;
            ("#ffebe9", "#82071e", Some(old_n - 1), None)
        } else if line.starts_with(' ') {
            old_n += 1;
            new_n += 1;
            ("#ffffff", "#24292f", Some(old_n - 1), Some(new_n - 1))
        } else {
            // The "… N more changed lines" note.
            ("#fff8c5", "#6e5300", None, None)
        };
        let decides =
            old_line.is_some_and(|n| decided_old.contains(&n)) || new_line.is_some_and(|n| decided_new.contains(&n));
        let (weight, edge, note) = if decides {
            ("font-weight:bold;", "border-left:4px solid #b42318;", " \u{25c0} decides a flip")
        } else {
            ("", "border-left:4px solid transparent;", "")
        };
        let _ = write!(
            html,
            "<tr{}><td style=\"background:{background};color:{colour};{weight}{edge}{CELL}\">{}{note}</td></tr>",
            if decides { " data-decides=\"1\"" } else { "" },
            esc(line)
        );
    }
    html.push_str("</table>");
    html
}

/// The first old and new line numbers of a hunk, from `-a,b +c,d @@`.
fn hunk_starts(header: &str) -> (u32, u32) {
    let mut parts = header.split_whitespace();
    let start = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign)).and_then(|p| p.split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(1)
    };
    let old = start(parts.next(), '-');
    let new = start(parts.next(), '+');
    (old, new)
}

/// Text as HTML text or attribute value.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "--- before\n+++ after\n@@ -1,2 +1,3 @@\n User-agent: *\n Disallow: /admin\n+Disallow: /p<x>\n";

    #[test]
    fn lines_are_coloured_and_the_deciding_one_marked() {
        let html = diff_table(DIFF, &[], &[3]);
        assert_eq!(html.matches("<tr").count(), 6);
        assert_eq!(html.matches("data-decides").count(), 1);
        let marked = html.split("<tr").find(|r| r.contains("data-decides")).unwrap();
        assert!(marked.contains("#e6ffec") && marked.contains("+Disallow: /p&lt;x&gt;"), "{marked}");
        // Context lines count on both sides: old line 2 is `Disallow: /admin`.
        let html = diff_table(DIFF, &[2], &[]);
        let marked = html.split("<tr").find(|r| r.contains("data-decides")).unwrap();
        assert!(marked.contains("Disallow: /admin"), "{marked}");
    }

    #[test]
    fn not_a_diff_is_a_block() {
        let html = diff_table("before: text\nafter: binary <b>\n", &[1], &[1]);
        assert!(html.starts_with("<pre") && html.contains("&lt;b&gt;") && !html.contains("data-decides"));
    }

    #[test]
    fn hunk_headers_give_line_numbers() {
        assert_eq!(hunk_starts("-3,4 +5,6 @@"), (3, 5));
        assert_eq!(hunk_starts("-1 +1 @@"), (1, 1));
        assert_eq!(hunk_starts("garbage"), (1, 1));
    }
}
