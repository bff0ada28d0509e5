//! An origin's response head on the own path: parsed once, judged (what
//! may be relayed, how its body ends), and written afresh for the client
//! over HTTP/1.1 or as an HTTP/2 head.

use super::*;

/// One look at what the origin sent so far: the response head's length
/// once it is complete, `None` while more may come, or the failure of a
/// head past 64 KiB or malformed.
pub(super) fn parse_head<'b>(
    resp: &mut httparse::Response<'_, 'b>,
    from_origin: &'b [u8],
    addr: std::net::SocketAddr,
) -> Result<Option<usize>, Failure> {
    match resp.parse(from_origin) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) if from_origin.len() <= MAX_RESPONSE_HEAD => Ok(None),
        Ok(httparse::Status::Partial) => Err(Failure::Origin(502, format!("{addr} sent a response head over 64 KiB"))),
        Err(e) => Err(Failure::Origin(502, format!("{addr} sent a malformed response head: {e}"))),
    }
}

/// What the gateway needs from an origin's response head.
pub(super) struct Response {
    pub(super) body: Body,
    /// The one `Content-Length` relayed, however the origin repeated it.
    pub(super) length: Option<u64>,
    /// The origin keeps the connection open after this response.
    pub(super) keep_alive: bool,
    /// Field names the response's `Connection` header lists: not relayed.
    pub(super) listed: Vec<String>,
    /// A transfer coding frames the body, so `Content-Length` is dropped.
    pub(super) coded: bool,
}

impl Response {
    /// A complete response head's status and framing; a 101 nobody asked
    /// for, or framing that cannot be read, is the origin's failure.
    pub(super) fn judge(
        resp: &httparse::Response<'_, '_>,
        head_only: bool,
        addr: std::net::SocketAddr,
    ) -> Result<(u16, Response), Failure> {
        let status = resp.code.unwrap_or(0);
        if status == 101 {
            return Err(Failure::Origin(502, format!("{addr} switched protocols unasked")));
        }
        Ok((status, Response::read(resp, head_only).map_err(|e| Failure::Origin(502, e))?))
    }

    pub(super) fn read(resp: &httparse::Response<'_, '_>, head_only: bool) -> Result<Response, String> {
        let status = resp.code.unwrap_or(0);
        let mut keep_alive = resp.version == Some(1);
        let (mut length, mut coding, mut listed) = (None, None, Vec::new());
        for f in resp.headers.iter() {
            if f.name.eq_ignore_ascii_case("connection") {
                for token in list(f.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if !token.is_empty() && !token.eq_ignore_ascii_case(b"keep-alive") {
                        listed.push(String::from_utf8_lossy(token).into_owned());
                    }
                }
            } else if f.name.eq_ignore_ascii_case("transfer-encoding") {
                coding = Some(f.value);
            } else if f.name.eq_ignore_ascii_case("content-length") {
                let n = content_length(f.value).ok_or_else(|| "a malformed Content-Length".to_string())?;
                if length.is_some_and(|l| l != n) {
                    return Err("conflicting Content-Length values".to_string());
                }
                length = Some(n);
            }
        }
        let last_coding = coding.and_then(|c| list(c).last());
        let chunked = last_coding.is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
        let body = if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
            Body::Length(0)
        } else if chunked {
            Body::chunked()
        } else if coding.is_some() {
            Body::UntilClose
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            Body::UntilClose
        };
        keep_alive &= body != Body::UntilClose;
        Ok(Response { body, length, keep_alive, listed, coded: coding.is_some() })
    }

    /// Whether a field of the origin's head goes on to the client. Over
    /// HTTP/2, and to an HTTP/1.0 client, the body goes without its
    /// transfer coding (`decoded`), so the coding's field goes too.
    pub(super) fn relays(&self, name: &str, decoded: bool) -> bool {
        let coding = name.eq_ignore_ascii_case("transfer-encoding");
        !(hop_by_hop(name)
            // Written once after the fields; with a transfer coding the
            // length is the coding's (RFC 9112 section 6.3).
            || name.eq_ignore_ascii_case("content-length")
            || (coding && decoded)
            // Over HTTP/1.1 the body is relayed in its coding, so the
            // coding stays named.
            || (!coding && self.listed.iter().any(|l| l.eq_ignore_ascii_case(name))))
    }

    /// [`Response::head`] for an HTTP/2 stream: the status and the fields
    /// the client gets, which must be valid HTTP/2 fields.
    pub(super) fn head_h2(
        &self,
        resp: &httparse::Response<'_, '_>,
        usage: Option<&str>,
    ) -> Result<http::Response<()>, String> {
        let mut out = http::Response::new(());
        *out.status_mut() = http::StatusCode::from_u16(resp.code.unwrap_or(0)).map_err(|e| e.to_string())?;
        // Room for every field and the two added: growing the map as it
        // fills cost a tenth of building it.
        *out.headers_mut() = http::HeaderMap::with_capacity(resp.headers.len() + 2);
        let fields = out.headers_mut();
        for f in resp.headers.iter() {
            if self.relays(f.name, true) {
                let (name, value) = self::fields::convert(f.name, f.value)?;
                fields.append(name, value);
            }
        }
        if let Some(n) = self.length.filter(|_| !self.coded) {
            fields.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(n));
        }
        if let Some(usage) = usage
            && !fields.contains_key("content-usage")
            && let Ok(value) = http::HeaderValue::from_str(usage)
        {
            fields.insert(http::HeaderName::from_static("content-usage"), value);
        }
        Ok(out)
    }

    /// The head relayed to the client: HTTP/1.1, connection fields dropped;
    /// `usage` is the site's AI policy's `Content-Usage`, added unless the
    /// origin sent its own. Written over `out`, whose allocation a
    /// connection keeps from one response to the next.
    pub(super) fn head(
        &self,
        resp: &httparse::Response<'_, '_>,
        close: bool,
        usage: Option<&str>,
        decoded: bool,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        let _ = write!(out, "HTTP/1.1 {} ", resp.code.unwrap_or(0));
        out.extend_from_slice(resp.reason.unwrap_or("").as_bytes());
        out.extend_from_slice(b"\r\n");
        for f in resp.headers.iter() {
            if self.relays(f.name, decoded) {
                push_field(out, f.name, f.value);
            }
        }
        if let Some(n) = self.length.filter(|_| !self.coded) {
            push_field(out, "Content-Length", n.to_string().as_bytes());
        }
        if let Some(usage) = usage
            && !resp.headers.iter().any(|f| f.name.eq_ignore_ascii_case("content-usage"))
        {
            push_field(out, "Content-Usage", usage.as_bytes());
        }
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
}
