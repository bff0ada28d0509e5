//! The monitor's test helpers on top of `testkit`: databases (a SQLite file
//! or a fresh PostgreSQL database) and the real `robots-monitor` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use testkit::*;

/// Writes `yaml` as `config.yaml` in `dir`.
pub fn write_config(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(&path, yaml).expect("write config");
    path
}

/// Runs `robots-monitor --config CONFIG ARGS…` to completion.
pub fn monitor(config: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env("ROBOTSGATE_LOG", "warn")
        .output()
        .expect("run robots-monitor");
    if std::env::var_os("TEST_LOG").is_some() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    out
}

/// Starts the daemon (`run`).
pub fn daemon(config: &Path) -> Proc {
    Proc(
        Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
            .arg("--config")
            .arg(config)
            .arg("run")
            .env("ROBOTSGATE_LOG", "info")
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("TEST_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
            .spawn()
            .expect("start robots-monitor run"),
    )
}
