//! TLS as operators run it (issue #42, section 2), on both request paths:
//! several certificates on one listener chosen by SNI, the minimum version
//! and cipher settings, and certificates read again, when their files
//! change or on SIGHUP, under load with no failed handshake; a broken
//! renewal leaves the last good certificate serving.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode, SslVersion};
use testkit::*;

mod support;
use support::edge::ROBOTS;

/// A certificate for `san`, made in its own folder under `dir`.
fn cert(dir: &Path, name: &str, san: &str) -> (PathBuf, PathBuf) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let c = test_certs(&d, san);
    (c.cert, c.key)
}

struct Gateway {
    proc: Proc,
    tls: SocketAddr,
    admin: SocketAddr,
}

fn start(dir: &Path, fast: bool, listener: &str, origin: &Origin) -> Gateway {
    let (listen, tls, admin) = (free_port(), free_port(), free_port());
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  state_dir: state
  refresh: 1s
  fast_path: {fast}
  tls_listen:
    - addr: \"127.0.0.1:{tls}\"
{listener}
sites:
  - name: shop
    proxy: {{ hosts: [shop.test, other.test], origin: \"http://{}\" }}
",
        origin.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cfg)
        .env("ROBOTSGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    let g = Gateway {
        proc: Proc(child),
        tls: format!("127.0.0.1:{tls}").parse().unwrap(),
        admin: format!("127.0.0.1:{admin}").parse().unwrap(),
    };
    assert!(wait_listening(g.tls, 20) && wait_listening(g.admin, 20), "robots-proxy did not start");
    g
}

/// Handshakes with `sni` (none: no SNI) at most `max` TLS version, sends
/// one request, and returns the served certificate's names and the status.
fn fetch(addr: SocketAddr, sni: Option<&str>, max: Option<SslVersion>) -> Result<(Vec<String>, u16), String> {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(|e| e.to_string())?;
    builder.set_verify(SslVerifyMode::NONE);
    builder.set_max_proto_version(max).map_err(|e| e.to_string())?;
    let connector = builder.build();
    let mut config = connector.configure().map_err(|e| e.to_string())?;
    config.set_use_server_name_indication(sni.is_some());
    config.set_verify_hostname(false);
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = config.connect(sni.unwrap_or("unnamed"), tcp).map_err(|e| e.to_string())?;
    let names = s
        .ssl()
        .peer_certificate()
        .and_then(|c| c.subject_alt_names())
        .map(|sans| sans.iter().filter_map(|n| n.dnsname().map(str::to_string)).collect())
        .unwrap_or_default();
    let host = sni.unwrap_or("shop.test");
    s.write_all(format!("GET /robots.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("no answer: {text}"))?;
    Ok((names, status))
}

fn origin() -> Origin {
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    origin
}

#[test]
fn certificates_by_name_and_the_oldest_version() {
    for fast in [true, false] {
        let dir = temp_dir(&format!("tls-sni-{fast}"));
        let (shop_cert, shop_key) = cert(&dir, "shop", "DNS:shop.test");
        let (other_cert, other_key) = cert(&dir, "other", "DNS:*.other.test,DNS:other.test");
        let listener = format!(
            "      cert: {}\n      key: {}\n      certs:\n        - {{ cert: {}, key: {} }}\n      min_version: \"1.3\"\n",
            shop_cert.display(),
            shop_key.display(),
            other_cert.display(),
            other_key.display()
        );
        let origin = origin();
        let g = start(&dir, fast, &listener, &origin);
        let (names, status) = fetch(g.tls, Some("shop.test"), None).unwrap();
        assert_eq!((names, status), (vec!["shop.test".to_string()], 200), "fast {fast}");
        let (names, _) = fetch(g.tls, Some("other.test"), None).unwrap();
        assert!(names.contains(&"other.test".to_string()), "fast {fast}: {names:?}");
        let (names, _) = fetch(g.tls, Some("www.other.test"), None).unwrap();
        assert!(names.contains(&"*.other.test".to_string()), "fast {fast}: the wildcard: {names:?}");
        let (names, _) = fetch(g.tls, None, None).unwrap();
        assert_eq!(names, ["shop.test"], "fast {fast}: no SNI gets the first");
        let (names, _) = fetch(g.tls, Some("unknown.test"), None).unwrap();
        assert_eq!(names, ["shop.test"], "fast {fast}: an unknown name gets the first");
        // min_version "1.3": a TLS 1.2 client is refused, and counted.
        assert!(fetch(g.tls, Some("shop.test"), Some(SslVersion::TLS1_2)).is_err(), "fast {fast}");
        let metrics = request(g.admin, "GET", "admin", "/metrics", &[]).unwrap().text();
        assert!(metrics.contains("robotsgate_tls_handshake_failures_total"), "{metrics}");
        assert!(
            metrics.lines().any(|l| l.starts_with("robotsgate_tls_certificate_expiry_seconds{")
                && l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 3600.0)),
            "{metrics}"
        );
        drop(g.proc);

        // `--check` reads the certificates as the listener will.
        let cfg = dir.join("config.yaml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(&cfg, text.replacen(&shop_key.display().to_string(), &other_key.display().to_string(), 1))
            .unwrap();
        let out = Command::new(support::proxy_bin()).arg("--config").arg(&cfg).arg("--check").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("is not the key of"), "{err}");
        let ciphers =
            text.replacen("min_version: \"1.3\"", "min_version: \"1.3\"\n      ciphers: \"NO-SUCH-CIPHER\"", 1);
        std::fs::write(&cfg, ciphers).unwrap();
        let out = Command::new(support::proxy_bin()).arg("--config").arg(&cfg).arg("--check").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("ciphers `NO-SUCH-CIPHER`"), "{err}");
    }
}

#[test]
fn certificates_are_read_again_under_load() {
    for fast in [true, false] {
        let dir = temp_dir(&format!("tls-reload-{fast}"));
        let (old_cert, old_key) = cert(&dir, "old", "DNS:shop.test");
        let (new_cert, new_key) = cert(&dir, "new", "DNS:shop.test,DNS:renewed.test");
        let live = dir.join("live");
        std::fs::create_dir_all(&live).unwrap();
        let (cert_file, key_file) = (live.join("cert.pem"), live.join("key.pem"));
        std::fs::copy(&old_cert, &cert_file).unwrap();
        std::fs::copy(&old_key, &key_file).unwrap();
        let listener = format!("      cert: {}\n      key: {}\n", cert_file.display(), key_file.display());
        let origin = origin();
        let g = start(&dir, fast, &listener, &origin);
        assert_eq!(fetch(g.tls, Some("shop.test"), None).unwrap().0, ["shop.test"]);

        // Load: handshakes back to back while the files change.
        let (stop, done, failed) =
            (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let load: Vec<_> = (0..2)
            .map(|_| {
                let (stop, done, failed, addr) = (Arc::clone(&stop), Arc::clone(&done), Arc::clone(&failed), g.tls);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        match fetch(addr, Some("shop.test"), None) {
                            Ok((_, 200)) => done.fetch_add(1, Ordering::SeqCst),
                            _ => failed.fetch_add(1, Ordering::SeqCst),
                        };
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        // A renewal as certbot writes it: the certificate, then the key,
        // each replaced by a rename.
        let replace = |from: &Path, to: &Path| {
            let tmp = to.with_extension("tmp");
            std::fs::copy(from, &tmp).unwrap();
            std::fs::rename(&tmp, to).unwrap();
        };
        replace(&new_cert, &cert_file);
        std::thread::sleep(Duration::from_millis(300));
        replace(&new_key, &key_file);
        let renewed = eventually(10, || {
            fetch(g.tls, Some("shop.test"), None).is_ok_and(|(n, _)| n.contains(&"renewed.test".to_string()))
        });
        assert!(renewed, "fast {fast}: the renewed certificate was not picked up");
        // A broken file: the last good certificate serves on.
        std::fs::write(&cert_file, "not a certificate").unwrap();
        std::thread::sleep(Duration::from_secs(3));
        let (names, _) = fetch(g.tls, Some("shop.test"), None).unwrap();
        assert!(names.contains(&"renewed.test".to_string()), "fast {fast}: {names:?}");
        stop.store(true, Ordering::SeqCst);
        for t in load {
            t.join().unwrap();
        }
        assert!(done.load(Ordering::SeqCst) > 20, "fast {fast}");
        assert_eq!(failed.load(Ordering::SeqCst), 0, "fast {fast}: handshakes failed during the reload");
        let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
        assert!(log.contains("the last good ones serve on") && log.contains("not a PEM certificate"), "{log}");

        // SIGHUP reads them at once, even with the same times.
        std::fs::copy(&old_cert, &cert_file).unwrap();
        std::fs::copy(&old_key, &key_file).unwrap();
        assert!(Command::new("kill").args(["-HUP", &g.proc.0.id().to_string()]).status().unwrap().success());
        assert!(
            eventually(5, || fetch(g.tls, Some("shop.test"), None).is_ok_and(|(n, _)| n == ["shop.test"])),
            "fast {fast}: SIGHUP"
        );
    }
}
