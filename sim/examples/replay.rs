//! Replays one sequence given as Rust-debug-ish words, for digging into a
//! divergence by hand: `cargo run -p robotsgate-sim --example replay -- seed 3 40`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let steps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(40);
    let actions = robotsgate_sim::plan::plan(seed, steps);
    match robotsgate_sim::run::run(testkit::Db::Sqlite, &actions, "replay") {
        Ok(t) => println!("held: {t:?}"),
        Err(d) => println!("diverged: {d:?}"),
    }
}
