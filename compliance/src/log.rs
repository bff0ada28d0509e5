//! Access-log lines read into the facts a judgement needs: when, which
//! client, the method and target, the status, the User-Agent and, where
//! the format carries it, the host. Formats: nginx's and Apache's
//! `combined` and `common`, Caddy's JSON, and JSON lines with configurable
//! field names (CDN log exports).
//!
//! A line whose request is not an HTTP request line (`"-"`, the bytes of a
//! TLS handshake sent to a plain port, which nginx logs as `\x16\x03…`) is
//! [`Skip::NotHttp`], counted apart from lines that are not of the format
//! at all ([`Skip::Malformed`]). Neither stops an import.

pub use crate::line::{Entry, Skip, parse_rfc3339};
use crate::line::{clf_time, malformed, names_a_resource, quoted_body, request_line, rfc3339};
use std::net::IpAddr;

/// Field names for JSON-lines logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonFields {
    /// The time: RFC 3339 text, or Unix seconds (a number, fractions allowed).
    pub time: String,
    /// The client address.
    pub client: String,
    /// The method.
    pub method: String,
    /// The path and query (or the whole request target).
    pub target: String,
    /// The status.
    pub status: String,
    /// The User-Agent.
    pub user_agent: String,
    /// The host, if recorded.
    pub host: Option<String>,
}

impl Default for JsonFields {
    fn default() -> Self {
        JsonFields {
            time: "time".into(),
            client: "client_ip".into(),
            method: "method".into(),
            target: "uri".into(),
            status: "status".into(),
            user_agent: "user_agent".into(),
            host: Some("host".into()),
        }
    }
}

/// Every name `--format` and `logs[].format` take, for every surface that
/// lists them (`ingest --help`, errors, the console's hint).
pub const NAMES: [&str; 14] = [
    "combined",
    "common",
    "vhost_combined",
    "nginx",
    "apache",
    "caddy",
    "json",
    "cloudflare",
    "fastly",
    "w3c",
    "iis",
    "cloudfront",
    "alb",
    "elb",
];

/// A log format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// nginx's and Apache's `combined` (and `common`, which lacks the
    /// referrer and User-Agent: such a line has an empty User-Agent).
    Combined,
    /// Caddy's structured access log (`http.log.access`).
    Caddy,
    /// One JSON object a line, with these field names.
    Json(JsonFields),
    /// An AWS load balancer's access log (`alb`, `elb`).
    Balancer(crate::aws::Balancer),
    /// W3C extended (IIS, CloudFront): each file names its fields in
    /// `#Fields:` lines, which the importer reads with
    /// [`crate::w3c::Directives`]; until one comes, the fields given here
    /// apply (none for `w3c`/`iis`; CloudFront's documented order for
    /// `cloudfront`, as pasted or concatenated logs have no directives).
    W3c(crate::w3c::Directives),
    /// A layout of the server's own (`nginx`, `apache`) or a named one
    /// (`vhost_combined`).
    Layout {
        /// `nginx`, `apache` or `vhost_combined`.
        kind: &'static str,
        /// The layout.
        layout: crate::layout::Layout,
    },
}

impl Format {
    /// The format called `name` (`combined`, `common`, `caddy`, `json`),
    /// with JSON field names by key (`time`, `client`, `method`, `target`,
    /// `status`, `user_agent`, `host`).
    pub fn named<'a>(name: &str, fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Format, String> {
        Ok(match name {
            "combined" | "common" => Format::Combined,
            "caddy" => Format::Caddy,
            "json" => {
                let mut f = JsonFields::default();
                for (key, field) in fields {
                    let slot = match key {
                        "time" => &mut f.time,
                        "client" => &mut f.client,
                        "method" => &mut f.method,
                        "target" => &mut f.target,
                        "status" => &mut f.status,
                        "user_agent" => &mut f.user_agent,
                        "host" => {
                            f.host = Some(field.to_string());
                            continue;
                        }
                        other => {
                            return Err(format!(
                                "`{other}`: the keys are time, client, method, target, status, user_agent, host"
                            ));
                        }
                    };
                    *slot = field.to_string();
                }
                Format::Json(f)
            }
            "vhost_combined" => {
                Format::Layout { kind: "vhost_combined", layout: crate::layout::Layout::vhost_combined() }
            }
            "alb" => Format::Balancer(crate::aws::Balancer::Application),
            "elb" => Format::Balancer(crate::aws::Balancer::Classic),
            "w3c" | "iis" => Format::W3c(crate::w3c::Directives::default()),
            "cloudfront" => Format::W3c(crate::w3c::Directives::cloudfront()),
            // Cloudflare Logpush's HTTP requests dataset, with its own field names.
            "cloudflare" => Format::Json(JsonFields {
                time: "EdgeStartTimestamp".into(),
                client: "ClientIP".into(),
                method: "ClientRequestMethod".into(),
                target: "ClientRequestURI".into(),
                status: "EdgeResponseStatus".into(),
                user_agent: "ClientRequestUserAgent".into(),
                host: Some("ClientRequestHost".into()),
            }),
            // The JSON layout Fastly's log-streaming guides use.
            "fastly" => Format::Json(JsonFields {
                time: "timestamp".into(),
                client: "client_ip".into(),
                method: "request_method".into(),
                target: "url".into(),
                status: "response_status".into(),
                user_agent: "request_user_agent".into(),
                host: Some("host".into()),
            }),
            "nginx" | "apache" => {
                return Err(format!("`{name}`: give the server's own layout too (`layout:`, or --layout)"));
            }
            other => {
                return Err(format!("`{other}`: use one of {}", NAMES.join(", ")));
            }
        })
    }

    /// A layout of the server's own: `kind` is `nginx` (a `log_format`'s
    /// text) or `apache` (a `LogFormat`'s).
    pub fn with_layout(kind: &str, text: &str) -> Result<Format, String> {
        let layout = match kind {
            "nginx" => crate::layout::Layout::nginx(text),
            "apache" => crate::layout::Layout::apache(text),
            other => return Err(format!("`{other}` takes no layout: give `nginx` or `apache` with one")),
        }
        .map_err(|e| format!("the {kind} layout: {e}"))?;
        Ok(Format::Layout { kind: if kind == "nginx" { "nginx" } else { "apache" }, layout })
    }

    /// The format's name, as `--format` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Combined => "combined",
            Format::Caddy => "caddy",
            Format::Json(_) => "json",
            Format::Layout { kind, .. } => kind,
            Format::Balancer(crate::aws::Balancer::Application) => "alb",
            Format::Balancer(crate::aws::Balancer::Classic) => "elb",
            Format::W3c(d) if *d == crate::w3c::Directives::cloudfront() => "cloudfront",
            Format::W3c(_) => "w3c",
        }
    }

    /// Reads one line (without its line end).
    pub fn read(&self, line: &[u8]) -> Result<Entry, Skip> {
        match self {
            Format::Combined => combined(line),
            Format::Caddy => caddy(line),
            Format::Json(fields) => json_line(line, fields),
            Format::Layout { layout, .. } => layout.read(line),
            Format::Balancer(b) => crate::aws::read(line, *b),
            // Without the file's directives: only as the importer reads it.
            Format::W3c(assumed) => assumed.read(line),
        }
    }
}

/// `ADDR IDENT USER [TIME] "REQUEST" STATUS BYTES ["REFERER" "UA"]`.
fn combined(line: &[u8]) -> Result<Entry, Skip> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\r', '\n']);
    let (client, rest) = text.split_once(' ').ok_or_else(|| malformed("no client address"))?;
    let client: IpAddr = client.parse().map_err(|_| malformed("the client is not an IP address"))?;
    let open = rest.find('[').ok_or_else(|| malformed("no [time]"))?;
    let close = open + rest[open..].find(']').ok_or_else(|| malformed("no ] after the time"))?;
    let at_ms =
        clf_time(&rest[open + 1..close]).ok_or_else(|| malformed("the time is not dd/Mon/yyyy:hh:mm:ss +zzzz"))?;
    let rest = rest[close + 1..].trim_start();
    let (request, rest) = quoted(rest).ok_or_else(|| malformed("no quoted request"))?;
    let mut fields = rest.split_whitespace();
    let status: u16 = fields.next().and_then(|s| s.parse().ok()).ok_or_else(|| malformed("no status"))?;
    // The bytes sent, `-` for none: a line without them was cut short.
    let bytes = fields.next().ok_or_else(|| malformed("no byte count: the line is cut short"))?;
    if bytes != "-" && !bytes.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed("the byte count is not a number"));
    }
    // Bytes sent, then (combined) the quoted referrer and User-Agent. A
    // quote that opens and never closes is a line cut short.
    let cut = || malformed("a quoted field never ends: the line is cut short");
    let after_bytes = rest.trim_start().splitn(3, ' ').nth(2).unwrap_or("").trim_start();
    let user_agent = if after_bytes.starts_with('"') {
        let (_referer, more) = quoted(after_bytes).ok_or_else(cut)?;
        let more = more.trim_start();
        if more.starts_with('"') {
            let (ua, _) = quoted(more).ok_or_else(cut)?;
            String::from_utf8_lossy(&ua).into_owned()
        } else {
            // A referrer and then nothing: combined writes both quoted
            // fields, so the line ends where it was cut.
            return Err(malformed("a referrer with no User-Agent after it: the line is cut short"));
        }
    } else {
        String::new()
    };
    let (method, target) = request_line(&request)?;
    Ok(Entry { at_ms, client, method, target, status, user_agent, host: None })
}

/// A quoted field with nginx's and Apache's escapes decoded to the bytes
/// they stand for (`\"`, `\\`, `\xHH`, and Apache's `\n`, `\t`, `\r`),
/// and what follows it. Borrowed when the field holds no escape (almost
/// every field): a copy per field was a tenth of an import's time.
fn quoted(s: &str) -> Option<(std::borrow::Cow<'_, [u8]>, &str)> {
    quoted_body(s.strip_prefix('"')?)
}

fn json_time(v: &serde_json::Value) -> Option<i64> {
    match v {
        // Seconds, or (by magnitude) milliseconds, microseconds or
        // nanoseconds: Cloudflare's Logpush writes Unix nanoseconds by
        // default.
        serde_json::Value::Number(n) => n.as_f64().map(|t| {
            let ms = match t.abs() {
                a if a >= 1e17 => a / 1e6,
                a if a >= 1e14 => a / 1e3,
                a if a >= 1e11 => a,
                a => a * 1000.0,
            };
            (ms.round() as i64) * if t < 0.0 { -1 } else { 1 }
        }),
        serde_json::Value::String(s) => {
            rfc3339(s).or_else(|| s.parse::<f64>().ok().map(|s| (s * 1000.0).round() as i64))
        }
        _ => None,
    }
}

/// A field by a dotted path (`request.headers.User-Agent`).
fn field<'v>(v: &'v serde_json::Value, path: &str) -> Option<&'v serde_json::Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn text(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        // Caddy logs header values as lists.
        serde_json::Value::Array(a) => a.first().and_then(|x| x.as_str()).map(str::to_string),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn json_object(line: &[u8]) -> Result<serde_json::Value, Skip> {
    let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| Skip::Malformed(format!("not JSON: {e}")))?;
    if v.is_object() { Ok(v) } else { Err(malformed("not a JSON object")) }
}

fn entry(
    at: Option<i64>,
    client: Option<String>,
    method: Option<String>,
    target: Option<String>,
    status: Option<String>,
    user_agent: Option<String>,
    host: Option<String>,
) -> Result<Entry, Skip> {
    let at_ms = at.ok_or_else(|| malformed("no time"))?;
    let client = client.ok_or_else(|| malformed("no client address"))?;
    // `ip:port`, `[v6]:port` or a bare address.
    let bare = client.strip_prefix('[').and_then(|c| c.split_once(']')).map(|(a, _)| a.to_string());
    let client: IpAddr = match bare {
        Some(a) => a.parse(),
        None => client.parse().or_else(|_| client.rsplit_once(':').map_or(client.parse(), |(a, _)| a.parse())),
    }
    .map_err(|_| malformed("the client is not an IP address"))?;
    let method = method.ok_or(Skip::NotHttp)?;
    let target = target.filter(|t| names_a_resource(t.as_bytes())).ok_or(Skip::NotHttp)?;
    let status: u16 = status.and_then(|s| s.parse().ok()).ok_or_else(|| malformed("no status"))?;
    Ok(Entry {
        at_ms,
        client,
        method,
        target: target.into_bytes(),
        status,
        user_agent: user_agent.unwrap_or_default(),
        host,
    })
}

fn caddy(line: &[u8]) -> Result<Entry, Skip> {
    let v = json_object(line)?;
    let r = v.get("request").ok_or_else(|| malformed("no `request`"))?;
    entry(
        v.get("ts").and_then(json_time),
        // `remote_addr` (`ip:port`) is how Caddy up to 2.4 names the client.
        text(r.get("client_ip")).or_else(|| text(r.get("remote_ip"))).or_else(|| text(r.get("remote_addr"))),
        text(r.get("method")),
        text(r.get("uri")),
        text(v.get("status")),
        text(field(r, "headers.User-Agent")),
        text(r.get("host")),
    )
}

fn json_line(line: &[u8], f: &JsonFields) -> Result<Entry, Skip> {
    let v = json_object(line)?;
    entry(
        field(&v, &f.time).and_then(json_time),
        text(field(&v, &f.client)),
        text(field(&v, &f.method)),
        text(field(&v, &f.target)),
        text(field(&v, &f.status)),
        text(field(&v, &f.user_agent)),
        f.host.as_deref().and_then(|h| text(field(&v, h))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    #[test]
    fn escaped_fields_are_read_and_plain_ones_borrowed() {
        let line = r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET /a\"b HTTP/1.1" 200 5 "http://x/\"r\"" "Bot \"quoted\" \\ \x41/1.0""#;
        let e = Format::Combined.read(line.as_bytes()).unwrap();
        assert_eq!(e.target, b"/a\"b");
        assert_eq!(e.user_agent, r#"Bot "quoted" \ A/1.0"#);
        assert!(matches!(quoted(r#""plain" rest"#), Some((std::borrow::Cow::Borrowed(b"plain"), " rest"))));
        assert!(quoted(r#""unterminated"#).is_none());
        assert!(quoted(r#""ends in \"#).is_none());
    }

    #[test]
    fn combined_and_common() {
        let line = format!(r#"66.249.66.1 - - [25/Nov/2026:10:00:00 +0000] "GET /a?b=1 HTTP/1.1" 200 512 "-" "{UA}""#);
        let e = Format::Combined.read(line.as_bytes()).unwrap();
        assert_eq!(e.at_ms, 1_795_600_800_000);
        assert_eq!((e.method.as_str(), e.target.as_slice(), e.status), ("GET", b"/a?b=1".as_slice(), 200));
        assert_eq!(e.user_agent, UA);
        // The zone moves the instant.
        let shifted = Format::Combined
            .read(br#"66.249.66.1 - - [25/Nov/2026:11:00:00 +0100] "GET / HTTP/1.1" 200 1 "-" "x""#)
            .unwrap();
        assert_eq!(shifted.at_ms, e.at_ms);
        let common =
            Format::Combined.read(br#"::1 - bob [25/Nov/2026:10:00:00 +0000] "HEAD /x HTTP/1.0" 404 0"#).unwrap();
        assert_eq!(
            (common.client.to_string().as_str(), common.method.as_str(), common.user_agent.as_str()),
            ("::1", "HEAD", "")
        );
        // Escapes in quoted fields.
        let esc = Format::Combined
            .read(br#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET /q?x=\"y\" HTTP/1.1" 200 1 "-" "a \"quoted\" bot""#)
            .unwrap();
        assert_eq!((esc.target.as_slice(), esc.user_agent.as_str()), (br#"/q?x="y""#.as_slice(), r#"a "quoted" bot"#));
        let absolute = Format::Combined
            .read(br#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET http://other.example/x HTTP/1.1" 200 1 "-" "b""#)
            .unwrap();
        assert_eq!(absolute.target, b"http://other.example/x");
        // Cut after the referrer: malformed, not a request with no User-Agent.
        let cut = Format::Combined.read(br#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET /x HTTP/1.1" 200 7849 "-" "#);
        assert!(matches!(cut, Err(Skip::Malformed(ref why)) if why.contains("cut short")), "{cut:?}");
    }

    /// CloudFront logs pasted or concatenated without their directives are
    /// read in the field order AWS documents; `w3c` still needs `#Fields:`.
    #[test]
    fn cloudfront_without_its_directives() {
        let line = "2026-11-25\t10:00:00\tSEA19-C1\t2390\t66.249.66.1\tGET\td111111abcdef8.cloudfront.net\t/a%20b\t200\t-\tMozilla/5.0%20(compatible;%20Googlebot/2.1;%20+http://www.google.com/bot.html)\tq=1\t-\tHit\tSOX4x\tshop.example\thttps\t321\t0.003\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t11040\t0.003\tHit\ttext/html\t78\t-\t-";
        let cf = Format::named("cloudfront", []).unwrap();
        assert_eq!(cf.name(), "cloudfront");
        let e = cf.read(line.as_bytes()).unwrap();
        assert_eq!(
            (e.status, e.target.as_slice(), e.host.as_deref()),
            (200, b"/a b?q=1".as_slice(), Some("shop.example"))
        );
        assert!(e.user_agent.contains("Googlebot/2.1"), "{}", e.user_agent);
        assert!(Format::named("w3c", []).unwrap().read(line.as_bytes()).is_err());
    }

    #[test]
    fn not_http_is_apart_from_malformed() {
        for line in [
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "-" 400 0 "-" "-""#,
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03" 400 157 "-" "-""#,
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET /" 400 0 "-" "-""#,
        ] {
            assert_eq!(Format::Combined.read(line.as_bytes()), Err(Skip::NotHttp), "{line}");
        }
        for line in [
            "",
            "garbage",
            r#"not-an-ip - - [25/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-""#,
            r#"1.2.3.4 - - [25/Foo/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-""#,
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" abc 1 "-" "-""#,
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1"#,
            r#"1.2.3.4 - - [25/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200"#,
        ] {
            assert!(matches!(Format::Combined.read(line.as_bytes()), Err(Skip::Malformed(_))), "{line}");
        }
    }

    #[test]
    fn caddy_and_json_lines() {
        let caddy = br#"{"level":"info","ts":1795600800.25,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"66.249.66.1","remote_port":"4242","client_ip":"66.249.66.1","proto":"HTTP/1.1","method":"GET","host":"shop.example","uri":"/a","headers":{"User-Agent":["Googlebot/2.1"]}},"status":200}"#;
        let e = Format::Caddy.read(caddy).unwrap();
        assert_eq!(
            (e.at_ms, e.host.as_deref(), e.user_agent.as_str()),
            (1_795_600_800_250, Some("shop.example"), "Googlebot/2.1")
        );
        // Field names by key, as `--field` gives them.
        let fields = [
            ("time", "ts"),
            ("client", "ip"),
            ("method", "m"),
            ("target", "uri"),
            ("status", "code"),
            ("user_agent", "ua"),
        ];
        let cdn = br#"{"ts":"2026-11-25T10:00:00.5Z","ip":"2001:db8::7","m":"GET","uri":"/x","code":403,"ua":"GPTBot/1.1","host":"shop.example"}"#;
        let e = Format::named("json", fields).unwrap().read(cdn).unwrap();
        assert_eq!((e.at_ms, e.status, e.client.to_string()), (1_795_600_800_500, 403, "2001:db8::7".to_string()));
        assert!(matches!(Format::Caddy.read(b"{\"ts\":1"), Err(Skip::Malformed(_))));
        assert!(matches!(Format::Json(JsonFields::default()).read(b"[1,2]"), Err(Skip::Malformed(_))));
    }

    /// Lines as nginx and Apache write them for what reaches them in the
    /// wild (written for these tests, in the shapes real logs hold).
    #[test]
    fn real_request_lines() {
        let read = |request: &str, tail: &str| {
            let line = format!("66.249.66.1 - - [25/Nov/2026:10:00:00 +0000] \"{request}\" {tail}");
            Format::Combined.read(line.as_bytes())
        };
        let ok = " 200 10 \"-\" \"Googlebot/2.1\"";
        // A target with spaces: the method is the first word, the version the last.
        let e = read("GET /item.php?id=5 UNION SELECT * FROM users HTTP/1.1", ok).unwrap();
        assert_eq!(e.target, b"/item.php?id=5 UNION SELECT * FROM users");
        let e = read("GET http://www.example.test/js/app.min.js type= HTTP/1.0", " 404 0 \"-\" \"x\"").unwrap();
        assert_eq!(e.target, b"http://www.example.test/js/app.min.js type=");
        // nginx's and Apache's \xHH: the bytes, judged as a raw UTF-8 target is.
        let e = read("GET /caf\\xC3\\xA9/menu HTTP/1.1", ok).unwrap();
        assert_eq!(e.target, "/café/menu".as_bytes());
        // Apache's \n and \t are control bytes: no request of the site.
        assert_eq!(read("GET /a\\nb HTTP/1.1", ok), Err(Skip::NotHttp));
        // Requests for no resource of the site.
        for request in
            ["CONNECT www.example.test:443 HTTP/1.1", "PRI * HTTP/2.0", "OPTIONS * HTTP/1.1", "GET  HTTP/1.1"]
        {
            assert_eq!(read(request, ok), Err(Skip::NotHttp), "{request}");
        }
        // Cut after the status, inside the User-Agent: malformed, not a request.
        let cut = read("GET / HTTP/1.1", " 200 6182 \"-\" \"Mozilla/5.0 Apple");
        assert!(matches!(cut, Err(Skip::Malformed(ref why)) if why.contains("cut short")), "{cut:?}");
        let cut = read("GET / HTTP/1.1", " 200 6182 \"http://ref");
        assert!(matches!(cut, Err(Skip::Malformed(_))), "{cut:?}");
        // Caddy up to 2.4 names the client `remote_addr`, with its port.
        let old = br#"{"ts":1795600800.0,"request":{"remote_addr":"66.249.66.1:51234","method":"GET","host":"shop.example","uri":"/a","headers":{"User-Agent":["Googlebot/2.1"]}},"status":200}"#;
        assert_eq!(Format::Caddy.read(old).unwrap().client.to_string(), "66.249.66.1");
        let star =
            br#"{"ts":1795600800.0,"request":{"remote_ip":"1.2.3.4","method":"OPTIONS","uri":"*"},"status":200}"#;
        assert_eq!(Format::Caddy.read(star), Err(Skip::NotHttp));
    }

    #[test]
    fn cdn_presets() {
        let cf = br#"{"ClientIP":"66.249.66.1","ClientRequestHost":"shop.example","ClientRequestMethod":"GET","ClientRequestURI":"/a?b=1","ClientRequestUserAgent":"Googlebot/2.1","EdgeResponseStatus":200,"EdgeStartTimestamp":1795600800123456789}"#;
        let e = Format::named("cloudflare", []).unwrap().read(cf).unwrap();
        assert_eq!(
            (e.at_ms, e.target.as_slice(), e.host.as_deref()),
            (1_795_600_800_123, b"/a?b=1".as_slice(), Some("shop.example"))
        );
        let fastly = br#"{"timestamp":"2026-11-25T10:00:00+0000","client_ip":"66.249.66.1","host":"shop.example","url":"/a","request_method":"GET","request_user_agent":"Googlebot/2.1","response_status":301}"#;
        let e = Format::named("fastly", []).unwrap().read(fastly).unwrap();
        assert_eq!((e.at_ms, e.status), (1_795_600_800_000, 301));
        // Milliseconds and seconds by magnitude, as before.
        assert_eq!(json_time(&serde_json::json!(1_795_600_800_500_i64)), Some(1_795_600_800_500));
        assert_eq!(json_time(&serde_json::json!(1_795_600_800.5)), Some(1_795_600_800_500));
    }

    #[test]
    fn times() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339("2026-11-25T11:00:00+01:00"), rfc3339("2026-11-25T10:00:00Z"));
        assert_eq!(clf_time("01/Jan/1970:00:00:00 +0000"), Some(0));
        assert_eq!(clf_time("29/Feb/2024:23:59:59 +0000"), Some(1_709_251_199_000));
    }
}
