//! Real parts for the monitor's integration tests: an HTTP origin on
//! 127.0.0.1 whose answers tests change, the aiosmtpd SMTP server writing
//! a maildir, a fresh database (SQLite file or PostgreSQL database), and
//! the real `robots-monitor` binary.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::Row;

/// How the origin answers one path.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A normal response.
    Send { status: u16, headers: Vec<(String, String)>, body: Vec<u8>, delay: Duration },
    /// Accept, read the request, never answer.
    Hang,
    /// Accept, read the request, close without a response.
    Reset,
}

impl Reply {
    pub fn ok(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Send { status: 200, headers: vec![], body: body.into(), delay: Duration::ZERO }
    }
    pub fn status(status: u16) -> Reply {
        Reply::Send { status, headers: vec![], body: format!("status {status}").into_bytes(), delay: Duration::ZERO }
    }
    pub fn redirect(to: &str) -> Reply {
        Reply::Send { status: 301, headers: vec![("Location".into(), to.into())], body: vec![], delay: Duration::ZERO }
    }
}

/// A programmable HTTP/1.1 origin on loopback.
#[derive(Clone, Debug)]
pub struct Origin {
    pub addr: SocketAddr,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    pub hits: Arc<AtomicUsize>,
}

impl Origin {
    pub fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind origin");
        let addr = listener.local_addr().expect("origin addr");
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let hits = Arc::new(AtomicUsize::new(0));
        let (r, h) = (Arc::clone(&routes), Arc::clone(&hits));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, h) = (Arc::clone(&r), Arc::clone(&h));
                std::thread::spawn(move || serve(stream, &r, &h));
            }
        });
        Origin { addr, routes, hits }
    }

    pub fn set(&self, path: &str, reply: Reply) {
        self.routes.lock().unwrap().insert(path.to_string(), reply);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn serve(stream: TcpStream, routes: &Mutex<HashMap<String, Reply>>, hits: &AtomicUsize) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let reply = routes.lock().unwrap().get(&path).cloned().unwrap_or_else(|| Reply::status(404));
    let mut stream = stream;
    match reply {
        Reply::Hang => std::thread::sleep(Duration::from_secs(120)),
        Reply::Reset => {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        Reply::Send { status, headers, body, delay } => {
            std::thread::sleep(delay);
            let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    }
}

/// A free port on loopback (the listener is dropped; a small race is fine
/// for tests that start their server right away).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

/// A real SMTP server (Debian's python3-aiosmtpd) writing a maildir.
#[derive(Debug)]
pub struct Smtp {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
}

impl Smtp {
    pub fn start(dir: &Path) -> Smtp {
        Smtp::start_on(free_port(), dir)
    }

    pub fn start_on(port: u16, dir: &Path) -> Smtp {
        for sub in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(dir.join(sub)).expect("maildir");
        }
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd (apt install python3-aiosmtpd; scripts/services.sh does)");
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Smtp { port, dir: dir.to_path_buf(), child: Some(child) }
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Every message received, as text, oldest first.
    pub fn mails(&self) -> Vec<String> {
        let mut files: Vec<(std::time::SystemTime, String)> = ["new", "cur"]
            .iter()
            .filter_map(|d| std::fs::read_dir(self.dir.join(d)).ok())
            .flatten()
            .flatten()
            .filter_map(|e| {
                let modified = e.metadata().ok()?.modified().ok()?;
                Some((modified, std::fs::read_to_string(e.path()).ok()?))
            })
            .collect();
        files.sort_by_key(|f| f.0);
        files.into_iter().map(|f| f.1).collect()
    }

    /// Waits until at least `n` mails arrived, then returns them all.
    pub fn wait_for(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mails = self.mails();
            if mails.len() >= n || Instant::now() > deadline {
                return mails;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// A fresh temporary directory.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "robots-monitor-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The `database:` value for a fresh database of kind `db`: a SQLite file
/// in `dir`, or a new PostgreSQL database on the server scripts/services.sh
/// started. On CI a missing server fails the test instead of skipping it.
pub fn fresh_database(db: Db, dir: &Path) -> Option<String> {
    match db {
        Db::Sqlite => Some(dir.join("history.db").display().to_string()),
        Db::Postgres => {
            let Ok(base) = std::env::var("ROBOTSGATE_TEST_POSTGRES_URL") else {
                assert!(std::env::var_os("CI").is_none(), "CI must run PostgreSQL tests: run scripts/services.sh");
                eprintln!("ROBOTSGATE_TEST_POSTGRES_URL not set; skipping the PostgreSQL run");
                return None;
            };
            let name =
                format!("t{}_{}", std::process::id(), dir.file_name().unwrap().to_string_lossy().replace('-', "_"));
            let name = name.chars().rev().take(40).collect::<String>().chars().rev().collect::<String>();
            let name = format!("rg_{}", name.trim_start_matches(|c: char| !c.is_ascii_alphabetic()));
            block_on(async {
                sqlx::any::install_default_drivers();
                let pool = sqlx::AnyPool::connect(&base).await.expect("connect to test PostgreSQL");
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&pool)
                    .await
                    .expect("create test database");
            });
            let (prefix, _) = base.rsplit_once('/').expect("database URL has a path");
            Some(format!("{prefix}/{name}"))
        }
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
}

/// One query's single integer, straight from the database; -1 while a
/// SQLite file does not exist yet (the daemon has not started).
pub fn scalar(database: &str, sql: &str) -> i64 {
    if !database.starts_with("postgres") && !Path::new(database).exists() {
        return -1;
    }
    let url = if database.starts_with("postgres") { database.to_string() } else { format!("sqlite://{database}") };
    block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch_one(&pool).await.expect(sql);
        row.try_get::<i64, _>(0).expect("integer")
    })
}

/// Writes `config.yaml` in `dir`.
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
pub fn daemon(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_robots-monitor"))
        .arg("--config")
        .arg(config)
        .arg("run")
        .env("ROBOTSGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(if std::env::var_os("TEST_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
        .spawn()
        .expect("start robots-monitor run")
}

/// Sends SIGTERM and waits; returns the exit code.
pub fn terminate(child: &mut Child) -> Option<i32> {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `cond` until it holds or `secs` pass.
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}
