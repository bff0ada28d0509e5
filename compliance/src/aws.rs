//! AWS load balancer access logs: Application Load Balancer (`alb`) and
//! Classic Load Balancer (`elb`) lines, as AWS documents their fields:
//! space-separated, with the request line and the User-Agent quoted.
//!
//! ALB: `type time elb client:port target:port request_processing_time
//! target_processing_time response_processing_time elb_status_code
//! target_status_code received_bytes sent_bytes "request" "user_agent" …`.
//! Classic: the same from `time` on, with `backend` for `target`. Classic
//! logs written before AWS added the User-Agent and TLS fields end after
//! the quoted request: read, with no User-Agent (so no crawler).

use std::borrow::Cow;
use std::net::IpAddr;

use crate::line::{Entry, Skip};

/// Which load balancer wrote the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balancer {
    /// Application Load Balancer (its lines start with the request type).
    Application,
    /// Classic Load Balancer.
    Classic,
}

/// The line's fields: space-separated, a quoted field decoded as one.
fn fields(line: &str) -> Result<Vec<Cow<'_, [u8]>>, Skip> {
    let mut out = Vec::with_capacity(24);
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if let Some(body) = rest.strip_prefix('"') {
            let (value, after) = crate::line::quoted_body(body)
                .ok_or_else(|| Skip::Malformed("a quoted field never ends: the line is cut short".to_string()))?;
            out.push(value);
            rest = after.trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(Cow::Borrowed(&rest.as_bytes()[..end]));
            rest = rest[end..].trim_start();
        }
    }
    Ok(out)
}

/// `ip:port` (or `[v6]:port`) to the address.
fn address(field: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(field).ok()?;
    if let Some(v6) = text.strip_prefix('[') {
        return v6.split_once(']')?.0.parse().ok();
    }
    match text.parse() {
        Ok(ip) => Some(ip),
        Err(_) => text.rsplit_once(':')?.0.parse().ok(),
    }
}

/// Reads one line.
pub fn read(line: &[u8], balancer: Balancer) -> Result<Entry, Skip> {
    let malformed = |why: &str| Skip::Malformed(why.to_string());
    let text = String::from_utf8_lossy(line);
    let f = fields(&text)?;
    // Where `time` stands: the ALB's lines lead with the request type.
    let base = match balancer {
        Balancer::Application => 1,
        Balancer::Classic => 0,
    };
    let fewest = match balancer {
        Balancer::Application => base + 13,
        Balancer::Classic => base + 12,
    };
    if f.len() < fewest {
        return Err(malformed("too few fields for a load balancer line: the line is cut short"));
    }
    let time = String::from_utf8_lossy(&f[base]);
    let at_ms = crate::line::rfc3339(&time).ok_or_else(|| malformed("the time is not RFC 3339"))?;
    let client = address(&f[base + 2]).ok_or_else(|| malformed("the client is not ip:port"))?;
    let status: u16 = String::from_utf8_lossy(&f[base + 7]).parse().map_err(|_| malformed("no status"))?;
    // A request the balancer could not read is logged as `"- - - "`.
    let (method, target) = crate::line::request_line(&f[base + 11])?;
    let user_agent = match f.get(base + 12).map(|ua| &**ua) {
        None | Some(b"-") => String::new(),
        Some(ua) => String::from_utf8_lossy(ua).into_owned(),
    };
    // The request is in absolute form: its host is the site's.
    Ok(Entry { at_ms, client, method, target, status, user_agent, host: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    #[test]
    fn application_and_classic_lines() {
        let alb = format!(
            r#"https 2026-11-25T10:00:00.123456Z app/shop-lb/50dc6c495c0c9188 66.249.66.1:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET https://shop.example:443/a?b=1 HTTP/1.1" "{UA}" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/shop/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "shop.example" "arn:aws:acm:us-east-2:123456789012:certificate/12345678" 0 2026-11-25T10:00:00.120000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-""#
        );
        let e = read(alb.as_bytes(), Balancer::Application).unwrap();
        assert_eq!((e.at_ms, e.client.to_string().as_str(), e.status), (1_795_600_800_123, "66.249.66.1", 200));
        assert_eq!((e.target.as_slice(), e.user_agent.as_str()), (b"https://shop.example:443/a?b=1".as_slice(), UA));
        let elb = format!(
            r#"2026-11-25T10:00:00.5Z shop-lb [2001:db8::7]:2817 10.0.0.1:80 0.000073 0.001048 0.000057 404 404 0 29 "GET http://shop.example:80/x HTTP/1.1" "{UA}" - -"#
        );
        let e = read(elb.as_bytes(), Balancer::Classic).unwrap();
        assert_eq!((e.client.to_string().as_str(), e.status, e.at_ms), ("2001:db8::7", 404, 1_795_600_800_500));
        // A Classic line from before the User-Agent and TLS fields: read,
        // with no User-Agent.
        let old = r#"2014-02-15T23:39:43.945958Z my-test-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1""#;
        let e = read(old.as_bytes(), Balancer::Classic).unwrap();
        assert_eq!(
            (e.status, e.user_agent.as_str(), e.target.as_slice()),
            (200, "", b"http://www.example.com:80/".as_slice())
        );
        assert!(matches!(read(&old.as_bytes()[..90], Balancer::Classic), Err(Skip::Malformed(_))));
        // What the balancer could not read, and lines cut short.
        let unread = alb.replace("GET https://shop.example:443/a?b=1 HTTP/1.1", "- - - ");
        assert_eq!(read(unread.as_bytes(), Balancer::Application), Err(Skip::NotHttp));
        assert!(matches!(read(&alb.as_bytes()[..120], Balancer::Application), Err(Skip::Malformed(_))));
        assert!(matches!(read(&alb.as_bytes()[..200], Balancer::Application), Err(Skip::Malformed(_))));
    }
}
