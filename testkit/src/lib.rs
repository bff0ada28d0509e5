//! Real parts for the daemons' integration tests: an HTTP origin on
//! 127.0.0.1 whose answers tests change, the aiosmtpd SMTP server writing
//! a maildir, temporary directories, and a guard that never leaves a child
//! process behind. Used by `monitor` and `proxy` tests, nothing else.

#![allow(missing_docs, missing_debug_implementations)]

mod db;
mod echo;
pub use db::*;
pub use echo::Echo;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the origin answers one path.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A normal response.
    Send { status: u16, headers: Vec<(String, String)>, body: Vec<u8>, delay: Duration },
    /// A 200 in chunked encoding: each chunk is sent and flushed, then the
    /// origin pauses before the next, as a streaming application does.
    Stream { chunks: Vec<Vec<u8>>, pause: Duration },
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
    // The exact target first, then the path without its query.
    let reply = {
        let routes = routes.lock().unwrap();
        let bare = path.split('?').next().unwrap_or("/");
        routes.get(&path).or_else(|| routes.get(bare)).cloned().unwrap_or_else(|| Reply::status(404))
    };
    let mut stream = stream;
    match reply {
        Reply::Hang => std::thread::sleep(Duration::from_secs(120)),
        Reply::Reset => {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        Reply::Stream { chunks, pause } => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
            for (i, chunk) in chunks.iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(pause);
                }
                let _ = stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes());
                let _ = stream.write_all(chunk);
                let _ = stream.write_all(b"\r\n");
                let _ = stream.flush();
            }
            let _ = stream.write_all(b"0\r\n\r\n");
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

/// A free port on loopback for a server a test starts next (a gateway's
/// listener, its admin port).
///
/// Why not the kernel's pick (`bind :0`): the port is free only until the
/// listener is dropped, and every test server that binds `:0` meanwhile
/// (origins, feeds, SMTP) draws from the same ephemeral range, so one of
/// them could take the port before the gateway does, and then answer in
/// its place. So the port comes from below the ephemeral range, where no
/// `:0` bind ever lands; it is checked free by binding it, and handed out
/// once per test process.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let (low, high) = ports_below_ephemeral();
    // Start where this process's id points, so that test processes run
    // one after another do not walk the same ports (a port a finished
    // test's server held may still be in TIME_WAIT).
    let span = u32::from(high - low);
    let mut step = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        step = (step + 7_919) % span;
        let port = low + step as u16;
        if given.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port between {low} and {high}");
}

/// Ports no `bind :0` is given: from 10,000 up to the start of the
/// kernel's ephemeral range (32,768 unless `ip_local_port_range` says
/// otherwise).
fn ports_below_ephemeral() -> (u16, u16) {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse::<u16>().ok()))
        .unwrap_or(32_768);
    if start > 12_000 { (10_000, start) } else { (start.saturating_sub(2_000).max(1_024), start) }
}

/// A private CA and a server certificate it signed, as PEM files.
#[derive(Clone, Debug)]
pub struct TestCerts {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Makes, with the `openssl` command, a CA and a server certificate for
/// the subject alternative name `san` (`DNS:shop.test`, `IP:127.0.0.1`),
/// valid for a day, in `dir`.
pub fn test_certs(dir: &Path, san: &str) -> TestCerts {
    let openssl = |args: &[&str]| {
        let ok = Command::new("openssl").args(args).current_dir(dir).stderr(Stdio::null()).status().expect("openssl");
        assert!(ok.success(), "openssl {args:?}");
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=test-server",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
    ]);
    std::fs::write(dir.join("ext.cnf"), format!("subjectAltName={san}\n")).expect("ext.cnf");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        "srv.pem",
    ]);
    TestCerts { ca: dir.join("ca.pem"), cert: dir.join("srv.pem"), key: dir.join("srv.key") }
}

/// How a test SMTP server is secured.
#[derive(Clone, Debug)]
pub enum SmtpSecurity {
    Plain,
    /// STARTTLS offered and required before mail is accepted.
    Starttls(TestCerts),
    /// TLS from the first byte (SMTPS).
    Tls(TestCerts),
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
        Smtp::start_secured(port, dir, &SmtpSecurity::Plain)
    }

    pub fn start_secured(port: u16, dir: &Path, security: &SmtpSecurity) -> Smtp {
        for sub in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(dir.join(sub)).expect("maildir");
        }
        let mut command = Command::new("/usr/bin/python3");
        command.args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")]);
        match security {
            SmtpSecurity::Plain => {}
            SmtpSecurity::Starttls(c) => {
                command.arg("--tlscert").arg(&c.cert).arg("--tlskey").arg(&c.key);
            }
            SmtpSecurity::Tls(c) => {
                command.arg("--smtpscert").arg(&c.cert).arg("--smtpskey").arg(&c.key);
            }
        }
        let child = command
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd (apt install python3-aiosmtpd; scripts/services.sh does)");
        Smtp::started(port, dir, child)
    }

    /// `child`, once it listens on `port`.
    fn started(port: u16, dir: &Path, child: Child) -> Smtp {
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Smtp { port, dir: dir.to_path_buf(), child: Some(child) }
    }

    /// A real aiosmtpd on `port` that refuses every recipient with
    /// `reply` (say `550 5.1.1 no such mailbox`), and keeps nothing.
    pub fn start_refusing(port: u16, dir: &Path, reply: &str) -> Smtp {
        std::fs::create_dir_all(dir).expect("handler dir");
        std::fs::write(
            dir.join("refusing.py"),
            format!(
                "class Refusing:\n    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):\n        return {reply:?}\n"
            ),
        )
        .expect("handler");
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "refusing.Refusing"])
            .env("PYTHONPATH", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd");
        Smtp::started(port, dir, child)
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

/// A running child process; killed when dropped, so a failing test never
/// leaves one behind.
#[derive(Debug)]
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// Sends SIGTERM and waits; returns the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.0.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.0.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no chance to clean up.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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

/// A response read by [`request`].
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request over a fresh connection (`Connection: close`), with
/// exactly the headers given. `None` if the connection fails or no
/// response comes within 30 s.
pub fn request(addr: SocketAddr, method: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> Option<Response> {
    request_from(None, addr, method, host, path, headers)
}

/// A connection to `addr` from the local address `source` (any of
/// 127.0.0.0/8 on loopback).
pub fn connect_from(source: std::net::IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    socket.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// [`request`] from the local address `source` (any of 127.0.0.0/8 on
/// loopback), so one test can stand for clients at several addresses.
pub fn request_from(
    source: Option<std::net::IpAddr>,
    addr: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Option<Response> {
    use std::io::Read;
    let mut stream = match source {
        None => TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?,
        Some(ip) => connect_from(ip, addr).ok()?,
    };
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Some(Response { status, headers, body })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else { return out };
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 || data.len() < eol + 2 + size {
            return out;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[(eol + 4 + size).min(data.len())..];
    }
}

/// Waits until something accepts connections on `addr`.
pub fn wait_listening(addr: SocketAddr, secs: u64) -> bool {
    eventually(secs, || TcpStream::connect(addr).is_ok())
}

/// nginx on a free port of 127.0.0.1 and [::1], answering every request
/// `200 ok` (but `/robots.txt` with an `X-Move` header: a 301), writing its
/// `combined` access log at `log`; `None` (a skip)
/// where nginx is not installed, outside CI.
pub fn nginx(dir: &Path, log: &Path) -> Option<(Proc, SocketAddr)> {
    nginx_with(dir, log, None)
}

/// [`nginx`], writing its log in `layout` (a `log_format` text) when given.
pub fn nginx_with(dir: &Path, log: &Path, layout: Option<&str>) -> Option<(Proc, SocketAddr)> {
    if Command::new("nginx").arg("-v").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "nginx is required under CI (scripts/services.sh installs it)");
        eprintln!("nginx not installed; skipping");
        return None;
    }
    let port = free_port();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "daemon off;\nmaster_process off;\npid {pid};\nerror_log {err} warn;\nevents {{ worker_connections 64; }}\n\
             http {{\n  {format}access_log {log} {name};\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n  fastcgi_temp_path {tmp};\n  uwsgi_temp_path {tmp};\n  scgi_temp_path {tmp};\n\
               server {{ listen 127.0.0.1:{port}; listen [::1]:{port}; server_name shop.test; location / {{ return 200 \"ok\\n\"; }}\n\
                 location = /robots.txt {{ if ($http_x_move) {{ return 301 https://www.shop.test/robots.txt; }} return 200 \"ok\\n\"; }} }}\n}}\n",
            pid = dir.join("nginx.pid").display(),
            err = dir.join("error.log").display(),
            log = log.display(),
            tmp = dir.display(),
            format = layout.map_or(String::new(), |l| format!("log_format custom '{l}';\n  ")),
            name = if layout.is_some() { "custom" } else { "combined" },
        ),
    )
    .expect("nginx config");
    let child = Command::new("nginx")
        .args(["-c", conf.to_str().expect("a UTF-8 path"), "-p", dir.to_str().expect("a UTF-8 path")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(wait_listening(addr, 10), "nginx did not start");
    Some((Proc(child), addr))
}

/// Apache (Debian's `apache2`) in the foreground on a free port of
/// 127.0.0.1, serving `dir/www`, answering `/robots.txt` with an `X-Move`
/// header with a 301, and writing two access logs as Debian configures
/// them: `vhost_combined` at `dir/other_vhosts_access.log`, and `layout`
/// (a `LogFormat` text) at `dir/custom.log`. `None` (a skip) where Apache
/// is not installed, outside CI.
pub fn apache(dir: &Path, layout: &str) -> Option<(Proc, SocketAddr)> {
    let bin = Path::new("/usr/sbin/apache2");
    if !bin.exists() {
        assert!(std::env::var_os("CI").is_none(), "apache2 is required under CI (scripts/services.sh installs it)");
        eprintln!("apache2 not installed; skipping");
        return None;
    }
    let port = free_port();
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("www");
    std::fs::write(www.join("index.html"), "ok\n").expect("index");
    let modules = "/usr/lib/apache2/modules";
    let conf = dir.join("apache.conf");
    std::fs::write(
        &conf,
        format!(
            "ServerRoot {root}\nLoadModule mpm_event_module {modules}/mod_mpm_event.so\n\
             LoadModule authz_core_module {modules}/mod_authz_core.so\nLoadModule alias_module {modules}/mod_alias.so\n\
             LoadModule rewrite_module {modules}/mod_rewrite.so\n\
             User www-data\nGroup www-data\nListen 127.0.0.1:{port}\nServerName shop.test\nPidFile {root}/apache.pid\n\
             ErrorLog {root}/apache-error.log\nDocumentRoot {www}\nMutex file:{root} default\n\
             <Directory {www}>\n  Require all granted\n</Directory>\n\
             RewriteEngine on\nRewriteCond %{{HTTP:X-Move}} .+\nRewriteRule ^/robots\\.txt$ https://www.shop.test/robots.txt [R=301,L]\n\
             AliasMatch ^/.* {www}/index.html\n\
             LogFormat \"%v:%p %h %l %u %t \\\"%r\\\" %>s %O \\\"%{{Referer}}i\\\" \\\"%{{User-Agent}}i\\\"\" vhost_combined\n\
             CustomLog {root}/other_vhosts_access.log vhost_combined\n\
             CustomLog {root}/custom.log \"{layout}\"\n",
            root = dir.display(),
            www = www.display(),
            layout = layout.replace('"', "\\\""),
        ),
    )
    .expect("apache config");
    // Apache's children run as www-data: the folder must be theirs to read,
    // and every folder above it theirs to pass through. `mktemp -d` makes
    // its folder 0700, so under a scratch TMPDIR (scripts/test.sh) Apache
    // answered 403 to everything, and a 403 robots.txt means "allow all".
    let _ = Command::new("chmod").args(["-R", "a+rX"]).arg(dir).status();
    let tmp = std::env::temp_dir();
    for above in dir.ancestors().skip(1).take_while(|a| a.starts_with(&tmp)) {
        let _ = Command::new("chmod").arg("a+x").arg(above).status();
    }
    let child = Command::new(bin)
        .args(["-X", "-f"])
        .arg(&conf)
        .env("APACHE_RUN_DIR", dir)
        .env("APACHE_LOG_DIR", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("apache2");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(
        wait_listening(addr, 10),
        "apache2 did not start: {}",
        std::fs::read_to_string(dir.join("apache-error.log")).unwrap_or_default()
    );
    Some((Proc(child), addr))
}
