//! The console's errors: every error under `/api/` is an RFC 9457 problem
//! document (`application/problem+json`), axum's own rejections included,
//! through one middleware; the same layer gives the HTML pages' errors a
//! page with a way back, instead of bare text.

use askama::Template;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The media type of a problem document.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `about:blank`: the status says what kind of problem it is.
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
}

/// The answer every `/api/` operation that reads the history can give:
/// 503, as a problem, when the database does not answer. One definition
/// for the OpenAPI document, listed in each operation's `responses`.
#[derive(Debug, utoipa::IntoResponses)]
#[response(
    status = 503,
    description = "The history database did not answer",
    content_type = "application/problem+json"
)]
pub struct Unavailable(pub Problem);

/// The answer of every `/api/` operation that needs the admin token: 403,
/// as a problem, without it or with a wrong one.
#[derive(Debug, utoipa::IntoResponses)]
#[response(status = 403, description = "No or a wrong admin token", content_type = "application/problem+json")]
pub struct Forbidden(pub Problem);

/// A problem response for `status` with `detail`.
pub fn problem(status: StatusCode, detail: impl Into<String>) -> Response {
    let body = Problem {
        kind: "about:blank".into(),
        title: status.canonical_reason().unwrap_or("Error").into(),
        status: status.as_u16(),
        detail: detail.into(),
    };
    let json = serde_json::to_vec(&body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))], json).into_response()
}

/// `/api/` paths no route serves.
pub async fn not_found(request: Request) -> Response {
    let path = request.uri().path().to_string();
    let detail = format!("no page or API endpoint at `{path}`");
    if path.starts_with("/api/") {
        problem(StatusCode::NOT_FOUND, detail)
    } else {
        (StatusCode::NOT_FOUND, detail).into_response()
    }
}

/// An error page with a way back.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    status: u16,
    title: String,
    detail: String,
    back: String,
    back_label: String,
}

/// The largest error body read to rewrite it.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Rewrites every error that is not already in its final form: under
/// `/api/` as a problem document (axum's own rejections included: a bad
/// JSON body, a path segment that is not a number, a wrong method), and
/// elsewhere as an HTML page that says what happened and links back.
pub async fn errors(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let content_type =
        response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let api = path.starts_with("/api/") || path == "/api";
    if (api && content_type.starts_with(PROBLEM_JSON)) || (!api && content_type.starts_with("text/html")) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let detail = match axum::body::to_bytes(body, MAX_ERROR_BODY).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).trim().to_string(),
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    // Keep what the status needs (`Allow` on a 405, the scheme on a 401,
    // without which a browser shows no sign-in box).
    let keep = |out: &mut Response| {
        for name in [header::ALLOW, header::WWW_AUTHENTICATE] {
            if let Some(value) = parts.headers.get(&name) {
                out.headers_mut().insert(name, value.clone());
            }
        }
    };
    if api {
        let mut out = problem(status, detail);
        keep(&mut out);
        return out;
    }
    let (back, back_label) = back_of(&path);
    let page = ErrorPage {
        status: status.as_u16(),
        title: status.canonical_reason().unwrap_or("Error").to_string(),
        detail: detail.clone(),
        back,
        back_label,
    };
    match page.render() {
        Ok(html) => {
            let mut out =
                (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], Body::from(html)).into_response();
            keep(&mut out);
            out
        }
        Err(_) => Response::from_parts(parts, Body::from(detail)),
    }
}

/// Where an error page links back to: the page above the one that failed.
fn back_of(path: &str) -> (String, String) {
    if path.starts_with("/alerts") {
        ("/alerts".into(), "Back to the alerts".into())
    } else if path.starts_with("/tester") {
        ("/tester".into(), "Back to the tester".into())
    } else if let Some(rest) = path.strip_prefix("/sites/")
        && let Some((site, _)) = rest.split_once("/revisions")
    {
        (format!("/sites/{site}"), "Back to the site".into())
    } else {
        ("/".into(), "Back to the sites".into())
    }
}
