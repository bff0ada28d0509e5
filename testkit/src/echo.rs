//! A keep-alive HTTP/1.1 origin that answers each request with what it
//! received, so tests can see exactly what a proxy forwarded: the method,
//! target, header names, body length and checksum, and which connection
//! carried it. A few targets answer in special ways (see [`Echo`]).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The echo origin. Every answer's body is one line:
/// `METHOD TARGET conn=N body=LEN/SUM headers=name,name,...` (header names
/// lower-cased, in order; SUM is the byte sum of the body).
///
/// Special targets: `/chunked` answers in three chunks with a trailer;
/// `/close` answers and closes; `/eof` sends a body delimited by closing;
/// `/hints` sends 103 Early Hints first; `/idle-close` answers, then closes
/// the connection 200 ms later, as an origin's idle timeout does;
/// `/robots.txt` answers what [`Echo::set_robots`] gave, if anything; a
/// target given to [`Echo::script`] answers exactly the bytes given.
///
/// Every request head it reads is kept, as received, in [`Echo::heads`]:
/// what a proxy actually forwarded.
#[derive(Clone, Debug)]
pub struct Echo {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
    completed: Arc<Mutex<Vec<String>>>,
    robots: Arc<Mutex<Option<String>>>,
    scripts: Arc<Mutex<HashMap<String, Script>>>,
}

/// Raw bytes to answer one target with, and whether to close after them.
#[derive(Clone, Debug)]
struct Script {
    raw: Vec<u8>,
    close: bool,
}

impl Echo {
    pub fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind echo origin");
        let addr = listener.local_addr().expect("echo addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let echo = Echo {
            addr,
            connections,
            heads: Arc::default(),
            completed: Arc::default(),
            robots: Arc::default(),
            scripts: Arc::default(),
        };
        let shared = echo.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let n = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, n, &shared);
                });
            }
        });
        echo
    }

    /// Serve `body` as `/robots.txt`.
    pub fn set_robots(&self, body: &str) {
        *self.robots.lock().unwrap_or_else(|e| e.into_inner()) = Some(body.to_string());
    }

    /// Answer `target` with exactly `raw` (a misbehaving origin's bytes),
    /// then close the connection if `close`, else keep reading requests on it.
    pub fn script(&self, target: &str, raw: &[u8], close: bool) {
        let script = Script { raw: raw.to_vec(), close };
        self.scripts.lock().unwrap_or_else(|e| e.into_inner()).insert(target.to_string(), script);
    }

    /// Every request head received so far (request line and fields, as
    /// sent, lines joined with `\n`), `/robots.txt` fetches left out.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The targets of the requests whose bodies arrived whole, in order:
    /// what the origin would have acted on.
    pub fn completed(&self) -> Vec<String> {
        self.completed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, conn: usize, echo: &Echo) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, target, version) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or(""),
        );
        let mut close = version == "HTTP/1.0";
        let (mut names, mut length, mut chunked, mut expect) = (Vec::new(), 0usize, false, false);
        let mut head = line.trim_end().to_string();
        loop {
            let mut field = String::new();
            reader.read_line(&mut field)?;
            let field = field.trim_end();
            if field.is_empty() {
                break;
            }
            head.push('\n');
            head.push_str(field);
            let (name, value) = field.split_once(':').unwrap_or((field, ""));
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_ascii_lowercase());
            match name.as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "connection" if value.contains("close") => close = true,
                "connection" if value.contains("keep-alive") => close = false,
                "expect" => expect = value.contains("100-continue"),
                _ => {}
            }
            names.push(name);
        }
        if expect {
            out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let robots = echo.robots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let (Some(robots), "/robots.txt") = (robots, target.as_str()) {
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{robots}",
                robots.len()
            )?;
            continue;
        }
        echo.heads.lock().unwrap_or_else(|e| e.into_inner()).push(head);
        let body = if chunked { read_chunked(&mut reader)? } else { read_exact(&mut reader, length)? };
        echo.completed.lock().unwrap_or_else(|e| e.into_inner()).push(target.clone());
        let script = echo.scripts.lock().unwrap_or_else(|e| e.into_inner()).get(&target).cloned();
        if let Some(script) = script {
            out.write_all(&script.raw)?;
            if script.close {
                return Ok(());
            }
            continue;
        }
        let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
        let text = format!("{method} {target} conn={conn} body={}/{sum} headers={}\n", body.len(), names.join(","));
        match target.as_str() {
            "/chunked" => {
                let half = text.len() / 2;
                out.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?;
                for piece in [&text[..half], &text[half..], "!"] {
                    write!(out, "{:x};ext=1\r\n{piece}\r\n", piece.len())?;
                }
                out.write_all(b"0\r\nX-Trailer: yes\r\n\r\n")?;
            }
            "/eof" => {
                write!(out, "HTTP/1.1 200 OK\r\n\r\n{text}")?;
                return Ok(());
            }
            _ => {
                if target == "/hints" {
                    out.write_all(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")?;
                }
                let last = close || target == "/close";
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nKeep-Alive: timeout=5\r\nConnection: {}\r\n\r\n",
                    text.len(),
                    if last { "close" } else { "keep-alive" }
                )?;
                if method != "HEAD" {
                    out.write_all(text.as_bytes())?;
                }
                if last {
                    return Ok(());
                }
                if target == "/idle-close" {
                    std::thread::sleep(Duration::from_millis(200));
                    return Ok(());
                }
            }
        }
    }
}

fn read_exact(reader: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut body = vec![0; n];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16).unwrap_or(0);
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        body.extend(read_exact(reader, size)?);
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
    }
}
