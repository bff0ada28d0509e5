//! `sites[].variants` and `sites[].edge`: the other places crawlers look for
//! a site's robots.txt. Each scheme, host and port answers for itself
//! (RFC 9309 §2.3), and a cache in front of the origin answers with its
//! copy; the monitor fetches each and judges it with
//! `rules::coverage::judge`.

use std::time::Duration;

use serde::Deserialize;

use crate::{default_true, humantime_serde_compat};

/// `sites[].variants`: the site's host variants.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variants {
    /// Watch the variants found by default: both schemes and the `www.` /
    /// bare pair of the site's host (none for an IP address, a one-label
    /// host or a URL with its own port). On by default.
    #[serde(default = "default_true")]
    pub auto: bool,
    /// More hosts, each with what it must be: mobile, locale or AMP hosts;
    /// a staging host that must never answer publicly. A host without a
    /// scheme is watched on both.
    #[serde(default)]
    pub hosts: Vec<VariantHost>,
    /// How long a variant may be off before it alerts; `0s` (the default)
    /// alerts at the first poll that sees it.
    #[serde(default, with = "humantime_serde_compat")]
    pub grace: Duration,
}

impl Default for Variants {
    fn default() -> Self {
        Variants { auto: true, hosts: Vec::new(), grace: Duration::ZERO }
    }
}

/// One listed host.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantHost {
    /// `m.example.com`, or with its scheme, `https://m.example.com`.
    pub host: String,
    /// `same` (the canonical file, directly or by redirect; the default),
    /// `redirect` (a redirect to it), `own` (a file of its own) or
    /// `absent` (no file: a host that must not answer).
    #[serde(default)]
    pub must: MustSetting,
}

/// What a variant must be, as the config spells it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MustSetting {
    /// The canonical file, directly or by redirect.
    #[default]
    Same,
    /// A redirect to the canonical file.
    Redirect,
    /// A file of its own.
    Own,
    /// No file.
    Absent,
}

impl MustSetting {
    /// The engine's value.
    pub fn must(self) -> rules::coverage::Must {
        use rules::coverage::Must;
        match self {
            MustSetting::Same => Must::Same,
            MustSetting::Redirect => Must::Redirect,
            MustSetting::Own => Must::Own,
            MustSetting::Absent => Must::Absent,
        }
    }
}

/// `sites[].edge`: the public copy against the origin's.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// `auto` (the default): compare when the origin is known (`origin`,
    /// or the gateway's `proxy.origin`) or the public answer says a cache
    /// served it (`Age`, `X-Cache`, `CF-Cache-Status`, `Via`…); `on`:
    /// always, with a cache-busting request when no origin is known;
    /// `off`: never.
    #[serde(default)]
    pub check: EdgeCheck,
    /// The origin's robots.txt URL, asked directly (an address behind the
    /// CDN). Without it, the gateway's `proxy.origin`; without that, the
    /// public URL with a cache-busting query.
    #[serde(default)]
    pub origin: Option<String>,
    /// How long the two may differ before it alerts. Unset, the public
    /// copy's own freshness (`Cache-Control` `s-maxage`/`max-age`, less
    /// its `Age`), at most `max_grace`; with none declared, `max_grace`.
    #[serde(default, with = "humantime_serde_compat::option")]
    pub grace: Option<Duration>,
    /// The longest the default grace may be: 1 hour.
    #[serde(default = "default_max_grace", with = "humantime_serde_compat")]
    pub max_grace: Duration,
}

impl Default for Edge {
    fn default() -> Self {
        Edge { check: EdgeCheck::Auto, origin: None, grace: None, max_grace: default_max_grace() }
    }
}

fn default_max_grace() -> Duration {
    Duration::from_secs(3600)
}

/// When the edge is compared with the origin.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EdgeCheck {
    /// When the origin is known or a cache is seen.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

/// One host variant to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// `scheme://host[:port]`, as reports name it.
    pub origin: String,
    /// Its robots.txt.
    pub url: String,
    /// What it must be.
    pub must: rules::coverage::Must,
    /// The site lists it (not found by default).
    pub listed: bool,
}

/// The variants of the canonical robots.txt URL `canonical`, with the
/// listed hosts (which replace a default variant of the same origin); an
/// unparsable URL has none. The canonical origin itself is never one.
pub fn variants(canonical: &str, settings: &Variants) -> Vec<Variant> {
    let Ok(url) = url::Url::parse(canonical) else { return Vec::new() };
    let Some(host) = url.host_str().map(str::to_ascii_lowercase) else { return Vec::new() };
    let own = origin_of(&url);
    let explicit_port = url.port();
    let mut out: Vec<Variant> = Vec::new();
    let mut push = |origin: String, must, listed| {
        if origin == own {
            return;
        }
        let variant = Variant { url: format!("{origin}/robots.txt"), origin, must, listed };
        match out.iter_mut().find(|v| v.origin == variant.origin) {
            Some(v) if listed => *v = variant,
            Some(_) => {}
            None => out.push(variant),
        }
    };
    let schemes: Vec<&str> = match explicit_port {
        Some(_) => vec![url.scheme()],
        None => vec!["https", "http"],
    };
    let port = explicit_port.map(|p| format!(":{p}")).unwrap_or_default();
    if settings.auto && explicit_port.is_none() {
        let mut hosts = vec![host.clone()];
        hosts.extend(pair(&url, &host));
        for h in &hosts {
            for s in &schemes {
                push(format!("{s}://{h}{port}"), rules::coverage::Must::Same, false);
            }
        }
    }
    for listed in &settings.hosts {
        let must = listed.must.must();
        match listed.host.split_once("://") {
            Some((scheme, rest)) => push(
                format!("{}://{}", scheme.to_ascii_lowercase(), rest.trim_end_matches('/').to_ascii_lowercase()),
                must,
                true,
            ),
            None => {
                for s in &schemes {
                    push(format!("{s}://{}{port}", listed.host.to_ascii_lowercase()), must, true);
                }
            }
        }
    }
    out
}

/// The `www.` / bare partner of a host: none for an IP address or a host
/// of one label (there is no registrable bare name to pair with).
fn pair(url: &url::Url, host: &str) -> Option<String> {
    if !matches!(url.host(), Some(url::Host::Domain(_))) {
        return None;
    }
    match host.strip_prefix("www.") {
        Some(bare) if bare.contains('.') => Some(bare.to_string()),
        Some(_) => None,
        None if host.contains('.') => Some(format!("www.{host}")),
        None => None,
    }
}

/// `scheme://host[:port]` of a URL, the port only when it is not the
/// scheme's own.
pub fn origin_of(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    match url.port() {
        Some(p) => format!("{}://{host}:{p}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(url: &str, settings: &Variants) -> Vec<String> {
        variants(url, settings).into_iter().map(|v| v.origin).collect()
    }

    #[test]
    fn both_schemes_and_the_www_pair_by_default() {
        let all = origins("https://www.shop.example/robots.txt", &Variants::default());
        assert_eq!(all, ["http://www.shop.example", "https://shop.example", "http://shop.example"]);
        let all = origins("https://shop.example/robots.txt", &Variants::default());
        assert_eq!(all, ["http://shop.example", "https://www.shop.example", "http://www.shop.example"]);
    }

    #[test]
    fn none_for_addresses_one_label_hosts_and_own_ports() {
        assert!(origins("http://127.0.0.1:8080/robots.txt", &Variants::default()).is_empty());
        assert!(origins("http://localhost/robots.txt", &Variants::default()).len() == 1);
        assert!(origins("http://shop.test:8080/robots.txt", &Variants::default()).is_empty());
        assert!(origins("https://www.example/robots.txt", &Variants::default()) == ["http://www.example"]);
    }

    #[test]
    fn listed_hosts_join_and_replace() {
        let settings = Variants {
            auto: true,
            hosts: vec![
                VariantHost { host: "m.shop.example".into(), must: MustSetting::Same },
                VariantHost { host: "https://staging.shop.example".into(), must: MustSetting::Absent },
                VariantHost { host: "http://shop.example".into(), must: MustSetting::Redirect },
            ],
            grace: Duration::ZERO,
        };
        let all = variants("https://shop.example/robots.txt", &settings);
        let find = |o: &str| all.iter().find(|v| v.origin == o).cloned();
        assert_eq!(
            find("http://shop.example").map(|v| (v.must, v.listed)),
            Some((rules::coverage::Must::Redirect, true))
        );
        assert!(find("https://m.shop.example").is_some() && find("http://m.shop.example").is_some());
        assert_eq!(find("https://staging.shop.example").map(|v| v.must), Some(rules::coverage::Must::Absent));
        assert!(find("http://staging.shop.example").is_none());
        assert_eq!(find("https://m.shop.example").map(|v| v.url), Some("https://m.shop.example/robots.txt".into()));
        let off = Variants { auto: false, ..settings };
        assert_eq!(variants("https://shop.example/robots.txt", &off).len(), 4);
    }
}
