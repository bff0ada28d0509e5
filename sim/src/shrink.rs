//! The shortest sequence that still breaks the promise: steps are taken
//! away, halves first and then one at a time, while the run still
//! diverges, within a time budget (each try starts every process anew).

use std::time::{Duration, Instant};

use testkit::Db;

use crate::plan::Action;
use crate::run::{Divergence, run};

/// Shrinks `actions`, which diverged as `first`, for at most `budget`.
/// Returns the shortest sequence found and its divergence.
pub fn shrink(db: Db, actions: &[Action], first: Divergence, budget: Duration) -> (Vec<Action>, Divergence) {
    let until = Instant::now() + budget;
    // Steps after the divergence never matter.
    let cut = first.step.map_or(0, |s| s + 1);
    let mut best: Vec<Action> = actions[..cut.min(actions.len())].to_vec();
    let mut why = first;
    let mut chunk = best.len().div_ceil(2).max(1);
    while chunk >= 1 && Instant::now() < until {
        let mut i = 0;
        let mut progressed = false;
        while i < best.len() && Instant::now() < until {
            let mut tried = best.clone();
            let end = (i + chunk).min(tried.len());
            tried.drain(i..end);
            match run(db, &tried, "shrink") {
                Err(d) => {
                    let cut = d.step.map_or(0, |s| s + 1).min(tried.len());
                    tried.truncate(cut);
                    best = tried;
                    why = d;
                    progressed = true;
                }
                Ok(_) => i += chunk,
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
    }
    (best, why)
}
