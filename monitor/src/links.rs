//! Addresses of the console's pages, as the core (alerts, mail) and the
//! console itself write them. The core links to the console without
//! depending on it: both depend on this module.

/// `s` as one path segment or query value: everything but unreserved
/// characters percent-encoded.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The console's page of `site`, under the console's address `base`.
pub fn site_page(base: &str, site: &str) -> String {
    // Site names are the operator's, but may hold anything a URL path does not.
    format!("{}/sites/{}", base.trim_end_matches('/'), encode(site))
}

#[cfg(test)]
mod tests {
    #[test]
    fn site_names_are_one_segment() {
        assert_eq!(super::site_page("http://c:8484/", "a b/c"), "http://c:8484/sites/a%20b%2Fc");
    }
}
