//! What the origin is told of the client: `X-Forwarded-For`,
//! `X-Forwarded-Proto` and `Forwarded` (RFC 7239), one judgement for both
//! request paths.
//!
//! At the edge (the peer is no trusted proxy) whatever the client sent in
//! these fields is dropped, since anyone can write them, and the gateway
//! says what it saw: the peer's address and the scheme it came over. Behind
//! trusted proxies (`proxy.identity.trusted_proxies`), the chain they wrote
//! is kept and the peer appended, as nginx's `$proxy_add_x_forwarded_for`
//! does, and their `X-Forwarded-Proto` is kept. A site with
//! `forwarded_headers: false` passes the fields as the client sent them.

use std::net::IpAddr;

/// The three field names, lower case.
pub const FIELDS: [&str; 3] = ["x-forwarded-for", "x-forwarded-proto", "forwarded"];

/// Whether `name` is one of the fields this module writes.
pub fn is_forwarded_field(name: &str) -> bool {
    // By length first: every request's every field is asked.
    match name.len() {
        15 => name.eq_ignore_ascii_case(FIELDS[0]),
        17 => name.eq_ignore_ascii_case(FIELDS[1]),
        9 => name.eq_ignore_ascii_case(FIELDS[2]),
        _ => false,
    }
}

/// The fields as the client sent them (several of one name joined by `, `).
#[derive(Clone, Debug, Default)]
pub struct Sent {
    /// `X-Forwarded-For`.
    pub forwarded_for: Option<String>,
    /// `X-Forwarded-Proto`.
    pub proto: Option<String>,
    /// `Forwarded`.
    pub forwarded: Option<String>,
}

impl Sent {
    /// Whether the client sent none of the three.
    pub fn is_empty(&self) -> bool {
        self.forwarded_for.is_none() && self.proto.is_none() && self.forwarded.is_none()
    }

    /// Adds one field of the request, if it is one of the three.
    pub fn add(&mut self, name: &str, value: &[u8]) {
        let slot = if name.eq_ignore_ascii_case(FIELDS[0]) {
            &mut self.forwarded_for
        } else if name.eq_ignore_ascii_case(FIELDS[1]) {
            &mut self.proto
        } else if name.eq_ignore_ascii_case(FIELDS[2]) {
            &mut self.forwarded
        } else {
            return;
        };
        let value = String::from_utf8_lossy(value);
        let value = value.trim();
        match slot {
            Some(v) => {
                v.push_str(", ");
                v.push_str(value);
            }
            None => *slot = Some(value.to_string()),
        }
    }
}

/// The fields the origin gets, as (name, value): `peer` is the socket's
/// address, `trusted` whether it is a trusted proxy, `tls` whether the
/// request came over TLS.
pub fn fields(peer: Option<IpAddr>, trusted: bool, tls: bool, sent: &Sent) -> Vec<(&'static str, String)> {
    let Some(peer) = peer else { return Vec::new() };
    let scheme = if tls { "https" } else { "http" };
    fn keep(v: &Option<String>, trusted: bool) -> Option<&str> {
        v.as_deref().filter(|v| trusted && !v.is_empty())
    }
    // RFC 7239 section 6: an IPv6 address is bracketed and quoted.
    let node = match peer {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("\"[{a}]\""),
    };
    let element = format!("for={node};proto={scheme}");
    vec![
        (
            "X-Forwarded-For",
            keep(&sent.forwarded_for, trusted).map_or_else(|| peer.to_string(), |chain| format!("{chain}, {peer}")),
        ),
        ("X-Forwarded-Proto", keep(&sent.proto, trusted).map_or_else(|| scheme.to_string(), str::to_string)),
        (
            "Forwarded",
            keep(&sent.forwarded, trusted).map_or_else(|| element.clone(), |chain| format!("{chain}, {element}")),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(fields: &[(&str, &str)]) -> Sent {
        let mut s = Sent::default();
        for (n, v) in fields {
            s.add(n, v.as_bytes());
        }
        s
    }

    fn get(fields: &[(&'static str, String)], name: &str) -> String {
        fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap_or_default()
    }

    #[test]
    fn at_the_edge_a_client_cannot_write_its_own_address() {
        let spoof = sent(&[
            ("X-Forwarded-For", "66.249.66.1"),
            ("forwarded", "for=66.249.66.1"),
            ("X-Forwarded-Proto", "https"),
        ]);
        let out = fields(Some("203.0.113.9".parse().unwrap()), false, false, &spoof);
        assert_eq!(get(&out, "X-Forwarded-For"), "203.0.113.9");
        assert_eq!(get(&out, "X-Forwarded-Proto"), "http");
        assert_eq!(get(&out, "Forwarded"), "for=203.0.113.9;proto=http");
    }

    #[test]
    fn behind_trusted_proxies_the_chain_is_kept_and_the_peer_appended() {
        let chain = sent(&[
            ("X-Forwarded-For", "66.249.66.1"),
            ("x-forwarded-for", "10.0.0.2"),
            ("X-Forwarded-Proto", "https"),
        ]);
        let out = fields(Some("10.0.0.3".parse().unwrap()), true, false, &chain);
        assert_eq!(get(&out, "X-Forwarded-For"), "66.249.66.1, 10.0.0.2, 10.0.0.3");
        assert_eq!(get(&out, "X-Forwarded-Proto"), "https");
        assert_eq!(get(&out, "Forwarded"), "for=10.0.0.3;proto=http");
        let v6 = fields(Some("2001:db8::1".parse().unwrap()), true, true, &Sent::default());
        assert_eq!(get(&v6, "Forwarded"), "for=\"[2001:db8::1]\";proto=https");
        assert_eq!(get(&v6, "X-Forwarded-For"), "2001:db8::1");
    }
}
