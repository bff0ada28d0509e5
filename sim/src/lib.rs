//! The gate's promise under every sequence: seeded random runs of the real
//! `robots-proxy` and `robots-monitor`, checked after every step against
//! the promise's model ([`rules::promise`]), as FoundationDB and
//! TigerBeetle test their state machines.
//!
//! A run starts an origin, a database (SQLite or PostgreSQL), an SMTP
//! server, two gateways (one on each request path) and two monitors
//! ([`world`]); draws its steps from a seed ([`plan`]): origin answers from
//! a small alphabet so that the same bad body comes twice, releases from
//! the CLI, the console, the API and a gateway's admin API, `kill -9`s and
//! restarts, upgrades under load and upgrades that must fail; and after
//! each step compares what crawlers get, `/status`, the alert rows and the
//! mailbox with the model ([`run`]). A divergence prints the seed and the
//! shortest sequence that reproduces it ([`shrink`]).
//!
//! `cargo test -p robotsgate-sim` runs fixed seeds and the sequences that
//! once broke the promise; `scripts/soak-gate.sh SECONDS` runs new seeds
//! for as long as asked.

pub mod plan;
pub mod run;
pub mod shrink;
pub mod world;

use std::time::Duration;

use testkit::Db;

/// Runs seed `seed` for `steps` steps on `db`; on a divergence, shrinks it
/// for at most `shrink_for` and returns a report naming the seed, the
/// step, what differed and the shortest sequence found.
pub fn check_seed(db: Db, seed: u64, steps: usize, shrink_for: Duration) -> Result<Option<run::Tally>, String> {
    let actions = plan::plan(seed, steps);
    check_actions(db, &actions, &format!("seed {seed}"), shrink_for)
}

/// [`check_seed`] for a given sequence, named `label` in the report.
pub fn check_actions(
    db: Db,
    actions: &[plan::Action],
    label: &str,
    shrink_for: Duration,
) -> Result<Option<run::Tally>, String> {
    match run::run(db, actions, &label.replace(' ', "-")) {
        Ok(tally) => Ok(tally),
        Err(d) => {
            let (short, why) = shrink::shrink(db, actions, d.clone(), shrink_for);
            Err(format!(
                "{label} on {db:?} diverged from the promise after step {:?}: {}\n\
                 the shortest sequence found ({} steps) diverges after step {:?}: {}\n{short:#?}",
                d.step,
                d.what,
                short.len(),
                why.step,
                why.what
            ))
        }
    }
}
