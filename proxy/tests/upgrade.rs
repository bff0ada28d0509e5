//! Upgrades and stops as operators do them, under wrk's load: the binary
//! replaced with `robots-proxy upgrade --from PID` (what the systemd unit's
//! `ExecReload=` runs) with no failed request, on both request paths; the
//! service manager told who the main process is; a SIGQUIT with no new
//! process waiting ignored rather than an outage; and a SIGTERM that lets a
//! request in flight finish.

use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::*;

mod support;
use support::edge::ROBOTS;

const TOKEN: &str = "upgrade-token";

/// A gateway process not started by this test (the new one an upgrade
/// starts), stopped with SIGTERM when dropped.
struct Pid(u32);

impl Drop for Pid {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.to_string()]).status();
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// The messages a gateway sent to the service manager's socket.
fn notices(socket: &UnixDatagram) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = socket.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

/// The pid a `READY=1` notice names as the main process.
fn main_pid(notices: &[String]) -> Vec<u32> {
    notices
        .iter()
        .filter(|n| n.contains("READY=1"))
        .filter_map(|n| n.lines().find_map(|l| l.strip_prefix("MAINPID=")).and_then(|p| p.parse().ok()))
        .collect()
}

/// Runs wrk against `addr` for `secs`; returns its report.
fn wrk(addr: SocketAddr, secs: u64, path: &str) -> std::thread::JoinHandle<String> {
    let url = format!("http://{addr}{path}");
    std::thread::spawn(move || {
        let out = Command::new("wrk")
            .args(["-t2", "-c8", &format!("-d{secs}s"), "--timeout", "10s", "-H", "Host: shop.test", &url])
            .output()
            .expect("wrk");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    })
}

/// What wrk counted: (requests, socket errors, non-2xx/3xx answers).
fn counted(report: &str) -> (u64, u64, u64) {
    let requests = report
        .lines()
        .find_map(|l| l.trim().split_once(" requests in ").and_then(|(n, _)| n.trim().parse().ok()))
        .unwrap_or(0);
    let errors = report
        .lines()
        .find(|l| l.contains("Socket errors:"))
        .map(|l| l.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u64>().ok()).sum())
        .unwrap_or(0);
    let non_2xx = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|n| n.trim().parse().ok());
    (requests, errors, non_2xx.unwrap_or(0))
}

fn config(dir: &Path, origin: &Origin, fast: bool) -> (PathBuf, SocketAddr, SocketAddr) {
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  state_dir: state
  refresh: 1s
  grace_period: 3s
  threads: 2
  fast_path: {fast}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: http://{}
",
        origin.addr
    );
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, yaml).unwrap();
    (cfg, format!("127.0.0.1:{listen}").parse().unwrap(), format!("127.0.0.1:{admin}").parse().unwrap())
}

fn upgrade_under_load(fast: bool) {
    if Command::new("wrk").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "wrk is required under CI (scripts/services.sh installs it)");
        eprintln!("wrk not installed; skipping");
        return;
    }
    let dir = temp_dir(&format!("upgrade-{}", if fast { "fast" } else { "pipeline" }));
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    origin.set("/page", Reply::ok("a page\n"));
    origin.set(
        "/slow",
        Reply::Send { status: 200, headers: vec![], body: b"slow\n".to_vec(), delay: Duration::from_secs(2) },
    );
    let (cfg, addr, admin) = config(&dir, &origin, fast);
    let notify_path = dir.join("notify.sock");
    let manager = UnixDatagram::bind(&notify_path).unwrap();
    manager.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let log = dir.join("old.log");
    let mut old = Command::new(support::proxy_bin())
        .arg("--config")
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &notify_path)
        .env("ROBOTSGATE_LOG", "info")
        .env("ROBOTSGATE_ADMIN_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let old_pid = old.id();
    assert!(wait_listening(addr, 20) && wait_listening(admin, 20), "robots-proxy did not start");
    let mut told = Vec::new();
    assert!(
        eventually(10, || {
            told.extend(notices(&manager));
            main_pid(&told) == [old_pid]
        }),
        "fast {fast}: the service manager heard {told:?}"
    );

    // A SIGQUIT with no new process waiting: ignored, never an outage.
    assert!(Command::new("kill").args(["-QUIT", &old_pid.to_string()]).status().unwrap().success());
    std::thread::sleep(Duration::from_secs(7));
    assert!(alive(old_pid), "fast {fast}: a lone SIGQUIT stopped the gateway");
    assert_eq!(request(addr, "GET", "shop.test", "/page", &[]).map(|r| r.status), Some(200), "fast {fast}");
    assert!(std::fs::read_to_string(&log).unwrap().contains("ignored, serving on"), "fast {fast}");

    // The upgrade, under load: nothing refused, nothing failed.
    let load = wrk(addr, 8, "/page");
    std::thread::sleep(Duration::from_secs(2));
    // Files, not pipes: the new process inherits them and runs on.
    let (said_path, new_log) = (dir.join("upgrade.out"), dir.join("new.log"));
    // Run by hand from a shell that has neither the token nor the old
    // process's log: the new process gets both all the same.
    let status = Command::new(support::proxy_bin())
        .args(["--config", cfg.to_str().unwrap(), "upgrade", "--from", &old_pid.to_string()])
        .env("NOTIFY_SOCKET", &notify_path)
        .env_remove("ROBOTSGATE_ADMIN_TOKEN")
        .env_remove("ROBOTSGATE_LOG")
        .stdout(std::fs::File::create(&said_path).unwrap())
        .stderr(std::fs::File::create(&new_log).unwrap())
        .status()
        .unwrap();
    let said = std::fs::read_to_string(&said_path).unwrap();
    assert_eq!(status.code(), Some(0), "fast {fast}: {said}{}", std::fs::read_to_string(&new_log).unwrap());
    let new_pid: u32 = said.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("the new pid");
    let new = Pid(new_pid);
    assert_ne!(new.0, old_pid);
    let report = load.join().unwrap();
    let (requests, errors, non_2xx) = counted(&report);
    assert!(requests > 100, "fast {fast}: {report}");
    assert_eq!((errors, non_2xx), (0, 0), "fast {fast}: failed requests during the upgrade: {report}");
    // The old one finishes and exits 0; the new one is the main process.
    let exited = (0..200).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        old.try_wait().ok().flatten()
    });
    assert_eq!(exited.and_then(|s| s.code()), Some(0), "fast {fast}: the old process");
    assert!(
        eventually(10, || {
            told.extend(notices(&manager));
            main_pid(&told).last() == Some(&new.0)
        }),
        "fast {fast}: {told:?}"
    );
    assert_eq!(request(addr, "GET", "shop.test", "/page", &[]).map(|r| r.status), Some(200), "fast {fast}");

    // The admin token and the logs survived the upgrade: /status answers
    // with the old token, and the new process logs where the old one did
    // (its own `info` level included), not to the shell that ran upgrade.
    let bearer = format!("Bearer {TOKEN}");
    let answer = request(admin, "GET", "localhost", "/status", &[("Authorization", &bearer)]).expect("status");
    assert_eq!(answer.status, 200, "fast {fast}: {}", answer.text());
    let before = std::fs::read_to_string(&log).unwrap().matches("refresh requested").count();
    let refreshed = request(admin, "POST", "localhost", "/refresh", &[("Authorization", &bearer)]).expect("refresh");
    assert_eq!(refreshed.status, 202, "fast {fast}");
    assert!(
        eventually(10, || std::fs::read_to_string(&log).unwrap().matches("refresh requested").count() > before),
        "fast {fast}: the new process's log did not reach the old one's file"
    );
    assert!(!std::fs::read_to_string(&new_log).unwrap().contains("refresh requested"), "fast {fast}");

    // A stop under load: the request in flight is answered.
    let slow =
        std::thread::spawn(move || request(addr, "GET", "shop.test", "/slow", &[]).map(|r| (r.status, r.text())));
    std::thread::sleep(Duration::from_millis(500));
    assert!(Command::new("kill").args(["-TERM", &new.0.to_string()]).status().unwrap().success());
    let answered = slow.join().unwrap();
    assert_eq!(answered.map(|(s, t)| (s, t.contains("slow"))), Some((200, true)), "fast {fast}");
    assert!(eventually(10, || !alive(new.0)), "fast {fast}: the new process did not stop");
}

#[test]
fn upgrade_under_load_on_the_fast_path() {
    upgrade_under_load(true);
}

#[test]
fn upgrade_under_load_on_the_pipeline() {
    upgrade_under_load(false);
}

/// Issue #64: on a host with two gateways, `upgrade` with no `--from`
/// replaces the one serving its config (by the pid file in its
/// `state_dir`), never the other; the new process then records itself, so
/// a second upgrade replaces it in turn. With no gateway running for a
/// config, `upgrade` says so and starts nothing.
#[test]
fn upgrade_finds_the_gateway_of_its_config() {
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    origin.set("/page", Reply::ok("a page\n"));
    let (dir_a, dir_b) = (temp_dir("upgrade-find-a"), temp_dir("upgrade-find-b"));
    let (cfg_a, addr_a, _) = config(&dir_a, &origin, true);
    let (cfg_b, addr_b, _) = config(&dir_b, &origin, false);
    let start = |cfg: &Path| {
        Command::new(support::proxy_bin())
            .arg("--config")
            .arg(cfg)
            .env("ROBOTSGATE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (start(&cfg_a), start(&cfg_b));
    assert!(wait_listening(addr_a, 20) && wait_listening(addr_b, 20));
    let pid_file = dir_a.join("state/robots-proxy.pid");
    let recorded = |path: &Path| std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u32>().ok());
    assert!(eventually(10, || recorded(&pid_file) == Some(a.id())), "the gateway records its pid");
    let upgrade = |cfg: &Path| {
        let out = Command::new(support::proxy_bin())
            .args(["--config", cfg.to_str().unwrap(), "upgrade", "--logs-here"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, said) = upgrade(&cfg_a);
    assert_eq!(code, Some(0), "{said}");
    let new_a: u32 = said.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("the new pid");
    let exited = (0..100).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        a.try_wait().ok().flatten()
    });
    assert!(exited.is_some(), "A's old process handed over and left");
    assert_eq!(b.try_wait().unwrap(), None, "B was not touched");
    assert!(eventually(10, || recorded(&pid_file) == Some(new_a)), "the new process records itself");
    assert_eq!(request(addr_a, "GET", "shop.test", "/page", &[]).map(|r| r.status), Some(200));
    // Again: the new one is found and replaced.
    let (code, said) = upgrade(&cfg_a);
    assert_eq!(code, Some(0), "{said}");
    assert!(eventually(10, || !alive(new_a)), "the second upgrade replaced the first's process");
    let newest = recorded(&pid_file).unwrap();
    let _ = Command::new("kill").args(["-TERM", &newest.to_string()]).status();
    assert!(eventually(10, || !alive(newest)));
    // Nothing serves A's config now: refused, nothing started.
    let (code, said) = upgrade(&cfg_a);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("not running"), "{said}");
    let _ = b.kill();
    let _ = b.wait();
}
