//! A site's crawl budget held by a fleet: two real gateways on one
//! PostgreSQL (one on the own path, one on Pingora's pipeline) each take
//! half of the budget, so the fleet admits the budget and no more; one is
//! killed with `kill -9`, and the other takes the whole budget within the
//! documented time (`dead_after + heartbeat`). Then a crawler sending ten
//! times its rate for a minute through both is held to the rate within one
//! burst, and its robots.txt fetches at the same pace are all 200.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use testkit::*;

mod support;
use support::spawn_proxy;

const GPTBOT: &str = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";
/// `proxy.fleet` of the test: a beat a second, gone after three.
const HEARTBEAT: Duration = Duration::from_secs(1);
const DEAD_AFTER: Duration = Duration::from_secs(3);

struct Gateway {
    proc: Proc,
    addr: SocketAddr,
    admin: SocketAddr,
}

fn gateway(dir: &Path, origin: SocketAddr, database: &str, fast: bool, budget: &str) -> Gateway {
    let (listen, admin) = (free_port(), free_port());
    let yaml = format!(
        "database: \"{database}\"
proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  admin_token: secret
  state_dir: state-{listen}
  refresh: 1s
  fast_path: {fast}
  fleet: {{ heartbeat: {}s, dead_after: {}s }}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {origin}
      budgets:
        - {budget}
",
        HEARTBEAT.as_secs(),
        DEAD_AFTER.as_secs()
    );
    let cfg = dir.join(format!("config-{listen}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    Gateway { proc: spawn_proxy(&cfg, &[addr, admin]), addr, admin }
}

fn get(addr: SocketAddr, path: &str) -> u16 {
    request(addr, "GET", "shop.test", path, &[("User-Agent", GPTBOT)]).map_or(0, |r| r.status)
}

/// The site's budgets in a gateway's `/status`.
fn budgets(g: &Gateway) -> serde_json::Value {
    let status = request(g.admin, "GET", "localhost", "/status", &[("Authorization", "Bearer secret")]);
    let json: serde_json::Value = status.map_or(serde_json::Value::Null, |s| serde_json::from_slice(&s.body).unwrap());
    json["sites"][0]["budgets"].clone()
}

fn share(g: &Gateway) -> f64 {
    budgets(g)["share"].as_f64().unwrap_or(-1.0)
}

fn admitted(addr: SocketAddr, n: usize, tag: &str) -> usize {
    (0..n).filter(|i| get(addr, &format!("/{tag}/{i}")) == 200).count()
}

#[test]
fn two_gateways_hold_the_fleets_budget_and_one_takes_it_all_when_the_other_dies() {
    let dir = temp_dir("budget-fleet");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    // A slow rate, so the test's own time adds no admission: the bursts
    // are what is counted.
    let budget = "{ crawler: GPTBot, rate: 1/h, burst: 10 }";
    let mut a = gateway(&dir, echo.addr, &database, true, budget);
    let b = gateway(&dir, echo.addr, &database, false, budget);
    assert!(
        eventually(20, || share(&a) == 0.5 && share(&b) == 0.5),
        "each takes half: {} {}",
        budgets(&a),
        budgets(&b)
    );
    assert_eq!(budgets(&a)["gateways"], 2);

    // The fleet admits the budget's burst, no more: 5 through each.
    let before = echo.completed().len();
    let (through_a, through_b) = (admitted(a.addr, 12, "a"), admitted(b.addr, 12, "b"));
    assert_eq!((through_a, through_b), (5, 5), "half the burst each");
    assert_eq!(echo.completed().len() - before, 10, "the origin saw the budget and no more");
    // robots.txt is never throttled, by either.
    for g in [&a, &b] {
        assert!((0..20).all(|_| get(g.addr, "/robots.txt") == 200));
    }

    // kill -9 one; the other takes the whole budget within dead_after + heartbeat.
    a.proc.kill();
    let killed = Instant::now();
    assert!(eventually(20, || share(&b) == 1.0), "the survivor takes it all: {}", budgets(&b));
    let took = killed.elapsed();
    let bound = DEAD_AFTER + HEARTBEAT + Duration::from_millis(500);
    assert!(took <= bound, "took {took:?}, documented bound {bound:?}");
    assert!(took >= DEAD_AFTER - HEARTBEAT, "never before the dead one could have been missed: {took:?}");
    // A re-share starts fresh buckets: the survivor admits the whole burst.
    // What the fleet admitted around the death is the documented bound:
    // the budget's burst, plus one burst (the re-share's), never more.
    let after = admitted(b.addr, 15, "after");
    assert_eq!(after, 10, "the whole burst, then 429s");
    assert!(through_a + through_b + after <= 2 * 10, "within one burst of the budget");
}

#[test]
fn a_crawler_at_ten_times_its_rate_for_a_minute_is_held_to_it_within_one_burst() {
    let dir = temp_dir("budget-minute");
    let Some(database) = fresh_database(Db::Postgres, &dir) else { return };
    let echo = Echo::start();
    echo.set_robots("User-agent: *\nDisallow: /private\n");
    // 60 a minute with a burst of 6 for the fleet; the crawler asks 10 a
    // second, alternating between the two gateways (both request paths).
    let budget = "{ purpose: ai-training, rate: 60/m, burst: 6 }";
    let a = gateway(&dir, echo.addr, &database, true, budget);
    let b = gateway(&dir, echo.addr, &database, false, budget);
    assert!(eventually(20, || share(&a) == 0.5 && share(&b) == 0.5));
    let start = Instant::now();
    let (mut asked, mut ok, mut robots_ok, mut robots_asked) = (0u64, 0u64, 0u64, 0u64);
    let mut i = 0u64;
    while start.elapsed() < Duration::from_secs(60) {
        let g = if i.is_multiple_of(2) { &a } else { &b };
        let status = get(g.addr, &format!("/m/{i}"));
        asked += 1;
        ok += u64::from(status == 200);
        assert!(status == 200 || status == 429, "{status}");
        robots_asked += 1;
        robots_ok += u64::from(get(g.addr, "/robots.txt") == 200);
        i += 1;
        // Ten a second in all.
        let next = start + Duration::from_millis(100 * i);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let most = (secs * 60.0 / 60.0).ceil() as u64 + 6;
    assert!(asked >= 500, "ten times the rate: {asked} in {secs:.0}s");
    assert!(ok <= most, "{ok} admitted in {secs:.0}s: at most rate x time + burst = {most}");
    // Not shut out either: each gateway admits its half of the rate.
    assert!(ok >= (secs * 0.8) as u64, "{ok} admitted in {secs:.0}s: the crawler is slowed, not shut out");
    assert_eq!(robots_ok, robots_asked, "every robots.txt fetch, at the same pace, is a 200");
}
