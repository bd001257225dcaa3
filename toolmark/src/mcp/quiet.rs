//! Keeping a call's arguments out of rmcp's own logs.
//!
//! rmcp logs every request it receives (`rmcp::service`, DEBUG: "received
//! request", and TRACE: "new event"), a `tools/call` with its `arguments` in
//! clear. The server takes the arguments out of a `tools/call` **before rmcp
//! reads the message** and carries them beside it, in the message's (or the
//! HTTP request's) extensions, which rmcp never prints:
//!
//! - over stdio and any rmcp transport served with
//!   [`McpServer::serve_transport`](super::McpServer::serve_transport), by
//!   [`Quiet`], a transport that wraps the real one (over
//!   [`McpServer::serve_io`](super::McpServer::serve_io), what `serve_stdio`
//!   runs, it wraps rmcp's side of the front: a call the front answers itself
//!   never reaches rmcp's loop, every other message passes `Quiet`, and a line
//!   that is no message is never logged);
//! - over HTTP, by a layer of [`McpServer::router`](super::McpServer::router)
//!   that reads the body before rmcp's service does.
//!
//! `Quiet` also drops the `params` of a message rmcp reads as a custom one (a
//! method it does not know, or a `tools/call` whose `arguments` are not an
//! object): nothing reads them, and rmcp's loop would log them.
//!
//! The session's `call_tool` takes them back from there. A session served on a
//! transport some other way (`server.session().serve(t)`) still works, but rmcp
//! then logs its arguments as it received them.

use std::fmt;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientNotification, ClientRequest, JsonObject, JsonRpcMessage};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::Value;

/// The arguments of one `tools/call`, carried beside the message. Its `Debug`
/// never prints them.
#[derive(Clone)]
pub(crate) struct Hidden(pub(crate) JsonObject);

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hidden(..)")
    }
}

/// The arguments `call_tool` gets: the hidden ones when the transport or the
/// HTTP layer took them out, else those rmcp parsed.
pub(crate) fn arguments(
    parsed: Option<JsonObject>,
    context: &mut RequestContext<RoleServer>,
) -> Option<JsonObject> {
    if let Some(Hidden(args)) = context.extensions.remove::<Hidden>() {
        return Some(args);
    }
    let over_http = context
        .extensions
        .get_mut::<http::request::Parts>()
        .and_then(|parts| parts.extensions.remove::<Hidden>());
    match over_http {
        Some(Hidden(args)) => Some(args),
        None => parsed,
    }
}

/// An rmcp transport that takes the arguments out of every `tools/call` it
/// receives before the service (and its logging) sees the message. Made by
/// [`McpServer::serve_transport`](super::McpServer::serve_transport).
pub struct Quiet<T>(T);

impl<T> fmt::Debug for Quiet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Quiet(..)")
    }
}

impl<T> Quiet<T> {
    pub(crate) fn new(inner: T) -> Self {
        Quiet(inner)
    }
}

/// Move a `tools/call`'s arguments from `message` into its extensions, and
/// drop the `params` of a request or notification rmcp reads as a custom one
/// (a method it does not know, or a known one whose `params` do not fit, such
/// as a `tools/call` whose `arguments` are a string): nothing reads them (the
/// session answers a custom request "method not found" by its method alone,
/// and ignores a custom notification; their `_meta` is in the extensions),
/// and rmcp's loop would log them.
pub(crate) fn hide(message: &mut RxJsonRpcMessage<RoleServer>) {
    match message {
        JsonRpcMessage::Request(req) => match &mut req.request {
            ClientRequest::CallToolRequest(call) => {
                if let Some(args) = call.params.arguments.take() {
                    call.extensions.insert(Hidden(args));
                }
            }
            ClientRequest::CustomRequest(custom) => {
                custom.params = None;
            }
            _ => {}
        },
        JsonRpcMessage::Notification(n) => {
            if let ClientNotification::CustomNotification(custom) = &mut n.notification {
                custom.params = None;
            }
        }
        _ => {}
    }
}

impl<T> Transport<RoleServer> for Quiet<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.0.receive().await?;
        hide(&mut message);
        Some(message)
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// The input schema of the tool a `tools/call` names, as listed (for its
/// `x-mcp-header` parameters).
pub(crate) type SchemaOf = Arc<dyn Fn(&str) -> Option<Arc<JsonObject>> + Send + Sync>;

/// [`SchemaOf`] for `server`'s tools (a per-session server's: a new session's).
pub(crate) fn schema_of(server: &super::McpServer) -> SchemaOf {
    let server = server.clone();
    Arc::new(move |name| {
        let entry = match (&server.config.source, &server.config.shared_catalog) {
            (_, Some(catalog)) => catalog.tm.inner.lookup(name),
            (super::Source::Shared(tm), None) => tm.inner.lookup(name),
            (super::Source::PerSession(f), None) => f().inner.lookup(name),
        }?;
        Some(Arc::clone(
            &super::list::McpTool::of(&entry).tool.input_schema,
        ))
    })
}

/// The HTTP side: a `tools/call` body loses its `params.arguments` before
/// rmcp's service parses it; they ride in the request's extensions (which rmcp
/// hands the session as `http::request::Parts`). Other bodies pass untouched.
///
/// The one exception: the parameters the tool's schema marks `x-mcp-header`
/// (SEP-2243 `Mcp-Param-*`; never sensitive: registration refuses a sensitive
/// one) stay in the body, so rmcp checks each header against its real value
/// (a missing, extra or different header is its `-32020`).
pub(crate) async fn hide_http(
    axum::extract::State(schema_of): axum::extract::State<SchemaOf>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() != http::Method::POST {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    // The length layer ran first: the body is bounded.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return (
            http::StatusCode::BAD_REQUEST,
            "The request body could not be read",
        )
            .into_response();
    };
    let bytes = match take_arguments(&bytes, schema_of.as_ref()) {
        Some((rest, args)) => {
            parts.extensions.insert(Hidden(args));
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Bytes::from(rest)
        }
        None => bytes,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// `(the body without its arguments, the arguments)` of a `tools/call`
/// request; `None` for anything else (left to rmcp as it is). The body keeps
/// the arguments at the paths the tool's schema (`schema_of`) marks
/// What rmcp sees in place of a `tools/call`'s `arguments` that is not an object.
const HIDDEN: &str = "[hidden]";

/// `x-mcp-header`.
fn take_arguments(
    bytes: &[u8],
    schema_of: &dyn Fn(&str) -> Option<Arc<JsonObject>>,
) -> Option<(Vec<u8>, JsonObject)> {
    // Most bodies are not calls: no parse for them.
    const METHOD: &[u8] = b"tools/call";
    if !bytes.windows(METHOD.len()).any(|w| w == METHOD) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let obj = message.as_object_mut()?;
    if obj.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = obj.get_mut("params")?.as_object_mut()?;
    let args = match params.remove("arguments") {
        Some(Value::Object(args)) => args,
        // Not an object: rmcp reads the message as a custom request, answers it by
        // its method alone, and logs its params. What it logs is not the value.
        Some(_) => {
            params.insert("arguments".to_owned(), Value::String(HIDDEN.to_owned()));
            return Some((serde_json::to_vec(&message).ok()?, JsonObject::new()));
        }
        None => return None,
    };
    let headed = params
        .get("name")
        .and_then(Value::as_str)
        .and_then(schema_of)
        .map(|schema| header_paths(&schema))
        .unwrap_or_default();
    let mut kept = JsonObject::new();
    for path in &headed {
        if let Some(v) = value_at(&args, path) {
            keep_at(&mut kept, path, v.clone());
        }
    }
    if !kept.is_empty() {
        params.insert("arguments".to_owned(), Value::Object(kept));
    }
    Some((serde_json::to_vec(&message).ok()?, args))
}

/// The paths of the properties a schema marks `x-mcp-header`, along
/// `properties` chains from the root (where rmcp looks for them).
pub(crate) fn header_paths(schema: &JsonObject) -> Vec<Vec<String>> {
    fn walk(props: Option<&Value>, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        let Some(Value::Object(props)) = props else {
            return;
        };
        for (name, prop) in props {
            at.push(name.clone());
            if prop.get("x-mcp-header").is_some() {
                out.push(at.clone());
            }
            walk(prop.get("properties"), at, out);
            at.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema.get("properties"), &mut Vec::new(), &mut out);
    out
}

fn value_at<'a>(args: &'a JsonObject, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(args.get(first)?, |v, key| v.as_object()?.get(key))
}

fn keep_at(into: &mut JsonObject, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = into;
    for key in parents {
        let slot = at
            .entry(key.clone())
            .or_insert_with(|| Value::Object(JsonObject::new()));
        let Value::Object(next) = slot else {
            return;
        };
        at = next;
    }
    at.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_call_loses_its_arguments() {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "pay", "arguments": {"card": "4242"}}});
        let (rest, args) = take_arguments(call.to_string().as_bytes(), &|_| None).unwrap();
        assert_eq!(Value::Object(args), json!({"card": "4242"}));
        let rest: Value = serde_json::from_slice(&rest).unwrap();
        assert_eq!(
            rest,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "pay"}})
        );
        for other in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
                   "params": {"name": "tools/call", "arguments": {"a": "b"}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
            json!([{"method": "tools/call"}]),
        ] {
            assert!(
                take_arguments(other.to_string().as_bytes(), &|_| None).is_none(),
                "{other}"
            );
        }
        assert!(take_arguments(b"{not json tools/call", &|_| None).is_none());
    }

    #[test]
    fn a_call_keeps_only_its_header_parameters_for_rmcp_to_check() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "card": {"type": "string", "writeOnly": true},
            "where": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"},
                "note": {"type": "string"}
            }}
        }});
        let schema = Arc::new(schema.as_object().unwrap().clone());
        let lookup = |name: &str| (name == "ship").then(|| Arc::clone(&schema));
        let args = json!({"region": "eu", "card": "4242",
                          "where": {"zone": "b", "note": "by the door"}});
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "ship", "arguments": args}});
        let (rest, hidden) = take_arguments(call.to_string().as_bytes(), &lookup).unwrap();
        assert_eq!(Value::Object(hidden), args);
        let rest: Value = serde_json::from_slice(&rest).unwrap();
        assert_eq!(
            rest["params"]["arguments"],
            json!({"region": "eu", "where": {"zone": "b"}})
        );
        // Another tool, or a header parameter left out: nothing stays.
        let other = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                           "params": {"name": "pay", "arguments": args}});
        let (rest, _) = take_arguments(other.to_string().as_bytes(), &lookup).unwrap();
        let rest: Value = serde_json::from_slice(&rest).unwrap();
        assert!(rest["params"].get("arguments").is_none(), "{rest}");
        let bare = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": "ship", "arguments": {"card": "4242"}}});
        let (rest, _) = take_arguments(bare.to_string().as_bytes(), &lookup).unwrap();
        assert!(!String::from_utf8(rest).unwrap().contains("4242"));
    }

    #[test]
    fn a_custom_message_loses_its_params() {
        for raw in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "pay", "arguments": "4242", "_meta": {"k": 1}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x/y", "params": {"card": "4242"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"card": "4242"}}),
            json!({"jsonrpc": "2.0", "method": "lsp/didOpen", "params": {"card": "4242"}}),
        ] {
            let mut message: RxJsonRpcMessage<RoleServer> =
                serde_json::from_value(raw.clone()).unwrap();
            assert!(format!("{message:?}").contains("4242"), "{raw}");
            hide(&mut message);
            assert!(!format!("{message:?}").contains("4242"), "{message:?}");
        }
    }

    #[test]
    fn hidden_arguments_never_print() {
        let h = Hidden(json!({"card": "4242"}).as_object().unwrap().clone());
        assert_eq!(format!("{h:?}"), "Hidden(..)");
    }
}
