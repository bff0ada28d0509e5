//! A real DNS server on loopback for the identity tests: dnsmasq, installed
//! by `scripts/setup.sh`, serving the PTR and A records a test gives.

use std::process::{Command, Stdio};

use testkit::{Proc, free_port, wait_listening};

/// dnsmasq on a free port with `records` (its own flags), or `None` where
/// it is not installed; under CI it must be (`scripts/setup.sh`).
pub fn dnsmasq(records: &[&str]) -> Option<(Proc, u16)> {
    let port = free_port();
    let spawned = Command::new("dnsmasq")
        .args(["--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--no-poll"])
        .args(["--listen-address=127.0.0.1", "--bind-interfaces", "--pid-file", "--user=root"])
        .arg(format!("--port={port}"))
        .args(records)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(child) => {
            let p = Proc(child);
            assert!(wait_listening(std::net::SocketAddr::from(([127, 0, 0, 1], port)), 10), "dnsmasq did not start");
            Some((p, port))
        }
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "dnsmasq is required under CI: {e}");
            eprintln!("dnsmasq not installed ({e}); skipping");
            None
        }
    }
}
