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
    if i < n && n >= 8 {
        // The last eight bytes, overlapping ones known to be equal: a
        // byte loop here mispredicted its exit on most literals.
        let x = u64::from_le_bytes(a[n - 8..n].try_into().unwrap_or_default());
        let y = u64::from_le_bytes(b[n - 8..n].try_into().unwrap_or_default());
        return if x == y { n } else { n - 8 + ((x ^ y).trailing_zeros() / 8) as usize };
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

/// The first position at or after `from` of a byte of `set`, sixteen
/// bytes a step. On x86-64 a step is one compare per byte of the set and a
/// mask move, a third of the instructions of a word-at-a-time search: a
/// check finds where a URL's path starts and ends this way, and the two
/// searches were a quarter of a small file's check.
#[inline]
pub(crate) fn find_any<const N: usize>(bytes: &[u8], from: usize, set: [u8; N]) -> Option<usize> {
    let len = bytes.len();
    let chunk = |at: usize| -> &[u8; 16] { bytes[at..at + 16].try_into().expect("16 bytes") };
    let mut i = from;
    while i + 16 <= len {
        let m = mask16(chunk(i), &set);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    if i >= len {
        return None;
    }
    // Fewer than sixteen bytes left: the last sixteen without the ones
    // already looked at, or a zero-padded copy without the padding.
    let m = if len >= 16 {
        mask16(chunk(len - 16), &set) >> (i + 16 - len)
    } else {
        let mut w = [0u8; 16];
        w[..len - i].copy_from_slice(&bytes[i..]);
        mask16(&w, &set) & ((1 << (len - i)) - 1)
    };
    (m != 0).then(|| i + m.trailing_zeros() as usize)
}

/// The first position at or after `from` where `pair` starts, sixteen
/// positions a step: two bytes rule out all but about one position in a
/// thousand of a path, where one byte (`memchr`) leaves one in thirty to
/// be compared, so a wildcard rule's segment is found in one pass of
/// compares.
#[inline]
pub(crate) fn find_pair(bytes: &[u8], from: usize, pair: [u8; 2]) -> Option<usize> {
    let len = bytes.len();
    let mut i = from;
    // A step reads the sixteen bytes at `i` and the sixteen at `i + 1`.
    while i + 17 <= len {
        let a: &[u8; 16] = bytes[i..i + 16].try_into().expect("16 bytes");
        let b: &[u8; 16] = bytes[i + 1..i + 17].try_into().expect("16 bytes");
        let m = mask16(a, &[pair[0]]) & mask16(b, &[pair[1]]);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    if i + 2 > len {
        return None;
    }
    if len >= 17 {
        // Fewer than seventeen bytes left: the last step's window, without
        // the positions already looked at. (A copy into a padded buffer
        // is a `memcpy` call of a variable length: 13% of a small
        // file's mispredicted branches.)
        let at = len - 17;
        let a: &[u8; 16] = bytes[at..at + 16].try_into().expect("16 bytes");
        let b: &[u8; 16] = bytes[at + 1..].try_into().expect("16 bytes");
        let m = (mask16(a, &[pair[0]]) & mask16(b, &[pair[1]])) >> (i - at);
        return (m != 0).then(|| i + m.trailing_zeros() as usize);
    }
    // A path shorter than seventeen bytes: one byte at a time.
    bytes[i..].windows(2).position(|w| w == pair).map(|p| i + p)
}

/// Bit `i` is set where `chunk[i]` is a byte of `set`.
#[cfg(target_arch = "x86_64")]
#[inline]
fn mask16<const N: usize>(chunk: &[u8; 16], set: &[u8; N]) -> u32 {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code
    // is built for has it (see `classify` in parse/specials.rs). The callee
    // reads only its arguments and takes no pointers.
    #[allow(unsafe_code)]
    unsafe {
        mask16_sse2(chunk, set)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn mask16_sse2<const N: usize>(chunk: &[u8; 16], set: &[u8; N]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128,
    };
    // SAFETY: `chunk` is sixteen readable bytes, and the load has no
    // alignment requirement. Built from two words, the vector cost two
    // instructions more a step.
    #[allow(unsafe_code)]
    let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()) };
    let any =
        set.iter().fold(_mm_setzero_si128(), |any, &c| _mm_or_si128(any, _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8))));
    _mm_movemask_epi8(any) as u32
}

/// Bit `i` is set where `chunk[i]` is a byte of `set`.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn mask16<const N: usize>(chunk: &[u8; 16], set: &[u8; N]) -> u32 {
    chunk.iter().enumerate().fold(0, |m, (i, b)| m | (u32::from(set.contains(b)) << i))
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
    fn find_pair_agrees_with_a_window_search() {
        // Every length up to 40 (past two steps), every start, the pair at
        // every place, alone, doubled, overlapping itself, cut at the end,
        // and pairs with NUL, which pads a short input.
        for len in 0..=40 {
            for pair in [*b"ab", *b"aa", [b'a', 0], [0, b'a'], [0, 0], [0xFF, b'b']] {
                for at in 0..=len {
                    for fill in [b'x', b'a', 0, b'b'] {
                        let mut bytes = vec![fill; len];
                        for (k, &p) in pair.iter().enumerate() {
                            if at + k < len {
                                bytes[at + k] = p;
                            }
                        }
                        for from in 0..=len {
                            let want = bytes.windows(2).skip(from).position(|w| w == pair).map(|p| from + p);
                            assert_eq!(find_pair(&bytes, from, pair), want, "{bytes:?} {pair:?} from {from}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn find_any_agrees_with_a_byte_loop() {
        // Every input length up to 40 (past two steps), every start, the
        // searched bytes at every place, among bytes that differ from them
        // in one bit and bytes with the high bit set. A set with NUL, which
        // pads a short input, and one with a high byte.
        let fill = [b'a', 0x01, 0xFF, 0x7F, b'"', b'.', b'>', 0x81, b'#' ^ 0x80];
        for len in 0..=40 {
            for f in fill {
                for h in [0u8, b'#', b'/', b'?', 0x80] {
                    for at in 0..=len {
                        let mut bytes = vec![f; len];
                        if at < len {
                            bytes[at] = h;
                        }
                        for from in 0..=len {
                            let first =
                                |set: &[u8]| bytes[from..].iter().position(|b| set.contains(b)).map(|p| from + p);
                            let url = [0, b'#', b'/', b'?'];
                            assert_eq!(find_any(&bytes, from, url), first(&url), "{bytes:?} from {from}");
                            assert_eq!(find_any(&bytes, from, [0x80]), first(&[0x80]), "{bytes:?} from {from}");
                        }
                    }
                }
            }
        }
    }
}
