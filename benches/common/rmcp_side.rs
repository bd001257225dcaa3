//! rmcp 3.11's side of the side-by-side rows: the same typed tools (`{a, b}` →
//! `a + b`, read-only) as rmcp's `#[tool]` macro registers them — a `Tool` with the
//! input schema from rmcp's per-type cache, a `ToolRoute` with a `Parameters<T>`
//! handler, added to a `ToolRouter`.

use std::sync::Arc;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData;

/// The input of every tool.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
pub(crate) struct RmcpAdd {
    a: i64,
    b: i64,
}

/// The server type the router is for (rmcp routes are typed by their server).
pub(crate) struct Server;

/// One route as rmcp's `#[tool]` macro builds it: the schema from rmcp's per-type
/// cache, the name, the description and the read-only annotation.
pub(crate) fn typed_route(name: String) -> ToolRoute<Server> {
    let schema = rmcp::handler::server::common::schema_for_input::<Parameters<RmcpAdd>>()
        .expect("a valid input schema");
    let tool = Tool::new(name, "Add two numbers", schema)
        .with_annotations(ToolAnnotations::new().read_only(true));
    ToolRoute::new(tool, add)
}

/// The handler of every tool, for routes built elsewhere.
pub(crate) async fn add_route_handler(
    Parameters(i): Parameters<RmcpAdd>,
) -> Result<CallToolResult, ErrorData> {
    add(Parameters(i)).await
}

/// The handler of every tool.
async fn add(Parameters(i): Parameters<RmcpAdd>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::structured(
        serde_json::json!({"result": i.a + i.b}),
    ))
}

/// `n` typed routes named `add_{i}` (what registering starts from).
pub(crate) fn typed_routes(n: usize) -> Vec<ToolRoute<Server>> {
    (0..n).map(|i| typed_route(format!("add_{i}"))).collect()
}

/// Add every route to a fresh router.
pub(crate) fn register_all(routes: Vec<ToolRoute<Server>>) -> ToolRouter<Server> {
    let mut router = ToolRouter::new();
    for r in routes {
        router.add_route(r);
    }
    router
}

/// A router of `n` tools with the manifest bench's hand-written schema (one schema
/// object per tool, as each dynamic Toolmark tool holds its own).
pub(crate) fn router_with(n: usize, schema: &serde_json::Value) -> ToolRouter<Server> {
    let object: JsonObject = schema.as_object().expect("an object schema").clone();
    let mut router = ToolRouter::new();
    for i in 0..n {
        let tool = Tool::new(
            format!("s.tool_{i:05}"),
            "A tool that adds two numbers",
            Arc::new(object.clone()),
        )
        .with_annotations(ToolAnnotations::new().read_only(true));
        router.add_route(ToolRoute::new(tool, add));
    }
    router
}
