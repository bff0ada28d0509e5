//! Starting the real `robots-proxy` binary, for the integration tests.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

use testkit::{Proc, wait_listening};

/// Runs `robots-proxy --config cfg` and waits until each of `addrs`
/// accepts connections. Its stderr is shown with `TEST_LOG` set.
pub fn spawn_proxy(cfg: &Path, addrs: &[SocketAddr]) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_robots-proxy"))
        .arg("--config")
        .arg(cfg)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(if std::env::var_os("TEST_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
        .spawn()
        .expect("start robots-proxy");
    let proc = Proc(child);
    assert!(addrs.iter().all(|a| wait_listening(*a, 20)), "robots-proxy did not start");
    proc
}
