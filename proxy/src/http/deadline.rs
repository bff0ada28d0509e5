//! One whole-head deadline for the requests Pingora's pipeline reads
//! itself. Pingora times each read, not each head, so a client that sends
//! a head a byte a second is never cut off. The gateway reads the first
//! head of every connection itself (with `client_timeout` over the whole
//! head); this wrapper gives every later head on a connection handed to
//! the pipeline the same limit.
//!
//! It watches the bytes both ways: a final response written (a status
//! line that is not 1xx) means the next bytes read start a request head;
//! from the first of them, the head's blank line must arrive within the
//! limit, or reads fail with `TimedOut` and Pingora closes the connection.
//! Bytes past the blank line (a body) are read under Pingora's per-read
//! timeout, as before.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pingora::protocols::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Where the client side of the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head; `started` once its first byte came, and
    /// `line_start` after a line end (a second one ends the head).
    Head { started: bool, line_start: bool },
    /// Past the head: a body, or the next request already buffered.
    Past,
}

/// A client stream whose request heads must each arrive within `limit`.
#[derive(Debug)]
pub struct HeadDeadline {
    inner: Stream,
    limit: Duration,
    phase: Phase,
    timer: Pin<Box<Sleep>>,
}

impl HeadDeadline {
    /// Wraps a stream whose current head has been read already.
    pub fn wrap(inner: Stream, limit: Duration) -> Stream {
        Box::new(HeadDeadline {
            inner,
            limit,
            phase: Phase::Past,
            timer: Box::pin(tokio::time::sleep_until(Instant::now() + limit)),
        })
    }

    /// Follows the head's bytes; switches to [`Phase::Past`] at its blank line.
    fn saw(&mut self, bytes: &[u8]) {
        let Phase::Head { mut started, mut line_start } = self.phase else { return };
        if !started && !bytes.is_empty() {
            started = true;
            self.timer.as_mut().reset(Instant::now() + self.limit);
        }
        for &b in bytes {
            match b {
                b'\n' if line_start => {
                    self.phase = Phase::Past;
                    return;
                }
                b'\n' => line_start = true,
                b'\r' => {}
                _ => line_start = false,
            }
        }
        self.phase = Phase::Head { started, line_start };
    }
}

impl HeadDeadline {
    /// The error a read gets once the head's time is up.
    fn too_slow(&self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, format!("request head not complete within {:?}", self.limit))
    }

    /// After a write: a final response sent means a head comes next.
    fn wrote(&mut self, is_final: bool, polled: &Poll<std::io::Result<usize>>) {
        if is_final && matches!(polled, Poll::Ready(Ok(_))) {
            self.phase = Phase::Head { started: false, line_start: false };
        }
    }
}

/// Whether written bytes start a final response's status line (not 1xx),
/// after which what the client sends is a head.
fn final_status(bytes: &[u8]) -> bool {
    bytes.starts_with(b"HTTP/1.") && bytes.get(9).is_some_and(|&d| d != b'1')
}

impl AsyncRead for HeadDeadline {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        // A head trickled a byte at a time never leaves a read pending.
        if matches!(this.phase, Phase::Head { started: true, .. }) && this.timer.is_elapsed() {
            return Poll::Ready(Err(this.too_slow()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.saw(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Pending if matches!(this.phase, Phase::Head { started: true, .. }) => {
                match this.timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(this.too_slow())),
                    Poll::Pending => Poll::Pending,
                }
            }
            other => other,
        }
    }
}

impl AsyncWrite for HeadDeadline {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let is_final = final_status(buf);
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(is_final, &polled);
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let is_final = final_status(bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]));
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(is_final, &polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

crate::http::wrapped::forward_stream_traits!(HeadDeadline);
