//! The steps of a run, drawn from a seed: what the origin serves (from a
//! small alphabet, so that answers repeat), releases from every surface,
//! and the disturbances an operator causes (a `kill -9` or a restart of a
//! gateway or a monitor, an upgrade, an upgrade that must fail). The same
//! seed always gives the same steps.

use rules::promise::{Answer, Step};

/// Where a release comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// `robots-monitor release SITE`.
    Cli,
    /// The console's form (`POST /sites/NAME/release`).
    Console,
    /// The API (`POST /api/sites/NAME/release`).
    Api,
    /// A gateway's admin API (`POST /release?site=NAME`).
    Admin(usize),
}

/// Why an upgrade must fail before the old process is signalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `admin_token_file` names a file that cannot be read.
    Token,
    /// A listener's port is held by another process.
    Port,
    /// A TLS listener's certificate is not one.
    Certificate,
}

/// One step of a run, as done to the real processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The origin answers this; every gateway refreshes.
    Serve(Answer),
    /// A release from `Surface`; every gateway refreshes.
    Release(Surface),
    /// Every gateway refreshes.
    Refresh,
    /// `kill -9` of gateway N, then a start.
    KillGateway(usize),
    /// SIGTERM to gateway N, then a start.
    RestartGateway(usize),
    /// `robots-proxy upgrade --from PID` of gateway N, under load.
    Upgrade(usize),
    /// An upgrade of gateway N that must fail, under load: the old process serves on.
    FailedUpgrade(usize, Refusal),
    /// `kill -9` of monitor N, then a start.
    KillMonitor(usize),
    /// Gateway N replaced by a new replica: `kill -9`, its state folder
    /// gone (a new machine), a cold start from the fleet's database.
    NewReplica(usize),
}

impl Action {
    /// What the promise's model sees of it.
    pub fn step(self) -> Step {
        match self {
            Action::Serve(answer) => Step::Serve(answer),
            Action::Release(_) => Step::Release,
            Action::Refresh => Step::Refresh,
            _ => Step::Disturb,
        }
    }
}

/// A small deterministic generator (SplitMix64): no dependency, and the
/// same sequence on every machine.
#[derive(Clone, Debug)]
pub struct Seeded(u64);

impl Seeded {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.bits() % n.max(1)
    }
}

/// How many gateways and monitors a run has.
pub const GATEWAYS: usize = 2;
/// See [`GATEWAYS`].
pub const MONITORS: usize = 2;

/// `steps` steps drawn from `seed`. The draw follows the model as it goes,
/// so that releases come mostly while something is held (a release with
/// nothing held is tried too, and must be refused).
pub fn plan(seed: u64, steps: usize) -> Vec<Action> {
    let mut rng = Seeded::new(seed);
    let mut model = rules::promise::Gate::new(Answer::Good(0));
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let gateway = rng.below(GATEWAYS as u64) as usize;
        let roll = match (model.held.is_some(), rng.below(100)) {
            // Held: a release one time in three.
            (true, r) if r < 33 => 50,
            (true, r) => r,
            // Nothing held: a release one time in twenty-five.
            (false, r) if (50..=66).contains(&r) && rng.below(4) > 0 => rng.below(50),
            (false, r) => r,
        };
        let action = match roll {
            0..=49 => Action::Serve(match rng.below(100) {
                0..=17 => Answer::Good(0),
                18..=27 => Answer::Good(1),
                28..=52 => Answer::Bad(0),
                53..=65 => Answer::Bad(1),
                66..=77 => Answer::Missing,
                _ => Answer::Failing,
            }),
            50..=66 => Action::Release(match rng.below(4) {
                0 => Surface::Cli,
                1 => Surface::Console,
                2 => Surface::Api,
                _ => Surface::Admin(gateway),
            }),
            67..=70 => Action::Refresh,
            71..=78 => Action::KillGateway(gateway),
            79..=82 => Action::RestartGateway(gateway),
            83..=87 => Action::Upgrade(gateway),
            88..=93 => Action::FailedUpgrade(
                gateway,
                match rng.below(3) {
                    0 => Refusal::Token,
                    1 => Refusal::Port,
                    _ => Refusal::Certificate,
                },
            ),
            94..=96 => Action::NewReplica(gateway),
            _ => Action::KillMonitor(rng.below(MONITORS as u64) as usize),
        };
        model.step(action.step());
        out.push(action);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_steps_and_answers_repeat() {
        assert_eq!(plan(7, 200), plan(7, 200));
        assert_ne!(plan(7, 50), plan(8, 50));
        let steps = plan(1, 300);
        let bad = steps.iter().filter(|a| **a == Action::Serve(Answer::Bad(0))).count();
        assert!(bad > 10, "the same bad body comes again and again: {bad}");
        for kind in [Action::Refresh, Action::KillMonitor(0)] {
            assert!(steps.iter().any(|a| std::mem::discriminant(a) == std::mem::discriminant(&kind)));
        }
    }
}
