//! Loading the config: reading the YAML strictly (unknown keys, wrong types
//! and duplicate keys fail with the file, line and column), anchoring
//! relative paths, validating, and the errors that name what is wrong.

use std::path::{Path, PathBuf};

use crate::{Config, explain, telemetry};

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    // The cause is part of the message, not a source: printed as a chain
    // (`{:#}`), a source would say "No such file or directory" twice.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The YAML is malformed, or does not fit the schema.
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value parsed but is not acceptable.
    #[error("{path}: `{key}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key's path, like `sites[0].url`.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The YAML reader's limits. Its defaults (250,000 nodes) guard against
/// hostile documents, but a monitor's config lists every site, about ten
/// nodes each, so a 100,000-site fleet needs more; the file is the
/// operator's own. Depth and alias limits stay at the defaults.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = 20_000_000;
    budget.max_events = 40_000_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

impl Config {
    /// [`Config::load`], then the daemon's logging, in the format the
    /// config and `ROBOTSGATE_LOG_FORMAT` choose (text when the config
    /// cannot be read, so that its error is logged plainly).
    pub fn load_and_log(path: &Path) -> Result<Config, ConfigError> {
        match Config::load(path) {
            Ok(config) => {
                telemetry::init_as(telemetry::LogFormat::chosen(config.log_format));
                Ok(config)
            }
            Err(e) => {
                telemetry::init();
                Err(e)
            }
        }
    }

    /// Reads, parses and validates `path`. Every relative path the file
    /// names (`file:`, `robots_file`, `logs[].path`, `state_dir`,
    /// `admin_token_file`, certificates, `htpasswd`, `database:` for
    /// SQLite, ...) is taken relative to the config file's directory, never
    /// the working directory, so that every process started from the file
    /// reads the same files wherever it starts.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read { path: path.into(), error })?;
        let mut config = Config::parse(&text, path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let anchor = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for site in &mut config.sites {
            if let Some(f) = &mut site.file {
                anchor(f);
            }
            if let Some(f) = site.proxy.as_mut().and_then(|p| p.robots_file.as_mut()) {
                anchor(f);
            }
        }
        if let Some(ca) = config.email.as_mut().and_then(|e| e.ca_file.as_mut()) {
            anchor(ca);
        }
        if let Some(file) = config.console.as_mut().and_then(|c| c.htpasswd.as_mut()) {
            anchor(file);
        }
        if let Some(dir) = config.identity.as_mut().and_then(|i| i.feeds_dir.as_mut()) {
            anchor(dir);
        }
        for log in config.sites.iter_mut().flat_map(|s| s.logs.iter_mut()) {
            anchor(&mut log.path);
        }
        if let Some(p) = &mut config.proxy {
            anchor(&mut p.state_dir);
            if let Some(file) = &mut p.admin_token_file {
                anchor(file);
            }
            if let Some(sock) = &mut p.upgrade_sock {
                anchor(sock);
            }
            if let Some(dir) = p.identity.as_mut().and_then(|i| i.feeds_dir.as_mut()) {
                anchor(dir);
            }
            if let Some(ca) = &mut p.origin_ca_file {
                anchor(ca);
            }
            for l in &mut p.tls_listen {
                anchor(&mut l.cert);
                anchor(&mut l.key);
                for pair in &mut l.certs {
                    anchor(&mut pair.cert);
                    anchor(&mut pair.key);
                }
            }
        }
        Ok(config)
    }

    /// Parses and validates YAML text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
            ConfigError::Syntax { path: path.into(), message: explain::message(&e.to_string(), path, text) }
        })?;
        let mut config = config;
        config.validate(path)?;
        // One form for every reader: `host:port` and its TLS flag, whether
        // `origin:` was written as that or as a URL (validated above).
        for p in config.sites.iter_mut().filter_map(|s| s.proxy.as_mut()) {
            if let Ok(e) = p.endpoint() {
                (p.origin, p.origin_tls) = (e.authority, e.tls);
            }
        }
        Ok(config)
    }
}

/// Durations as human strings (`90s`, `5m`, `1h 30m`), through `humantime`.
pub(crate) mod humantime_serde_compat {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| serde::de::Error::custom(format!("`{s}` is not a duration: {e}")))
    }

    pub mod option {
        use super::*;
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("test.yaml"))
    }

    #[test]
    fn identity_settings_are_checked_by_key() {
        let base = "proxy:\n  listen: [\"127.0.0.1:8080\"]\n  identity:\n";
        let site = "sites:\n  - name: s\n    proxy: { hosts: [s.test], origin: \"127.0.0.1:1\", spoofed: refuse }\n";
        let ok =
            parse(&format!("{base}    trusted_proxies: [10.0.0.0/8, \"fd00::/8\"]\n    only: [googlebot]\n{site}"))
                .unwrap();
        let id = ok.proxy.unwrap().identity.unwrap();
        assert_eq!(id.trusted_proxies.len(), 2);
        assert_eq!(ok.sites[0].proxy.as_ref().unwrap().spoofed, Spoofed::Refuse);
        let err = parse(&format!("{base}    trusted_proxies: [10.0.0.0/33]\n{site}")).unwrap_err().to_string();
        assert!(err.contains("proxy.identity.trusted_proxies[0]") && err.contains("10.0.0.0/33"), "{err}");
        let err = parse(&format!("{base}    only: [Googelbot]\n{site}")).unwrap_err().to_string();
        assert!(err.contains("proxy.identity.only[0]"), "{err}");
        let err = parse(&format!("{base}    budget: 0s\n{site}")).unwrap_err().to_string();
        assert!(err.contains("budget"), "{err}");
        let err = parse(&format!("{base}    only: []\n{}", site.replace("refuse", "block"))).unwrap_err().to_string();
        assert!(err.contains("test.yaml") && err.contains("block"), "{err}");
        // Catalogue entries in the config are checked as the built-in ones.
        let err = parse(&format!(
            "crawlers:\n  - {{ token: \"bad token\", operator: x, purpose: search, obeys: true, source: x }}\n{site}"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("`crawlers`") && err.contains("product token"), "{err}");
    }

    #[test]
    fn example_file_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config.example.yaml");
        let c = Config::load(&path).expect("config.example.yaml must load");
        assert_eq!(c.sites[0].name, "example-shop");
        assert!(matches!(c.sites[0].source(), Source::File(p) if p.exists()));
    }

    #[test]
    fn durations_entries_and_defaults() {
        let c = parse("interval: 90s\nsites:\n  - name: a\n    url: https://a.example/robots.txt\n    interval: 1m\n    url_sets:\n      main:\n        - /x\n        - { url: /checkout, expect: disallow }\n").unwrap();
        assert_eq!(c.interval, Duration::from_secs(90));
        assert_eq!(c.interval_of(&c.sites[0]), Duration::from_secs(60));
        let set = &c.sites[0].url_sets["main"];
        assert_eq!(set[1].expect().and_then(|p| p.every), Some(Expectation::Disallow));
        assert_eq!(set[0].url(), "/x");
        assert_eq!(c.agents_of(&c.sites[0]), ["Googlebot"]);
    }

    #[test]
    fn variants_edge_and_connect_to_read_and_refuse_what_they_cannot_read() {
        let base = "sites:\n  - name: a\n    url: https://a.example/robots.txt\n";
        let c = parse(&format!(
            "http:\n  connect_to: {{ \"a.example:443\": \"127.0.0.1:8443\" }}\n{base}    variants:\n      hosts:\n        - {{ host: https://staging.a.example, must: absent }}\n    edge: {{ origin: http://10.0.0.1/robots.txt, grace: 5m }}\n"
        ))
        .unwrap();
        assert_eq!(c.http.connect_to().len(), 1);
        assert_eq!(c.sites[0].variants.hosts[0].must, crate::MustSetting::Absent);
        assert_eq!(c.sites[0].edge.grace, Some(Duration::from_secs(300)));
        let bad = |extra: &str, key: &str| {
            let e = parse(&format!("{base}{extra}")).unwrap_err().to_string();
            assert!(e.contains(key), "{extra}: {e}");
        };
        bad("    variants: { hosts: [ { host: \"https://m.a.example/x\" } ] }\n", "sites[0].variants.hosts[0].host");
        bad("    variants: { hosts: [ { host: m.a.example, must: never } ] }\n", "must");
        bad("    edge: { origin: /robots.txt }\n", "sites[0].edge.origin");
        bad("    edge: { max_grace: 0s }\n", "sites[0].edge.max_grace");
        bad("    sitemaps: { every: 0s }\n", "sites[0].sitemaps.every");
        let fronted = |budgets: &str| {
            format!(
                "{base}    proxy:\n      hosts: [a.example]\n      origin: 127.0.0.1:8080\n      budgets: {budgets}\n"
            )
        };
        let c =
            parse(&fronted("[ { purpose: ai-training, rate: 30/m, burst: 10 }, { identity: spoofed, rate: 2/s } ]"))
                .unwrap();
        let b = &c.sites[0].proxy.as_ref().unwrap().budgets;
        assert_eq!(b[0].rate.interval(), Duration::from_secs(2));
        assert_eq!((b[1].burst, b[1].describe().as_str()), (1, "spoofed: 2/s (burst 1)"));
        for (budgets, says) in [
            ("[ { rate: 30 } ]", "requests/period"),
            ("[ { rate: 0/m } ]", "at least 1 request"),
            ("[ { rate: 3/d } ]", "requests/period"),
            ("[ { purpose: training, rate: 1/s } ]", "budgets[0].purpose"),
            ("[ { identity: real, rate: 1/s } ]", "budgets[0].identity"),
            ("[ { rate: 1/s, burst: 0 } ]", "budgets[0].burst"),
            ("[ { rate: 1/s, speed: 2 } ]", "speed"),
        ] {
            let e = parse(&fronted(budgets)).unwrap_err().to_string();
            assert!(e.contains(says), "{budgets}: {e}");
        }
        let with = |extra: &str| {
            format!("{base}    proxy:\n      hosts: [a.example]\n      origin: 127.0.0.1:8080\n      {extra}\n")
        };
        let c = parse(&with("crawl_delay: budget")).unwrap();
        assert_eq!(c.sites[0].proxy.as_ref().unwrap().crawl_delay, crate::budgets::CrawlDelay::Budget);
        assert_eq!(parse(&fronted("[]")).unwrap().sites[0].proxy.as_ref().unwrap().crawl_delay, Default::default());
        let e = parse(&with("crawl_delay: yes")).unwrap_err().to_string();
        assert!(e.contains("crawl_delay") && e.contains("budget"), "{e}");
        let fleet = |f: &str| format!("proxy:\n  listen: [\"127.0.0.1:1\"]\n  fleet: {f}\n{base}");
        let c = parse(&fleet("{ heartbeat: 1s, dead_after: 3s }")).unwrap();
        assert_eq!(c.proxy.unwrap().fleet.dead_after, Duration::from_secs(3));
        for (f, says) in [
            ("{ heartbeat: 1ms }", "proxy.fleet.heartbeat"),
            ("{ heartbeat: 10s, dead_after: 15s }", "proxy.fleet.dead_after"),
            ("{ beat: 1s }", "beat"),
        ] {
            let e = parse(&fleet(f)).unwrap_err().to_string();
            assert!(e.contains(says), "{f}: {e}");
        }
        bad("    sitemaps: { check: sometimes }\n", "check");
        bad("    sitemaps: { keep_open: yes please }\n", "keep_open");
        let c = parse(&format!("{base}    sitemaps: {{ check: on, every: 1h, keep_open: true }}\n")).unwrap();
        let s = &c.sites[0].sitemaps;
        assert_eq!((s.check, s.every, s.keep_open), (crate::sitemaps::Check::On, Duration::from_secs(3600), true));
        assert!(parse(base).unwrap().sites[0].sitemaps.checked(true));
        assert!(!parse(base).unwrap().sites[0].sitemaps.keep_open);
        let e = parse(&format!("http:\n  connect_to: {{ \"a.example:8080\": \"127.0.0.1:1\" }}\n{base}")).unwrap_err();
        assert!(e.to_string().contains("http.connect_to.a.example:8080"), "{e}");
        let e = parse(&format!("http:\n  connect_to: {{ \"a.example:443\": \"nowhere\" }}\n{base}")).unwrap_err();
        assert!(e.to_string().contains("127.0.0.1:8443"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse("sites: []\nbogus: 1\n").unwrap_err().to_string();
        assert!(e.starts_with("test.yaml:") && e.contains("bogus") && e.contains('2'), "{e}");
        let e = parse("sites: []\nsites: []\n").unwrap_err().to_string();
        assert!(e.contains("test.yaml") && e.contains("given twice"), "{e}");
        let e = parse("interval: 5\nsites: []\n").unwrap_err().to_string();
        assert!(e.contains("test.yaml"), "{e}");
        let e = parse("sites:\n  - name: a\n    url: /robots.txt\n").unwrap_err().to_string();
        assert!(e.contains("sites[0].url") && e.contains("absolute"), "{e}");
        let e = parse("sites:\n  - name: a\n").unwrap_err().to_string();
        assert!(e.contains("sites[0].url"), "{e}");
        let e = parse(
            "sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - { url: /x, expekt: allow }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 6") && e.contains("unknown key `expekt`; did you mean `expect`?"), "{e}");
        assert!(!e.contains("untagged") && e.contains("--> test.yaml:6:"), "{e}");
        // A 100,000-site fleet loads (the reader's default budget stops at
        // 250,000 nodes).
        let mut fleet = String::from("sites:\n");
        for i in 0..100_000 {
            fleet.push_str(&format!(
                "  - name: s{i}\n    url: http://a/s/{i}/robots.txt\n    url_sets: {{ main: [/, /x] }}\n"
            ));
        }
        assert_eq!(parse(&fleet).expect("a fleet config").sites.len(), 100_000);
        let e = parse("sites: []\ninterval: 1m\ninterval: 2m\n").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("key `interval` is given twice") && !e.contains("Policy"), "{e}");
        let e = parse("sites:\n  - {name: a, file: x}\n  - {name: a, file: y}\n").unwrap_err().to_string();
        assert!(e.contains("sites[1].name"), "{e}");
    }

    /// Every value error names the innermost key at fault, in block and in
    /// flow style, and the snippet's column is the line's own.
    #[test]
    fn value_errors_name_the_innermost_key() {
        let site =
            "sites:\n  - name: s\n    proxy:\n      hosts: [s.test]\n      origin: \"127.0.0.1:1\"\n      ai_policy:\n";
        let flow = "sites:\n  - name: s\n    proxy: { hosts: [s.test], origin: \"127.0.0.1:1\", ai_policy: { ";
        for (text, key, at) in [
            ("sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - { url: /x, expect: maybe }\n".to_string(), "expect", "6:22"),
            ("sites:\n  - name: a\n    file: x\n    url_sets:\n      main:\n        - url: /x\n          expect: maybe\n".to_string(), "expect", "7:11"),
            (format!("{site}        ai-training: maybe\n"), "ai-training", "7:22"),
            (format!("{site}        enforce: slow\n        retry-after: soon\n"), "retry-after", "8:22"),
            (format!("{flow}ai-training: maybe }} }}\n"), "ai-training", "3:80"),
            (format!("{flow}ai-training: deny, enforce: slow, retry-after: soon }} }}\n"), "retry-after", "3:114"),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(&format!("key `{key}`:")), "{key} in\n{e}");
            assert!(!e.contains("key `proxy`") && !e.contains("key `url`"), "{e}");
            assert!(e.contains(&format!("line {} column {}", &at[..1], &at[2..])), "{at} in\n{e}");
            assert!(e.contains(&format!("--> test.yaml:{at}\n")), "{at} in\n{e}");
        }
    }
}
