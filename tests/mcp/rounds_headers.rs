//! `x-mcp-header` parameters (MCP 2026-07-28, SEP-2243 `Mcp-Param-*`): a typed
//! tool marks one with `#[schemars(extend("x-mcp-header" = "Region"))]`; over
//! HTTP rmcp checks each `Mcp-Param-*` header against the call's real argument
//! (missing, extra or different: `-32020`, nothing runs), while every other
//! argument stays out of rmcp's logs; a sensitive parameter (or a malformed
//! annotation) cannot be registered as a header.

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::{ToolError, ToolSpec, Toolmark};
use tower::ServiceExt;

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ship {
    /// Where to ship (routed on by gateways).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// The parcel's note.
    note: String,
}

fn ship_app(log: &Log) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let l = log.clone();
    tm.register(
        ToolSpec::typed("ship", "Ships a parcel", move |_ctx, s: Ship| {
            let l = l.clone();
            async move {
                l.push(format!("shipped to {} ({})", s.region, s.note));
                Ok::<_, ToolError>(json!("shipped"))
            }
        })
        .effect(toolmark::Effect::Write),
        Default::default(),
    )
    .unwrap();
    tm
}

fn call(headers: &[(&str, &str)], args: Value) -> axum::http::Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": "ship", "arguments": args,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut b = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "ship");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

async fn send(router: &axum::Router, req: axum::http::Request<Body>) -> (u16, Value) {
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_header_parameter_is_checked_against_the_real_argument_over_http() {
    let (out, _guard) = crate::logs::capture_at(tracing::Level::TRACE);
    let log = Log::default();
    let server = McpServer::new(ship_app(&log));
    let router = server.router();
    // The list shows the annotation.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let req = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(Body::from(list.to_string()))
        .unwrap();
    let (_, listed) = send(&router, req).await;
    assert_eq!(
        listed["result"]["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region",
        "{listed}"
    );
    let args = json!({"region": "eu-west", "note": "leave-by-the-blue-door"});
    // The right header (plain and Base64): runs, with every argument.
    for value in ["eu-west", "=?base64?ZXUtd2VzdA==?="] {
        let (status, v) = send(&router, call(&[("mcp-param-region", value)], args.clone())).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["result"]["isError"], json!(false), "{v}");
    }
    assert_eq!(
        log.get(),
        [
            "shipped to eu-west (leave-by-the-blue-door)",
            "shipped to eu-west (leave-by-the-blue-door)"
        ]
    );
    // Missing, different, or for an argument the body lacks: -32020, nothing runs.
    for (headers, args) in [
        (vec![], args.clone()),
        (vec![("mcp-param-region", "us-east")], args.clone()),
        (
            vec![("mcp-param-region", "=?base64?SGVsbG8?=")],
            args.clone(),
        ),
        (
            vec![("mcp-param-region", "eu-west")],
            json!({"note": "leave-by-the-blue-door"}),
        ),
    ] {
        let (status, v) = send(&router, call(&headers, args)).await;
        assert_eq!(status, 400, "{headers:?}: {v}");
        assert_eq!(v["error"]["code"], json!(-32020), "{headers:?}: {v}");
    }
    assert_eq!(log.get().len(), 2, "{:?}", log.get());
    let logs = out.text();
    assert!(!logs.is_empty(), "the capture saw rmcp's events");
    assert!(
        !logs.contains("leave-by-the-blue-door"),
        "an argument that is not a header reached a log"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Pay {
    #[schemars(extend("x-mcp-header" = "Card"))]
    card: String,
    to: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Maybe {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: Option<String>,
}

#[test]
fn a_sensitive_or_malformed_header_parameter_is_refused_at_registration() {
    let tm = Toolmark::builder().build().unwrap();
    let err = tm
        .register(
            ToolSpec::typed("pay", "Pays", |_ctx, _: Pay| async {
                Ok::<_, ToolError>(json!("paid"))
            })
            .sensitive(["card"]),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
    assert!(err.to_string().contains("`card` is sensitive"), "{err}");
    let err = tm
        .register(
            ToolSpec::typed("maybe", "Maybe", |_ctx, _: Maybe| async {
                Ok::<_, ToolError>(json!("ok"))
            }),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec", "{err}");
    let err = tm
        .register(
            ToolSpec::new("raw", "Raw")
                .input_schema(json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Not A Token"}}}))
                .handler(|_ctx, _| async { Ok(json!("ok")) }),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec", "{err}");
    // The same tool without the sensitive mark registers.
    tm.register(
        ToolSpec::typed("pay", "Pays", |_ctx, _: Pay| async {
            Ok::<_, ToolError>(json!("paid"))
        }),
        Default::default(),
    )
    .unwrap();
}
