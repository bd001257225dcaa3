//! A 2026-07-28 `tools/call` over HTTP without rmcp's per-request service.
//!
//! rmcp's `StreamableHttpService` answers a stateless request by starting a
//! whole service for it: a peer with its channels, a serve loop task, a
//! one-shot transport, a task for the handler and the answer sent back through
//! them. A stateless request needs none of that when its handler sends nothing
//! but its answer. This layer takes such a `tools/call` (see [`FastCall::takes`]),
//! parses its body once (rmcp's own message type, as rmcp parses it), makes the
//! request's session exactly as rmcp's service factory does, and hands the
//! request to rmcp's own dispatch of the session (`Service::handle_request`:
//! the version check, the per-request `_meta` rules, the session's `call_tool`,
//! the 2026-07-28 result hints) with the context rmcp would give it. The
//! answer is serialized as rmcp serializes it. So every rule of the call (the
//! one call pipeline, confirmation by MRTR, the elicitation policy, the outcome
//! path and its redaction) is the one the slow path runs: nothing is decided
//! here but whether to take the request.
//!
//! Anything else (another method, a request whose headers rmcp would refuse or
//! check further, a progress token or log level that streams notifications, a
//! task, an unknown tool) goes on to rmcp's service untouched.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientJsonRpcMessage, ClientRequest, ErrorCode,
    GetExtensions, GetMeta, Implementation, InitializeRequestParams, JsonRpcMessage,
    ProtocolVersion, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::{
    serve_directly_with_ct, Peer, RequestContext, RunningService, RxJsonRpcMessage, Service,
    TxJsonRpcMessage,
};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::fastlist::{accepts_both, header_is, is_json};
use super::list::McpTool;
use super::McpServer;

/// The `tools/call` fast path of one router.
pub(crate) struct FastCall {
    server: McpServer,
    live: Arc<AtomicUsize>,
    /// Ends the peer's service with the router (dropped before `peer`).
    _stop: DropGuard,
    stop_token: CancellationToken,
    /// The peer every call taken here sees, made on the first one (a runtime
    /// is needed): what rmcp gives a stateless 2026-07-28 request.
    peer: OnceLock<RunningService<RoleServer, Idle>>,
}

impl FastCall {
    pub(crate) fn new(server: McpServer, live: Arc<AtomicUsize>) -> Self {
        let stop_token = CancellationToken::new();
        FastCall {
            server,
            live,
            _stop: stop_token.clone().drop_guard(),
            stop_token,
            peer: OnceLock::new(),
        }
    }

    /// The peer rmcp's service makes for a stateless request whose
    /// `MCP-Protocol-Version` header is 2026-07-28: no handshake, default
    /// client information and capabilities (the request's own are in its
    /// `_meta`), the header's version.
    ///
    /// rmcp makes one per request; one serves every request here because a
    /// request taken here never uses it to send anything (it is the context's
    /// required handle: server-to-client requests are refused on 2026-07-28,
    /// and a request whose handler would notify is not taken).
    fn peer(&self) -> Peer<RoleServer> {
        self.peer
            .get_or_init(|| {
                let mut info = InitializeRequestParams::new(
                    ClientCapabilities::default(),
                    Implementation::default(),
                );
                info.protocol_version = ProtocolVersion::V_2026_07_28;
                serve_directly_with_ct(Idle, Silent, Some(info), self.stop_token.child_token())
            })
            .peer()
            .clone()
    }

    /// Whether this path takes the request: a well-formed 2026-07-28
    /// `tools/call` that rmcp's service would hand to the session as it is
    /// (every header check it makes passes trivially), whose answer is one
    /// JSON message (nothing streams), of a known tool, not run as a task.
    fn takes(
        &self,
        headers: &HeaderMap,
        call: &CallToolRequestParams,
        meta: &RequestMetaObject,
    ) -> bool {
        // The Mcp-Name header (one, unencoded: see `headers_ok`) is the body's.
        if mcp_name(headers) != Some(call.name.as_ref()) {
            return false;
        }
        // Self-contained, with no progress token or log level (both make the
        // call stream notifications before its answer).
        if !self_contained(&self.server.config, meta)
            || meta.get_progress_token().is_some()
            || meta.log_level().is_some()
        {
            return false;
        }
        // A tool the session knows, whose schema asks for no Mcp-Param-*
        // header (rmcp checks those against the body).
        let Some(catalog) = &self.server.config.shared_catalog else {
            return false;
        };
        let Some(entry) = catalog.tm.inner.lookup(&call.name) else {
            return false;
        };
        !names_param_headers(McpTool::of(&entry).tool.input_schema.get("properties"))
    }
}

/// Whether a `tools/call`'s `_meta` makes it a self-contained 2026-07-28
/// request: it names 2026-07-28 and is complete, and the call is not a task
/// (answered by the tasks path and its store). Shared by the HTTP and the
/// stdio fronts.
pub(crate) fn self_contained(config: &super::Config, meta: &RequestMetaObject) -> bool {
    let modern = ProtocolVersion::V_2026_07_28;
    meta.protocol_version().as_ref() == Some(&modern)
        && meta.missing_required_keys(&modern).is_empty()
        && !(config.tasks.is_some()
            && meta
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks()))
}

/// The request's one `Mcp-Name` value, if it is plain text (not the
/// `=?base64?…?=` form rmcp decodes).
fn mcp_name(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all("mcp-name").iter();
    match (values.next(), values.next()) {
        (Some(v), None) => v.to_str().ok().filter(|v| !v.starts_with("=?")),
        _ => None,
    }
}

/// What the headers alone tell, before the body is read: a 2026-07-28
/// `tools/call` POST of JSON (accepting JSON and SSE answers, as rmcp wants),
/// with one plain `Mcp-Name`, no `Mcp-Param-*` header for rmcp to check
/// against the body, and no session header.
fn headers_ok(req: &Request) -> bool {
    let headers = req.headers();
    req.method() == Method::POST
        && header_is(req, "mcp-method", "tools/call")
        && header_is(
            req,
            "mcp-protocol-version",
            ProtocolVersion::V_2026_07_28.as_str(),
        )
        && mcp_name(headers).is_some()
        && !headers.contains_key("mcp-session-id")
        && !headers.keys().any(|k| k.as_str().starts_with("mcp-param-"))
        && accepts_both(req)
        && is_json(req)
}

/// Whether a schema's `properties` have an `x-mcp-header` annotation, along
/// nested `properties` chains too (where rmcp looks for them).
fn names_param_headers(properties: Option<&Value>) -> bool {
    let Some(Value::Object(properties)) = properties else {
        return false;
    };
    properties
        .values()
        .any(|p| p.get("x-mcp-header").is_some() || names_param_headers(p.get("properties")))
}

/// The idle service behind the shared peer: it is never sent a request.
#[derive(Clone, Copy)]
pub(crate) struct Idle;

impl ServerHandler for Idle {}

/// The shared peer's transport: nothing comes in, and nothing is sent on it
/// (see [`FastCall::peer`]); what would be is dropped.
struct Silent;

impl rmcp::transport::Transport<RoleServer> for Silent {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Ok(()))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        std::future::pending().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The HTTP status rmcp's stateless path gives a JSON-RPC error of a request
/// whose `_meta` is well-formed and whose headers agree with the body (its
/// private `jsonrpc_http_status`, for the requests this path takes).
fn error_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The layer: a 2026-07-28 `tools/call` this path takes is answered here.
pub(crate) async fn serve(State(fast): State<Arc<FastCall>>, req: Request, next: Next) -> Response {
    if !headers_ok(&req) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // The length layer ran first: the body is bounded.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        // What the arguments layer behind answers.
        return (
            StatusCode::BAD_REQUEST,
            "The request body could not be read",
        )
            .into_response();
    };
    let pass = |parts, bytes: Bytes| next.run(Request::from_parts(parts, Body::from(bytes)));
    let Ok(JsonRpcMessage::Request(mut request)) =
        serde_json::from_slice::<ClientJsonRpcMessage>(&bytes)
    else {
        return pass(parts, bytes).await;
    };
    let taken = match &request.request {
        ClientRequest::CallToolRequest(call) => {
            fast.takes(&parts.headers, &call.params, request.request.get_meta())
        }
        _ => false,
    };
    if !taken {
        return pass(parts, bytes).await;
    }
    drop(bytes);
    // From here on, what rmcp's stateless path does with the request: its
    // session from the service factory, the HTTP parts in the request's
    // extensions, `_meta` and extensions moved into the context, the handler
    // in a task of its own with a token cancelled if the client goes away
    // before the answer.
    let session = super::http::counted_session(&fast.server, &fast.live);
    let id = request.id.clone();
    request.request.extensions_mut().insert(parts);
    let request_ct = CancellationToken::new();
    let mut context = RequestContext::new(id.clone(), fast.peer());
    context.ct = request_ct.child_token();
    context.meta = std::mem::take(request.request.get_meta_mut());
    context.extensions = std::mem::take(request.request.extensions_mut());
    let call = request.request;
    let disconnect = request_ct.clone().drop_guard();
    // Boxed: the task moves a pointer, not the handler's (large) future.
    let handler = Box::pin(async move { Service::handle_request(&session, call, context).await });
    let handled = tokio::spawn(handler).await;
    disconnect.disarm();
    request_ct.cancel();
    let message: ServerJsonRpcMessage = match handled {
        Ok(Ok(result)) => JsonRpcMessage::response(result, id),
        Ok(Err(error)) => JsonRpcMessage::error(error, Some(id)),
        Err(e) => return internal_error("empty response", e),
    };
    let status = match &message {
        JsonRpcMessage::Error(e) => error_status(e.error.code),
        _ => StatusCode::OK,
    };
    let body = match serde_json::to_vec(&message) {
        Ok(b) => b,
        Err(e) => return internal_error("serialize json response", e),
    };
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// rmcp's answer when its own serving fails (a handler that panicked).
fn internal_error(context: &str, error: impl std::fmt::Display) -> Response {
    tracing::error!(target: "toolmark::mcp", "Internal server error when {context}: {error}");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("Encounter an error when {context}: {error}"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn param_header_annotations_are_found_where_rmcp_looks() {
        let plain = json!({"a": {"type": "integer"}});
        assert!(!names_param_headers(Some(&plain)));
        let top = json!({"region": {"type": "string", "x-mcp-header": "Region"}});
        assert!(names_param_headers(Some(&top)));
        let nested = json!({"o": {"properties": {"r": {"x-mcp-header": "R"}}}});
        assert!(names_param_headers(Some(&nested)));
        assert!(!names_param_headers(None));
    }

    #[test]
    fn error_statuses_follow_rmcp() {
        assert_eq!(error_status(ErrorCode::INVALID_PARAMS), StatusCode::OK);
        assert_eq!(error_status(ErrorCode::INTERNAL_ERROR), StatusCode::OK);
        assert_eq!(
            error_status(ErrorCode::METHOD_NOT_FOUND),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            error_status(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY),
            StatusCode::BAD_REQUEST
        );
    }
}
