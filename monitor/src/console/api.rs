//! The console's JSON API as a contract: every error under `/api/` is an
//! RFC 9457 problem document (`application/problem+json`), and the OpenAPI
//! 3.1 document at `/api/openapi.json` describes every endpoint. The same
//! layer gives the HTML pages' errors a page with a way back, instead of
//! bare text.

use askama::Template;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::OpenApi;

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

/// The sites page as JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SitesList {
    /// Sites matching the filter, on every page.
    pub total: i64,
    /// This page (1-based).
    pub page: i64,
    /// Sites per page.
    pub page_size: i64,
    /// This page's sites.
    pub sites: Vec<super::overview::SiteLine>,
}

/// What a retry did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Retried {
    /// The alert.
    pub retried: i64,
    /// In words.
    pub notice: String,
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "robotsgate console API", description = "The robots-monitor console's data as JSON: sites, revisions, alerts and the robots.txt tester. Errors are RFC 9457 problem documents."),
    paths(
        super::pages::api_sites,
        super::pages::api_site,
        super::pages::api_revision,
        super::pages::api_alerts,
        super::pages::api_retry_alert,
        super::pages::api_test_get,
        super::pages::api_test_post,
        super::compliance::api_overview,
        super::compliance::api_site,
        openapi_json,
    ),
    components(schemas(Problem, SitesList, Retried)),
    modifiers(&AdminToken)
)]
#[derive(Debug)]
pub struct Doc;

/// The admin token's security scheme: `Authorization: Bearer TOKEN`, the
/// token from `ROBOTSGATE_ADMIN_TOKEN`.
#[derive(Debug)]
struct AdminToken;

impl utoipa::Modify for AdminToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("admin_token", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

/// `GET /api/openapi.json`: this API's OpenAPI 3.1 document.
#[utoipa::path(get, path = "/api/openapi.json", responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
pub async fn openapi_json() -> Response {
    match Doc::openapi().to_pretty_json() {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
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
    if api {
        let mut out = problem(status, detail);
        // Keep what the status needs (`Allow` on a 405).
        if let Some(allow) = parts.headers.get(header::ALLOW) {
            out.headers_mut().insert(header::ALLOW, allow.clone());
        }
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
            if let Some(allow) = parts.headers.get(header::ALLOW) {
                out.headers_mut().insert(header::ALLOW, allow.clone());
            }
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_is_openapi_3_1_and_names_every_endpoint() {
        use utoipa::OpenApi;
        let doc: serde_json::Value = serde_json::from_str(&super::Doc::openapi().to_json().unwrap()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
        for path in [
            "/api/sites",
            "/api/sites/{name}",
            "/api/sites/{name}/revisions/{id}",
            "/api/alerts",
            "/api/alerts/{id}/retry",
            "/api/test",
            "/api/openapi.json",
        ] {
            assert!(doc["paths"][path].is_object(), "{path}");
        }
        assert!(doc["components"]["schemas"]["Problem"].is_object());
    }
}
