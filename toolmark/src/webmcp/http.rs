//! The endpoints the shim calls, and the checks in front of them: `Host`
//! (loopback by default), a same-origin `Origin`, the shim's marker header, the
//! page's token, and the body size.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::future::BoxFuture;
use futures_util::StreamExt as _;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::page::{Page, StreamGuard};
use super::result::{failure, tool_result};
use super::Shared;
use crate::event::Event;
use crate::http_host::{parse_host, split_host};
use crate::{CallOptions, Caller, ConfirmHandler, ConfirmRequest, Decision};

/// The header every request of the shim carries (a custom header: a page of
/// another origin cannot send it without a CORS preflight, which is never
/// granted).
pub(crate) const MARK_HEADER: &str = "x-toolmark-webmcp";
/// The header that carries the page's token (never a URL: URLs end up in logs,
/// history and `Referer`).
pub(crate) const TOKEN_HEADER: &str = "x-toolmark-page";
/// How long the stream waits after a change for more before sending.
const COALESCE: Duration = Duration::from_millis(20);
/// A comment line on an idle stream, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The shim, shipped in the crate.
pub(crate) const SCRIPT: &str = include_str!("webmcp.js");

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let guarded = Router::new()
        .route("/page", post(new_page))
        .route("/stream", post(stream))
        .route("/call", post(call))
        .route("/answer", post(answer))
        .route("/report", post(report))
        .layer(from_fn_with_state(Arc::clone(&shared), check_page_origin));
    Router::new()
        .route("/webmcp.js", get(script))
        .merge(guarded)
        .layer(from_fn_with_state(Arc::clone(&shared), check_host))
        .with_state(shared)
}

/// A request refused before anything ran: a status, a stable code and a message.
struct Rejected {
    status: StatusCode,
    code: &'static str,
    message: &'static str,
}

impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        refuse(self.status, self.code, self.message)
    }
}

const fn rejected(status: StatusCode, code: &'static str, message: &'static str) -> Rejected {
    Rejected {
        status,
        code,
        message,
    }
}

fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    let mut r = (
        status,
        json!({"error": code, "message": message}).to_string(),
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn host_of(req: &Request) -> Option<String> {
    req.headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
}

pub(crate) fn host_ok(allowed: Option<&[String]>, host: &str) -> bool {
    // A malformed value (`[::1]evil`, `localhost:80@evil`) is refused whatever
    // the list says: the parser MCP's HTTP checks use too.
    let Some((name, port)) = parse_host(host) else {
        return false;
    };
    let ok = |entry: &str| {
        let (e_name, e_port) = split_host(entry);
        e_name.eq_ignore_ascii_case(name) && (e_port.is_none() || e_port == port)
    };
    match allowed {
        Some(list) => list.iter().any(|e| ok(e)),
        None => LOOPBACK_HOSTS.iter().any(|e| ok(e)),
    }
}

/// Whether `origin` (`scheme://host[:port]`) is the origin of a page served
/// from `host` (the request's `Host`): same host and port, the scheme's default
/// port written or not.
pub(crate) fn same_origin(origin: &str, host: &str) -> bool {
    let (rest, default_port) = if let Some(r) = origin.strip_prefix("http://") {
        (r, "80")
    } else if let Some(r) = origin.strip_prefix("https://") {
        (r, "443")
    } else {
        return false;
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) || parse_host(rest).is_none() {
        return false;
    }
    let norm = |s: &str| {
        let (h, p) = split_host(s);
        (h.to_ascii_lowercase(), p.unwrap_or(default_port).to_owned())
    };
    norm(rest) == norm(host)
}

async fn check_host(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    match host_of(&req) {
        Some(h) if host_ok(s.options.hosts.as_deref(), &h) => next.run(req).await,
        _ => refuse(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "Host not allowed",
        ),
    }
}

/// The checks every endpoint but the script has: a same-origin request from
/// the shim, with a body within bounds.
async fn check_page_origin(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = host_of(&req).unwrap_or_default();
    let origin_ok = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| same_origin(o, &host));
    // Browsers that send Fetch Metadata say where a request comes from.
    let site_ok = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v == "same-origin");
    if !origin_ok || !site_ok {
        return refuse(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "Only the app's own pages may call these endpoints",
        );
    }
    if headers.get(MARK_HEADER).and_then(|v| v.to_str().ok()) != Some("1") {
        return refuse(
            StatusCode::FORBIDDEN,
            "not_the_shim",
            "Requests come from the Toolmark WebMCP script",
        );
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > s.body_limit as u64) {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "Request body too large",
        );
    }
    next.run(req).await
}

/// The page a request's token names.
fn page_of(s: &Shared, headers: &HeaderMap) -> Result<Arc<Page>, Rejected> {
    headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|t| s.pages.get(t))
        .ok_or(rejected(
            StatusCode::UNAUTHORIZED,
            "unknown_page",
            "No page session with this token: load the page again",
        ))
}

/// The request body as `T`, within the body limit (also without a
/// `Content-Length`).
/// The body is never echoed back: it may hold a secret.
async fn read_json<T: for<'de> Deserialize<'de>>(s: &Shared, body: Body) -> Result<T, Rejected> {
    let bytes = axum::body::to_bytes(body, s.body_limit)
        .await
        .map_err(|_| {
            rejected(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                "Request body too large",
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let message = match e.classify() {
            serde_json::error::Category::Data => "Invalid request body: unexpected shape",
            serde_json::error::Category::Eof => "Invalid request body: truncated",
            _ => "Invalid request body: not JSON",
        };
        rejected(StatusCode::BAD_REQUEST, "bad_request", message)
    })
}

async fn script() -> Response {
    let mut r = SCRIPT.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// `POST /page`: a new page session; its token is in the body (and nowhere else).
async fn new_page(State(s): State<Arc<Shared>>) -> Response {
    let tm = s.catalog.tm.clone();
    match s
        .pages
        .create(s.options.max_pages, s.options.page_idle, |session| {
            tm.end_session(session);
        }) {
        Ok((token, _)) => json_response(StatusCode::CREATED, json!({"token": token}).to_string()),
        Err(_) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_pages",
            "Too many open pages: try again later",
        ),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamRequest {
    #[serde(default)]
    confirm: bool,
}

/// The stream's state: what it sent last, and what keeps it counted.
struct Streaming {
    shared: Arc<Shared>,
    page: Arc<Page>,
    n: u64,
    events: crate::Events,
    sent: Option<Arc<str>>,
    /// When to send a keep-alive if nothing else was sent by then.
    ping: tokio::time::Instant,
    _open: StreamGuard,
}

impl Streaming {
    /// The `tools` message for this page now, unless it is what was sent last.
    fn next_message(&mut self) -> Option<Bytes> {
        let listing = self.shared.catalog.listing();
        let confirm = self.page.has_confirm();
        let msg = if confirm {
            Arc::clone(&listing.with_confirm)
        } else {
            Arc::clone(&listing.without_confirm)
        };
        if self.sent.as_deref() == Some(&*msg) {
            return None;
        }
        if !confirm {
            // The seed's development event: an inline caller without a
            // confirmation path does not see these tools.
            for tool in &listing.hidden {
                self.shared
                    .catalog
                    .tm
                    .inner
                    .emit(|| Event::MissingConfirmHandler {
                        tool: tool.clone(),
                        callers: vec![Caller::WebMcp],
                    });
            }
        }
        self.sent = Some(Arc::clone(&msg));
        Some(Bytes::from(format!("event: tools\ndata: {msg}\n\n")))
    }
}

/// `POST /stream`: server-sent events for this page — a `tools` message now and
/// after every change of what the page sees. One stream per page: opening a new
/// one ends the previous one.
async fn stream(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejected> {
    let page = page_of(&s, &headers)?;
    let req: StreamRequest = read_json(&s, body).await?;
    let (n, open) = page.open_stream(req.confirm);
    let mut st = Streaming {
        events: s.catalog.tm.events(),
        shared: Arc::clone(&s),
        page,
        n,
        sent: None,
        ping: tokio::time::Instant::now() + KEEP_ALIVE,
        _open: open,
    };
    let first = st.next_message();
    let rest = futures_util::stream::unfold(st, |mut st| async move {
        loop {
            let superseded = st.page.superseded.notified();
            if !st.page.is_current(st.n) {
                return None;
            }
            tokio::select! {
                () = superseded => {}
                e = st.events.recv() => match e {
                    Ok(Event::ManifestChanged) | Err(RecvError::Lagged(_)) => {
                        tokio::time::sleep(COALESCE).await;
                        while st.events.try_recv().is_ok() {}
                        if let Some(msg) = st.next_message() {
                            st.ping = tokio::time::Instant::now() + KEEP_ALIVE;
                            return Some((msg, st));
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Closed) => return None,
                },
                () = tokio::time::sleep_until(st.ping) => {
                    st.ping = tokio::time::Instant::now() + KEEP_ALIVE;
                    return Some((Bytes::from_static(b": keep-alive\n\n"), st));
                }
            }
        }
    });
    let all = futures_util::stream::iter(first).chain(rest);
    let mut r = Body::from_stream(all.map(Ok::<_, Infallible>)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(r)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallRequest {
    /// The tool's browser name.
    tool: String,
    #[serde(default)]
    input: Value,
}

fn line(v: &Value) -> Bytes {
    let mut s = v.to_string();
    s.push('\n');
    Bytes::from(s)
}

/// The page's `onConfirm`, asked through the call's own response: a `confirm`
/// line out, the answer back through `POST /answer` from the same page.
struct PageConfirm {
    page: Arc<Page>,
    tx: mpsc::Sender<Bytes>,
}

impl ConfirmHandler for PageConfirm {
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision> {
        let mut asked = self.page.ask(&request.confirm_id);
        // The request is the redacted one every approver gets.
        let msg = line(&json!({"type": "confirm", "request": request}));
        let tx = self.tx.clone();
        Box::pin(async move {
            let gone = || Decision::reject_with("The page closed without answering");
            if tx.send(msg).await.is_err() {
                return gone();
            }
            (&mut asked.rx).await.unwrap_or_else(|_| gone())
        })
    }
}

/// `POST /call`: one tool call as caller `WebMcp`, bound to the page. The
/// response is newline-delimited JSON: `confirm` lines while the page's dialog
/// is asked, then one `result` line. Closing the response (the page aborted the
/// call) cancels the call.
async fn call(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejected> {
    let page = page_of(&s, &headers)?;
    let req: CallRequest = read_json(&s, body).await?;
    let Some(open) = page.open_call(s.options.max_open_calls) else {
        return Err(rejected(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_calls",
            "Too many open calls from this page: wait for one to finish",
        ));
    };
    let listing = s.catalog.listing();
    let ndjson = |body: Body| {
        let mut r = body.into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    };
    let Some(name) = listing.names.to_toolmark(&req.tool).map(str::to_owned) else {
        let result = failure(
            "unknown_tool",
            "No such tool is available now: the page's tool list is being updated",
            &[],
        );
        return Ok(ndjson(Body::from(line(
            &json!({"type": "result", "result": result}),
        ))));
    };
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let cancel = CancellationToken::new();
    let mut options = CallOptions::new(Caller::WebMcp)
        .signal(cancel.clone())
        .session(page.session.to_string());
    if page.has_confirm() {
        options = options.confirm_handler(PageConfirm {
            page: Arc::clone(&page),
            tx: tx.clone(),
        });
    }
    let tm = s.catalog.tm.clone();
    tokio::spawn(async move {
        let outcome = tm.call(&name, req.input, options).await;
        let msg = line(&json!({"type": "result", "result": tool_result(outcome)}));
        let _ = tx.send(msg).await;
        drop(open);
    });
    // Dropped with the response body: when the page goes away mid-call.
    let cancel_on_drop = cancel.drop_guard();
    let body = futures_util::stream::unfold((rx, cancel_on_drop), |(mut rx, guard)| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(b), (rx, guard)))
    });
    Ok(ndjson(Body::from_stream(body)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerRequest {
    confirm_id: String,
    approved: bool,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /answer`: the page's answer to one of its own open confirmations.
async fn answer(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejected> {
    let page = page_of(&s, &headers)?;
    let req: AnswerRequest = read_json(&s, body).await?;
    let decision = Decision {
        approved: req.approved,
        input: req.input,
        reason: req.reason,
    };
    if page.answer(&req.confirm_id, decision) {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(rejected(
            StatusCode::NOT_FOUND,
            "unknown_confirmation",
            "This page has no open confirmation with this id",
        ))
    }
}

#[derive(Deserialize)]
struct Refused {
    name: String,
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
struct ReportRequest {
    refused: Vec<Refused>,
}

/// `POST /report`: the tools the browser did not keep, logged for the app.
async fn report(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejected> {
    page_of(&s, &headers)?;
    let req: ReportRequest = read_json(&s, body).await?;
    let listing = s.catalog.listing();
    for r in req.refused.iter().take(64) {
        // Only names this app serves are logged (a page cannot write arbitrary
        // text into the app's logs).
        if let Some(tool) = listing.names.to_toolmark(&r.name) {
            let reason: String = r
                .reason
                .chars()
                .take(200)
                .filter(|c| !c.is_control())
                .collect();
            tracing::warn!(target: "toolmark", tool, reason, "webmcp: the browser did not register this tool");
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_origin_means_same_host_and_port() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(same_origin("http://localhost", "localhost:80"));
        assert!(same_origin("https://app.example.com", "app.example.com"));
        assert!(same_origin(
            "https://APP.example.com:443",
            "app.example.com"
        ));
        for (origin, host) in [
            ("http://127.0.0.1:8081", "127.0.0.1:8080"),
            ("http://evil.com", "127.0.0.1:8080"),
            ("null", "127.0.0.1:8080"),
            ("http://127.0.0.1:8080.evil.com", "127.0.0.1:8080"),
            ("http://user@127.0.0.1:8080", "127.0.0.1:8080"),
            ("ftp://127.0.0.1:8080", "127.0.0.1:8080"),
            ("http://", "127.0.0.1:8080"),
            ("https://localhost", "localhost:80"),
        ] {
            assert!(!same_origin(origin, host), "{origin} vs {host}");
        }
    }

    #[test]
    fn hosts_are_loopback_unless_configured() {
        for ok in ["localhost", "127.0.0.1:1", "[::1]:3000"] {
            assert!(host_ok(None, ok), "{ok}");
        }
        for bad in ["evil.com", "127.0.0.2", "localhost.evil.com"] {
            assert!(!host_ok(None, bad), "{bad}");
        }
        let list = vec!["app.example.com".to_owned()];
        assert!(host_ok(Some(&list), "app.example.com:8443"));
        assert!(!host_ok(Some(&list), "localhost"));
    }

    /// The class MCP's HTTP checks refuse, refused here too (one parser): a
    /// value that starts like an allowed host but is not one.
    #[test]
    fn malformed_hosts_and_origins_are_refused() {
        let wide = vec![
            "localhost".to_owned(),
            "[::1]".to_owned(),
            "host".to_owned(),
        ];
        for bad in [
            "[::1]evil",
            "[::1]:80evil",
            "[::1",
            "host@evil",
            "localhost:80@evil",
            "localhost:",
            "localhost:99999",
            "localhost:80:80",
            "local host",
            "localhost/evil",
            "%6cocalhost",
            "",
        ] {
            assert!(!host_ok(None, bad), "{bad}");
            assert!(!host_ok(Some(&wide), bad), "{bad}");
        }
        for (origin, host) in [
            ("http://[::1]evil", "[::1]"),
            ("http://localhost:80x", "localhost"),
            ("http://local host", "local host"),
        ] {
            assert!(!same_origin(origin, host), "{origin} vs {host}");
        }
    }
}
