//! The normal form of a request target, held from outside: every spelling
//! of a path meets its normal form, and enforcement's verdict on a
//! spelling is never kinder than Google's verdict on the normal form, nor
//! harsher than Google's verdicts on the raw target and the normal form.

use proptest::prelude::*;
use rules::Robots;
use rules::normal::{Slashes, normalize};

/// Raw request targets, odd bytes and escapes included.
fn target() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just("/"),
        Just("a"),
        Just("B"),
        Just("."),
        Just(".."),
        Just("-_~"),
        Just("%2f"),
        Just("%2E"),
        Just("%70"),
        Just("%25"),
        Just("%3d"),
        Just("%e3%83%84"),
        Just("ツ"),
        Just(";x=1"),
        Just("\\"),
        Just("?"),
        Just("="),
        Just("&"),
        Just("*"),
        Just("$"),
        Just("#"),
        Just("%"),
    ];
    prop::collection::vec(piece, 0..10).prop_map(|v| {
        let mut t = b"/".to_vec();
        t.extend(v.concat().into_bytes());
        t
    })
}

/// A small xorshift generator, seeded by proptest, for the choices made
/// while re-spelling.
struct Choices(u64);

impl Choices {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn escape(b: u8, lower: bool) -> Vec<u8> {
    let s = format!("%{b:02X}");
    if lower { s.to_ascii_lowercase().into_bytes() } else { s.into_bytes() }
}

/// Another spelling of a target in normal form: the same resource to an
/// origin that reads slashes as `slashes` says.
fn respell(normal: &[u8], slashes: Slashes, rng: &mut Choices) -> Vec<u8> {
    let query_at = normal.iter().position(|&b| b == b'?').unwrap_or(normal.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < normal.len() {
        let b = normal[i];
        let in_path = i < query_at;
        if b == b'%' && normal.len() >= i + 3 {
            let v = u8::from_str_radix(std::str::from_utf8(&normal[i + 1..i + 3]).unwrap_or("zz"), 16).ok();
            if let Some(v) = v {
                match rng.next(3) {
                    0 if v >= 0x80 => out.push(v),
                    1 => out.extend(escape(v, true)),
                    _ => out.extend_from_slice(&normal[i..i + 3]),
                }
                i += 3;
                continue;
            }
        }
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        if unreserved && rng.next(3) == 0 {
            out.extend(escape(b, rng.next(2) == 0));
        } else if in_path && b == b'/' {
            match (slashes, rng.next(8)) {
                (_, 0) => out.extend_from_slice(b"/./"),
                (_, 1) => out.extend_from_slice(b"/zz/../"),
                (_, 2) => out.extend_from_slice(b"/%2e/"),
                (_, 3) => out.extend_from_slice(b"/q/%2E%2e/"),
                (Slashes::Merged, 4) => out.extend_from_slice(b"//"),
                (Slashes::Merged, 5) => out.extend_from_slice(b"%2f"),
                (Slashes::Merged, 6) => out.extend_from_slice(b"\\"),
                (Slashes::Merged, 7) if i > 0 => out.extend_from_slice(b"/%5C"),
                _ => out.push(b'/'),
            }
        } else {
            out.push(b);
        }
        i += 1;
    }
    out
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rules_body() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("/"),
        Just("a"),
        Just("B"),
        Just("p"),
        Just("*"),
        Just("$"),
        Just("%2F"),
        Just("ツ"),
        Just("?"),
        Just("="),
        Just("."),
    ];
    let pattern = prop::collection::vec(piece, 0..5).prop_map(|v| v.concat());
    let rule = (prop::bool::ANY, pattern)
        .prop_map(|(allow, p)| format!("{}: {p}\n", if allow { "Allow" } else { "Disallow" }));
    prop::collection::vec(rule, 1..6).prop_map(|r| format!("User-agent: *\n{}", r.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// The normal form is a fixed point, and every re-spelling of it comes
    /// back to it, in both slash modes.
    #[test]
    fn every_spelling_meets_its_normal_form(t in target(), seed in 1u64.., merged in prop::bool::ANY) {
        let slashes = if merged { Slashes::Merged } else { Slashes::Strict };
        let normal = normalize(&t, slashes).into_owned();
        prop_assert_eq!(show(&normalize(&normal, slashes)), show(&normal), "not a fixed point: {}", show(&t));
        let mut rng = Choices(seed);
        for _ in 0..4 {
            let spelling = respell(&normal, slashes, &mut rng);
            prop_assert_eq!(
                show(&normalize(&spelling, slashes)), show(&normal),
                "{} respelt as {}", show(&t), show(&spelling)
            );
        }
    }

    /// Enforcement refuses every spelling of a path that Google's matcher
    /// disallows in normal form, and passes a target whenever Google's
    /// matcher allows both its raw and its normal form.
    #[test]
    fn every_spelling_gets_the_verdict_of_its_normal_form(
        body in rules_body(), t in target(), seed in 1u64.., merged in prop::bool::ANY
    ) {
        let slashes = if merged { Slashes::Merged } else { Slashes::Strict };
        let robots = Robots::parse(body.as_bytes());
        let bot = robots.agent("Googlebot");
        let normal = normalize(&t, slashes).into_owned();
        let google_on_normal = bot.check_path(&normal).allowed;
        let mut rng = Choices(seed);
        for _ in 0..4 {
            let spelling = respell(&normal, slashes, &mut rng);
            let enforced = bot.check_request(&spelling, slashes).allowed;
            if !google_on_normal {
                prop_assert!(!enforced, "{} passed as {} under\n{}", show(&normal), show(&spelling), body);
            }
            let raw = &spelling[..spelling.iter().position(|&b| b == b'#').unwrap_or(spelling.len())];
            let google_on_raw = bot.check_path(raw).allowed;
            prop_assert_eq!(enforced, google_on_raw && google_on_normal, "{} under\n{}", show(&spelling), body);
        }
    }
}

/// The walk-arounds an attacker tries, against the file the report used.
#[test]
fn attack_spellings_are_refused_and_neighbours_pass() {
    let robots = Robots::parse(b"User-agent: *\nDisallow: /private/\nDisallow: /search?q=\nDisallow: /*.pdf$\n");
    let bot = robots.agent("Googlebot");
    let refused = [
        "/private/secret",
        "/%70rivate/secret",
        "/%70%72%69%76%61%74%65/secret",
        "/./private/secret",
        "/a/../private/secret",
        "/a/%2E%2E/private/secret",
        "/a/%2e%2e/private/secret",
        "/a/.%2e/private/secret",
        "/%2e/private/secret",
        "/private/./secret",
        "/search?%71=shoes",
        "/search?q=shoes",
        "/%73earch?q=x",
        "/files/a.pd%66",
        "/files/a.%70df",
        "/files/x/../a.pdf",
        "/private%2Fsecret",
        "/private%2fsecret",
        "//private/secret",
        "///private//secret",
        "/private\\secret",
        "/private%5Csecret",
        "\\private\\secret",
        "/x#/../private/secret",
        "/pub/..%2fprivate/secret",
        "/pub/%2e%2e%2fprivate/secret",
        "/private",
    ];
    for t in refused {
        // `/private` (no slash) is not under `/private/`, so it passes.
        let want_allowed = t == "/private";
        assert_eq!(bot.check_request(t.as_bytes(), Slashes::Merged).allowed, want_allowed, "{t}");
    }
    for t in [
        "/Private/secret",
        "/PRIVATE/secret",
        "/%2570rivate/secret",
        "/private%252Fsecret",
        "/search?Q=shoes",
        "/search?%2571=shoes",
        "/files/a.pdf?x=1",
        "/files/a.PDF",
        "/files/a.pd%2566",
        "/public/secret",
        "/privates/x",
    ] {
        assert!(bot.check_request(t.as_bytes(), Slashes::Merged).allowed, "over-blocked {t}");
    }
    // With strict slashes, `%2F` and `//` are other paths, and pass.
    for t in ["/private%2Fsecret", "//private/secret"] {
        assert!(bot.check_request(t.as_bytes(), Slashes::Strict).allowed, "strict {t}");
    }
    // Dot segments and unreserved escapes are equivalent under RFC 3986 itself.
    for t in ["/%70rivate/secret", "/a/../private/secret", "/a/%2E%2E/private/secret"] {
        assert!(!bot.check_request(t.as_bytes(), Slashes::Strict).allowed, "strict {t}");
    }
}
