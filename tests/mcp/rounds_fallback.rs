//! The app's own rmcp handler behind Toolmark's (`fallback_handler`) on a
//! 2026-07-28 request: a result it built without `resultType` (from JSON, or a
//! struct literal) still says it is complete, as 2026-07-28 requires.

use axum::body::Body;
use http_body_util::BodyExt;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    PaginatedRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use tower::ServiceExt;

use crate::*;

struct FromJson;

impl ServerHandler for FromJson {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_prompts()
                .build(),
        )
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(serde_json::from_value(json!({"prompts": [{"name": "hello"}]})).unwrap())
    }

    async fn get_prompt(
        &self,
        _: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let r: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}}]}))
        .unwrap();
        Ok(r.into())
    }
}

async fn ask(router: &axum::Router, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut b = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        b = b.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let res = router
        .clone()
        .oneshot(b.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn an_apps_result_without_result_type_is_complete_on_2026() {
    let router = McpServer::new(approving_app(&Log::default()))
        .fallback_handler(FromJson)
        .router();
    let list = ask(&router, "prompts/list", json!({})).await;
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["prompts"][0]["name"], "hello");
    let got = ask(&router, "prompts/get", json!({"name": "hello"})).await;
    assert_eq!(got["result"]["resultType"], "complete", "{got}");
}
