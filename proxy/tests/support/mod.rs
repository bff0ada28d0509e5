//! Starting the real `robots-proxy` binary, for the integration tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use testkit::{Proc, free_port, temp_dir, wait_listening};

#[allow(dead_code)] // Not every suite that shares this module needs it.
pub mod dns;
pub mod edge;

/// The gateway the suites run: this build's, or the one
/// `ROBOTSGATE_TEST_PROXY_BIN` names (a release or profile-guided build, to
/// run the suites against what ships: `scripts/build-pgo.sh`).
pub fn proxy_bin() -> PathBuf {
    std::env::var_os("ROBOTSGATE_TEST_PROXY_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_robots-proxy")), PathBuf::from)
}

/// Runs `robots-proxy --config cfg` and waits until each of `addrs`
/// accepts connections. Its stderr is shown with `TEST_LOG` set.
pub fn spawn_proxy(cfg: &Path, addrs: &[SocketAddr]) -> Proc {
    let child = Command::new(proxy_bin())
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

/// Starts a gateway with one enforcing site, `shop.test`, and one that
/// does not enforce, `open.test`, both in front of `origin`, on the own path or Pingora's pipeline alone; `timeouts`
/// holds the `proxy:` lines for its grace period and timeouts. Returns it
/// and its listening address.
#[allow(dead_code)] // Not every suite that shares this module needs it.
pub fn start_enforcing(name: &str, origin: SocketAddr, fast_path: bool, timeouts: &str) -> (Proc, SocketAddr) {
    let (proc, addr, _admin) = start_enforcing_admin(name, origin, fast_path, timeouts);
    (proc, addr)
}

/// [`start_enforcing`], with the admin listener's address (`/metrics`).
#[allow(dead_code)] // Not every suite that shares this module needs it.
pub fn start_enforcing_admin(
    name: &str,
    origin: SocketAddr,
    fast_path: bool,
    timeouts: &str,
) -> (Proc, SocketAddr, SocketAddr) {
    let dir = temp_dir(name);
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  state_dir: state
  refresh: 1s
{timeouts}  fast_path: {fast_path}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {origin}
      enforce: true
  - name: open
    proxy:
      hosts: [open.test]
      origin: {origin}
"
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().expect("address");
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().expect("address");
    (spawn_proxy(&cfg, &[addr, admin]), addr, admin)
}

/// `robots-monitor`, built beside this package's binary by `cargo test
/// --workspace` (the test command); `None` (a skip) when only this
/// package was built, outside CI.
#[allow(dead_code)] // Not every suite that shares this module needs it.
pub fn monitor_bin() -> Option<std::path::PathBuf> {
    let bin = Path::new(env!("CARGO_BIN_EXE_robots-proxy")).with_file_name("robots-monitor");
    if bin.exists() {
        return Some(bin);
    }
    assert!(std::env::var_os("CI").is_none(), "CI runs the whole workspace, so robots-monitor is built");
    eprintln!("robots-monitor not built (cargo test --workspace builds it); skipping");
    None
}
