//! A site's served outcomes over time, from the history: every recorded
//! state (a file's rules, or a status read as allow all or disallow all)
//! from the moment the monitor saw it. A change the gate held at the edge
//! (`gate_holds`) was not served while held: crawlers kept the copy before
//! it, so it joins the timeline when it was released, or not at all.

use std::collections::HashMap;

use robotsgate_compliance::{At, Outcome, Timeline};

use monitor::store::{Store, StoreError};

/// The timeline of `site`, from its recorded states and, before the first
/// of them, its imported history (`import-history`), with the outcome of
/// each revision it served (by id) and when the timeline starts.
pub async fn of(store: &Store, site: &str) -> Result<(Timeline, HashMap<i64, Outcome>, Option<i64>), StoreError> {
    let mut timeline = Timeline::new();
    let mut bodies: HashMap<i64, Outcome> = HashMap::new();
    let mut hashes: HashMap<i64, String> = HashMap::new();
    let holds = robotsgate_history::gate::holds(store.pool(), Some(site), true)
        .await
        .map_err(|source| StoreError::Query { doing: "reading the gate's holds", source })?;
    let states = store.history(site).await?;
    let first_monitored = states.first().map_or(i64::MAX, |s| s.at);
    let imported = robotsgate_history::imported::imported(store.pool(), site)
        .await
        .map_err(|source| StoreError::Query { doing: "reading imported history", source })?;
    let mut start = (first_monitored < i64::MAX).then_some(first_monitored);
    // History from before monitoring; the monitor's own states stand from
    // its first on.
    for i in imported.iter().filter(|i| i.at < first_monitored) {
        let outcome = match i.revision_id {
            Some(rev) => {
                let body = store.revision_body(site, rev).await?.unwrap_or_default();
                let o = Outcome::body(rev, &body);
                bodies.insert(rev, o.clone());
                o
            }
            None => Outcome::status(i.status.unwrap_or(404)),
        };
        timeline.push(At::ms(i.at), outcome);
        start = Some(start.map_or(i.at, |s| s.min(i.at)));
    }
    for state in states {
        let (outcome, key) = match (state.policy.as_str(), state.revision_id) {
            ("rules", Some(rev)) => match bodies.get(&rev) {
                Some(o) => (o.clone(), hashes.get(&rev).cloned()),
                None => {
                    let body = store.revision_body(site, rev).await?.unwrap_or_default();
                    let o = Outcome::body(rev, &body);
                    let hash = robotsgate_history::body_hash(&body);
                    bodies.insert(rev, o.clone());
                    hashes.insert(rev, hash.clone());
                    (o, Some(hash))
                }
            },
            (policy, _) => {
                let o = outcome_of(policy, state.reason.as_deref().unwrap_or(""));
                let key = o.status.map(robotsgate_history::gate::outcome_of_status);
                (o, key)
            }
        };
        let held = key.and_then(|k| holds.iter().find(|h| h.outcome == k && h.first_held <= state.at + HOLD_SLACK_MS));
        match held.map(|h| h.released_at) {
            None => timeline.push(At::ms(state.at), outcome),
            // Served from its release on; never, while it is held.
            Some(Some(released)) => timeline.push(At::ms(released.max(state.at)), outcome),
            Some(None) => {}
        }
    }
    Ok((timeline, bodies, start))
}

/// How much later than the monitor a gateway may first hold a change and
/// still be holding that same change: one refresh interval or so, with
/// room. A hold that began later than this held a later deploy of the same
/// bytes, not this one.
const HOLD_SLACK_MS: i64 = 60 * 60 * 1000;

/// A state with no file read back as an outcome: the status its reason
/// names, or no answer at all.
fn outcome_of(policy: &str, reason: &str) -> Outcome {
    let status = reason
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| w.len() == 3)
        .find_map(|w| w.parse::<u16>().ok().filter(|s| (100..600).contains(s)));
    match (policy, status) {
        (_, Some(s)) => Outcome::status(s),
        ("allow-all", None) => Outcome::status(404),
        _ => Outcome::unreachable(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reasons_read_back_as_outcomes() {
        let o = super::outcome_of("disallow-all", "robots.txt answered 503 (server error)");
        assert_eq!(o.status, Some(503));
        assert_eq!(super::outcome_of("allow-all", "robots.txt answered 410").status, Some(410));
        assert_eq!(super::outcome_of("disallow-all", "unreachable: timed out").status, None);
    }
}
