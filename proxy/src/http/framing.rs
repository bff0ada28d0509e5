//! Where an HTTP/1.1 message body ends, found while its bytes stream past,
//! and the `Content-Length` values both request paths accept.
//! The own path relays response bodies byte for byte (chunked stays
//! chunked, with its extensions and trailers) and needs only to know where
//! each message stops, so the connection can carry the next one. A chunked
//! request body is read strictly ([`Body::chunked_request`]) and chunked
//! afresh for the origin.

/// A body's framing and how much of it is still to come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// `Content-Length`: this many bytes remain.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(Chunked),
    /// Neither: the body ends when the sender closes the connection.
    UntilClose,
}

/// A body that cannot be framed: bad chunk syntax or an oversized chunk size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed chunked body")]
pub struct Malformed;

impl Body {
    /// A chunked body, at its start.
    pub fn chunked() -> Body {
        Body::Chunked(Chunked::default())
    }

    /// A client's chunked request body, at its start. Read as strictly as
    /// RFC 9112 section 7.1 writes it, where origins are read leniently: a
    /// size line is hex digits, then optional whitespace that only `;` and
    /// extensions or the line's end may follow (`5 5` is no size), and a
    /// CR only ends a line. What a client meant is then never in doubt;
    /// the origin gets the chunks afresh, without extensions or trailers,
    /// so no reading of them can differ behind the gateway.
    pub fn chunked_request() -> Body {
        Body::Chunked(Chunked { state: State::default(), strict: true, framing: 0 })
    }

    /// Takes the next bytes of the stream. Returns how many of them belong
    /// to this body and whether the body is complete; bytes past the end
    /// belong to whatever follows it.
    pub fn take(&mut self, data: &[u8]) -> Result<(usize, bool), Malformed> {
        self.take_with(data, |_| {})
    }

    /// [`Body::take`], handing each run of the message's content to
    /// `content`: a chunked body's chunk data without its framing, since
    /// HTTP/2 carries a body without a transfer coding.
    pub fn take_with(&mut self, data: &[u8], mut content: impl FnMut(&[u8])) -> Result<(usize, bool), Malformed> {
        match self {
            Body::Length(left) => {
                let n = data.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= n as u64;
                content(&data[..n]);
                Ok((n, *left == 0))
            }
            Body::Chunked(c) => c.take(data, &mut content),
            Body::UntilClose => {
                content(data);
                Ok((data.len(), false))
            }
        }
    }

    /// Whether the body is already complete (an empty fixed-length body).
    pub fn is_done(&self) -> bool {
        matches!(self, Body::Length(0)) || matches!(self, Body::Chunked(Chunked { state: State::Done, .. }))
    }
}

/// Position inside a chunked body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunked {
    state: State,
    /// A client's body (see [`Body::chunked_request`]).
    strict: bool,
    /// Bytes of framing (size lines, their extensions, trailers) since the
    /// last chunk data: a client's may be at most [`FRAMING_MAX`].
    framing: u32,
}

/// The most framing bytes a client may send between two runs of chunk
/// data, or in its trailers. Extensions and trailers are read and dropped,
/// so without a limit a client could keep an origin connection waiting on
/// a size line that never ends, as long as it kept sending.
const FRAMING_MAX: u32 = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a chunk-size line: the size so far, whether a digit was seen,
    /// whether the extensions have begun, whether whitespace followed the
    /// digits, whether a CR was read.
    Size { size: u64, digit: bool, ext: bool, space: bool, cr: bool },
    /// Inside chunk data: bytes left.
    Data(u64),
    /// After chunk data: expecting its line end.
    DataEnd { cr: bool },
    /// In the trailer section: length of the current line.
    Trailer(u64),
    /// The last chunk and trailers are through.
    Done,
}

impl Default for State {
    fn default() -> State {
        State::Size { size: 0, digit: false, ext: false, space: false, cr: false }
    }
}

impl Chunked {
    fn take(&mut self, data: &[u8], content: &mut impl FnMut(&[u8])) -> Result<(usize, bool), Malformed> {
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            if self.strict && !matches!(self.state, State::Data(_) | State::Done) {
                self.framing += 1;
                if self.framing > FRAMING_MAX {
                    return Err(Malformed);
                }
            }
            self.state = match self.state {
                State::Done => return Ok((i, true)),
                State::Data(left) => {
                    self.framing = 0;
                    let n = (data.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                    content(&data[i..i + n]);
                    i += n;
                    let left = left - n as u64;
                    self.state = if left == 0 { State::DataEnd { cr: false } } else { State::Data(left) };
                    continue;
                }
                State::Size { size, digit, ext, space, cr } => match b {
                    b'\n' if !digit => return Err(Malformed),
                    b'\n' if size == 0 => State::Trailer(0),
                    b'\n' => State::Data(size),
                    _ if cr && self.strict => return Err(Malformed),
                    b'\r' => State::Size { size, digit, ext, space, cr: true },
                    _ if ext => State::Size { size, digit, ext, space, cr },
                    b';' if digit => State::Size { size, digit, ext: true, space, cr },
                    b' ' | b'\t' if digit && self.strict => State::Size { size, digit, ext, space: true, cr },
                    b' ' | b'\t' if digit => State::Size { size, digit, ext: true, space, cr },
                    _ if space => return Err(Malformed),
                    _ => {
                        let d = (b as char).to_digit(16).ok_or(Malformed)?;
                        if size > u64::MAX >> 4 {
                            return Err(Malformed);
                        }
                        State::Size { size: size << 4 | u64::from(d), digit: true, ext, space, cr }
                    }
                },
                State::DataEnd { cr } => match b {
                    b'\r' if !cr => State::DataEnd { cr: true },
                    b'\n' => State::default(),
                    _ => return Err(Malformed),
                },
                State::Trailer(len) => match b {
                    b'\n' if len == 0 => State::Done,
                    b'\n' => State::Trailer(0),
                    b'\r' => State::Trailer(len),
                    _ => State::Trailer(len + 1),
                },
            };
            i += 1;
        }
        Ok((i, self.state == State::Done))
    }
}

/// The items of a comma-separated field value (`Connection`,
/// `Transfer-Encoding`), trimmed.
pub fn list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

/// A `Content-Length` value: digits only, or a list of one value repeated
/// (`5, 5`, which RFC 9110 section 8.6 lets a recipient read as `5`).
/// Rust's integer parsing would also take a leading `+`, which a server
/// behind the gateway might read differently: the root of request
/// smuggling. Whatever was accepted goes on as one plain value.
pub fn content_length(value: &[u8]) -> Option<u64> {
    let mut found = None;
    for item in list(value) {
        if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n: u64 = std::str::from_utf8(item).ok()?.parse().ok()?;
        if found.is_some_and(|f| f != n) {
            return None;
        }
        found = Some(n);
    }
    found
}

/// An absolute-form request target (`http://host:port/path?q`, RFC 9112
/// section 3.2.2) split into its authority and its origin-form rest (`/`
/// when it has no path). `None` for any other form. The scheme must be
/// `http` or `https`, in any case; userinfo is not allowed (RFC 9110
/// section 4.2.4), so a target with `@` in its authority is `None`.
pub fn absolute_form(target: &[u8]) -> Option<(&[u8], Vec<u8>)> {
    let colon = target.iter().position(|&b| b == b':')?;
    let scheme = &target[..colon];
    if !(scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https")) {
        return None;
    }
    let rest = target[colon..].strip_prefix(b"://")?;
    let end = rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.is_empty() || authority.contains(&b'@') {
        return None;
    }
    let tail = &tail[..tail.iter().position(|&b| b == b'#').unwrap_or(tail.len())];
    let mut path = Vec::with_capacity(tail.len() + 1);
    if !tail.starts_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(tail);
    Some((authority, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `data` in pieces of `step` bytes; returns where the body ended.
    fn end(data: &[u8], step: usize) -> Result<Option<usize>, Malformed> {
        let mut body = Body::chunked();
        let mut at = 0;
        for piece in data.chunks(step) {
            let (n, done) = body.take(piece)?;
            at += n;
            if done {
                return Ok(Some(at));
            }
            assert_eq!(n, piece.len(), "an unfinished body takes every byte");
        }
        Ok(None)
    }

    /// A client's body: what a strict reading refuses, and what it still
    /// takes, fed whole and a byte at a time; the content is what the
    /// chunks carry.
    #[test]
    fn request_bodies_are_read_strictly() {
        let refused: &[&[u8]] = &[
            b"5 5\r\nhello\r\n0\r\n\r\n",
            b"5\t5\r\nhello\r\n0\r\n\r\n",
            b"5\r5\r\nhello\r\n0\r\n\r\n",
            b"5;x=\"a\rb\"\r\nhello\r\n0\r\n\r\n",
            b" 5\r\nhello\r\n0\r\n\r\n",
            b"\r\nhello\r\n0\r\n\r\n",
            b"0x5\r\nhello\r\n0\r\n\r\n",
            b"10000000000000005\r\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
        ];
        let long_extension = [&b"5;x="[..], &[b'a'; 20_000], b"\r\nhello\r\n0\r\n\r\n"].concat();
        let long_trailers = [&b"5\r\nhello\r\n0\r\n"[..], &b"X-T: 1\r\n".repeat(3_000), b"\r\n"].concat();
        for data in refused.iter().copied().chain([&long_extension[..], &long_trailers[..]]) {
            for step in [1, data.len()] {
                let mut body = Body::chunked_request();
                let got = data.chunks(step).try_for_each(|piece| body.take(piece).map(|_| ()));
                assert_eq!(got, Err(Malformed), "{:?} in steps of {step}", String::from_utf8_lossy(data));
            }
        }
        let taken: &[(&[u8], &[u8])] = &[
            (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5\t\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5 ;a=b\r\nhello\r\n6;q\r\n world\r\n0\r\nX-T: 1\r\n\r\n", b"hello world"),
            (b"5\nhello\n0\n\n", b"hello"),
        ];
        // Framing is limited between data, not over the body: ten
        // thousand one-byte chunks, each with an extension, are fine.
        let many = [&b"1;e=1\r\nx\r\n".repeat(10_000)[..], b"0\r\n\r\n"].concat();
        let many_want = vec![b'x'; 10_000];
        for (data, want) in taken.iter().copied().chain([(&many[..], &many_want[..])]) {
            for step in [1, data.len()] {
                let mut body = Body::chunked_request();
                let mut content = Vec::new();
                let mut done = false;
                for piece in data.chunks(step) {
                    let (n, end) = body.take_with(piece, |c| content.extend_from_slice(c)).expect("taken");
                    assert_eq!(n, piece.len());
                    done = end;
                }
                assert!(done, "{:?}", String::from_utf8_lossy(data));
                assert_eq!(&content, want, "{:?} in steps of {step}", String::from_utf8_lossy(data));
            }
        }
    }

    #[test]
    fn chunked_bodies_end_where_the_last_chunk_and_trailers_do() {
        let cases: &[(&[u8], Option<usize>)] = &[
            (b"5\r\nhello\r\n0\r\n\r\nNEXT", Some(15)),
            (b"5;name=val\r\nhello\r\n0\r\n\r\n", Some(24)),
            (b"A\r\n0123456789\r\n0\r\nX-Sum: 1\r\n\r\nrest", Some(30)),
            (b"5\nhello\n0\n\n", Some(11)),
            (b"0\r\n\r\n", Some(5)),
            (b"5\r\nhel", None),
            (b"5\r\nhello\r\n0\r\nX: y\r\n", None),
        ];
        for (data, want) in cases {
            for step in 1..=data.len() {
                assert_eq!(end(data, step), Ok(*want), "{:?} in steps of {step}", String::from_utf8_lossy(data));
            }
        }
    }

    /// A xorshift generator: `next(n)` is below `n`.
    fn random(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Ends a chunked body: the last chunk, `trailers` trailer lines and
    /// the blank line, each ended by `eol`. Returns the body's length;
    /// `next` follows it.
    fn end_body(data: &mut Vec<u8>, eol: &[u8], trailers: u64, next: &[u8]) -> usize {
        data.extend_from_slice(b"0");
        data.extend_from_slice(eol);
        for _ in 0..trailers {
            data.extend_from_slice(b"X-Check: 0");
            data.extend_from_slice(eol);
        }
        data.extend_from_slice(eol);
        let end = data.len();
        data.extend_from_slice(next);
        end
    }

    /// Feeds `data` to `body` in random pieces of 1 to 64 bytes: where the
    /// body ended, and its content.
    fn feed(mut body: Body, data: &[u8], next: &mut impl FnMut(u64) -> u64) -> (Option<usize>, Vec<u8>) {
        let (mut at, mut content) = (0, Vec::new());
        let mut rest = data;
        while !rest.is_empty() {
            let piece = &rest[..(1 + next(64) as usize).min(rest.len())];
            let (n, done) = body.take_with(piece, |c| content.extend_from_slice(c)).expect("well-formed");
            at += n;
            if done {
                return (Some(at), content);
            }
            rest = &rest[piece.len()..];
        }
        (None, content)
    }

    /// Random chunked bodies (sizes, extensions, trailers, LF or CRLF line
    /// ends, data full of digits and line ends), fed in random pieces: each
    /// ends exactly where it was encoded to end.
    #[test]
    fn random_chunked_bodies_end_where_they_were_encoded_to() {
        let mut next = random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let eol: &[u8] = if next(2) == 0 { b"\r\n" } else { b"\n" };
            let mut data = Vec::new();
            for _ in 0..next(5) {
                let size = 1 + next(300) as usize;
                data.extend_from_slice(format!("{size:x}").as_bytes());
                if next(3) == 0 {
                    data.extend_from_slice(b";name=\"v\r\"");
                }
                data.extend_from_slice(eol);
                data.extend((0..size).map(|_| b"0\r\n;x"[next(5) as usize]));
                data.extend_from_slice(eol);
            }
            let end = end_body(&mut data, eol, next(3), b"HTTP/1.1 200 OK\r\n");
            let (ended, _) = feed(Body::chunked(), &data, &mut next);
            assert_eq!(ended, Some(end), "{:?}", String::from_utf8_lossy(&data));
        }
    }

    /// Random well-formed client bodies (sizes in either case, extensions
    /// after optional whitespace, trailers, CRLF or LF line ends, data full
    /// of line ends and digits), fed in random pieces to the strict reader:
    /// each ends where it was encoded to, with exactly its content.
    #[test]
    fn random_request_bodies_are_read_whole_by_the_strict_reader() {
        let mut next = random(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000 {
            let eol: &[u8] = if next(2) == 0 { b"\r\n" } else { b"\n" };
            let (mut data, mut want) = (Vec::new(), Vec::new());
            for _ in 0..next(6) {
                let size = 1 + next(400) as usize;
                let hex = if next(2) == 0 { format!("{size:x}") } else { format!("{size:X}") };
                data.extend_from_slice(format!("{}{hex}", "0".repeat(next(3) as usize)).as_bytes());
                match next(4) {
                    0 => data.extend_from_slice(b" \t;name=\"v; x\""),
                    1 => data.extend_from_slice(b";a;b=c"),
                    2 => data.extend_from_slice(b"\t"),
                    _ => {}
                }
                data.extend_from_slice(eol);
                let content: Vec<u8> = (0..size).map(|_| b"0\r\n;x "[next(6) as usize]).collect();
                data.extend_from_slice(&content);
                want.extend_from_slice(&content);
                data.extend_from_slice(eol);
            }
            let end = end_body(&mut data, eol, next(3), b"GET / HTTP/1.1\r\n");
            let (ended, got) = feed(Body::chunked_request(), &data, &mut next);
            assert_eq!(ended, Some(end), "{:?}", String::from_utf8_lossy(&data));
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&data));
        }
    }

    #[test]
    fn bad_chunk_syntax_is_refused() {
        for data in [&b"x\r\n"[..], b"\r\n", b"5\r\nhelloX\r\n", b"fffffffffffffffff\r\n", b";ext\r\n"] {
            assert_eq!(end(data, data.len()), Err(Malformed), "{:?}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn lengths_count_down() {
        let mut body = Body::Length(7);
        assert_eq!(body.take(b"abcd"), Ok((4, false)));
        assert_eq!(body.take(b"efgHTTP"), Ok((3, true)));
        assert!(body.is_done());
        assert_eq!(Body::UntilClose.take(b"all of it"), Ok((9, false)));
    }

    #[test]
    fn content_lengths_are_digits_only() {
        assert_eq!(content_length(b"42"), Some(42));
        assert_eq!(content_length(b" 7 "), Some(7));
        assert_eq!(content_length(b"5, 5"), Some(5));
        assert_eq!(content_length(b"5,5,5"), Some(5));
        for bad in [&b"+5"[..], b"-1", b"", b"5 5", b"0x10", b"1e3", b"99999999999999999999999", b"5, 6", b"5,", b",5"]
        {
            assert_eq!(content_length(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn absolute_form_splits_authority_and_path() {
        let split = |t: &str| absolute_form(t.as_bytes()).map(|(a, p)| (a.to_vec(), String::from_utf8(p).unwrap()));
        assert_eq!(split("http://shop.test/a?b"), Some((b"shop.test".to_vec(), "/a?b".into())));
        assert_eq!(split("HTTPS://Shop.Test:8443"), Some((b"Shop.Test:8443".to_vec(), "/".into())));
        assert_eq!(split("http://shop.test?q=1"), Some((b"shop.test".to_vec(), "/?q=1".into())));
        assert_eq!(split("http://shop.test/a#frag"), Some((b"shop.test".to_vec(), "/a".into())));
        for other in ["/a", "*", "shop.test:443", "ftp://shop.test/", "http://user@shop.test/", "http:///a", "http:/x"]
        {
            assert_eq!(split(other), None, "{other}");
        }
    }
}
