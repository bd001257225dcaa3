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

fn authorized(scheme_and_token: &str) -> axum::http::Request<Body> {
    post(())
        .header("authorization", scheme_and_token)
        .body(Body::from(initialize()))
        .unwrap()
}

/// RFC 7235: the auth scheme is case-insensitive, and one or more spaces
/// separate it from the token; anything else is 401.
#[tokio::test]
async fn the_bearer_scheme_is_accepted_in_any_case() {
    let router = server()
        .http_options(HttpOptions::new().bearer_token("s3cret-token"))
        .router();
    for ok in [
        "Bearer s3cret-token",
        "bearer s3cret-token",
        "BEARER s3cret-token",
        "bEaReR  s3cret-token",
    ] {
        assert_eq!(send(&router, authorized(ok)).await.0, 200, "{ok}");
    }
    for bad in [
        "Basic s3cret-token",
        "Bearers3cret-token",
        "Bearer",
        "s3cret-token",
        "Bearer s3cret-token extra",
    ] {
        let res = router.clone().oneshot(authorized(bad)).await.unwrap();
        assert_eq!(res.status(), 401, "{bad}");
        let challenge = res.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }
}

/// An empty (or unsendable) token is refused when the server is built, with a
/// typed error; the router that cannot be built answers 500, never lets in.
#[tokio::test]
async fn an_empty_bearer_token_is_refused_when_the_server_is_built() {
    use toolmark::mcp::McpConfigError;
    for (token, code) in [
        ("", "empty_bearer_token"),
        ("  ", "empty_bearer_token"),
        ("has space", "invalid_bearer_token"),
    ] {
        let s = server().http_options(HttpOptions::new().bearer_token(token));
        let Err(e) = s.try_router() else {
            panic!("a router was built with the token {token:?}");
        };
        assert_eq!(e.code(), code);
        for req in [
            post(()).body(Body::from(initialize())).unwrap(),
            authorized("Bearer "),
            authorized(&format!("Bearer {token}")),
        ] {
            assert_eq!(send(&s.router(), req).await.0, 500);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = s.serve_listener(listener).await.unwrap_err();
        let inner = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<McpConfigError>());
        assert_eq!(inner.map(McpConfigError::code), Some(code));
    }
}

/// Malformed `Host` values are 403 even when the allowed list would match a
/// part of them.
#[tokio::test]
async fn malformed_host_values_are_refused() {
    let router = server()
        .http_options(HttpOptions::new().allowed_hosts(["localhost", "evil"]))
        .router();
    let req = |host: &str| {
        axum::http::Request::post("/")
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Body::from(initialize()))
            .unwrap()
    };
    for bad in [
        "[::1]evil",
        "localhost@evil",
        "evil@localhost",
        "localhost:80@evil",
        "localhost:",
        "localhost:99999",
        "localhost evil",
        "%6cocalhost",
    ] {
        assert_eq!(send(&router, req(bad)).await.0, 403, "{bad}");
    }
    assert_eq!(send(&router, req("localhost:8080")).await.0, 200);
    // Two Host headers: refused.
    let two = axum::http::Request::post("/")
        .header("host", "localhost")
        .header("host", "evil.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(initialize()))
        .unwrap();
    assert_eq!(send(&router, two).await.0, 403);
}

/// RFC 9728: the metadata is served beside the resource, and every 401 names
/// it in `WWW-Authenticate`.
#[tokio::test]
async fn protected_resource_metadata_is_served_and_named_in_401s() {
    use toolmark::mcp::ProtectedResource;
    let s = server().http_options(
        HttpOptions::new()
            .bearer_token("s3cret-token")
            .protected_resource(
                ProtectedResource::new("http://127.0.0.1:3000/mcp")
                    .authorization_server("https://auth.example.com")
                    .scopes(["notes"]),
            ),
    );
    let res = s
        .router()
        .oneshot(post(()).body(Body::from(initialize())).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(
        res.headers()["www-authenticate"],
        "Bearer resource_metadata=\"http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp\""
    );
    let res = s
        .router()
        .oneshot(authorized("Bearer wrong"))
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let challenge = res.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(
            "Bearer error=\"invalid_token\", resource_metadata=\"http://127.0.0.1:3000/"
        ),
        "{challenge}"
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let req = axum::http::Request::get(path)
            .header("host", "127.0.0.1:3000")
            .body(Body::empty())
            .unwrap();
        let (status, body) = send(&s.well_known(), req).await;
        assert_eq!(status, 200, "{path}");
        let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            doc,
            json!({"resource": "http://127.0.0.1:3000/mcp",
                   "authorization_servers": ["https://auth.example.com"],
                   "scopes_supported": ["notes"],
                   "bearer_methods_supported": ["header"]})
        );
    }
    // Served by the standalone server too, without a token.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let standalone = s.clone();
    let task = tokio::spawn(async move { standalone.serve_listener(listener).await });
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(
            format!("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n", addr.port())
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("\"resource\":\"http://127.0.0.1:3000/mcp\""),
        "{answer}"
    );
    task.abort();
}

/// Live sessions are capped: one more `initialize` is 503 with `Retry-After`,
/// a request of a live session still goes through, and a closed session frees
/// its place.
#[tokio::test]
async fn live_sessions_are_capped_with_a_503_and_retry_after() {
    let s = server().http_options(HttpOptions::new().max_sessions(3));
    let router = s.router();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let res = router
            .clone()
            .oneshot(post(()).body(Body::from(initialize())).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        ids.push(res.headers()["mcp-session-id"].to_str().unwrap().to_owned());
        let _ = res.into_body().collect().await;
    }
    assert_eq!(s.live_sessions(), 3);
    let res = router
        .clone()
        .oneshot(post(()).body(Body::from(initialize())).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(res.headers()["retry-after"], "5");
    // A live session's own request is not refused.
    let list = post(())
        .header("mcp-session-id", &ids[0])
        .header("mcp-protocol-version", "2025-11-25")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        ))
        .unwrap();
    assert!(send(&router, list).await.0 < 300);
    // Closing one frees its place.
    let delete = axum::http::Request::delete("/")
        .header("host", "127.0.0.1:3000")
        .header("mcp-session-id", &ids[1])
        .header("mcp-protocol-version", "2025-11-25")
        .body(Body::empty())
        .unwrap();
    // 204 (rmcp's 202 makes the Python SDK report a failed termination).
    assert_eq!(send(&router, delete).await.0, 204);
    let freed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while s.live_sessions() > 2 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(freed.is_ok(), "the closed session is still counted");
    let (status, _) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
    assert_eq!(status, 200);
}

/// Sessions a client abandons (never closes) end after the idle timeout and
/// leave the count: still live just before it, gone after it (tokio's paused
/// clock).
#[tokio::test(start_paused = true)]
async fn abandoned_sessions_end_after_the_idle_timeout() {
    use std::time::Duration;
    let idle = Duration::from_secs(60);
    let s = server().http_options(
        HttpOptions::new()
            .max_sessions(5)
            .session_idle_timeout(idle),
    );
    let router = s.router();
    for _ in 0..5 {
        let (status, _) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
        assert_eq!(status, 200);
    }
    assert_eq!(s.live_sessions(), 5);
    tokio::time::sleep(idle - Duration::from_secs(5)).await;
    assert_eq!(
        s.live_sessions(),
        5,
        "a session ended before its idle timeout"
    );
    let gone = tokio::time::timeout(Duration::from_secs(20), async {
        while s.live_sessions() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        gone.is_ok(),
        "{} sessions outlived the idle timeout",
        s.live_sessions()
    );
    let (status, _) = send(&router, post(()).body(Body::from(initialize())).unwrap()).await;
    assert_eq!(status, 200);
}
