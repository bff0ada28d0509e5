//! Byte-string comparisons for the hot path: short literals and paths,
//! compared eight bytes at a time and inlined, where a libc `memcmp` call
//! would cost more than the comparison itself.

/// Length of the common prefix, eight bytes at a time.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap_or_default());
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of every zero byte of `x`, and no other bit: exact for each
/// byte (no borrow runs between bytes), so any byte of a word can be asked.
#[inline]
pub(crate) fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7) + LOW7) | x) & HIGH
}

/// `b` in every byte of a word.
#[inline]
pub(crate) const fn splat(b: u8) -> u64 {
    ONES * b as u64
}

/// The first position at or after `from` of a byte that `class` marks. A
/// class maps a word to the high bits of the bytes it holds, built from
/// [`zero_bytes`]. Eight bytes a step, with no call: the inputs here (URLs
/// and paths) are tens of bytes, where a SIMD search's setup costs more
/// than it saves.
#[inline]
pub(crate) fn find_class(bytes: &[u8], from: usize, class: impl Fn(u64) -> u64) -> Option<usize> {
    let len = bytes.len();
    let mut i = from;
    while i + 8 <= len {
        let hits = class(u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default()));
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if i >= len {
        return None;
    }
    // Fewer than eight bytes left: read the last eight, dropping the ones
    // already looked at, or a zero-padded copy, dropping the padding.
    let hits = if len >= 8 {
        class(u64::from_le_bytes(bytes[len - 8..].try_into().unwrap_or_default())) >> (8 * (i + 8 - len))
    } else {
        let mut w = [0u8; 8];
        w[..len - i].copy_from_slice(&bytes[i..]);
        class(u64::from_le_bytes(w)) & ((1 << (8 * (len - i))) - 1)
    };
    (hits != 0).then(|| i + (hits.trailing_zeros() / 8) as usize)
}

/// Whether `hay` starts with `prefix`, without a `memcmp` call.
#[inline]
pub(crate) fn has_prefix(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && common_prefix(hay, prefix) == prefix.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_helpers_agree_with_std() {
        let words: [&[u8]; 9] = [
            b"",
            b"/",
            b"/a",
            b"/abcdefgh",
            b"/abcdefgi",
            b"/abcdefghij",
            b"/abcdefgh\0",
            b"/b",
            b"/abcdefghijklmnopq",
        ];
        for a in words {
            for b in words {
                let want = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                assert_eq!(common_prefix(a, b), want, "{a:?} {b:?}");
                assert_eq!(has_prefix(a, b), a.starts_with(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn find_class_agrees_with_a_byte_loop() {
        // Every input length up to 20, every start, the searched bytes at
        // every place, next to the bytes that differ from them in one bit
        // (0x01 and 0xFF included, where a borrow would go wrong). A class
        // that marks NUL, which pads a short input, and one of a byte with
        // the high bit set.
        let url = |w: u64| zero_bytes(w) | zero_bytes(w ^ splat(b'#')) | zero_bytes((w | splat(0x10)) ^ splat(b'?'));
        let high = |w: u64| zero_bytes(w ^ splat(0x80));
        let in_url = |b: u8| b == 0 || b == b'#' || b == b'/' || b == b'?';
        let fill = [b'a', 0x01, 0xFF, 0x7F, b'"', b'.', b'>', 0x81, b'#' ^ 0x80];
        for len in 0..=20 {
            for f in fill {
                for h in [0u8, b'#', b'/', b'?', 0x80] {
                    for at in 0..=len {
                        let mut bytes = vec![f; len];
                        if at < len {
                            bytes[at] = h;
                        }
                        for from in 0..=len {
                            let first =
                                |is: &dyn Fn(u8) -> bool| bytes[from..].iter().position(|&b| is(b)).map(|p| from + p);
                            assert_eq!(find_class(&bytes, from, url), first(&in_url), "{bytes:?} from {from}");
                            assert_eq!(find_class(&bytes, from, high), first(&|b| b == 0x80), "{bytes:?} from {from}");
                        }
                    }
                }
            }
        }
    }
}
