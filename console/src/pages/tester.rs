//! The tester's pages (`/test`, `/api/test`): a robots.txt (typed,
//! uploaded, a stored revision or a live fetch) against URLs and crawlers.

use super::*;

#[derive(Template)]
#[template(path = "tester.html")]
pub(super) struct TesterPage {
    pub(super) input: Input,
    /// The file's exact bytes in base64, when the text cannot carry them.
    pub(super) carried: Option<String>,
    pub(super) sites: Vec<String>,
    pub(super) sets: Vec<String>,
    pub(super) report: Option<Report>,
    pub(super) error: Option<String>,
    pub(super) share: Option<String>,
}

/// Longest link a result is shared by; past it, the form is the way.
pub(super) const SHARE_MAX: usize = 8_000;

/// Every saved URL set, as `SITE/SET`, the way the tester names them.
pub(super) fn set_names(m: &Monitor) -> Vec<String> {
    let sites = m.config().sites.iter();
    sites.flat_map(|site| site.url_sets.keys().map(move |set| format!("{}/{set}", site.name))).collect()
}

/// The URLs of the saved set named `SITE/SET`, with their pins.
pub(super) fn saved_set(m: &Monitor, name: &str) -> Result<Vec<Saved>, String> {
    if name.is_empty() {
        return Ok(Vec::new());
    }
    for site in &m.config().sites {
        for (set, entries) in &site.url_sets {
            if name.strip_prefix(site.name.as_str()).and_then(|rest| rest.strip_prefix('/')) == Some(set.as_str()) {
                return Ok(entries
                    .iter()
                    .map(|e| Saved { url: e.url().to_string(), expect: e.expect().cloned() })
                    .collect());
            }
        }
    }
    Err(format!("no saved URL set named `{name}` (give it as SITE/SET)"))
}

pub(super) async fn test(m: &Monitor, input: &Input) -> Result<Report, String> {
    let set = saved_set(m, &input.set)?;
    let (live, saved) = if input.site.is_empty() {
        (None, Vec::new())
    } else {
        let site = m.site(&input.site).ok_or_else(|| format!("no site named `{}` in the config", input.site))?;
        let row = m.store().site(&input.site).await.map_err(|e| e.to_string())?;
        let state = match row.state_id {
            Some(id) => m.store().state(id).await.map_err(|e| e.to_string())?,
            None => None,
        };
        let live = match state.and_then(|s| s.revision_id) {
            Some(rev) => m
                .store()
                .revision_body(&input.site, rev)
                .await
                .map_err(|e| e.to_string())?
                .map(|body| rules::Policy::Rules(rules::Robots::parse(&body))),
            None => None,
        };
        (live, Monitor::targets(site).into_iter().map(|t| t.url).collect())
    };
    crate::tester::run(input, &set, live.as_ref(), &saved, m.catalogue()).map_err(|e| e.to_string())
}

/// A stored revision as the tester's file, when one is asked for and no
/// text was given.
pub(super) async fn with_revision(m: &Monitor, mut input: Input) -> Result<Input, Failure> {
    if let (false, Some(rev)) = (input.has_file(), input.revision) {
        let body = m.store().revision_body(&input.site, rev).await?;
        let Some(body) = body else {
            return Err(Failure(StatusCode::NOT_FOUND, format!("site `{}` has no revision {rev}", input.site)));
        };
        // Judged byte for byte, as the site's page judges it.
        input.set_file(body);
    }
    Ok(input)
}

/// The tester's page for `input`; `submitted` when the form was sent
/// (a POST), so that an empty one is told what to give.
pub(super) async fn tester_page(m: &Monitor, input: Input, submitted: bool) -> Result<Html<String>, Failure> {
    let input = with_revision(m, input).await?;
    let sites = m.config().sites.iter().map(|s| s.name.clone()).collect();
    let sets = set_names(m);
    let ran = input.has_file() || !input.urls.is_empty() || !input.set.is_empty();
    let (report, error) = if ran {
        match test(m, &input).await {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        }
    } else if submitted {
        let nothing = "Nothing to test: paste or upload a robots.txt (or open a stored revision), and give URLs or a saved URL set";
        (None, Some(nothing.to_string()))
    } else {
        (None, None)
    };
    let carried = input.carried_b64();
    // A file that is not UTF-8 is shared by its bytes.
    let file = match &carried {
        Some(b64) => format!("robots_b64={}", encode(b64)),
        None => format!("robots={}", encode(&input.robots)),
    };
    let query = format!(
        "/tester?{file}&agents={}&urls={}&site={}&set={}",
        encode(&input.agents),
        encode(&input.urls),
        encode(&input.site),
        encode(&input.set)
    );
    let share = (report.is_some() && query.len() <= SHARE_MAX).then_some(query);
    render(&TesterPage { input, carried, sites, sets, report, error, share })
}

/// Largest tester request: the file, its upload copy and 5,000 long URLs.
pub const TESTER_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Reads the tester's form sent as `multipart/form-data`, the way a form
/// with a file input sends it. An uploaded file replaces the pasted text;
/// both keep their exact bytes. A file over the tester's limit is refused
/// here, by its byte count; what was typed stays, with the error.
pub(super) async fn multipart_input(mut form: Multipart) -> (Input, Option<String>) {
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        format!("the form could not be read ({e}); the tester takes at most {} MiB in all", TESTER_BODY_LIMIT >> 20)
    };
    let mut input = Input::default();
    let mut upload: Option<Vec<u8>> = None;
    let mut pasted: Option<Vec<u8>> = None;
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return (input, Some(unreadable(e))),
        };
        let name = field.name().unwrap_or_default().to_string();
        let bytes = match field.bytes().await {
            Ok(b) => b,
            Err(e) => return (input, Some(unreadable(e))),
        };
        let text = || String::from_utf8_lossy(&bytes).into_owned();
        match name.as_str() {
            "robots" => {
                input.robots = text();
                pasted = Some(bytes.to_vec());
            }
            "robots_b64" => input.robots_b64 = text(),
            "agents" => input.agents = text(),
            "urls" => input.urls = crate::tester::url_text(bytes.to_vec()),
            "site" => input.site = text(),
            "set" => input.set = text(),
            "revision" => match crate::tester::revision_number(&text()) {
                Ok(r) => input.revision = r,
                Err(e) => return (input, Some(e)),
            },
            "file" if !bytes.is_empty() => upload = Some(bytes.to_vec()),
            _ => {}
        }
    }
    if let Some(bytes) = upload {
        if bytes.len() > crate::tester::MAX_ROBOTS_BYTES {
            return (input, Some(crate::tester::InputError::RobotsTooLarge(bytes.len()).to_string()));
        }
        input.robots_b64.clear();
        input.set_file(bytes);
    } else if let Some(bytes) = pasted.filter(|b| !b.is_empty())
        && let Err(e) = input.set_typed(bytes)
    {
        return (input, Some(e.to_string()));
    }
    (input, None)
}

/// `GET /tester`: the form, and the result when the query carries one (a
/// shared link).
pub async fn tester_get(State(m): App, RawQuery(query): RawQuery) -> Result<Html<String>, Failure> {
    let input =
        Input::from_form(query.unwrap_or_default().as_bytes()).map_err(|e| Failure(StatusCode::BAD_REQUEST, e))?;
    tester_page(&m, input, false).await
}

/// `POST /tester`: the result of the form, sent as `multipart/form-data`
/// (with an uploaded file) or URL-encoded.
pub async fn tester_post(State(m): App, request: Request) -> Result<Html<String>, Failure> {
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let input = if content_type.starts_with("multipart/form-data") {
        let form = Multipart::from_request(request, &()).await.map_err(|e| Failure(e.status(), e.body_text()))?;
        match multipart_input(form).await {
            (input, None) => input,
            (input, Some(e)) => {
                let page = TesterPage {
                    carried: None,
                    input,
                    sites: m.config().sites.iter().map(|s| s.name.clone()).collect(),
                    sets: set_names(&m),
                    report: None,
                    error: Some(e),
                    share: None,
                };
                return render(&page);
            }
        }
    } else {
        let body = axum::body::to_bytes(request.into_body(), TESTER_BODY_LIMIT)
            .await
            .map_err(|e| Failure(StatusCode::PAYLOAD_TOO_LARGE, format!("the form could not be read: {e}")))?;
        Input::from_form(&body).map_err(|e| Failure(StatusCode::BAD_REQUEST, e))?
    };
    tester_page(&m, input, true).await
}

pub(super) async fn api_test(m: &Monitor, input: Input) -> Response {
    let input = match with_revision(m, input).await {
        Ok(i) => i,
        Err(f) => return f.into_response(),
    };
    match test(m, &input).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => crate::problem::problem(StatusCode::UNPROCESSABLE_ENTITY, e),
    }
}

/// `GET /api/test`: the tester as JSON, input in the query.
#[utoipa::path(get, path = "/api/test", tag = "tester",
    params(
        ("robots" = Option<String>, Query, description = "The robots.txt; its bytes exactly, percent-encoded"),
        ("robots_b64" = Option<String>, Query, description = "The robots.txt's bytes in standard base64"),
        ("agents" = Option<String>, Query, description = "Crawler product tokens, one per line or comma-separated"),
        ("urls" = Option<String>, Query, description = "URLs or paths, one per line"),
        ("site" = Option<String>, Query, description = "A site whose live file the tested one is compared with"),
        ("revision" = Option<i64>, Query, description = "A stored revision of `site` to test, when no file is given"),
        ("set" = Option<String>, Query, description = "A saved URL set, as SITE/SET"),
    ),
    responses(
        (status = 200, description = "Every verdict with its group and deciding line, and the lint", body = crate::tester::Report),
        (status = 400, description = "A field that cannot be read", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such revision", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 414, description = "A query longer than the console reads (64 KiB): send the file with POST", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Input past a limit, or a site or set that does not exist", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_test_get(State(m): App, RawQuery(query): RawQuery) -> Response {
    match Input::from_form(query.unwrap_or_default().as_bytes()) {
        Ok(input) => api_test(&m, input).await,
        Err(e) => Failure(StatusCode::BAD_REQUEST, e).into_response(),
    }
}

/// `POST /api/test`: the tester as JSON, input as a JSON object.
#[utoipa::path(post, path = "/api/test", tag = "tester",
    request_body(content = Input, description = "What to test; `revision` may be given as `/api/sites/{name}` gives it", content_type = "application/json"),
    responses(
        (status = 200, description = "Every verdict with its group and deciding line, and the lint", body = crate::tester::Report),
        (status = 400, description = "The body is not JSON", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such revision", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is too large", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not `application/json`", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "JSON of another shape, input past a limit, or a site or set that does not exist", body = crate::problem::Problem, content_type = "application/problem+json"),
        crate::problem::Unavailable,
    ))]
pub async fn api_test_post(State(m): App, Json(input): Json<Input>) -> Response {
    api_test(&m, input).await
}
