//! Every command of the three binaries, its standard output a pipe whose
//! reader has gone (`robots lint F --output sarif | head -n 1`): none
//! panics or complains; each ends as a Unix tool ends on SIGPIPE (141), or
//! with its own status when it finished writing first.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::*;

mod support;

/// Runs `bin args` with stdin `input` and a closed stdout; returns its exit
/// status and stderr.
fn closed(bin: &Path, args: &[&str], input: &[u8]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = Command::new(bin)
        .args(args)
        .env("ROBOTSGATE_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input);
    }
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            return (status.code(), err);
        }
        assert!(Instant::now() < until, "{bin:?} {args:?} never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check(bin: &Path, args: &[&str], input: &[u8], allowed: &[i32]) {
    let (code, err) = closed(bin, args, input);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{bin:?} {args:?}: {err}");
    assert!(code.is_some_and(|c| c == 141 || allowed.contains(&c)), "{bin:?} {args:?}: exit {code:?}: {err}");
}

#[test]
fn no_command_panics_on_a_closed_stdout() {
    let dir = temp_dir("closed-stdout");
    // A file large enough that no output fits the pipe in one write.
    let mut big = String::from("User-agent: *\n");
    for i in 0..20_000 {
        big.push_str(&format!("Disallow: /section-{i}/\nDisallow: /section-{i}/\n"));
    }
    let robots = dir.join("robots.txt");
    std::fs::write(&robots, &big).unwrap();
    let other = dir.join("other.txt");
    std::fs::write(&other, "User-agent: *\nDisallow: /\n").unwrap();
    let urls: String = (0..20_000).map(|i| format!("/section-{i}/x\n")).collect();
    let r = robots.to_str().unwrap();
    let o = other.to_str().unwrap();

    let bin = Path::new(env!("CARGO_BIN_EXE_robots-proxy")).with_file_name("robots");
    if bin.exists() {
        let batch: String = (0..5_000)
            .map(|i| format!("{{\"robots\":\"User-agent: *\\nDisallow: /\\n\",\"agent\":\"a\",\"url\":\"/{i}\"}}\n"))
            .collect();
        for (args, input) in [
            (vec!["check", r, "Googlebot", "/section-1/x"], &b""[..]),
            (vec!["check", r, "--agent", "Googlebot", "--agent", "bingbot", "--urls", "-"], urls.as_bytes()),
            (vec!["batch"], batch.as_bytes()),
            (vec!["explain", r, "Googlebot", "/section-1/x"], b""),
            (vec!["lint", r], b""),
            (vec!["lint", r, "--output", "json"], b""),
            (vec!["lint", r, "--output", "sarif"], b""),
            (vec!["diff", r, o], b""),
            (vec!["completions", "bash"], b""),
            (vec!["man"], b""),
            (vec!["--help"], b""),
        ] {
            check(&bin, &args, input, &[0, 1]);
        }
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI builds the workspace, robots included");
    }

    let proxy = Path::new(env!("CARGO_BIN_EXE_robots-proxy"));
    let cfg = dir.join("config.yaml");
    let db = dir.join("h.db");
    let log = dir.join("access.log");
    let line = "66.249.66.1 - - [25/Nov/2026:10:00:00 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"Googlebot/2.1\"\n";
    std::fs::write(&log, line.repeat(2_000)).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "database: {}\nagents: [Googlebot]\nproxy:\n  listen: [\"127.0.0.1:1\"]\n  state_dir: {}\nsites:\n  - name: shop\n    file: {o}\n    url_sets: {{ main: [/, /a] }}\n    proxy:\n      hosts: [shop.test]\n      origin: 127.0.0.1:1\n",
            db.display(),
            dir.join("state").display()
        ),
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    for args in [
        vec!["--config", c, "--check"],
        vec!["verify", "66.249.66.1", "Googlebot/2.1", "--offline"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["--help"],
    ] {
        check(proxy, &args, b"", &[0, 2, 3, 4]);
    }

    let Some(monitor) = support::monitor_bin() else { return };
    let l = log.to_str().unwrap();
    for args in [
        vec!["--config", c, "check-config"],
        vec!["--config", c, "once"],
        vec!["--config", c, "history", "shop"],
        vec!["--config", c, "show", "shop"],
        vec!["--config", c, "diff", "shop"],
        vec!["--config", c, "fetches", "shop"],
        vec!["--config", c, "test", "shop"],
        vec!["--config", c, "ingest", "--site", "shop", l],
        vec!["--config", c, "compliance", "shop"],
        vec!["--config", c, "compliance", "shop", "--output", "json"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["--help"],
    ] {
        check(&monitor, &args, b"", &[0, 1, 2]);
    }
}
