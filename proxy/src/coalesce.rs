//! One TLS write for what an HTTP/2 connection flushes at once. The `h2`
//! crate hands its frames over as several buffers (a HEADERS frame, a DATA
//! frame's head, its payload). Pingora's TLS stream is not vectored, so
//! each buffer became its own `SSL_write`: a TLS record, a syscall, and
//! about 10,000 instructions of OpenSSL's per-call work, twice a request
//! (docs/BENCHMARKS.md, session 22). This wrapper says it writes vectored
//! and gathers the buffers of one call into one write.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use pingora::protocols::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// At most this much is gathered into one write: four full TLS records.
/// The rest of a larger call is left to the next one, as a short write.
pub const GATHER_MAX: usize = 64 * 1024;

/// A client stream whose vectored writes go out as one write.
#[derive(Debug)]
pub struct Coalesce<S = Stream> {
    inner: S,
    /// Reused for every gathered write.
    scratch: Vec<u8>,
}

impl Coalesce {
    /// Wraps an HTTP/2 client stream.
    pub fn wrap(inner: Stream) -> Stream {
        Box::new(Coalesce::new(inner))
    }
}

impl<S> Coalesce<S> {
    /// Wraps any stream (tests use an in-memory one).
    pub fn new(inner: S) -> Coalesce<S> {
        Coalesce { inner, scratch: Vec::new() }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalesce<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalesce<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if bufs.iter().filter(|b| !b.is_empty()).nth(1).is_none() {
            // One buffer (or none): nothing to gather.
            let one = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
            return Pin::new(&mut self.inner).poll_write(cx, one);
        }
        let this = &mut *self;
        this.scratch.clear();
        for b in bufs {
            let room = GATHER_MAX - this.scratch.len();
            this.scratch.extend_from_slice(&b[..b.len().min(room)]);
            if this.scratch.len() == GATHER_MAX {
                break;
            }
        }
        // What the inner stream took counts from the first buffer on, as a
        // vectored write's result does; a pending write consumed nothing,
        // and the caller offers the same bytes again.
        let polled = Pin::new(&mut this.inner).poll_write(cx, &this.scratch);
        if this.scratch.capacity() > GATHER_MAX {
            this.scratch = Vec::new();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

crate::wrapped::forward_stream_traits!(Coalesce);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Records each write it is given, and takes at most `take` bytes.
    struct Writes {
        seen: Vec<Vec<u8>>,
        take: usize,
    }

    impl AsyncWrite for Writes {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.take);
            self.seen.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn several_buffers_go_out_as_one_write() {
        let mut c = Coalesce::new(Writes { seen: Vec::new(), take: usize::MAX });
        let bufs = [IoSlice::new(b"head"), IoSlice::new(b""), IoSlice::new(b"frame"), IoSlice::new(b"body")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), 13);
        assert_eq!(c.inner.seen, vec![b"headframebody".to_vec()]);
        // One buffer among empty ones is written as it is.
        assert_eq!(c.write_vectored(&[IoSlice::new(b""), IoSlice::new(b"only")]).await.unwrap(), 4);
        assert_eq!(c.inner.seen[1], b"only");
    }

    #[tokio::test]
    async fn a_short_write_counts_from_the_first_buffer() {
        let mut c = Coalesce::new(Writes { seen: Vec::new(), take: 6 });
        let bufs = [IoSlice::new(b"head"), IoSlice::new(b"frame")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), 6);
        assert_eq!(c.inner.seen, vec![b"headfr".to_vec()]);
    }

    #[tokio::test]
    async fn a_large_call_is_gathered_up_to_the_limit() {
        let mut c = Coalesce::new(Writes { seen: Vec::new(), take: usize::MAX });
        let big = vec![7u8; GATHER_MAX];
        let bufs = [IoSlice::new(b"head"), IoSlice::new(&big), IoSlice::new(b"tail")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), GATHER_MAX);
        assert_eq!(c.inner.seen[0].len(), GATHER_MAX);
        assert_eq!(&c.inner.seen[0][..4], b"head");
        // Every byte offered arrives, in order, through short writes.
        let all: Vec<u8> = [&b"head"[..], &big, b"tail"].concat();
        let mut c = Coalesce::new(Writes { seen: Vec::new(), take: usize::MAX });
        let mut at = 0;
        while at < all.len() {
            let split = at.max(4);
            let bufs = [IoSlice::new(&all[at..split]), IoSlice::new(&all[split..])];
            at += c.write_vectored(&bufs).await.unwrap();
        }
        assert_eq!(c.inner.seen.concat(), all);
    }
}
