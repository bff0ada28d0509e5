//! Where a gateway site's origin is: `origin:` as people write it, either
//! `host:port` or a URL (`http://127.0.0.1:8080`, `https://app.internal`),
//! read one way for `--check`, for proxied requests and for robots.txt
//! refreshes, so that whatever `--check` accepts is what serves.

/// An origin server: the `host:port` to connect to, and whether to speak TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` (`[v6]:port` for an IPv6 literal).
    pub authority: String,
    /// Whether the connection is TLS (`https://`, or `origin_tls: true`).
    pub tls: bool,
}

/// Reads `spec` (the `origin:` value) with `origin_tls`; the error says how
/// to write it.
pub fn endpoint(spec: &str, origin_tls: bool) -> Result<Endpoint, String> {
    let spec = spec.trim();
    let lower = spec.to_ascii_lowercase();
    let (rest, scheme_tls) = if lower.starts_with("http://") {
        (&spec[7..], Some(false))
    } else if lower.starts_with("https://") {
        (&spec[8..], Some(true))
    } else if lower.contains("://") {
        return Err(format!("`{spec}`: an origin is `http://` or `https://`, or `host:port`"));
    } else {
        (spec, None)
    };
    if scheme_tls == Some(false) && origin_tls {
        return Err(format!("`{spec}` says http://, but `origin_tls: true`: write https://, or drop origin_tls"));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!("`{spec}`: an origin names a server only (scheme, host, port), no path or user"));
    }
    let tls = scheme_tls.unwrap_or(origin_tls);
    let (host, port) = match split_port(rest) {
        Some((host, port)) => (host, port),
        None if scheme_tls.is_some() => (rest, if tls { "443" } else { "80" }),
        None => return Err(format!("`{spec}`: write `host:port` or a URL like `http://{spec}:8080`")),
    };
    if host.is_empty() || host == "[]" {
        return Err(format!("`{spec}`: no host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(Endpoint { authority: format!("{host}:{p}"), tls }),
        _ => Err(format!("`{spec}`: the port `{port}` is not a number from 1 to 65535")),
    }
}

/// `host` and `port` of `host:port` or `[v6]:port`; `None` without a port.
fn split_port(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('[') {
        let end = s.find(']')?;
        return s[end + 1..].strip_prefix(':').map(|port| (&s[..=end], port));
    }
    let (host, port) = s.rsplit_once(':')?;
    // A bare IPv6 address (`::1`) has colons but no port.
    (!host.contains(':')).then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(spec: &str, tls: bool) -> (String, bool) {
        let e = endpoint(spec, tls).unwrap_or_else(|e| panic!("{spec}: {e}"));
        (e.authority, e.tls)
    }

    #[test]
    fn every_way_people_write_an_origin() {
        assert_eq!(ok("127.0.0.1:8080", false), ("127.0.0.1:8080".into(), false));
        assert_eq!(ok("http://127.0.0.1:37031", false), ("127.0.0.1:37031".into(), false));
        assert_eq!(ok("HTTP://app.internal/", false), ("app.internal:80".into(), false));
        assert_eq!(ok("https://app.internal", false), ("app.internal:443".into(), true));
        assert_eq!(ok("app.internal:443", true), ("app.internal:443".into(), true));
        assert_eq!(ok("http://[::1]:8080", false), ("[::1]:8080".into(), false));
        assert_eq!(ok("[::1]:80", false), ("[::1]:80".into(), false));
    }

    #[test]
    fn what_cannot_serve_is_refused_with_how_to_write_it() {
        for (spec, tls, says) in [
            ("127.0.0.1", false, "write `host:port`"),
            ("::1", false, "write `host:port`"),
            ("http://127.0.0.1:8080/app", false, "no path"),
            ("http://user@host:80", false, "no path or user"),
            ("ftp://host:21", false, "`http://` or `https://`"),
            ("http://host:80", true, "origin_tls"),
            ("host:http", false, "not a number"),
            ("host:0", false, "not a number"),
            ("http://:80", false, "no host"),
        ] {
            let err = endpoint(spec, tls).unwrap_err();
            assert!(err.contains(says), "{spec}: {err}");
        }
    }
}
