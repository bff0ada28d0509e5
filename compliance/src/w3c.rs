//! W3C extended log files: IIS's, and Amazon CloudFront's standard logs.
//! A file names its own fields in a `#Fields:` directive, which may change
//! within the file, so the reader keeps the latest one ([`Directives`]).
//! Fields are separated by spaces (IIS, which writes a space inside a
//! value as `+`) or tabs (CloudFront, which percent-encodes values).

use std::net::IpAddr;

use crate::line::{Entry, Skip};

/// Where each field the judgement needs stands, from `#Fields:`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    count: usize,
    date: Option<usize>,
    time: Option<usize>,
    client: Option<usize>,
    method: Option<usize>,
    stem: Option<usize>,
    query: Option<usize>,
    status: Option<usize>,
    user_agent: Option<usize>,
    host: Option<usize>,
}

/// CloudFront's standard log fields, in the order AWS documents them: what
/// a CloudFront file pasted or concatenated without its `#Fields:` line has.
pub const CLOUDFRONT_FIELDS: &str = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end";

impl Directives {
    /// The fields of [`CLOUDFRONT_FIELDS`].
    pub fn cloudfront() -> Directives {
        let mut d = Directives::default();
        d.directive(CLOUDFRONT_FIELDS.as_bytes());
        d
    }

    /// Reads a directive line (`#…`); true when it was `#Fields:`.
    pub fn directive(&mut self, line: &[u8]) -> bool {
        let text = String::from_utf8_lossy(line);
        let Some(names) = text.strip_prefix("#Fields:") else { return false };
        *self = Directives::default();
        for (i, name) in names.split_whitespace().enumerate() {
            let slot = match name.to_ascii_lowercase().as_str() {
                "date" => &mut self.date,
                "time" => &mut self.time,
                "c-ip" => &mut self.client,
                "cs-method" => &mut self.method,
                "cs-uri-stem" => &mut self.stem,
                "cs-uri-query" => &mut self.query,
                "sc-status" => &mut self.status,
                "cs(user-agent)" => &mut self.user_agent,
                "cs-host" | "cs(host)" | "x-host-header" => &mut self.host,
                _ => {
                    self.count = i + 1;
                    continue;
                }
            };
            *slot = Some(i);
            self.count = i + 1;
        }
        true
    }

    /// Reads one line under the latest `#Fields:`.
    pub fn read(&self, line: &[u8]) -> Result<Entry, Skip> {
        let malformed = |why: &str| Skip::Malformed(why.to_string());
        if self.count == 0 {
            return Err(malformed("no #Fields: directive before this line"));
        }
        let text = String::from_utf8_lossy(line);
        let values: Vec<&str> =
            if text.contains('\t') { text.split('\t').collect() } else { text.split(' ').collect() };
        if values.len() < self.count {
            return Err(malformed("fewer fields than #Fields: names: the line is cut short"));
        }
        let get = |slot: Option<usize>| slot.and_then(|i| values.get(i).copied()).filter(|v| *v != "-");
        let (date, time) = (get(self.date).unwrap_or_default(), get(self.time).unwrap_or_default());
        // W3C times are UTC.
        let at_ms = crate::line::rfc3339(&format!("{date}T{time}Z")).ok_or_else(|| malformed("no date and time"))?;
        let client: IpAddr = get(self.client)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| malformed("the client is not an IP address"))?;
        let method = get(self.method).ok_or(Skip::NotHttp)?.to_string();
        let mut target = decoded(get(self.stem).ok_or(Skip::NotHttp)?);
        if let Some(q) = get(self.query) {
            target.push(b'?');
            target.extend_from_slice(q.as_bytes());
        }
        if !crate::line::names_a_resource(&target) {
            return Err(Skip::NotHttp);
        }
        let status: u16 = get(self.status).and_then(|s| s.parse().ok()).ok_or_else(|| malformed("no status"))?;
        let user_agent =
            get(self.user_agent).map(|u| String::from_utf8_lossy(&decoded(&u.replace('+', " "))).into_owned());
        let host = get(self.host).map(str::to_string);
        Ok(Entry { at_ms, client, method, target, status, user_agent: user_agent.unwrap_or_default(), host })
    }
}

/// A value with its percent-escapes decoded, twice where CloudFront
/// encoded a `%` again (`%2520`).
fn decoded(value: &str) -> Vec<u8> {
    let once = unescape(value.as_bytes());
    if once.windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
        && value.contains("%25")
    {
        unescape(&once)
    } else {
        once
    }
}

fn unescape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iis_lines() {
        let mut d = Directives::default();
        assert!(!d.directive(b"#Software: Microsoft Internet Information Services 10.0"));
        assert!(d.directive(
            b"#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken"
        ));
        let e = d
            .read(b"2026-11-25 10:00:00 10.0.0.5 GET /a/b.aspx id=5 443 - 66.249.66.1 Mozilla/5.0+(compatible;+Googlebot/2.1;++http://www.google.com/bot.html) - 200 0 0 15")
            .unwrap();
        assert_eq!((e.at_ms, e.target.as_slice(), e.status), (1_795_600_800_000, b"/a/b.aspx?id=5".as_slice(), 200));
        assert!(e.user_agent.starts_with("Mozilla/5.0 (compatible; Googlebot/2.1;"), "{}", e.user_agent);
        assert!(matches!(d.read(b"2026-11-25 10:00:00 10.0.0.5 GET /a"), Err(Skip::Malformed(_))));
        assert!(matches!(Directives::default().read(b"2026-11-25 10:00:00"), Err(Skip::Malformed(_))));
    }

    #[test]
    fn cloudfront_lines() {
        let mut d = Directives::default();
        d.directive(b"#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken");
        let line = "2026-11-25\t10:00:00\tFRA56-C1\t2390\t66.249.66.1\tGET\td111111abcdef8.cloudfront.net\t/caf%C3%A9\t200\t-\tMozilla/5.0%2520(compatible;%2520Googlebot/2.1)\t-\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==\tshop.example\thttps\t420\t0.003";
        let e = d.read(line.as_bytes()).unwrap();
        assert_eq!(e.target, "/café".as_bytes());
        assert_eq!(e.user_agent, "Mozilla/5.0 (compatible; Googlebot/2.1)");
        assert_eq!(e.host.as_deref(), Some("shop.example"), "x-host-header names the site, not the distribution");
    }
}
