//! Request targets too long for hyper, answered in the console's words.
//! hyper refuses a target over 64 KiB with a bare 414 before any router
//! sees it, so an `/api/` client got no problem document. The console reads
//! each connection's first request line itself: one whose target hyper
//! would refuse is answered here, as the console answers errors
//! (problem+json under `/api/`), and the connection closed; any other is
//! handed to hyper with the bytes already read put back in front.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// The longest target hyper reads (its `MAX_URI_LEN`).
pub const HYPER_MAX_TARGET: usize = 65_534;
/// How much of a first line is read before it is judged too long.
const READ_CAP: usize = HYPER_MAX_TARGET + 1024;
/// How long a client may take to send its first line.
const FIRST_LINE_TIME: Duration = Duration::from_secs(30);

/// A connection with bytes already read put back in front of it.
#[derive(Debug)]
pub struct Rewind {
    prefix: Vec<u8>,
    at: usize,
    inner: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = (self.prefix.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Reads `stream`'s first request line. `Some` hands the connection on to
/// hyper; `None` means it was answered here (a target too long) or ended.
pub async fn first_line(mut stream: TcpStream) -> Option<Rewind> {
    let mut read = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 16 * 1024];
    let complete = tokio::time::timeout(FIRST_LINE_TIME, async {
        loop {
            if read.contains(&b'\n') || read.len() >= READ_CAP {
                return true;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => read.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    match complete {
        // A silent or closed client: hyper would time it out; nothing to say.
        Err(_) | Ok(false) if read.is_empty() => return None,
        Err(_) | Ok(false) => return Some(Rewind { prefix: read, at: 0, inner: stream }),
        Ok(true) => {}
    }
    let line_end = read.iter().position(|b| *b == b'\n').unwrap_or(read.len());
    let line = &read[..line_end];
    let mut parts = line.split(|b| *b == b' ');
    let (_method, target) = (parts.next(), parts.next().unwrap_or_default());
    let whole = line_end < read.len();
    if target.len() <= HYPER_MAX_TARGET && whole {
        return Some(Rewind { prefix: read, at: 0, inner: stream });
    }
    answer_too_long(stream, target, whole).await;
    None
}

/// Writes the console's 414 for a target of which `target` was read, then
/// reads what the client still sends for a moment, so that closing does
/// not reset the connection before it reads the answer.
async fn answer_too_long(mut stream: TcpStream, target: &[u8], whole: bool) {
    let shown = if whole { format!("{} bytes", target.len()) } else { format!("over {} bytes", target.len()) };
    let detail = format!(
        "the request target is {shown}; the console reads targets up to {HYPER_MAX_TARGET} bytes: send a large file to POST /api/test as JSON or a form"
    );
    let (content_type, body) = if target.starts_with(b"/api/") {
        let problem = serde_json::json!({
            "type": "about:blank",
            "title": "URI Too Long",
            "status": 414,
            "detail": detail,
        });
        ("application/problem+json", problem.to_string())
    } else {
        ("text/plain; charset=utf-8", format!("414 URI Too Long: {detail}\n"))
    };
    let response = format!(
        "HTTP/1.1 414 URI Too Long\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    let mut sink = vec![0u8; 64 * 1024];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let mut drained = 0usize;
        while drained < 64 * 1024 * 1024 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}
