//! The ledger's record format: one event as the journal holds it, written
//! and read back byte for byte (a torn or foreign record reads as none).

use super::*;

/// What an event's record says was served.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Recorded {
    Unknown,
    NoFile(u16),
    Serve(String),
}

/// An event as its journal record holds it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) site: String,
    pub(super) word: String,
    pub(super) identity: Option<Answer>,
    pub(super) client: Option<IpAddr>,
    pub(super) ms: i64,
    pub(super) state: Recorded,
    pub(super) target: Option<Vec<u8>>,
    pub(super) throttled: bool,
}

/// The identity byte's flag for a request a crawl budget answered.
const THROTTLED: u8 = 0x80;

pub(super) fn put_text(out: &mut Vec<u8>, text: &[u8]) {
    // Sites, words and ETags are short; a longer one is cut, not refused.
    let text = &text[..text.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text);
}

/// An event's journal record: site, word, identity answer (its top bit:
/// throttled by a crawl budget, so journals written before budgets read
/// as they were), client, time, what was served (by ETag) and target.
pub(super) fn encode(e: &Event, out: &mut Vec<u8>) {
    put_text(out, e.site.as_bytes());
    put_text(out, e.word.as_bytes());
    let identity: u8 = match e.identity {
        None => 0,
        Some(Answer::Verified) => 1,
        Some(Answer::Spoofed) => 2,
        Some(Answer::Unverifiable) => 3,
        Some(Answer::Pending) => 4,
    };
    out.push(identity | if e.throttled { THROTTLED } else { 0 });
    match e.client {
        None => out.push(0),
        Some(IpAddr::V4(ip)) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        Some(IpAddr::V6(ip)) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&e.at.ms.to_le_bytes());
    match &*e.state {
        State::Unknown => out.push(0),
        State::NoFile(status) => {
            out.push(1);
            out.extend_from_slice(&status.to_le_bytes());
        }
        State::Serve(served) => {
            out.push(2);
            put_text(out, served.etag.as_bytes());
        }
    }
    match &e.target {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&u32::try_from(t.len()).unwrap_or(u32::MAX).to_le_bytes());
            out.extend_from_slice(&t[..t.len().min(u32::MAX as usize)]);
        }
    }
}

/// Reads a record back; `None` for bytes that are not one.
pub(super) fn decode(mut b: &[u8]) -> Option<Record> {
    pub(super) fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = b.split_at_checked(n)?;
        *b = rest;
        Some(head)
    }
    pub(super) fn text(b: &mut &[u8]) -> Option<String> {
        let len = u16::from_le_bytes(take(b, 2)?.try_into().ok()?);
        String::from_utf8(take(b, usize::from(len))?.to_vec()).ok()
    }
    let site = text(&mut b)?;
    let word = text(&mut b)?;
    let byte = take(&mut b, 1)?[0];
    let throttled = byte & THROTTLED != 0;
    let identity = match byte & !THROTTLED {
        0 => None,
        1 => Some(Answer::Verified),
        2 => Some(Answer::Spoofed),
        3 => Some(Answer::Unverifiable),
        4 => Some(Answer::Pending),
        _ => return None,
    };
    let client = match take(&mut b, 1)?[0] {
        0 => None,
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(take(&mut b, 4)?).ok()?)),
        6 => Some(IpAddr::from(<[u8; 16]>::try_from(take(&mut b, 16)?).ok()?)),
        _ => return None,
    };
    let ms = i64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
    let state = match take(&mut b, 1)?[0] {
        0 => Recorded::Unknown,
        1 => Recorded::NoFile(u16::from_le_bytes(take(&mut b, 2)?.try_into().ok()?)),
        2 => Recorded::Serve(text(&mut b)?),
        _ => return None,
    };
    let target = match take(&mut b, 1)?[0] {
        0 => None,
        1 => {
            let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?);
            Some(take(&mut b, usize::try_from(len).ok()?)?.to_vec())
        }
        _ => return None,
    };
    b.is_empty().then_some(Record { site, word, identity, client, ms, state, target, throttled })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn event(
        state: State,
        target: Option<&[u8]>,
        client: Option<IpAddr>,
        identity: Option<Answer>,
    ) -> Event {
        Event {
            site: Arc::from("shop"),
            word: Box::from("Googlebot"),
            identity,
            client,
            at: At { ms: 1_764_000_000_123, seq: 9 },
            state: Arc::new(state),
            target: target.map(Box::from),
            throttled: target.is_some_and(|t| t.starts_with(b"/a")),
            journal_end: 0,
        }
    }

    #[test]
    pub(super) fn records_read_back_as_written() {
        let cases = [
            event(State::Unknown, None, None, None),
            event(State::NoFile(404), Some(b"/a b\xff?x=1"), Some("127.0.0.9".parse().unwrap()), Some(Answer::Spoofed)),
            event(State::NoFile(410), Some(b""), Some("::1".parse().unwrap()), Some(Answer::Pending)),
        ];
        for e in &cases {
            let mut bytes = Vec::new();
            encode(e, &mut bytes);
            let r = decode(&bytes).expect("a record");
            assert_eq!(r.site, "shop");
            assert_eq!(r.word, "Googlebot");
            assert_eq!(r.identity, e.identity);
            assert_eq!(r.client, e.client);
            assert_eq!(r.ms, e.at.ms);
            assert_eq!(r.target.as_deref(), e.target.as_deref());
            assert_eq!(r.throttled, e.throttled);
            let state = match &*e.state {
                State::Unknown => Recorded::Unknown,
                State::NoFile(s) => Recorded::NoFile(*s),
                State::Serve(s) => Recorded::Serve(s.etag.clone()),
            };
            assert_eq!(r.state, state);
            // Every cut of a record is refused, never misread.
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
            }
        }
    }

    #[test]
    pub(super) fn any_bytes_decode_without_a_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..2000 {
            let bytes: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 24) as u8
                })
                .collect();
            let _ = decode(&bytes);
        }
    }
}
