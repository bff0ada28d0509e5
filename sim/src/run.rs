//! One run: the steps done to the real processes, and after each, what
//! they show held against the promise's model ([`rules::promise::Gate`]):
//! what a crawler gets from every gateway (both request paths), the change
//! `/status` says is held, the hold alerts and resolved notices in the
//! database, and the mail in the SMTP server's maildir. The first
//! difference ends the run as a [`Divergence`].

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rules::promise::{Answer, Gate, Served};
use testkit::Db;

use crate::plan::{Action, Refusal, Surface};
use crate::world::{self, TOKEN, World};

/// Where a run left the promise.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The index of the step after which it was seen (`None`: at the start).
    pub step: Option<usize>,
    /// What differed.
    pub what: String,
}

/// What a run did, for the soak's summary.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Steps done.
    pub steps: usize,
    /// `kill -9`s of gateways and monitors.
    pub kills: usize,
    /// Upgrades, and those that had to fail.
    pub upgrades: usize,
    /// See `upgrades`.
    pub failed_upgrades: usize,
    /// Releases done, and refused with nothing held.
    pub releases: usize,
    /// See `releases`.
    pub refused_releases: usize,
    /// Holds (alerts) and resolved notices at the end.
    pub holds: usize,
    /// See `holds`.
    pub resolved: usize,
    /// Requests sent during upgrades, and how many failed.
    pub load_requests: u64,
    /// See `load_requests`.
    pub load_failures: u64,
}

/// Runs `actions` on `db` from an origin answering `Good(0)`.
/// `Ok(None)` when the database is not set up here (outside CI).
pub fn run(db: Db, actions: &[Action], label: &str) -> Result<Option<Tally>, Divergence> {
    let dir = testkit::temp_dir(&format!("sim-{label}"));
    let at_start = |what: String| Divergence { step: None, what };
    let first = Answer::Good(0);
    let Some(mut w) = World::start(db, &dir, first) else { return Ok(None) };
    let mut model = Gate::new(first);
    let mut tally = Tally::default();
    check(&w, &model).map_err(at_start)?;
    for (i, action) in actions.iter().enumerate() {
        let fail = |what: String| Divergence { step: Some(i), what: format!("{action:?}: {what}") };
        apply(&mut w, &model, *action, &mut tally).map_err(fail)?;
        model.step(action.step());
        tally.steps += 1;
        check(&w, &model).map_err(fail)?;
    }
    tally.holds = model.alerts();
    tally.resolved = model.resolved();
    drop(w);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Some(tally))
}

/// Does `action` to the real processes; an error is a broken promise of
/// the step itself (a refused request under an upgrade, a release that
/// failed with something held).
fn apply(w: &mut World, model: &Gate, action: Action, tally: &mut Tally) -> Result<(), String> {
    match action {
        Action::Serve(answer) => {
            w.serve(answer);
            w.refresh()
        }
        Action::Refresh => w.refresh(),
        Action::Release(surface) => {
            tally.releases += 1;
            let held = model.held.is_some();
            let (ok, said) = release(w, surface)?;
            if held && !ok {
                return Err(format!("the release failed with a change held: {said}"));
            }
            if !held && ok {
                return Err(format!("a release with nothing held succeeded: {said}"));
            }
            if !held {
                tally.refused_releases += 1;
            }
            w.refresh()
        }
        Action::KillGateway(i) => {
            tally.kills += 1;
            w.gateways[i].kill();
            w.gateways[i].start()
        }
        Action::NewReplica(i) => {
            tally.kills += 1;
            w.gateways[i].kill();
            let state = w.dir.join(format!("state-{}", w.gateways[i].addr.port()));
            std::fs::remove_dir_all(&state).map_err(|e| format!("removing {}: {e}", state.display()))?;
            w.gateways[i].start()
        }
        Action::RestartGateway(i) => {
            w.gateways[i].stop();
            w.gateways[i].start()
        }
        Action::KillMonitor(i) => {
            tally.kills += 1;
            w.monitors[i].kill();
            w.monitors[i].start();
            Ok(())
        }
        Action::Upgrade(i) => {
            tally.upgrades += 1;
            let config = w.gateways[i].config.clone();
            let load = Load::start(w.gateways[i].addr);
            let out = upgrade(&w.gateways[i], &config)?;
            let (sent, failed) = load.stop();
            (tally.load_requests, tally.load_failures) = (tally.load_requests + sent, tally.load_failures + failed);
            let code = out.status.code();
            let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            if code != Some(0) {
                return Err(format!("upgrade exited {code:?}: {text}"));
            }
            let pid = text
                .split_whitespace()
                .skip_while(|w| *w != "robots-proxy")
                .nth(1)
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| format!("upgrade did not name the new process: {text}"))?;
            w.gateways[i].taken_over(pid);
            w.gateways[i].settled()?;
            if failed > 0 {
                return Err(format!("{failed} of {sent} requests failed during the upgrade"));
            }
            Ok(())
        }
        Action::FailedUpgrade(i, refusal) => {
            tally.failed_upgrades += 1;
            let g = &w.gateways[i];
            let (listen, admin) = (g.addr.port(), g.admin.port());
            let name = format!("refused-{i}");
            let (config, because) = match refusal {
                Refusal::Token => {
                    let extra = "  admin_token_file: no-such-token-file\n";
                    (w.write_config(&name, listen, admin, g.fast, None, extra), "admin_token_file")
                }
                Refusal::Certificate => {
                    let extra = format!(
                        "  tls_listen:\n    - {{ addr: \"127.0.0.1:{}\", cert: not-a-cert.pem, key: not-a-cert.pem }}\n",
                        testkit::free_port()
                    );
                    (w.write_config(&name, listen, admin, g.fast, None, &extra), "TLS")
                }
                Refusal::Port => {
                    // The gateway's listener and one more, on a port another program holds.
                    let port = w.taken.local_addr().map_err(|e| e.to_string())?.port();
                    let path = w.write_config(&name, listen, admin, g.fast, None, "");
                    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?.replace(
                        &format!("listen: [\"127.0.0.1:{listen}\"]"),
                        &format!("listen: [\"127.0.0.1:{listen}\", \"127.0.0.1:{port}\"]"),
                    );
                    std::fs::write(&path, text).map_err(|e| e.to_string())?;
                    (path, "taken")
                }
            };
            let load = Load::start(g.addr);
            let out = upgrade(g, &config)?;
            let (sent, failed) = load.stop();
            (tally.load_requests, tally.load_failures) = (tally.load_requests + sent, tally.load_failures + failed);
            let text = String::from_utf8_lossy(&out.stderr).into_owned();
            if out.status.code() != Some(2) {
                return Err(format!("an upgrade that must fail exited {:?}: {text}", out.status.code()));
            }
            if !text.contains("serves on") || !text.contains(because) {
                return Err(format!("the failed upgrade does not say why ({because}): {text}"));
            }
            if !world::alive(g.pid) {
                return Err(format!("the old process {} is gone after a failed upgrade: {text}", g.pid));
            }
            if failed > 0 {
                return Err(format!("{failed} of {sent} requests failed during a failed upgrade: {text}"));
            }
            Ok(())
        }
    }
}

/// `robots-proxy --config CONFIG upgrade --from PID` for gateway `g`.
fn upgrade(g: &world::Gateway, config: &std::path::Path) -> Result<std::process::Output, String> {
    Command::new(world::bin("robots-proxy"))
        .arg("--config")
        .arg(config)
        .args(["upgrade", "--from", &g.pid.to_string(), "--timeout", "20s"])
        .env_remove("ROBOTSGATE_ADMIN_TOKEN")
        .output()
        .map_err(|e| format!("running upgrade: {e}"))
}

/// Releases from `surface` with the right token: whether it succeeded,
/// and what it said. A refusal of the token is a broken promise.
fn release(w: &World, surface: Surface) -> Result<(bool, String), String> {
    let (status, said) = release_with(w, surface, Some(TOKEN))?;
    if matches!(status, 401 | 403) {
        return Err(format!("the right token was refused: {status} {said}"));
    }
    let ok = match surface {
        Surface::Cli => status == 0,
        Surface::Console | Surface::Api => status == 200,
        Surface::Admin(_) => status == 202,
    };
    Ok((ok, said))
}

/// Releases from `surface` showing `token` (none when `None`): the HTTP
/// status (the exit code for the CLI, which needs no token) and the answer.
pub fn release_with(w: &World, surface: Surface, token: Option<&str>) -> Result<(u16, String), String> {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let auth: Vec<(&str, &str)> = bearer.iter().map(|b| ("Authorization", b.as_str())).collect();
    match surface {
        Surface::Cli => {
            let out = Command::new(world::bin("robots-monitor"))
                .arg("--config")
                .arg(&w.monitors[0].config)
                .args(["release", "shop"])
                .env_remove("ROBOTSGATE_ADMIN_TOKEN")
                .env("ROBOTSGATE_LOG", "warn")
                .output()
                .map_err(|e| format!("running release: {e}"))?;
            let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            Ok((out.status.code().map_or(255, |c| c as u16), said))
        }
        Surface::Console | Surface::Api => {
            let console = w.monitors[0].console.ok_or("no console")?;
            let r = if surface == Surface::Api {
                testkit::request(console, "POST", "localhost", "/api/sites/shop/release", &auth)
            } else {
                post_form(console, "/sites/shop/release", &format!("token={}&revision=", token.unwrap_or("")))
            }
            .ok_or("the console did not answer")?;
            Ok((r.status, r.text()))
        }
        Surface::Admin(i) => {
            let r = testkit::request(w.gateways[i].admin, "POST", "localhost", "/release?site=shop", &auth)
                .ok_or("the admin API did not answer")?;
            Ok((r.status, r.text()))
        }
    }
}

/// A form POST.
fn post_form(addr: SocketAddr, path: &str, form: &str) -> Option<testkit::Response> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.as_bytes().to_vec()).unwrap_or_default();
    Some(testkit::Response { status, headers: Vec::new(), body })
}

/// Requests to a gateway from a thread, counted, while an upgrade runs.
struct Load {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(addr: SocketAddr) -> Load {
        let (stop, sent, failed) = (Arc::default(), Arc::default(), Arc::default());
        let threads = (0..2)
            .map(|_| {
                let (stop, sent, failed): (Arc<AtomicBool>, Arc<AtomicU64>, Arc<AtomicU64>) =
                    (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&failed));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        sent.fetch_add(1, Ordering::SeqCst);
                        let ok = testkit::request(
                            addr,
                            "GET",
                            world::HOST,
                            "/robots.txt",
                            &[("User-Agent", world::GOOGLEBOT)],
                        )
                        .is_some_and(|r| r.status < 500 || r.status == 503);
                        if !ok {
                            failed.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        Load { stop, sent, failed, threads }
    }

    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            let _ = t.join();
        }
        (self.sent.load(Ordering::SeqCst), self.failed.load(Ordering::SeqCst))
    }
}

/// What every part shows, against the model.
fn check(w: &World, model: &Gate) -> Result<(), String> {
    for (i, g) in w.gateways.iter().enumerate() {
        let path = if g.fast { "own path" } else { "pipeline" };
        let got = g.robots().ok_or_else(|| format!("gateway {i} ({path}) did not answer"))?;
        let want = match model.served() {
            Served::Copy(file, source) => {
                (200, Some(source.as_str().to_string()), world::body(file).unwrap_or_default().to_string())
            }
            Served::Passed => (world::status(w.answer), None, String::new()),
        };
        let same = match model.served() {
            Served::Copy(..) => got == want,
            // The origin's own answer passes through, whatever its headers.
            Served::Passed => got.0 == want.0,
        };
        if !same {
            return Err(format!("gateway {i} ({path}) serves {got:?}; the promise is {want:?}"));
        }
        let status = g.status().ok_or_else(|| format!("gateway {i}: no /status"))?;
        let held = status["held"]["outcome"].as_str().map(str::to_string);
        let want_held = model.held.map(outcome);
        if held != want_held {
            return Err(format!("gateway {i} ({path}): /status holds {held:?}; the promise is {want_held:?}"));
        }
    }
    // Alerts are raised by whichever monitor gets there first: wait for them.
    let want = (model.alerts() as i64, model.resolved() as i64);
    // One query, one connection: (holds, resolved, hold alerts, resolved notices, other alerts).
    let sql = "SELECT CAST((SELECT COUNT(*) FROM gate_alerts WHERE site = 'shop') AS TEXT) || ',' || \
        CAST((SELECT COUNT(*) FROM gate_alerts WHERE site = 'shop' AND resolved_at IS NOT NULL) AS TEXT) || ',' || \
        CAST((SELECT COUNT(*) FROM alerts WHERE site = 'shop' AND kind = 'hold') AS TEXT) || ',' || \
        CAST((SELECT COUNT(*) FROM alerts WHERE site = 'shop' AND kind = 'hold-resolved') AS TEXT) || ',' || \
        CAST((SELECT COUNT(*) FROM alerts WHERE site = 'shop' AND kind NOT IN ('hold', 'hold-resolved')) AS TEXT)";
    let counted = || {
        let text = testkit::scalar_text(&w.database, sql);
        let n: Vec<i64> = text.split(',').map(|n| n.trim().parse().unwrap_or(-1)).collect();
        let at = |i: usize| n.get(i).copied().unwrap_or(-1);
        (at(0), at(1), at(2), at(3), at(4))
    };
    let expected = (want.0, want.1, want.0, want.1, 0);
    settles(&expected, counted).map_err(|seen| {
        format!(
            "the database has (holds, resolved, hold alerts, resolved notices, other alerts) {seen:?}; the promise is {expected:?}"
        )
    })?;
    // The monitors' logs never say an alert was queued that the outbox
    // does not hold (a kill between the commit and the line may leave
    // fewer lines, never more); and a run's only alerts are holds'.
    let logs: String = w.monitors.iter().map(|m| std::fs::read_to_string(m.log()).unwrap_or_default()).collect();
    let said = logs.lines().filter(|l| l.contains("alert queued for a change held at the edge")).count();
    let said_other = logs.lines().filter(|l| l.contains("alert queued") && !l.contains("held at the edge")).count();
    if said > model.alerts() || said_other > 0 {
        return Err(format!(
            "the monitors logged {said} hold alerts and {said_other} other alerts queued; the outbox holds {} and none",
            model.alerts()
        ));
    }
    let mail = || {
        let mails = w.smtp.mails();
        let subject = |m: &String, s: &str| m.lines().any(|l| l.starts_with("Subject:") && l.contains(s));
        (
            mails.iter().filter(|m| subject(m, "change held at the edge")).count(),
            mails.iter().filter(|m| subject(m, "resolved: change no longer held")).count(),
            mails.len(),
        )
    };
    let expected = (model.alerts(), model.resolved(), model.alerts() + model.resolved());
    settles(&expected, mail).map_err(|seen| {
        format!("the mailbox has (hold alerts, resolved notices, all) {seen:?}; the promise is {expected:?}")
    })
}

/// Waits (20 s at most) until `observe` gives `expected`, as alerts are
/// raised and mailed by whichever monitor gets there first; what it gave
/// last when it never did. Counts only grow, so a count past the promise
/// is kept to the end and reported.
fn settles<T: PartialEq>(expected: &T, mut observe: impl FnMut() -> T) -> Result<(), T> {
    let until = Instant::now() + Duration::from_secs(20);
    let mut seen = observe();
    while seen != *expected && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(150));
        seen = observe();
    }
    if seen == *expected { Ok(()) } else { Err(seen) }
}

/// The key a gateway holds an answer by.
fn outcome(answer: Answer) -> String {
    match world::body(answer) {
        Some(body) => robotsgate_history::body_hash(body.as_bytes()),
        None => format!("status:{}", world::status(answer)),
    }
}
