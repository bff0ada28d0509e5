//! A 256-bit set of the product tokens a file's groups name, keyed by
//! length and first and last byte (case folded): most crawlers a file
//! does not name are told so without comparing a byte of their name.
//!
//! The per-call API (`is_allowed(agent, url)`) looks the agent up on every
//! check, and a crawler that falls to `*` is compared with every named
//! token of its length. On a file with a dozen agent lines that lookup was
//! a tenth of a check.

/// The set. A token in it may be named; one not in it is not.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AgentFilter([u64; 4]);

/// The bit of `agent`. `| 0x20` folds ASCII letters to lower case and maps
/// every other byte to itself or to one other byte, so two names equal
/// ignoring ASCII case share a bit.
#[inline]
fn bit(agent: &[u8]) -> usize {
    let (first, last) = match (agent.first(), agent.last()) {
        (Some(&f), Some(&l)) => (usize::from(f | 0x20), usize::from(l | 0x20)),
        _ => (0, 0),
    };
    (agent.len().wrapping_mul(37) ^ first.wrapping_mul(11) ^ last.wrapping_mul(3)) & 255
}

impl AgentFilter {
    /// The set of `tokens`.
    pub fn of<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> AgentFilter {
        let mut set = AgentFilter::default();
        for t in tokens {
            let b = bit(t);
            set.0[b / 64] |= 1 << (b % 64);
        }
        set
    }

    /// False when no token of the set equals `agent` ignoring ASCII case.
    #[inline]
    pub fn may_hold(&self, agent: &[u8]) -> bool {
        let b = bit(agent);
        self.0[b / 64] >> (b % 64) & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_held_token_passes() {
        let tokens: [&[u8]; 6] = [b"googlebot", b"a", b"x-1_y", b"bingbot", b"\xff", b"gptbot"];
        let set = AgentFilter::of(tokens);
        for t in tokens {
            let upper = t.to_ascii_uppercase();
            let mixed: Vec<u8> =
                t.iter().enumerate().map(|(i, b)| if i % 2 == 0 { b.to_ascii_uppercase() } else { *b }).collect();
            for spelling in [t.to_vec(), upper, mixed] {
                assert!(set.may_hold(&spelling), "{:?}", String::from_utf8_lossy(&spelling));
            }
        }
        // Not a proof of usefulness, but a set of six must turn most names away.
        let turned_away = (0..1000).filter(|i| !set.may_hold(format!("crawler{i}").as_bytes())).count();
        assert!(turned_away > 900, "{turned_away}");
        assert!(!AgentFilter::default().may_hold(b""));
    }
}
