//! `robots explain`: the chosen group, every rule that matched with its
//! priority, and the winner.

use std::path::Path;
use std::process::ExitCode;

use rules::Robots;

pub fn run(path: &Path, agent: &str, url: &str) -> anyhow::Result<ExitCode> {
    let body = super::read_robots(path)?;
    let robots = Robots::parse(&body);
    let prepared = robots.agent(agent);
    let target = rules::target::path_of(url.as_bytes());
    println!("crawler:  {}", super::human(agent));
    println!("path:     {}", super::human(&String::from_utf8_lossy(&target)));
    match prepared.group() {
        None => {
            println!("group:    none (no group names this crawler and there is no `User-agent: *`)")
        }
        Some(g) => {
            let lines: Vec<String> = g.lines.iter().map(u32::to_string).collect();
            let which = if g.global { "the * group" } else { "this crawler's group" };
            println!("group:    {which}, starting at line {}", lines.join(", "));
        }
    }
    let hits = prepared.matching_rules(&target);
    if hits.is_empty() {
        println!("matched:  no rule");
    } else {
        println!("matched (longest first; Allow wins ties):");
        for r in &hits {
            let note = if r.pattern.is_empty() { "  (empty: never decides)" } else { "" };
            println!("  priority {:>4}  {}{note}", r.priority(), super::human(&r.to_string()));
        }
    }
    let v = prepared.check_path(&target);
    println!("verdict:  {}", if v.allowed { "ALLOWED" } else { "DISALLOWED" });
    println!("because:  {}", super::human(&v.to_string()));
    Ok(if v.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
