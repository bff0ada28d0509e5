//! The pieces every access-log reader is built from: the [`Entry`] a line
//! gives, why a line gives none ([`Skip`]), and the fields servers write
//! alike: quoted values with their escapes, the request line, and the
//! times (`10/Oct/2000:13:55:36 -0700`, RFC 3339). `log`, `layout`, `w3c`
//! and `aws` read their formats with them; none of them reads another.

use std::net::IpAddr;

/// One request, as a log line records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// The client address.
    pub client: IpAddr,
    /// The method.
    pub method: String,
    /// The request target as sent (origin form, or absolute form).
    pub target: Vec<u8>,
    /// The response status.
    pub status: u16,
    /// The User-Agent (empty when the format has none).
    pub user_agent: String,
    /// The host, when the format records it.
    pub host: Option<String>,
}

/// Why a line gives no entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// A request that is no HTTP request line: counted apart.
    NotHttp,
    /// Not a line of the format: counted and sampled with its line number.
    Malformed(String),
}

/// A line that is not of the format, and why.
pub(crate) fn malformed(why: &str) -> Skip {
    Skip::Malformed(why.to_string())
}

/// A quoted field after its opening quote: its bytes with the escapes
/// servers write decoded, and what follows its closing quote.
pub(crate) fn quoted_body(body: &str) -> Option<(std::borrow::Cow<'_, [u8]>, &str)> {
    let end = body.find(['"', '\\'])?;
    let bytes = body.as_bytes();
    if bytes[end] == b'"' {
        return Some((std::borrow::Cow::Borrowed(&bytes[..end]), &body[end + 1..]));
    }
    let mut out = bytes[..end].to_vec();
    let mut i = end;
    while let Some(&b) = bytes.get(i) {
        match b {
            // An ASCII byte: the slice after it starts on a character.
            b'"' => return Some((std::borrow::Cow::Owned(out), &body[i + 1..])),
            b'\\' => {
                let escaped = *bytes.get(i + 1)?;
                let hex = bytes.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
                match (escaped, hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
                    (b'x', Some(byte)) => {
                        out.push(byte);
                        i += 4;
                        continue;
                    }
                    (b'n', _) => out.push(b'\n'),
                    (b't', _) => out.push(b'\t'),
                    (b'r', _) => out.push(b'\r'),
                    (other, _) => out.push(other),
                }
                i += 2;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    None
}

/// `METHOD TARGET HTTP/x.y`, where the target is everything between the
/// first space and the last (a target with spaces is how nginx and Apache
/// log a request they answered 400, and how a scanner's requests look);
/// anything else is no HTTP request line. So is a request for no resource
/// of the site: `OPTIONS *`, `PRI * HTTP/2.0`, `CONNECT host:443`, and a
/// target with control bytes (the bytes of a TLS handshake sent to a plain
/// port).
pub(crate) fn request_line(request: &[u8]) -> Result<(String, Vec<u8>), Skip> {
    let first = request.iter().position(|&b| b == b' ').ok_or(Skip::NotHttp)?;
    let last = request.iter().rposition(|&b| b == b' ').ok_or(Skip::NotHttp)?;
    if last <= first + 1 {
        return Err(Skip::NotHttp);
    }
    let (method, target, version) = (&request[..first], &request[first + 1..last], &request[last + 1..]);
    let token = !method.is_empty() && method.iter().all(|&b| b.is_ascii_uppercase() || b == b'-' || b == b'_');
    if !token || !version.starts_with(b"HTTP/") || !names_a_resource(target) {
        return Err(Skip::NotHttp);
    }
    Ok((String::from_utf8_lossy(method).into_owned(), target.to_vec()))
}

/// Whether a request target names a resource of a site: origin form
/// (`/path`) or absolute form (`http://host/path`), with no control bytes.
/// `*` (`OPTIONS *`, `PRI *`) and authority form (`CONNECT host:443`) do not.
pub(crate) fn names_a_resource(target: &[u8]) -> bool {
    let absolute = |scheme: &[u8]| target.len() > scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme);
    let resource = target.first() == Some(&b'/') || absolute(b"http://") || absolute(b"https://");
    resource && !target.iter().any(|&b| b < 0x20 || b == 0x7f)
}

/// `10/Oct/2000:13:55:36 -0700` as Unix milliseconds.
pub(crate) fn clf_time(s: &str) -> Option<i64> {
    let (date, zone) = s.split_once(' ')?;
    let mut p = date.split([':', '/']);
    let day: i64 = p.next()?.parse().ok()?;
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| Some(*m) == p.clone().next())? as i64
        + 1;
    p.next();
    let year: i64 = p.next()?.parse().ok()?;
    let (h, m, sec): (i64, i64, i64) = (p.next()?.parse().ok()?, p.next()?.parse().ok()?, p.next()?.parse().ok()?);
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let zh: i64 = zone.get(1..3)?.parse().ok()?;
    let zm: i64 = zone.get(3..5)?.parse().ok()?;
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + h * 3600 + m * 60 + sec - sign * (zh * 3600 + zm * 60);
    Some(secs * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// RFC 3339 text as Unix ms, for callers outside the readers.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    rfc3339(s)
}

/// RFC 3339 text (`2026-11-25T10:00:00.123Z`, `…+01:00`) as Unix ms.
pub(crate) fn rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    let mut i = 19;
    let mut ms = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let frac = &s[start..i];
        ms = format!("{:0<3}", &frac[..frac.len().min(3)]).parse().ok()?;
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' => 0,
        b'+' | b'-' => {
            let sign = if b[i] == b'+' { 1 } else { -1 };
            // `+01:00`, or `+0100` as strftime's %z writes it.
            let minutes = if b.get(i + 3) == Some(&b':') { n(i + 4..i + 6)? } else { n(i + 3..i + 5)? };
            sign * (n(i + 1..i + 3)? * 3600 + minutes * 60)
        }
        _ => return None,
    };

    Some((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset) * 1000 + ms)
}
