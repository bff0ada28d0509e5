//! Which robots.txt governs a page: the one at `/robots.txt` of the same
//! scheme, host and port. Hosts are compared in their ASCII (punycode) form
//! and lower case; default ports (80 for http, 443 for https, 21 for ftp)
//! are dropped, other ports kept. Parsing and IDNA come from the `url`
//! crate (which uses `idna`), never from string surgery.

use url::Url;

/// A URL that cannot have a robots.txt.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScopeError {
    /// The text is not an absolute URL.
    #[error("`{url}` is not an absolute URL: {reason}")]
    Invalid {
        /// The URL as given.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// The URL has no host (`mailto:`, `file:`, `data:` …).
    #[error("`{0}` has no host, so no robots.txt applies to it")]
    NoHost(String),
}

fn parse(url: &str) -> Result<Url, ScopeError> {
    let parsed = Url::parse(url).map_err(|e| ScopeError::Invalid { url: url.to_string(), reason: e.to_string() })?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(ScopeError::NoHost(url.to_string()));
    }
    Ok(parsed)
}

/// The robots.txt URL that governs `page_url`.
///
/// ```
/// use rules::scope::robots_url;
/// assert_eq!(robots_url("https://Example.COM:443/a/b?c#d").unwrap(), "https://example.com/robots.txt");
/// assert_eq!(robots_url("http://example.com:8181/x").unwrap(), "http://example.com:8181/robots.txt");
/// assert_eq!(robots_url("http://例子.中国/page").unwrap(), "http://xn--fsqu00a.xn--fiqs8s/robots.txt");
/// ```
pub fn robots_url(page_url: &str) -> Result<String, ScopeError> {
    let mut url = parse(page_url)?;
    // Cannot fail for a URL with a host.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_path("/robots.txt");
    url.set_query(None);
    url.set_fragment(None);
    Ok(url.into())
}

/// Whether the robots.txt at `robots_url` governs `page_url`: same scheme,
/// host and port, and `robots_url` is the `/robots.txt` at its root.
///
/// ```
/// use rules::scope::applies_to;
/// assert!(applies_to("http://example.com/robots.txt", "http://example.com/folder/file"));
/// assert!(!applies_to("http://example.com/robots.txt", "https://example.com/"));
/// assert!(!applies_to("http://example.com/robots.txt", "http://shop.example.com/"));
/// ```
pub fn applies_to(robots_url: &str, page_url: &str) -> bool {
    let (Ok(robots), Ok(page)) = (parse(robots_url), parse(page_url)) else { return false };
    robots.path() == "/robots.txt"
        && robots.scheme() == page.scheme()
        && robots.host_str() == page.host_str()
        && robots.port_or_known_default() == page.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_documented_examples() {
        let r = "http://example.com/robots.txt";
        for page in ["http://example.com/", "http://example.com/folder/file", "http://example.com:80/x"] {
            assert!(applies_to(r, page), "{page}");
        }
        for page in
            ["http://other.example.com/", "https://example.com/", "http://example.com:8181/", "http://www.example.com/"]
        {
            assert!(!applies_to(r, page), "{page}");
        }
        assert!(!applies_to("http://www.example.com/robots.txt", "http://example.com/"));
        assert!(applies_to("http://www.example.com/robots.txt", "http://www.example.com/shop"));
        assert!(applies_to("ftp://example.com/robots.txt", "ftp://example.com/files/a"));
        assert!(!applies_to("ftp://example.com/robots.txt", "http://example.com/"));
        assert!(applies_to("http://example.com:8181/robots.txt", "http://example.com:8181/x"));
        assert!(!applies_to("http://example.com:8181/robots.txt", "http://example.com/x"));
        assert!(applies_to("https://example.com:443/robots.txt", "https://EXAMPLE.com/x"));
        assert!(!applies_to("http://example.com/other/robots.txt", "http://example.com/other/x"));
    }

    #[test]
    fn idn_and_ports() {
        assert!(applies_to("http://例子.中国/robots.txt", "http://xn--fsqu00a.xn--fiqs8s/page"));
        assert!(applies_to("http://xn--fsqu00a.xn--fiqs8s/robots.txt", "http://例子.中国/page"));
        assert_eq!(robots_url("http://BÜCHER.example:80/x").unwrap(), "http://xn--bcher-kva.example/robots.txt");
        assert_eq!(robots_url("ftp://example.com:21/pub/file").unwrap(), "ftp://example.com/robots.txt");
        assert_eq!(robots_url("https://example.com:8443/a").unwrap(), "https://example.com:8443/robots.txt");
        assert_eq!(robots_url("https://user:pw@example.com/a").unwrap(), "https://example.com/robots.txt");
        assert_eq!(robots_url("http://192.0.2.1:8080/a").unwrap(), "http://192.0.2.1:8080/robots.txt");
    }

    #[test]
    fn unusable_urls_are_errors() {
        assert!(matches!(robots_url("/relative/path"), Err(ScopeError::Invalid { .. })));
        assert!(matches!(robots_url("mailto:someone@example.com"), Err(ScopeError::NoHost(_))));
        assert!(!applies_to("not a url", "http://example.com/"));
    }
}
