//! The User-Agents a thread last asked a catalogue about, and the words
//! that claimed each. A gateway asks about every request's User-Agent,
//! and the same few browsers and crawlers send most of them: finding the
//! words anew (an automaton over the whole User-Agent) was about 2,100 of
//! a proxied request's 28,000 instructions, where a repeat is now a hash
//! and a compare. Kept per thread, so no lock is taken; keyed by the
//! catalogue's id, so a reloaded catalogue never sees another's answers.

use std::cell::RefCell;

/// Sets in a thread's table; a User-Agent belongs in one, by its hash, and
/// a set holds two, the more recently kept first. With one place a
/// User-Agent, the benchmark's 20 User-Agents in 64 places missed two
/// times in five: pairs that shared a place evicted each other.
const SLOTS: usize = 64;
const WAYS: usize = 2;
/// Longer User-Agents are not kept: real ones are a few hundred bytes, and
/// one made long to fill the table costs its copy only once.
const LONGEST: usize = 512;

/// What a catalogue answered for one User-Agent: word indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    pub first: Option<u32>,
    /// Empty for nearly every User-Agent, so a hit does not allocate.
    pub others: Vec<u32>,
}

#[derive(Default)]
struct Slot {
    catalogue: u64,
    agent: Box<str>,
    answer: Answer,
}

thread_local! {
    static RECENT: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// The place of `agent` in a table: eight bytes at a time, each multiplied
/// in (the same mix as the rules index's literals), folded at the end.
fn place(agent: &[u8]) -> usize {
    const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = agent.len() as u64;
    let mut chunks = agent.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ u64::from_le_bytes(c.try_into().unwrap_or_default())).wrapping_mul(MUL);
    }
    let tail = chunks.remainder().iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
    h = (h ^ tail).wrapping_mul(MUL);
    (h >> 58) as usize % SLOTS
}

/// The answer kept for `agent` from catalogue `catalogue`, if this thread
/// has it.
pub(crate) fn get(catalogue: u64, agent: &str) -> Option<Answer> {
    if agent.len() > LONGEST {
        return None;
    }
    RECENT.with(|recent| {
        let recent = recent.borrow();
        let at = place(agent.as_bytes()) * WAYS;
        let set = recent.get(at..at + WAYS)?;
        set.iter().find(|s| s.catalogue == catalogue && *s.agent == *agent).map(|s| s.answer.clone())
    })
}

/// Keeps `answer` for `agent` from catalogue `catalogue`, in place of
/// whatever held its slot.
pub(crate) fn put(catalogue: u64, agent: &str, answer: &Answer) {
    if agent.len() > LONGEST {
        return;
    }
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        if recent.is_empty() {
            recent.resize_with(SLOTS * WAYS, Slot::default);
        }
        let at = place(agent.as_bytes()) * WAYS;
        let set = &mut recent[at..at + WAYS];
        // The older of the two goes; the new one leads.
        set.rotate_right(1);
        let slot = &mut set[0];
        slot.catalogue = catalogue;
        slot.agent = agent.into();
        slot.answer = answer.clone();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_per_catalogue_and_user_agent() {
        let a = Answer { first: Some(3), others: vec![5] };
        put(1, "Mozilla/5.0 Googlebot/2.1", &a);
        assert_eq!(get(1, "Mozilla/5.0 Googlebot/2.1"), Some(a.clone()));
        assert_eq!(get(2, "Mozilla/5.0 Googlebot/2.1"), None, "another catalogue");
        assert_eq!(get(1, "Mozilla/5.0 Googlebot/2.2"), None, "another User-Agent");
        let long = "x".repeat(LONGEST + 1);
        put(1, &long, &a);
        assert_eq!(get(1, &long), None, "too long to keep");
        // Two User-Agents of one set are both kept; a third replaces the
        // older.
        let same: Vec<String> = (0..).map(|i| format!("ua {i}")).filter(|a| place(a.as_bytes()) == 0).take(3).collect();
        for (i, agent) in same.iter().enumerate() {
            put(9, agent, &Answer { first: Some(i as u32), others: Vec::new() });
        }
        assert_eq!(get(9, &same[0]), None, "the oldest of three");
        assert_eq!(get(9, &same[1]).and_then(|a| a.first), Some(1));
        assert_eq!(get(9, &same[2]).and_then(|a| a.first), Some(2));
        // Every place is reachable and one User-Agent replaces another.
        let mut places = std::collections::HashSet::new();
        for i in 0..10_000 {
            let agent = format!("agent {i}");
            places.insert(place(agent.as_bytes()));
            put(7, &agent, &Answer { first: Some(i), others: Vec::new() });
            assert_eq!(get(7, &agent).and_then(|a| a.first), Some(i));
        }
        assert_eq!(places.len(), SLOTS);
    }
}
