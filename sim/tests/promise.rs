//! The gate's promise under sequences, with the real binaries: the
//! sequences that once broke it, then fixed seeds of random runs on SQLite
//! and on PostgreSQL (`scripts/soak-gate.sh` runs any number more).

use std::time::Duration;

use robotsgate_sim::check_actions;
use robotsgate_sim::plan::{Action, Refusal, Surface};
use rules::promise::Answer::{Bad, Failing, Good, Missing};
use testkit::Db;

/// How long a failing run may be shrunk in CI before it is reported.
const SHRINK: Duration = Duration::from_secs(120);

fn holds(db: Db, actions: &[Action], label: &str) {
    if let Err(report) = check_actions(db, actions, label, SHRINK) {
        panic!("{report}");
    }
}

/// The same bad body deployed again after a release and a good file is a
/// new change: held, alerted and mailed again (it went live unheld).
#[test]
fn the_same_bad_body_after_a_release_is_held_again() {
    use Action::*;
    let steps =
        [Serve(Bad(0)), Release(Surface::Cli), Serve(Good(0)), Serve(Bad(0)), Serve(Bad(0)), Release(Surface::Cli)];
    holds(Db::Sqlite, &steps, "bad-twice");
    // A rollback of a rollback through a 404, and through the other body.
    let steps = [Serve(Bad(1)), Release(Surface::Admin(1)), Serve(Missing), Serve(Good(1)), Serve(Bad(1))];
    holds(Db::Sqlite, &steps, "bad-after-404");
    let steps = [Serve(Bad(0)), Release(Surface::Api), Serve(Bad(1)), Serve(Good(0)), Serve(Bad(0)), Serve(Failing)];
    holds(Db::Sqlite, &steps, "bad-after-bad");
}

/// An upgrade that must fail (an unreadable token file, a port another
/// program holds, a bad certificate) leaves the old process serving, with
/// no refused request under load on either request path, and says why.
#[test]
fn an_upgrade_that_must_fail_leaves_the_old_process_serving() {
    use Action::*;
    let steps = [
        FailedUpgrade(0, Refusal::Token),
        FailedUpgrade(1, Refusal::Token),
        FailedUpgrade(0, Refusal::Port),
        FailedUpgrade(1, Refusal::Certificate),
        Serve(Bad(0)),
        FailedUpgrade(1, Refusal::Port),
        Upgrade(0),
        Upgrade(1),
        Release(Surface::Admin(0)),
        // Twice in a row: the second hands over from a process an upgrade started.
        Upgrade(0),
        Upgrade(0),
        Serve(Bad(1)),
    ];
    holds(Db::Sqlite, &steps, "failed-upgrades");
}

/// `admin_token_file` alone releases from the console's form, the API and
/// the gateway's admin API, as from the CLI.
#[test]
fn every_surface_releases_with_the_token_file_alone() {
    use Action::*;
    let steps = [
        Serve(Bad(0)),
        Release(Surface::Console),
        Serve(Good(0)),
        Serve(Bad(1)),
        Release(Surface::Api),
        Serve(Good(1)),
        Serve(Bad(0)),
        Release(Surface::Admin(1)),
        Release(Surface::Console),
    ];
    holds(Db::Sqlite, &steps, "surfaces");
}

#[test]
fn fixed_seeds_hold_on_sqlite() {
    for seed in [1, 2] {
        if let Err(report) = robotsgate_sim::check_seed(Db::Sqlite, seed, 40, SHRINK) {
            panic!("{report}");
        }
    }
}

#[test]
fn fixed_seeds_hold_on_postgres() {
    for seed in [3, 4] {
        if let Err(report) = robotsgate_sim::check_seed(Db::Postgres, seed, 40, SHRINK) {
            panic!("{report}");
        }
    }
}

/// Every surface takes the token from `admin_token_file` (named relative
/// to the config, nothing in the environment): a wrong token and none are
/// refused and release nothing; the right one releases.
#[test]
fn every_surface_refuses_a_wrong_token_and_none() {
    use robotsgate_sim::plan::Surface::{Admin, Api, Console};
    use robotsgate_sim::run::release_with;
    let dir = testkit::temp_dir("sim-tokens");
    let mut w = robotsgate_sim::world::World::start(Db::Sqlite, &dir, Good(0)).expect("SQLite");
    w.serve(Bad(0));
    w.refresh().unwrap();
    let held = |w: &robotsgate_sim::world::World| w.gateways[0].status().unwrap()["held"].is_object();
    assert!(held(&w));
    for surface in [Console, Api, Admin(0), Admin(1)] {
        for token in [Some("wrong-token"), None] {
            let (status, said) = release_with(&w, surface, token).unwrap();
            assert!(matches!(status, 401 | 403), "{surface:?} with {token:?}: {status} {said}");
        }
        w.refresh().unwrap();
        assert!(held(&w), "{surface:?}: a refused release released");
    }
    for (i, surface) in [Console, Api, Admin(1)].into_iter().enumerate() {
        let (status, said) = release_with(&w, surface, Some(robotsgate_sim::world::TOKEN)).unwrap();
        assert!(matches!(status, 200 | 202), "{surface:?}: {status} {said}");
        w.refresh().unwrap();
        assert!(!held(&w), "{surface:?} released nothing");
        // The next deploy of a breaking body, for the next surface.
        w.serve(Good(0));
        w.refresh().unwrap();
        w.serve(if i % 2 == 0 { Bad(1) } else { Bad(0) });
        w.refresh().unwrap();
        assert!(held(&w));
    }
    drop(w);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway restarted, or replaced by a new replica, during an outage
/// while a change is held keeps saying so: crawlers get the copy labelled
/// `held`, and `/status` names the hold (it said `last-good` and nothing).
#[test]
fn a_restart_during_an_outage_keeps_the_hold() {
    use Action::*;
    let steps = [Serve(Bad(0)), Serve(Failing), KillGateway(1), RestartGateway(0), NewReplica(1), Serve(Bad(0))];
    holds(Db::Sqlite, &steps, "outage-restart");
    let steps = [Serve(Bad(1)), Serve(Failing), NewReplica(0), Upgrade(0), Serve(Good(0))];
    holds(Db::Postgres, &steps, "outage-replica");
    // A body held once, then served after a 404 left no good copy: a new
    // replica takes it from the fleet during an outage (it passed the 503).
    let steps = [Serve(Bad(0)), Serve(Missing), Serve(Bad(0)), Serve(Failing), NewReplica(1)];
    holds(Db::Postgres, &steps, "served-after-404");
}

/// A release while the origin fails ends the hold at once: the last good
/// copy is served as `last-good`, a second release finds nothing held, and
/// the released body is served when the origin answers it again.
#[test]
fn a_release_during_an_outage_ends_the_hold() {
    use Action::*;
    let steps = [
        Serve(Bad(0)),
        Serve(Failing),
        Release(Surface::Console),
        Release(Surface::Api),
        KillGateway(0),
        Serve(Bad(0)),
        Serve(Good(0)),
        Serve(Bad(0)),
    ];
    holds(Db::Sqlite, &steps, "release-in-outage");
}
