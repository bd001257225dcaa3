//! One tools/call round trip through `toolmark::mcp` beside a plain rmcp
//! `#[tool_router]` server with the same tool ({a, b} → {"result": a + b}), each
//! reached by rmcp's client over an in-process duplex, in the same run.
//!
//! Run with `cargo bench --features mcp --bench mcp`. The number to watch is the
//! ratio `toolmark_mcp / rmcp_tool_router` (goal: at most 1.1×).

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RunningService;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleClient, ServerHandler, ServiceExt};
use serde_json::json;
use std::hint::black_box;
use toolmark::mcp::McpServer;
use toolmark::{Effect, ToolError, ToolSpec, Toolmark};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Clone)]
struct Plain {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Plain {
    fn new() -> Self {
        Plain {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "math.add",
        description = "Add two numbers",
        annotations(read_only_hint = true)
    )]
    async fn add(&self, Parameters(i): Parameters<Add>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({"result": i.a + i.b})))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ClientConfig> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(r) = server.serve(a).await {
            let _ = r.waiting().await;
        }
    });
    client_config().serve(b).await.unwrap()
}

fn request() -> CallToolRequestParams {
    let args = json!({"a": 2, "b": 3});
    CallToolRequestParams::new("math.add").with_arguments(args.as_object().unwrap().clone())
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("math")
        .register(
            ToolSpec::typed("add", "Add two numbers", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(i.a + i.b)
            })
            .effect(Effect::Read),
        )
        .unwrap();
    let (ours, plain) = rt.block_on(async {
        let ours = connect(McpServer::new(tm).session()).await;
        let plain = connect(Plain::new()).await;
        (ours, plain)
    });
    // Same answer from both.
    let a = rt.block_on(ours.call_tool(request())).unwrap();
    let b = rt.block_on(plain.call_tool(request())).unwrap();
    assert_eq!(a.structured_content, b.structured_content);

    let mut g = c.benchmark_group("mcp_round_trip");
    g.bench_function("rmcp_tool_router", |bch| {
        bch.to_async(&rt)
            .iter(|| async { black_box(plain.call_tool(request()).await.unwrap()) });
    });
    g.bench_function("toolmark_mcp", |bch| {
        bch.to_async(&rt)
            .iter(|| async { black_box(ours.call_tool(request()).await.unwrap()) });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
