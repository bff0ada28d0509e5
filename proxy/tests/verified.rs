//! Crawler verification inside the real gateway, on the own path and on
//! Pingora's pipeline alone: clients connect from several 127.0.0.0/8
//! addresses, each standing for a crawler's address; IP-range feeds come
//! from a loopback origin that can fail; reverse DNS is asked of dnsmasq on
//! loopback (for addresses a trusted proxy names in `X-Forwarded-For`,
//! since DNS answers 127/8 itself as localhost).
//!
//! Sites differ only in what they do with a spoofed claim: `refuse.test`
//! answers 403, `tag.test` judges it as the anonymous client it is, and
//! `allow.test` as the crawler it claims to be.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use testkit::*;

mod support;
use support::dns::dnsmasq;
use support::spawn_proxy;

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

/// The real crawler's address (in the feed), a spoofer's, a trusted proxy's.
const REAL: &str = "127.0.0.2";
const SPOOFER: &str = "127.0.0.3";
const PROXY: &str = "127.0.0.5";

const ROBOTS: &str = "User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nAllow: /\nDisallow: /nogoogle\n\nUser-agent: Google-Extended\nDisallow: /\n\nUser-agent: bingbot\nDisallow: /nobing\n";

const SIGNERBOT: &str = "Mozilla/5.0 (compatible; SignerBot/1.0; +https://signer.test/bot)";
const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";

const FEED: &str = r#"{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.2/32"},{"ipv6Prefix":"2001:db8:1::/48"}]}"#;

struct Gate {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
    cfg: PathBuf,
}

fn start(name: &str, origin: SocketAddr, feed_url: &str, dns_port: u16, fast_path: bool) -> Gate {
    start_with(name, origin, feed_url, dns_port, fast_path, "")
}

/// [`start`] with more `proxy.identity` lines.
/// A `budget:` line among `more` replaces the default one (3s).
fn start_with(name: &str, origin: SocketAddr, feed_url: &str, dns_port: u16, fast_path: bool, more: &str) -> Gate {
    let budget = if more.contains("budget:") { "" } else { "    budget: 3s" };
    let directory = feed_url.replace("/googlebot.json", DIRECTORY_PATH);
    let dir = temp_dir(name);
    let (listen, admin) = (free_port(), free_port());
    let site = |name: &str, spoofed: &str| {
        format!(
            "  - name: {name}\n    proxy:\n      hosts: [{name}.test]\n      origin: {origin}\n      enforce: true\n      spoofed: {spoofed}\n"
        )
    };
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state
  refresh: 1s
  grace_period: 1s
  fast_path: {fast_path}
  identity:
    only: [Googlebot, SignerBot]
    refresh: 1s
    dns_servers: [\"127.0.0.1:{dns_port}\"]
    dns_timeout: 2s
{budget}
    trusted_proxies: [\"{PROXY}/32\"]
{more}crawlers:
  - {{ token: Googlebot, operator: Google, purpose: search, obeys: true, source: https://example.test/,
      verify: {{ ip_ranges: [\"{feed_url}\"], rdns: [googlebot.com] }} }}
  - {{ token: SignerBot, operator: Signer Inc., purpose: user-fetch, obeys: false, source: https://example.test/,
      verify: {{ web_bot_auth: \"{directory}\" }} }}
sites:
{}{}{}",
        site("refuse", "refuse"),
        site("tag", "tag"),
        site("allow", "allow")
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    let proc = spawn_proxy(&cfg, &[addr, admin]);
    Gate { proc, addr, admin, cfg }
}

impl Gate {
    fn get(&self, from: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        let ip: IpAddr = from.parse().unwrap();
        request_from(Some(ip), self.addr, "GET", host, path, headers).expect("an answer from the gateway")
    }

    fn metrics(&self) -> String {
        request(self.admin, "GET", "admin", "/metrics", &[]).map(|r| r.text()).unwrap_or_default()
    }

    /// `/status`, or `null` while the admin listener cannot answer (just
    /// restarted, or a loaded machine).
    fn status(&self) -> serde_json::Value {
        request(self.admin, "GET", "admin", "/status", &[("Authorization", "Bearer secret")])
            .and_then(|r| serde_json::from_slice(&r.body).ok())
            .unwrap_or_default()
    }

    /// Waits until every site serves its robots.txt from the store (until
    /// then requests pass through unjudged, and so does `/robots.txt`,
    /// which is why its body proves nothing).
    fn wait_for_sites(&self) {
        assert!(
            eventually(30, || {
                let status = self.status();
                status["sites"].as_array().is_some_and(|sites| {
                    sites.len() == 3
                        && sites.iter().all(|s| s["source"] != "pass-through" && s["source"] != "origin-no-file")
                })
            }),
            "{}",
            self.status()
        );
    }

    /// Waits for the feed's copy to be in use.
    fn wait_for_feed(&self) {
        assert!(
            eventually(20, || self
                .metrics()
                .lines()
                .any(|l| l.starts_with("robotsgate_identity_feed_prefixes") && l.ends_with(" 2"))),
            "the feed was not loaded: {}",
            self.metrics()
        );
    }
}

/// What the origin got as `Robotsgate-Crawler` on the last request whose
/// target is `path`.
fn tag_seen(echo: &Echo, path: &str) -> Option<String> {
    let head = echo.heads().into_iter().rev().find(|h| h.starts_with(&format!("GET {path} ")))?;
    head.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.eq_ignore_ascii_case("robotsgate-crawler"))
            .map(|(_, v)| v.trim().to_string())
    })
}

fn dns() -> Option<(Proc, u16)> {
    dnsmasq(&[
        "--local=/in-addr.arpa/",
        "--local=/com/",
        "--host-record=crawl-66-249-66-1.googlebot.com,66.249.66.1",
        "--host-record=crawl.evilgooglebot.com,66.249.66.4",
    ])
}

fn run(fast_path: bool) {
    let Some((_dns, dns_port)) = dns() else { return };
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let feeds = Origin::start();
    feeds.set("/googlebot.json", Reply::ok(FEED));
    let name = if fast_path { "verified-fast" } else { "verified-pipeline" };
    let mut g = start(name, echo.addr, &feeds.url("/googlebot.json"), dns_port, fast_path);
    g.wait_for_feed();
    g.wait_for_sites();

    // The real crawler, by the published ranges: judged as Googlebot, and
    // the origin is told.
    let r = g.get(REAL, "refuse.test", "/page", &[("User-Agent", GOOGLEBOT)]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(tag_seen(&echo, "/page").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(REAL, "tag.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(g.get(REAL, "tag.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 403);

    // The same claim from another address: refused, tagged and judged as
    // anyone (`*` disallows /private, Googlebot's group would allow it), or
    // allowed as Googlebot.
    let r = g.get(SPOOFER, "refuse.test", "/page", &[("User-Agent", GOOGLEBOT)]);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("claims to be Googlebot"), "{}", r.text());
    assert_eq!(g.get(SPOOFER, "tag.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(g.get(SPOOFER, "tag.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/nogoogle").as_deref(), Some("Googlebot; identity=spoofed"));
    assert_eq!(g.get(SPOOFER, "allow.test", "/private", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/private").as_deref(), Some("Googlebot; identity=spoofed"));
    assert_eq!(g.get(SPOOFER, "allow.test", "/nogoogle", &[("User-Agent", GOOGLEBOT)]).status, 403);

    // A client cannot forge the gateway's field, nor its address: only a
    // trusted proxy's X-Forwarded-For counts.
    let forged = [("User-Agent", BROWSER), ("Robotsgate-Crawler", "Googlebot; identity=verified")];
    assert_eq!(g.get(SPOOFER, "refuse.test", "/forged", &forged).status, 200);
    assert_eq!(tag_seen(&echo, "/forged"), None);
    let forged = [("User-Agent", GOOGLEBOT), ("Robotsgate-Crawler", "Googlebot; identity=verified")];
    assert_eq!(g.get(SPOOFER, "tag.test", "/forged2", &forged).status, 200);
    assert_eq!(tag_seen(&echo, "/forged2").as_deref(), Some("Googlebot; identity=spoofed"));
    let xff = |v: &'static str| [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", v)];
    assert_eq!(g.get(SPOOFER, "refuse.test", "/xff", &xff(REAL)).status, 403, "an untrusted peer's XFF");
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff(REAL)).status, 200, "a trusted proxy's XFF");
    assert_eq!(tag_seen(&echo, "/xff").as_deref(), Some("Googlebot; identity=verified"));
    // Addresses left of the last untrusted one were written by the client.
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff("127.0.0.2, 127.0.0.3")).status, 403);
    assert_eq!(g.get(PROXY, "refuse.test", "/xff", &xff("127.0.0.3, 127.0.0.2, 127.0.0.5")).status, 200);
    // Several fields are one list.
    let two = [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", REAL), ("X-Forwarded-For", SPOOFER)];
    assert_eq!(g.get(PROXY, "refuse.test", "/xff2", &two).status, 403);

    // Forward-confirmed reverse DNS, for an address a trusted proxy names:
    // a real name, and a look-alike domain.
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns", &xff("66.249.66.1")).status, 200);
    assert_eq!(tag_seen(&echo, "/rdns").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns", &xff("66.249.66.4")).status, 403);
    // A second time, from the cache.
    assert_eq!(g.get(PROXY, "refuse.test", "/rdns2", &xff("66.249.66.1")).status, 200);

    // A crawler that reads Googlebot's group when it has none of its own
    // is verified as Googlebot, though `only` does not name it: a claim
    // from anywhere would otherwise be judged by Googlebot's group.
    let image = [("User-Agent", "Googlebot-Image/1.0")];
    assert_eq!(g.get(SPOOFER, "tag.test", "/private", &image).status, 403, "a spoofed Googlebot-Image");
    assert_eq!(g.get(SPOOFER, "refuse.test", "/image", &image).status, 403);
    let r = g.get(REAL, "tag.test", "/private", &image);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(tag_seen(&echo, "/private").as_deref(), Some("Googlebot-Image; identity=verified"));

    // A User-Agent that names two crawlers is judged by the strictest:
    // adding `Googlebot/2.1` wins a disallowed crawler nothing.
    let both = [("User-Agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) bingbot/2.0")];
    assert_eq!(g.get(REAL, "tag.test", "/nobing", &both).status, 403, "bingbot's group disallows /nobing");
    assert_eq!(g.get(REAL, "tag.test", "/nogoogle", &both).status, 403);
    assert_eq!(g.get(REAL, "tag.test", "/both-ok", &both).status, 200);

    // A crawler this gateway does not verify (`only`): unverifiable, never
    // spoofed, and judged by its claim.
    assert_eq!(g.get(SPOOFER, "refuse.test", "/bing", &[("User-Agent", BINGBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/bing").as_deref(), Some("bingbot; identity=unverifiable"));

    let metrics = g.metrics();
    for want in [
        r#"robotsgate_crawler_requests_total{crawler="Googlebot",identity="verified",verdict="allow"}"#,
        r#"robotsgate_crawler_requests_total{crawler="Googlebot",identity="spoofed",verdict="disallow"}"#,
        r#"robotsgate_crawler_requests_total{crawler="bingbot",identity="unverifiable",verdict="allow"} 1"#,
        r#"robotsgate_enforced_total{crawler="Googlebot",reason="spoofed",site="refuse"}"#,
        r#"robotsgate_identity_feed_failing{feed=""#,
    ] {
        assert!(metrics.contains(want), "{want} in\n{metrics}");
    }
    let status = g.status();
    // Enforcement cannot apply a usage token's group, and says so.
    assert_eq!(status["sites"][0]["unenforceable_groups"], serde_json::json!(["Google-Extended"]), "{status}");
    let feed = &status["identity"]["feeds"][0];
    assert_eq!(feed["prefixes"], 2, "{status}");
    assert!(feed["last_error"].is_null(), "{status}");

    // The feed fails: the copy in use stays, and /status says why.
    feeds.set("/googlebot.json", Reply::status(503));
    assert!(
        eventually(10, || g.status()["identity"]["feeds"][0]["last_error"].as_str().is_some_and(|e| e.contains("503"))),
        "{}",
        g.status()
    );
    assert_eq!(g.get(REAL, "refuse.test", "/still", &[("User-Agent", GOOGLEBOT)]).status, 200);

    // Killed, and started while the feed still fails: the copy on disk
    // verifies from the first request.
    g.proc.kill();
    let proc = spawn_proxy(&g.cfg, &[g.addr, g.admin]);
    g.proc = proc;
    g.wait_for_sites();
    assert_eq!(g.get(REAL, "refuse.test", "/restarted", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/restarted").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(g.get(SPOOFER, "refuse.test", "/restarted", &[("User-Agent", GOOGLEBOT)]).status, 403);
}

#[test]
fn verification_on_the_fast_path() {
    run(true);
}

#[test]
fn verification_on_the_pipeline() {
    run(false);
}

/// A fresh Ed25519 key: its secret, and its JWK's `x` and thumbprint.
struct Key {
    secret: [u8; 32],
    x: String,
    keyid: String,
}

fn fresh_key() -> Key {
    use std::io::Read;
    let mut secret = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut secret)).expect("random bytes");
    let public = ed25519_dalek::SigningKey::from_bytes(&secret).verifying_key().to_bytes();
    let x = base64url(&public);
    let keyid = web_bot_auth::keyring::Thumbprintable::OKP { crv: "Ed25519".into(), x: x.clone() }.b64_thumbprint();
    Key { secret, x, keyid }
}

/// Base64url without padding (RFC 4648 section 5), as JWKs write keys.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The `Signature-Input` and `Signature` a crawler holding `key` sends to
/// `authority`, covering `@authority` and `Signature-Agent: agent` (the
/// legacy form, a quoted URL).
fn sign(key: &Key, authority: &str, agent: &str, valid: std::time::Duration) -> (String, String) {
    sign_member(key, authority, None, agent, valid)
}

/// [`sign`], covering the `Signature-Agent` dictionary member `member`
/// (`"signature-agent";key="sig1"`) whose serialized value is `agent`, as
/// the current draft writes it; `None` covers the whole field.
fn sign_member(
    key: &Key,
    authority: &str,
    member: Option<&str>,
    agent: &str,
    valid: std::time::Duration,
) -> (String, String) {
    use web_bot_auth::components::{
        CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters, HTTPFieldParametersSet,
    };
    use web_bot_auth::message_signatures::{MessageSigner, UnsignedMessage};
    struct Request {
        covered: Vec<(CoveredComponent, String)>,
        input: String,
        signature: String,
    }
    impl UnsignedMessage for Request {
        fn fetch_components_to_cover(&self) -> indexmap::IndexMap<CoveredComponent, String> {
            self.covered.iter().cloned().collect()
        }
        fn register_header_contents(&mut self, input: String, signature: String) {
            self.input = format!("sig1={input}");
            self.signature = format!("sig1={signature}");
        }
    }
    let mut request = Request {
        covered: vec![
            (CoveredComponent::Derived(DerivedComponent::Authority { req: false }), authority.to_string()),
            (
                CoveredComponent::HTTP(HTTPField {
                    name: "signature-agent".into(),
                    parameters: HTTPFieldParametersSet(
                        member.map(|m| vec![HTTPFieldParameters::Key(m.to_string())]).unwrap_or_default(),
                    ),
                }),
                agent.to_string(),
            ),
        ],
        input: String::new(),
        signature: String::new(),
    };
    let signer =
        MessageSigner { keyid: key.keyid.clone(), nonce: format!("{:x}", key.secret[0]), tag: "web-bot-auth".into() };
    signer
        .generate_signature_headers_content(
            &mut request,
            valid,
            web_bot_auth::keyring::Algorithm::Ed25519,
            &key.secret.to_vec(),
        )
        .expect("signing");
    (request.input, request.signature)
}

fn signed_run(fast_path: bool) {
    let Some((_dns, dns_port)) = dns() else { return };
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let feeds = Origin::start();
    feeds.set("/googlebot.json", Reply::ok(FEED));
    let key = fresh_key();
    let directory = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","kid":"{}","x":"{}"}}]}}"#, key.keyid, key.x);
    // Served as the directory draft says: its media type, at the well-known URI.
    let served = |body: &str| Reply::Send {
        status: 200,
        headers: vec![("Content-Type".into(), "application/http-message-signatures-directory+json".into())],
        body: body.as_bytes().to_vec(),
        delay: std::time::Duration::ZERO,
    };
    // First as plain JSON: not a key directory's media type, so refused.
    feeds.set(DIRECTORY_PATH, Reply::ok(directory.clone()));
    let name = if fast_path { "signed-fast" } else { "signed-pipeline" };
    let mut g = start(name, echo.addr, &feeds.url("/googlebot.json"), dns_port, fast_path);
    assert!(
        eventually(20, || g.status()["identity"]["key_directories"][0]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("application/http-message-signatures-directory+json"))),
        "a directory served as another type: {}",
        g.status()
    );
    feeds.set(DIRECTORY_PATH, served(&directory));
    assert!(
        eventually(20, || g.status()["identity"]["key_directories"][0]["keys"] == 1),
        "the key directory was not loaded: {}",
        g.status()
    );
    g.wait_for_sites();

    let agent = format!("\"{}\"", feeds.url(""));
    let minute = std::time::Duration::from_secs(60);
    let get = |g: &Gate, path: &str, (input, signature): &(String, String), agent: &str| {
        let headers = [
            ("User-Agent", SIGNERBOT),
            ("Signature-Agent", agent),
            ("Signature-Input", input.as_str()),
            ("Signature", signature.as_str()),
        ];
        g.get(SPOOFER, "refuse.test", path, &headers).status
    };

    // Signed for this host, with a key in the directory: verified from any
    // address, and the origin gets the signature untouched.
    let good = sign(&key, "refuse.test", &agent, minute);
    assert_eq!(get(&g, "/signed", &good, &agent), 200);
    assert_eq!(tag_seen(&echo, "/signed").as_deref(), Some("SignerBot; identity=verified"));
    // Unsigned: the operator signs, so the claim fails.
    let r = g.get(SPOOFER, "refuse.test", "/unsigned", &[("User-Agent", SIGNERBOT)]);
    assert_eq!(r.status, 403, "{}", r.text());
    // Signed for another host (replayed here), expired, by a key the
    // directory does not hold, or with the signed agent changed after.
    assert_eq!(get(&g, "/replayed", &sign(&key, "other.test", &agent, minute), &agent), 403);
    assert_eq!(get(&g, "/expired", &sign(&key, "refuse.test", &agent, std::time::Duration::ZERO), &agent), 403);
    assert_eq!(get(&g, "/stranger", &sign(&fresh_key(), "refuse.test", &agent, minute), &agent), 403);
    assert_eq!(get(&g, "/tampered", &good, "\"https://evil.test\""), 403);
    // A signature that is not web-bot-auth's shape at all.
    let junk = ("sig1=(\"@authority\");created=1".to_string(), "sig1=:AAAA:".to_string());
    assert_eq!(get(&g, "/junk", &junk, &agent), 403);
    // A valid signature whose Signature-Agent names another directory: a
    // key is known by its (URL, key) pair, so it is not this crawler's.
    let elsewhere = "\"https://elsewhere.example\"";
    assert_eq!(get(&g, "/elsewhere", &sign(&key, "refuse.test", elsewhere, minute), elsewhere), 403);

    // The current draft's form: a dictionary member keyed by the
    // signature's label, covered as `"signature-agent";key="sig1"`.
    let member = format!("sig1={agent}");
    let dict = sign_member(&key, "refuse.test", Some("sig1"), &agent, minute);
    assert_eq!(get(&g, "/dictionary", &dict, &member), 200);
    assert_eq!(tag_seen(&echo, "/dictionary").as_deref(), Some("SignerBot; identity=verified"));
    // With another member beside it, the signature's own is the one read.
    let two = format!("other=\"https://elsewhere.example\", {member}");
    assert_eq!(get(&g, "/two-members", &dict, &two), 200);
    // A member for another label is no member for this signature.
    let other_label = format!("sig2={agent}");
    let covers_sig2 = sign_member(&key, "refuse.test", Some("sig2"), &agent, minute);
    assert_eq!(get(&g, "/other-label", &covers_sig2, &other_label), 403);
    // The member changed after signing.
    assert_eq!(get(&g, "/tampered-member", &dict, "sig1=\"https://evil.test\""), 403);

    let metrics = g.metrics();
    assert!(
        metrics.contains(
            r#"robotsgate_crawler_requests_total{crawler="SignerBot",identity="verified",verdict="allow"} 3"#
        ),
        "{metrics}"
    );
    // Both forms are counted apart.
    let count = |form: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("robotsgate_signature_agent_total{{form=\"{form}\"}} ")))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {form} count: {metrics}"))
    };
    assert_eq!(count("dictionary"), 4, "{metrics}");
    assert!(count("legacy") >= 7, "{metrics}");

    // The directory goes down: the copy in use stays, on disk too, and
    // verifies after a kill -9 and a restart.
    feeds.set(DIRECTORY_PATH, Reply::status(503));
    let _ = served;
    assert!(eventually(10, || g.status()["identity"]["key_directories"][0]["last_error"]
        .as_str()
        .is_some_and(|e| e.contains("503"))));
    assert_eq!(get(&g, "/still", &good, &agent), 200);
    g.proc.kill();
    g.proc = spawn_proxy(&g.cfg, &[g.addr, g.admin]);
    g.wait_for_sites();
    assert_eq!(get(&g, "/restarted", &sign(&key, "refuse.test", &agent, minute), &agent), 200);
    assert_eq!(tag_seen(&echo, "/restarted").as_deref(), Some("SignerBot; identity=verified"));
}

#[test]
fn web_bot_auth_on_the_fast_path() {
    signed_run(true);
}

#[test]
fn web_bot_auth_on_the_pipeline() {
    signed_run(false);
}

/// Sends `raw` from `from` and reads the answer until the gateway closes.
fn raw_from(from: &str, addr: SocketAddr, raw: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = connect_from(from.parse().unwrap(), addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    s.write_all(raw).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn status_of(answer: &str) -> u16 {
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn proxy_protocol_run(fast_path: bool) {
    let Some((_dns, dns_port)) = dns() else { return };
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let feeds = Origin::start();
    feeds.set("/googlebot.json", Reply::ok(FEED));
    let name = if fast_path { "proxied-fast" } else { "proxied-pipeline" };
    let g =
        start_with(name, echo.addr, &feeds.url("/googlebot.json"), dns_port, fast_path, "    proxy_protocol: true\n");
    g.wait_for_feed();
    g.wait_for_sites();
    let request = |path: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: refuse.test\r\nUser-Agent: {GOOGLEBOT}\r\nConnection: close\r\n\r\n")
    };
    let v1 = |src: &str, path: &str| format!("PROXY TCP4 {src} 127.0.0.1 40000 80\r\n{}", request(path)).into_bytes();
    let v2 = |src: [u8; 4], path: &str| {
        let mut out = b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c".to_vec();
        out.extend_from_slice(&src);
        out.extend_from_slice(&[127, 0, 0, 1, 0x9c, 0x40, 0, 80]);
        out.extend_from_slice(request(path).as_bytes());
        out
    };

    // The trusted balancer names the real crawler's address, in either
    // version, and the claim is judged by it.
    assert_eq!(status_of(&raw_from(PROXY, g.addr, &v1(REAL, "/pp1"))), 200);
    assert_eq!(tag_seen(&echo, "/pp1").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(status_of(&raw_from(PROXY, g.addr, &v2([127, 0, 0, 2], "/pp2"))), 200);
    assert_eq!(tag_seen(&echo, "/pp2").as_deref(), Some("Googlebot; identity=verified"));
    assert_eq!(status_of(&raw_from(PROXY, g.addr, &v1(SPOOFER, "/pp3"))), 403);
    assert_eq!(status_of(&raw_from(PROXY, g.addr, &v2([127, 0, 0, 3], "/pp4"))), 403);
    // A header split over several packets is still one header.
    let split = v1(REAL, "/pp5");
    let answer = {
        use std::io::{Read, Write};
        let mut s = connect_from(PROXY.parse().unwrap(), g.addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        for part in split.chunks(7) {
            s.write_all(part).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    assert_eq!(status_of(&answer), 200, "{answer}");
    // The trusted peer must send one; a direct client cannot.
    let answer = raw_from(PROXY, g.addr, request("/pp6").as_bytes());
    assert_eq!(status_of(&answer), 400, "{answer}");
    let answer = raw_from(SPOOFER, g.addr, &v1(REAL, "/pp7"));
    assert!(status_of(&answer) >= 400, "an untrusted PROXY header is no header: {answer}");
    assert!(tag_seen(&echo, "/pp7").is_none());
    // A direct client is judged by its own address.
    assert_eq!(g.get(SPOOFER, "refuse.test", "/pp8", &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(g.get(REAL, "refuse.test", "/pp9", &[("User-Agent", GOOGLEBOT)]).status, 200);
}

#[test]
fn proxy_protocol_on_the_fast_path() {
    proxy_protocol_run(true);
}

#[test]
fn proxy_protocol_on_the_pipeline() {
    proxy_protocol_run(false);
}

/// DNS that never answers: a claim reverse DNS must settle goes on as
/// `pending` once the budget is spent, never refused as spoofed, and the
/// request waits no longer than the budget.
fn pending_run(fast_path: bool) {
    let echo = Echo::start();
    echo.set_robots(ROBOTS);
    let feeds = Origin::start();
    feeds.set("/googlebot.json", Reply::ok(FEED));
    // A UDP port nobody answers on.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let name = if fast_path { "pending-fast" } else { "pending-pipeline" };
    let g = start_with(name, echo.addr, &feeds.url("/googlebot.json"), port, fast_path, "    budget: 300ms\n");
    g.wait_for_feed();
    g.wait_for_sites();
    let headers = [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", "66.249.66.1")];
    let started = std::time::Instant::now();
    let r = g.get(PROXY, "refuse.test", "/pending", &headers);
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(tag_seen(&echo, "/pending").as_deref(), Some("Googlebot; identity=pending"));
    assert!(took < std::time::Duration::from_secs(2), "waited {took:?} for a 300ms budget");
    // Once the lookup has failed (dns_timeout, 2s), the failure is kept
    // as pending: later requests from the address wait for nothing.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    for i in 0..3 {
        let started = std::time::Instant::now();
        let r = g.get(PROXY, "refuse.test", &format!("/again{i}"), &headers);
        let took = started.elapsed();
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(tag_seen(&echo, &format!("/again{i}")).as_deref(), Some("Googlebot; identity=pending"));
        assert!(
            took < std::time::Duration::from_millis(150),
            "request {i} waited {took:?}: DNS is down, and known to be"
        );
    }
    // Ranges still verify without DNS.
    assert_eq!(g.get(REAL, "refuse.test", "/ranged", &[("User-Agent", GOOGLEBOT)]).status, 200);
    assert_eq!(tag_seen(&echo, "/ranged").as_deref(), Some("Googlebot; identity=verified"));
    drop(silent);
}

#[test]
fn dns_down_is_pending_on_the_fast_path() {
    pending_run(true);
}

#[test]
fn dns_down_is_pending_on_the_pipeline() {
    pending_run(false);
}
