//! Times as the database keeps them (Unix milliseconds), and the one way
//! every page, report and alert shows one.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Unix milliseconds as an RFC 3339 time (UTC, to the second), or "never":
/// how every page and report shows a time the database keeps.
pub fn when(ms: Option<i64>) -> String {
    match ms {
        None => "never".to_string(),
        Some(ms) => {
            let t = UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
            humantime::format_rfc3339_seconds(t).to_string()
        }
    }
}
