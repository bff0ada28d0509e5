//! `robots-proxy --config FILE`: load the shared config, build the Pingora
//! server, restore last-known-good copies, add the refresher, the proxy and
//! the admin listener, and run. SIGTERM and SIGINT both shut down
//! gracefully: listeners close, in-flight requests get the grace period.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use clap::Parser;
use pingora::listeners::tls::TlsSettings;
use pingora::listeners::{L4BufferSettings, ListenerConfig};
use pingora::server::configuration::ServerConf;
use pingora::server::{RunArgs, Server, ShutdownSignal, ShutdownSignalWatch};
use pingora::services::background::background_service;
use pingora::services::listening::Service;
use proxy::admin::Admin;
use proxy::crawlers::claim::Crawlers;
use proxy::crawlers::ledger::Ledger;
use proxy::gateway::{FrontedSite, Gateway};
use proxy::identity::Identity;
use proxy::identity::dns::DnsOptions;
use proxy::identity::prefixes::Prefixes;
use proxy::metrics::Metrics;
use proxy::own::Front;
use proxy::pipeline::Pipeline;
use proxy::robots::refresher::{Refresher, SiteRobots};
use proxy::robots::shared::Shared;
use proxy::robots::store::RobotsStore;
use robotsgate_config::Config;

/// Bytes buffered per client connection before a write goes out. Pingora's
/// default is one MSS (1,460), so a response whose header and body pass that
/// leaves in two writes, and on loopback each write costs a wake-up of the
/// reader. 16 KiB sends typical pages, JSON and redirects in one write.
/// Pingora buffers only bodies of known length (chunked and close-delimited
/// ones are flushed chunk by chunk, see `streamed_bodies_are_not_held_back`),
/// and a body larger than the buffer is written straight through.
const CLIENT_WRITE_BUFFER: usize = 16 * 1024;
/// Bytes a TLS client connection reads ahead of OpenSSL, which asks for a
/// record's five-byte header and then its body: one read takes in a whole
/// request's record, and a larger record is read straight into OpenSSL's
/// buffer. Plain connections read ahead nothing: both request paths read
/// into buffers of their own. Pingora's default, 64 KiB, is zeroed when
/// each connection is accepted: callgrind put that at 66,000 of the
/// 114,000 instructions of an HTTP/1.0 request (a connection each), and it
/// passes every byte through one more copy (docs/BENCHMARKS.md).
const TLS_READ_AHEAD: usize = 4 * 1024;

/// The robotsgate gateway.
#[derive(Parser, Debug)]
#[command(
    name = "robots-proxy",
    version,
    after_help = "EXIT STATUS:\n  0  stopped gracefully (SIGTERM, SIGINT, or its listeners handed to a new process); `--check` passed; `upgrade` handed over\n  1  a graceful upgrade failed after the old process was signalled (the service manager restarts it); `verify`: spoofed\n  2  could not start: the config or a certificate is refused; `upgrade` never started and the old process serves on\n  3  `verify`: unverifiable or pending\n  4  `verify`: no catalogued crawler claimed"
)]
struct Cli {
    /// The shared configuration file (see config.example.yaml).
    #[arg(long, short, default_value = "config.yaml")]
    config: PathBuf,
    /// Validate the configuration and exit.
    #[arg(long)]
    check: bool,
    /// Take the listening sockets over from a running robots-proxy (a
    /// binary upgrade or a reload with no connection refused): this process
    /// waits on `proxy.upgrade_sock`, then the old one is sent SIGQUIT.
    /// `robots-proxy upgrade --from PID` does both.
    #[arg(long)]
    upgrade: bool,
    /// Where a process started by `upgrade` writes why it could not start,
    /// so that `upgrade` prints the new process's own error.
    #[arg(long, hide = true)]
    upgrade_report: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Says whether a request from ADDR with this User-Agent comes from the
    /// crawler it claims to be (verified, spoofed, unverifiable), and why.
    Verify {
        /// The client address.
        #[arg(long)]
        ip: std::net::IpAddr,
        /// The User-Agent header.
        #[arg(long)]
        user_agent: String,
        /// DNS servers for reverse DNS (HOST:PORT; default: the system's).
        #[arg(long)]
        dns: Vec<std::net::SocketAddr>,
        /// Longest wait for reverse DNS.
        #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
        budget: std::time::Duration,
        /// Where feeds' last good copies are kept.
        #[arg(long)]
        feeds_dir: Option<PathBuf>,
        /// More catalogue entries (a YAML file with `crawlers:`, as the
        /// built-in catalogue), added to or replacing built-in ones.
        #[arg(long)]
        catalogue: Option<PathBuf>,
        /// Ask nothing of the network: the kept copies of feeds only, and
        /// no reverse DNS (a crawler verified by DNS alone is then
        /// unverifiable here).
        #[arg(long)]
        offline: bool,
    },
    /// Replace the running robots-proxy (the one serving this config, by
    /// `state_dir/robots-proxy.pid`, or PID) with this binary, with no
    /// connection refused: starts `robots-proxy --config … --upgrade`, waits
    /// for it to listen on the upgrade socket, sends PID SIGQUIT, and exits
    /// 0 once the new process has taken over (1 if it failed; 2 if it never
    /// started, and PID serves on). For systemd's `ExecReload=`.
    Upgrade {
        /// The running gateway's process id (systemd: `$MAINPID`); without
        /// it, the gateway that serves this config (its pid file in
        /// `state_dir`).
        #[arg(long)]
        from: Option<u32>,
        /// How long the new process may take to start listening.
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
        /// Let the new process log to this command's standard output and
        /// error when the old process's cannot be reopened (a journal socket
        /// outside systemd's `ExecReload=`). Without it, upgrade refuses.
        #[arg(long)]
        logs_here: bool,
    },
    #[command(flatten)]
    Shell(robotsgate_shell::Command),
}

/// SIGINT is graceful here too: an operator's Ctrl-C should not cut
/// crawlers off mid-response. SIGQUIT hands the listeners over only when a
/// new process waits on `sock` (see `proxy::upgrade`); else it is ignored.
#[derive(Debug)]
struct GracefulSignals {
    sock: PathBuf,
    started: std::time::SystemTime,
}

#[async_trait]
impl ShutdownSignalWatch for GracefulSignals {
    async fn recv(&self) -> ShutdownSignal {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int), Ok(mut quit)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::quit()))
        else {
            return ShutdownSignal::GracefulTerminate;
        };
        let signal = loop {
            tokio::select! {
                _ = term.recv() => break ShutdownSignal::GracefulTerminate,
                _ = int.recv() => break ShutdownSignal::GracefulTerminate,
                _ = quit.recv() => {
                    if proxy::upgrade::waiting(&self.sock, self.started) {
                        proxy::upgrade::UPGRADING.store(true, std::sync::atomic::Ordering::SeqCst);
                        break ShutdownSignal::GracefulUpgrade;
                    }
                    // Pingora would give up after five seconds and close
                    // every listener: an outage. Serve on instead.
                    tracing::error!(
                        sock = %self.sock.display(),
                        "SIGQUIT with no new process waiting on the upgrade socket: ignored, serving on \
                         (start `robots-proxy --upgrade` first, or use `robots-proxy upgrade --from PID`)"
                    );
                }
            }
        };
        if matches!(signal, ShutdownSignal::GracefulTerminate) {
            exit_when_drained();
        }
        signal
    }
}

/// Pingora waits out the whole grace period after a stop signal, even
/// with nothing in flight. Once the listeners have closed, this ends the
/// process as soon as the last client connection has.
fn exit_when_drained() {
    std::thread::spawn(|| {
        let waited = std::time::Instant::now();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
            // The ledger's last write is waited for, at most a few seconds
            // (its database calls are bounded as well).
            let ledger = proxy::crawlers::ledger::settled() || waited.elapsed() > std::time::Duration::from_secs(8);
            if proxy::own::OPEN.load(std::sync::atomic::Ordering::SeqCst) == 0 && ledger {
                tracing::info!("drained; exiting");
                std::process::exit(0);
            }
        }
    });
}

fn main() {
    let cli: Cli = robotsgate_shell::parse();
    let report = cli.upgrade_report.clone();
    if let Err(e) = run(cli) {
        if robotsgate_shell::is_closed_stdout(e.as_ref()) {
            std::process::exit(i32::from(robotsgate_shell::CLOSED_STDOUT));
        }
        eprintln!("robots-proxy: {e:#}");
        if let Some(report) = report {
            // Read by the `upgrade` that started this process; its output
            // may be a file the old process overwrites.
            let _ = std::fs::write(report, format!("{e:#}"));
        }
        std::process::exit(2);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Command::Shell(shell)) = &cli.command {
        return Ok(shell.run(<Cli as clap::CommandFactory>::command())?);
    }
    if let Some(Command::Verify { ip, user_agent, dns, budget, feeds_dir, catalogue, offline }) = cli.command {
        robotsgate_config::telemetry::init();
        let extra = match &catalogue {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                Some(robotsgate_crawlers::Catalogue::parse(&text, &path.display().to_string())?)
            }
            None => None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let code = runtime.block_on(proxy::crawlers::verify::verify(proxy::crawlers::verify::Request {
            ip,
            user_agent,
            dns,
            budget,
            feeds_dir,
            extra,
            offline,
        }))?;
        std::process::exit(code);
    }
    let config = Config::load_and_log(&cli.config)?;
    let Some(settings) = config.proxy.clone() else {
        bail!("{}: no `proxy:` section; see config.example.yaml", cli.config.display());
    };
    let upgrade_sock = settings.upgrade_sock.clone().unwrap_or_else(|| settings.state_dir.join("upgrade.sock"));
    if let Some(Command::Upgrade { from, timeout, logs_here }) = cli.command {
        let from = match from {
            Some(pid) => pid,
            None => match proxy::upgrade::serving(&settings.state_dir) {
                Ok(pid) => pid,
                Err(why) => {
                    eprintln!("robots-proxy: upgrade not started: {why}");
                    std::process::exit(2);
                }
            },
        };
        let exe = std::env::current_exe().context("finding this binary")?;
        std::fs::create_dir_all(upgrade_sock.parent().unwrap_or(std::path::Path::new(".")))
            .with_context(|| format!("creating the folder of {}", upgrade_sock.display()))?;
        // What the old process had that this shell may not: its admin token
        // and robotsgate's other variables, and where it logs.
        // The new process must be able to listen where the config says:
        // on an address the old process hands over, or on a free one.
        let addrs: Vec<&str> = settings
            .listen
            .iter()
            .chain(settings.tls_listen.iter().map(|l| &l.addr))
            .chain([&settings.admin])
            .map(String::as_str)
            .collect();
        if let Err(why) = proxy::upgrade::listenable(&addrs, from) {
            eprintln!("robots-proxy: upgrade not started, {from} serves on: {why}");
            std::process::exit(2);
        }
        let inherited = match proxy::upgrade::Inherited::from(from, settings.configures_token(), logs_here) {
            Ok(inherited) => inherited,
            Err(why) => {
                eprintln!("robots-proxy: upgrade not started, {from} serves on: {why}");
                std::process::exit(2);
            }
        };
        match proxy::upgrade::hand_over(&exe, &cli.config, from, &upgrade_sock, timeout, inherited) {
            proxy::upgrade::Outcome::Done(pid) => {
                println!("robots-proxy {pid} took the listeners over from {from}");
                return Ok(());
            }
            proxy::upgrade::Outcome::Failed(why) => {
                eprintln!("robots-proxy: upgrade failed after {from} was signalled: {why}");
                std::process::exit(1);
            }
            proxy::upgrade::Outcome::NotStarted(why) => {
                eprintln!("robots-proxy: upgrade not started, {from} serves on: {why}");
                std::process::exit(2);
            }
        }
    }
    let fronted: Vec<(String, robotsgate_config::SiteProxy)> =
        config.sites.iter().filter_map(|s| s.proxy.clone().map(|p| (s.name.clone(), p))).collect();
    if fronted.is_empty() {
        bail!("{}: no site has a `proxy:` section", cli.config.display());
    }
    if cli.check {
        let sites = if fronted.len() == 1 { "site" } else { "sites" };
        println!("{}: {} fronted {sites}, listening on {:?}", cli.config.display(), fronted.len(), settings.listen);
        // Every file a start reads, from where a start reads it (paths are
        // relative to the config file, whatever the working directory).
        match settings.admin_token().map_err(anyhow::Error::msg)? {
            Some(_) => println!("== admin token: read"),
            None => println!("== admin token: none (/status, /refresh and /release answer 403)"),
        }
        for (name, p) in &fronted {
            if let Some(path) = &p.robots_file {
                std::fs::read(path).with_context(|| format!("site {name}: proxy.robots_file {}", path.display()))?;
            }
        }
        if let Some(ca) = &settings.origin_ca_file {
            proxy::http::upstream::tls_connector(Some(ca)).map_err(|e| anyhow::anyhow!("proxy.origin_ca_file: {e}"))?;
        }
        let catalogue = config.catalogue()?;
        // The certificates are read as the listener will read them: a file
        // that would stop the start is named here.
        for tls in &settings.tls_listen {
            let files: Vec<_> = std::iter::once((tls.cert.clone(), tls.key.clone()))
                .chain(tls.certs.iter().map(|p| (p.cert.clone(), p.key.clone())))
                .collect();
            let n = files.len();
            proxy::http::certs::Certs::load(&tls.addr, files)
                .map_err(|e| anyhow::anyhow!("TLS listener {}: {e}", tls.addr))?;
            // The cipher lists as OpenSSL will take them at the start.
            let mut probe = openssl::ssl::SslAcceptor::mozilla_intermediate_v5(openssl::ssl::SslMethod::tls())?;
            if let Some(ciphers) = &tls.ciphers {
                probe
                    .set_cipher_list(ciphers)
                    .map_err(|e| anyhow::anyhow!("TLS listener {}: ciphers `{ciphers}`: {e}", tls.addr))?;
            }
            if let Some(suites) = &tls.ciphersuites {
                probe
                    .set_ciphersuites(suites)
                    .map_err(|e| anyhow::anyhow!("TLS listener {}: ciphersuites `{suites}`: {e}", tls.addr))?;
            }
            println!("== TLS {}: {n} certificate{}", tls.addr, if n == 1 { "" } else { "s" });
        }
        for site in config.sites.iter().filter(|s| s.proxy.is_some()) {
            let d = proxy::robots::hold::Declared::of(site, &config, &catalogue);
            let n = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            println!(
                "== {}: gate {}: {}; the floor: {} x {}",
                site.name,
                d.mode.as_str(),
                n(d.pins.len(), "pin (URL and crawler)", "pins (URL and crawler)"),
                n(d.floor.urls.len(), "URL", "URLs"),
                n(d.floor.agents.len(), "search crawler", "search crawlers"),
            );
            if site.sitemaps.keep_open {
                println!(
                    "== {}: the gate keeps the sitemaps' URLs open (read every {})",
                    site.name,
                    humantime::format_duration(site.sitemaps.every)
                );
            }
        }
        // This gateway's share as it would take it now: 1/N of the gateways
        // the shared database has heard from within `dead_after`, itself
        // among them (its name is in its state folder).
        let fleet = match &config.database {
            Some(database) if fronted.iter().any(|(_, p)| !p.budgets.is_empty()) => {
                let base = cli.config.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                let id = proxy::crawlers::reshape::gateway_id(&settings.state_dir);
                Some(runtime.block_on(proxy::crawlers::reshape::count(database, &base, &id, settings.fleet.dead_after)))
            }
            _ => None,
        };
        for (name, p) in &fronted {
            for b in &p.budgets {
                let share = match &fleet {
                    None => "all of it (no shared database: it enforces the whole budget alone)".to_string(),
                    Some(Err(e)) => format!("unknown ({e}); alone it takes all of it"),
                    Some(Ok(counts)) => {
                        let n = counts.get(name).copied().unwrap_or(1);
                        let each = b.rate.requests as f64 / n as f64;
                        format!(
                            "1/{n} ({n} gateway{} alive on the database): {each:.2} per {} with a burst of {}",
                            if n == 1 { "" } else { "s" },
                            humantime::format_duration(b.rate.per),
                            proxy::crawlers::budget::burst_of(b, proxy::crawlers::reshape::share_of(n))
                        )
                    }
                };
                println!("== {name}: budget {}; this gateway's share: {share}", b.describe());
                let names_search = b
                    .crawler
                    .as_deref()
                    .and_then(|t| catalogue.get(t))
                    .is_some_and(|c| c.purpose == robotsgate_crawlers::Purpose::Search);
                if names_search {
                    println!(
                        "== {name}: warning: this budget can throttle a verified search crawler; a burst of 429s cuts its crawl rate"
                    );
                }
            }
            if p.crawl_delay == robotsgate_config::budgets::CrawlDelay::Budget {
                let honour: Vec<&str> =
                    catalogue.crawlers().iter().filter(|c| c.crawl_delay).map(|c| c.token.as_str()).collect();
                println!(
                    "== {name}: Crawl-delay is the budget of {} (the crawlers the catalogue says honour it), from the served file",
                    honour.join(", ")
                );
            }
        }
        for (name, p) in &fronted {
            let Some(ai) = &p.ai_policy else { continue };
            // Onto the site's fixed file if it has one; the origin's is merged
            // the same way at each refresh.
            let origin = match (&p.robots_static, &p.robots_file) {
                (Some(text), _) => text.clone().into_bytes(),
                (None, Some(path)) => std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
                (None, None) => Vec::new(),
            };
            let policy = proxy::crawlers::ai::policy(ai);
            let compiled = policy.compile(&proxy::crawlers::ai::denied_tokens(&policy, &catalogue), &origin);
            let mut groups = compiled.groups.clone();
            if let Some(managed) = &p.managed_groups {
                groups = format!("{}\n\n{managed}", groups.trim_end());
            }
            let merged = rules::merge::append(&origin, &groups)
                .with_context(|| format!("site {name}: the AI policy would push robots.txt past 500 KiB"))?;
            println!(
                "\n== {name}: robots.txt with its AI policy{}",
                if origin.is_empty() { " (onto an empty origin file)" } else { "" }
            );
            print!("{}", String::from_utf8_lossy(&merged));
            println!("== {name}: Content-Usage header: {}", compiled.header);
            for c in &compiled.conflicts {
                println!("== {name}: conflict: {c}");
            }
        }
        return Ok(());
    }

    let names: Vec<&str> = fronted.iter().map(|(n, _)| n.as_str()).collect();
    let store = Arc::new(RobotsStore::new(&names, &settings.state_dir));
    let metrics = Arc::new(Metrics::new());
    metrics.prepare(&names, settings.ledger.is_some() && config.database.is_some());
    let refresh_now = Arc::new(tokio::sync::Notify::new());
    let catalogue = config.catalogue()?;
    let refresher = Refresher::new(
        config
            .sites
            .iter()
            .filter_map(|site| {
                let proxy = site.proxy.clone()?;
                let declared = proxy::robots::hold::Declared::of(site, &config, &catalogue);
                Some(SiteRobots { name: site.name.clone(), proxy, declared })
            })
            .collect(),
        Arc::clone(&store),
        Arc::clone(&metrics),
        &settings,
        &config.http,
        Arc::clone(&refresh_now),
    );
    refresher.restore();
    let refresher = refresher.with_catalogue(catalogue);
    // Relative SQLite paths are under the config file's folder, as for the monitor.
    let shared = config.database.as_ref().map(|database| {
        let base = cli.config.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        Arc::new(Shared::new(database, base))
    });
    let refresher = match &shared {
        Some(shared) => refresher.with_shared(Arc::clone(shared)),
        None => refresher,
    };
    // Enforcement from the first answer: a site with no disk copy takes the
    // fleet's before any listener opens. The link is its own, on a runtime
    // that ends here (a pool must not outlive the runtime that opened it).
    if let Some(database) = &config.database {
        let base = cli.config.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let boot = Shared::new(database, base);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async {
            refresher.adopt_before_start(&boot).await;
            boot.close().await;
        });
    }

    let mut hosts = HashMap::new();
    let mut shaped = Vec::new();
    // One verifying connector for every TLS origin of the own path, as
    // Pingora's pipeline verifies them (`origin_ca_file` or the system's roots).
    let tls = if fronted.iter().any(|(_, p)| p.origin_tls) {
        let ca = settings.origin_ca_file.as_deref();
        Some(proxy::http::upstream::tls_connector(ca).map_err(|e| anyhow::anyhow!("proxy.origin_ca_file: {e}"))?)
    } else {
        None
    };
    for (name, p) in &fronted {
        let mut site = FrontedSite::new(name, p.clone());
        if let (true, Some(connector)) = (p.origin_tls, &tls) {
            let sni = p.sni.clone().unwrap_or_else(|| p.hosts[0].clone());
            site.upstream = proxy::http::upstream::Upstream::tls(connector.clone(), sni);
        }
        let site = Arc::new(site);
        shaped.push(proxy::crawlers::reshape::Shaped {
            name: name.clone(),
            budgets: Arc::clone(&site.budgets),
            crawl_delay: p.crawl_delay,
        });
        for h in &p.hosts {
            hosts.insert(h.to_ascii_lowercase(), Arc::clone(&site));
        }
    }

    let conf = ServerConf {
        grace_period_seconds: Some(settings.grace_period.as_secs()),
        graceful_shutdown_timeout_seconds: Some(settings.grace_period.as_secs().max(1)),
        threads: settings.threads.count(),
        ca_file: settings.origin_ca_file.as_ref().map(|p| p.display().to_string()),
        upgrade_sock: upgrade_sock.display().to_string(),
        ..ServerConf::default()
    };
    if let Some(dir) = upgrade_sock.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let opt = pingora::server::configuration::Opt { upgrade: cli.upgrade, ..Default::default() };
    let mut server = Server::new_with_opt_and_conf(opt, conf);

    let crawlers = Crawlers::new(&config.catalogue()?, &settings.crawlers);
    let (identity, trusted) = match &settings.identity {
        Some(id) => {
            let dir = id.feeds_dir.clone().unwrap_or_else(|| settings.state_dir.join("feeds"));
            let dns = id.reverse_dns.then(|| DnsOptions {
                servers: id.dns_servers.clone(),
                timeout: id.dns_timeout,
                budget: id.budget,
                in_flight: id.dns_in_flight,
            });
            let identity = Identity::setup(crawlers.catalogue().clone(), &dir, dns.as_ref(), &id.only)
                .map_err(anyhow::Error::msg)?;
            if id.fetch {
                identity.keep_fresh(id.refresh).map_err(anyhow::Error::msg)?;
            }
            let trusted = Prefixes::parse(id.trusted_proxies.iter().map(String::as_str))
                .map_err(|e| anyhow::anyhow!("proxy.identity.trusted_proxies: {}", e.0))?;
            (Some(Arc::new(identity)), trusted)
        }
        None => (None, Prefixes::default()),
    };
    let (ledger, judge) = match (&settings.ledger, &shared) {
        (Some(l), Some(shared)) => {
            let catalogue = crawlers.catalogue().clone();
            let (ledger, judge) = Ledger::new(
                l,
                catalogue,
                identity.clone(),
                Arc::clone(&store),
                Arc::clone(shared),
                Arc::clone(&metrics),
                config.sites.iter().map(|s| (s.name.clone(), s.slashes())).collect(),
                Some(&settings.state_dir.join("ledger")),
            );
            (Some(ledger), Some(judge))
        }
        _ => (None, None),
    };
    let gateway = Arc::new(Gateway {
        hosts,
        store: Arc::clone(&store),
        crawlers,
        identity: identity.clone(),
        trusted,
        proxy_protocol: settings.identity.as_ref().is_some_and(|i| i.proxy_protocol),
        metrics: Arc::clone(&metrics),
        unknown_host_status: settings.unknown_host_status,
        origin_timeout: settings.origin_timeout,
        client_timeout: settings.client_timeout,
        ledger: ledger.clone(),
    });
    let pipeline = pingora::proxy::http_proxy(&server.configuration, Pipeline(Arc::clone(&gateway)));
    let front = Front::new(gateway, Arc::new(pipeline), settings.fast_path);
    let mut proxy_service = Service::new("robotsgate proxy".to_string(), front);
    for addr in &settings.listen {
        proxy_service
            .add_listener(ListenerConfig::tcp(addr.as_str()).l4_buffer(L4BufferSettings::new(0, CLIENT_WRITE_BUFFER)));
    }
    let mut certificates = Vec::new();
    for tls in &settings.tls_listen {
        let files = std::iter::once((tls.cert.clone(), tls.key.clone()))
            .chain(tls.certs.iter().map(|p| (p.cert.clone(), p.key.clone())))
            .collect();
        let certs = Arc::new(
            proxy::http::certs::Certs::load(&tls.addr, files)
                .map_err(|e| anyhow::anyhow!("TLS listener {}: {e}", tls.addr))?,
        );
        // Mozilla's intermediate profile (TLS 1.2 and 1.3), the certificate
        // chosen per handshake by SNI from the set loaded last.
        let mut tls_settings = TlsSettings::with_callbacks(Box::new(proxy::http::certs::Sni(Arc::clone(&certs))))
            .with_context(|| format!("TLS listener {}", tls.addr))?;
        if tls.min_version.as_deref() == Some("1.3") {
            tls_settings
                .set_min_proto_version(Some(openssl::ssl::SslVersion::TLS1_3))
                .with_context(|| format!("TLS listener {}: min_version", tls.addr))?;
        }
        if let Some(ciphers) = &tls.ciphers {
            tls_settings
                .set_cipher_list(ciphers)
                .with_context(|| format!("TLS listener {}: ciphers `{ciphers}`", tls.addr))?;
        }
        if let Some(suites) = &tls.ciphersuites {
            tls_settings
                .set_ciphersuites(suites)
                .with_context(|| format!("TLS listener {}: ciphersuites `{suites}`", tls.addr))?;
        }
        if settings.http2 {
            // HTTP/2 goes to Pingora's pipeline (`Front` routes by ALPN).
            tls_settings.enable_h2();
        }
        proxy_service.add_listener(
            ListenerConfig::tcp(tls.addr.as_str())
                .tls(tls_settings)
                .l4_buffer(L4BufferSettings::default().read(TLS_READ_AHEAD)),
        );
        certificates.push(certs);
    }
    if !certificates.is_empty() {
        server.add_service(background_service(
            "TLS certificates",
            proxy::http::certs::Watch { certs: certificates, metrics: Arc::clone(&metrics) },
        ));
    }

    let token = settings.admin_token().map_err(anyhow::Error::msg)?;
    let mut admin = Service::new(
        "robotsgate admin".to_string(),
        Admin {
            store: Arc::clone(&store),
            metrics,
            token,
            refresh_now,
            identity,
            ledger,
            shared: shared.clone(),
            hosts: config
                .sites
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.proxy.as_ref()?.hosts.clone())))
                .collect(),
            budgets: shaped.iter().map(|s| (s.name.clone(), Arc::clone(&s.budgets))).collect(),
        },
    );
    admin.add_tcp(&settings.admin);

    let reshape = proxy::crawlers::reshape::Reshape::new(
        shaped,
        Arc::clone(&store),
        &config.catalogue()?,
        shared.clone(),
        settings.fleet,
        &settings.state_dir,
    );
    if reshape.is_needed() {
        server.add_service(background_service("crawl budgets", reshape));
    }
    server.add_service(background_service("robots.txt refresher", refresher));
    if let Some(judge) = judge {
        server.add_service(background_service("compliance ledger", judge));
    }
    server.add_service(proxy_service);
    server.add_service(admin);
    let ready: Vec<std::net::SocketAddr> =
        settings.listen.iter().chain([&settings.admin]).filter_map(|a| a.parse().ok()).collect();
    server.add_service(background_service(
        "readiness",
        proxy::upgrade::Ready { addrs: ready, pid_file: settings.state_dir.join(proxy::upgrade::PID_FILE) },
    ));
    // Last: with `--upgrade`, bootstrapping opens the upgrade socket and
    // takes the old process's listeners, which signals it to go. Everything
    // that can refuse a start (the config, the admin token, certificates,
    // feeds, TLS settings) was done above, so a new process that cannot
    // serve exits before the old one is ever signalled, and it serves on.
    server.bootstrap();
    tracing::info!(listen = %settings.listen.join(", "), admin = %settings.admin, upgrade = cli.upgrade, "robots-proxy starting");
    let started = std::time::SystemTime::now();
    server.run(RunArgs { shutdown_signal: Box::new(GracefulSignals { sock: upgrade_sock, started }) });
    if robotsgate_config::telemetry::HANDOVER_FAILED.load(std::sync::atomic::Ordering::SeqCst) {
        // Pingora closed the listeners without handing them over: say so
        // in the exit code, so that `Restart=on-failure` restarts us.
        tracing::error!("the graceful upgrade could not hand the listeners over; exiting 1");
        std::process::exit(1);
    }
    Ok(())
}
