//! Counts in words, for every message, report and page the monitor writes:
//! "1 site", "2 sites".

/// `n` and the noun that agrees with it: "1 verdict flipped", "2 verdicts
/// flipped". One helper for every count the monitor words, a length
/// (`usize`) or a count the database keeps (`i64`).
pub fn plural(n: impl TryInto<i64>, one: &str, many: &str) -> String {
    let n: i64 = n.try_into().unwrap_or(i64::MAX);
    format!("{n} {}", if n == 1 { one } else { many })
}
