//! What operators plug the gateway into: JSON log lines for pipelines
//! (both request paths), shell completions and man pages.

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use testkit::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /private\n";

fn json_logs(fast_path: bool) {
    let dir = temp_dir(if fast_path { "json-logs-fast" } else { "json-logs-pipeline" });
    let origin = Echo::start();
    origin.set_robots(ROBOTS);
    let listen = free_port();
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "log_format: json\nproxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{}\n  state_dir: state\n  refresh: 1s\n  fast_path: {fast_path}\n\
             sites:\n  - name: shop\n    proxy: {{ hosts: [shop.test], origin: \"{}\", enforce: true }}\n",
            free_port(),
            origin.addr
        ),
    )
    .unwrap();
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let child = Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
        .arg("--config")
        .arg(&cfg)
        .env("ROBOTSGATE_LOG", "info")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut proc = Proc(child);
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    assert!(wait_listening(addr, 20));
    // From the store, not passed through: only then are requests judged.
    let served = || {
        request(addr, "GET", "shop.test", "/robots.txt", &[])
            .is_some_and(|r| r.text() == ROBOTS && r.header("X-Robots-Source") == Some("origin"))
    };
    assert!(eventually(20, served));
    let r = request(addr, "GET", "shop.test", "/private/x", &[("User-Agent", "Googlebot/2.1")]).unwrap();
    assert_eq!(r.status, 403);
    assert!(eventually(10, || std::fs::read_to_string(&out).unwrap_or_default().contains("private")));
    proc.kill();

    // The crawler log: one object a line, the stable fields.
    let stdout = std::fs::read_to_string(&out).unwrap();
    let line: serde_json::Value =
        serde_json::from_str(stdout.lines().find(|l| l.contains("/private/x")).unwrap()).unwrap();
    for key in ["timestamp", "site", "crawler", "method", "url", "identity", "verdict", "line", "status", "revision"] {
        assert!(line.get(key).is_some(), "{key} in {line}");
    }
    assert_eq!(
        (line["site"].as_str(), line["crawler"].as_str(), line["verdict"].as_str()),
        (Some("shop"), Some("Googlebot"), Some("disallow"))
    );
    assert_eq!(line["status"], 403);
    assert!(line["revision"].as_str().is_some_and(|r| r.len() == 24), "{line}");
    // Diagnostics: every line a JSON object with level and message, fields top-level.
    let stderr = std::fs::read_to_string(&err).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(!lines.is_empty(), "no diagnostics at info");
    for l in &lines {
        assert!(l["level"].is_string() && l["timestamp"].is_string(), "{l}");
    }
}

#[test]
fn json_logs_on_the_fast_path() {
    json_logs(true);
}

#[test]
fn json_logs_on_the_pipeline() {
    json_logs(false);
}

#[test]
fn completions_and_man_pages() {
    for (shell, want) in
        [("bash", "robots-proxy"), ("zsh", "#compdef robots-proxy"), ("fish", "complete -c robots-proxy")]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
            .args(["completions", shell])
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want) && text.contains("verify"), "{shell}: {text}");
    }
    let dir = temp_dir("proxy-man");
    let out = Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
        .args(["man", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let main = std::fs::read_to_string(dir.join("robots-proxy.1")).unwrap();
    assert!(main.contains(".TH robots-proxy") && main.contains("\\-\\-config"), "{main}");
    let verify = std::fs::read_to_string(dir.join("robots-proxy-verify.1")).unwrap();
    assert!(verify.contains("\\-\\-user\\-agent"), "{verify}");
    // man(1) renders it.
    if let Ok(out) = Command::new("man").arg("-l").arg(dir.join("robots-proxy.1")).env("MANPAGER", "cat").output()
        && out.status.success()
    {
        assert!(String::from_utf8_lossy(&out.stdout).contains("robots-proxy"));
    }
}

/// deploy/Containerfile, as far as this machine can test it (no container
/// engine runs here): two stages, the build stage builds packages the
/// workspace has and installs the three commands, and the image runs them
/// as a user that is not root.
#[test]
fn the_containerfile_builds_what_exists_and_runs_as_a_user() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let file = std::fs::read_to_string(root.join("deploy/Containerfile")).unwrap();
    let froms: Vec<&str> = file.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime stage: {froms:?}");
    assert!(froms[0].ends_with(" AS build"), "{}", froms[0]);
    let build = file.lines().find(|l| l.contains("cargo build --release")).expect("a release build");
    let packages: Vec<&str> =
        build.split_whitespace().skip_while(|w| *w != "-p").filter(|w| *w != "-p").take_while(|w| *w != "\\").collect();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members: Vec<String> = workspace
        .lines()
        .find(|l| l.starts_with("members"))
        .unwrap()
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|m| std::fs::read_to_string(root.join(m).join("Cargo.toml")).unwrap())
        .filter_map(|t| {
            t.lines()
                .find(|l| l.starts_with("name = "))
                .map(|l| l.trim_start_matches("name = ").trim_matches('"').to_string())
        })
        .collect();
    for p in &packages {
        assert!(members.iter().any(|m| m == p), "-p {p} is not a workspace package: {members:?}");
    }
    // The gateway comes from its profile-guided build, installed into the
    // same directory as the others.
    let script = std::fs::read_to_string(root.join("scripts/build-pgo.sh")).unwrap_or_default();
    let by_pgo = file.contains("OUT=/out bash scripts/build-pgo.sh")
        && file.contains("-t /out")
        && script.contains("-p proxy --bin robots-proxy")
        && script.contains("install -D \"$final\" -t \"$OUT\"");
    for bin in ["robots-proxy", "robots-monitor", "robots"] {
        assert!(
            (bin == "robots-proxy" && by_pgo)
                || file.contains(&format!("target/release/{bin} "))
                || file.contains(&format!("target/release/{bin}\n"))
                || file.contains(&format!("target/release/{bin} -t")),
            "{bin} installed"
        );
    }
    let user = file.lines().rev().find(|l| l.starts_with("USER ")).expect("a USER line");
    let uid = user.trim_start_matches("USER ").trim();
    assert!(uid != "0" && uid != "root", "runs as {uid}");
    assert!(file.contains(&format!("--uid {uid}")), "the user {uid} is created");
}

/// A config file that is not there is named once, with its cause once.
#[test]
fn a_missing_config_is_said_once() {
    let missing = "/nonexistent/robotsgate/config.yaml";
    let out = Command::new(env!("CARGO_BIN_EXE_robots-proxy")).args(["--config", missing, "--check"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(missing), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

/// Every path in the config is read from the config file's folder, never
/// the working directory, by `--check` and by a start alike: a relative
/// `admin_token_file` opens `/status` for a gateway started elsewhere, and
/// `--check` refuses one that cannot be read, naming it, as a start would.
#[test]
fn check_and_start_read_the_token_file_from_the_config_folder() {
    let dir = temp_dir("token-file-paths");
    let elsewhere = temp_dir("token-file-cwd");
    std::fs::write(dir.join("admin-token"), "file-token\n").unwrap();
    let (listen, admin) = (free_port(), free_port());
    let config = |token_file: &str| {
        format!(
            "proxy:\n  listen: [\"127.0.0.1:{listen}\"]\n  admin: 127.0.0.1:{admin}\n  admin_token_file: {token_file}\n  state_dir: state\n\
             sites:\n  - name: shop\n    proxy: {{ hosts: [shop.test], origin: \"127.0.0.1:1\" }}\n"
        )
    };
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, config("admin-token")).unwrap();
    let check = |cfg: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
            .arg("--config")
            .arg(cfg)
            .arg("--check")
            .current_dir(&elsewhere)
            .env_remove("ROBOTSGATE_ADMIN_TOKEN")
            .output()
            .unwrap()
    };
    let out = check(&cfg);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("admin token: read"));

    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, config("no-such-token")).unwrap();
    let out = check(&bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("proxy.admin_token_file") && err.contains(&dir.join("no-such-token").display().to_string()),
        "{err}"
    );

    // Started from elsewhere, the gateway reads the same file.
    let child = Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
        .arg("--config")
        .arg(&cfg)
        .current_dir(&elsewhere)
        .env_remove("ROBOTSGATE_ADMIN_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _proc = Proc(child);
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    assert!(wait_listening(admin, 20));
    let status = |token: &str| {
        let auth = format!("Bearer {token}");
        request(admin, "GET", "localhost", "/status", &[("Authorization", &auth)]).map(|r| r.status)
    };
    assert_eq!(status("file-token"), Some(200));
    assert_eq!(status("wrong"), Some(401));
}
