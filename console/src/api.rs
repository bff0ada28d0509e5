//! The console's JSON API as a contract: the OpenAPI 3.1 document at
//! `/api/openapi.json` describes every endpoint, its bodies and its errors
//! (RFC 9457 problem documents, `problem.rs`).

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;

use super::pages::{Retried, SitesList};
use super::problem::{Problem, problem};

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "robotsgate console API", description = "The robots-monitor console's data as JSON: sites, revisions, alerts, the gate's releases and the robots.txt tester. Errors are RFC 9457 problem documents."),
    paths(
        super::pages::sites::api_sites,
        super::pages::site::api_site,
        super::pages::revision::api_revision,
        super::pages::alerts::api_alerts,
        super::pages::alerts::api_retry_alert,
        super::pages::release::api_release,
        super::pages::tester::api_test_get,
        super::pages::tester::api_test_post,
        super::compliance::api_overview,
        super::compliance::api_site,
        openapi_json,
    ),
    components(schemas(Problem, SitesList, Retried, monitor::release::Released)),
    tags(
        (name = "sites", description = "Sites, their states, revisions and saved URL sets"),
        (name = "compliance", description = "What crawlers did, judged against the robots.txt each could hold"),
        (name = "alerts", description = "Alerts and their delivery"),
        (name = "gate", description = "Changes the gate holds at the edge, and their release"),
        (name = "tester", description = "The robots.txt tester: Google's verdicts and deciding lines"),
        (name = "api", description = "This document"),
    ),
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
#[utoipa::path(get, path = "/api/openapi.json", tag = "api", responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
pub async fn openapi_json() -> Response {
    match Doc::openapi().to_pretty_json() {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use utoipa::OpenApi;

    #[test]
    fn the_document_is_openapi_3_1_and_names_every_endpoint() {
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

    /// Every `in: path` parameter is in its path's template (a query
    /// parameter declared as a path one made the document invalid), and
    /// every operation's tag is a declared name, not a Rust module path, and
    /// operation ids are unique (two handlers were both `api_site`).
    #[test]
    fn parameters_are_where_they_are_and_tags_are_names() {
        let doc: serde_json::Value = serde_json::from_str(&super::Doc::openapi().to_json().unwrap()).unwrap();
        let declared: Vec<&str> = doc["tags"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        let mut ids = std::collections::HashSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let name = p["name"].as_str().unwrap();
                    let templated = path.contains(&format!("{{{name}}}"));
                    assert_eq!(p["in"] == "path", templated, "{method} {path}: {name} is in {}", p["in"]);
                }
                let id = op["operationId"].as_str().unwrap_or_default().to_string();
                assert!(ids.insert(id.clone()), "{method} {path}: operationId {id} is not unique");
                for tag in op["tags"].as_array().into_iter().flatten() {
                    let tag = tag.as_str().unwrap();
                    assert!(declared.contains(&tag), "{method} {path}: tag {tag}");
                }
            }
        }
    }

    /// The shared answers (`Unavailable`, `Forbidden`) come out as the
    /// inline ones did: a problem document, referenced, with its media type.
    #[test]
    fn shared_problem_answers_are_problem_documents() {
        let doc: serde_json::Value = serde_json::from_str(&super::Doc::openapi().to_json().unwrap()).unwrap();
        for (path, method, status) in [
            ("/api/sites", "get", "503"),
            ("/api/alerts", "get", "503"),
            ("/api/sites/{name}/release", "post", "403"),
            ("/api/sites/{name}/release", "post", "503"),
            ("/api/alerts/{id}/retry", "post", "403"),
        ] {
            let answer = &doc["paths"][path][method]["responses"][status];
            let schema = &answer["content"]["application/problem+json"]["schema"]["$ref"];
            assert_eq!(schema, "#/components/schemas/Problem", "{method} {path} {status}: {answer}");
            assert!(answer["description"].as_str().is_some_and(|d| !d.is_empty()), "{method} {path} {status}");
        }
    }
}
