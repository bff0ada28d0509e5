//! Parse and check arbitrary bytes: no panic, and the fast engine agrees
//! with the reference model of Google's algorithm on every input.
//!
//! Input layout: agent bytes, 0xFF, URL bytes, 0xFF, robots.txt bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == 0xFF);
    let (Some(agent), Some(url), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        let _ = rules::Robots::parse(data).check_bytes(b"bot", b"/");
        return;
    };
    // The reference is quadratic; keep its inputs small enough to stay fast.
    if body.len() > 4096 || url.len() > 512 {
        let _ = rules::Robots::parse(body).check_bytes(agent, url);
        return;
    }
    let robots = rules::Robots::parse(body);
    let v = robots.check_bytes(agent, url);
    let want = rules::reference::check(body, agent, url);
    assert_eq!((v.allowed, v.rule.map_or(0, |r| r.line)), want, "engine and reference disagree");
});
