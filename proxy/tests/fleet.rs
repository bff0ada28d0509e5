//! A fleet of gateways sharing one database: a replica that starts with an
//! empty disk while the origin is failing serves the copy another replica
//! (or the monitor) saw last, as `last-good`; and a database that is down
//! or unreachable never stops a gateway from serving.

use std::net::SocketAddr;
use std::path::Path;

use testkit::*;

mod support;
use support::spawn_proxy;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n";

/// A gateway for `shop.test` in front of `origin`, with its own empty
/// state directory and, if given, the shared `database`.
fn replica(dir: &Path, origin: SocketAddr, database: Option<&str>, fast: bool) -> (Proc, SocketAddr) {
    let (proc, addr, _) = replica_config(dir, origin, database, fast);
    (proc, addr)
}

/// [`replica`], and its config file, to start it again from.
fn replica_config(
    dir: &Path,
    origin: SocketAddr,
    database: Option<&str>,
    fast: bool,
) -> (Proc, SocketAddr, std::path::PathBuf) {
    let (listen, admin) = (free_port(), free_port());
    let database = database.map(|d| format!("database: \"{d}\"\n")).unwrap_or_default();
    let yaml = format!(
        "{database}proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
  state_dir: state-{listen}
  refresh: 1s
  fast_path: {fast}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: {origin}
"
    );
    let cfg = dir.join(format!("config-{listen}.yaml"));
    std::fs::write(&cfg, yaml).expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
    (spawn_proxy(&cfg, &[addr]), addr, cfg)
}

fn robots(addr: SocketAddr) -> Option<Response> {
    request(addr, "GET", "shop.test", "/robots.txt", &[])
}

fn serves(addr: SocketAddr, source: &str) -> bool {
    robots(addr).is_some_and(|r| r.status == 200 && r.header("X-Robots-Source") == Some(source) && r.text() == ROBOTS)
}

fn a_new_replica_serves_the_fleets_copy_through_an_outage(db: Db) {
    let dir = temp_dir(&format!("fleet-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    let (mut a, a_addr) = replica(&dir, origin.addr, Some(&database), true);
    assert!(eventually(20, || serves(a_addr, "origin")), "{db:?}: replica A never learnt robots.txt");
    let stored = eventually(20, || scalar(&database, "SELECT COUNT(*) FROM revisions WHERE site = 'shop'") == 1);
    assert!(stored, "{db:?}: replica A did not share its copy");

    // The origin fails; A keeps its copy, and is then stopped for good.
    origin.set("/robots.txt", Reply::status(503));
    assert!(eventually(20, || serves(a_addr, "last-good")), "{db:?}: replica A dropped its copy");
    a.kill();

    // A replica without the database has nothing: the 503 passes on. That
    // is what the database is for.
    let (_alone, alone) = replica(&dir, origin.addr, None, true);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(robots(alone).map(|r| r.status), Some(503), "{db:?}: a replica with no copy served something");

    // B starts with an empty state_dir, during the outage: A's copy, on
    // either path (the own path and the pipeline each answer robots.txt).
    let (_b_pipeline, b_pipeline) = replica(&dir, origin.addr, Some(&database), false);
    let (_b, b_addr) = replica(&dir, origin.addr, Some(&database), true);
    for (fast, addr) in [(true, b_addr), (false, b_pipeline)] {
        let served = eventually(20, || serves(addr, "last-good"));
        assert!(served, "{db:?}, fast {fast}: replica B did not serve A's copy: {:?}", robots(addr));
    }

    // The origin comes back with a new file: B serves it and shares it.
    let newer = "User-agent: *\nDisallow: /new/\n";
    origin.set("/robots.txt", Reply::ok(newer));
    assert!(eventually(20, || robots(b_addr).is_some_and(|r| r.text() == newer)), "{db:?}");
    let shared = eventually(20, || scalar(&database, "SELECT COUNT(*) FROM revisions WHERE site = 'shop'") == 2);
    assert!(shared, "{db:?}: replica B did not share the new copy");
}

#[test]
fn a_new_replica_serves_the_fleets_copy_through_an_outage_on_postgres() {
    a_new_replica_serves_the_fleets_copy_through_an_outage(Db::Postgres);
}

#[test]
fn a_new_replica_serves_the_fleets_copy_through_an_outage_on_sqlite() {
    a_new_replica_serves_the_fleets_copy_through_an_outage(Db::Sqlite);
}

/// The origin deletes its file (404: everything allowed), then fails. A
/// gateway restarted during the failure, on its own disk, and a new
/// replica on an empty one, must not bring the deleted file back as
/// `last-good`: the 4xx took it from disk and from the database.
fn a_deleted_file_stays_deleted(db: Db, fast: bool) {
    let dir = temp_dir(&format!("fleet-deleted-{db:?}-{fast}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    let (mut a, addr, cfg) = replica_config(&dir, origin.addr, Some(&database), fast);
    assert!(eventually(20, || serves(addr, "origin")), "{db:?}: never learnt robots.txt");
    let stored = eventually(20, || scalar(&database, "SELECT COUNT(*) FROM revisions WHERE site = 'shop'") == 1);
    assert!(stored, "{db:?}: the copy was not shared");

    origin.set("/robots.txt", Reply::status(404));
    assert!(eventually(20, || robots(addr).is_some_and(|r| r.status == 404)), "{db:?}: the 404 was not honoured");
    let removed = eventually(20, || scalar(&database, "SELECT COUNT(*) FROM removals WHERE site = 'shop'") == 1);
    assert!(removed, "{db:?}: the removal was not shared");

    origin.set("/robots.txt", Reply::status(503));
    a.kill();
    let _restarted = spawn_proxy(&cfg, &[addr]);
    let (_b, b_addr) = replica(&dir, origin.addr, Some(&database), fast);
    // Several refresh intervals: each sees the 503 and looks for a copy.
    std::thread::sleep(std::time::Duration::from_secs(4));
    for (who, at) in [("the restarted gateway", addr), ("a new replica", b_addr)] {
        let r = robots(at).expect("an answer");
        assert_eq!(
            (r.status, r.header("X-Robots-Source").map(str::to_string)),
            (503, None),
            "{db:?}, fast {fast}: {who} brought the deleted file back: {}",
            r.text()
        );
    }

    // The file comes back: served and shared again.
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    assert!(eventually(20, || serves(b_addr, "origin")), "{db:?}");
}

#[test]
fn a_deleted_file_stays_deleted_on_sqlite() {
    a_deleted_file_stays_deleted(Db::Sqlite, true);
    a_deleted_file_stays_deleted(Db::Sqlite, false);
}

#[test]
fn a_deleted_file_stays_deleted_on_postgres() {
    a_deleted_file_stays_deleted(Db::Postgres, true);
    a_deleted_file_stays_deleted(Db::Postgres, false);
}

/// A database that refuses connections, or accepts them and never answers,
/// costs the gateway nothing: it starts, learns and serves robots.txt, and
/// proxies, as without one.
#[test]
fn a_database_that_is_down_never_stops_a_gateway() {
    let dir = temp_dir("fleet-db-down");
    let origin = Origin::start();
    origin.set("/robots.txt", Reply::ok(ROBOTS));
    origin.set("/page", Reply::ok("page"));
    // Nothing listens on `closed`; `silent` accepts and never speaks.
    let closed = free_port();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    for (port, fast) in [(closed, true), (silent_port, true), (closed, false), (silent_port, false)] {
        let database = format!("postgres://robotsgate:x@127.0.0.1:{port}/robotsgate");
        let (_p, addr) = replica(&dir, origin.addr, Some(&database), fast);
        assert!(eventually(15, || serves(addr, "origin")), "port {port}: no robots.txt with the database down");
        let page = request(addr, "GET", "shop.test", "/page", &[]);
        assert_eq!(page.map(|r| r.text()), Some("page".to_string()), "port {port}");
        // The origin fails too: the gateway's own copy still serves.
        origin.set("/robots.txt", Reply::status(503));
        assert!(eventually(15, || serves(addr, "last-good")), "port {port}");
        origin.set("/robots.txt", Reply::ok(ROBOTS));
    }
}
