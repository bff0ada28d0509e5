//! The fields of origins' response heads as HTTP/2 fields, converted once
//! a thread. A stream's answer goes to the `h2` crate as an
//! `http::HeaderMap`, and making a `HeaderName` and a `HeaderValue` from
//! the origin's bytes (checking every byte, copying the value into its own
//! allocation) cost about 1,000 instructions a field, 8,000 of an HTTP/2
//! request's 95,000. Most fields repeat from one response to the next
//! (`Server`, `Content-Type`, `ETag`, `Last-Modified`, `Accept-Ranges`, and
//! `Date` within its second): a repeat is now a compare of its bytes and a
//! clone that shares them.

use std::cell::RefCell;

use http::{HeaderName, HeaderValue};

/// Fields a thread keeps; the oldest kept makes room. An origin's head has
/// about ten fields, and a thread serves a few origins.
const KEPT: usize = 32;
/// Longer fields are converted each time: a long one (a `Set-Cookie`, a
/// `Link` list) rarely repeats.
const LONGEST: usize = 256;

/// One field as the origin wrote it, and as converted.
struct Kept {
    /// The name's bytes, then the value's.
    raw: Box<[u8]>,
    name_len: usize,
    name: HeaderName,
    value: HeaderValue,
}

#[derive(Default)]
struct Recent {
    kept: Vec<Kept>,
    /// Where the next field kept goes once `kept` is full.
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Recent> = RefCell::new(Recent::default());
}

/// `name: value` from an origin's head as HTTP/2's name and value, or why
/// it is not a valid field.
pub(super) fn convert(name: &str, value: &[u8]) -> Result<(HeaderName, HeaderValue), String> {
    let (n, len) = (name.as_bytes(), name.len() + value.len());
    if len > LONGEST {
        return fresh(name, value);
    }
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        let found = recent.kept.iter().find(|k| {
            k.name_len == n.len() && k.raw.len() == len && &k.raw[..k.name_len] == n && &k.raw[k.name_len..] == value
        });
        if let Some(k) = found {
            return Ok((k.name.clone(), k.value.clone()));
        }
        let (name, value_h2) = fresh(name, value)?;
        let kept = Kept {
            raw: [n, value].concat().into_boxed_slice(),
            name_len: n.len(),
            name: name.clone(),
            value: value_h2.clone(),
        };
        if recent.kept.len() < KEPT {
            recent.kept.push(kept);
        } else {
            let at = recent.next;
            recent.kept[at] = kept;
            recent.next = (at + 1) % KEPT;
        }
        Ok((name, value_h2))
    })
}

/// The conversion itself, with the error naming the field.
fn fresh(name: &str, value: &[u8]) -> Result<(HeaderName, HeaderValue), String> {
    let h2_name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
    let h2_value = HeaderValue::from_bytes(value).map_err(|e| format!("{name}: {e}"))?;
    Ok((h2_name, h2_value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_field_is_the_same_field() {
        let (name, value) = convert("Content-Type", b"text/html").unwrap();
        assert_eq!((name.as_str(), value.as_bytes()), ("content-type", &b"text/html"[..]));
        // Kept: the second answer shares the first's bytes.
        let (_, again) = convert("Content-Type", b"text/html").unwrap();
        assert_eq!(again.as_bytes().as_ptr(), value.as_bytes().as_ptr());
        // A name and value that split the same bytes differently are
        // another field.
        let (name, value) = convert("Content-Typ", b"etext/html").unwrap();
        assert_eq!((name.as_str(), value.as_bytes()), ("content-typ", &b"etext/html"[..]));
        let (_, other) = convert("Content-Type", b"text/plain").unwrap();
        assert_eq!(other.as_bytes(), b"text/plain");
    }

    #[test]
    fn invalid_fields_are_refused_every_time_and_never_kept() {
        for _ in 0..2 {
            assert!(convert("Bad Name", b"x").unwrap_err().starts_with("Bad Name: "));
            assert!(convert("X-Ok", b"line\nbreak").unwrap_err().starts_with("X-Ok: "));
        }
        RECENT.with(|r| assert!(r.borrow().kept.iter().all(|k| &k.raw[..] != b"Bad Namex")));
    }

    #[test]
    fn the_oldest_field_makes_room_and_long_ones_are_not_kept() {
        for i in 0..KEPT + 5 {
            let v = format!("value-{i}");
            assert_eq!(convert("X-Count", v.as_bytes()).unwrap().1.as_bytes(), v.as_bytes());
        }
        RECENT.with(|r| {
            let r = r.borrow();
            assert_eq!(r.kept.len(), KEPT);
            assert!(r.kept.iter().any(|k| k.raw.ends_with(format!("value-{}", KEPT + 4).as_bytes())));
            assert!(!r.kept.iter().any(|k| k.raw.ends_with(b"value-0")));
        });
        let long = vec![b'a'; LONGEST];
        assert_eq!(convert("X-Long", &long).unwrap().1.as_bytes(), &long[..]);
        RECENT.with(|r| assert!(!r.borrow().kept.iter().any(|k| k.raw.len() > LONGEST)));
    }
}
