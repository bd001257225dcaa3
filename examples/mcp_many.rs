//! A server with many generated tools, for trying large lists and load with real
//! clients (the MCP Inspector, the TypeScript and Python SDKs).
//!
//! ```text
//! cargo run --features mcp --example mcp_many -- --tools 10000                 # stdio
//! cargo run --features mcp --example mcp_many -- --tools 10000 --http 127.0.0.1:8932
//! ```
//!
//! Flags: `--tools N` (default 10,000 tools `bulk.tool_00000` …, each adding two
//! integers), `--http ADDR` (Streamable HTTP at `/mcp` instead of stdio),
//! `--page-size N` (page tools/list, as `McpServer::page_size`), `--max-sessions
//! N` and `--idle-ms MS` (the session cap and idle timeout of `HttpOptions`).
//! Over HTTP it prints `listening on …` and then, whenever the number of live
//! sessions changes, `sessions N`, both on stderr.

use std::time::Duration;

use serde_json::json;
use toolmark::mcp::{HttpOptions, McpServer};
use toolmark::{Effect, ToolSpec, Toolmark};

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = flag(&args, "--tools").map_or(Ok(10_000), |s| s.parse())?;
    let tm = Toolmark::builder().build()?;
    let scope = tm.scope("bulk");
    for i in 0..n {
        scope.register(
            ToolSpec::new(format!("tool_{i:05}"), "Add two integers")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                }))
                .effect(Effect::Read)
                .handler(|_ctx, input| async move {
                    let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
                    Ok(json!({"sum": sum}))
                }),
        )?;
    }
    let mut server = McpServer::new(tm).server_info("toolmark-many", env!("CARGO_PKG_VERSION"));
    if let Some(p) = flag(&args, "--page-size") {
        server = server.page_size(p.parse()?);
    }
    let mut http = HttpOptions::new();
    if let Some(m) = flag(&args, "--max-sessions") {
        http = http.max_sessions(m.parse()?);
    }
    if let Some(ms) = flag(&args, "--idle-ms") {
        http = http.session_idle_timeout(Duration::from_millis(ms.parse()?));
    }
    let server = server.http_options(http);
    match flag(&args, "--http") {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            // The tests read this line for the port.
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            let watched = server.clone();
            tokio::spawn(async move {
                let mut last = usize::MAX;
                loop {
                    let now = watched.live_sessions();
                    if now != last {
                        eprintln!("sessions {now}");
                        last = now;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
            server.serve_listener(listener).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
