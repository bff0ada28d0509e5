//! The certificates a TLS listener serves: several on one listener, each
//! chosen by the host name the client asks for (SNI), and read again from
//! their files when they change or on SIGHUP, with no restart and no
//! connection refused.
//!
//! Pingora asks for a certificate in the middle of each handshake
//! ([`TlsAccept::certificate_callback`]); the answer comes from the set
//! loaded last. A reload builds a whole new set and swaps it in only if
//! every pair reads and every key matches its certificate: a renewal
//! written file by file (the certificate, then the key) is picked up once
//! both are there, and a broken file leaves the last good set serving.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use async_trait::async_trait;
use openssl::asn1::Asn1Time;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{NameType, SslRef};
use openssl::x509::X509;
use pingora::listeners::TlsAccept;

/// One certificate chain, its key and the host names it covers.
#[derive(Debug)]
struct Entry {
    /// Lower case; a wildcard as `*.example.com`.
    names: Vec<String>,
    chain: Vec<X509>,
    key: PKey<Private>,
    /// The leaf certificate's file.
    file: PathBuf,
}

/// A listener's certificates as last loaded.
#[derive(Debug)]
struct Loaded {
    /// The first is served when no name matches.
    entries: Vec<Entry>,
    /// Each file's modification time and length when read.
    stamps: Vec<Option<(SystemTime, u64)>>,
}

/// The certificates of one TLS listener.
#[derive(Debug)]
pub struct Certs {
    /// The listener's address, for logs and metrics.
    pub listener: String,
    /// (certificate, key) files; the first is the default.
    files: Vec<(PathBuf, PathBuf)>,
    loaded: RwLock<Arc<Loaded>>,
}

fn stamp(path: &PathBuf) -> Option<(SystemTime, u64)> {
    std::fs::metadata(path).ok().and_then(|m| Some((m.modified().ok()?, m.len())))
}

/// Reads one pair; the error names the file and what is wrong.
fn read_pair(cert: &PathBuf, key: &PathBuf) -> Result<Entry, String> {
    let pem = std::fs::read(cert).map_err(|e| format!("{}: {e}", cert.display()))?;
    let chain = X509::stack_from_pem(&pem).map_err(|e| format!("{}: not a PEM certificate: {e}", cert.display()))?;
    let Some(leaf) = chain.first() else {
        return Err(format!("{}: not a PEM certificate (no BEGIN CERTIFICATE block)", cert.display()));
    };
    let key_pem = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let key_value =
        PKey::private_key_from_pem(&key_pem).map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
    let public = leaf.public_key().map_err(|e| format!("{}: {e}", cert.display()))?;
    if !public.public_eq(&key_value) {
        return Err(format!("{} is not the key of {}", key.display(), cert.display()));
    }
    let mut names: Vec<String> = leaf
        .subject_alt_names()
        .map(|sans| sans.iter().filter_map(|n| n.dnsname().map(str::to_ascii_lowercase)).collect())
        .unwrap_or_default();
    if names.is_empty() {
        // No SAN: the common name, as old certificates carry it.
        names.extend(
            leaf.subject_name()
                .entries_by_nid(Nid::COMMONNAME)
                .filter_map(|e| e.data().to_string().ok().map(|s| s.to_ascii_lowercase())),
        );
    }
    Ok(Entry { names, chain, key: key_value, file: cert.clone() })
}

/// Whether certificate name `pattern` covers `host` (a wildcard covers one
/// label, RFC 6125 section 6.4.3).
fn covers(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.split_once('.').is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
        None => pattern == host,
    }
}

impl Certs {
    /// Reads `files` ((certificate, key), the default first) for the
    /// listener at `listener`; the error names the file at fault.
    pub fn load(listener: &str, files: Vec<(PathBuf, PathBuf)>) -> Result<Certs, String> {
        let loaded = Self::read(&files)?;
        Ok(Certs { listener: listener.to_string(), files, loaded: RwLock::new(Arc::new(loaded)) })
    }

    fn read(files: &[(PathBuf, PathBuf)]) -> Result<Loaded, String> {
        let stamps = files.iter().flat_map(|(c, k)| [stamp(c), stamp(k)]).collect();
        let entries = files.iter().map(|(c, k)| read_pair(c, k)).collect::<Result<Vec<_>, _>>()?;
        Ok(Loaded { entries, stamps })
    }

    fn current(&self) -> Arc<Loaded> {
        Arc::clone(&self.loaded.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Reads the files again if any changed since the last read (or when
    /// `force`d); `Ok(true)` when a new set is in use. On an error the last
    /// good set serves on.
    pub fn reload(&self, force: bool) -> Result<bool, String> {
        let stamps: Vec<_> = self.files.iter().flat_map(|(c, k)| [stamp(c), stamp(k)]).collect();
        if !force && stamps == self.current().stamps {
            return Ok(false);
        }
        let fresh = Self::read(&self.files);
        let mut slot = self.loaded.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        match fresh {
            Ok(loaded) => {
                *slot = Arc::new(loaded);
                Ok(true)
            }
            Err(e) => {
                // The last good set serves on; not read again until a file
                // changes again.
                let entries = Self::reuse(&slot);
                *slot = Arc::new(Loaded { entries, stamps });
                Err(e)
            }
        }
    }

    /// The entries of `old`, shared again (an `Entry` is not `Clone`, its
    /// OpenSSL objects are reference-counted).
    fn reuse(old: &Loaded) -> Vec<Entry> {
        old.entries
            .iter()
            .map(|e| Entry { names: e.names.clone(), chain: e.chain.clone(), key: e.key.clone(), file: e.file.clone() })
            .collect()
    }

    /// Seconds until each certificate expires, by its file (negative once
    /// expired).
    pub fn expiry(&self) -> Vec<(String, i64)> {
        let now = Asn1Time::days_from_now(0).ok();
        self.current()
            .entries
            .iter()
            .filter_map(|e| {
                let diff = now.as_ref()?.diff(e.chain.first()?.not_after()).ok()?;
                Some((e.file.display().to_string(), i64::from(diff.days) * 86_400 + i64::from(diff.secs)))
            })
            .collect()
    }

    /// Sets, on `ssl`, the certificate for the name the client asked for.
    pub fn choose(&self, ssl: &mut SslRef) {
        let loaded = self.current();
        let host = ssl.servername(NameType::HOST_NAME).map(str::to_ascii_lowercase);
        let entry = host
            .as_deref()
            .and_then(|h| loaded.entries.iter().find(|e| e.names.iter().any(|n| covers(n, h))))
            .or_else(|| loaded.entries.first());
        let Some(entry) = entry else { return };
        let Some(leaf) = entry.chain.first() else { return };
        let set = pingora::tls::ext::ssl_use_certificate(ssl, leaf)
            .and_then(|()| pingora::tls::ext::ssl_use_private_key(ssl, &entry.key))
            .and_then(|()| entry.chain[1..].iter().try_for_each(|c| pingora::tls::ext::ssl_add_chain_cert(ssl, c)));
        if let Err(e) = set {
            tracing::warn!(listener = %self.listener, error = %e, "could not set the TLS certificate");
        }
    }
}

/// Reads every listener's certificates again when their files change
/// (checked every [`WATCH_EVERY`]) or at once on SIGHUP, and keeps the
/// expiry gauge current.
#[derive(Debug)]
pub struct Watch {
    /// Every TLS listener's certificates.
    pub certs: Vec<Arc<Certs>>,
    /// Where `robotsgate_tls_certificate_expiry_seconds` lives.
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// How often certificate files are looked at.
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

impl Watch {
    fn reload(&self, force: bool) {
        for c in &self.certs {
            match c.reload(force) {
                Ok(true) => tracing::info!(listener = %c.listener, "TLS certificates read again"),
                Ok(false) => {}
                Err(e) => tracing::error!(
                    listener = %c.listener,
                    error = %e,
                    "TLS certificates not read again; the last good ones serve on"
                ),
            }
            for (file, seconds) in c.expiry() {
                self.metrics.tls_expiry.with_label_values(&[&c.listener, &file]).set(seconds);
            }
        }
    }
}

#[async_trait]
impl pingora::services::background::BackgroundService for Watch {
    async fn start(&self, mut shutdown: pingora::server::ShutdownWatch) {
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut tick = tokio::time::interval(WATCH_EVERY);
        loop {
            let force = tokio::select! {
                _ = tick.tick() => false,
                Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => true,
                _ = shutdown.changed() => return,
            };
            if force {
                tracing::info!("SIGHUP: reading the TLS certificates again");
            }
            self.reload(force);
        }
    }
}

/// Pingora's handshake hook for one listener's [`Certs`].
#[derive(Debug)]
pub struct Sni(pub Arc<Certs>);

#[async_trait]
impl TlsAccept for Sni {
    async fn certificate_callback(&self, ssl: &mut SslRef) {
        self.0.choose(ssl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_covers_one_label() {
        assert!(covers("shop.test", "shop.test"));
        assert!(covers("*.shop.test", "www.shop.test"));
        assert!(!covers("*.shop.test", "shop.test"));
        assert!(!covers("*.shop.test", "a.b.shop.test"));
        assert!(!covers("shop.test", "www.shop.test"));
    }
}
