//! Crawler verification through the real `robots-proxy verify`, against a
//! real DNS server on loopback (dnsmasq serving PTR and A records) and IP-
//! range feeds served by a loopback origin that fails, goes empty and
//! changes shape.

use std::path::Path;
use std::process::{Command, Output};

use testkit::*;

mod support;
use support::dns::dnsmasq;

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn verify(catalogue: &Path, feeds: &Path, dns_port: u16, ip: &str, ua: &str, more: &[&str]) -> (i32, String) {
    let out: Output = Command::new(support::proxy_bin())
        .args(["verify", "--ip", ip, "--user-agent", ua, "--budget", "3s"])
        .arg("--dns")
        .arg(format!("127.0.0.1:{dns_port}"))
        .arg("--catalogue")
        .arg(catalogue)
        .arg("--feeds-dir")
        .arg(feeds)
        .args(more)
        .output()
        .expect("robots-proxy verify");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn verification_by_feeds_and_reverse_dns() {
    let Some((_dns, port)) = dnsmasq(&[
        // Authoritative for these: a name it does not hold is NXDOMAIN.
        "--local=/in-addr.arpa/",
        "--local=/com/",
        // A real crawler: PTR and A agree.
        "--host-record=crawl-66-249-66-1.googlebot.com,66.249.66.1",
        // A PTR under googlebot.com whose name resolves elsewhere.
        "--ptr-record=3.66.249.66.in-addr.arpa,crawl-9.googlebot.com",
        "--host-record=crawl-9.googlebot.com,66.249.66.9",
        // Forward-confirmed, but under a look-alike domain.
        "--host-record=crawl.evilgooglebot.com,66.249.66.4",
    ]) else {
        return;
    };
    let dir = temp_dir("identity");
    let feeds = dir.join("feeds");
    let origin = Origin::start();
    let feed = r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.6/32"},{"ipv6Prefix":"2001:db8:1::/48"}]}"#;
    origin.set("/googlebot.json", Reply::ok(feed));
    let catalogue = dir.join("catalogue.yaml");
    std::fs::write(
        &catalogue,
        format!(
            "crawlers:\n  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,\n      verify: {{ ip_ranges: [\"{}\"], rdns: [googlebot.com, google.com] }} }}\n",
            origin.url("/googlebot.json")
        ),
    )
    .unwrap();
    let check = |ip: &str, more: &[&str]| verify(&catalogue, &feeds, port, ip, GOOGLEBOT, more);

    // In the published ranges.
    let (code, out) = check("127.0.0.6", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("verified: 127.0.0.6 is in") && out.contains("2 prefixes"), "{out}");
    let (code, out) = check("2001:db8:1::7", &[]);
    assert_eq!(code, 0, "{out}");
    // Forward-confirmed reverse DNS. (The addresses DNS is asked about are
    // not loopback ones: hickory answers 127.in-addr.arpa itself, as
    // localhost, per RFC 6761. Only the DNS queries travel, to loopback.)
    let (code, out) = check("66.249.66.1", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("crawl-66-249-66-1.googlebot.com, which resolves back"), "{out}");
    // A PTR that does not resolve back, a look-alike suffix, no PTR at all.
    for ip in ["66.249.66.3", "66.249.66.4", "66.249.66.5", "127.0.0.5"] {
        let (code, out) = check(ip, &[]);
        assert_eq!(code, 1, "{ip}: {out}");
        assert!(out.starts_with("claims: Googlebot") && out.contains("spoofed:"), "{ip}: {out}");
        assert!(out.contains("reverse DNS gives no name under googlebot.com or google.com"), "{ip}: {out}");
        assert!(out.contains(&format!("that resolves back to {ip}")), "{ip}: {out}");
    }

    // The feed goes empty, changes shape, fails: each refused, and the
    // last good copy (on disk, across runs) still verifies.
    for (reply, error) in [
        (Reply::ok(r#"{"creationTime":"2026-11-25","prefixes":[]}"#), "lists no prefixes"),
        (Reply::ok(r#"{"ranges":["127.0.0.6/32"]}"#), "not an IP-range feed"),
        (Reply::ok("<html>moved</html>"), "not JSON"),
        (Reply::status(503), "answered 503"),
    ] {
        origin.set("/googlebot.json", reply);
        let (code, out) = check("127.0.0.6", &[]);
        assert!(out.contains(error), "{out}");
        assert_eq!(code, 0, "the last good copy verifies: {out}");
    }
    // Offline, from the copy alone: a restart verifies at once.
    let (code, out) = check("127.0.0.6", &["--offline"]);
    assert_eq!(code, 0, "{out}");
    // The feed changes: an address leaves it, and is judged by DNS alone.
    origin.set("/googlebot.json", Reply::ok(r#"{"creationTime":"x","prefixes":[{"ipv4Prefix":"127.0.0.7/32"}]}"#));
    let (code, out) = check("127.0.0.6", &[]);
    assert_eq!(code, 1, "{out}");

    // A crawler whose operator publishes nothing is never spoofed.
    let (code, out) = check("127.0.0.5", &[]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = verify(
        &catalogue,
        &feeds,
        port,
        "127.0.0.5",
        "Mozilla/5.0 (compatible; Bytespider; spider-feedback@bytedance.com)",
        &[],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("unverifiable: ByteDance publishes no"), "{out}");
    // Not a crawler at all.
    let (code, _) = verify(&catalogue, &feeds, port, "127.0.0.5", "curl/8.5.0", &[]);
    assert_eq!(code, 4);
}

#[test]
fn dns_down_is_not_spoofed() {
    // Nothing listens on this port: every query times out.
    let dir = temp_dir("identity-dns-down");
    let catalogue = dir.join("catalogue.yaml");
    std::fs::write(
        &catalogue,
        "crawlers:\n  - { token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,\n      verify: { rdns: [googlebot.com] } }\n",
    )
    .unwrap();
    let port = free_port();
    let start = std::time::Instant::now();
    let out = Command::new(support::proxy_bin())
        .args(["verify", "--ip", "66.249.66.1", "--user-agent", GOOGLEBOT, "--budget", "500ms"])
        .arg(format!("--dns=127.0.0.1:{port}"))
        .arg("--catalogue")
        .arg(&catalogue)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("pending:") && text.contains("neither verified nor refused"), "{text}");
    assert!(!text.contains("background"), "a one-shot command asks nothing in the background: {text}");
    assert!(start.elapsed() < std::time::Duration::from_secs(3), "the budget bounds the wait");
}

/// Issue #64: `--offline` asks nothing of the network, reverse DNS
/// included: a resolver on loopback receives no query, and the answer says
/// DNS was not asked.
#[test]
fn offline_asks_no_reverse_dns() {
    let dir = temp_dir("identity-offline");
    let catalogue = dir.join("catalogue.yaml");
    std::fs::write(
        &catalogue,
        "crawlers:\n  - { token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,\n      verify: { rdns: [googlebot.com] } }\n",
    )
    .unwrap();
    let resolver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    resolver.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
    let out = Command::new(support::proxy_bin())
        .args(["verify", "--ip", "66.249.66.1", "--user-agent", GOOGLEBOT, "--budget", "2s", "--offline"])
        .arg(format!("--dns={}", resolver.local_addr().unwrap()))
        .arg("--catalogue")
        .arg(&catalogue)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("reverse DNS: not asked (--offline)"), "{text}");
    assert!(!text.starts_with("verified") && out.status.code() == Some(3), "{text}");
    let mut buf = [0u8; 512];
    assert!(resolver.recv_from(&mut buf).is_err(), "--offline sent a DNS query: {text}");
    // Without --offline the same resolver is asked.
    let _ = Command::new(support::proxy_bin())
        .args(["verify", "--ip", "66.249.66.1", "--user-agent", GOOGLEBOT, "--budget", "300ms"])
        .arg(format!("--dns={}", resolver.local_addr().unwrap()))
        .arg("--catalogue")
        .arg(&catalogue)
        .output()
        .unwrap();
    assert!(resolver.recv_from(&mut buf).is_ok(), "the resolver is asked when online");
}

/// A feed may be a file, for a gateway that fetches nothing itself.
#[test]
fn a_feed_can_be_a_file() {
    let dir = temp_dir("identity-file");
    let feed = dir.join("ranges.json");
    std::fs::write(&feed, r#"{"creationTime":"x","prefixes":[{"ipv4Prefix":"127.0.0.9/32"}]}"#).unwrap();
    let catalogue = dir.join("catalogue.yaml");
    std::fs::write(
        &catalogue,
        format!(
            "crawlers:\n  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,\n      verify: {{ ip_ranges: [\"{}\"] }} }}\n",
            feed.display()
        ),
    )
    .unwrap();
    let run = |ip: &str| {
        let out = Command::new(support::proxy_bin())
            .args(["verify", "--ip", ip, "--user-agent", GOOGLEBOT, "--catalogue"])
            .arg(&catalogue)
            .output()
            .expect("robots-proxy verify");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = run("127.0.0.9");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("1 prefixes") && out.contains("ranges.json"), "{out}");
    let (code, out) = run("127.0.0.8");
    assert_eq!(code, Some(1), "{out}");
    // A relative path is refused, naming the entry.
    std::fs::write(&catalogue, "crawlers:\n  - { token: X, operator: x, purpose: search, obeys: true, source: x, verify: { ip_ranges: [ranges.json] } }\n").unwrap();
    let (code, out) = run("127.0.0.9");
    let err = Command::new(support::proxy_bin())
        .args(["verify", "--ip", "127.0.0.9", "--user-agent", GOOGLEBOT, "--catalogue"])
        .arg(&catalogue)
        .output()
        .unwrap();
    assert_eq!(code, Some(2), "{out}");
    assert!(String::from_utf8_lossy(&err.stderr).contains("absolute file path"));
}
