//! The gate's promise, as a model: given the sequence of what an origin
//! served, the releases, restarts, upgrades and time passing, what every
//! gateway must serve, which change is held, and exactly which hold alerts
//! and resolved notices must exist.
//!
//! It is written from the promises `docs/OPERATIONS.md` ("The gate") makes,
//! not from the gateway's code, so that random runs of the real binaries
//! can be checked against it (`sim/`, `scripts/soak-gate.sh`):
//!
//! 1. A change that breaks a declaration (here: a file that disallows `/`
//!    replacing one that allowed it) is held: crawlers keep the last good
//!    copy (`X-Robots-Source: held`), and the hold raises one alert.
//! 2. A release frees one change, once. The released outcome is served; once
//!    something else replaced it, the same bytes arriving again are a new
//!    change, held again with a new alert.
//! 3. A hold ends when it is released, when the origin's next answer breaks
//!    nothing (the good file back, a 404, another file), when another held
//!    change replaces it, or when the last good copy outlives
//!    `max_staleness`; each end gives one resolved notice.
//! 4. An answer that means "disallow all" (5xx, no answer) is never adopted:
//!    the last good copy is served through it (`last-good`), and a hold
//!    stands through it (`held`) until it is released; a file released
//!    then is the good copy, served through the failure.
//! 5. With no good copy (a cold start, or after a 404) there is nothing to
//!    keep: the origin's answer passes, held by nothing.
//! 6. A restart, a `kill -9`, an upgrade (one that succeeds, or one that
//!    must fail and leaves the old process serving), another replica
//!    joining: none changes what crawlers get, which change is held, or how
//!    many alerts exist.
//!
//! One site, declared with the floor alone: that is the deploy of
//! `Disallow: /` the gate exists for, and every other declaration is the same
//! judgement on other URLs.

/// What the origin answers for `/robots.txt`: one of a small alphabet, so
/// that a random sequence repeats answers (the same bad body twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// A file that keeps `/` open for search crawlers (index into the good files).
    Good(u8),
    /// A file that closes `/` for them (index into the bad files).
    Bad(u8),
    /// A 404: "no file", everything allowed.
    Missing,
    /// A 5xx: "disallow all" to Google, never adopted.
    Failing,
}

impl Answer {
    /// Whether the answer is a file.
    pub fn is_file(self) -> bool {
        matches!(self, Answer::Good(_) | Answer::Bad(_))
    }
}

/// Where a served copy came from, as `X-Robots-Source` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Fresh from the origin.
    Origin,
    /// The last good copy, served through an origin failure.
    LastGood,
    /// The last good copy, kept because a change is held.
    Held,
}

impl Source {
    /// The header's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Origin => "origin",
            Source::LastGood => "last-good",
            Source::Held => "held",
        }
    }
}

/// What a crawler gets for `/robots.txt` from a gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// A copy from the gateway's store: the file and where it came from.
    Copy(Answer, Source),
    /// Nothing kept: the origin's answer now passes through.
    Passed,
}

/// One hold of one outcome, from its start to its end: one alert, and one
/// resolved notice once `ended`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Episode {
    /// The held answer.
    pub outcome: Answer,
    /// Whether it is over (released, or ended another way).
    pub ended: bool,
    /// Whether a release ended it.
    pub released: bool,
}

/// One event of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The origin answers this from now on, and every gateway refreshes.
    Serve(Answer),
    /// The owner releases every held change (from any surface), and every
    /// gateway refreshes. Nothing happens with nothing held.
    Release,
    /// Every gateway refreshes without a change at the origin.
    Refresh,
    /// Time passes beyond `max_staleness` (then every gateway refreshes).
    Age,
    /// Something that must change nothing a crawler sees or an alert says:
    /// a restart, a `kill -9`, an upgrade (good or one that must fail), a
    /// monitor's death, a replica joining.
    Disturb,
}

/// The gate of one site, as the promise has it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    /// What the origin answers now.
    pub origin: Option<Answer>,
    /// The copy kept (a file of the good or a released bad alphabet), if any.
    kept: Option<(Answer, Source)>,
    /// The change held now, if any.
    pub held: Option<Answer>,
    /// Released outcomes whose release is not spent yet.
    released: Vec<Answer>,
    /// The file served most recently from the origin (the outcome a release
    /// is spent on replacing): the kept file, or `Missing` after a 404.
    current: Option<Answer>,
    /// Every hold so far, in order.
    pub episodes: Vec<Episode>,
    /// The kept copy outlived `max_staleness` (until the next refresh).
    stale: bool,
}

impl Gate {
    /// A gate whose origin answers `first` and whose gateways have read it.
    pub fn new(first: Answer) -> Gate {
        let mut gate = Gate::default();
        gate.step(Step::Serve(first));
        gate
    }

    /// What every gateway serves now.
    pub fn served(&self) -> Served {
        match self.kept {
            Some((file, source)) => Served::Copy(file, source),
            None => Served::Passed,
        }
    }

    /// How many alerts holds raised (one an episode).
    pub fn alerts(&self) -> usize {
        self.episodes.len()
    }

    /// How many resolved notices (one an ended episode).
    pub fn resolved(&self) -> usize {
        self.episodes.iter().filter(|e| e.ended).count()
    }

    /// Applies one step.
    pub fn step(&mut self, step: Step) {
        match step {
            Step::Serve(answer) => {
                self.origin = Some(answer);
                self.refresh();
            }
            Step::Release => {
                // The hold ends with the release, whatever the origin
                // answers next: the released outcome is served when it
                // comes, and a failure meanwhile is served through with
                // the last good copy, no longer labelled held.
                if let Some(held) = self.held.take() {
                    if let Some(e) = self.episodes.iter_mut().rev().find(|e| e.outcome == held && !e.ended) {
                        e.ended = true;
                        e.released = true;
                    }
                    if !self.released.contains(&held) {
                        self.released.push(held);
                    }
                    // Released while the origin fails: the released file is
                    // the good copy now, served through the failure, as a
                    // gateway starting then would take it from the fleet.
                    if self.origin == Some(Answer::Failing) && held.is_file() {
                        self.kept = Some((held, Source::LastGood));
                        self.current = Some(held);
                    }
                }
                self.refresh();
            }
            Step::Refresh | Step::Disturb => self.refresh(),
            Step::Age => {
                // The kept copy outlives max_staleness: it is no good copy
                // any more, so a held change passes (its hold ends) and a
                // failure passes through.
                // A copy served fresh from the origin is read again at
                // every refresh; one kept through a hold or a failure ages.
                self.stale = matches!(self.kept, Some((_, Source::Held | Source::LastGood)));
                self.refresh();
            }
        }
    }

    /// Ends the hold standing now, if any (not by a release).
    fn end_hold(&mut self) {
        if let Some(held) = self.held.take()
            && let Some(e) = self.episodes.iter_mut().rev().find(|e| e.outcome == held && !e.ended)
        {
            e.ended = true;
        }
    }

    /// Every gateway reads the origin's answer.
    fn refresh(&mut self) {
        let Some(answer) = self.origin else { return };
        let stale = std::mem::take(&mut self.stale);
        match answer {
            Answer::Failing => match self.kept {
                Some((file, _)) if !stale => {
                    let source = if self.held.is_some() { Source::Held } else { Source::LastGood };
                    self.kept = Some((file, source));
                }
                _ => {
                    // Nothing good to keep: the failure passes, and so does
                    // whatever was held.
                    self.kept = None;
                    self.end_hold();
                }
            },
            Answer::Good(_) | Answer::Bad(_) | Answer::Missing => {
                let breaks = match self.kept {
                    // The same file as served: nothing changes.
                    Some((file, _)) if file == answer => false,
                    Some((Answer::Good(_), _)) => matches!(answer, Answer::Bad(_)) && !stale,
                    _ => false,
                };
                if breaks && !self.released.contains(&answer) {
                    if self.held != Some(answer) {
                        self.end_hold();
                        self.episodes.push(Episode { outcome: answer, ended: false, released: false });
                        self.held = Some(answer);
                    }
                    if let Some((file, _)) = self.kept {
                        self.kept = Some((file, Source::Held));
                    }
                    return;
                }
                self.end_hold();
                // The outcome served until now gives way: its release is spent.
                if let Some(current) = self.current.filter(|c| *c != answer) {
                    self.released.retain(|r| *r != current);
                }
                self.current = Some(answer);
                self.kept = answer.is_file().then_some((answer, Source::Origin));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Answer::*;

    fn run(steps: &[Step]) -> Gate {
        let mut gate = Gate::new(Good(0));
        for s in steps {
            gate.step(*s);
        }
        gate
    }

    #[test]
    fn a_deploy_of_disallow_all_is_held_and_alerted_once() {
        let gate = run(&[Step::Serve(Bad(0)), Step::Refresh, Step::Disturb, Step::Serve(Failing)]);
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::Held));
        assert_eq!((gate.alerts(), gate.resolved()), (1, 0));
    }

    #[test]
    fn the_same_bad_body_after_a_release_and_a_good_file_is_a_new_change() {
        let mut gate = run(&[Step::Serve(Bad(0)), Step::Release]);
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::Origin));
        assert_eq!((gate.alerts(), gate.resolved()), (1, 1));
        gate.step(Step::Serve(Good(0)));
        gate.step(Step::Serve(Bad(0)));
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::Held));
        assert_eq!((gate.alerts(), gate.resolved()), (2, 1));
    }

    #[test]
    fn a_release_is_not_spent_by_failures_or_by_the_body_itself() {
        let gate = run(&[Step::Serve(Bad(0)), Step::Release, Step::Serve(Failing), Step::Serve(Bad(0))]);
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::Origin));
        assert_eq!(gate.alerts(), 1);
    }

    #[test]
    fn holds_end_when_a_file_breaks_nothing_or_another_is_held() {
        let gate = run(&[Step::Serve(Bad(0)), Step::Serve(Bad(1)), Step::Serve(Good(1))]);
        assert_eq!(gate.served(), Served::Copy(Good(1), Source::Origin));
        assert_eq!((gate.alerts(), gate.resolved()), (2, 2));
        let gate = run(&[Step::Serve(Bad(0)), Step::Serve(Good(0)), Step::Serve(Bad(0))]);
        assert_eq!((gate.alerts(), gate.resolved()), (2, 1), "held again after it ended: a new episode");
    }

    #[test]
    fn with_no_good_copy_the_origin_passes() {
        let gate = run(&[Step::Serve(Missing), Step::Serve(Bad(0))]);
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::Origin));
        assert_eq!(gate.alerts(), 0);
        let gate = run(&[Step::Serve(Missing), Step::Serve(Failing)]);
        assert_eq!(gate.served(), Served::Passed);
    }

    #[test]
    fn a_failure_keeps_the_last_good_copy_until_it_is_too_old() {
        let mut gate = run(&[Step::Serve(Failing)]);
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::LastGood));
        gate.step(Step::Age);
        assert_eq!(gate.served(), Served::Passed);
        let gate = run(&[Step::Serve(Bad(0)), Step::Age]);
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::Origin), "a stale copy holds nothing");
        assert_eq!((gate.alerts(), gate.resolved()), (1, 1));
    }

    #[test]
    fn a_release_during_an_outage_ends_the_hold_and_the_released_body_comes_later() {
        let mut gate = run(&[Step::Serve(Bad(0)), Step::Serve(Failing)]);
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::Held));
        gate.step(Step::Release);
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::LastGood), "the released file is the good copy");
        assert_eq!((gate.held, gate.alerts(), gate.resolved()), (None, 1, 1));
        gate.step(Step::Release);
        assert_eq!(gate.resolved(), 1, "nothing more to release");
        gate.step(Step::Serve(Bad(0)));
        assert_eq!(gate.served(), Served::Copy(Bad(0), Source::Origin));
        // Replaced, then deployed again: held again.
        gate.step(Step::Serve(Good(0)));
        gate.step(Step::Serve(Bad(0)));
        assert_eq!((gate.served(), gate.alerts()), (Served::Copy(Good(0), Source::Held), 2));
        // A deletion released during an outage: the good copy stays.
        let gate = run(&[Step::Serve(Missing), Step::Serve(Good(0)), Step::Serve(Failing), Step::Release]);
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::LastGood));
    }

    #[test]
    fn a_release_with_nothing_held_changes_nothing() {
        let gate = run(&[Step::Release, Step::Serve(Bad(0))]);
        assert_eq!(gate.served(), Served::Copy(Good(0), Source::Held));
    }
}
