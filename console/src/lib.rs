//! The web console: server-rendered pages (askama templates in
//! `console/templates`, no JavaScript) and the same data as JSON under
//! `/api/`. It reads the history through the monitor's store and tests
//! files with the same engine, so what it shows is what the monitor and
//! Google see.
//!
//! Safety: it binds to localhost unless told otherwise; robots.txt content
//! is untrusted and is only ever rendered as escaped text, under a
//! Content-Security-Policy that allows no script at all; stored bytes are
//! downloaded as attachments, never rendered.

pub mod access;
pub mod alerts;
pub mod api;
pub mod compliance;
mod form;
pub mod head;

mod pages;
pub mod problem;
pub mod readers;
pub mod revision;
pub mod tester;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::routing::get;

use monitor::Monitor;

/// The console's routes over `monitor`, admitting readers by `access`.
pub fn router(monitor: Arc<Monitor>, access: access::Access) -> Router {
    let access = Arc::new(access);
    Router::new()
        .route("/login", get(access::login_form).post(access::login))
        .route("/", get(pages::sites))
        .route("/sites/{name}", get(pages::site))
        .route("/sites/{name}/revisions/{id}", get(pages::revision))
        .route("/sites/{name}/revisions/{id}/raw", get(pages::raw_revision))
        .route("/sites/{name}/revisions/by-hash/{hash}", get(pages::revision_by_hash))
        .route("/sites/{name}/release", axum::routing::post(pages::release_page))
        .route("/api/sites/{name}/release", axum::routing::post(pages::api_release))
        .route("/alerts", get(pages::alerts))
        .route("/alerts/{id}/retry", axum::routing::post(pages::retry_alert))
        .route("/api/alerts", get(pages::api_alerts))
        .route("/api/alerts/{id}/retry", axum::routing::post(pages::api_retry_alert))
        .route("/api/sites/{name}/revisions/{id}", get(pages::api_revision))
        .route(
            "/tester",
            get(pages::tester_get)
                .post(pages::tester_post)
                .layer(axum::extract::DefaultBodyLimit::max(pages::TESTER_BODY_LIMIT)),
        )
        .route("/api/sites", get(pages::api_sites))
        .route("/api/sites/{name}", get(pages::api_site))
        .route(
            "/api/test",
            get(pages::api_test_get)
                .post(pages::api_test_post)
                .layer(axum::extract::DefaultBodyLimit::max(pages::TESTER_BODY_LIMIT)),
        )
        .route("/compliance", get(compliance::overview_page))
        .route("/sites/{name}/compliance", get(compliance::site_page))
        .route("/api/compliance", get(compliance::api_overview))
        .route("/api/compliance/{site}", get(compliance::api_site))
        .route("/api/openapi.json", get(api::openapi_json))
        .route("/metrics", get(metrics))
        .route("/static/console.css", get(pages::stylesheet))
        .fallback(problem::not_found)
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&access), access::guard))
        .layer(axum::Extension(access))
        // A 1 MiB file, form-encoded, is up to three times as long.
        .layer(DefaultBodyLimit::max(4 * tester::MAX_ROBOTS_BYTES))
        .layer(axum::middleware::from_fn(problem::errors))
        .layer(axum::middleware::map_response(|mut response: axum::response::Response| async move {
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
                ),
            );
            headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
            response
        }))
        .with_state(monitor)
}

/// `GET /metrics`: Prometheus text exposition.
async fn metrics(axum::extract::State(m): axum::extract::State<Arc<Monitor>>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match monitor::metrics::render(&m).await {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response(),
        Err(e) => (axum::http::StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
    }
}

/// Serves the console on `listen` until `shutdown` resolves; refuses to
/// start on an address others can reach with no token to ask readers for
/// (see [`access`]).
pub async fn serve(
    monitor: Arc<Monitor>,
    listen: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let public = monitor.config().console.as_ref().is_some_and(|c| c.public);
    let readers = match monitor.config().console.as_ref().and_then(|c| c.htpasswd.as_deref()) {
        Some(file) => Some(readers::Readers::read(file).map_err(anyhow::Error::msg)?),
        None => None,
    };
    // The admin token is read as the gateway reads it (environment, then
    // `proxy.admin_token_file`, then `proxy.admin_token`); a file that
    // cannot be read stops the start, as it stops the gateway's.
    let admin = monitor.config().admin_token().map_err(anyhow::Error::msg)?;
    let access = access::Access::decide(listen, public, readers, admin.as_deref()).map_err(anyhow::Error::msg)?;
    let listener =
        tokio::net::TcpListener::bind(listen).await.with_context(|| format!("console: cannot listen on {listen}"))?;
    tracing::info!(addr = %listener.local_addr()?, "console listening");
    let app = router(monitor, access);
    // Served on hyper's own connection builder rather than `axum::serve`:
    // hyper answers a head past its buffer (a bare 431) and a target past
    // 64 KiB (a bare 414) before the router sees them. The buffer is made
    // larger here, and a first target too long is answered by `head`, so
    // an `/api/` client gets a problem document.
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors, say: wait, and go on.
                    tracing::warn!("console: accepting a connection: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (app, watcher) = (app.clone(), graceful.watcher());
        tokio::spawn(async move {
            // A first target too long for hyper is answered in our words.
            let Some(stream) = head::first_line(stream).await else { return };
            let service = hyper_util::service::TowerToHyperService::new(app);
            let mut builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            builder.http1().max_buf_size(MAX_HEAD).timer(hyper_util::rt::TokioTimer::new());
            let conn = builder.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service);
            let _ = watcher.watch(conn.into_owned()).await;
        });
    }
    graceful.shutdown().await;
    Ok(())
}

/// The largest request head the console reads: a target as long as hyper
/// takes ([`head::HYPER_MAX_TARGET`]) and many headers besides.
pub const MAX_HEAD: usize = 1024 * 1024;
