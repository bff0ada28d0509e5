//! `robots-monitor --config FILE <command>`: the daemon (`run`, with the
//! console when `console:` is set), one pass for cron and tests (`once`),
//! the console alone (`serve`), the read-only reports (`history`, `show`,
//! `diff`, `fetches`, `test`, `compliance`), the ledger's import
//! (`ingest`), `release`, `import-history` and `check-config`. The work is
//! in the `monitor`, `ledger` and `console` crates; this is the wiring.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use monitor::{Monitor, report};
use robotsgate_config::Config;

/// Watches robots.txt files, keeps their history, and alerts when crawling would change.
#[derive(Parser, Debug)]
#[command(
    name = "robots-monitor",
    version,
    after_help = "EXIT STATUS:\n  0  done\n  1  done, with errors to see: `ingest` could not read a file, or every request was past compliance_retention\n  2  could not run: the config cannot be read or is invalid (named by file, line and key), the database is unreachable, a bad argument"
)]
struct Cli {
    /// The configuration file (see config.example.yaml).
    #[arg(long, short, default_value = "config.yaml")]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the daemon until SIGINT or SIGTERM (and the web console, when
    /// the config has a `console:` section).
    Run,
    /// Serve the web console only, until SIGINT or SIGTERM.
    Serve {
        /// `host:port`; default: `console.listen`, else 127.0.0.1:8484.
        #[arg(long)]
        listen: Option<String>,
    },
    /// Poll every site once, deliver alerts, and exit.
    Once,
    /// Every recorded state of a site; with --url and --agent, when that verdict changed.
    History {
        /// The site's name.
        site: String,
        /// A URL or path: one of the site's URL sets is read back from
        /// the recorded verdicts, any other is judged on each stored
        /// revision.
        #[arg(long)]
        url: Option<String>,
        /// A crawler.
        #[arg(long)]
        agent: Option<String>,
    },
    /// Without a revision: what crawlers get at every place they look for
    /// the site's robots.txt (its host variants, the edge against the
    /// origin). With one: print that stored revision.
    Show {
        /// The site's name.
        site: String,
        /// The revision id (see `history`).
        rev: Option<i64>,
    },
    /// Text diff and verdict flips between two revisions (default: the last two).
    Diff {
        /// The site's name.
        site: String,
        /// The older revision.
        rev_a: Option<i64>,
        /// The newer revision.
        rev_b: Option<i64>,
    },
    /// Fetches per UTC day: how many, which statuses, the slowest.
    Fetches {
        /// The site's name.
        site: String,
        /// How many days back (today included).
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
    /// Fetch now and print today's verdict table (records nothing).
    Test {
        /// The site's name.
        site: String,
    },
    /// Import access logs (plain, .gz, .xz or .zst) and judge every crawler request
    /// against the robots.txt the crawler could hold; the same bytes twice
    /// count once.
    Ingest {
        /// The site the logs are of.
        #[arg(long)]
        site: String,
        /// `combined` (nginx and Apache; `common` lines too),
        /// `vhost_combined` (Apache's, Debian's other_vhosts_access.log),
        /// `nginx` / `apache` with --layout, `caddy`, `json` (one object a
        /// line; see --field), `cloudflare` and `fastly` (JSON presets),
        /// `w3c` / `iis` (W3C extended, by its `#Fields:`), `cloudfront`
        /// (W3C; CloudFront's documented fields when no `#Fields:` comes
        /// first), `alb` and `elb` (AWS load balancers).
        #[arg(long, default_value = "combined")]
        format: String,
        /// For `--format nginx` or `apache`: the server's own `log_format`
        /// or `LogFormat` text, as in its configuration.
        #[arg(long)]
        layout: Option<String>,
        /// For `json`: a field name, as `time=ts`, `client=ip`, `method=m`,
        /// `target=uri`, `status=code`, `user_agent=ua`, `host=host`
        /// (dotted for nested: `request.uri`). Repeat for each.
        #[arg(long = "field")]
        fields: Vec<String>,
        /// `text` or `json`.
        #[arg(long, default_value = "text", value_parser = ["text", "json"])]
        output: String,
        /// Take the files back instead: subtract what each added to the
        /// ledger and forget how far it was read, so that it can be
        /// imported again (with the right --format, say) without counting
        /// anything twice.
        #[arg(long)]
        forget: bool,
        /// The log files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// What crawlers did on a site: requests, violations, grace, identity,
    /// and each one's last robots.txt read.
    Compliance {
        /// The site's name.
        site: String,
        /// Only this crawler.
        #[arg(long)]
        crawler: Option<String>,
        /// How far back (`7d`, `12h`, `30days`), as the console's
        /// `?since=`: the ledger counts by UTC day, so a part of a day
        /// covers that whole day. The console's default, 30 days.
        #[arg(long, default_value = "30d")]
        since: String,
        /// `text` or `json`, as every command's `--output` (`--format`,
        /// its old name here, is still read).
        #[arg(long, alias = "format", default_value = "text", value_parser = ["text", "json"])]
        output: String,
    },
    /// Release a change the gate holds at the edge: every gateway sharing
    /// the database serves it at its next refresh. Without REVISION, every
    /// change held for the site now; with it, that revision's exact body
    /// (held already, or ahead of its deploy).
    Release {
        /// The site's name.
        site: String,
        /// The revision id (see `history`, or the alert's console link).
        revision: Option<i64>,
    },
    /// Import a site's robots.txt history from before monitoring, so that
    /// older access logs can be judged: from a git repository (`--git
    /// REPO [--path robots.txt] [--tags 'deploy-*']`), a folder of dated
    /// copies (`--dir DIR`), or the Internet Archive (`--archive
    /// https://web.archive.org [--url URL]`). Logs imported before are
    /// judged again at their next `ingest`.
    ImportHistory {
        /// The site's name.
        site: String,
        /// A git repository holding the file.
        #[arg(long, conflicts_with_all = ["dir", "archive"])]
        git: Option<PathBuf>,
        /// The file's path in the repository.
        #[arg(long, default_value = "robots.txt", requires = "git")]
        path: String,
        /// Only tags matching this pattern, at their times (deploys).
        #[arg(long, requires = "git")]
        tags: Option<String>,
        /// A folder of copies with dates in their names.
        #[arg(long, conflicts_with = "archive")]
        dir: Option<PathBuf>,
        /// The Internet Archive's base URL (its CDX API and captures).
        #[arg(long)]
        archive: Option<String>,
        /// The robots.txt URL the archive captured (default: the site's `url`).
        #[arg(long, requires = "archive")]
        url: Option<String>,
    },
    /// Load and validate the configuration, then exit.
    CheckConfig,
    #[command(flatten)]
    Shell(robotsgate_shell::Command),
}

/// The log format the `ingest` flags name.
fn log_format(
    format: &str,
    layout: Option<&str>,
    fields: &[String],
) -> anyhow::Result<robotsgate_compliance::log::Format> {
    if let Some(text) = layout {
        return robotsgate_compliance::log::Format::with_layout(format, text)
            .map_err(|e| anyhow::anyhow!("--format {format} --layout: {e}"));
    }
    let pairs = fields
        .iter()
        .map(|pair| pair.split_once('=').ok_or_else(|| anyhow::anyhow!("--field `{pair}`: write KEY=NAME")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    robotsgate_compliance::log::Format::named(format, pairs).map_err(|e| anyhow::anyhow!("--format {format}: {e}"))
}

fn main() -> ExitCode {
    let cli: Cli = robotsgate_shell::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("robots-monitor: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) if robotsgate_shell::is_closed_stdout(e.as_ref()) => ExitCode::from(robotsgate_shell::CLOSED_STDOUT),
        Err(e) => {
            eprintln!("robots-monitor: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Neither needs a config.
    if let Command::Shell(shell) = &cli.command {
        shell.run(<Cli as clap::CommandFactory>::command())?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = Config::load_and_log(&cli.config)?;
    if let Command::CheckConfig = cli.command {
        // The console's readers file is read as the console will read it.
        if let Some(file) = config.console.as_ref().and_then(|c| c.htpasswd.as_deref()) {
            let readers = console::readers::Readers::read(file).map_err(anyhow::Error::msg)?;
            println!("{}: {}", file.display(), monitor::words::plural(readers.len(), "reader", "readers"));
        }
        println!(
            "{}: {}, database {}",
            cli.config.display(),
            monitor::words::plural(config.sites.len(), "site", "sites"),
            robotsgate_history::shown(config.database())
        );
        // How each site is watched, and whether its gateways' holds reach
        // the monitor (they do through a `database:` both daemons name).
        for site in &config.sites {
            let source = site.source();
            let mut line = format!("  {}: {}", site.name, source.how());
            if !matches!(source, robotsgate_config::Source::None | robotsgate_config::Source::Static(_)) {
                line.push_str(&format!(" ({})", source.location()));
            }
            if site.proxy.is_some() {
                line.push_str(match (&config.database, site.gate) {
                    (_, robotsgate_config::GateMode::Off) => "; gate off",
                    (Some(_), _) => "; fronted by robots-proxy, whose holds reach the monitor through the database",
                    (None, _) => {
                        "; fronted by robots-proxy with no `database:`, so its holds stay on each gateway (see /status)"
                    }
                });
            }
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let base = monitor::monitor::base_dir(&cli.config);
    let m = Arc::new(Monitor::build(config, &base).await.context("starting the monitor")?);
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Run => {
            let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
            let console = m.config().console.clone().map(|c| {
                let (m, mut stop_rx) = (Arc::clone(&m), stop_rx.clone());
                tokio::spawn(async move {
                    let stopped = async move {
                        let _ = stop_rx.changed().await;
                    };
                    if let Err(e) = console::serve(m, &c.listen, stopped).await {
                        // The daemon's work is polling; a console that cannot
                        // bind is reported, not fatal.
                        tracing::error!("{e:#}");
                    }
                })
            });
            // The compliance ledger's side of the daemon: tailing logs,
            // raising violation alerts, retention.
            let host: Arc<dyn ledger::Host> = m.clone();
            let _tails = ledger::tail::start(&host)?;
            let upkeep = ledger::upkeep(&host);
            m.run_until_stopped(shutdown_signal()).await?;
            upkeep.abort();
            let _ = stop_tx.send(true);
            if let Some(c) = console {
                let _ = c.await;
            }
            drop(stop_rx);
        }
        Command::ImportHistory { site, git, path, tags, dir, archive, url } => {
            use monitor::import_history::{Origin, import};
            let origin = match (git, dir, archive) {
                (Some(repo), _, _) => Origin::Git { repo, path, tags },
                (_, Some(dir), _) => Origin::Dir(dir),
                (_, _, Some(base)) => {
                    let url = url
                        .or_else(|| m.site(&site).and_then(|s| s.url.clone()))
                        .with_context(|| format!("site `{site}` has no `url`: give the captured one with --url"))?;
                    Origin::Archive { base, url }
                }
                _ => anyhow::bail!("give the history's source: --git REPO, --dir DIR or --archive URL"),
            };
            let report = import(&m, &site, &origin).await?;
            let when = |ms: i64| monitor::clock::when(Some(ms));
            let span = report.span.map_or(String::new(), |(a, b)| format!(", from {} to {}", when(a), when(b)));
            writeln!(
                stdout,
                "{site}: {} found, {} new{span}. Logs imported before are judged against them at their next `ingest`.",
                monitor::words::plural(report.found, "state", "states"),
                report.new
            )?;
        }
        Command::Release { site, revision } => {
            let released = monitor::release::release(&m, &site, revision, "robots-monitor release").await?;
            writeln!(stdout, "{}", released.notice)?;
            for outcome in &released.outcomes {
                writeln!(stdout, "  {outcome}")?;
            }
        }
        Command::Serve { listen } => {
            let listen = listen
                .or_else(|| m.config().console.as_ref().map(|c| c.listen.clone()))
                .unwrap_or_else(|| robotsgate_config::Console::default().listen);
            console::serve(Arc::clone(&m), &listen, shutdown_signal()).await?;
        }
        Command::Once => {
            // Violations in the ledger become alerts before the delivery.
            ledger::alerts::raise(&*m).await?;
            for o in m.once().await? {
                writeln!(
                    stdout,
                    "{}: {}{}{}{}",
                    o.site,
                    o.policy,
                    if o.new_revision { ", new revision" } else { "" },
                    if o.changed {
                        format!(", changed ({})", monitor::words::plural(o.flips, "flip", "flips"))
                    } else {
                        String::new()
                    },
                    if o.alerted { ", alert queued" } else { "" }
                )?;
            }
        }
        Command::History { site, url, agent } => {
            write!(stdout, "{}", report::history(&m, &site, url.as_deref(), agent.as_deref()).await?)?
        }
        Command::Show { site, rev: Some(rev) } => stdout.write_all(&report::show(&m, &site, rev).await?)?,
        Command::Show { site, rev: None } => stdout.write_all(report::places(&m, &site).await?.as_bytes())?,
        Command::Diff { site, rev_a, rev_b } => {
            let revs = match (rev_a, rev_b) {
                (Some(a), Some(b)) => Some((a, b)),
                (None, None) => None,
                _ => anyhow::bail!("give two revisions, or none for the last two"),
            };
            write!(stdout, "{}", report::diff(&m, &site, revs).await?)?
        }
        Command::Fetches { site, days } => write!(stdout, "{}", report::fetches(&m, &site, days).await?)?,
        Command::Test { site } => write!(stdout, "{}", report::test(&m, &site).await?)?,
        Command::Ingest { site, forget: true, files, .. } => {
            for (path, f) in ledger::ingest::forget(&*m, &site, &files).await? {
                if f.known {
                    writeln!(
                        stdout,
                        "{path}: forgotten: {} taken out of the ledger; its {} will be read again by the next import",
                        monitor::words::plural(f.requests, "crawler request", "crawler requests"),
                        monitor::words::plural(f.lines, "line", "lines"),
                    )?;
                } else {
                    writeln!(stdout, "{path}: no import of {site} has read this file; nothing to forget")?;
                }
            }
        }
        Command::Ingest { site, format, layout, fields, output, files, .. } => {
            let format = log_format(&format, layout.as_deref(), &fields)?;
            let reports = ledger::ingest::ingest(&*m, &site, &files, &format).await?;
            if output == "json" {
                writeln!(stdout, "{}", serde_json::to_string_pretty(&reports)?)?;
            } else {
                for r in &reports {
                    let plural = monitor::words::plural;
                    // Unjudged requests say what they came before, in one
                    // place, so the line never calls them judged.
                    let unjudged = match (r.unjudged, r.first_known) {
                        (0, _) => String::new(),
                        (_, Some(at)) => format!(" (no robots.txt known before {})", monitor::clock::when(Some(at))),
                        (_, None) => format!(" (no robots.txt of {site} known yet)"),
                    };
                    writeln!(
                        stdout,
                        "{}: {} ({} read before); {}: {} judged, {} unjudged{unjudged}; {}, {}, {} redirected; {}, {} for other hosts, {} not HTTP, {} malformed, {} blank, {}",
                        r.path,
                        plural(r.lines, "line", "lines"),
                        r.already,
                        plural(r.judged, "crawler request", "crawler requests"),
                        r.judged - r.unjudged,
                        r.unjudged,
                        plural(r.fetches, "robots.txt fetch", "robots.txt fetches"),
                        if r.identity_checked {
                            format!("{} by spoofers", r.spoofed_fetches)
                        } else {
                            "identity not checked (no `identity:` configured)".to_string()
                        },
                        r.redirected,
                        plural(r.others, "other client", "other clients"),
                        r.other_hosts,
                        r.not_http,
                        r.malformed,
                        r.blank,
                        plural(r.directives, "directive", "directives"),
                    )?;
                    for (line, why) in &r.bad_samples {
                        writeln!(stdout, "  line {line}: {why}")?;
                    }
                    if r.too_old > 0 {
                        writeln!(
                            stdout,
                            "  {} older than compliance_retention ({}): not judged, as the ledger would delete them at once",
                            monitor::words::plural(r.too_old, "request is", "requests are"),
                            match m.config().compliance_retention.as_secs() {
                                s if s % 86_400 == 0 => monitor::words::plural(s / 86_400, "day", "days"),
                                _ => humantime::format_duration(m.config().compliance_retention).to_string(),
                            }
                        )?;
                    }
                    if r.other_hosts > 0 && r.no_hosts {
                        writeln!(
                            stdout,
                            "  the site has no host names (a `file:` site: give `proxy.hosts`), so requests for absolute URLs count for other hosts"
                        )?;
                    }
                    if r.rejudged > 0 {
                        writeln!(
                            stdout,
                            "  {} read before, unjudged then, judged now against the history imported since",
                            monitor::words::plural(r.rejudged, "request", "requests")
                        )?;
                    }
                    if r.unjudged > 0 {
                        writeln!(
                            stdout,
                            "  unjudged is not obeyed: there is no evidence of what the crawler could hold then"
                        )?;
                    }
                }
            }
            let mut errors: Vec<String> = reports.iter().filter_map(|r| r.error.clone()).collect();
            // A log entirely past retention is refused, not judged and pruned.
            for r in reports.iter().filter(|r| r.too_old > 0 && r.judged == 0 && r.fetches == 0) {
                errors
                    .push(format!("{}: every request is older than compliance_retention; nothing was judged", r.path));
            }
            for e in &errors {
                eprintln!("robots-monitor: {e}");
            }
            if !errors.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Compliance { site, crawler, since, output } => {
            let days = ledger::report::window_days("--since", &since).map_err(anyhow::Error::msg)?;
            let crawler = crawler
                .map(|c| ledger::report::crawler_named(&*m, "--crawler", &c))
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let lines = ledger::report::summary(&*m, &site, days, crawler.as_deref()).await?;
            if output == "json" {
                writeln!(stdout, "{}", serde_json::to_string_pretty(&lines)?)?;
            } else {
                let now = monitor::clock::now_ms();
                write!(stdout, "{}", ledger::report::text(&site, &lines, now, days, crawler.as_deref()))?;
            }
        }
        Command::CheckConfig | Command::Shell(_) => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
