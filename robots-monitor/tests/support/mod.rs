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

/// Starts `robots-monitor --config CONFIG ARGS…` without waiting, output
/// captured.
pub fn monitor_spawn(config: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env("ROBOTSGATE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run robots-monitor")
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

/// A webhook receiver on loopback: records each request's headers and body
/// and answers 200. `stop` closes the port (a receiver that is down);
/// `start_on` brings one back on the same port.
pub struct Receiver {
    pub port: u16,
    got: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Receiver {
    pub fn start_on(port: u16) -> Receiver {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("receiver port");
        listener.set_nonblocking(true).expect("nonblocking");
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (g, s) = (got.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                };
                stream.set_nonblocking(false).ok();
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).ok();
                g.lock().unwrap().push((head, String::from_utf8_lossy(&body).into_owned()));
                let mut stream = stream;
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        Receiver { port, got, stop }
    }

    /// Every request so far: (head, body).
    pub fn requests(&self) -> Vec<(String, String)> {
        self.got.lock().unwrap().clone()
    }

    /// The header `name` of a request head.
    pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Let the accept loop see the flag and drop the listener.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `robots-monitor --config CONFIG serve --listen ADDR` (with the
/// admin token given, if any) and waits until it listens.
pub fn serve(config: &Path, addr: std::net::SocketAddr, admin_token: Option<&str>) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_robots-monitor"));
    cmd.arg("--config").arg(config).args(["serve", "--listen", &addr.to_string()]);
    if let Some(token) = admin_token {
        cmd.env("ROBOTSGATE_ADMIN_TOKEN", token);
    }
    let proc = Proc(cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("robots-monitor serve"));
    assert!(wait_listening(addr, 20), "console did not start");
    proc
}

/// nginx with `servers` (server blocks) and the temp paths a non-root
/// nginx needs; `None` where nginx is not installed, outside CI.
pub fn nginx_servers(dir: &Path, servers: &str) -> Option<Proc> {
    if std::process::Command::new("nginx").arg("-v").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "nginx is required under CI (scripts/services.sh installs it)");
        eprintln!("nginx not installed; skipping");
        return None;
    }
    let d = dir.display();
    let conf = dir.join("nginx.conf");
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    std::fs::write(
        &conf,
        format!(
            "daemon off;\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\nevents {{}}\nhttp {{\n\
             access_log off;\nclient_body_temp_path {d}/tmp;\nproxy_temp_path {d}/tmp;\nfastcgi_temp_path {d}/tmp;\n\
             uwsgi_temp_path {d}/tmp;\nscgi_temp_path {d}/tmp;\ndefault_type text/plain;\nabsolute_redirect off;\n{servers}\n}}\n"
        ),
    )
    .unwrap();
    let child = std::process::Command::new("nginx")
        .args(["-c", &conf.display().to_string(), "-p", &d.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("nginx");
    Some(Proc(child))
}
