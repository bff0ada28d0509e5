//! The console's pages, one family to a file: each gathers its data, then
//! renders it as HTML (a template in `console/templates`) or as JSON
//! (`/api/…`). This file holds what they share: the failure a reader sees,
//! rendering, the bearer token, and the stylesheet.

pub(crate) mod alerts;
pub(crate) mod places;
pub(crate) mod release;
pub(crate) mod revision;
pub(crate) mod site;
pub(crate) mod sitemaps;
pub(crate) mod sites;
pub(crate) mod tester;

pub use alerts::*;
pub use release::*;
pub use revision::*;
pub use site::*;
pub use sites::*;
pub use tester::*;

use std::sync::Arc;

use askama::Template;
use axum::Json;
use axum::extract::{Form, FromRequest, Multipart, Path, Query, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use crate::tester::{Input, Report, Saved};
use monitor::Monitor;
use monitor::change::Target;
use monitor::clock::now_ms;
use monitor::clock::when;
use monitor::links::encode;
use monitor::overview::{self, Filter, PAGE, SiteLine};
use monitor::store::{DAY_MS, StoreError, VerdictRow};
use rules::Policy;

type App = State<Arc<Monitor>>;

/// A failure shown to the reader.
pub struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        tracing::error!("console: {e}");
        Failure(StatusCode::SERVICE_UNAVAILABLE, format!("the history database did not answer: {e}"))
    }
}

fn render(t: &impl Template) -> Result<Html<String>, Failure> {
    t.render().map(Html).map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, format!("rendering: {e}")))
}

/// The token of an `Authorization: Bearer TOKEN` field; empty without one.
fn bearer(headers: &axum::http::HeaderMap) -> &str {
    super::access::credentials(headers, "Bearer").unwrap_or_default()
}

/// `GET /static/console.css`.
pub async fn stylesheet() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../../templates/console.css")).into_response()
}
