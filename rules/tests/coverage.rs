//! `rules::coverage::judge` on arbitrary answers: it never panics, what a
//! place serves is one of its kinds whatever the bytes, and a place that
//! serves exactly the canonical answer is never a finding unless it must
//! redirect or be absent.

use proptest::prelude::*;
use rules::FetchOutcome;
use rules::coverage::{Ask, Must, judge};

fn outcome() -> impl Strategy<Value = FetchOutcome> {
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        "(User-agent: [a-z*]{1,6}\n|Disallow: /[a-z]{0,4}\n|Allow: /[a-z]{0,3}\n|# c\n|Sitemap: x\n|<html>\n){0,12}"
            .prop_map(String::into_bytes),
    ];
    let redirects = proptest::collection::vec("https://[ab]\\.test/r[0-3]", 0..8);
    (prop_oneof![Just(200u16), Just(301), Just(404), Just(429), Just(503), 100u16..700], body, redirects)
        .prop_map(|(status, body, redirects)| FetchOutcome::status(status).with_body(body).with_redirects(redirects))
}

proptest! {
    #[test]
    fn never_panics_and_the_same_answer_is_the_same_file(canonical in outcome(), place in outcome(), edge: bool, landed: bool) {
        let urls = ["https://s/", "https://s/a", "https://s/b/c"];
        let agents = ["Googlebot", "GPTBot"];
        for must in [Must::Same, Must::Redirect, Must::Own, Must::Absent] {
            let ask = Ask { must, listed: true, edge, urls: &urls, agents: &agents };
            let j = judge(&canonical, &place, landed, &ask);
            prop_assert!(!j.serves.key().is_empty());
            let _ = (j.serves.to_string(), j.findings_key());
        }
        let same = Ask { must: Must::Same, listed: true, edge, urls: &urls, agents: &agents };
        let j = judge(&canonical, &canonical, false, &same);
        // A chain that visits a URL twice is a loop, whatever it ended in.
        let looped = (1..canonical.redirects.len()).any(|i| canonical.redirects[..i].contains(&canonical.redirects[i]));
        if !looped && canonical.redirects.len() <= 5 && matches!(canonical.status, Some(200..=299)) && !rules::coverage::looks_like_html(&canonical.body) {
            prop_assert!(j.findings.is_empty(), "{:?}", j);
            prop_assert!(j.flips.is_empty());
        }
    }
}
