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

/// A server for the call rows: nothing but the default handler (rmcp's
/// `ToolRouter::call` needs a request context, whose peer only a running service has).
pub(crate) struct CallServer;

impl rmcp::ServerHandler for CallServer {}

/// What an rmcp server keeps to call a tool: the router (built once, as a server
/// stores its `#[tool_router]`), the server and a request context, cloned per call
/// (rmcp's service builds one per request the same way: a cancellation token, an id,
/// empty meta and extensions, its peer).
pub(crate) struct CachedCall {
    pub(crate) router: ToolRouter<Server>,
    pub(crate) server: Server,
    pub(crate) context: rmcp::service::RequestContext<rmcp::RoleServer>,
    /// The running service and the other end of its transport, kept alive.
    _running: rmcp::service::RunningService<rmcp::RoleServer, CallServer>,
    _client_end: tokio::io::DuplexStream,
}

impl CachedCall {
    /// A router holding the typed `add` tool (as `add`); call inside a runtime.
    pub(crate) fn new() -> Self {
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let running = rmcp::service::serve_directly(CallServer, server_end, None);
        let context = rmcp::service::RequestContext::new(
            rmcp::model::NumberOrString::Number(1),
            running.peer().clone(),
        );
        CachedCall {
            router: register_all(vec![typed_route("add".to_owned())]),
            server: Server,
            context,
            _running: running,
            _client_end: client_end,
        }
    }

    /// One `tools/call` of `add` through `ToolRouter::call` with `arguments`.
    pub(crate) async fn call(
        &self,
        arguments: JsonObject,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let params = rmcp::model::CallToolRequestParams::new("add").with_arguments(arguments);
        let ctx = rmcp::handler::server::tool::ToolCallContext::new(
            &self.server,
            params,
            self.context.clone(),
        );
        self.router.call(ctx).await
    }
}
