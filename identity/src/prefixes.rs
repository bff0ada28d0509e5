//! A table of address prefixes answering "is this address in any of them"
//! in one binary search: every prefix becomes a range of 128-bit numbers
//! (IPv4 as IPv4-mapped IPv6), and overlapping or touching ranges are
//! merged, so a lookup is a search over disjoint sorted ranges.

use std::net::IpAddr;

/// Disjoint, sorted ranges of addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prefixes {
    starts: Vec<u128>,
    ends: Vec<u128>,
    /// Prefixes as given, before merging.
    count: usize,
}

/// An address as a number in the IPv6 space.
fn number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u128::from(v4.to_ipv6_mapped()),
            None => u128::from(v6),
        },
    }
}

/// Why a prefix could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an address prefix (ADDRESS/LENGTH)")]
pub struct BadPrefix(pub String);

/// `a.b.c.d/n` or `x::/n` as its first and last address.
pub fn range(prefix: &str) -> Result<(u128, u128), BadPrefix> {
    let bad = || BadPrefix(prefix.to_string());
    let (addr, len) = prefix.trim().split_once('/').ok_or_else(bad)?;
    let ip: IpAddr = addr.parse().map_err(|_| bad())?;
    let len: u32 = len.parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if len > max {
        return Err(bad());
    }
    let len = if ip.is_ipv4() { len + 96 } else { len };
    let host_bits = 128 - len;
    let mask = if host_bits == 128 { u128::MAX } else { (1u128 << host_bits) - 1 };
    let first = number(ip) & !mask;
    Ok((first, first | mask))
}

impl Prefixes {
    /// A table of `prefixes` (`a.b.c.d/n` or `x::/n`).
    pub fn parse<'a>(prefixes: impl IntoIterator<Item = &'a str>) -> Result<Prefixes, BadPrefix> {
        let mut ranges = Vec::new();
        for p in prefixes {
            ranges.push(range(p)?);
        }
        Ok(Prefixes::from_ranges(ranges))
    }

    /// A table of first-last ranges.
    pub fn from_ranges(mut ranges: Vec<(u128, u128)>) -> Prefixes {
        let count = ranges.len();
        ranges.sort_unstable();
        let (mut starts, mut ends): (Vec<u128>, Vec<u128>) = (Vec::new(), Vec::new());
        for (s, e) in ranges {
            match ends.last_mut() {
                Some(last) if s <= last.saturating_add(1) => *last = (*last).max(e),
                _ => {
                    starts.push(s);
                    ends.push(e);
                }
            }
        }
        Prefixes { starts, ends, count }
    }

    /// Whether `ip` is in a prefix.
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        let n = number(ip);
        // The last range starting at or before `n`.
        let i = self.starts.partition_point(|&s| s <= n);
        i > 0 && n <= self.ends[i - 1]
    }

    /// How many prefixes were given.
    pub fn len(&self) -> usize {
        self.count
    }

    /// No prefixes.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn v4_and_v6_prefixes() {
        let t = Prefixes::parse(["66.249.64.0/27", "2001:4860:4801:10::/64", "192.0.2.7/32"]).unwrap();
        assert!(t.contains(ip("66.249.64.0")) && t.contains(ip("66.249.64.31")));
        assert!(!t.contains(ip("66.249.64.32")) && !t.contains(ip("66.249.63.255")));
        assert!(t.contains(ip("2001:4860:4801:10::1")) && !t.contains(ip("2001:4860:4801:11::1")));
        assert!(t.contains(ip("192.0.2.7")) && !t.contains(ip("192.0.2.8")));
        // An IPv4 address written as IPv4-mapped IPv6 is the same address.
        assert!(t.contains(ip("::ffff:66.249.64.5")));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn overlapping_prefixes_merge() {
        let t = Prefixes::parse(["10.0.0.0/8", "10.1.0.0/16", "11.0.0.0/8"]).unwrap();
        assert_eq!(t.starts.len(), 1, "10/8 and 11/8 touch");
        assert!(t.contains(ip("11.255.255.255")) && !t.contains(ip("12.0.0.0")));
        assert!(Prefixes::parse(["0.0.0.0/0"]).unwrap().contains(ip("8.8.8.8")));
        assert!(Prefixes::parse(["::/0"]).unwrap().contains(ip("2001:db8::1")));
    }

    #[test]
    fn bad_prefixes_are_named() {
        for bad in ["66.249.64.0", "66.249.64.0/33", "x/8", "::/129", "1.2.3.4/-1", ""] {
            assert_eq!(Prefixes::parse([bad]).unwrap_err(), BadPrefix(bad.to_string()), "{bad}");
        }
    }
}
