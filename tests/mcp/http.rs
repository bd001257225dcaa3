//! The HTTP router as a tower service: Host, Origin, bearer token, body limit,
//! malformed messages.

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::json;
use toolmark::mcp::{HttpOptions, McpServer};
use tower::ServiceExt;

use crate::*;

fn server() -> McpServer {
    McpServer::new(approving_app(&Log::default()))
}

fn post(body: impl Into<Body>) -> axum::http::request::Builder {
    let _ = body;
    axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

async fn send(router: &axum::Router, req: axum::http::Request<Body>) -> (u16, String) {
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_loopback_request_initializes() {
    let router = server().router();
    let (status, body) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
}

#[tokio::test]
async fn a_wrong_origin_is_403() {
    let router = server().router();
    let req = post(())
        .header("origin", "https://evil.example")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 403);
    let req = post(())
        .header("origin", "http://localhost:5173")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 200);
}

#[tokio::test]
async fn a_wrong_host_is_403() {
    let router = server().router();
    let req = axum::http::Request::post("/")
        .header("host", "attacker.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 403);
}

#[tokio::test]
async fn an_oversize_body_is_refused_before_parsing() {
    let tm = toolmark::Toolmark::builder()
        .max_input_bytes(1024)
        .build()
        .unwrap();
    let router = McpServer::new(tm).router();
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"x\",\"arguments\":{{\"a\":\"{}\"}}}}}}",
        "x".repeat(64 * 1024)
    );
    let req = post(())
        .header("content-length", big.len().to_string())
        .body(Body::from(big.clone()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 413);
    // Without a Content-Length (streamed), rmcp's own limit stops it.
    let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(big.into_bytes())]);
    let req = post(()).body(Body::from_stream(stream)).unwrap();
    assert_eq!(send(&router, req).await.0, 413);
}

#[tokio::test]
async fn a_bearer_token_is_required_when_set() {
    let router = server()
        .http_options(HttpOptions::new().bearer_token("s3cret-token"))
        .router();
    let (status, _) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
    assert_eq!(status, 401);
    let req = post(())
        .header("authorization", "Bearer s3cret-tokeN")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 401);
    let req = post(())
        .header("authorization", "Bearer s3cret-token")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, req).await.0, 200);
}

#[tokio::test]
async fn a_thousand_malformed_messages_and_the_server_still_answers() {
    let router = server().router();
    let junk = [
        "{",
        "null",
        "[]",
        "{\"jsonrpc\":\"2.0\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":7}",
        "\u{0}\u{1}",
        "{\"jsonrpc\":\"1.0\",\"id\":{},\"method\":[]}",
    ];
    for i in 0..1000 {
        let req = post(()).body(Body::from(junk[i % junk.len()])).unwrap();
        let (status, body) = send(&router, req).await;
        assert!(status < 500, "message {i}: {status} {body}");
    }
    let (status, body) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
    assert_eq!(status, 200, "{body}");
}

/// The same over the stdio framing (newline-delimited JSON on a duplex): every
/// malformed line is survived and the session answers afterwards.
#[tokio::test]
async fn a_thousand_malformed_lines_over_the_stream_transport() {
    use rmcp::ServiceExt as _;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (a, b) = tokio::io::duplex(1 << 20);
    let session = server().session();
    tokio::spawn(async move {
        if let Ok(r) = session.serve(a).await {
            let _ = r.waiting().await;
        }
    });
    let (read, mut write) = tokio::io::split(b);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(format!("{}\n", initialize()).as_bytes())
        .await
        .unwrap();
    let first = lines.next_line().await.unwrap().unwrap();
    assert!(first.contains("\"id\":1"), "{first}");
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let writer = tokio::spawn(async move {
        for i in 0..1000 {
            let line = match i % 4 {
                0 => "{\n".to_owned(),
                1 => "[1,2]\n".to_owned(),
                2 => format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":\"x\"}}\n", 1000 + i),
                _ => "\"hello\"\n".to_owned(),
            };
            write.write_all(line.as_bytes()).await.unwrap();
        }
        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"tools/list\"}\n")
            .await
            .unwrap();
        write
    });
    let answer = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("server closed the stream");
            if line.contains("\"id\":\"last\"") {
                return line;
            }
        }
    })
    .await
    .expect("the server answered after the junk");
    assert!(answer.contains("notes.count"), "{answer}");
    drop(writer.await.unwrap());
}
