//! What an HTTP/2 connection asks of its TLS stream, without the calls
//! that cannot do anything. Each call into Pingora's TLS stream costs its
//! own work before OpenSSL is reached (it drains the thread's OpenSSL
//! error queue every time), and a read OpenSSL's own (about 2,500
//! instructions even when it finds nothing).
//!
//! - **Writes.** The `h2` crate hands its frames over as several buffers
//!   (a HEADERS frame, a DATA frame's head, its payload). Pingora's TLS
//!   stream is not vectored, so each buffer became its own `SSL_write`: a
//!   TLS record, a syscall, and about 10,000 instructions of OpenSSL's
//!   per-call work, twice a request (docs/BENCHMARKS.md, session 22). This
//!   wrapper says it writes vectored and gathers the buffers of one call
//!   into one write.
//! - **Flushes.** `h2` flushes at the end of every pass over the
//!   connection, with or without a write before it: six a request at one
//!   stream. A flush with nothing written since the last one that
//!   completed is answered here.
//! - **Reads.** `h2` reads until the stream says pending, on every pass:
//!   at one stream, six reads a request, five of which found nothing. A
//!   read that was pending is not tried again until the stream has woken
//!   the task since (the socket became readable, or writable for a TLS
//!   read that must write): the stream is polled with a waker of this
//!   wrapper's, which notes the wake and passes it on. A read tried
//!   again without a wake would find what the last one found: nothing
//!   below this wrapper keeps bytes a pending read left behind (OpenSSL
//!   says pending only when no whole record has come, and it reads the
//!   socket only when asked to).

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::http::noted::Noted;

use pingora::protocols::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// At most this much is gathered into one write: four full TLS records.
/// The rest of a larger call is left to the next one, as a short write.
pub const GATHER_MAX: usize = 64 * 1024;

/// A client stream whose vectored writes go out as one write, and which
/// passes on only the flushes and reads that can do something.
#[derive(Debug)]
pub struct Coalesce<S = Stream> {
    inner: S,
    /// Reused for every gathered write.
    scratch: Vec<u8>,
    /// Something was written since the last flush that completed.
    unflushed: bool,
    /// The last read was pending.
    parked: bool,
    /// Notes the wakes of the stream's reads: it is polled with this
    /// waker, which passes them on to the task that read last.
    wakes: Noted,
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
        Coalesce { inner, scratch: Vec::new(), unflushed: false, parked: false, wakes: Noted::new(false) }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalesce<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        // A read that found nothing is tried again only once the stream
        // has woken the task since; `due` registers this task either way.
        if !this.wakes.due(cx) && this.parked {
            return Poll::Pending;
        }
        let polled = this.wakes.poll(|cx| Pin::new(&mut this.inner).poll_read(cx, buf));
        this.parked = polled.is_pending();
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalesce<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.unflushed = true;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.unflushed = true;
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
        if !self.unflushed {
            return Poll::Ready(Ok(()));
        }
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) {
            self.unflushed = false;
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

crate::http::wrapped::forward_stream_traits!(Coalesce);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::noted::tests::Counted;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::task::Waker;
    use tokio::io::AsyncWriteExt;

    /// Records each write it is given, and takes at most `take` bytes.
    struct Writes {
        seen: Vec<Vec<u8>>,
        take: usize,
        /// Flushes that reached it; pending while `stuck`.
        flushes: usize,
        stuck: bool,
    }

    fn writes(take: usize) -> Writes {
        Writes { seen: Vec::new(), take, flushes: 0, stuck: false }
    }

    impl AsyncWrite for Writes {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.take);
            self.seen.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.flushes += 1;
            if self.stuck { Poll::Pending } else { Poll::Ready(Ok(())) }
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Reads what it was fed; pending when it holds nothing, keeping the
    /// waker it was polled with, as a socket's registration does.
    #[derive(Default)]
    struct Reads {
        fed: Vec<u8>,
        polls: usize,
        waker: Option<Waker>,
    }

    impl Reads {
        fn feed(&mut self, bytes: &[u8]) {
            self.fed.extend_from_slice(bytes);
            if let Some(w) = self.waker.take() {
                w.wake();
            }
        }
    }

    impl AsyncRead for Reads {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.polls += 1;
            if self.fed.is_empty() {
                self.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let n = self.fed.len().min(buf.remaining());
            buf.put_slice(&self.fed[..n]);
            self.fed.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    fn read(c: &mut Coalesce<Reads>, task: &Arc<Counted>) -> Poll<Vec<u8>> {
        let waker = Waker::from(task.clone());
        let mut space = [0u8; 64];
        let mut buf = ReadBuf::new(&mut space);
        match Pin::new(c).poll_read(&mut Context::from_waker(&waker), &mut buf) {
            Poll::Ready(r) => Poll::Ready(r.map(|()| buf.filled().to_vec()).unwrap()),
            Poll::Pending => Poll::Pending,
        }
    }

    #[test]
    fn a_read_that_found_nothing_is_tried_again_only_after_a_wake() {
        let task = Arc::new(Counted::default());
        let mut c = Coalesce::new(Reads::default());
        assert!(read(&mut c, &task).is_pending());
        assert_eq!(c.inner.polls, 1);
        // Polled again with nothing new: answered here.
        assert!(read(&mut c, &task).is_pending());
        assert!(read(&mut c, &task).is_pending());
        assert_eq!(c.inner.polls, 1);
        // The stream wakes its registration: the task is woken, and the
        // next read reaches the stream and finds the bytes.
        c.inner.feed(b"frame");
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        assert_eq!(read(&mut c, &task), Poll::Ready(b"frame".to_vec()));
        assert_eq!(c.inner.polls, 2);
        // A read that found bytes is followed by one that reaches the
        // stream: there may be more.
        assert!(read(&mut c, &task).is_pending());
        assert_eq!(c.inner.polls, 3);
    }

    #[test]
    fn the_task_woken_is_the_one_that_read_last() {
        let (first, second) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        let mut c = Coalesce::new(Reads::default());
        assert!(read(&mut c, &first).is_pending());
        assert!(read(&mut c, &second).is_pending());
        assert_eq!(c.inner.polls, 1);
        c.inner.feed(b"x");
        assert_eq!((first.0.load(Ordering::SeqCst), second.0.load(Ordering::SeqCst)), (0, 1));
        assert_eq!(read(&mut c, &second), Poll::Ready(b"x".to_vec()));
    }

    #[test]
    fn a_wake_that_came_while_nothing_waited_is_not_lost() {
        let task = Arc::new(Counted::default());
        let mut c = Coalesce::new(Reads::default());
        assert!(read(&mut c, &task).is_pending());
        // Woken by the stream (its registration) before the task reads
        // again: the read goes through.
        c.inner.fed.extend_from_slice(b"late");
        c.wakes.wake();
        assert_eq!(read(&mut c, &task), Poll::Ready(b"late".to_vec()));
    }

    #[tokio::test]
    async fn a_flush_reaches_the_stream_only_after_a_write() {
        let mut c = Coalesce::new(writes(usize::MAX));
        c.flush().await.unwrap();
        assert_eq!(c.inner.flushes, 0);
        c.write_all(b"frame").await.unwrap();
        c.flush().await.unwrap();
        c.flush().await.unwrap();
        assert_eq!(c.inner.flushes, 1);
        assert_eq!(c.write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"b")]).await.unwrap(), 2);
        // A flush that did not complete is tried again.
        c.inner.stuck = true;
        let waker = Waker::from(Arc::new(Counted::default()));
        assert!(Pin::new(&mut c).poll_flush(&mut Context::from_waker(&waker)).is_pending());
        c.inner.stuck = false;
        c.flush().await.unwrap();
        assert_eq!(c.inner.flushes, 3);
        c.flush().await.unwrap();
        assert_eq!(c.inner.flushes, 3);
    }

    #[tokio::test]
    async fn several_buffers_go_out_as_one_write() {
        let mut c = Coalesce::new(writes(usize::MAX));
        let bufs = [IoSlice::new(b"head"), IoSlice::new(b""), IoSlice::new(b"frame"), IoSlice::new(b"body")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), 13);
        assert_eq!(c.inner.seen, vec![b"headframebody".to_vec()]);
        // One buffer among empty ones is written as it is.
        assert_eq!(c.write_vectored(&[IoSlice::new(b""), IoSlice::new(b"only")]).await.unwrap(), 4);
        assert_eq!(c.inner.seen[1], b"only");
    }

    #[tokio::test]
    async fn a_short_write_counts_from_the_first_buffer() {
        let mut c = Coalesce::new(writes(6));
        let bufs = [IoSlice::new(b"head"), IoSlice::new(b"frame")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), 6);
        assert_eq!(c.inner.seen, vec![b"headfr".to_vec()]);
    }

    #[tokio::test]
    async fn a_large_call_is_gathered_up_to_the_limit() {
        let mut c = Coalesce::new(writes(usize::MAX));
        let big = vec![7u8; GATHER_MAX];
        let bufs = [IoSlice::new(b"head"), IoSlice::new(&big), IoSlice::new(b"tail")];
        assert_eq!(c.write_vectored(&bufs).await.unwrap(), GATHER_MAX);
        assert_eq!(c.inner.seen[0].len(), GATHER_MAX);
        assert_eq!(&c.inner.seen[0][..4], b"head");
        // Every byte offered arrives, in order, through short writes.
        let all: Vec<u8> = [&b"head"[..], &big, b"tail"].concat();
        let mut c = Coalesce::new(writes(usize::MAX));
        let mut at = 0;
        while at < all.len() {
            let split = at.max(4);
            let bufs = [IoSlice::new(&all[at..split]), IoSlice::new(&all[split..])];
            at += c.write_vectored(&bufs).await.unwrap();
        }
        assert_eq!(c.inner.seen.concat(), all);
    }
}
