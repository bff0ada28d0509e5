//! The console's JSON API against its own contract, with the real daemon:
//! every endpoint's answers, good and bad, are validated against the
//! OpenAPI 3.1 document it publishes, and every error under `/api/` is an
//! RFC 9457 problem document.

use std::net::SocketAddr;
use std::process::{Command, Stdio};

#[path = "support/openapi.rs"]
mod openapi;
mod support;

use openapi::{Document, send};
use support::*;

const TOKEN: &str = "api-test-token";

/// Method, target, the path as the document writes it, header fields,
/// body, and the status expected.
type Case<'a> = (&'a str, String, &'a str, &'a [(&'a str, &'a str)], &'a [u8], u16);

#[test]
fn every_answer_matches_the_openapi_document() {
    let dir = temp_dir("console-api");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /admin\n"));
    let port = free_port();
    let yaml = format!(
        "database: history.db\nagents: [Googlebot]\ninterval: 1h\nconsole: {{ listen: \"127.0.0.1:{port}\" }}\n\
         sites:\n  - name: shop\n    url: {}\n    url_sets:\n      main: [/, /admin/x]\n",
        origin.url("/robots.txt")
    );
    let cfg = write_config(&dir, &yaml);
    let _daemon = Proc(
        Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
            .args(["--config", cfg.to_str().unwrap(), "run"])
            .env("ROBOTSGATE_ADMIN_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("robots-monitor run"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(wait_listening(addr, 20), "console did not start");
    let database = dir.join("history.db").display().to_string();
    assert!(eventually(20, || scalar(&database, "SELECT COUNT(*) FROM states") == 1), "first poll");
    let doc = Document::fetch(addr);
    // The document itself, through a real validator (PyPI's
    // openapi-spec-validator, which scripts/services.sh installs).
    let file = dir.join("openapi.json");
    std::fs::write(&file, send(addr, "GET", "/api/openapi.json", &[], b"").body).unwrap();
    match Command::new("python3").args(["-m", "openapi_spec_validator"]).arg(&file).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("No module named") => {
            assert!(std::env::var_os("CI").is_none(), "openapi-spec-validator is required under CI");
            eprintln!("openapi-spec-validator not installed; skipping the document's validation");
        }
        Ok(out) => panic!(
            "the OpenAPI document is invalid:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("python3: {e}"),
    }

    let site = send(addr, "GET", "/api/sites/shop", &[], b"");
    let revision = site.json()["states"][0]["revision"].as_i64().expect("a revision number");
    let json = [("Content-Type", "application/json")];
    let bearer = format!("Bearer {TOKEN}");
    let token = [("Authorization", bearer.as_str())];
    let big = vec![b' '; 9 * 1024 * 1024];
    let revision_json = format!(r#"{{"site":"shop","revision":{revision},"urls":"/admin/x"}}"#);
    let revision_path = format!("/api/sites/shop/revisions/{revision}");
    let cases: Vec<Case> = vec![
        ("GET", "/api/sites".into(), "/api/sites", &[], b"", 200),
        ("GET", "/api/sites?state=ok&q=sh&page=1".into(), "/api/sites", &[], b"", 200),
        ("GET", "/api/sites?page=abc".into(), "/api/sites", &[], b"", 400),
        ("GET", "/api/sites/shop".into(), "/api/sites/{name}", &[], b"", 200),
        ("GET", "/api/sites/nope".into(), "/api/sites/{name}", &[], b"", 404),
        ("GET", revision_path.clone(), "/api/sites/{name}/revisions/{id}", &[], b"", 200),
        ("GET", "/api/sites/shop/revisions/abc".into(), "/api/sites/{name}/revisions/{id}", &[], b"", 400),
        ("GET", "/api/sites/shop/revisions/999999".into(), "/api/sites/{name}/revisions/{id}", &[], b"", 404),
        ("GET", "/api/sites/nope/revisions/1".into(), "/api/sites/{name}/revisions/{id}", &[], b"", 404),
        ("GET", "/api/alerts".into(), "/api/alerts", &[], b"", 200),
        ("POST", "/api/alerts/1/retry".into(), "/api/alerts/{id}/retry", &[], b"", 403),
        ("POST", "/api/alerts/999999/retry".into(), "/api/alerts/{id}/retry", &token, b"", 404),
        ("POST", "/api/alerts/abc/retry".into(), "/api/alerts/{id}/retry", &token, b"", 400),
        ("POST", "/api/sites/shop/release".into(), "/api/sites/{name}/release", &[], b"", 403),
        ("POST", "/api/sites/shop/release".into(), "/api/sites/{name}/release", &token, b"", 409),
        ("POST", "/api/sites/nope/release".into(), "/api/sites/{name}/release", &token, b"", 404),
        ("POST", "/api/sites/shop/release?revision=999999".into(), "/api/sites/{name}/release", &token, b"", 404),
        ("POST", "/api/sites/shop/release?revision=abc".into(), "/api/sites/{name}/release", &token, b"", 400),
        ("POST", "/api/sites/shop/release?revison=1".into(), "/api/sites/{name}/release", &token, b"", 400),
        ("POST", format!("/api/sites/shop/release?revision={revision}"), "/api/sites/{name}/release", &token, b"", 200),
        (
            "GET",
            "/api/test?robots=User-agent%3A+*%0ADisallow%3A+%2Fx&agents=Googlebot&urls=%2Fx".into(),
            "/api/test",
            &[],
            b"",
            200,
        ),
        ("GET", "/api/test?site=shop&revision=999999".into(), "/api/test", &[], b"", 404),
        ("GET", "/api/test?revision=abc".into(), "/api/test", &[], b"", 400),
        ("GET", "/api/test?set=nope%2Fnone".into(), "/api/test", &[], b"", 422),
        ("GET", "/api/test?robots_b64=%21%21".into(), "/api/test", &[], b"", 422),
        // A target past what the HTTP layer reads: still a problem document.
        ("GET", format!("/api/test?robots={}", "x".repeat(1_200_000)), "/api/test", &[], b"", 414),
        ("POST", "/api/test".into(), "/api/test", &json, revision_json.as_bytes(), 200),
        (
            "POST",
            "/api/test".into(),
            "/api/test",
            &json,
            br#"{"robots":"User-agent: *\nDisallow: /","urls":"/a"}"#,
            200,
        ),
        ("POST", "/api/test".into(), "/api/test", &json, b"{not json", 400),
        ("POST", "/api/test".into(), "/api/test", &[("Content-Type", "text/plain")], b"{}", 415),
        ("POST", "/api/test".into(), "/api/test", &json, br#"{"agents":5}"#, 422),
        ("POST", "/api/test".into(), "/api/test", &json, br#"{"site":"nope"}"#, 422),
        ("POST", "/api/test".into(), "/api/test", &json, br#"{"site":"shop","revision":999999}"#, 404),
        ("POST", "/api/test".into(), "/api/test", &json, &big, 413),
        // The compliance window in the CLI's forms, the crawler filter, and
        // what is refused: a bad number, a bad duration, both forms at
        // once, and a parameter that is not one.
        ("GET", "/api/compliance?since=12h".into(), "/api/compliance", &[], b"", 200),
        ("GET", "/api/compliance?days=7&crawler=GPTBot".into(), "/api/compliance", &[], b"", 200),
        ("GET", "/api/compliance/shop?since=7d&crawler=GPTBot".into(), "/api/compliance/{site}", &[], b"", 200),
        ("GET", "/api/compliance?days=abc".into(), "/api/compliance", &[], b"", 400),
        ("GET", "/api/compliance?since=yesterday".into(), "/api/compliance", &[], b"", 400),
        ("GET", "/api/compliance?days=7&since=7d".into(), "/api/compliance", &[], b"", 400),
        ("GET", "/api/compliance/shop?sinse=7d".into(), "/api/compliance/{site}", &[], b"", 400),
    ];
    // A byte that is not UTF-8 in the URLs (`%E9`): Google's verdict on the
    // bytes, not U+FFFD's.
    let a = send(
        addr,
        "GET",
        "/api/test?robots=User-agent%3A+*%0ADisallow%3A+%2Fcaf%E9&agents=Googlebot&urls=%2Fcaf%E9",
        &[],
        b"",
    );
    assert_eq!(a.status, 200);
    let row = &a.json()["rows"][0];
    assert_eq!((row["url"].as_str(), row["allowed"].as_bool()), (Some("/caf%E9"), Some(false)), "{row}");
    let form = b"robots=User-agent%3A+*%0ADisallow%3A+%2Fcaf%E9&agents=Googlebot&urls=%2Fcaf\xE9";
    let page = send(addr, "POST", "/tester", &[("Content-Type", "application/x-www-form-urlencoded")], form);
    let html = String::from_utf8_lossy(&page.body);
    assert_eq!(page.status, 200);
    assert!(html.contains("/caf%E9") && html.contains("blocked\">disallowed</td>"), "the raw byte 0xE9: {html}");

    let mut errors = 0;
    for (method, target, template, headers, body, want) in &cases {
        let a = send(addr, method, target, headers, body);
        assert_eq!(a.status, *want, "{method} {target}: {}", String::from_utf8_lossy(&a.body));
        if a.status >= 400 {
            errors += 1;
            assert_eq!(a.content_type, "application/problem+json", "{method} {target}");
            let p = a.json();
            assert_eq!(p["status"], a.status, "{method} {target}: {p}");
            assert!(p["title"].is_string() && p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
        }
        doc.check(method, template, &a);
    }
    assert!(errors >= 20, "{errors} error cases");
    let detail =
        |target: &str| send(addr, "GET", target, &[], b"").json()["detail"].as_str().unwrap_or_default().to_string();
    assert!(detail("/api/compliance/shop?sinse=7d").contains("unknown field `sinse`"), "names the parameter");
    assert!(detail("/api/compliance?days=abc").contains("days"), "{}", detail("/api/compliance?days=abc"));
    assert!(detail("/api/compliance?since=yesterday").contains("since `yesterday` is no duration"));
    assert!(!detail("/api/compliance?days=abc").contains("Failed to deserialize"));
    // Paths and methods no route serves are problems too.
    for (method, target, want) in
        [("GET", "/api/nothing", 404), ("DELETE", "/api/sites", 405), ("PUT", "/api/test", 405)]
    {
        let a = send(addr, method, target, &[], b"");
        assert_eq!((a.status, a.content_type.as_str()), (want, "application/problem+json"), "{method} {target}");
        assert_eq!(a.json()["status"], want);
    }
    // The revision number `/api/sites/NAME` gives is taken by the tester,
    // and judges the stored bytes.
    let a = send(addr, "POST", "/api/test", &json, revision_json.as_bytes());
    let rows = a.json()["rows"].clone();
    assert_eq!(rows[0]["allowed"], false, "{rows}");
}
