//! A site's AI policy at the gateway: the config's settings as the engine's
//! [`AiPolicy`], the catalogue's tokens for each denied purpose (usage
//! tokens such as `Google-Extended` included: they are how Google and
//! Apple read a training preference), and what enforcement answers.

use robotsgate_config::{AiEnforce, AiPolicySettings};
use robotsgate_crawlers::{Catalogue, Crawler};
use rules::ai_policy::AiPolicy;

/// The engine's policy for the config's settings.
pub fn policy(s: &AiPolicySettings) -> AiPolicy {
    s.policy()
}

/// The product tokens of every catalogued crawler whose purpose `policy` denies.
pub fn denied_tokens<'c>(policy: &AiPolicy, catalogue: &'c Catalogue) -> Vec<&'c str> {
    catalogue.denied_by(policy)
}

/// A refusal enforcement sends: status, extra header fields, body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 403, 402 or 429.
    pub status: u16,
    /// Header fields besides the content type and length.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

/// What enforcement answers `crawler` under the site's settings, if its
/// purpose is denied and enforcement is on.
pub fn refusal(settings: &AiPolicySettings, crawler: &Crawler) -> Option<Refusal> {
    if policy(settings).allows(crawler.purpose.as_str()) != Some(false) {
        return None;
    }
    let why = format!("this site's AI policy does not welcome {} ({})\n", crawler.token, crawler.purpose.as_str());
    Some(match settings.enforce {
        AiEnforce::Off => return None,
        AiEnforce::Refuse => Refusal { status: 403, headers: Vec::new(), body: why },
        AiEnforce::Pay => Refusal {
            status: 402,
            headers: settings.payment_headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            body: settings.payment_body.clone().unwrap_or(why),
        },
        AiEnforce::Slow => Refusal {
            status: 429,
            headers: vec![("Retry-After".into(), settings.retry_after.as_secs().to_string())],
            body: why,
        },
    })
}
