//! `soak-gate SECONDS [--sqlite] [--steps N] [--seed FIRST]`: random runs of
//! the gate against its promise for as long as asked, one new seed after
//! another, on PostgreSQL (`ROBOTSGATE_TEST_POSTGRES_URL`) unless told
//! SQLite; prints a summary line per seed and a total, and exits 1 with
//! the seed and the shortest failing sequence at the first divergence.

use std::time::{Duration, Instant};

use robotsgate_sim::check_seed;
use testkit::Db;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let secs: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(3600);
    let steps: usize = value("--steps").and_then(|s| s.parse().ok()).unwrap_or(120);
    let db = if args.iter().any(|a| a == "--sqlite") { Db::Sqlite } else { Db::Postgres };
    let started = Instant::now();
    let first: u64 = value("--seed").and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs())
    });
    let (mut seeds, mut total) = (0u64, robotsgate_sim::run::Tally::default());
    let mut seed = first;
    while started.elapsed() < Duration::from_secs(secs) {
        match check_seed(db, seed, steps, Duration::from_secs(600)) {
            Ok(Some(t)) => {
                println!(
                    "seed {seed}: {} steps, {} kills, {} upgrades and {} that had to fail, {} releases ({} with nothing held), {} holds, {} resolved, {}/{} requests failed under upgrades",
                    t.steps,
                    t.kills,
                    t.upgrades,
                    t.failed_upgrades,
                    t.releases,
                    t.refused_releases,
                    t.holds,
                    t.resolved,
                    t.load_failures,
                    t.load_requests
                );
                seeds += 1;
                total.steps += t.steps;
                total.kills += t.kills;
                total.upgrades += t.upgrades;
                total.failed_upgrades += t.failed_upgrades;
                total.releases += t.releases;
                total.refused_releases += t.refused_releases;
                total.holds += t.holds;
                total.resolved += t.resolved;
                total.load_requests += t.load_requests;
                total.load_failures += t.load_failures;
            }
            Ok(None) => {
                eprintln!("soak-gate: the database is not set up (run scripts/services.sh, or pass --sqlite)");
                std::process::exit(2);
            }
            Err(report) => {
                eprintln!("soak-gate: {report}");
                std::process::exit(1);
            }
        }
        seed = seed.wrapping_add(1);
    }
    println!(
        "soak-gate: {:?}, {}s, seeds {first}..{}: {seeds} runs, {} steps, {} kills, {} upgrades and {} that had to fail, {} releases ({} with nothing held), {} holds, {} resolved, {} of {} requests failed under upgrades; no divergence from the promise",
        db,
        started.elapsed().as_secs(),
        seed,
        total.steps,
        total.kills,
        total.upgrades,
        total.failed_upgrades,
        total.releases,
        total.refused_releases,
        total.holds,
        total.resolved,
        total.load_failures,
        total.load_requests
    );
}
