//! The `Signature-Agent` header of Web Bot Auth, as the webbotauth drafts
//! write it now (draft-meunier-webbotauth-httpsig-protocol, June 2026): an
//! RFC 9651 dictionary whose member, keyed by the signature's label, is an
//! `https` URL with an optional `type` (`directory`, the default: an origin
//! whose well-known key directory holds the keys; `jwks_uri`: a key set's
//! own URL; `cimd`). The earlier form, one quoted URL, is still sent by
//! deployments and still accepted; the two are told apart by the first
//! byte, and counted apart.

/// The well-known path of an HTTP message signatures directory.
pub const WELL_KNOWN: &str = "/.well-known/http-message-signatures-directory";

/// How a request wrote its `Signature-Agent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// The dictionary form: each member's label and URL, and its `type`.
    Dictionary(Vec<Member>),
    /// The legacy form: one quoted URL.
    Legacy(String),
    /// Present but neither form.
    Malformed,
}

/// One member of the dictionary form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The signature label it belongs to.
    pub label: String,
    /// The URL.
    pub url: String,
    /// `directory` (the default), `jwks_uri`, `cimd`, or another.
    pub kind: String,
}

impl Form {
    /// Reads the header's field lines (joined with `, ` as RFC 9110 joins
    /// repeated fields); `None` when there are none.
    pub fn read(lines: &[&str]) -> Option<Form> {
        if lines.is_empty() {
            return None;
        }
        let joined = lines.join(", ");
        let text = joined.trim();
        if text.starts_with('"') {
            return Some(match sfv::Parser::new(text).parse_item() {
                Ok(item) => match item.bare_item.as_string() {
                    Some(s) => Form::Legacy(s.as_str().to_string()),
                    None => Form::Malformed,
                },
                Err(_) => Form::Malformed,
            });
        }
        let Ok(dict) = sfv::Parser::new(text).parse_dictionary() else { return Some(Form::Malformed) };
        let mut members = Vec::new();
        for (label, entry) in &dict {
            let sfv::ListEntry::Item(item) = entry else { return Some(Form::Malformed) };
            let Some(url) = item.bare_item.as_string() else { return Some(Form::Malformed) };
            let kind = match item.params.get("type") {
                None => "directory".to_string(),
                Some(t) => match t.as_token() {
                    Some(t) => t.as_str().to_string(),
                    None => return Some(Form::Malformed),
                },
            };
            members.push(Member { label: label.as_str().to_string(), url: url.as_str().to_string(), kind });
        }
        Some(Form::Dictionary(members))
    }

    /// `dictionary`, `legacy` or `malformed`, for the metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Form::Dictionary(_) => "dictionary",
            Form::Legacy(_) => "legacy",
            Form::Malformed => "malformed",
        }
    }

    /// The key directory the signature labelled `label` names: for the
    /// dictionary form its own member (a signature is never attributed to
    /// a member it does not cover), resolved by its type; for the legacy
    /// form the URL, as a `directory`. `Err` says why there is none.
    pub fn directory_for(&self, label: &str) -> Result<String, String> {
        match self {
            Form::Malformed => Err("the Signature-Agent header is neither a dictionary nor a quoted URL".into()),
            Form::Legacy(url) => resolve(url, "directory"),
            Form::Dictionary(members) => {
                let m = members.iter().find(|m| m.label == label).ok_or_else(|| {
                    format!("the Signature-Agent header has no member for the signature's label `{label}`")
                })?;
                resolve(&m.url, &m.kind)
            }
        }
    }
}

/// The URL a member resolves to, which identifies the agent: for
/// `directory`, the origin's well-known directory (the value must be an
/// origin); for `jwks_uri`, the URL without query or fragment.
fn resolve(url: &str, kind: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("the Signature-Agent URL `{url}` does not parse: {e}"))?;
    if parsed.scheme() != "https" && parsed.scheme() != "http" {
        return Err(format!("the Signature-Agent URL `{url}` is not https"));
    }
    match kind {
        "directory" => {
            if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() || parsed.fragment().is_some() {
                return Err(format!("a `directory` Signature-Agent names an origin, and `{url}` is not one"));
            }
            Ok(format!("{}{WELL_KNOWN}", parsed.origin().ascii_serialization()))
        }
        "jwks_uri" => Ok(normal(url).unwrap_or_else(|| url.to_string())),
        other => Err(format!("Signature-Agent type `{other}` is not one robotsgate resolves")),
    }
}

/// A URL compared as the draft compares identifiers: scheme and host in
/// lower case, the default port dropped, no query or fragment.
pub fn normal(url: &str) -> Option<String> {
    let mut u = url::Url::parse(url).ok()?;
    u.set_query(None);
    u.set_fragment(None);
    Some(u.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_and_their_directories() {
        let d = Form::read(&[r#"sig1="https://Signer.Example""#]).unwrap();
        assert_eq!(d.name(), "dictionary");
        assert_eq!(
            d.directory_for("sig1").unwrap(),
            "https://signer.example/.well-known/http-message-signatures-directory"
        );
        assert!(d.directory_for("sig2").unwrap_err().contains("no member for the signature's label `sig2`"));
        let j = Form::read(&[r#"sig1="https://s.example/keys.json?v=2";type=jwks_uri"#]).unwrap();
        assert_eq!(j.directory_for("sig1").unwrap(), "https://s.example/keys.json");
        let legacy = Form::read(&[r#""https://signer.example""#]).unwrap();
        assert_eq!(legacy.name(), "legacy");
        assert!(legacy.directory_for("anything").unwrap().ends_with(WELL_KNOWN));
        assert_eq!(Form::read(&["sig1=42"]).unwrap(), Form::Malformed);
        assert_eq!(Form::read(&["not a header,"]).unwrap(), Form::Malformed);
        assert!(Form::read(&[]).is_none());
        // A `directory` names an origin, nothing more.
        let path = Form::read(&[r#"sig1="https://signer.example/keys""#]).unwrap();
        assert!(path.directory_for("sig1").is_err());
        let cimd = Form::read(&[r#"sig1="https://signer.example/card";type=cimd"#]).unwrap();
        assert!(cimd.directory_for("sig1").unwrap_err().contains("`cimd`"));
    }
}
