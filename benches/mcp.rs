//! One tools/call round trip through `toolmark::mcp` beside a plain rmcp
//! `#[tool_router]` server with the same tool ({a, b} → {"result": a + b}), each
//! reached by rmcp's client over an in-process duplex, in the same run.
//!
//! Run with `cargo bench --features mcp --bench mcp`. The number to watch is the
//! ratio `toolmark_mcp / rmcp_tool_router` (goal: at most 1.1×).

use criterion::{criterion_group, Criterion};
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

// ---- MCP 2026-07-28 (stateless): the call over HTTP and over a stdio-like
// stream, the confirmation by multi round-trip request, the cached tools/list.
//
// Ratios to read: `toolmark_*` / `rmcp_tool_router_*` for the call (goal ≤ 0.9×;
// `toolmark_http_rmcp_path` is the same call through rmcp's service, the path every
// call took before the tools/call fast path; `toolmark_stream` is
// `McpServer::serve_io`, what `serve_stdio` runs, and `toolmark_transport_stream`
// `McpServer::serve_transport`, rmcp's serve loop for every message),
// `toolmark_mrtr_*` / `rmcp_tool_router_http` for an approval (a unit of one
// plain round trip), `toolmark_cached_list_10k` / `rmcp_list_all_serialize_10k`
// (goal ≤ 0.05×).

mod raw {
    //! A keep-alive HTTP/1.1 client speaking 2026-07-28 (one JSON-RPC request per
    //! POST, the reply read whole): what a stateless client does, without a
    //! client library's own cost in the measurement.
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    pub(super) struct Raw {
        io: BufReader<TcpStream>,
        host: String,
        path: String,
        /// Header lines sent with every request.
        extra: String,
    }

    impl Raw {
        pub(super) async fn connect(url: &str) -> Raw {
            let rest = url.strip_prefix("http://").unwrap();
            let (host, path) = rest.split_at(rest.find('/').unwrap());
            let io = BufReader::new(TcpStream::connect(host).await.unwrap());
            io.get_ref().set_nodelay(true).unwrap();
            Raw {
                io,
                host: host.to_owned(),
                path: path.to_owned(),
                extra: String::new(),
            }
        }

        /// Send `name: value` with every request.
        pub(super) fn with_header(mut self, name: &str, value: &str) -> Raw {
            self.extra.push_str(&format!("{name}: {value}\r\n"));
            self
        }

        pub(super) async fn post(
            &mut self,
            method: &str,
            name: Option<&str>,
            body: &str,
        ) -> String {
            let name = name.map_or_else(String::new, |n| format!("Mcp-Name: {n}\r\n"));
            let head = format!(
                "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
                 Mcp-Method: {method}\r\n{name}{}Content-Length: {}\r\n\r\n",
                self.path,
                self.host,
                self.extra,
                body.len()
            );
            let s = self.io.get_mut();
            s.write_all(head.as_bytes()).await.unwrap();
            s.write_all(body.as_bytes()).await.unwrap();
            let mut len = None;
            let mut chunked = false;
            let mut line = String::new();
            loop {
                line.clear();
                self.io.read_line(&mut line).await.unwrap();
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                let lower = l.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = Some(v.trim().parse::<usize>().unwrap());
                }
                if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                    chunked = true;
                }
            }
            let mut body = Vec::new();
            if chunked {
                loop {
                    line.clear();
                    self.io.read_line(&mut line).await.unwrap();
                    let n = usize::from_str_radix(line.trim(), 16).unwrap();
                    let mut chunk = vec![0; n + 2];
                    self.io.read_exact(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
            } else {
                body.resize(len.unwrap(), 0);
                self.io.read_exact(&mut body).await.unwrap();
            }
            String::from_utf8(body).unwrap()
        }
    }
}

fn meta_2026(capabilities: serde_json::Value) -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

fn add_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "math.add", "arguments": {"a": 2, "b": 3}, "_meta": meta_2026(json!({}))}})
    .to_string()
}

async fn serve_router(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = axum::Router::new().nest_service("/mcp", router);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// rmcp's own Streamable HTTP service for `Plain`, stateless replies as JSON.
fn plain_router() -> axum::Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_json_response(true);
    let service = StreamableHttpService::new(
        || Ok(Plain::new()),
        std::sync::Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().fallback_service(service)
}

async fn discover<S: ServerHandler>(server: S) -> RunningService<RoleClient, ClientConfig> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(r) = server.serve(a).await {
            let _ = r.waiting().await;
        }
    });
    discover_client(b).await
}

/// rmcp's client in discover mode (2026-07-28) on `McpServer::serve_io` over
/// an in-process duplex: what a stdio client of `serve_stdio` talks to.
async fn discover_io(server: McpServer) -> RunningService<RoleClient, ClientConfig> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(a);
        let _ = server.serve_io(read, write).await;
    });
    discover_client(b).await
}

/// The same client on `McpServer::serve_transport` (rmcp's serve loop for
/// every message, the arguments hidden by `Quiet`).
async fn discover_transport(server: McpServer) -> RunningService<RoleClient, ClientConfig> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let _ = server.serve_transport(a).await;
    });
    discover_client(b).await
}

/// rmcp's client opening a 2025-11-25 session (`initialize`) on rmcp's server
/// served on rmcp's transport (`server` is `Ok`) or on `McpServer::serve_io`:
/// every line of such a session goes on to rmcp's service.
async fn initialize_stream<S: ServerHandler>(
    server: Result<S, McpServer>,
) -> RunningService<RoleClient, ClientConfig> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        match server {
            Ok(server) => {
                if let Ok(r) = server.serve(a).await {
                    let _ = r.waiting().await;
                }
            }
            Err(server) => {
                let (read, write) = tokio::io::split(a);
                let _ = server.serve_io(read, write).await;
            }
        }
    });
    let client = ClientConfig::default()
        .serve_with_lifecycle(b, ClientLifecycleMode::Initialize)
        .await
        .unwrap();
    let version = client.peer_info().map(|i| i.protocol_version.clone());
    assert_eq!(version, Some(ProtocolVersion::V_2025_11_25));
    client
}

async fn discover_client(io: tokio::io::DuplexStream) -> RunningService<RoleClient, ClientConfig> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    ClientConfig::default()
        .serve_with_lifecycle(
            io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pay {
    to: String,
    amount: u32,
    card: String,
}

fn add_tool() -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("math")
        .register(
            ToolSpec::typed("add", "Add two numbers", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(i.a + i.b)
            })
            .effect(Effect::Read),
        )
        .unwrap();
    tm
}

fn register_pay(tm: &Toolmark) {
    tm.scope("pay")
        .register(
            ToolSpec::typed("send", "Pay", |_ctx, p: Pay| async move {
                Ok::<_, ToolError>(json!({"paid": p.amount, "to": p.to, "card": p.card.len()}))
            })
            .effect(Effect::Consequential)
            .sensitive(["card"])
            .summary("Pay {amount} to {to}"),
        )
        .unwrap();
}

fn pay_body(state: Option<&str>) -> String {
    let mut params = json!({"name": "pay.send",
        "arguments": {"to": "ada", "amount": 5, "card": "4111-1111-1111-1111"},
        "_meta": meta_2026(json!({"elicitation": {"form": {}}}))});
    if let Some(s) = state {
        params["requestState"] = json!(s);
        params["inputResponses"] = json!({"confirm": {"action": "accept"}});
    }
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}).to_string()
}

/// call → input_required → retry with the answer → result, `first` asked and
/// `second` answered (the same connection, or two instances).
async fn approval(first: &mut raw::Raw, second: Option<&mut raw::Raw>) -> String {
    let asked = first
        .post("tools/call", Some("pay.send"), &pay_body(None))
        .await;
    let v: serde_json::Value = serde_json::from_str(&asked).unwrap();
    let state = v["result"]["requestState"]
        .as_str()
        .expect("input_required")
        .to_owned();
    let to = match second {
        Some(s) => s,
        None => first,
    };
    let done = to
        .post("tools/call", Some("pay.send"), &pay_body(Some(&state)))
        .await;
    assert!(done.contains("\"paid\":5"), "{done}");
    done
}

/// The app's own handler: a guarded tool is listed for MCP only when the app
/// has a confirmation path; the client confirms here, so it is never asked.
async fn never_asked(_r: toolmark::ConfirmRequest) -> toolmark::Decision {
    toolmark::Decision::reject_with("not asked in this bench")
}

fn mrtr_server(tm: Toolmark) -> McpServer {
    register_pay(&tm);
    McpServer::new(tm).confirm_by_elicitation(toolmark::mcp::Elicitation::consequential())
}

fn bench_2026(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // The call: over a stream (what stdio is) and over HTTP, both 2026-07-28.
    let (ours_io, ours_transport, plain_io, ours_url, plain_url) = rt.block_on(async {
        (
            discover_io(McpServer::new(add_tool())).await,
            discover_transport(McpServer::new(add_tool())).await,
            discover(Plain::new()).await,
            serve_router(McpServer::new(add_tool()).router()).await,
            serve_router(plain_router()).await,
        )
    });
    let (mut ours_http, mut plain_http, mut ours_rmcp_path) = rt.block_on(async {
        (
            raw::Raw::connect(&ours_url).await,
            raw::Raw::connect(&plain_url).await,
            // An Mcp-Session-Id header, which rmcp ignores on a 2026-07-28
            // request and the tools/call fast path leaves to rmcp's service:
            // the path every call took before the fast path.
            raw::Raw::connect(&ours_url)
                .await
                .with_header("Mcp-Session-Id", "ignored"),
        )
    });
    let a = rt.block_on(ours_http.post("tools/call", Some("math.add"), &add_body()));
    let b = rt.block_on(plain_http.post("tools/call", Some("math.add"), &add_body()));
    let slow = rt.block_on(ours_rmcp_path.post("tools/call", Some("math.add"), &add_body()));
    assert!(
        a.contains("\"result\":5") && b.contains("\"result\":5") && a == slow,
        "{a}\n{b}\n{slow}"
    );
    let mut g = c.benchmark_group("mcp_2026_call");
    g.bench_function("rmcp_tool_router_stream", |bch| {
        bch.to_async(&rt)
            .iter(|| async { black_box(plain_io.call_tool(request()).await.unwrap()) });
    });
    g.bench_function("toolmark_stream", |bch| {
        bch.to_async(&rt)
            .iter(|| async { black_box(ours_io.call_tool(request()).await.unwrap()) });
    });
    g.bench_function("toolmark_transport_stream", |bch| {
        bch.to_async(&rt)
            .iter(|| async { black_box(ours_transport.call_tool(request()).await.unwrap()) });
    });
    g.bench_function("rmcp_tool_router_http", |bch| {
        bch.iter(|| {
            black_box(rt.block_on(plain_http.post("tools/call", Some("math.add"), &add_body())))
        });
    });
    g.bench_function("toolmark_http", |bch| {
        bch.iter(|| {
            black_box(rt.block_on(ours_http.post("tools/call", Some("math.add"), &add_body())))
        });
    });
    g.bench_function("toolmark_http_rmcp_path", |bch| {
        bch.iter(|| {
            black_box(rt.block_on(ours_rmcp_path.post("tools/call", Some("math.add"), &add_body())))
        });
    });
    // The approval by multi round-trip request, on one instance ...
    let one_url = rt.block_on(serve_router(
        mrtr_server(
            Toolmark::builder()
                .confirm_handler(never_asked)
                .build()
                .unwrap(),
        )
        .router(),
    ));
    let mut one = rt.block_on(raw::Raw::connect(&one_url));
    rt.block_on(approval(&mut one, None));
    g.bench_function("toolmark_mrtr_one_instance_http", |bch| {
        bch.iter(|| black_box(rt.block_on(approval(&mut one, None))));
    });
    // ... and across two instances sharing a Redis store.
    #[cfg(feature = "redis")]
    match std::env::var("TOOLMARK_REDIS_URL") {
        Ok(url) => {
            let (mut a, mut b) = rt.block_on(async {
                let prefix = format!("bench-mrtr-{}:", std::process::id());
                let mut urls = Vec::new();
                for _ in 0..2 {
                    let store = toolmark::store::RedisStore::connect_with(
                        &url,
                        toolmark::store::RedisStoreOptions::default().prefix(prefix.clone()),
                    )
                    .await
                    .unwrap();
                    let tm = Toolmark::builder()
                        .confirm_handler(never_asked)
                        .confirm_store(store)
                        .seal_key([9; 32])
                        .build()
                        .unwrap();
                    urls.push(serve_router(mrtr_server(tm).router()).await);
                }
                (
                    raw::Raw::connect(&urls[0]).await,
                    raw::Raw::connect(&urls[1]).await,
                )
            });
            rt.block_on(approval(&mut a, Some(&mut b)));
            g.bench_function("toolmark_mrtr_two_instances_redis_http", |bch| {
                bch.iter(|| black_box(rt.block_on(approval(&mut a, Some(&mut b)))));
            });
        }
        Err(_) => eprintln!(
            "toolmark_mrtr_two_instances_redis_http: TOOLMARK_REDIS_URL is not set, not measured"
        ),
    }
    g.finish();

    // tools/list of 10,000 tools.
    let n = 10_000;
    let tm = Toolmark::builder().build().unwrap();
    for s in 0..100 {
        let scope = tm.scope(&format!("s{s:03}"));
        for t in 0..n / 100 {
            scope
                .register(
                    ToolSpec::typed(
                        format!("t{t:03}"),
                        "Add two numbers",
                        |_ctx, i: Add| async move { Ok::<_, ToolError>(i.a + i.b) },
                    )
                    .effect(Effect::Read),
                )
                .unwrap();
        }
    }
    let router = McpServer::new(tm).page_size(n).router();
    let list_req = || {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta_2026(json!({}))}});
        axum::http::Request::post("/")
            .header("host", "127.0.0.1:1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap()
    };
    let list = |router: &axum::Router| {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let router = router.clone();
        rt.block_on(async move {
            let res = router.oneshot(list_req()).await.unwrap();
            res.into_body().collect().await.unwrap().to_bytes()
        })
    };
    let first = list(&router);
    assert!(first.len() > 1_000_000 && std::str::from_utf8(&first).unwrap().contains("s099.t099"));
    let mut plain = ToolRouter::<Plain>::new();
    let schema = std::sync::Arc::new(
        serde_json::to_value(schemars::schema_for!(Add))
            .unwrap()
            .as_object()
            .unwrap()
            .clone(),
    );
    for s in 0..100 {
        for t in 0..n / 100 {
            let tool = rmcp::model::Tool::new(
                format!("s{s:03}.t{t:03}"),
                "Add two numbers",
                schema.clone(),
            );
            plain.add_route(rmcp::handler::server::router::tool::ToolRoute::new_dyn(
                tool,
                |_ctx| {
                    Box::pin(async { Ok(CallToolResult::structured(json!({"result": 0})).into()) })
                },
            ));
        }
    }
    let mut g = c.benchmark_group("mcp_2026_list_10k");
    g.sample_size(20);
    g.bench_function("rmcp_list_all_serialize_10k", |bch| {
        bch.iter(|| {
            let result = rmcp::model::ListToolsResult::with_all_items(plain.list_all());
            black_box(serde_json::to_vec(&result).unwrap())
        });
    });
    g.bench_function("toolmark_cached_list_10k", |bch| {
        bch.iter(|| black_box(list(&router)));
    });
    g.finish();
}

/// One stateless `tools/call` request to `router`, in process (no socket).
fn call_request(session_header: bool) -> axum::http::Request<axum::body::Body> {
    let mut req = axum::http::Request::post("/")
        .header("host", "127.0.0.1:1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "math.add");
    if session_header {
        req = req.header("mcp-session-id", "ignored");
    }
    req.body(axum::body::Body::from(add_body())).unwrap()
}

/// `TOOLMARK_MCP_PROFILE="<row> <n>"`: `n` stateless tools/call requests through
/// one router in process on a current-thread runtime, then exit: the workload
/// for `valgrind --tool=callgrind` (instructions per request = the difference
/// of two `n`, divided). Rows: `rmcp` (rmcp's service for the `#[tool_router]`
/// server), `toolmark` (`McpServer::router()`), `toolmark_rmcp_path` (the same
/// with an `Mcp-Session-Id` header rmcp ignores on a 2026-07-28 request and the
/// fast path leaves to rmcp's service: the path every call took before it);
/// `<server>_stream`: the same call over the stdio framing (rmcp's client in
/// discover mode over an in-process duplex) to `rmcp` (the `#[tool_router]`
/// server on rmcp's transport), `toolmark` (`McpServer::serve_io`, what
/// `serve_stdio` runs), `toolmark_transport` (`McpServer::serve_transport`)
/// or `toolmark_session` (`McpServer::session()` served by rmcp as it is);
/// `rmcp_2025_stream` and `toolmark_2025_stream`: rmcp's client opening a
/// 2025-11-25 session with `initialize` (every line on to rmcp's service) on
/// the `#[tool_router]` server on rmcp's transport and on `McpServer::serve_io`.
fn profile(spec: &str) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let (row, n) = spec
        .split_once(' ')
        .expect("TOOLMARK_MCP_PROFILE=\"<row> <n>\"");
    let n: usize = n.parse().expect("a count");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(server) = row.strip_suffix("_stream") {
        // The stdio framing: rmcp's client in discover mode (2026-07-28) over an
        // in-process duplex, the server on the same current-thread runtime.
        rt.block_on(async move {
            let client = match server {
                "rmcp" => discover(Plain::new()).await,
                "toolmark" => discover_io(McpServer::new(add_tool())).await,
                "toolmark_session" => discover(McpServer::new(add_tool()).session()).await,
                "toolmark_transport" => discover_transport(McpServer::new(add_tool())).await,
                "rmcp_2025" => initialize_stream::<Plain>(Ok(Plain::new())).await,
                "toolmark_2025" => {
                    initialize_stream::<Plain>(Err(McpServer::new(add_tool()))).await
                }
                other => panic!("unknown row {other}_stream"),
            };
            for _ in 0..n {
                let r = client.call_tool(request()).await.unwrap();
                assert_eq!(r.structured_content, Some(json!({"result": 5})));
            }
        });
        return;
    }
    let (router, session_header) = match row {
        "rmcp" => (plain_router(), false),
        "toolmark" => (McpServer::new(add_tool()).router(), false),
        "toolmark_rmcp_path" => (McpServer::new(add_tool()).router(), true),
        other => panic!("unknown row {other}"),
    };
    rt.block_on(async move {
        for _ in 0..n {
            let res = router
                .clone()
                .oneshot(call_request(session_header))
                .await
                .unwrap();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert!(body.windows(10).any(|w| w == b"\"result\":5"), "{body:?}");
        }
    });
}

criterion_group!(benches, bench, bench_2026);

fn main() {
    if let Ok(spec) = std::env::var("TOOLMARK_MCP_PROFILE") {
        profile(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
