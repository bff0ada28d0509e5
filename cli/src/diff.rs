//! `robots diff OLD NEW`: the unified text diff, then every verdict that
//! flips for the given crawlers and URLs. Exit code 1 when any verdict
//! flips: the dry run to put in CI before a robots.txt change ships.
//!
//! With `--config FILE [--site NAME]`, the site's pins and floor are
//! judged too, by the same judgement robots-proxy's gate holds changes
//! with ([`rules::gate`]), and in the same words: a pull request can be
//! refused before the deploy that the gateway would hold.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use rules::{FetchOutcome, Policy, flips};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The robots.txt as it is now.
    old: PathBuf,
    /// The robots.txt as it would be.
    new: PathBuf,
    /// A crawler to test; repeat for several (default: with --config the
    /// site's crawlers, else every crawler either file names, and
    /// Googlebot and bingbot for `*`).
    #[arg(long = "agent", short = 'a')]
    agents: Vec<String>,
    /// A file of URLs (or paths), one per line; `-` for stdin (default:
    /// with --config the site's saved URLs and `/`, which the gate's floor
    /// guards, else `/` and a path for each rule of either file, so that
    /// every changed rule is tried).
    #[arg(long)]
    urls: Option<PathBuf>,
    /// The robotsgate config whose pins and floor the change must keep,
    /// as the gate judges it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The site of --config (needed when it lists several).
    #[arg(long, requires = "config")]
    site: Option<String>,
    /// A sitemap (a file, or an http(s) URL) whose URLs the change must not
    /// close for a search crawler; repeat for several. Exit 1 when it
    /// closes any. With --config and `sitemaps: { keep_open: true }`, the
    /// gate's verdict counts them too, as the gateway would.
    #[arg(long = "sitemap")]
    sitemaps: Vec<String>,
}

/// The site's declarations, from `--config` and `--site`.
struct Declared {
    site: robotsgate_config::Site,
    agents: Vec<String>,
    catalogue: robotsgate_crawlers::Catalogue,
}

fn declared(args: &Args) -> anyhow::Result<Option<Declared>> {
    let Some(path) = &args.config else { return Ok(None) };
    let config = robotsgate_config::Config::load(path)?;
    let site = match &args.site {
        Some(name) => config
            .sites
            .iter()
            .find(|s| &s.name == name)
            .with_context(|| format!("{}: no site named `{name}`", path.display()))?,
        None => match config.sites.as_slice() {
            [only] => only,
            _ => anyhow::bail!("{}: lists {} sites; name one with --site", path.display(), config.sites.len()),
        },
    };
    let catalogue = config.catalogue().with_context(|| format!("{}: `crawlers`", path.display()))?;
    Ok(Some(Declared { site: site.clone(), agents: config.agents_of(site).to_vec(), catalogue }))
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let old = super::read_robots(&args.old)?;
    let new = super::read_robots(&args.new)?;
    let declared = declared(args)?;
    let as_policy = |body: &[u8]| Policy::from_fetch(&FetchOutcome::status(200).with_body(body.to_vec()));
    let (old_policy, new_policy) = (as_policy(&old), as_policy(&new));
    let urls = match (&args.urls, &declared) {
        (Some(path), _) => read_urls(path)?,
        // The site's saved URLs, and the floor's (`/` first), so that a
        // change the gate judges (`Disallow: /` above all) is never
        // reported as "no verdict flips" for want of URLs to try.
        (None, Some(d)) => {
            let mut urls: Vec<String> = d.site.url_sets.values().flatten().map(|e| e.url().to_string()).collect();
            for url in d.site.floor(&d.catalogue).urls {
                if !urls.contains(&url) {
                    urls.insert(0, url);
                }
            }
            urls
        }
        (None, None) => rule_paths(&[&old, &new]),
    };
    let agents = match (&declared, args.agents.is_empty()) {
        (Some(d), true) => d.agents.clone(),
        (None, true) => named_agents(&[&old_policy, &new_policy]),
        _ => args.agents.clone(),
    };
    let text_diff = similar::TextDiff::from_lines(&*String::from_utf8_lossy(&old), &*String::from_utf8_lossy(&new))
        .unified_diff()
        .context_radius(2)
        .header(&args.old.display().to_string(), &args.new.display().to_string())
        .to_string();
    if text_diff.is_empty() {
        println!("no text changes");
    } else {
        print!("{text_diff}");
    }
    let (old, new) = (old_policy, new_policy);
    let flipped = flips(&old, &new, &urls, &agents);
    let grid = format!("{} x {}", plural(urls.len(), "URL", "URLs"), plural(agents.len(), "crawler", "crawlers"));
    println!();
    if flipped.is_empty() {
        println!("no verdict flips for {grid}");
    } else {
        println!("{} for {grid}:", plural(flipped.len(), "verdict flip", "verdict flips"));
        for f in &flipped {
            println!("  {}  {}\n    was {}\n    now {}", f.agent, f.url, f.old, f.new);
        }
    }
    let mut held = false;
    let listed = if args.sitemaps.is_empty() { None } else { Some(crate::sitemap::load(&args.sitemaps)?) };
    if let Some(listed) = &listed {
        println!();
        listed.print();
        let made = rules::sitemap::conflicts(Some(&old), &new, &listed.urls, &crate::sitemap::search_crawlers());
        if made.is_clear() {
            println!("this change closes none of the {} sitemap URLs", rules::sitemap::thousands(made.listed));
        } else {
            held = true;
            for g in &made.groups {
                println!("this change: {}", g.sentence(made.listed, "search crawlers"));
                for url in &g.sample {
                    println!("    {url}");
                }
            }
        }
    }
    if let Some(d) = &declared {
        let name = &d.site.name;
        let mut floor = d.site.floor(&d.catalogue);
        if let Some(listed) = listed.as_ref().filter(|_| d.site.sitemaps.keep_open) {
            floor.listed = std::sync::Arc::new(listed.urls.clone());
        }
        let breaches = match d.site.gate {
            robotsgate_config::GateMode::Off => Vec::new(),
            _ => rules::gate::breaches(&old, &new, &d.site.pins(&d.agents, &d.catalogue), &floor),
        };
        println!();
        if d.site.gate == robotsgate_config::GateMode::Off {
            println!("the gate is off for {name}: nothing is judged");
        } else if breaches.is_empty() {
            println!("the gate would pass this change for {name}: it breaks no pin and not the floor");
        } else {
            let verb = if d.site.gate == robotsgate_config::GateMode::Hold { "hold" } else { "warn of" };
            println!("the gate would {verb} this change for {name}: {}", rules::gate::summary(&breaches));
            // One line per page and deciding line, its crawlers together.
            for g in rules::gate::grouped(&breaches) {
                println!("  {g}");
            }
            held = true;
        }
    }
    Ok(if flipped.is_empty() && !held { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `/`, and for each rule of `files` a path it matches: its pattern with
/// `*` as `x` and no `$` (`/*.pdf$` is tried as `/x.pdf`), in file order.
fn rule_paths(files: &[&[u8]]) -> Vec<String> {
    struct Paths(Vec<String>);
    impl rules::parse::Handler for Paths {
        fn directive(&mut self, d: &rules::parse::Directive<'_>) {
            if matches!(d.kind, rules::KeyKind::Allow | rules::KeyKind::Disallow) && d.value.starts_with(b"/") {
                let path = String::from_utf8_lossy(d.value).replace('*', "x");
                let path = path.strip_suffix('$').unwrap_or(&path).to_string();
                if !self.0.contains(&path) {
                    self.0.push(path);
                }
            }
        }
    }
    let mut paths = Paths(vec!["/".to_string()]);
    for file in files {
        rules::parse::parse(file, &mut paths);
    }
    paths.0
}

/// Every crawler a group of `files` names, then Googlebot and bingbot, who
/// read `*` where no group names them; a catalogued crawler spelled as the
/// catalogue spells it (`Googlebot`, not the matcher's `googlebot`).
fn named_agents(files: &[&Policy]) -> Vec<String> {
    let catalogue = robotsgate_crawlers::Catalogue::builtin();
    let mut agents: Vec<String> = Vec::new();
    for robots in files.iter().filter_map(|p| p.robots()) {
        for token in robots.named_agents() {
            let token = String::from_utf8_lossy(token).into_owned();
            let token = catalogue.get(&token).map_or(token, |c| c.token.clone());
            if !agents.iter().any(|a| a.eq_ignore_ascii_case(&token)) {
                agents.push(token);
            }
        }
    }
    for main in ["Googlebot", "bingbot"] {
        if !agents.iter().any(|a| a.eq_ignore_ascii_case(main)) {
            agents.push(main.to_string());
        }
    }
    agents
}

/// `n` and the noun that agrees with it.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn read_urls(path: &Path) -> anyhow::Result<Vec<String>> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| format!("cannot read URL list {}", path.display()))?,
        ))
    };
    let mut urls = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: not UTF-8 text", path.display(), n + 1))?;
        let url = line.trim();
        if !url.is_empty() && !url.starts_with('#') {
            urls.push(url.to_string());
        }
    }
    Ok(urls)
}
