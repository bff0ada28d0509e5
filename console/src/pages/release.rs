//! Releasing a held change (`/sites/{name}/release`, `/api/sites/{name}/release`):
//! the console's form and the API, through the monitor's one release.

use super::*;

/// The release form's fields.
#[derive(serde::Deserialize)]
pub struct ReleaseForm {
    #[serde(default)]
    pub(super) token: String,
    /// A revision id; empty for every change held now.
    #[serde(default)]
    pub(super) revision: String,
}

pub(super) async fn release(
    m: &Monitor,
    name: &str,
    revision: Option<i64>,
    token: &str,
) -> Result<monitor::release::Released, Failure> {
    if !crate::alerts::authorised(m.config(), token) {
        return Err(Failure(
            StatusCode::FORBIDDEN,
            "releasing needs the admin token (ROBOTSGATE_ADMIN_TOKEN or proxy.admin_token_file)".into(),
        ));
    }
    use monitor::release::ReleaseError;
    monitor::release::release(m, name, revision, "the console").await.map_err(|e| match e {
        ReleaseError::NoSite(_) | ReleaseError::NoRevision(..) => Failure(StatusCode::NOT_FOUND, e.to_string()),
        ReleaseError::NothingHeld(_) => Failure(StatusCode::CONFLICT, e.to_string()),
        ReleaseError::Database(_) => Failure(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    })
}

/// `POST /sites/{name}/release` (form with `token` and an optional `revision`).
pub async fn release_page(
    State(m): App,
    Path(name): Path<String>,
    Form(form): Form<ReleaseForm>,
) -> Result<Html<String>, Failure> {
    let revision = match form.revision.trim() {
        "" => None,
        id => {
            Some(id.parse::<i64>().map_err(|_| Failure(StatusCode::BAD_REQUEST, format!("`{id}` is no revision id")))?)
        }
    };
    let released = release(&m, &name, revision, &form.token).await?;
    let mut page = site_page(&m, &name).await?;
    page.notice = Some(released.notice);
    render(&page)
}

/// Which revision to release, for `POST /api/sites/{name}/release`.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReleaseQuery {
    /// The revision id; without it, every change held for the site now.
    pub(super) revision: Option<i64>,
}

/// `POST /api/sites/{name}/release` with `Authorization: Bearer TOKEN`.
#[utoipa::path(post, path = "/api/sites/{name}/release", tag = "gate",
    params(("name" = String, Path, description = "The site's name in the config"), ReleaseQuery),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Released: every gateway sharing the database serves it at its next refresh", body = monitor::release::Released),
        (status = 400, description = "The revision is not a number, or the query names an unknown parameter", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Forbidden,
        (status = 404, description = "No such site or revision", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing is held for the site", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_release(
    State(m): App,
    Path(name): Path<String>,
    axum::extract::Query(query): axum::extract::Query<ReleaseQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Failure> {
    let token = bearer(&headers);
    Ok(Json(release(&m, &name, query.revision, token).await?).into_response())
}
