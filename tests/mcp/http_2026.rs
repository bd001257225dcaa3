//! The HTTP router on 2026-07-28 requests, as a tower service: no session, each
//! request self-contained; 405 on GET and DELETE; `Mcp-Method` and `Mcp-Name`
//! checked against the body; a plain JSON reply when the call sends no
//! notification, SSE when it does; the version-mismatch error.

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use tower::ServiceExt;

use crate::*;

fn router() -> axum::Router {
    McpServer::new(approving_app(&Log::default())).router()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn request(method: &str, name: Option<&str>, params: Value) -> axum::http::Request<Body> {
    let mut params = params;
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut b = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        b = b.header("mcp-name", n);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

async fn send(router: &axum::Router, req: axum::http::Request<Body>) -> (u16, String, String) {
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let kind = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    assert!(res.headers().get("mcp-session-id").is_none(), "no session");
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn discover_lists_both_revisions_without_a_session() {
    let (status, kind, body) = send(&router(), request("server/discover", None, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("application/json"), "{kind}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let versions = v["result"]["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert!(v["result"]["capabilities"]["tools"].is_object());
}

#[tokio::test]
async fn a_call_without_notifications_is_plain_json_and_one_with_progress_is_sse() {
    let r = router();
    let (status, kind, body) = send(
        &r,
        request(
            "tools/call",
            Some("notes.add"),
            json!({"name": "notes.add", "arguments": {"text": "x"}}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("application/json"), "{kind}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"id": 4, "text": "x"})
    );
    let mut params = json!({"name": "slow.wait", "arguments": {"steps": 2}});
    params["_meta"] = meta();
    params["_meta"]["progressToken"] = json!("p1");
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params});
    let req = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "slow.wait")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, kind, body) = send(&r, req).await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    assert!(
        body.contains("notifications/progress") && body.contains("\"waited\":2"),
        "{body}"
    );
}

#[tokio::test]
async fn get_and_delete_are_405() {
    for method in ["GET", "DELETE"] {
        let req = axum::http::Request::builder()
            .method(method)
            .uri("/")
            .header("host", "127.0.0.1:3000")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .body(Body::empty())
            .unwrap();
        let (status, _, _) = send(&router(), req).await;
        assert_eq!(status, 405, "{method}");
    }
}

#[tokio::test]
async fn mcp_method_and_mcp_name_must_match_the_body() {
    let r = router();
    let mut req = request(
        "tools/call",
        Some("notes.purge"),
        json!({"name": "notes.add", "arguments": {"text": "x"}}),
    );
    let (status, _, body) = send(&r, req).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Mcp-Name"), "{body}");
    req = request("tools/list", None, json!({}));
    req.headers_mut()
        .insert("mcp-method", "tools/call".parse().unwrap());
    let (status, _, body) = send(&r, req).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Mcp-Method"), "{body}");
}

#[tokio::test]
async fn an_unsupported_version_in_meta_is_the_version_mismatch_error() {
    let mut params = json!({});
    params["_meta"] = meta();
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": params});
    let req = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2099-01-01")
        .header("mcp-method", "tools/list")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, body) = send(&router(), req).await;
    assert!(status == 400 || status == 200, "{status} {body}");
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let error = &v["error"];
    assert!(error.is_object(), "{body}");
    assert!(
        body.contains("2026-07-28") && body.contains("2025-11-25"),
        "the error lists the supported versions: {body}"
    );
}

#[tokio::test]
async fn tools_list_carries_ttl_and_cache_scope() {
    let (status, _, body) = send(&router(), request("tools/list", None, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["result"]["ttlMs"], 60_000);
    assert_eq!(v["result"]["cacheScope"], "private");
    assert_eq!(v["result"]["resultType"], "complete");
}

#[tokio::test]
async fn tools_list_from_the_cached_page_is_what_rmcp_sends_and_follows_the_manifest() {
    let tm = approving_app(&Log::default());
    let fast = McpServer::new(tm.clone()).router();
    let t = tm.clone();
    // A per-session server has no cached page: rmcp's own path.
    let slow = McpServer::per_session(move || t.clone()).router();
    let list = || request("tools/list", None, json!({}));
    let (s1, k1, a) = send(&fast, list()).await;
    let (s2, _, b) = send(&slow, list()).await;
    assert_eq!((s1, s2), (200, 200));
    assert!(k1.starts_with("application/json"));
    assert_eq!(a, b, "the same bytes");
    assert!(a.contains("\"extra.ping\""));
    // Another id, a string one.
    let mut req = list();
    let body = json!({"jsonrpc": "2.0", "id": "seven", "method": "tools/list",
                      "params": {"_meta": meta()}});
    *req.body_mut() = Body::from(body.to_string());
    let (_, _, c) = send(&fast, req).await;
    assert!(
        c.starts_with(r#"{"jsonrpc":"2.0","id":"seven","result":"#),
        "{c}"
    );
    // The manifest moves: the page follows.
    tm.scope("extra").set_when(false);
    let (_, _, d) = send(&fast, list()).await;
    assert!(!d.contains("\"extra.ping\""), "{d}");
    let (_, _, e) = send(&slow, list()).await;
    assert_eq!(d, e);
    // A malformed one goes to rmcp, which refuses it.
    let mut req = list();
    *req.body_mut() = Body::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string(),
    );
    let (status, _, body) = send(&fast, req).await;
    assert!(body.contains("error"), "{status} {body}");
}
