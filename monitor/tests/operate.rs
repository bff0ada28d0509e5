//! What operators plug the monitor into: JSON log lines, shell
//! completions and man pages.

use std::process::Command;

mod support;
use support::*;

#[test]
fn json_logs() {
    let dir = temp_dir("monitor-json-logs");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /x\n"));
    let cfg = write_config(
        &dir,
        &format!("database: history.db\nsites:\n  - name: shop\n    url: {}\n", origin.url("/robots.txt")),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .args(["--config", cfg.to_str().unwrap(), "once"])
        .env("ROBOTSGATE_LOG", "info")
        .env("ROBOTSGATE_LOG_FORMAT", "json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(!lines.is_empty(), "no log lines at info");
    assert!(lines.iter().all(|l| l["level"].is_string() && l["timestamp"].is_string()), "{stderr}");
    // Event fields are top-level, under stable names.
    assert!(lines.iter().any(|l| l["site"] == "shop"), "{stderr}");
    // The config key does the same.
    std::fs::write(&cfg, format!("log_format: json\n{}", std::fs::read_to_string(&cfg).unwrap())).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .args(["--config", cfg.to_str().unwrap(), "once"])
        .env("ROBOTSGATE_LOG", "info")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().filter(|l| !l.is_empty()).all(|l| l.starts_with('{')), "{stderr}");
}

#[test]
fn completions_and_man_pages() {
    for (shell, want) in
        [("bash", "robots-monitor"), ("zsh", "#compdef robots-monitor"), ("fish", "complete -c robots-monitor")]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_robots-monitor")).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want) && text.contains("ingest"), "{shell}: {text}");
    }
    let dir = temp_dir("monitor-man");
    let out = Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .args(["man", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ingest = std::fs::read_to_string(dir.join("robots-monitor-ingest.1")).unwrap();
    assert!(ingest.contains("\\-\\-site") && ingest.contains("\\-\\-format"), "{ingest}");
}
