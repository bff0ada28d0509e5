//! `ROBOTSGATE_LOG_FORMAT=json`: every line both daemons write is one JSON
//! object whose values are numbers and words, never Rust's debug text
//! (`"status":"Some(200)"`, `"error":"None"`): a log shipper indexes them.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;

/// Every line of `log` is a JSON object with no debug text in it.
fn only_json(log: &str, who: &str) -> usize {
    let mut n = 0;
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{who}: not JSON ({e}): {line}"));
        assert!(value.is_object(), "{who}: {line}");
        let mut strings = Vec::new();
        fn walk<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
            match v {
                serde_json::Value::String(s) => out.push(s),
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        walk(&value, &mut strings);
        for s in strings {
            assert!(!s.contains("Some(") && s != "None" && !s.contains("None,"), "{who}: debug text in {line}");
        }
        n += 1;
    }
    n
}

#[test]
fn both_daemons_write_json_lines_without_debug_text() {
    let dir = temp_dir("json-logs");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /private/\n"));
    let (listen, admin) = (free_port(), free_port());
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "database: {db}\nhttp:\n  timeout: 2s\nproxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  state_dir: {state}\n  refresh: 1s\nsites:\n  - name: shop\n    url: {url}\n    proxy:\n      hosts: [shop.test]\n      origin: {origin}\n  - name: down\n    url: http://127.0.0.1:1/robots.txt\n",
            db = dir.join("h.db").display(),
            state = dir.join("state").display(),
            url = origin.url("/robots.txt"),
            origin = origin.addr,
        ),
    )
    .unwrap();

    // The gateway: starting, refreshing, a crawler request, a stop.
    let err = dir.join("proxy.log");
    let child = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cfg)
        .env("ROBOTSGATE_LOG_FORMAT", "json")
        .env("ROBOTSGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut proxy = Proc(child);
    let addr = format!("127.0.0.1:{listen}").parse().unwrap();
    assert!(wait_listening(addr, 20));
    let _ = request(addr, "GET", "shop.test", "/private/x", &[("User-Agent", "Googlebot/2.1")]);
    std::thread::sleep(Duration::from_secs(2));
    proxy.terminate();
    let written = std::fs::read_to_string(&err).unwrap();
    assert!(only_json(&written, "robots-proxy") >= 2, "{written}");

    // The monitor: a poll that answers (a status) and one that fails (an error).
    let Some(monitor) = support::monitor_bin() else { return };
    let out = Command::new(Path::new(&monitor))
        .arg("--config")
        .arg(&cfg)
        .arg("once")
        .env("ROBOTSGATE_LOG_FORMAT", "json")
        .env("ROBOTSGATE_LOG", "info")
        .output()
        .unwrap();
    let written = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(only_json(&written, "robots-monitor") >= 2, "{written}");
    let polled: Vec<serde_json::Value> = written
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "polled")
        .collect();
    let shop = polled.iter().find(|v| v["site"] == "shop" || v["span"]["site"] == "shop").expect("shop's poll");
    assert_eq!(shop["status"], 200, "a number: {shop}");
    assert!(shop.get("error").is_none(), "no error, so no field: {shop}");
    let down = polled.iter().find(|v| v != &shop).expect("down's poll");
    assert!(down["error"].is_string() && down.get("status").is_none(), "{down}");
}
