//! Who may read the console. Its pages and `/api/` show client addresses,
//! sample URLs and every site. On a loopback address only people on the
//! machine reach it, and it is open to them. Anywhere else a reader shows
//! the console token (`ROBOTSGATE_CONSOLE_TOKEN`, or the admin token):
//! scripts as `Authorization: Bearer TOKEN`, browsers through the `/login`
//! form, which sets a cookie holding a digest of the token, never the token.
//! With `console.htpasswd`, readers may instead sign in with a name and a
//! password (HTTP basic auth, [`super::readers`]), on every address. A
//! console on a public address with neither refuses to start, unless the
//! config says `console.public: true`.
//!
//! `/metrics` (counters, for Prometheus), `/login` and the stylesheet stay
//! open; writing (retry, release) still needs the admin token on top.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The environment variable holding the token readers show.
pub const TOKEN_ENV: &str = "ROBOTSGATE_CONSOLE_TOKEN";
/// The admin token, which reads too (one of its sources; see
/// [`robotsgate_config::Config::admin_token`]).
const ADMIN_ENV: &str = robotsgate_config::ADMIN_TOKEN_ENV;
/// The cookie the login form sets.
const COOKIE: &str = "robotsgate_console";

/// How the console admits readers, decided once when it starts.
#[derive(Debug)]
pub struct Access {
    /// Everyone who reaches it reads (a loopback address, or `public: true`,
    /// with no htpasswd file).
    open: bool,
    /// The tokens readers may show, by their digests.
    tokens: Vec<[u8; 32]>,
    /// Readers who sign in with a name and a password (`console.htpasswd`).
    readers: Option<super::readers::Readers>,
}

impl Access {
    /// The access for a console on `listen`: open on a loopback address or
    /// when `public`, else by token; with `readers` (an htpasswd file), by
    /// name and password (or token) everywhere. An error names the key and
    /// the variable when a public address has nothing to ask for.
    pub fn decide(
        listen: &str,
        public: bool,
        readers: Option<super::readers::Readers>,
        admin: Option<&str>,
    ) -> Result<Access, String> {
        let tokens: Vec<[u8; 32]> = std::env::var(TOKEN_ENV)
            .ok()
            .into_iter()
            .chain(admin.map(str::to_string))
            .filter(|t| !t.is_empty())
            .map(|t| digest(&t))
            .collect();
        let local = listen
            .parse::<std::net::SocketAddr>()
            .map(|a| a.ip().is_loopback())
            .unwrap_or_else(|_| listen.starts_with("localhost:"));
        if readers.is_some() {
            return Ok(Access { open: false, tokens, readers });
        }
        if local || public {
            return Ok(Access { open: true, tokens: Vec::new(), readers: None });
        }
        if tokens.is_empty() {
            return Err(format!(
                "console.listen is `{listen}`, which others can reach, and the console shows client addresses and \
                 sample URLs: set {TOKEN_ENV} (or {ADMIN_ENV}) or `console.htpasswd` so that readers sign in, listen \
                 on 127.0.0.1, or set `console.public: true` to show it to anyone"
            ));
        }
        Ok(Access { open: false, tokens, readers: None })
    }

    /// Whether readers must show who they are.
    pub fn asks(&self) -> bool {
        !self.open
    }

    /// Whether `token` is one readers may show.
    pub fn accepts(&self, token: &str) -> bool {
        self.accepts_digest(&digest(token))
    }

    fn accepts_digest(&self, given: &[u8; 32]) -> bool {
        // Digests compared in constant time, so timing says nothing of how
        // much of a guess was right.
        self.open || self.tokens.iter().any(|t| t.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0)
    }

    /// Whether `request` comes from a reader: a bearer token, the cookie,
    /// or a name and password of the htpasswd file.
    async fn admits(&self, headers: &axum::http::HeaderMap) -> bool {
        if self.open {
            return true;
        }
        if credentials(headers, "Bearer").is_some_and(|t| self.accepts(t))
            || cookie(headers).is_some_and(|c| self.accepts_digest(&c))
        {
            return true;
        }
        match (&self.readers, credentials(headers, "Basic")) {
            (Some(readers), Some(basic)) => readers.admit(basic).await,
            _ => false,
        }
    }
}

/// The credentials of an `Authorization` field in `scheme` (`Bearer`,
/// `Basic`): the scheme is read in any case, as RFC 9110 section 11.1 has
/// it, and spaces around the credentials are dropped.
pub fn credentials<'a>(headers: &'a axum::http::HeaderMap, scheme: &str) -> Option<&'a str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (given, rest) = value.split_once([' ', '\t'])?;
    given.eq_ignore_ascii_case(scheme).then(|| rest.trim()).filter(|c| !c.is_empty())
}

/// The digest a cookie carries for `token`.
fn digest(token: &str) -> [u8; 32] {
    Sha256::new().chain_update(b"robotsgate-console\0").chain_update(token.as_bytes()).finalize().into()
}

/// The login cookie's digest, if the request carries a well-formed one.
fn cookie(headers: &axum::http::HeaderMap) -> Option<[u8; 32]> {
    for value in headers.get_all(header::COOKIE) {
        for pair in value.to_str().ok()?.split(';') {
            if let Some(hex) = pair.trim().strip_prefix(COOKIE).and_then(|r| r.strip_prefix('=')) {
                let mut out = [0u8; 32];
                if hex.len() != 64 {
                    return None;
                }
                for (i, byte) in out.iter_mut().enumerate() {
                    *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
                }
                return Some(out);
            }
        }
    }
    None
}

/// The `Set-Cookie` value that signs a browser in with `token`.
pub fn sign_in(token: &str, secure: bool) -> HeaderValue {
    let hex: String = digest(token).iter().map(|b| format!("{b:02x}")).collect();
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{COOKIE}={hex}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000{secure}"))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Paths anyone may fetch: the sign-in form, the stylesheet it uses, and
/// the metrics Prometheus scrapes.
fn open_path(path: &str) -> bool {
    matches!(path, "/login" | "/static/console.css" | "/metrics")
}

/// The layer in front of every route: readers pass; others get a 401
/// (the API) or the sign-in form (pages).
pub async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if open_path(request.uri().path()) || access.admits(request.headers()).await {
        return next.run(request).await;
    }
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    // With an htpasswd file, pages and the API alike ask for a name and a
    // password (a browser shows its own sign-in box); the token's form
    // stays at /login.
    if access.readers.is_some() {
        let mut response = (
            StatusCode::UNAUTHORIZED,
            format!("the console asks for a name and password (console.htpasswd), or its token: Authorization: Bearer ${TOKEN_ENV}"),
        )
            .into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"robotsgate console\", charset=\"UTF-8\""),
        );
        return response;
    }
    if path.starts_with("/api/") {
        let mut response =
            (StatusCode::UNAUTHORIZED, format!("the console needs its token: Authorization: Bearer ${TOKEN_ENV}"))
                .into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let to = format!("/login?next={}", monitor::links::encode(&path));
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

/// Where a sign-in may send the browser next: a path on this console,
/// never another site (`//evil.example`) or a scheme.
pub fn next_path(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.contains('\\') { next } else { "/" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_open_and_a_public_address_needs_a_token() {
        assert!(Access::decide("127.0.0.1:8484", false, None, None).is_ok_and(|a| !a.asks()));
        assert!(Access::decide("[::1]:8484", false, None, None).is_ok_and(|a| !a.asks()));
        assert!(Access::decide("0.0.0.0:8484", true, None, None).is_ok_and(|a| !a.asks()));
        let token = Access { open: false, tokens: vec![digest("s3cret")], readers: None };
        assert!(token.accepts("s3cret") && !token.accepts("s3cre") && !token.accepts(""));
    }

    #[test]
    fn the_scheme_reads_in_any_case() {
        let mut headers = axum::http::HeaderMap::new();
        for (value, scheme, want) in [
            ("Bearer abc", "Bearer", Some("abc")),
            ("bearer  abc ", "Bearer", Some("abc")),
            ("BASIC YWxpY2U6cHc=", "Basic", Some("YWxpY2U6cHc=")),
            ("Basic YWxpY2U6cHc=", "Bearer", None),
            ("Bearer", "Bearer", None),
            ("Bearer ", "Bearer", None),
            ("Bearerabc", "Bearer", None),
        ] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            assert_eq!(credentials(&headers, scheme), want, "{value:?}");
        }
    }

    #[test]
    fn only_local_paths_are_followed_after_signing_in() {
        assert_eq!(next_path("/sites/shop?x=1"), "/sites/shop?x=1");
        for bad in ["//evil.example/", "https://evil.example/", "/\\evil.example", ""] {
            assert_eq!(next_path(bad), "/", "{bad}");
        }
    }

    #[test]
    fn the_cookie_holds_a_digest_that_reads_back() {
        let set = sign_in("s3cret", true);
        let text = set.to_str().unwrap();
        assert!(!text.contains("s3cret") && text.contains("HttpOnly") && text.contains("Secure"), "{text}");
        let pair = text.split(';').next().unwrap();
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(&format!("other=1; {pair}")).unwrap());
        assert_eq!(cookie(&headers), Some(digest("s3cret")));
    }
}

/// The sign-in page.
#[derive(Debug, askama::Template)]
#[template(path = "login.html")]
pub struct LoginPage {
    next: String,
    error: Option<String>,
}

/// `?next=` on the sign-in page.
#[derive(Debug, serde::Deserialize)]
pub struct LoginQuery {
    #[serde(default)]
    next: String,
}

/// The sign-in form's fields.
#[derive(serde::Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

impl std::fmt::Debug for LoginForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token never goes to a log.
        f.debug_struct("LoginForm").field("next", &self.next).finish_non_exhaustive()
    }
}

fn page(status: StatusCode, next: &str, error: Option<String>) -> Response {
    use askama::Template as _;
    match (LoginPage { next: next_path(next).to_string(), error }).render() {
        Ok(html) => (status, axum::response::Html(html)).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// `GET /login`.
pub async fn login_form(axum::extract::Query(q): axum::extract::Query<LoginQuery>) -> Response {
    page(StatusCode::OK, &q.next, None)
}

/// `POST /login`: the right token sets the cookie and goes on to `next`.
pub async fn login(
    State(m): State<Arc<monitor::Monitor>>,
    axum::Extension(access): axum::Extension<Arc<Access>>,
    axum::Form(form): axum::Form<LoginForm>,
) -> Response {
    let next = next_path(&form.next).to_string();
    if !access.accepts(&form.token) {
        return page(StatusCode::FORBIDDEN, &next, Some("That is not the console token.".into()));
    }
    let secure = m.config().console.as_ref().and_then(|c| c.url.as_deref()).is_some_and(|u| u.starts_with("https://"));
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, next)]).into_response();
    if access.asks() {
        response.headers_mut().insert(header::SET_COOKIE, sign_in(&form.token, secure));
    }
    response
}
