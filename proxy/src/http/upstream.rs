//! Keep-alive connections from the own path to one site's origin, plain
//! HTTP or TLS: connect (and shake hands) with a deadline, and keep idle
//! connections for reuse.
//!
//! TLS origins (`origin_tls`) are verified as Pingora's pipeline verifies
//! them: against `proxy.origin_ca_file` or the system's roots, the
//! certificate naming the site's `sni` (else its first host), which is
//! also sent as SNI. They used to be the pipeline's alone, and every
//! request of such a site (the usual setup behind a CDN or a load
//! balancer) paid its cost (#50).
//!
//! A pooled connection may have been closed by the origin while it sat
//! idle. `take` drops connections that are already readable (closed, or
//! holding bytes nobody asked for); a close that races the reuse is caught
//! by the own path, which retries a request without a body once on a new
//! connection.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections kept per site; more are closed.
const MAX_IDLE: usize = 128;
/// An idle connection older than this is closed rather than reused; origins
/// commonly drop idle keep-alive connections after 60 s or more.
const MAX_IDLE_TIME: Duration = Duration::from_secs(50);

/// Idle connections to one origin, and how to make new ones.
#[derive(Default)]
pub struct Upstream {
    idle: Mutex<Vec<Idle>>,
    /// For a TLS origin: the verifying connector and the name to ask for.
    tls: Option<(SslConnector, String)>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("tls", &self.tls.as_ref().map(|(_, sni)| sni)).finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Idle {
    addr: SocketAddr,
    since: Instant,
    conn: OriginConn,
}

/// A connection to an origin.
#[derive(Debug)]
pub enum OriginConn {
    /// Plain HTTP.
    Plain(TcpStream),
    /// HTTP over TLS.
    Tls(Box<SslStream<TcpStream>>),
}

impl Upstream {
    /// A TLS origin's pool: `connector` verifies, `sni` is the name asked
    /// for and checked.
    pub fn tls(connector: SslConnector, sni: String) -> Upstream {
        Upstream { idle: Mutex::default(), tls: Some((connector, sni)) }
    }

    /// An idle connection to `addr` that still looks usable.
    pub fn take(&self, addr: SocketAddr) -> Option<OriginConn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(pos) = idle.iter().rposition(|i| i.addr == addr) {
            let i = idle.swap_remove(pos);
            if i.since.elapsed() < MAX_IDLE_TIME && i.conn.is_quiet() {
                return Some(i.conn);
            }
        }
        None
    }

    /// Keeps `conn` for reuse: its last response was read to the end.
    pub fn put(&self, addr: SocketAddr, conn: OriginConn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(Idle { addr, since: Instant::now(), conn });
        }
    }

    /// A new connection to `addr`, TLS for a TLS origin, within
    /// [`CONNECT_TIMEOUT`] in all.
    pub async fn connect(&self, addr: SocketAddr) -> std::io::Result<OriginConn> {
        let within = async {
            let tcp = TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            let Some((connector, sni)) = &self.tls else { return Ok(OriginConn::Plain(tcp)) };
            let ssl = connector.configure().and_then(|c| c.into_ssl(sni)).map_err(std::io::Error::other)?;
            let mut stream = SslStream::new(ssl, tcp).map_err(std::io::Error::other)?;
            Pin::new(&mut stream).connect().await.map_err(|e| {
                let why = stream.ssl().verify_result();
                let verify =
                    if why == openssl::x509::X509VerifyResult::OK { String::new() } else { format!(" ({why})") };
                std::io::Error::other(format!("TLS with {sni}: {e}{verify}"))
            })?;
            Ok(OriginConn::Tls(Box::new(stream)))
        };
        tokio::time::timeout(CONNECT_TIMEOUT, within).await.map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no connection within {CONNECT_TIMEOUT:?}"))
        })?
    }
}

/// The connector for TLS origins: verifying against `ca_file` (PEM), or the
/// system's roots without one; HTTP/1.1 by ALPN.
pub fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<SslConnector, String> {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(|e| e.to_string())?;
    match ca_file {
        Some(path) => builder.set_ca_file(path).map_err(|e| format!("{}: {e}", path.display()))?,
        None => builder.set_default_verify_paths().map_err(|e| e.to_string())?,
    }
    builder.set_alpn_protos(b"\x08http/1.1").map_err(|e| e.to_string())?;
    Ok(builder.build())
}

impl OriginConn {
    /// An idle connection has nothing to say: readable means closed,
    /// broken, or bytes nobody asked for.
    fn is_quiet(&self) -> bool {
        match self {
            OriginConn::Plain(tcp) => {
                let mut probe = [0u8; 1];
                matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            }
            // A peek at the socket under TLS: reading would take bytes of a
            // record from OpenSSL. A TLS 1.3 session ticket still unread is
            // taken as chatty: the connection is not reused, which is safe.
            OriginConn::Tls(tls) => {
                let mut probe = [0u8; 1];
                let mut buf = ReadBuf::new(&mut probe);
                let mut cx = Context::from_waker(std::task::Waker::noop());
                tls.get_ref().poll_peek(&mut cx, &mut buf).is_pending()
            }
        }
    }
}

impl AsyncRead for OriginConn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            OriginConn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            OriginConn::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for OriginConn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            OriginConn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            OriginConn::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            OriginConn::Plain(s) => Pin::new(s).poll_flush(cx),
            OriginConn::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            OriginConn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            OriginConn::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            OriginConn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            OriginConn::Tls(s) => Pin::new(&mut **s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            OriginConn::Plain(s) => s.is_write_vectored(),
            OriginConn::Tls(s) => s.is_write_vectored(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn closed_and_chatty_connections_are_not_reused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let pool = Upstream::default();

        let quiet = pool.connect(addr).await.unwrap();
        let (_quiet_peer, _) = listener.accept().await.unwrap();
        pool.put(addr, quiet);
        let got = pool.take(addr).expect("a quiet connection is reused");
        assert!(pool.take(addr).is_none(), "taken once");

        let closed = pool.connect(addr).await.unwrap();
        let (closed_peer, _) = listener.accept().await.unwrap();
        drop(closed_peer);
        let OriginConn::Plain(tcp) = &closed else { panic!("plain") };
        tcp.readable().await.unwrap();
        pool.put(addr, closed);

        let chatty = pool.connect(addr).await.unwrap();
        let (mut chatty_peer, _) = listener.accept().await.unwrap();
        chatty_peer.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        let OriginConn::Plain(tcp) = &chatty else { panic!("plain") };
        tcp.readable().await.unwrap();
        pool.put(addr, chatty);

        assert!(pool.take(addr).is_none(), "closed and chatty connections are dropped");
        let other: SocketAddr = "127.0.0.1:9".parse().unwrap();
        pool.put(addr, got);
        assert!(pool.take(other).is_none(), "connections are kept per address");
        assert!(pool.take(addr).is_some());
    }
}
