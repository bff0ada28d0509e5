//! Web Bot Auth: a crawler signs each request with HTTP message signatures
//! (RFC 9421, tag `web-bot-auth`, covering at least `@authority`) made with
//! a key its operator publishes in a key directory, a JSON Web Key Set at
//! a well-known URL. The directory is a feed like the IP ranges (fetched,
//! checked, its last good copy kept on disk); the signature is checked
//! with the `web-bot-auth` crate against the request as the gateway
//! received it, so a signature made for another host, or expired, fails.
//!
//! As the webbotauth drafts of 2026 have it: the request's `Signature-Agent`
//! (either form, [`crate::agent`]) must name the crawler's own key
//! directory for the signature's label, the member keyed by that label is
//! what the signature covers (`"signature-agent";key="sig1"`), and a
//! directory's keys are checked as the directory draft says (a `kid` is the
//! key's JWK thumbprint; keys outside `nbf`..`exp` are not used).

use std::time::{SystemTime, UNIX_EPOCH};

use web_bot_auth::WebBotAuthVerifier;
use web_bot_auth::components::{CoveredComponent, DerivedComponent};
use web_bot_auth::keyring::{JSONWebKeySet, KeyRing};
use web_bot_auth::message_signatures::SignedMessage;

use super::agent::Form;
use super::feeds::{FeedError, Table};

/// The media type of a key directory at the well-known URI.
pub const DIRECTORY_TYPE: &str = "application/http-message-signatures-directory+json";

/// How far in the future a signature's `created` may be: clocks differ.
const SKEW_SECS: i64 = 60;

/// A key directory's keys.
#[derive(Default)]
pub struct Keys {
    ring: KeyRing,
    count: usize,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys({})", self.count)
    }
}

impl Keys {
    /// No key loaded yet.
    pub fn ring_is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Whether a directory's key is one to use: a `kid`, when given, is the
/// key's JWK SHA-256 thumbprint (what the keyring names it by), and the
/// key is inside its `nbf`..`exp`, when given.
fn usable(key: &serde_json::Value, now: i64) -> bool {
    let at = |name: &str| key.get(name).and_then(serde_json::Value::as_i64);
    if at("nbf").is_some_and(|nbf| nbf > now) || at("exp").is_some_and(|exp| exp <= now) {
        return false;
    }
    match key.get("kid").and_then(serde_json::Value::as_str) {
        None => true,
        Some(kid) => {
            let Ok(one) = serde_json::from_value::<JSONWebKeySet>(serde_json::json!({ "keys": [key] })) else {
                return false;
            };
            let mut ring = KeyRing::default();
            ring.import_jwks(one);
            ring.get(&kid.to_string()).is_some()
        }
    }
}

impl Table for Keys {
    fn read(body: &[u8]) -> Result<Keys, FeedError> {
        let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| FeedError::Json(e.to_string()))?;
        let Some(listed) = value.get("keys").and_then(serde_json::Value::as_array) else {
            return Err(FeedError::Shape("not a key directory: no `keys` list".into()));
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let kept: Vec<&serde_json::Value> = listed.iter().filter(|k| usable(k, now)).collect();
        let set: JSONWebKeySet =
            serde_json::from_value(serde_json::json!({ "keys": kept })).map_err(|e| FeedError::Shape(e.to_string()))?;
        let mut ring = KeyRing::default();
        let count = ring.import_jwks(set).iter().filter(|e| e.is_none()).count();
        if count == 0 {
            return Err(FeedError::Empty);
        }
        Ok(Keys { ring, count })
    }

    fn accept_header() -> Option<&'static str> {
        Some(DIRECTORY_TYPE)
    }

    fn entries(&self) -> usize {
        self.count
    }
}

/// What a signature may cover of a request, as the gateway received it.
#[derive(Clone, Debug, Default)]
pub struct Signed {
    /// `https` or `http`.
    pub scheme: &'static str,
    /// The `Host` (or `:authority`), lower case.
    pub authority: String,
    /// The method.
    pub method: String,
    /// The path, as sent.
    pub path: String,
    /// The query without its `?`, if there is one.
    pub query: Option<String>,
    /// Every header field: lower-case name and value.
    pub fields: Vec<(String, String)>,
    /// The `Signature-Agent` header, read; `None` without one.
    pub agent: Option<Form>,
}

impl Signed {
    /// The parts of a request with `target` (origin form) and `fields`;
    /// `None` when it carries no `Signature` field.
    pub fn from_request<'a>(
        tls: bool,
        method: &str,
        target: &str,
        fields: impl Iterator<Item = (&'a str, &'a [u8])>,
    ) -> Option<Signed> {
        let fields: Vec<(String, String)> =
            fields.map(|(n, v)| (n.to_ascii_lowercase(), String::from_utf8_lossy(v).into_owned())).collect();
        if !fields.iter().any(|(n, _)| n == "signature") {
            return None;
        }
        let authority = fields.iter().find(|(n, _)| n == "host").map(|(_, v)| v.to_ascii_lowercase())?;
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.to_string(), None),
        };
        let lines: Vec<&str> = fields.iter().filter(|(n, _)| n == "signature-agent").map(|(_, v)| v.as_str()).collect();
        let agent = Form::read(&lines);
        Some(Signed {
            scheme: if tls { "https" } else { "http" },
            authority,
            method: method.to_string(),
            path,
            query,
            agent,
            fields,
        })
    }

    /// How the request wrote `Signature-Agent`: `dictionary`, `legacy`,
    /// `malformed` or `none`, for the identity metrics.
    pub fn agent_form(&self) -> &'static str {
        self.agent.as_ref().map_or("none", Form::name)
    }

    /// Checks the request's `web-bot-auth` signature against `keys`, the
    /// key directory at `directory`: a `Signature-Agent` that names another
    /// directory for the signature's label does not verify, since a key is
    /// known by its (URL, key) pair. A request without the header is
    /// checked by its key alone, as the draft allows when no URL is known.
    pub fn verify(&self, keys: &Keys, directory: &str) -> Result<(), String> {
        let verifier =
            WebBotAuthVerifier::parse(self).map_err(|e| format!("no usable web-bot-auth signature: {e:?}"))?;
        if let Some(agent) = &self.agent {
            let label = verifier.get_parsed_label().label.as_str().to_string();
            let named = agent.directory_for(&label)?;
            let ours = super::agent::normal(directory).unwrap_or_else(|| directory.to_string());
            if super::agent::normal(&named).unwrap_or(named.clone()) != ours {
                return Err(format!("the Signature-Agent names {named}, not this crawler's key directory {directory}"));
            }
        }
        let details = &verifier.get_parsed_label().base.parameters.details;
        if details.possibly_insecure(|_| false).is_expired.unwrap_or(true) {
            return Err("the signature has expired".into());
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if details.created.is_some_and(|c| c > now + SKEW_SECS) {
            return Err("the signature was created in the future".into());
        }
        verifier.verify(&keys.ring, None).map(|_| ()).map_err(|e| format!("the signature does not verify: {e:?}"))
    }
}

impl SignedMessage for Signed {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        let query = || format!("?{}", self.query.as_deref().unwrap_or(""));
        match name {
            CoveredComponent::HTTP(field) => {
                let values: Vec<&str> =
                    self.fields.iter().filter(|(n, _)| *n == field.name).map(|(_, v)| v.trim()).collect();
                // `;key="sig1"`: the dictionary member's value, serialized
                // (RFC 9421 section 2.1.2); `;sf`: the field re-serialized.
                let key = field.parameters.0.iter().find_map(|p| match p {
                    web_bot_auth::components::HTTPFieldParameters::Key(k) => Some(k.as_str()),
                    _ => None,
                });
                let sf =
                    field.parameters.0.iter().any(|p| matches!(p, web_bot_auth::components::HTTPFieldParameters::Sf));
                if key.is_none() && !sf {
                    return values.into_iter().map(str::to_string).collect();
                }
                use sfv::SerializeValue;
                let joined = values.join(", ");
                let Ok(dict) = sfv::Parser::new(joined.as_str()).parse_dictionary() else { return Vec::new() };
                match key {
                    Some(k) => match dict.iter().find(|(name, _)| name.as_str() == k).map(|(_, v)| v) {
                        Some(sfv::ListEntry::Item(item)) => vec![item.serialize_value()],
                        Some(sfv::ListEntry::InnerList(list)) => {
                            let one: sfv::List = vec![sfv::ListEntry::InnerList(list.clone())];
                            one.serialize_value().into_iter().collect()
                        }
                        None => Vec::new(),
                    },
                    None => dict.serialize_value().into_iter().collect(),
                }
            }
            CoveredComponent::Derived(d) => vec![match d {
                DerivedComponent::Authority { .. } => self.authority.clone(),
                DerivedComponent::Method { .. } => self.method.clone(),
                DerivedComponent::Path { .. } => self.path.clone(),
                DerivedComponent::Query { .. } => query(),
                DerivedComponent::Scheme { .. } => self.scheme.to_string(),
                DerivedComponent::RequestTarget { .. } => match &self.query {
                    Some(q) => format!("{}?{q}", self.path),
                    None => self.path.clone(),
                },
                DerivedComponent::TargetUri { .. } => {
                    format!(
                        "{}://{}{}{}",
                        self.scheme,
                        self.authority,
                        self.path,
                        self.query.as_ref().map_or(String::new(), |_| query())
                    )
                }
                // Not a request's: a signature covering them is not one a crawler makes.
                DerivedComponent::Status { .. } | DerivedComponent::QueryParams { .. } => return Vec::new(),
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directory draft's checks: a `kid` is the key's thumbprint, and
    /// a key outside `nbf`..`exp` is not used.
    #[test]
    fn a_directory_key_is_checked_as_the_draft_says() {
        let x = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
        let thumb = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";
        let dir = |extra: &str| format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"{extra}}}]}}"#);
        assert_eq!(Keys::read(dir(&format!(r#","kid":"{thumb}""#)).as_bytes()).unwrap().entries(), 1);
        assert_eq!(Keys::read(dir(r#","kid":"my-key""#).as_bytes()).unwrap_err(), FeedError::Empty);
        assert_eq!(Keys::read(dir(r#","exp":1000"#).as_bytes()).unwrap_err(), FeedError::Empty);
        assert_eq!(Keys::read(dir(r#","nbf":99999999999"#).as_bytes()).unwrap_err(), FeedError::Empty);
        assert_eq!(Keys::read(dir(r#","nbf":1000,"exp":99999999999"#).as_bytes()).unwrap().entries(), 1);
    }

    #[test]
    fn a_key_directory_needs_an_ed25519_key() {
        let one = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;
        assert_eq!(Keys::read(one).unwrap().entries(), 1);
        assert_eq!(Keys::read(br#"{"keys":[]}"#).unwrap_err(), FeedError::Empty);
        // A key of a kind it cannot use is not a key it has.
        let rsa = br#"{"keys":[{"kty":"RSA","e":"AQAB","n":"xyz"}]}"#;
        assert_eq!(Keys::read(rsa).unwrap_err(), FeedError::Empty);
        assert!(matches!(Keys::read(br#"{"prefixes":[]}"#), Err(FeedError::Shape(_))));
        assert!(matches!(Keys::read(b"<html>"), Err(FeedError::Json(_))));
    }

    #[test]
    fn only_a_request_with_a_signature_is_read() {
        let fields = [("Host", &b"Shop.Test"[..]), ("User-Agent", b"x")];
        assert!(Signed::from_request(false, "GET", "/a?b", fields.into_iter()).is_none());
        let fields = [("Host", &b"Shop.Test"[..]), ("Signature", b"sig1=:AA==:")];
        let s = Signed::from_request(true, "GET", "/a?b=1", fields.into_iter()).unwrap();
        assert_eq!(
            (s.scheme, s.authority.as_str(), s.path.as_str(), s.query.as_deref()),
            ("https", "shop.test", "/a", Some("b=1"))
        );
        let uri = s.lookup_component(&CoveredComponent::Derived(DerivedComponent::TargetUri { req: false }));
        assert_eq!(uri, ["https://shop.test/a?b=1"]);
        assert!(s.verify(&Keys::default(), "https://x/").is_err(), "no signature input");
        assert_eq!(s.agent_form(), "none");
    }
}
