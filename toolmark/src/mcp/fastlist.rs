//! A 2026-07-28 `tools/list` over HTTP from bytes kept per manifest version.
//!
//! A stateless request carries everything it needs, so a well-formed first-page
//! `tools/list` (the `Mcp-Method` header says so, the body agrees, its `_meta`
//! names 2026-07-28 with the client's info and capabilities) is answered here
//! from the page serialized once per manifest version, with only the JSON-RPC
//! id written around it: the same bytes rmcp's path would send. Anything else
//! (another method, a cursor, a malformed or older request) goes on to rmcp
//! untouched.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, Method, StatusCode};
use rmcp::model::{ListToolsResult, ProtocolVersion, ResultType};
use serde::Deserialize;
use serde_json::Value;

use super::list::Catalog;
use super::Elicitation;
use crate::sync::lock;

/// The first page of tools/list, serialized, for one manifest version: one for
/// clients that answer elicitations (they also see the guarded tools the server
/// confirms by asking them), one for those that do not.
pub(crate) struct FastList {
    catalog: Arc<Catalog>,
    policy: Option<Elicitation>,
    page_size: usize,
    ttl_ms: u64,
    limit: usize,
    pages: Mutex<[Option<(u64, Bytes)>; 2]>,
}

impl FastList {
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        policy: Option<Elicitation>,
        page_size: usize,
        ttl_ms: u64,
        limit: usize,
    ) -> Self {
        FastList {
            catalog,
            policy,
            page_size,
            ttl_ms,
            limit,
            pages: Mutex::new([None, None]),
        }
    }

    /// The serialized `result` of the first page for a client that answers
    /// elicitations (`elicits`) or not, rebuilt only when the manifest version
    /// moved.
    fn page(&self, elicits: bool) -> Option<Bytes> {
        let listing = self.catalog.listing(self.policy.as_ref());
        let slot = usize::from(elicits);
        if let Some((v, bytes)) = &lock(&self.pages)[slot]
            && *v == listing.version
        {
            return Some(bytes.clone());
        }
        let tools = listing.for_client(elicits);
        let end = self.page_size.min(tools.len());
        let page = tools[..end].iter().map(|t| t.tool.clone()).collect();
        let mut result = ListToolsResult::with_all_items(page);
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        result.result_type = Some(ResultType::COMPLETE);
        super::stateless::cache_hints(&mut result, self.ttl_ms);
        let bytes = Bytes::from(serde_json::to_vec(&result).ok()?);
        lock(&self.pages)[slot] = Some((listing.version, bytes.clone()));
        Some(bytes)
    }
}

#[derive(Deserialize)]
struct Message {
    jsonrpc: String,
    id: Value,
    method: String,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    cursor: Option<Value>,
    #[serde(rename = "_meta", default)]
    meta: Option<serde_json::Map<String, Value>>,
}

pub(super) fn header_is(req: &Request, name: &str, value: &str) -> bool {
    let mut values = req.headers().get_all(name).iter();
    matches!((values.next(), values.next()), (Some(v), None) if v.as_bytes() == value.as_bytes())
}

pub(super) fn accepts_both(req: &Request) -> bool {
    let accept = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect::<Vec<_>>();
    accept.iter().any(|a| a == "application/json")
        && accept.iter().any(|a| a == "text/event-stream")
}

pub(super) fn is_json(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// Whether `m` is a first-page tools/list this path answers exactly as rmcp.
fn fast(m: &Message) -> bool {
    let modern = ProtocolVersion::V_2026_07_28;
    let Some(params) = &m.params else {
        return false;
    };
    let Some(meta) = &params.meta else {
        return false;
    };
    m.jsonrpc == "2.0"
        && m.method == "tools/list"
        && (m.id.is_string() || m.id.is_i64() || m.id.is_u64())
        && params.cursor.is_none()
        && meta.get("io.modelcontextprotocol/protocolVersion")
            == Some(&Value::from(modern.as_str()))
        && meta
            .get("io.modelcontextprotocol/clientInfo")
            .is_some_and(|i| {
                i.get("name").is_some_and(Value::is_string)
                    && i.get("version").is_some_and(Value::is_string)
            })
        && meta
            .get("io.modelcontextprotocol/clientCapabilities")
            .is_some_and(Value::is_object)
}

/// Whether the request's `_meta` declares the client answers elicitations.
fn elicits(m: &Message) -> bool {
    m.params
        .as_ref()
        .and_then(|p| p.meta.as_ref())
        .and_then(|meta| meta.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|caps| caps.get("elicitation"))
        .is_some_and(Value::is_object)
}

/// The layer: answer a first-page 2026-07-28 tools/list from the cached page.
pub(crate) async fn serve(State(list): State<Arc<FastList>>, req: Request, next: Next) -> Response {
    let version = ProtocolVersion::V_2026_07_28;
    if req.method() != Method::POST
        || !header_is(&req, "mcp-method", "tools/list")
        || !header_is(&req, "mcp-protocol-version", version.as_str())
        || req.headers().contains_key("mcp-name")
        || !accepts_both(&req)
        || !is_json(&req)
    {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, list.limit).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "Request body too large").into_response();
    };
    let page = match serde_json::from_slice::<Message>(&bytes) {
        Ok(m) if fast(&m) => list.page(elicits(&m)).map(|p| (m.id, p)),
        _ => None,
    };
    let Some((id, page)) = page else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let head = Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#));
    let tail = Bytes::from_static(b"}");
    let len = head.len() + page.len() + tail.len();
    let chunks = [head, page, tail].map(Ok::<Bytes, std::convert::Infallible>);
    let mut res = Response::new(Body::from_stream(futures_util::stream::iter(chunks)));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    res
}
