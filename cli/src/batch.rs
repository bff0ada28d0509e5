//! `robots batch`: JSON lines in, the same lines out with `"allowed"` added.
//! Each input line names its robots.txt, crawler and URL as text (`robots`,
//! `agent`, `url`) or as standard base64 of raw bytes (`robots_b64`, …);
//! every other member is kept. A bad line yields an error object and the
//! run goes on.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use base64::Engine as _;
use rules::Robots;
use serde_json::{Map, Value, json};

pub fn run(input: impl BufRead, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let mut out = std::io::BufWriter::new(out);
    // Consecutive lines usually share one robots.txt: parse it once.
    let mut last: Option<(Vec<u8>, Robots)> = None;
    let mut failures = 0usize;
    for (n, line) in input.split(b'\n').enumerate() {
        let line = line?;
        if rules::parse::trim(&line).is_empty() {
            continue;
        }
        let answer = match answer(&line, &mut last) {
            Ok(obj) => Value::Object(obj),
            Err(e) => {
                failures += 1;
                json!({ "error": e, "line": n + 1 })
            }
        };
        out.write_all(&serde_json::to_vec(&answer)?)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn answer(line: &[u8], last: &mut Option<(Vec<u8>, Robots)>) -> Result<Map<String, Value>, String> {
    let mut obj: Map<String, Value> = match serde_json::from_slice(line) {
        Ok(Value::Object(obj)) => obj,
        Ok(_) => return Err("expected a JSON object".into()),
        Err(e) => return Err(format!("invalid JSON: {e}")),
    };
    let robots = field(&obj, "robots")?;
    let agent = field(&obj, "agent")?;
    let url = field(&obj, "url")?;
    let same = last.as_ref().is_some_and(|(body, _)| *body == robots);
    if !same {
        let parsed = Robots::parse(&robots);
        *last = Some((robots, parsed));
    }
    let allowed = last.as_ref().is_some_and(|(_, r)| r.check_bytes(&agent, &url).allowed);
    obj.insert("allowed".into(), Value::Bool(allowed));
    Ok(obj)
}

/// `name` as a string, or `name_b64` decoded.
fn field(obj: &Map<String, Value>, name: &str) -> Result<Vec<u8>, String> {
    let b64 = format!("{name}_b64");
    match (obj.get(name), obj.get(&b64)) {
        (Some(Value::String(s)), None) => Ok(s.clone().into_bytes()),
        (None, Some(Value::String(s))) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("`{b64}` is not standard base64: {e}")),
        (Some(_), Some(_)) => Err(format!("give `{name}` or `{b64}`, not both")),
        (Some(_), None) | (None, Some(_)) => Err(format!("`{name}` must be a string")),
        (None, None) => Err(format!("missing `{name}` (or `{b64}`)")),
    }
}
