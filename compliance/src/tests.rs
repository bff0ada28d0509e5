//! Every rule of the judgement, stated in the crate's docs, held here.

use super::*;

const HOUR: i64 = 3_600_000;
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Revision 1 allows /news, revision 2 (served from hour 10) disallows it.
fn timeline() -> Timeline {
    let mut t = Timeline::new();
    t.push(At::ms(0), Outcome::body(1, b"User-agent: *\nDisallow: /admin\n"));
    t.push(At::ms(10 * HOUR), Outcome::body(2, b"User-agent: *\nDisallow: /admin\nDisallow: /news\n"));
    t
}

fn req(ms: i64, target: &'static str) -> Request<'static> {
    Request {
        at: At::ms(ms),
        crawler: "Googlebot",
        identity: Identity::Verified,
        target: target.as_bytes(),
        slashes: Slashes::Merged,
    }
}

fn fetch(ms: i64, o: Outcome) -> Fetch {
    Fetch { at: At::ms(ms), outcome: o }
}

#[test]
fn no_fetch_seen_current_outcome_decides_or_grace() {
    let t = timeline();
    // Allowed now: obeyed.
    assert_eq!(judge(&req(11 * HOUR, "/shop"), None, DAY, &t).class, Class::Obeyed);
    // Disallowed now, allowed an hour ago (inside 24 h): grace.
    let j = judge(&req(11 * HOUR, "/news/a"), None, DAY, &t);
    assert_eq!((j.class, j.revision), (Class::Grace, Some(1)));
    // Disallowed by everything it could hold: a violation, with the line.
    let j = judge(&req(11 * HOUR, "/admin/x"), None, DAY, &t);
    assert_eq!((j.class, j.revision, j.line), (Class::Violation, Some(2), Some(2)));
    // A day after the change, the old file is out of the window.
    let j = judge(&req(10 * HOUR + 25 * HOUR, "/news/a"), None, DAY, &t);
    assert_eq!((j.class, j.revision, j.line), (Class::Violation, Some(2), Some(3)));
}

#[test]
fn a_fetch_in_the_window_holds_exactly_what_it_got() {
    let t = timeline();
    // Fetched revision 1 at hour 9; asks for /news at hour 20: it holds
    // revision 1, which allows it. Obeyed, not grace.
    let f = fetch(9 * HOUR, Outcome::body(1, b"User-agent: *\nDisallow: /admin\n"));
    assert_eq!(judge(&req(20 * HOUR, "/news/a"), Some(&f), DAY, &t).class, Class::Obeyed);
    // Fetched revision 2 at hour 11: /news is a violation at once.
    let f = fetch(11 * HOUR, Outcome::body(2, b"User-agent: *\nDisallow: /admin\nDisallow: /news\n"));
    let j = judge(&req(12 * HOUR, "/news/a"), Some(&f), DAY, &t);
    assert_eq!((j.class, j.line, j.stale), (Class::Violation, Some(3), false));
    // A 503 it got holds too: disallow all.
    let f = fetch(11 * HOUR, Outcome::status(503));
    let j = judge(&req(12 * HOUR, "/shop"), Some(&f), DAY, &t);
    assert_eq!((j.class, j.status, j.revision), (Class::Violation, Some(503), None));
    // A 404 it got allows everything.
    let f = fetch(11 * HOUR, Outcome::status(404));
    assert_eq!(judge(&req(12 * HOUR, "/admin"), Some(&f), DAY, &t).class, Class::Obeyed);
}

#[test]
fn the_window_edge_is_inclusive_and_a_stale_fetch_protects_nobody() {
    let t = timeline();
    let f = fetch(9 * HOUR, Outcome::body(1, b"User-agent: *\nDisallow: /admin\n"));
    // Exactly 24 h after the fetch: still held.
    let j = judge(&req(9 * HOUR + 24 * HOUR, "/news/a"), Some(&f), DAY, &t);
    assert_eq!((j.class, j.stale), (Class::Obeyed, false));
    // One millisecond later: stale, judged by what was served in the window.
    let j = judge(&req(9 * HOUR + 24 * HOUR + 1, "/news/a"), Some(&f), DAY, &t);
    assert_eq!((j.class, j.stale), (Class::Grace, true));
    let j = judge(&req(9 * HOUR + 48 * HOUR, "/news/a"), Some(&f), DAY, &t);
    assert_eq!((j.class, j.stale), (Class::Violation, true));
    // The window edge of the timeline is inclusive too: an outcome still
    // served exactly `window` before the request counts. Revision 1 was
    // served until the millisecond before hour 10.
    let j = judge(&req(10 * HOUR - 1 + 24 * HOUR, "/news/a"), None, DAY, &t);
    assert_eq!(j.class, Class::Grace);
    let j = judge(&req(10 * HOUR + 24 * HOUR, "/news/a"), None, DAY, &t);
    assert_eq!(j.class, Class::Violation);
}

#[test]
fn same_millisecond_events_follow_their_order() {
    let t = timeline();
    let got = Outcome::body(2, b"User-agent: *\nDisallow: /admin\nDisallow: /news\n");
    let f = Fetch { at: At { ms: 11 * HOUR, seq: 5 }, outcome: got };
    // The request seen after the fetch: it holds revision 2.
    let after = Request { at: At { ms: 11 * HOUR, seq: 6 }, ..req(0, "/news/a") };
    assert_eq!(judge(&after, Some(&f), DAY, &t).class, Class::Violation);
    // Seen before it, in the same millisecond: the fetch does not count yet.
    let before = Request { at: At { ms: 11 * HOUR, seq: 4 }, ..req(0, "/news/a") };
    assert_eq!(judge(&before, Some(&f), DAY, &t).class, Class::Grace);
}

#[test]
fn a_spoofer_is_anonymous_and_no_fetch_protects_it() {
    let mut t = Timeline::new();
    t.push(At::ms(0), Outcome::body(1, b"User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nAllow: /\n"));
    let spoofed = Request { identity: Identity::Spoofed, ..req(HOUR, "/private/a") };
    let f = fetch(HOUR / 2, Outcome::status(404));
    // Googlebot's group would allow it, and a 404 fetch would too: a
    // spoofer is judged as anyone, by the `*` group.
    let j = judge(&spoofed, Some(&f), DAY, &t);
    assert_eq!((j.class, j.line), (Class::Violation, Some(2)));
    // The real crawler is judged by its own group.
    assert_eq!(judge(&req(HOUR, "/private/a"), None, DAY, &t).class, Class::Obeyed);
    // Unverifiable claims keep their fetches and their groups.
    let unverifiable = Request { identity: Identity::Unverifiable, ..req(HOUR, "/private/a") };
    assert_eq!(judge(&unverifiable, None, DAY, &t).class, Class::Obeyed);
}

#[test]
fn a_path_cannot_be_laundered_through_another_spelling() {
    let t = timeline();
    for target in ["/admin/x", "/%61dmin/x", "/a/../admin/x", "/admin%2Fx", "/./admin/x"] {
        assert_eq!(judge(&req(HOUR, target), None, DAY, &t).class, Class::Violation, "{target}");
    }
    assert_eq!(judge(&req(HOUR, "/Admin/x"), None, DAY, &t).class, Class::Obeyed, "paths are case-sensitive");
}

#[test]
fn nothing_known_is_no_verdict() {
    let j = judge(&req(HOUR, "/admin"), None, DAY, &Timeline::new());
    assert_eq!((j.class, j.revision), (Class::Unjudged, None));
    // Before the first outcome the timeline knows, there is no evidence:
    // never "obeyed", whatever the later file says.
    let mut t = Timeline::new();
    t.push(At::ms(5 * HOUR), Outcome::body(1, b"User-agent: *\nDisallow: /\n"));
    assert_eq!(judge(&req(HOUR, "/a"), None, DAY, &t).class, Class::Unjudged);
    assert_eq!(judge(&req(6 * HOUR, "/a"), None, DAY, &t).class, Class::Violation);
    assert_eq!(Class::parse("unjudged"), Some(Class::Unjudged));
}

#[test]
fn outages_read_as_the_fetch_policy_reads_them() {
    let mut t = timeline();
    t.push(At::ms(20 * HOUR), Outcome::status(503));
    t.push(At::ms(21 * HOUR), Outcome::status(404));
    // During the 503 hour, with nothing fetched: everything disallowed now,
    // but revision 2 (inside the window) allows /shop: grace.
    assert_eq!(judge(&req(20 * HOUR + 1, "/shop"), None, DAY, &t).class, Class::Grace);
    // After the 404, everything is allowed.
    assert_eq!(judge(&req(22 * HOUR, "/admin"), None, DAY, &t).class, Class::Obeyed);
    let mut down = Timeline::new();
    down.push(At::ms(0), Outcome::unreachable());
    let j = judge(&req(HOUR, "/a"), None, DAY, &down);
    assert_eq!((j.class, j.status), (Class::Violation, None));
}

#[test]
fn targets_of_this_site_and_robots_fetches() {
    let hosts = vec!["shop.example".to_string(), "[2001:db8::1]".to_string()];
    assert!(for_site(b"/x", &hosts));
    assert!(for_site(b"http://SHOP.example/x", &hosts));
    assert!(for_site(b"https://shop.example:8443/x?y", &hosts));
    assert!(for_site(b"http://user@shop.example/x", &hosts));
    assert!(for_site(b"http://[2001:db8::1]:80/x", &hosts));
    assert!(!for_site(b"http://other.example/x", &hosts));
    assert!(!for_site(b"http://shop.example.evil/x", &hosts));
    assert_eq!(origin_form(b"http://shop.example/a?b"), b"/a?b");
    assert_eq!(origin_form(b"http://shop.example"), b"/");
    assert_eq!(origin_form(b"/x"), b"/x");
    assert!(is_robots_fetch(b"/robots.txt") && is_robots_fetch(b"/robots.txt?x=1"));
    assert!(!is_robots_fetch(b"/robots.txt.bak") && !is_robots_fetch(b"/a/robots.txt"));
}

#[test]
fn a_timeline_forgets_only_what_ended_before() {
    let mut t = Timeline::new();
    t.push(At::ms(10), Outcome::status(404));
    t.push(At::ms(20), Outcome::status(503));
    t.push(At::ms(30), Outcome::status(410));
    t.forget_before(At::ms(25));
    assert_eq!(t.len(), 2, "the one current at the edge stays");
    assert_eq!(t.at(At::ms(25)).and_then(|o| o.status), Some(503));
    assert_eq!(t.last().and_then(|o| o.status), Some(410));
    t.forget_before(At::ms(5));
    assert_eq!(t.len(), 2);
}
