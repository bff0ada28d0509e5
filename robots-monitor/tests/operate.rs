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
    assert!(ingest.contains("EXIT STATUS"), "{ingest}");
    let help = Command::new(env!("CARGO_BIN_EXE_robots-monitor")).args(["ingest", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("EXIT STATUS:"),
        "{}",
        String::from_utf8_lossy(&help.stdout)
    );
}

/// The alert rules shipped in deploy/prometheus pass promtool's check and
/// their unit tests; the monitor's `/metrics` passes `promtool check
/// metrics` and has every family the rules read.
#[test]
fn prometheus_rules_and_metrics() {
    if Command::new("promtool").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool is required under CI (scripts/services.sh installs prometheus)"
        );
        eprintln!("promtool not installed; skipping");
        return;
    }
    let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus");
    for args in [["check", "rules", "rules.yaml"], ["test", "rules", "tests.yaml"]] {
        let out = Command::new("promtool").args(args).current_dir(&rules).output().unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let dir = temp_dir("monitor-metrics");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok("User-agent: *\nDisallow: /x\n"));
    let down = Origin::start();
    down.set("/robots.txt", Reply::status(503));
    let cfg = write_config(
        &dir,
        &format!(
            "database: history.db\nsites:\n  - name: shop\n    url: {}\n  - name: down\n    url: {}\n",
            origin.url("/robots.txt"),
            down.url("/robots.txt")
        ),
    );
    assert!(monitor(&cfg, &["once"]).status.success());
    let port = free_port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let _serve = serve(&cfg, addr, None);
    let text = request(addr, "GET", "127.0.0.1", "/metrics", &[]).expect("metrics").text();
    for want in [
        "robotsgate_monitor_info{owner=",
        r#",version=""#,
        "robotsgate_monitor_leases{owner=",
        r#"robotsgate_monitor_site_state{site="shop",state="ok"} 1"#,
        r#"robotsgate_monitor_site_state{site="down",state="blocked"} 1"#,
        r#"robotsgate_monitor_last_success_age_seconds{site="down"} -1"#,
        "robotsgate_monitor_db_seconds_bucket",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    // No email is configured: its alerts are recorded, not waiting on mail.
    assert!(!text.contains(r#"robotsgate_monitor_alerts{channel="email""#), "{text}");
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    check.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A config file that is not there is named once, with its cause once, by
/// both daemons (it said "No such file or directory" twice).
#[test]
fn a_missing_config_is_said_once() {
    let missing = "/nonexistent/robotsgate/config.yaml";
    let monitor =
        Command::new(env!("CARGO_BIN_EXE_robots-monitor")).args(["--config", missing, "once"]).output().unwrap();
    let err = String::from_utf8_lossy(&monitor.stderr);
    assert_eq!(monitor.status.code(), Some(2), "{err}");
    assert!(err.contains(missing), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}
