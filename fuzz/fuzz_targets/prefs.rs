//! AI preference lines and the AI policy compiler on arbitrary bytes: no
//! panic, and compiling a policy onto any file leaves every non-denied
//! crawler's verdict as it was.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rules::ai_policy::{AiPolicy, Stance};

fuzz_target!(|data: &[u8]| {
    let prefs = rules::prefs::Preferences::read(data);
    let _ = prefs.applied(&[1, 2, 3], b"/a/b", true);
    let policy = AiPolicy { ai_training: Stance::Deny, ..AiPolicy::default() };
    let compiled = policy.compile(&["GPTBot", "CCBot"], data);
    let _ = policy.contradictions(&["GPTBot"], data);
    if let Some(merged) = rules::merge::append(data, &compiled.groups) {
        let (before, after) = (rules::Robots::parse(data), rules::Robots::parse(&merged));
        for agent in ["Googlebot", "bingbot", "someotherbot"] {
            for path in ["/", "/a", "/a/b?c"] {
                assert_eq!(before.crawler(agent).is_allowed(path), after.crawler(agent).is_allowed(path));
            }
        }
    }
});
