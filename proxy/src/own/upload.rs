//! A client's HTTP/1.1 request body on its way to the origin: a declared
//! length copied as it is, or a chunked body read strictly and chunked
//! afresh, after a `100 Continue` when the client waits for one.
//!
//! Why here and not in Pingora's pipeline, which did this before: a
//! chunked upload or an `Expect` paid the pipeline's per-request cost
//! (about five times the own path's instructions) and kept the client's
//! connection on the pipeline for good. Re-chunking means the origin sees
//! exactly the chunks the gateway read, never a size line or extension it
//! might read differently; trailers are dropped, as nginx drops them.

use std::io::Write as _;

use bytes::{Buf, BytesMut};
use pingora::protocols::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{CHUNK, Failure, RequestBody, Wait};
use crate::http::framing::Body;
use crate::http::upstream::OriginConn;

/// What a client waiting on `Expect: 100-continue` is sent before its body.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// An HTTP/1.1 request's body still to come from the client.
pub(super) struct ClientBody<'c> {
    pub client: &'c mut Stream,
    /// Bytes read from the client and not relayed yet (empty on entry: what
    /// was read with the head went out with it).
    pub buf: &'c mut BytesMut,
    /// [`Body::Length`] or [`Body::chunked_request`].
    pub rest: Body,
    /// Send `100 Continue` first: the origin has the head by then, so a
    /// client is never told to go on to an origin that cannot be reached.
    pub continue_first: bool,
}

impl RequestBody for ClientBody<'_> {
    fn is_empty(&self) -> bool {
        self.rest == Body::Length(0)
    }

    async fn send(&mut self, origin: &mut OriginConn, wait: &mut Wait<'_>) -> Result<(), Failure> {
        if std::mem::take(&mut self.continue_first) {
            self.client.write_all(CONTINUE).await.map_err(|_| Failure::Broken)?;
            self.client.flush().await.map_err(|_| Failure::Broken)?;
        }
        match self.rest {
            Body::Length(n) => copy_exact(self.client, origin, n, self.buf, wait).await,
            _ => copy_chunks(self.client, origin, &mut self.rest, self.buf, wait).await,
        }
    }
}

/// Reads more of the body from the client into `buf`, within the client
/// limit: a body that pauses past it holds a client and an origin
/// connection, and ends both.
async fn read_client(client: &mut Stream, buf: &mut BytesMut, wait: &mut Wait<'_>) -> Result<(), Failure> {
    buf.reserve(CHUNK);
    wait.timer.as_mut().reset(tokio::time::Instant::now() + wait.client_limit);
    let got = tokio::select! {
        biased;
        got = client.read_buf(buf) => got.map_err(|_| Failure::Broken)?,
        () = wait.timer.as_mut() => return Err(Failure::Stalled),
    };
    if got == 0 {
        return Err(Failure::Broken);
    }
    Ok(())
}

/// Copies exactly `n` request body bytes from the client to the origin;
/// the client's bytes after them stay in `buf` (it was empty on entry).
async fn copy_exact(
    client: &mut Stream,
    origin: &mut OriginConn,
    mut n: u64,
    buf: &mut BytesMut,
    wait: &mut Wait<'_>,
) -> Result<(), Failure> {
    while n > 0 {
        read_client(client, buf, wait).await?;
        let take = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        origin.write_all(&buf[..take]).await.map_err(|_| Failure::Broken)?;
        buf.advance(take);
        n -= take as u64;
    }
    Ok(())
}

/// Reads the chunked body's next bytes from `input` and appends them to
/// `out` as fresh chunks, one for each run of content, with the last chunk
/// once the body is through. Returns how many bytes of `input` were the
/// body's and whether it is through; what follows is the next request.
pub(super) fn rechunk(body: &mut Body, input: &[u8], out: &mut Vec<u8>) -> Result<(usize, bool), Failure> {
    let (n, done) = body.take_with(input, |content| push_chunk(out, content)).map_err(|_| Failure::BadBody)?;
    if done {
        out.extend_from_slice(LAST_CHUNK);
    }
    Ok((n, done))
}

/// Appends `content` to `out` as one chunk, for the origin: the size, the
/// content, the line ends. HTTP/2 uploads without a length go the same way.
pub(super) fn push_chunk(out: &mut Vec<u8>, content: &[u8]) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{:x}\r\n", content.len());
    out.extend_from_slice(content);
    out.extend_from_slice(b"\r\n");
}

/// The last chunk, with no trailers.
pub(super) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Copies a chunked body from the client to the origin as fresh chunks.
/// The client's bytes after its body stay in `buf` (empty on entry): the
/// next request.
async fn copy_chunks(
    client: &mut Stream,
    origin: &mut OriginConn,
    body: &mut Body,
    buf: &mut BytesMut,
    wait: &mut Wait<'_>,
) -> Result<(), Failure> {
    let mut out = Vec::with_capacity(CHUNK + 32);
    loop {
        if !buf.is_empty() {
            out.clear();
            let (n, done) = rechunk(body, buf, &mut out)?;
            buf.advance(n);
            if !out.is_empty() {
                origin.write_all(&out).await.map_err(|_| Failure::Broken)?;
            }
            if done {
                return Ok(());
            }
        }
        read_client(client, buf, wait).await?;
    }
}
