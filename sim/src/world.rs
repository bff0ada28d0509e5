//! The real parts of a run: an origin on 127.0.0.1, a database (a SQLite
//! file or a fresh PostgreSQL database), an SMTP server writing a maildir,
//! two `robots-proxy` gateways (one on its own request path, one on
//! Pingora's pipeline) and two `robots-monitor run` daemons sharing it, one
//! with the console. The admin token is in a file named relatively in the
//! config (`admin_token_file: admin-token`), and nothing is in the
//! environment, so every release surface reads it from there.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rules::promise::Answer;
use testkit::{Db, Origin, Proc, Reply, Smtp, eventually, free_port, request};

/// The admin token, as the file holds it.
pub const TOKEN: &str = "sim-admin-token";
/// The site's host.
pub const HOST: &str = "shop.test";
/// The crawler asking.
pub const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// The body of a file answer.
pub fn body(answer: Answer) -> Option<&'static str> {
    match answer {
        Answer::Good(0) => Some("User-agent: *\nDisallow: /private/\n"),
        Answer::Good(_) => Some("User-agent: *\nDisallow: /private/\nDisallow: /cart\n"),
        Answer::Bad(0) => Some("# deploy 42\nUser-agent: *\nDisallow: /\n"),
        // The same deploy with one more comment line: another change.
        Answer::Bad(_) => Some("# deploy 42\n# rebuilt\nUser-agent: *\nDisallow: /\n"),
        Answer::Missing | Answer::Failing => None,
    }
}

/// The status an answer has at the origin.
pub fn status(answer: Answer) -> u16 {
    match answer {
        Answer::Missing => 404,
        Answer::Failing => 503,
        _ => 200,
    }
}

/// Where the binaries are: `ROBOTSGATE_SIM_BIN_DIR`, else beside this
/// program (`target/debug`, or its `deps/` for a test).
pub fn bin(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("ROBOTSGATE_SIM_BIN_DIR") {
        return Path::new(&dir).join(name);
    }
    let exe = std::env::current_exe().expect("this program's path");
    let dir = exe.parent().expect("a folder");
    let beside = dir.join(name);
    if beside.exists() { beside } else { dir.parent().expect("target folder").join(name) }
}

/// One gateway: its process (a child of ours, or of an upgrade), its
/// addresses and its config.
#[derive(Debug)]
pub struct Gateway {
    /// The process we started, while it is the one serving.
    child: Option<Proc>,
    /// The serving process's pid.
    pub pid: u32,
    /// The client listener.
    pub addr: SocketAddr,
    /// The admin listener.
    pub admin: SocketAddr,
    /// Its config file.
    pub config: PathBuf,
    /// Its own request path (true) or Pingora's pipeline.
    pub fast: bool,
}

/// One monitor daemon.
#[derive(Debug)]
pub struct Monitor {
    proc: Option<Proc>,
    /// Its config file.
    pub config: PathBuf,
    /// The console's address, for the monitor that serves it.
    pub console: Option<SocketAddr>,
}

/// Everything a run touches.
#[derive(Debug)]
pub struct World {
    /// Scratch files.
    pub dir: PathBuf,
    /// The `database:` value.
    pub database: String,
    /// The origin.
    pub origin: Origin,
    /// What the origin answers now.
    pub answer: Answer,
    /// The SMTP server.
    pub smtp: Smtp,
    /// The gateways.
    pub gateways: Vec<Gateway>,
    /// The monitors.
    pub monitors: Vec<Monitor>,
    /// A port some other program holds, for upgrades that must fail.
    pub taken: TcpListener,
}

impl World {
    /// Starts every part on `db`, with the origin answering `first`.
    /// `None` when PostgreSQL is asked for and not set up (outside CI).
    pub fn start(db: Db, dir: &Path, first: Answer) -> Option<World> {
        let database = testkit::fresh_database(db, dir)?;
        std::fs::write(dir.join("admin-token"), format!("{TOKEN}\n")).expect("token file");
        std::fs::write(dir.join("not-a-cert.pem"), "not a certificate\n").expect("bad certificate");
        let origin = Origin::start();
        let smtp = Smtp::start(&dir.join("mail"));
        let taken = TcpListener::bind("127.0.0.1:0").expect("a port to hold");
        let mut world = World {
            dir: dir.to_path_buf(),
            database,
            origin,
            answer: first,
            smtp,
            gateways: Vec::new(),
            monitors: Vec::new(),
            taken,
        };
        world.serve(first);
        for i in 0..crate::plan::GATEWAYS {
            let (listen, admin) = (free_port(), free_port());
            let config = world.write_config(&format!("gateway-{i}"), listen, admin, i == 0, None, "");
            let mut g = Gateway { child: None, pid: 0, addr: addr(listen), admin: addr(admin), config, fast: i == 0 };
            g.start().expect("a gateway starts");
            world.gateways.push(g);
        }
        for i in 0..crate::plan::MONITORS {
            let console = (i == 0).then(free_port);
            let g = &world.gateways[i % world.gateways.len()];
            let config =
                world.write_config(&format!("monitor-{i}"), g.addr.port(), g.admin.port(), g.fast, console, "");
            let mut m = Monitor { proc: None, config, console: console.map(addr) };
            m.start();
            world.monitors.push(m);
        }
        // The monitors' first poll records the site's first state (no
        // alert); with a daily interval, they poll no more in a run, so
        // every alert after it is a hold's.
        let polled =
            eventually(30, || testkit::scalar(&world.database, "SELECT COUNT(*) FROM states WHERE site = 'shop'") >= 1);
        assert!(polled, "no monitor recorded the site's first state");
        Some(world)
    }

    /// Makes the origin answer `answer`.
    pub fn serve(&mut self, answer: Answer) {
        self.answer = answer;
        let reply = match body(answer) {
            Some(text) => Reply::ok(text),
            None => Reply::status(status(answer)),
        };
        self.origin.set("/robots.txt", reply);
    }

    /// Writes the config `name.yaml`: the fleet's database, mail, the site,
    /// and a gateway on `listen`/`admin`; the console on `console`;
    /// `extra` lines under `proxy:` (an upgrade that must fail).
    pub fn write_config(
        &self,
        name: &str,
        listen: u16,
        admin: u16,
        fast: bool,
        console: Option<u16>,
        extra: &str,
    ) -> PathBuf {
        let console = console.map(|p| format!("console:\n  listen: 127.0.0.1:{p}\n")).unwrap_or_default();
        let token_file = if extra.contains("admin_token_file") { "" } else { "  admin_token_file: admin-token\n" };
        let yaml = format!(
            "database: \"{database}\"
agents: [Googlebot]
interval: 24h
http:
  timeout: 2s
email:
  host: 127.0.0.1
  port: {smtp}
  security: none
  from: robotsgate@sim.test
  to: [seo@sim.test]
{console}proxy:
  listen: [\"127.0.0.1:{listen}\"]
  admin: 127.0.0.1:{admin}
{token_file}  state_dir: state-{listen}
  refresh: 1h
  grace_period: 1s
  fast_path: {fast}
{extra}sites:
  - name: shop
    proxy:
      hosts: [{HOST}]
      origin: {origin}
",
            database = self.database,
            smtp = self.smtp.port,
            origin = self.origin.addr,
        );
        let path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).expect("config");
        path
    }

    /// Asks every gateway to refresh and waits until each has.
    pub fn refresh(&self) -> Result<(), String> {
        for g in &self.gateways {
            g.refresh()?;
        }
        Ok(())
    }
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// `kill -SIG pid`.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).stderr(Stdio::null()).status();
}

/// Whether process `pid` runs.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

impl Gateway {
    /// Starts the gateway and waits until it has read the origin once.
    pub fn start(&mut self) -> Result<(), String> {
        let child = Command::new(bin("robots-proxy"))
            .arg("--config")
            .arg(&self.config)
            .env_remove("ROBOTSGATE_ADMIN_TOKEN")
            .env("ROBOTSGATE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("SIM_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
            .spawn()
            .map_err(|e| format!("starting robots-proxy: {e}"))?;
        self.pid = child.id();
        self.child = Some(Proc(child));
        if !eventually(20, || testkit::wait_listening(self.addr, 0) && self.last_fetch().is_some()) {
            return Err(format!("gateway {} did not start and read the origin", self.addr));
        }
        Ok(())
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        signal(self.pid, "-KILL");
        if let Some(mut p) = self.child.take() {
            p.kill();
        }
        eventually(10, || !alive(self.pid));
    }

    /// SIGTERM, waiting for it to go.
    pub fn stop(&mut self) {
        match self.child.take() {
            Some(mut p) => {
                p.terminate();
            }
            None => {
                signal(self.pid, "-TERM");
                eventually(15, || !alive(self.pid));
            }
        }
    }

    /// The process took over by an upgrade: it is not our child.
    /// Both processes accept on the handed-over sockets until the old one
    /// has drained (Pingora gives it five seconds), so this waits for it
    /// to go: what a crawler gets after the step is the new process's.
    pub fn taken_over(&mut self, pid: u32) {
        let old = self.pid;
        if let Some(mut child) = self.child.take() {
            // Ours: reap it.
            let _ = child.0.wait();
            std::mem::forget(child);
        }
        eventually(30, || !alive(old));
        self.pid = pid;
    }

    /// Waits until the serving process has read the origin once since it
    /// started: its first refresh, which a requested one must not race.
    pub fn settled(&self) -> Result<(), String> {
        if eventually(20, || self.last_fetch().is_some()) {
            Ok(())
        } else {
            Err(format!("gateway {} never read the origin after taking over", self.addr))
        }
    }

    /// An admin request with the token.
    pub fn admin(&self, method: &str, path: &str) -> Option<testkit::Response> {
        let auth = format!("Bearer {TOKEN}");
        request(self.admin, method, "localhost", path, &[("Authorization", &auth)])
    }

    /// `/status`'s entry for the site.
    pub fn status(&self) -> Option<serde_json::Value> {
        let r = self.admin("GET", "/status")?;
        let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
        Some(v["sites"][0].clone())
    }

    /// When it last read the origin (Unix ms).
    pub fn last_fetch(&self) -> Option<u64> {
        self.status()?["last_fetch"].as_u64()
    }

    /// Refreshes now and waits until the refresh is done.
    pub fn refresh(&self) -> Result<(), String> {
        let before = self.last_fetch().unwrap_or(0);
        let r = self.admin("POST", "/refresh").ok_or("no answer to POST /refresh")?;
        if r.status >= 300 {
            return Err(format!("POST /refresh answered {}", r.status));
        }
        if !eventually(20, || self.last_fetch().is_some_and(|t| t > before)) {
            return Err(format!("gateway {} did not refresh", self.addr));
        }
        // The refresh records its fetch time before it ends; give the
        // store's update the same instant.
        std::thread::sleep(Duration::from_millis(30));
        Ok(())
    }

    /// What a crawler gets for `/robots.txt`: status, `X-Robots-Source`, body.
    pub fn robots(&self) -> Option<(u16, Option<String>, String)> {
        let r = request(self.addr, "GET", HOST, "/robots.txt", &[("User-Agent", GOOGLEBOT)])?;
        Some((r.status, r.header("X-Robots-Source").map(str::to_string), r.text()))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if self.child.is_none() && self.pid != 0 {
            signal(self.pid, "-KILL");
        }
    }
}

impl Monitor {
    /// Where its log goes (appended across restarts).
    pub fn log(&self) -> PathBuf {
        self.config.with_extension("log")
    }

    /// Starts `robots-monitor run`, its warnings appended to [`Monitor::log`].
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).expect("monitor log");
        let child = Command::new(bin("robots-monitor"))
            .arg("--config")
            .arg(&self.config)
            .arg("run")
            .env_remove("ROBOTSGATE_ADMIN_TOKEN")
            .env("ROBOTSGATE_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start robots-monitor run");
        self.proc = Some(Proc(child));
        if let Some(console) = self.console {
            testkit::wait_listening(console, 20);
        }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }
}
