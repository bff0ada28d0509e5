//! Validating a parsed config: values that parse but make no sense (a
//! relative robots.txt URL, a zero interval, a site named twice) fail with
//! the key's path, as `sites[2].proxy.origin`.

use std::path::Path;

use crate::{Config, ConfigError};

impl Config {
    pub(crate) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid =
            |key: String, message: &str| ConfigError::Invalid { path: path.into(), key, message: message.into() };
        if self.interval.is_zero() {
            return Err(invalid("interval".into(), "must be more than zero"));
        }
        let mut channel_names = std::collections::HashSet::new();
        for (i, ch) in self.channels.iter().enumerate() {
            let key = |k: &str| format!("channels[{i}].{k}");
            if ch.name.trim().is_empty() || !channel_names.insert(ch.name.as_str()) {
                return Err(invalid(key("name"), "must be present and unique"));
            }
            let url = match (&ch.webhook, &ch.slack) {
                (Some(u), None) | (None, Some(u)) => u,
                _ => return Err(invalid(key("webhook"), "give exactly one of `webhook` and `slack`")),
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(
                    key(if ch.webhook.is_some() { "webhook" } else { "slack" }),
                    "must be an http(s) URL",
                ));
            }
            if ch.digest_hour > 23 {
                return Err(invalid(key("digest_hour"), "must be an hour of the day, 0 to 23 (UTC)"));
            }
            if let Some(s) = ch.sites.iter().find(|s| !self.sites.iter().any(|site| &site.name == *s)) {
                return Err(ConfigError::Invalid {
                    path: path.into(),
                    key: key("sites"),
                    message: format!("names `{s}`, which is not a site in this file"),
                });
            }
        }
        let mut names = std::collections::HashSet::new();
        for (i, site) in self.sites.iter().enumerate() {
            let key = |k: &str| format!("sites[{i}].{k}");
            if site.name.trim().is_empty() {
                return Err(invalid(key("name"), "must not be empty"));
            }
            if !names.insert(site.name.as_str()) {
                return Err(invalid(key("name"), &format!("`{}` is used by another site", site.name)));
            }
            match (&site.url, &site.file) {
                (Some(_), Some(_)) => return Err(invalid(key("url"), "give `url` or `file`, not both")),
                (None, None) if site.proxy.is_none() => {
                    return Err(invalid(key("url"), "give `url` (to poll), `file` (to watch) or `proxy` (to front)"));
                }
                (None, None) => {}
                (Some(u), None) => {
                    let parsed =
                        url::Url::parse(u).map_err(|e| invalid(key("url"), &format!("not an absolute URL: {e}")))?;
                    if !matches!(parsed.scheme(), "http" | "https") {
                        return Err(invalid(key("url"), "must be http or https"));
                    }
                }
                (None, Some(_)) => {}
            }
            if site.interval.is_some_and(|d| d.is_zero()) {
                return Err(invalid(key("interval"), "must be more than zero"));
            }
            if site.agents.as_ref().is_some_and(Vec::is_empty) {
                return Err(invalid(key("agents"), "list at least one crawler, or leave the key out"));
            }
        }
        if self.agents.is_empty() {
            return Err(invalid("agents".into(), "list at least one crawler"));
        }
        for (i, site) in self.sites.iter().enumerate() {
            let Some(p) = &site.proxy else { continue };
            let key = |k: &str| format!("sites[{i}].proxy.{k}");
            if p.hosts.is_empty() {
                return Err(invalid(key("hosts"), "list at least one Host name"));
            }
            if let Err(why) = p.endpoint() {
                return Err(invalid(key("origin"), &why));
            }
            if p.robots_file.is_some() && p.robots_static.is_some() {
                return Err(invalid(key("robots_file"), "give `robots_file` or `robots_static`, not both"));
            }
            for (b, budget) in p.budgets.iter().enumerate() {
                if let Some(purpose) = &budget.purpose
                    && crate::pins::purpose_named(purpose).is_none()
                {
                    return Err(invalid(key(&format!("budgets[{b}].purpose")), "a purpose: search, ai-training, …"));
                }
                if let Some(identity) = &budget.identity
                    && !crate::budgets::IDENTITIES.contains(&identity.as_str())
                {
                    return Err(invalid(
                        key(&format!("budgets[{b}].identity")),
                        "verified, unverifiable, spoofed or unchecked",
                    ));
                }
                if budget.burst == 0 {
                    return Err(invalid(key(&format!("budgets[{b}].burst")), "at least 1"));
                }
            }
            if let Some(ai) = &p.ai_policy {
                for (name, value) in &ai.payment_headers {
                    let token = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !token || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                        return Err(invalid(
                            key(&format!("ai_policy.payment-headers.{name}")),
                            "must be a header field name, with a value on one line",
                        ));
                    }
                }
            }
        }
        if let Some(p) = &self.proxy
            && p.listen.is_empty()
            && p.tls_listen.is_empty()
        {
            return Err(invalid("proxy.listen".into(), "give at least one listener"));
        }
        if let Err(e) = self.catalogue() {
            return Err(invalid("crawlers".into(), &e.to_string()));
        }
        if let Some(l) = self.proxy.as_ref().and_then(|p| p.ledger.as_ref()) {
            if self.database.is_none() {
                return Err(invalid("proxy.ledger".into(), "the ledger is written to `database:`; set one"));
            }
            if l.journal_mib > 4096 {
                return Err(invalid("proxy.ledger.journal_mib".into(), "at most 4096 (4 GiB)"));
            }
            if l.flush.is_zero() || l.max_rows == 0 || l.queue == 0 {
                return Err(invalid("proxy.ledger".into(), "`flush`, `max_rows` and `queue` must be more than zero"));
            }
        }
        for (i, l) in self.proxy.iter().flat_map(|p| p.tls_listen.iter()).enumerate() {
            if let Some(v) = l.min_version.as_deref().filter(|v| !["1.2", "1.3"].contains(v)) {
                return Err(invalid(
                    format!("proxy.tls_listen[{i}].min_version"),
                    &format!("`{v}`: give \"1.2\" or \"1.3\" (older versions are broken)"),
                ));
            }
        }
        if let Some(f) = self.proxy.as_ref().map(|p| p.fleet) {
            if f.heartbeat < std::time::Duration::from_millis(100) {
                return Err(invalid("proxy.fleet.heartbeat".into(), "at least 100ms"));
            }
            if f.dead_after < f.heartbeat * 2 {
                return Err(invalid(
                    "proxy.fleet.dead_after".into(),
                    "at least two heartbeats, so one late beat never drops a live gateway",
                ));
            }
        }
        if let Some(why) = self.proxy.as_ref().and_then(|p| p.threads.invalid()) {
            return Err(invalid("proxy.threads".into(), &why));
        }
        let identities = [
            ("identity", self.identity.as_ref()),
            ("proxy.identity", self.proxy.as_ref().and_then(|p| p.identity.as_ref())),
        ];
        for (at, id) in identities.into_iter().filter_map(|(at, id)| Some((at, id?))) {
            for (i, cidr) in id.trusted_proxies.iter().enumerate() {
                if !is_cidr(cidr) {
                    return Err(invalid(
                        format!("{at}.trusted_proxies[{i}]"),
                        &format!("`{cidr}` is not a CIDR like 10.0.0.0/8 or fd00::/8"),
                    ));
                }
            }
            let catalogue = self.catalogue().unwrap_or_else(|_| robotsgate_crawlers::Catalogue::builtin().clone());
            for (i, token) in id.only.iter().enumerate() {
                if catalogue.get(token).is_none() {
                    return Err(invalid(
                        format!("{at}.only[{i}]"),
                        &format!("`{token}` is no catalogued crawler (add it under `crawlers:`)"),
                    ));
                }
            }
            if id.budget.is_zero() || id.dns_timeout.is_zero() || id.refresh.is_zero() || id.dns_in_flight == 0 {
                return Err(invalid(
                    at.into(),
                    "`budget`, `dns_timeout`, `refresh` and `dns_in_flight` must be more than zero",
                ));
            }
        }
        for (i, site) in self.sites.iter().enumerate() {
            for (j, log) in site.logs.iter().enumerate() {
                if let Err((key, why)) = log.reader() {
                    return Err(invalid(format!("sites[{i}].logs[{j}].{key}"), &why));
                }
                const KEYS: [&str; 7] = ["time", "client", "method", "target", "status", "user_agent", "host"];
                if let Some(k) = log.fields.keys().find(|k| !KEYS.contains(&k.as_str())) {
                    return Err(invalid(
                        format!("sites[{i}].logs[{j}].fields.{k}"),
                        "the keys are time, client, method, target, status, user_agent, host",
                    ));
                }
            }
        }
        for (i, site) in self.sites.iter().enumerate() {
            for (j, h) in site.variants.hosts.iter().enumerate() {
                let at = format!("sites[{i}].variants.hosts[{j}].host");
                let text = if h.host.contains("://") { h.host.clone() } else { format!("https://{}", h.host) };
                match url::Url::parse(&text) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() && u.path() == "/" => {}
                    _ => {
                        return Err(invalid(
                            at,
                            "a host (`m.shop.example`) or an origin (`https://m.shop.example`), without a path",
                        ));
                    }
                }
            }
            if let Some(origin) = &site.edge.origin {
                match url::Url::parse(origin) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                    _ => {
                        return Err(invalid(
                            format!("sites[{i}].edge.origin"),
                            "an absolute http(s) URL of the origin's robots.txt",
                        ));
                    }
                }
            }
            if site.edge.max_grace.is_zero() {
                return Err(invalid(format!("sites[{i}].edge.max_grace"), "must be more than zero"));
            }
            // Read at every poll, sitemaps would cost more than the polls.
            if site.sitemaps.every < std::time::Duration::from_secs(1) {
                return Err(invalid(format!("sites[{i}].sitemaps.every"), "must be at least 1s (the default is 6h)"));
            }
        }
        for (k, v) in &self.http.connect_to {
            let port =
                k.rsplit_once(':').and_then(|(h, p)| (!h.is_empty()).then_some(p)).and_then(|p| p.parse::<u16>().ok());
            if !matches!(port, Some(80 | 443)) {
                return Err(invalid(format!("http.connect_to.{k}"), "the key is `host:80` or `host:443`"));
            }
            if v.parse::<std::net::SocketAddr>().is_err() {
                return Err(invalid(
                    format!("http.connect_to.{k}"),
                    "the value is an address and port, as `127.0.0.1:8443`",
                ));
            }
        }
        if let Some(email) = &self.email
            && email.to.is_empty()
        {
            return Err(invalid("email.to".into(), "list at least one recipient"));
        }
        Ok(())
    }
}

/// Whether `text` is an address and a prefix length that fits it.
fn is_cidr(text: &str) -> bool {
    let Some((addr, len)) = text.split_once('/') else { return false };
    let (Ok(addr), Ok(len)) = (addr.parse::<std::net::IpAddr>(), len.parse::<u8>()) else { return false };
    len <= if addr.is_ipv4() { 32 } else { 128 }
}
