//! Finds, in one forward pass, every byte that shapes a robots.txt line:
//! the line ends (LF, CR), the comment and NUL cuts (`#`, NUL), the key
//! separator (`:`), and in a value the first wildcard (`*`) and anything
//! percent-normalisation would change (`%`, bytes of 0x80 and up).
//!
//! Most bytes of a robots.txt are none of these. Searching for each of them
//! line by line meant several vector searches per line, each paying its
//! set-up for a line of about 30 bytes. Instead, the body is classified
//! 64 bytes at a time into a bit mask, and the parser walks the set bits in
//! order: a few instructions per special byte and under one per plain byte.

/// The ASCII bytes the line reader stops at; it also stops at every byte
/// of 0x80 and up.
pub(super) const SPECIAL: [u8; 7] = [b'\n', b'\r', b'#', 0, b':', b'*', b'%'];
/// The bytes that still matter once a comment or NUL has ended a line's
/// content: the line's end, and a NUL (which the lint reports).
pub(super) const CUT: [u8; 3] = [b'\n', b'\r', 0];

/// Positions of the special bytes of `body` from a starting offset, in
/// increasing order.
#[derive(Debug)]
pub(super) struct Specials<'a> {
    body: &'a [u8],
    /// Start of the block `mask` describes.
    base: usize,
    /// Special bytes of the current block not yet returned, bit `i` for
    /// `body[base + i]`.
    mask: u64,
    /// The current block's [`CUT`] bytes.
    cut: u64,
}

impl<'a> Specials<'a> {
    pub(super) fn new(body: &'a [u8], from: usize) -> Specials<'a> {
        let (mask, cut) = block_mask(body, from);
        Specials { body, base: from, mask, cut }
    }

    /// Moves to the next block; `false` past the end.
    #[inline]
    fn advance(&mut self) -> bool {
        self.base += 64;
        if self.base >= self.body.len() {
            return false;
        }
        (self.mask, self.cut) = block_mask(self.body, self.base);
        true
    }

    /// The next [`CUT`] byte, skipping every other special byte before it:
    /// past a comment, nothing else on the line matters, and comments in
    /// other scripts are full of bytes of 0x80 and up.
    #[inline]
    pub(super) fn next_cut(&mut self) -> Option<usize> {
        loop {
            let found = self.mask & self.cut;
            if found != 0 {
                let bit = found.trailing_zeros();
                // Drop every special byte up to and including this one.
                self.mask &= (u64::MAX << bit) << 1;
                return Some(self.base + bit as usize);
            }
            if !self.advance() {
                self.mask = 0;
                return None;
            }
        }
    }
}

impl Iterator for Specials<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if !self.advance() {
                return None;
            }
        }
        let at = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(at)
    }
}

/// The masks of special and of [`CUT`] bytes in `body[base..base + 64]`. A
/// short last block is padded with spaces, which are neither.
#[inline]
fn block_mask(body: &[u8], base: usize) -> (u64, u64) {
    match body.get(base..base + 64) {
        Some(block) => classify(block.try_into().expect("64 bytes")),
        None => {
            let mut block = [b' '; 64];
            let rest = body.get(base..).unwrap_or_default();
            block[..rest.len()].copy_from_slice(rest);
            classify(&block)
        }
    }
}

/// Bit `i` of the first mask is set where `block[i]` is special, and of the
/// second where it is a [`CUT`] byte.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn classify(block: &[u8; 64]) -> (u64, u64) {
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it,
    // which is why `target_arch = "x86_64"` is the only condition needed.
    // The callee reads nothing but `block` and takes no pointers.
    #[allow(unsafe_code)]
    unsafe {
        classify_sse2(block)
    }
}

/// Seven byte compares cover 16 bytes; a mask move takes the top bits, so
/// the bytes of 0x80 and up come for free.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8};
    let (chunks, _) = block.as_chunks::<16>();
    let (mut mask, mut cut) = (0u64, 0u64);
    for (k, chunk) in chunks.iter().enumerate() {
        let (lo, hi) = chunk.split_at(8);
        let word = |b: &[u8]| i64::from_le_bytes(b.try_into().expect("8 bytes"));
        let v = _mm_set_epi64x(word(hi), word(lo));
        let hit = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        let [lf, cr, hash, nul, colon, star, percent] = SPECIAL.map(hit);
        let ends = _mm_or_si128(_mm_or_si128(lf, cr), nul);
        let marks = _mm_or_si128(_mm_or_si128(hash, colon), _mm_or_si128(star, percent));
        let any = _mm_or_si128(_mm_or_si128(ends, marks), v);
        mask |= u64::from(_mm_movemask_epi8(any) as u16) << (16 * k);
        cut |= u64::from(_mm_movemask_epi8(ends) as u16) << (16 * k);
    }
    (mask, cut)
}

/// Bit `i` is set where `block[i]` is special.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(super) fn classify(block: &[u8; 64]) -> (u64, u64) {
    portable(block)
}

/// The plain byte-by-byte classification, which every other form must equal.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable(block: &[u8; 64]) -> (u64, u64) {
    block.iter().enumerate().fold((0, 0), |(m, c), (i, b)| {
        (m | (u64::from(SPECIAL.contains(b) || *b >= 0x80) << i), c | (u64::from(CUT.contains(b)) << i))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_equals_the_portable_form_for_every_byte_at_every_place() {
        for byte in 0..=255u8 {
            for at in 0..64 {
                let mut block = [b'a'; 64];
                block[at] = byte;
                assert_eq!(classify(&block), portable(&block), "byte {byte:#x} at {at}");
            }
        }
    }

    #[test]
    fn walks_every_special_byte_in_order_across_blocks_and_a_short_tail() {
        let mut body = vec![b'x'; 200];
        let expected = [0, 5, 63, 64, 65, 127, 128, 190, 199];
        for (i, at) in expected.iter().enumerate() {
            body[*at] = SPECIAL[i % SPECIAL.len()];
        }
        assert_eq!(Specials::new(&body, 0).collect::<Vec<_>>(), expected);
        assert_eq!(Specials::new(&body, 6).collect::<Vec<_>>(), &expected[2..]);
        assert_eq!(Specials::new(&body, 200).count(), 0);
        assert_eq!(Specials::new(b"", 0).count(), 0);
    }

    #[test]
    fn next_cut_skips_all_but_line_ends_and_nul() {
        let mut body = vec![b'x'; 150];
        for at in [3, 70, 140] {
            body[at] = b'#';
        }
        body[10] = 0xD0;
        body[100] = 0;
        body[149] = b'\n';
        let mut s = Specials::new(&body, 0);
        assert_eq!(s.next(), Some(3));
        assert_eq!(s.next_cut(), Some(100));
        assert_eq!(s.next(), Some(140));
        assert_eq!(s.next_cut(), Some(149));
        assert_eq!(s.next_cut(), None);
        assert_eq!(s.next(), None);
    }
}
