//! Streamable HTTP: rmcp's `StreamableHttpService` in an axum `Router`, behind
//! tower layers that check `Host`, `Origin`, a bearer token and the body size.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::{header, HeaderValue, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;

use super::McpServer;

/// The HTTP checks of [`McpServer::router`] and [`McpServer::serve_http`].
///
/// Defaults: only loopback `Host`s (`localhost`, `127.0.0.1`, `[::1]`, any port);
/// a request with an `Origin` header only from a loopback origin (a browser page
/// elsewhere gets 403: the DNS-rebinding guard of the MCP security guidance); no
/// bearer token; bodies up to the Toolmark's `max_input_bytes` plus 16 KiB for
/// the JSON-RPC envelope.
#[derive(Clone, Default)]
pub struct HttpOptions {
    hosts: Option<Vec<String>>,
    origins: Option<Vec<String>>,
    bearer: Option<String>,
    body_limit: Option<usize>,
}

impl std::fmt::Debug for HttpOptions {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("bearer", &self.bearer.as_ref().map(|_| "<set>"))
            .field("body_limit", &self.body_limit)
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

    /// Require `Authorization: Bearer <token>` (compared in constant time);
    /// anything else is 401.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// The largest request body accepted, in bytes (413 above it, before parsing).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.body_limit = Some(bytes);
        self
    }

    fn host_ok(&self, host: &str) -> bool {
        let (name, port) = split_host(host);
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

/// `"host:port"` → (`host`, `Some(port)`); `"[::1]:80"` → (`[::1]`, `Some("80")`).
fn split_host(s: &str) -> (&str, Option<&str>) {
    if s.starts_with('[') {
        return match s.find(']') {
            Some(i) => (&s[..=i], s[i + 1..].strip_prefix(':')),
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, message).into_response()
}

async fn check_host_origin(
    State(opts): State<Arc<HttpOptions>>,
    req: Request,
    next: Next,
) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
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

async fn check_bearer(State(token): State<Arc<String>>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("");
    // Constant time in the token's content (the length may show).
    let same: bool = given.as_bytes().ct_eq(token.as_bytes()).into();
    if same {
        return next.run(req).await;
    }
    let mut r = refuse(StatusCode::UNAUTHORIZED, "A valid bearer token is required");
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

async fn check_length(State(limit): State<usize>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large");
    }
    next.run(req).await
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
    pub fn router(&self) -> Router {
        let limit = self.body_limit();
        let server = self.clone();
        // Host and Origin are checked by the layers below, once.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(limit)
            // 2026-07-28 requests: a plain JSON reply when the call sends no
            // notification (progress, log), SSE only when it does.
            .with_json_response(true);
        let service = StreamableHttpService::new(
            move || Ok(server.session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let opts = Arc::new(self.config.http.clone());
        let mut router = Router::new().fallback_service(service);
        if let Some(catalog) = &self.config.shared_catalog {
            // 2026-07-28 tools/list from the page serialized per manifest version.
            let fast = super::fastlist::FastList::new(
                Arc::clone(catalog),
                self.config.page_size,
                self.config.list_ttl_ms,
                limit,
            );
            router = router.layer(from_fn_with_state(Arc::new(fast), super::fastlist::serve));
        }
        router = router.layer(from_fn_with_state(limit, check_length));
        if let Some(token) = &opts.bearer {
            router = router.layer(from_fn_with_state(Arc::new(token.clone()), check_bearer));
        }
        router.layer(from_fn_with_state(opts, check_host_origin))
    }

    /// Serve MCP over Streamable HTTP at `http://{addr}/mcp` until the process
    /// ends. Bind a loopback address (`127.0.0.1:PORT`) unless the server is
    /// meant to be reached from elsewhere, and then set
    /// [`HttpOptions::allowed_hosts`] and a bearer token.
    pub async fn serve_http(&self, addr: SocketAddr) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_listener(listener).await
    }

    /// [`serve_http`](Self::serve_http) on a listener you bound (e.g. port 0).
    pub async fn serve_listener(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let app = Router::new().nest_service("/mcp", self.router());
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
}
