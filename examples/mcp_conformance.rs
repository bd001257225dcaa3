//! The tools of the MCP conformance suite's server scenarios, as Toolmark tools,
//! served over Streamable HTTP.
//!
//! ```text
//! cargo run --features mcp --example mcp_conformance -- 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:3001/mcp \
//!     --expected-failures tests/mcp/conformance-expected-failures.yml
//! ```
//!
//! Scenarios a Toolmark tool cannot serve (a tool that elicits a form of its
//! own, sampling, log messages, prompts, resources, completions) are listed with
//! their reasons in `tests/mcp/conformance-expected-failures.yml`.

use std::time::Duration;

use serde_json::json;
use toolmark::mcp::McpServer;
use toolmark::{Content, Effect, NoInput, ToolError, ToolSpec, Toolmark};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A 44-byte WAV header with no samples (a valid, silent file).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn content(name: &str, description: &str, make: fn() -> Content) -> ToolSpec {
    ToolSpec::typed(name, description, move |_ctx, _: NoInput| async move {
        Ok::<_, ToolError>(make())
    })
    .effect(Effect::Read)
}

fn app() -> Result<Toolmark, Box<dyn std::error::Error>> {
    let tm = Toolmark::builder().build()?;
    let specs = [
        content("test_simple_text", "Returns simple text", || {
            Content::text("This is a simple text response for testing.")
        }),
        content("test_image_content", "Returns an image", || {
            Content::new().image(PNG, "image/png")
        }),
        content("test_audio_content", "Returns audio", || {
            Content::new().audio(WAV, "audio/wav")
        }),
        content(
            "test_embedded_resource",
            "Returns an embedded resource",
            || {
                Content::new().resource_text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )
            },
        ),
        content(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            || {
                Content::text("Multiple content types test:")
                    .image(PNG, "image/png")
                    .resource_text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )
            },
        ),
        ToolSpec::typed(
            "test_error_handling",
            "Always fails",
            |_ctx, _: NoInput| async {
                Err::<(), _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .effect(Effect::Read),
        ToolSpec::typed(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100",
            |ctx, _: NoInput| async move {
                for (i, done) in [0, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(done, 100);
                }
                Ok::<_, ToolError>(Content::text("Progress test completed"))
            },
        )
        .effect(Effect::Read),
    ];
    for spec in specs {
        tm.register(spec, Default::default())?;
    }
    Ok(tm)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    McpServer::new(app()?)
        .server_info("toolmark-conformance", env!("CARGO_PKG_VERSION"))
        .serve_listener(listener)
        .await?;
    Ok(())
}
