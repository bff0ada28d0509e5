//! Holds API responses to the console's own OpenAPI document: each body is
//! validated against the schema the document gives for its path, method,
//! status and content type (JSON Schema 2020-12, which OpenAPI 3.1 uses).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::SocketAddr;

use serde_json::Value;

/// An answer, read whole.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The `Content-Type`, without parameters.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
    /// The status line and header fields, as received.
    pub head: String,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// One request over a fresh connection, the answer read to its end.
pub fn send(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("write");
    s.write_all(body).expect("write body");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
    let content_type = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-type")).map(|(_, v)| v.trim()))
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .to_string();
    let mut body = raw[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Answer { status, content_type, body, head }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
    out
}

/// The console's OpenAPI document, fetched from it.
pub struct Document(pub Value);

impl Document {
    /// Fetches `/api/openapi.json` from `addr`.
    pub fn fetch(addr: SocketAddr) -> Document {
        let a = send(addr, "GET", "/api/openapi.json", &[], b"");
        assert_eq!(a.status, 200);
        let doc = a.json();
        assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
        Document(doc)
    }

    /// Validates `answer` to `method` `template` (the path as the document
    /// writes it) against the document: the status must be described, with
    /// the answer's content type, and the body must match its schema.
    pub fn check(&self, method: &str, template: &str, answer: &Answer) {
        let op = &self.0["paths"][template][method.to_ascii_lowercase()];
        assert!(op.is_object(), "{method} {template} is not in the document");
        let response = &op["responses"][answer.status.to_string()];
        assert!(response.is_object(), "{method} {template}: status {} is not in the document", answer.status);
        let schema = &response["content"][&answer.content_type]["schema"];
        assert!(
            schema.is_object(),
            "{method} {template} {}: content type `{}` is not in the document",
            answer.status,
            answer.content_type
        );
        let root = serde_json::json!({ "allOf": [schema], "components": self.0["components"] });
        let validator = jsonschema::draft202012::new(&root).expect("a valid schema");
        let instance = answer.json();
        let errors: Vec<String> =
            validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
        assert!(errors.is_empty(), "{method} {template} {}: {errors:#?}\n{instance:#}", answer.status);
    }
}
