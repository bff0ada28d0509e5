//! A log layout a server's own configuration defines: the text of an nginx
//! `log_format` or an Apache `LogFormat`, pasted as it is, read into the
//! facts a judgement needs. Custom layouts are the most common case in the
//! wild (`$request_time` before the status, the `X-Forwarded-For` address
//! first, a virtual host in front), and Apache's `vhost_combined`
//! (Debian's `other_vhosts_access.log`) is one of them.
//!
//! A layout is literal text and fields. A line is read left to right: each
//! literal must stand where the layout puts it, and each field runs to the
//! next literal; a field between double quotes runs to the closing quote,
//! with the servers' escapes (`\"`, `\\`, `\xHH`) decoded. Fields the
//! judgement does not need are read past.

use std::net::IpAddr;

use crate::line::{Entry, Skip};

/// What a field of a layout holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// The client address (`$remote_addr`, `%h`, `%a`).
    Client,
    /// The `X-Forwarded-For` list (`$http_x_forwarded_for`,
    /// `%{X-Forwarded-For}i`): its first address is the client's, when the
    /// layout logs it.
    Forwarded,
    /// `10/Oct/2000:13:55:36 -0700` (`$time_local`), or the same in
    /// brackets (`%t`).
    TimeLocal,
    /// RFC 3339 (`$time_iso8601`).
    TimeIso,
    /// Unix seconds with milliseconds (`$msec`).
    Msec,
    /// The request line (`$request`, `%r`).
    Request,
    /// The method (`$request_method`, `%m`).
    Method,
    /// Path and query as sent (`$request_uri`).
    Uri,
    /// The path alone (`$uri`, `%U`).
    Path,
    /// The query: `args` without `?` (`$args`), or `%q` with it.
    Query,
    /// The status (`$status`, `%>s`, `%s`).
    Status,
    /// The User-Agent (`$http_user_agent`, `%{User-Agent}i`).
    UserAgent,
    /// The host (`$host`, `$http_host`, `$server_name`, `%v`, `%V`,
    /// `%{Host}i`).
    Host,
    /// Anything else: read past.
    Other,
}

/// One piece of a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Literal(String),
    Field(Var),
}

/// A parsed layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    items: Vec<Item>,
}

fn nginx_var(name: &str) -> Var {
    match name {
        "remote_addr" | "realip_remote_addr" => Var::Client,
        "http_x_forwarded_for" | "proxy_add_x_forwarded_for" => Var::Forwarded,
        "time_local" => Var::TimeLocal,
        "time_iso8601" => Var::TimeIso,
        "msec" => Var::Msec,
        "request" => Var::Request,
        "request_method" => Var::Method,
        "request_uri" => Var::Uri,
        "uri" | "document_uri" => Var::Path,
        "args" | "query_string" => Var::Query,
        "status" => Var::Status,
        "http_user_agent" => Var::UserAgent,
        "host" | "http_host" | "server_name" => Var::Host,
        _ => Var::Other,
    }
}

fn apache_var(directive: char, argument: Option<&str>) -> Result<Var, String> {
    let header = |h: &str| argument.is_some_and(|a| a.eq_ignore_ascii_case(h));
    Ok(match directive {
        'h' | 'a' => Var::Client,
        't' if argument.is_none() => Var::TimeLocal,
        't' => return Err(format!("`%{{{}}}t`: only `%t`'s time is read", argument.unwrap_or(""))),
        'r' => Var::Request,
        'm' => Var::Method,
        'U' => Var::Path,
        'q' => Var::Query,
        's' => Var::Status,
        'v' | 'V' => Var::Host,
        'i' if header("User-Agent") => Var::UserAgent,
        'i' if header("X-Forwarded-For") => Var::Forwarded,
        'i' if header("Host") => Var::Host,
        _ => Var::Other,
    })
}

impl Layout {
    /// An nginx `log_format` (without its name): `$remote_addr - … "$request" …`.
    ///
    /// ```
    /// use robotsgate_compliance::layout::Layout;
    /// let l = Layout::nginx(r#"$http_x_forwarded_for - [$time_local] $request_time "$request" $status "$http_user_agent""#).unwrap();
    /// let e = l.read(br#"66.249.66.1 - [25/Nov/2026:10:00:00 +0000] 0.004 "GET /a HTTP/1.1" 200 "Googlebot/2.1""#).unwrap();
    /// assert_eq!((e.client.to_string().as_str(), e.target.as_slice(), e.status), ("66.249.66.1", b"/a".as_slice(), 200));
    /// ```
    pub fn nginx(text: &str) -> Result<Layout, String> {
        let mut items = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '$' {
                literal.push(c);
                continue;
            }
            let braced = chars.peek() == Some(&'{');
            if braced {
                chars.next();
            }
            let mut name = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_ascii_alphanumeric() || n == '_' {
                    name.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            if braced && chars.next() != Some('}') {
                return Err(format!("`${{{name}`: no closing brace"));
            }
            if name.is_empty() {
                literal.push('$');
                continue;
            }
            push_field(&mut items, &mut literal, nginx_var(&name))?;
        }
        Layout::finish(items, literal)
    }

    /// An Apache `LogFormat` (without its nickname): `%h %l %u %t "%r" %>s %b`.
    pub fn apache(text: &str) -> Result<Layout, String> {
        let mut items = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            // Modifiers: `<`, `>`, `!`, status lists (`%400,501{…}i`).
            while chars.peek().is_some_and(|m| matches!(m, '<' | '>' | '!' | ',') || m.is_ascii_digit()) {
                chars.next();
            }
            let argument = if chars.peek() == Some(&'{') {
                chars.next();
                let mut a = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => a.push(ch),
                        None => return Err(format!("`%{{{a}`: no closing brace")),
                    }
                }
                Some(a)
            } else {
                None
            };
            match chars.next() {
                Some('%') => literal.push('%'),
                Some(directive) => push_field(&mut items, &mut literal, apache_var(directive, argument.as_deref())?)?,
                None => return Err("a `%` ends the format".to_string()),
            }
        }
        Layout::finish(items, literal)
    }

    /// Apache's `vhost_combined`, Debian's `other_vhosts_access.log`.
    pub fn vhost_combined() -> Layout {
        Layout::apache(r#"%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i""#)
            .unwrap_or(Layout { items: Vec::new() })
    }

    fn finish(mut items: Vec<Item>, literal: String) -> Result<Layout, String> {
        if !literal.is_empty() {
            items.push(Item::Literal(literal));
        }
        let has = |v: Var| items.contains(&Item::Field(v));
        if !has(Var::Client) && !has(Var::Forwarded) {
            return Err("the layout logs no client address ($remote_addr, %h)".to_string());
        }
        if !has(Var::TimeLocal) && !has(Var::TimeIso) && !has(Var::Msec) {
            return Err("the layout logs no time ($time_local, $time_iso8601, $msec, %t)".to_string());
        }
        if !has(Var::Request) && !(has(Var::Method) && (has(Var::Uri) || has(Var::Path))) {
            return Err("the layout logs no request ($request, or $request_method and $request_uri; %r)".to_string());
        }
        if !has(Var::Status) {
            return Err("the layout logs no status ($status, %>s)".to_string());
        }
        Ok(Layout { items })
    }

    /// Reads one line (without its line end).
    pub fn read(&self, line: &[u8]) -> Result<Entry, Skip> {
        let text = String::from_utf8_lossy(line);
        let mut rest: &str = &text;
        let mut got = Got::default();
        let mut quoted_next = false;
        for (i, item) in self.items.iter().enumerate() {
            match item {
                Item::Literal(l) => {
                    rest = rest.strip_prefix(l.as_str()).ok_or_else(|| {
                        let at = text.len() - rest.len() + 1;
                        Skip::Malformed(format!("does not fit the layout at column {at}: expected `{}`", l.trim()))
                    })?;
                    quoted_next = l.ends_with('"');
                }
                Item::Field(var) => {
                    let (value, after) = if quoted_next {
                        let (value, after) = crate::line::quoted_body(rest).ok_or_else(|| {
                            Skip::Malformed("a quoted field never ends: the line is cut short".to_string())
                        })?;
                        // The closing quote is the next literal's to match.
                        (value, &rest[rest.len() - after.len() - 1..])
                    } else if *var == Var::TimeLocal && rest.starts_with('[') {
                        let end = rest.find(']').ok_or_else(|| Skip::Malformed("no ] after the time".to_string()))?;
                        (std::borrow::Cow::Borrowed(&rest.as_bytes()[1..end]), &rest[end + 1..])
                    } else {
                        let end = match self.items.get(i + 1) {
                            Some(Item::Literal(next)) => rest.find(next.as_str()).unwrap_or(rest.len()),
                            _ => rest.len(),
                        };
                        (std::borrow::Cow::Borrowed(&rest.as_bytes()[..end]), &rest[end..])
                    };
                    // A field the judgement does not need is read past, not copied.
                    if *var != Var::Other {
                        got.set(*var, value.into_owned());
                    }
                    rest = after;
                    quoted_next = false;
                }
            }
        }
        got.entry()
    }
}

/// Appends a field, refusing two fields with no text between them: where
/// one ends could not be told.
fn push_field(items: &mut Vec<Item>, literal: &mut String, var: Var) -> Result<(), String> {
    if literal.is_empty() && matches!(items.last(), Some(Item::Field(_))) {
        return Err("two fields with nothing between them: where the first ends cannot be told".to_string());
    }
    if !literal.is_empty() {
        items.push(Item::Literal(std::mem::take(literal)));
    }
    items.push(Item::Field(var));
    Ok(())
}

/// The fields a line gave.
#[derive(Default)]
struct Got {
    client: Option<Vec<u8>>,
    forwarded: Option<Vec<u8>>,
    time: Option<Option<i64>>,
    request: Option<Vec<u8>>,
    method: Option<Vec<u8>>,
    uri: Option<Vec<u8>>,
    path: Option<Vec<u8>>,
    query: Option<Vec<u8>>,
    status: Option<Vec<u8>>,
    user_agent: Option<Vec<u8>>,
    host: Option<Vec<u8>>,
}

/// `-` is how both servers log an empty field.
fn present(v: &[u8]) -> Option<&[u8]> {
    (v != b"-" && !v.is_empty()).then_some(v)
}

impl Got {
    fn set(&mut self, var: Var, value: Vec<u8>) {
        let text = || String::from_utf8_lossy(&value).into_owned();
        match var {
            Var::Client => self.client = Some(value),
            Var::Forwarded => self.forwarded = Some(value),
            Var::TimeLocal => self.time = Some(crate::line::clf_time(&text())),
            Var::TimeIso => self.time = Some(crate::line::rfc3339(&text())),
            Var::Msec => self.time = Some(text().parse::<f64>().ok().map(|s| (s * 1000.0).round() as i64)),
            Var::Request => self.request = Some(value),
            Var::Method => self.method = Some(value),
            Var::Uri => self.uri = Some(value),
            Var::Path => self.path = Some(value),
            Var::Query => self.query = Some(value),
            Var::Status => self.status = Some(value),
            Var::UserAgent => self.user_agent = Some(value),
            Var::Host => self.host = Some(value),
            Var::Other => {}
        }
    }

    fn entry(self) -> Result<Entry, Skip> {
        let malformed = |why: &str| Skip::Malformed(why.to_string());
        let at_ms = self.time.flatten().ok_or_else(|| malformed("the time is not one the layout names"))?;
        // The first address of X-Forwarded-For is the client, when logged.
        let first_forwarded = self.forwarded.as_deref().and_then(present).and_then(|f| {
            let first = f.split(|&b| b == b',').next()?;
            String::from_utf8_lossy(first).trim().parse::<IpAddr>().ok()
        });
        let client = match first_forwarded {
            Some(ip) => ip,
            None => self
                .client
                .as_deref()
                .and_then(|c| String::from_utf8_lossy(c).parse::<IpAddr>().ok())
                .ok_or_else(|| malformed("the client is not an IP address"))?,
        };
        let (method, target) = match (&self.request, &self.method) {
            (Some(r), _) => match present(r) {
                Some(r) => crate::line::request_line(r)?,
                None => return Err(Skip::NotHttp),
            },
            (None, Some(m)) => {
                let mut target = self.uri.clone().or_else(|| self.path.clone()).unwrap_or_default();
                if self.uri.is_none()
                    && let Some(q) = self.query.as_deref().and_then(present)
                {
                    if q.first() != Some(&b'?') {
                        target.push(b'?');
                    }
                    target.extend_from_slice(q);
                }
                if !crate::line::names_a_resource(&target) {
                    return Err(Skip::NotHttp);
                }
                (String::from_utf8_lossy(m).into_owned(), target)
            }
            (None, None) => return Err(Skip::NotHttp),
        };
        let status: u16 = self
            .status
            .as_deref()
            .and_then(|s| String::from_utf8_lossy(s).parse().ok())
            .ok_or_else(|| malformed("no status"))?;
        let user_agent = self
            .user_agent
            .as_deref()
            .and_then(present)
            .map(|u| String::from_utf8_lossy(u).into_owned())
            .unwrap_or_default();
        let host = self.host.as_deref().and_then(present).map(|h| String::from_utf8_lossy(h).into_owned());
        Ok(Entry { at_ms, client, method, target, status, user_agent, host })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    #[test]
    fn vhost_combined_as_debian_writes_it() {
        let line = format!(
            r#"shop.example:443 66.249.66.1 - - [25/Nov/2026:10:00:00 +0000] "GET /caf\xC3\xA9 HTTP/1.1" 200 5316 "-" "{UA}""#
        );
        let e = Layout::vhost_combined().read(line.as_bytes()).unwrap();
        assert_eq!(e.host.as_deref(), Some("shop.example"));
        assert_eq!(e.target, "/café".as_bytes());
        assert_eq!((e.status, e.user_agent.as_str(), e.at_ms), (200, UA, 1_795_600_800_000));
    }

    #[test]
    fn an_nginx_layout_with_the_forwarded_address_first_and_a_request_time() {
        let l = Layout::nginx(
            r#"$http_x_forwarded_for $remote_addr [$time_local] $request_time "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $host"#,
        )
        .unwrap();
        let line = format!(
            r#"66.249.66.1, 10.0.0.2 10.0.0.9 [25/Nov/2026:10:00:00 +0000] 0.012 "GET /a b HTTP/1.1" 404 0 "-" "{UA}" shop.example"#
        );
        let e = l.read(line.as_bytes()).unwrap();
        assert_eq!(e.client.to_string(), "66.249.66.1", "the forwarded address");
        assert_eq!((e.target.as_slice(), e.status), (b"/a b".as_slice(), 404));
        assert_eq!(e.host.as_deref(), Some("shop.example"));
        // No forwarded address: the peer's.
        let line = line.replace("66.249.66.1, 10.0.0.2", "-");
        assert_eq!(l.read(line.as_bytes()).unwrap().client.to_string(), "10.0.0.9");
        // Cut short, and another shape.
        let cut = l.read(br#"- 10.0.0.9 [25/Nov/2026:10:00:00 +0000] 0.012 "GET / HTTP/1.1" 200 0 "-" "Moz"#);
        assert!(matches!(cut, Err(Skip::Malformed(_))), "{cut:?}");
        assert!(matches!(l.read(b"garbage"), Err(Skip::Malformed(_))));
    }

    #[test]
    fn method_and_uri_fields_and_iso_times() {
        let l = Layout::nginx(r#"$time_iso8601 $remote_addr $request_method $uri?$args $status "$http_user_agent""#)
            .unwrap();
        let e = l.read(br#"2026-11-25T10:00:00+00:00 2001:db8::1 GET /search?q=x 200 "GPTBot/1.1""#).unwrap();
        assert_eq!(
            (e.method.as_str(), e.target.as_slice(), e.at_ms),
            ("GET", b"/search?q=x".as_slice(), 1_795_600_800_000)
        );
        let apache = Layout::apache(r#"%a %t "%m %U%q %H" %>s "%{User-agent}i""#);
        assert!(apache.is_err(), "%U%q run together: cannot be split");
        let apache = Layout::apache(r#"%a %t %m %U %>s %D "%{User-agent}i""#).unwrap();
        let e = apache.read(br#"66.249.66.1 [25/Nov/2026:10:00:00 +0000] HEAD /x 301 1200 "Googlebot/2.1""#).unwrap();
        assert_eq!((e.method.as_str(), e.status, e.user_agent.as_str()), ("HEAD", 301, "Googlebot/2.1"));
    }

    #[test]
    fn layouts_that_cannot_be_read_are_refused_with_why() {
        assert!(Layout::nginx("$remote_addr $status").unwrap_err().contains("no time"));
        assert!(Layout::nginx("[$time_local] $status \"$request\"").unwrap_err().contains("no client"));
        assert!(Layout::apache("%h %{%d/%b}t \"%r\" %>s").unwrap_err().contains("only `%t`"));
        assert!(Layout::apache("%h %t \"%r\" %>s %{Referer").unwrap_err().contains("no closing brace"));
    }
}
