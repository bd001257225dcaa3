//! Streamable HTTP: rmcp's `StreamableHttpService` in an axum `Router`, behind
//! tower layers that check `Host`, `Origin`, a bearer token, the body size and
//! the number of live sessions; and the OAuth protected-resource metadata.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::StreamExt;
use http::{header, HeaderValue, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;

use super::McpServer;
use crate::http_host::{parse_host, split_host};

/// A configuration [`McpServer::try_router`] (and so [`McpServer::serve_http`])
/// refuses, with a stable [`code`](Self::code).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpConfigError {
    /// [`HttpOptions::bearer_token`] was given an empty token, which would let
    /// every request in.
    EmptyBearerToken,
    /// [`HttpOptions::bearer_token`] was given a token a client cannot send:
    /// a bearer token is letters, digits and `-._~+/`, then any `=` (RFC 6750).
    InvalidBearerToken,
    /// [`ProtectedResource::new`] was given a `resource` that is not an absolute
    /// `https://` (or loopback `http://`) URL without a fragment.
    InvalidResource {
        /// The URL given.
        resource: String,
    },
}

impl McpConfigError {
    /// `empty_bearer_token`, `invalid_bearer_token` or `invalid_resource`.
    pub fn code(&self) -> &'static str {
        match self {
            McpConfigError::EmptyBearerToken => "empty_bearer_token",
            McpConfigError::InvalidBearerToken => "invalid_bearer_token",
            McpConfigError::InvalidResource { .. } => "invalid_resource",
        }
    }
}

impl fmt::Display for McpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpConfigError::EmptyBearerToken => f.write_str(
                "empty_bearer_token: the bearer token is empty, which would let every \
                 request in; give a long random token, or no `bearer_token` at all",
            ),
            McpConfigError::InvalidBearerToken => f.write_str(
                "invalid_bearer_token: a bearer token is letters, digits and `-._~+/`, \
                 then any `=` (RFC 6750); a client cannot send this one",
            ),
            McpConfigError::InvalidResource { resource } => write!(
                f,
                "invalid_resource: `{resource}` is not an absolute https:// URL (or http:// \
                 on loopback) without a fragment, as RFC 9728 wants a resource identifier"
            ),
        }
    }
}

impl std::error::Error for McpConfigError {}

/// RFC 6750's `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn valid_token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The HTTP checks of [`McpServer::router`] and [`McpServer::serve_http`].
///
/// Defaults: only loopback `Host`s (`localhost`, `127.0.0.1`, `[::1]`, any port;
/// a malformed `Host` is refused whatever the list); a request with an `Origin`
/// header only from a loopback origin (a browser page elsewhere gets 403: the
/// DNS-rebinding guard of the MCP security guidance); no bearer token; bodies up
/// to the Toolmark's `max_input_bytes` plus 16 KiB for the JSON-RPC envelope (a
/// larger one is a readable 413); at most 1,024 live sessions, each closed after
/// 5 minutes without a request.
#[derive(Clone, Default)]
pub struct HttpOptions {
    hosts: Option<Vec<String>>,
    origins: Option<Vec<String>>,
    bearer: Option<String>,
    body_limit: Option<usize>,
    max_sessions: Option<usize>,
    idle: Option<Duration>,
    resource: Option<ProtectedResource>,
}

/// The default cap on live sessions.
const MAX_SESSIONS: usize = 1024;
/// How long a session may go without a request (rmcp's default).
const IDLE: Duration = Duration::from_secs(300);
/// How much of a too-large body is read (and thrown away) before the 413 is
/// sent and the connection closed, so the client, still sending, reads the
/// status instead of a reset connection.
const DRAIN_BYTES: u64 = 64 << 20;
/// How long that reading may take.
const DRAIN_TIME: Duration = Duration::from_secs(30);
/// `Retry-After` of a 503 at the session cap, in seconds.
const RETRY_AFTER: &str = "5";

impl std::fmt::Debug for HttpOptions {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("bearer", &self.bearer.as_ref().map(|_| "<set>"))
            .field("body_limit", &self.body_limit)
            .field("max_sessions", &self.max_sessions)
            .field("idle", &self.idle)
            .field("resource", &self.resource)
            .finish()
    }
}

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl HttpOptions {
    /// The default checks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `Host` values accepted (`"example.com"`: any port; `"example.com:8443"`:
    /// that port only), replacing the loopback defaults.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The `Origin` values accepted (`"https://app.example.com"`, or with `:*`
    /// for any port), replacing the loopback defaults. A request without an
    /// `Origin` header (not from a browser) is not checked.
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Require `Authorization: Bearer <token>` (the scheme in any case, as RFC
    /// 7235 says; the token compared in constant time); anything else is 401
    /// with `WWW-Authenticate: Bearer` (naming the
    /// [`protected_resource`](Self::protected_resource) metadata when set).
    ///
    /// An empty token, or one a client cannot send (RFC 6750's characters:
    /// letters, digits, `-._~+/`, then any `=`), is refused when the server is
    /// built: [`McpServer::try_router`] and [`McpServer::serve_http`] fail with
    /// [`McpConfigError`], and [`McpServer::router`] answers every request 500.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// The largest request body accepted, in bytes: above it the answer is 413,
    /// before parsing. The server reads on (up to 64 MiB, 30 s) and throws the
    /// rest away, then answers and closes the connection, so a client still
    /// sending its body reads the 413 instead of a reset connection.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.body_limit = Some(bytes);
        self
    }

    /// The most sessions (2025-11-25 and older clients) alive at once (default
    /// 1,024, at least 1). A client that opens one more gets 503 with
    /// `Retry-After` until one ends: closed by its client, or idle for
    /// [`session_idle_timeout`](Self::session_idle_timeout).
    #[must_use]
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = Some(n.max(1));
        self
    }

    /// How long a session may go without a request before the server closes
    /// it (default 5 minutes): what a client that went away without closing
    /// its session costs.
    #[must_use]
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = Some(idle);
        self
    }

    /// Publish OAuth 2.0 protected-resource metadata (RFC 9728) for a server
    /// behind a bearer token, as the MCP authorization spec asks:
    /// [`McpServer::serve_http`] serves it at
    /// `/.well-known/oauth-protected-resource` (and at that path followed by
    /// the resource's path, `/mcp`); mount [`McpServer::well_known`] at your
    /// app's root when you nest [`McpServer::router`] yourself. Every 401 names
    /// it in `WWW-Authenticate: Bearer resource_metadata="…"`.
    #[must_use]
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.resource = Some(resource);
        self
    }

    /// The token, checked.
    fn checked_bearer(&self) -> Result<Option<&str>, McpConfigError> {
        match self.bearer.as_deref() {
            None => Ok(None),
            Some(t) if t.trim().is_empty() => Err(McpConfigError::EmptyBearerToken),
            Some(t) if !valid_token(t) => Err(McpConfigError::InvalidBearerToken),
            Some(t) => Ok(Some(t)),
        }
    }

    fn host_ok(&self, host: &str) -> bool {
        // A malformed value is refused whatever the list says.
        let Some((name, port)) = parse_host(host) else {
            return false;
        };
        let ok = |entry: &str| {
            let (e_name, e_port) = split_host(entry);
            e_name.eq_ignore_ascii_case(name) && (e_port.is_none() || e_port == port)
        };
        match &self.hosts {
            Some(list) => list.iter().any(|e| ok(e)),
            None => LOOPBACK_HOSTS.iter().any(|e| ok(e)),
        }
    }

    fn origin_ok(&self, origin: &str) -> bool {
        let ok = |entry: &str| match entry.strip_suffix(":*") {
            Some(base) => origin
                .strip_prefix(base)
                .is_some_and(|rest| rest.is_empty() || port_suffix(rest)),
            None => entry.eq_ignore_ascii_case(origin),
        };
        match &self.origins {
            Some(list) => list.iter().any(|e| ok(e)),
            None => ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .iter()
                .any(|e| ok(e)),
        }
    }
}

fn port_suffix(rest: &str) -> bool {
    rest.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, message).into_response()
}

async fn check_host_origin(
    State(opts): State<Arc<HttpOptions>>,
    req: Request,
    next: Next,
) -> Response {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h.to_str().ok().map(str::to_owned),
        // Two Host headers: which one a proxy saw is anyone's guess.
        (Some(_), Some(_)) => None,
        (None, _) => req.uri().authority().map(|a| a.as_str().to_owned()),
    };
    // An absolute-form target must name the same authority as the Host header.
    if let (Some(h), Some(a)) = (&host, req.uri().authority())
        && !a.as_str().eq_ignore_ascii_case(h)
    {
        return refuse(StatusCode::FORBIDDEN, "Host not allowed");
    }
    match host {
        Some(h) if opts.host_ok(&h) => {}
        _ => return refuse(StatusCode::FORBIDDEN, "Host not allowed"),
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        match origin.to_str() {
            Ok(o) if opts.origin_ok(o) => {}
            _ => return refuse(StatusCode::FORBIDDEN, "Origin not allowed"),
        }
    }
    next.run(req).await
}

/// What the bearer layer knows: the token and its 401 challenge.
struct Bearer {
    token: String,
    /// `Bearer` or `Bearer resource_metadata="…"`.
    challenge: HeaderValue,
    /// The challenge for a request that sent a token, with `error="invalid_token"`.
    invalid: HeaderValue,
}

impl Bearer {
    fn new(token: &str, resource: Option<&ProtectedResource>) -> Self {
        let (challenge, invalid) = match resource {
            Some(r) => {
                let meta = format!("resource_metadata=\"{}\"", r.metadata_url());
                (
                    format!("Bearer {meta}"),
                    format!("Bearer error=\"invalid_token\", {meta}"),
                )
            }
            None => (
                "Bearer".to_owned(),
                "Bearer error=\"invalid_token\"".to_owned(),
            ),
        };
        let header = |s: String| {
            HeaderValue::from_str(&s).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
        };
        Bearer {
            token: token.to_owned(),
            challenge: header(challenge),
            invalid: header(invalid),
        }
    }
}

/// The token of an `Authorization: <scheme> <token>` value whose scheme is
/// `Bearer` in any case (RFC 7235: `auth-scheme 1*SP token68`).
fn bearer_of(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start_matches(' ').trim_end_matches([' ', '\t']);
    (!token.is_empty()).then_some(token)
}

async fn check_bearer(State(bearer): State<Arc<Bearer>>, req: Request, next: Next) -> Response {
    let sent = req.headers().get(header::AUTHORIZATION);
    let given = sent.and_then(|h| h.to_str().ok()).and_then(bearer_of);
    // Constant time in the token's content (the length may show).
    let same: bool = given
        .unwrap_or("")
        .as_bytes()
        .ct_eq(bearer.token.as_bytes())
        .into();
    if same && given.is_some() {
        return next.run(req).await;
    }
    let mut r = refuse(StatusCode::UNAUTHORIZED, "A valid bearer token is required");
    let challenge = if sent.is_some() {
        bearer.invalid.clone()
    } else {
        bearer.challenge.clone()
    };
    r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    r
}

/// A 413 that closes the connection.
fn too_large() -> Response {
    let mut r = refuse(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large");
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// Read (and drop) what is left of `body`, up to [`DRAIN_BYTES`] more bytes
/// and [`DRAIN_TIME`], so a client still sending reads the status that follows.
async fn drain(mut body: axum::body::BodyDataStream, mut read: u64) {
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while read < DRAIN_BYTES {
            match body.next().await {
                Some(Ok(chunk)) => read += chunk.len() as u64,
                _ => return,
            }
        }
    })
    .await;
}

/// Bodies over `limit` are a readable 413 (Content-Length or chunked alike):
/// the body is read on and thrown away before the answer, then the connection
/// closes. A body within the limit goes on as it came, in one piece.
async fn check_length(State(limit): State<usize>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let expects_continue = req
        .headers()
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if declared.is_some_and(|n| n > limit as u64) {
        // A client waiting for `100 Continue` has sent nothing: answer now.
        if !expects_continue {
            drain(req.into_body().into_data_stream(), 0).await;
        }
        return too_large();
    }
    if declared.is_some() || req.method() == http::Method::GET {
        return next.run(req).await;
    }
    // No length given (chunked): read up to the limit, then decide.
    let (parts, body) = req.into_parts();
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return refuse(
                StatusCode::BAD_REQUEST,
                "The request body could not be read",
            );
        };
        if buf.len() + chunk.len() > limit {
            drain(stream, (buf.len() + chunk.len()) as u64).await;
            return too_large();
        }
        buf.extend_from_slice(&chunk);
    }
    next.run(Request::from_parts(parts, Body::from(Bytes::from(buf))))
        .await
}

/// A session closed by `DELETE` is `204 No Content` (rmcp answers `202`, which
/// the official Python SDK reports as "Session termination failed" for every
/// session it closes; it and the TypeScript SDK both take a 2xx).
async fn deleted_is_no_content(req: Request, next: Next) -> Response {
    let delete = req.method() == http::Method::DELETE;
    let mut res = next.run(req).await;
    if delete && res.status() == StatusCode::ACCEPTED {
        *res.status_mut() = StatusCode::NO_CONTENT;
        *res.body_mut() = Body::empty();
        res.headers_mut().remove(header::CONTENT_LENGTH);
        res.headers_mut().remove(header::CONTENT_TYPE);
    }
    res
}

/// The session of one request to rmcp's service (every request of a
/// 2025-11-25 session, or one stateless request), counted among the router's
/// live ones while it lives; the `tools/call` fast path makes its sessions here
/// too.
pub(crate) fn counted_session(server: &McpServer, live: &Arc<AtomicUsize>) -> super::McpSession {
    let mut session = server.session();
    live.fetch_add(1, Ordering::AcqRel);
    session.slot = Some(SessionSlot(Arc::clone(live)));
    session
}

/// The live sessions of one router, and its cap.
pub(crate) struct Sessions {
    live: Arc<AtomicUsize>,
    max: usize,
}

/// Counts one live session while it lives.
pub(crate) struct SessionSlot(Arc<AtomicUsize>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether a request opens a session: a POST without `Mcp-Session-Id` whose
/// body is an `initialize` request.
fn opens_session(req: &Request) -> bool {
    req.method() == http::Method::POST && !req.headers().contains_key("mcp-session-id")
}

/// At the cap, a request that would open one more session gets 503 with
/// `Retry-After`; every other request (of a live session, or not opening one)
/// goes on.
async fn check_sessions(
    State(sessions): State<Arc<Sessions>>,
    req: Request,
    next: Next,
) -> Response {
    if sessions.live.load(Ordering::Acquire) < sessions.max || !opens_session(&req) {
        return next.run(req).await;
    }
    // At the cap: only an `initialize` opens a session (the body is in memory:
    // the length layer ran first).
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let initialize = serde_json::from_slice::<Method<'_>>(&bytes)
        .is_ok_and(|m| m.method.as_deref() == Some("initialize"));
    if initialize {
        let mut r = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many MCP sessions: try again later",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER));
        return r;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// OAuth 2.0 protected-resource metadata (RFC 9728) of a server behind a bearer
/// token: which resource it is and which authorization servers issue its
/// tokens. Give it to [`HttpOptions::protected_resource`].
///
/// ```
/// use toolmark::mcp::{HttpOptions, ProtectedResource};
///
/// let resource = ProtectedResource::new("https://notes.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes(["notes.read", "notes.write"]);
/// assert_eq!(
///     resource.metadata_url(),
///     "https://notes.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// let options = HttpOptions::new()
///     .allowed_hosts(["notes.example.com"])
///     .bearer_token("a-long-random-token")
///     .protected_resource(resource);
/// # let _ = options;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
    name: Option<String>,
    documentation: Option<String>,
}

impl ProtectedResource {
    /// The resource identifier: the server's own URL as clients reach it
    /// (`https://notes.example.com/mcp`).
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
            name: None,
            documentation: None,
        }
    }

    /// An authorization server that issues tokens for it (its issuer URL).
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes a client may ask for.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// A name people read.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A page documenting it.
    #[must_use]
    pub fn documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// Where the metadata is served: the well-known path inserted between the
    /// resource's host and its path, as RFC 9728 builds it.
    pub fn metadata_url(&self) -> String {
        let (origin, path) = self.split();
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    /// (`scheme://host[:port]`, `/path` or `""`).
    fn split(&self) -> (&str, &str) {
        let r = self.resource.trim_end_matches('/');
        let after_scheme = r.find("://").map_or(0, |i| i + 3);
        match r[after_scheme..].find('/') {
            Some(i) => r.split_at(after_scheme + i),
            None => (r, ""),
        }
    }

    /// The paths the metadata is served at, on the resource's origin.
    fn paths(&self) -> Vec<String> {
        let (_, path) = self.split();
        let mut paths = vec!["/.well-known/oauth-protected-resource".to_owned()];
        if !path.is_empty() {
            paths.push(format!("/.well-known/oauth-protected-resource{path}"));
        }
        paths
    }

    fn check(&self) -> Result<(), McpConfigError> {
        let r = &self.resource;
        let loopback = ["http://localhost", "http://127.0.0.1", "http://[::1]"]
            .iter()
            .any(|p| {
                r.strip_prefix(p)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
            });
        let ok = (r.starts_with("https://") || loopback)
            && !r.contains('#')
            && r.split("://").nth(1).is_some_and(|rest| {
                rest.split('/')
                    .next()
                    .is_some_and(|host| parse_host(host).is_some())
            });
        if ok {
            Ok(())
        } else {
            Err(McpConfigError::InvalidResource {
                resource: r.clone(),
            })
        }
    }

    /// The metadata document.
    fn document(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
        });
        if !self.authorization_servers.is_empty() {
            doc["authorization_servers"] = serde_json::json!(self.authorization_servers);
        }
        if !self.scopes.is_empty() {
            doc["scopes_supported"] = serde_json::json!(self.scopes);
        }
        if let Some(n) = &self.name {
            doc["resource_name"] = serde_json::json!(n);
        }
        if let Some(d) = &self.documentation {
            doc["resource_documentation"] = serde_json::json!(d);
        }
        doc
    }
}

impl McpServer {
    fn body_limit(&self) -> usize {
        self.config.http.body_limit.unwrap_or_else(|| {
            let tm_limit = match &self.config.source {
                super::Source::Shared(tm) => tm.max_input_bytes(),
                super::Source::PerSession(_) => 1 << 20,
            };
            tm_limit.saturating_add(16 * 1024)
        })
    }

    /// An axum `Router` serving MCP over Streamable HTTP at its root: nest it
    /// where you want it (`app.nest_service("/mcp", server.router())`). Each
    /// check of [`HttpOptions`] is a tower layer; add your own with
    /// `.layer(…)`.
    ///
    /// Behind the checks, rmcp's `StreamableHttpService` serves every request,
    /// except two kinds of self-contained 2026-07-28 request of a server over
    /// one [`Toolmark`](crate::Toolmark) ([`McpServer::new`]), answered with
    /// the same bytes from less work: the first page of `tools/list` (kept
    /// serialized per manifest version) and a `tools/call` whose answer is one
    /// JSON message (no progress token or log level, not a task), which runs
    /// through the same session handler without starting rmcp's per-request
    /// service.
    ///
    /// A configuration [`try_router`](Self::try_router) refuses (an empty
    /// bearer token, say) gives a router that answers every request 500, never
    /// an open one.
    pub fn router(&self) -> Router {
        self.try_router().unwrap_or_else(|e| {
            tracing::error!(target: "toolmark::mcp", code = e.code(), "{e}");
            Router::new().fallback(|| async {
                refuse(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The MCP server is misconfigured (see its log)",
                )
            })
        })
    }

    /// [`router`](Self::router), or why its configuration is refused
    /// ([`McpConfigError`]: an empty or unusable bearer token, a protected
    /// resource that is not a URL).
    pub fn try_router(&self) -> Result<Router, McpConfigError> {
        let opts = Arc::new(self.config.http.clone());
        let bearer = opts.checked_bearer()?;
        if let Some(r) = &opts.resource {
            r.check()?;
        }
        let limit = self.body_limit();
        let sessions = Arc::new(Sessions {
            live: Arc::clone(&self.config.live_sessions),
            max: opts.max_sessions.unwrap_or(MAX_SESSIONS),
        });
        let server = self.clone();
        let live = Arc::clone(&sessions.live);
        let fast_call = super::fastcall::FastCall::new(self.clone(), Arc::clone(&live));
        // Host and Origin are checked by the layers below, once.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(limit)
            // 2026-07-28 requests: a plain JSON reply when the call sends no
            // notification (progress, log), SSE only when it does.
            .with_json_response(true);
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(opts.idle.unwrap_or(IDLE));
        let service = StreamableHttpService::new(
            move || Ok(counted_session(&server, &live)),
            Arc::new(manager),
            config,
        );
        let mut router = Router::new().fallback_service(service);
        if let Some(catalog) = &self.config.shared_catalog {
            // 2026-07-28 tools/list from the page serialized per manifest version.
            let fast = super::fastlist::FastList::new(
                Arc::clone(catalog),
                self.config.elicitation.clone(),
                self.config.page_size,
                self.config.list_ttl_ms,
                limit,
            );
            router = router.layer(from_fn_with_state(Arc::new(fast), super::fastlist::serve));
        }
        let mut router = router.layer(from_fn_with_state(
            super::quiet::schema_of(self),
            super::quiet::hide_http,
        ));
        if self.config.shared_catalog.is_some() {
            // 2026-07-28 tools/call without rmcp's per-request service; in front
            // of the arguments layer, so its body is parsed once.
            router = router.layer(from_fn_with_state(
                Arc::new(fast_call),
                super::fastcall::serve,
            ));
        }
        let mut router = router
            .layer(axum::middleware::from_fn(deleted_is_no_content))
            .layer(from_fn_with_state(sessions, check_sessions))
            .layer(from_fn_with_state(limit, check_length));
        if let Some(token) = bearer {
            let bearer = Arc::new(Bearer::new(token, opts.resource.as_ref()));
            router = router.layer(from_fn_with_state(bearer, check_bearer));
        }
        Ok(router.layer(from_fn_with_state(opts, check_host_origin)))
    }

    /// The sessions (2025-11-25 and older clients) alive now on the routers of
    /// this server: at most [`HttpOptions::max_sessions`].
    pub fn live_sessions(&self) -> usize {
        self.config.live_sessions.load(Ordering::Acquire)
    }

    /// The OAuth protected-resource metadata routes
    /// ([`HttpOptions::protected_resource`]) to merge at the root of your app
    /// (`app.merge(server.well_known())`); empty when none is set.
    /// [`serve_http`](Self::serve_http) mounts them itself.
    pub fn well_known(&self) -> Router {
        let opts = Arc::new(self.config.http.clone());
        let Some(resource) = &opts.resource else {
            return Router::new();
        };
        let doc = Arc::new(resource.document().to_string());
        let mut router = Router::new();
        for path in resource.paths() {
            let doc = Arc::clone(&doc);
            router = router.route(
                &path,
                axum::routing::get(move || {
                    let doc = Arc::clone(&doc);
                    async move {
                        (
                            [(header::CONTENT_TYPE, "application/json")],
                            doc.as_str().to_owned(),
                        )
                    }
                }),
            );
        }
        router.layer(from_fn_with_state(opts, check_host_origin))
    }

    /// Serve MCP over Streamable HTTP at `http://{addr}/mcp` until the process
    /// ends. Bind a loopback address (`127.0.0.1:PORT`) unless the server is
    /// meant to be reached from elsewhere, and then set
    /// [`HttpOptions::allowed_hosts`] and a bearer token. Fails at once with a
    /// refused configuration (an [`McpConfigError`] inside the `io::Error`).
    pub async fn serve_http(&self, addr: SocketAddr) -> std::io::Result<()> {
        let router = self.try_router().map_err(std::io::Error::other)?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_router(listener, router).await
    }

    /// [`serve_http`](Self::serve_http) on a listener you bound (e.g. port 0).
    pub async fn serve_listener(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let router = self.try_router().map_err(std::io::Error::other)?;
        self.serve_router(listener, router).await
    }

    async fn serve_router(
        &self,
        listener: tokio::net::TcpListener,
        router: Router,
    ) -> std::io::Result<()> {
        let app = Router::new()
            .nest_service("/mcp", router)
            .merge(self.well_known());
        axum::serve(listener, app).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins() {
        let d = HttpOptions::new();
        for ok in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:3000"] {
            assert!(d.host_ok(ok), "{ok}");
        }
        for bad in ["evil.com", "evil.com:80", "127.0.0.2", "localhost.evil.com"] {
            assert!(!d.host_ok(bad), "{bad}");
        }
        assert!(d.origin_ok("http://localhost:5173"));
        assert!(d.origin_ok("http://127.0.0.1"));
        for bad in [
            "https://evil.com",
            "http://localhost.evil.com",
            "http://localhost:80x",
            "null",
        ] {
            assert!(!d.origin_ok(bad), "{bad}");
        }
        let o = HttpOptions::new()
            .allowed_hosts(["app.example.com:8443"])
            .allowed_origins(["https://app.example.com"]);
        assert!(o.host_ok("app.example.com:8443"));
        assert!(!o.host_ok("app.example.com:8444"));
        assert!(!o.host_ok("localhost"));
        assert!(o.origin_ok("https://app.example.com"));
        assert!(!o.origin_ok("https://app.example.com:444"));
    }

    /// A malformed `Host` is refused whatever the allowed list says, including
    /// values that start or end like an allowed one.
    #[test]
    fn malformed_hosts_are_refused() {
        let d = HttpOptions::new();
        let wide = HttpOptions::new().allowed_hosts(["localhost", "[::1]", "evil", "host"]);
        for bad in [
            "[::1]evil",
            "[::1]:80evil",
            "[::1]x:80",
            "[::1",
            "[evil]",
            "[::1]:",
            "host@evil",
            "localhost@evil.com",
            "user:pw@localhost",
            "localhost:80@evil",
            "localhost:",
            "localhost:0x50",
            "localhost:99999",
            "localhost:123456",
            "localhost:80:80",
            "local host",
            "localhost/evil",
            "localhost\\evil",
            "localhost%2eevil",
            "%6cocalhost",
            "localhost#x",
            "localhost?x",
            "",
            ":80",
            "127.0.0.1:80 ",
        ] {
            assert!(!d.host_ok(bad), "default allowed {bad:?}");
            assert!(!wide.host_ok(bad), "wide list allowed {bad:?}");
        }
        for ok in ["localhost:65535", "[::1]", "[::1]:8080", "LOCALHOST:1"] {
            assert!(wide.host_ok(ok), "{ok}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_needs_a_token() {
        for ok in [
            "Bearer abc",
            "bearer abc",
            "BEARER abc",
            "BeArEr  abc",
            "Bearer abc ",
        ] {
            assert_eq!(bearer_of(ok), Some("abc"), "{ok:?}");
        }
        for bad in [
            "Bearer",
            "Bearer ",
            "Basic abc",
            "Bearerabc",
            "Token abc",
            "abc",
        ] {
            assert_eq!(bearer_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn empty_and_unsendable_tokens_are_refused_with_a_code() {
        let check = |t: &str| {
            HttpOptions::new()
                .bearer_token(t)
                .checked_bearer()
                .map(|_| ())
        };
        assert_eq!(check(""), Err(McpConfigError::EmptyBearerToken));
        assert_eq!(check("   "), Err(McpConfigError::EmptyBearerToken));
        assert_eq!(check("==="), Err(McpConfigError::InvalidBearerToken));
        assert_eq!(check("two words"), Err(McpConfigError::InvalidBearerToken));
        assert_eq!(
            check("line\nbreak"),
            Err(McpConfigError::InvalidBearerToken)
        );
        assert_eq!(check("tok=en"), Err(McpConfigError::InvalidBearerToken));
        assert_eq!(check("abc-._~+/XYZ09=="), Ok(()));
        assert_eq!(
            McpConfigError::EmptyBearerToken.code(),
            "empty_bearer_token"
        );
        assert_eq!(
            McpConfigError::InvalidBearerToken.code(),
            "invalid_bearer_token"
        );
    }

    #[test]
    fn protected_resource_metadata_lives_beside_the_resource() {
        let r = ProtectedResource::new("https://api.example.com/mcp");
        assert_eq!(
            r.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r.paths(),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
        let root = ProtectedResource::new("https://api.example.com:8443");
        assert_eq!(
            root.metadata_url(),
            "https://api.example.com:8443/.well-known/oauth-protected-resource"
        );
        assert!(r.check().is_ok());
        assert!(ProtectedResource::new("http://127.0.0.1:3000/mcp")
            .check()
            .is_ok());
        for bad in [
            "http://api.example.com/mcp",
            "api.example.com/mcp",
            "https://api.example.com/mcp#x",
            "https://user@api.example.com/mcp",
            "https:///mcp",
            "http://localhost.evil.com/mcp",
        ] {
            let e = ProtectedResource::new(bad).check().unwrap_err();
            assert_eq!(e.code(), "invalid_resource", "{bad}");
        }
    }
}
