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
}
