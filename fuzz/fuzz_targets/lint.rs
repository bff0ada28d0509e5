//! Lint and fetch-policy handling of arbitrary bytes: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for d in rules::lint(data) {
        assert!(d.line >= 1 && d.column >= 1);
    }
    let outcome = rules::FetchOutcome::status(200).with_body(data.to_vec());
    let policy = rules::Policy::from_fetch(&outcome);
    let _ = rules::flips(&policy, &rules::Policy::from_fetch(&rules::FetchOutcome::status(503)), &["/", "/a"], &["bot"]);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = rules::scope::robots_url(text);
    }
});
