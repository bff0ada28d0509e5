//! Keep-alive connections from the fast path to one site's plain-HTTP
//! origin: connect with a deadline, and keep idle connections for reuse.
//!
//! A pooled connection may have been closed by the origin while it sat
//! idle. `take` drops connections that are already readable (closed, or
//! holding bytes nobody asked for); a close that races the reuse is caught
//! by the fast path, which retries a request without a body once on a new
//! connection.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections kept per site; more are closed.
const MAX_IDLE: usize = 128;
/// An idle connection older than this is closed rather than reused; origins
/// commonly drop idle keep-alive connections after 60 s or more.
const MAX_IDLE_TIME: Duration = Duration::from_secs(50);

/// Idle connections to one origin.
#[derive(Debug, Default)]
pub struct Upstream {
    idle: Mutex<Vec<Idle>>,
}

#[derive(Debug)]
struct Idle {
    addr: SocketAddr,
    since: Instant,
    conn: TcpStream,
}

impl Upstream {
    /// An idle connection to `addr` that still looks usable.
    pub fn take(&self, addr: SocketAddr) -> Option<TcpStream> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(pos) = idle.iter().rposition(|i| i.addr == addr) {
            let i = idle.swap_remove(pos);
            if i.since.elapsed() < MAX_IDLE_TIME && is_quiet(&i.conn) {
                return Some(i.conn);
            }
        }
        None
    }

    /// Keeps `conn` for reuse: its last response was read to the end.
    pub fn put(&self, addr: SocketAddr, conn: TcpStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(Idle { addr, since: Instant::now(), conn });
        }
    }
}

/// An idle connection has nothing to say: readable means closed or broken.
fn is_quiet(conn: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(conn.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// A new connection to `addr`, within [`CONNECT_TIMEOUT`].
pub async fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let conn = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await.map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no connection within {CONNECT_TIMEOUT:?}"))
    })??;
    conn.set_nodelay(true)?;
    Ok(conn)
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

        let quiet = connect(addr).await.unwrap();
        let (_quiet_peer, _) = listener.accept().await.unwrap();
        pool.put(addr, quiet);
        let got = pool.take(addr).expect("a quiet connection is reused");
        assert!(pool.take(addr).is_none(), "taken once");

        let closed = connect(addr).await.unwrap();
        let (closed_peer, _) = listener.accept().await.unwrap();
        drop(closed_peer);
        closed.readable().await.unwrap();
        pool.put(addr, closed);

        let chatty = connect(addr).await.unwrap();
        let (mut chatty_peer, _) = listener.accept().await.unwrap();
        chatty_peer.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        chatty.readable().await.unwrap();
        pool.put(addr, chatty);

        assert!(pool.take(addr).is_none(), "closed and chatty connections are dropped");
        let other: SocketAddr = "127.0.0.1:9".parse().unwrap();
        pool.put(addr, got);
        assert!(pool.take(other).is_none(), "connections are kept per address");
        assert!(pool.take(addr).is_some());
    }
}
