//! A revision's page (`/sites/{name}/revisions/{id}`, by id or body hash,
//! and as JSON): the file, and its diff against the one before.

use super::*;

pub(super) async fn revision_page(m: &Monitor, name: &str, id: i64) -> Result<crate::revision::RevisionPage, Failure> {
    match crate::revision::page(m, name, id).await {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(Failure(StatusCode::NOT_FOUND, format!("site `{name}` has no revision {id}"))),
        Err(e) => Err(Failure(StatusCode::SERVICE_UNAVAILABLE, format!("{e:#}"))),
    }
}

/// `GET /sites/{name}/revisions/{id}`: the diff, flips and lint.
pub async fn revision(State(m): App, Path((name, id)): Path<(String, i64)>) -> Result<Html<String>, Failure> {
    render(&revision_page(&m, &name, id).await?)
}

/// `GET /sites/{name}/revisions/by-hash/{hash}`: the revision whose body
/// has this SHA-256, by a redirect to its page. Alert mails link here, as
/// they are written before the revision has an id.
pub async fn revision_by_hash(State(m): App, Path((name, hash)): Path<(String, String)>) -> Result<Response, Failure> {
    match m.store().revision_by_hash(&name, &hash).await? {
        Some(id) => {
            Ok(axum::response::Redirect::to(&format!("/sites/{}/revisions/{id}", encode(&name))).into_response())
        }
        None => Err(Failure(StatusCode::NOT_FOUND, format!("site `{name}` has no revision with hash {hash}"))),
    }
}

/// `GET /api/sites/{name}/revisions/{id}`: the revision page as JSON.
#[utoipa::path(get, path = "/api/sites/{name}/revisions/{id}", tag = "sites",
    params(
        ("name" = String, Path, description = "The site's name in the config"),
        ("id" = i64, Path, description = "The revision's id, as `/api/sites/{name}` gives it"),
    ),
    responses(
        (status = 200, description = "The revision against the one before: diff, flips, lint", body = crate::revision::RevisionPage),
        (status = 400, description = "The id is not a number", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such site or revision", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_revision(State(m): App, Path((name, id)): Path<(String, i64)>) -> Result<Response, Failure> {
    Ok(Json(revision_page(&m, &name, id).await?).into_response())
}
