//! The alerts page (`/alerts`, `/api/alerts`) and retrying an alert's
//! delivery.

use super::*;

/// `GET /alerts`.
pub async fn alerts(State(m): App) -> Result<Html<String>, Failure> {
    let alerts = crate::alerts::list(m.store(), m.config().email.is_some()).await?;
    render(&crate::alerts::AlertsPage { alerts, notice: None, email_off: m.config().email.is_none() })
}

/// `GET /api/alerts`.
#[utoipa::path(get, path = "/api/alerts", tag = "alerts",
    responses(
        (status = 200, description = "The newest 500 alerts, with their delivery state", body = Vec<crate::alerts::AlertLine>),
        crate::problem::Unavailable,
    ))]
pub async fn api_alerts(State(m): App) -> Result<Response, Failure> {
    Ok(Json(crate::alerts::list(m.store(), m.config().email.is_some()).await?).into_response())
}

/// The retry form's fields.
#[derive(serde::Deserialize)]
pub struct RetryForm {
    #[serde(default)]
    pub(super) token: String,
}

pub(super) async fn retry(m: &Monitor, id: i64, token: &str) -> Result<String, Failure> {
    if !crate::alerts::authorised(m.config(), token) {
        return Err(Failure(
            StatusCode::FORBIDDEN,
            "retrying needs the admin token (ROBOTSGATE_ADMIN_TOKEN or proxy.admin_token_file)".into(),
        ));
    }
    if crate::alerts::retry(m.store(), id, now_ms()).await? {
        Ok(format!("Alert {id} will be sent on the next delivery round."))
    } else {
        Err(Failure(StatusCode::NOT_FOUND, format!("no undelivered alert {id}")))
    }
}

/// `POST /alerts/{id}/retry` (form with `token`).
pub async fn retry_alert(
    State(m): App,
    Path(id): Path<i64>,
    Form(form): Form<RetryForm>,
) -> Result<Html<String>, Failure> {
    let notice = retry(&m, id, &form.token).await?;
    let alerts = crate::alerts::list(m.store(), m.config().email.is_some()).await?;
    render(&crate::alerts::AlertsPage { alerts, notice: Some(notice), email_off: m.config().email.is_none() })
}

/// `POST /api/alerts/{id}/retry` with `Authorization: Bearer TOKEN`.
#[utoipa::path(post, path = "/api/alerts/{id}/retry", tag = "alerts",
    params(("id" = i64, Path, description = "The alert's id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The alert is queued again", body = Retried),
        (status = 400, description = "The id is not a number", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Forbidden,
        (status = 404, description = "No undelivered alert with this id", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_retry_alert(
    State(m): App,
    Path(id): Path<i64>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Failure> {
    let token = bearer(&headers);
    let notice = retry(&m, id, token).await?;
    Ok(Json(Retried { retried: id, notice }).into_response())
}

/// What a retry did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Retried {
    /// The alert.
    pub retried: i64,
    /// In words.
    pub notice: String,
}
