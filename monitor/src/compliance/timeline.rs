//! A site's served outcomes over time, from the history: every recorded
//! state (a file's rules, or a status read as allow all or disallow all)
//! from the moment the monitor saw it.

use std::collections::HashMap;

use robotsgate_compliance::{At, Outcome, Timeline};

use crate::store::{Store, StoreError};

/// The timeline of `site`, from its recorded states, with the outcome of
/// each revision it served (by id).
pub async fn of(store: &Store, site: &str) -> Result<(Timeline, HashMap<i64, Outcome>), StoreError> {
    let mut timeline = Timeline::new();
    let mut bodies: HashMap<i64, Outcome> = HashMap::new();
    for state in store.history(site).await? {
        let outcome = match (state.policy.as_str(), state.revision_id) {
            ("rules", Some(rev)) => match bodies.get(&rev) {
                Some(o) => o.clone(),
                None => {
                    let body = store.revision_body(site, rev).await?.unwrap_or_default();
                    let o = Outcome::body(rev, &body);
                    bodies.insert(rev, o.clone());
                    o
                }
            },
            (policy, _) => outcome_of(policy, state.reason.as_deref().unwrap_or("")),
        };
        timeline.push(At::ms(state.at), outcome);
    }
    Ok((timeline, bodies))
}

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
