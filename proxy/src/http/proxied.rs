//! The PROXY protocol (HAProxy's, versions 1 and 2): a load balancer in
//! front of the gateway opens each connection with a header naming the
//! client's address. It is read only from peers in `trusted_proxies`, and
//! from them it is required: a header from anyone else would let a client
//! pick its own address, and a trusted peer without one is misconfigured.
//!
//! Version 1 is a text line, `PROXY TCP4 SRC DST SPORT DPORT\r\n` (at most
//! 107 bytes); version 2 a 16-byte binary head and the addresses. `LOCAL`
//! (v2) and `UNKNOWN` (v1) connections, such as the balancer's own health
//! checks, keep the peer's address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The version 2 signature.
const V2: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest version 1 line, CRLF included.
const V1_MAX: usize = 107;

/// A header read from the start of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Its length in bytes: the request starts after it.
    pub len: usize,
    /// The client's address, or `None` to keep the peer's.
    pub source: Option<SocketAddr>,
}

/// Why a connection's first bytes are no PROXY header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PROXY protocol: {0}")]
pub struct BadHeader(pub &'static str);

/// Reads a header at the start of `buf`: `Ok(None)` while more bytes may
/// complete it.
pub fn read(buf: &[u8]) -> Result<Option<Header>, BadHeader> {
    let n = buf.len().min(V2.len());
    if buf[..n] == V2[..n] {
        return if buf.len() < 16 { Ok(None) } else { read_v2(buf) };
    }
    let n = buf.len().min(6);
    if buf[..n] != b"PROXY "[..n] {
        return Err(BadHeader("a trusted proxy's connection must start with a PROXY header"));
    }
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return if buf.len() >= V1_MAX { Err(BadHeader("version 1 line longer than 107 bytes")) } else { Ok(None) };
    };
    if end + 2 > V1_MAX {
        return Err(BadHeader("version 1 line longer than 107 bytes"));
    }
    let line = std::str::from_utf8(&buf[6..end]).map_err(|_| BadHeader("version 1 line is not text"))?;
    let words: Vec<&str> = line.split(' ').collect();
    let source = match words.as_slice() {
        ["UNKNOWN", ..] => None,
        [family @ ("TCP4" | "TCP6"), src, _dst, sport, _dport] => {
            let ip: IpAddr = src.parse().map_err(|_| BadHeader("bad source address"))?;
            if ip.is_ipv4() != (*family == "TCP4") {
                return Err(BadHeader("source address of the wrong family"));
            }
            // Ports are decimal without leading zeros (the spec), 0 to 65535.
            if sport.is_empty() || (sport.len() > 1 && sport.starts_with('0')) {
                return Err(BadHeader("bad source port"));
            }
            let port: u16 = sport.parse().map_err(|_| BadHeader("bad source port"))?;
            Some(SocketAddr::new(ip, port))
        }
        _ => return Err(BadHeader("version 1 line is not `PROXY TCP4|TCP6 SRC DST SPORT DPORT`")),
    };
    Ok(Some(Header { len: end + 2, source }))
}

fn read_v2(buf: &[u8]) -> Result<Option<Header>, BadHeader> {
    let (version_command, family) = (buf[12], buf[13]);
    if version_command >> 4 != 2 {
        return Err(BadHeader("version 2 head with another version"));
    }
    let len = 16 + usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if buf.len() < len {
        return Ok(None);
    }
    let body = &buf[16..len];
    let source = match (version_command & 0x0f, family) {
        // LOCAL: the proxy's own connection.
        (0, _) => None,
        (1, 0x11) if body.len() >= 12 => {
            let ip = Ipv4Addr::new(body[0], body[1], body[2], body[3]);
            Some(SocketAddr::new(ip.into(), u16::from_be_bytes([body[8], body[9]])))
        }
        (1, 0x21) if body.len() >= 36 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&body[..16]);
            Some(SocketAddr::new(Ipv6Addr::from(octets).into(), u16::from_be_bytes([body[32], body[33]])))
        }
        // UNSPEC, UDP and UNIX: no TCP client address to take.
        (1, 0x00) => None,
        (1, 0x11 | 0x21) => return Err(BadHeader("version 2 addresses cut short")),
        (1, _) => return Err(BadHeader("version 2 family other than TCP over IPv4 or IPv6")),
        _ => return Err(BadHeader("version 2 command other than LOCAL or PROXY")),
    };
    Ok(Some(Header { len, source }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(command: u8, family: u8, body: &[u8]) -> Vec<u8> {
        let mut out = V2.to_vec();
        out.extend_from_slice(&[0x20 | command, family]);
        out.extend_from_slice(&(body.len() as u16).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn version_one() {
        let line = b"PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\nGET / HTTP/1.1\r\n";
        let h = read(line).unwrap().unwrap();
        assert_eq!((h.len, h.source), (45, Some("192.0.2.7:56324".parse().unwrap())));
        let h = read(b"PROXY TCP6 2001:db8::1 2001:db8::2 4000 80\r\n").unwrap().unwrap();
        assert_eq!(h.source, Some("[2001:db8::1]:4000".parse().unwrap()));
        assert_eq!(read(b"PROXY UNKNOWN\r\n").unwrap().unwrap().source, None);
        // Incomplete, then wrong.
        assert_eq!(read(b"PROX").unwrap(), None);
        assert_eq!(read(b"PROXY TCP4 192.0.2.7").unwrap(), None);
        for bad in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"PROXY TCP4 192.0.2.7 198.51.100.1 56324\r\n",
            b"PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n",
            b"PROXY TCP4 192.0.2.7 198.51.100.1 65536 443\r\n",
            b"PROXY TCP4 192.0.2.7 198.51.100.1 0080 443\r\n",
            b"PROXY TCP4  192.0.2.7 198.51.100.1 1 443\r\n",
        ] {
            assert!(read(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let long = [b"PROXY ".as_slice(), &[b'x'; 120]].concat();
        assert!(read(&long).is_err());
    }

    #[test]
    fn version_two() {
        let body = [192, 0, 2, 7, 198, 51, 100, 1, 0xdc, 0x04, 0x01, 0xbb];
        let head = v2(1, 0x11, &body);
        let h = read(&head).unwrap().unwrap();
        assert_eq!((h.len, h.source), (28, Some("192.0.2.7:56324".parse().unwrap())));
        assert_eq!(read(&head[..20]).unwrap(), None, "addresses still to come");
        assert_eq!(read(&v2(0, 0x00, &[])).unwrap().unwrap().source, None, "LOCAL");
        let mut six = vec![0u8; 36];
        six[0] = 0x20;
        six[1] = 0x01;
        six[32] = 0x0f;
        six[33] = 0xa0;
        assert_eq!(read(&v2(1, 0x21, &six)).unwrap().unwrap().source, Some("[2001::]:4000".parse().unwrap()));
        assert!(read(&v2(1, 0x11, &body[..6])).is_err(), "cut short");
        assert!(read(&v2(2, 0x11, &body)).is_err(), "unknown command");
        assert!(read(&v2(1, 0x31, &body)).is_err(), "a UNIX socket");
        // TLVs after the addresses are skipped with them.
        let mut tlv = body.to_vec();
        tlv.extend_from_slice(&[0x04, 0x00, 0x01, 0xff]);
        assert_eq!(read(&v2(1, 0x11, &tlv)).unwrap().unwrap().len, 32);
    }

    /// Any bytes, and any header cut anywhere: an answer, never a panic,
    /// and never a length past the bytes given.
    #[test]
    fn any_bytes() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let seeds: [&[u8]; 3] = [b"PROXY TCP4 192.0.2.7 198.51.100.1 1 2\r\n", V2, b"PROXY "];
        for i in 0..200_000 {
            let mut buf = seeds[i % 3].to_vec();
            let cut = (next() as usize) % (buf.len() + 1);
            buf.truncate(cut);
            for _ in 0..(next() % 40) {
                buf.push(next() as u8);
            }
            if let Ok(Some(h)) = read(&buf) {
                assert!(h.len <= buf.len(), "{buf:?}");
            }
        }
    }
}
