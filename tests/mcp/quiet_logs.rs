//! A secret sent in a `tools/call` never reaches any log, rmcp's own included:
//! every event of every target is captured at TRACE while the call goes through
//! the stream transport (what stdio uses) and through HTTP. The clients here
//! are raw JSON (an rmcp client would log its own request).

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use toolmark::mcp::McpServer;

use crate::*;

/// A TRACE capture for every target, for this thread (the tests run on a
/// current-thread runtime, so every task the server spawns is on it).
fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    crate::logs::capture_at(tracing::Level::TRACE)
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

fn pay_call(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "pay.send", "arguments": {"to": "ada", "amount": 5, "card": SECRET}}})
    .to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn rmcp_never_logs_a_secret_argument_over_the_stream_transport() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve_transport(a).await });
    let (read, mut write) = tokio::io::split(b);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(format!("{}\n", initialize()).as_bytes())
        .await
        .unwrap();
    lines.next_line().await.unwrap().unwrap();
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    write
        .write_all(format!("{}\n", pay_call(2)).as_bytes())
        .await
        .unwrap();
    let answer = loop {
        let line = lines.next_line().await.unwrap().unwrap();
        if line.contains("\"id\":2") {
            break line;
        }
    };
    assert!(answer.contains("\"paid\":5"), "{answer}");
    assert!(
        log.get().contains(&"paid 5 to ada".to_owned()),
        "the tool got its arguments"
    );
    let text = logs.text();
    assert!(
        text.contains("rmcp::service") && text.contains("received request"),
        "rmcp's logs were not captured:\n{text}"
    );
    assert!(!text.contains(SECRET), "a secret in the logs:\n{text}");
    assert!(
        // Four digits alone turn up by chance in the logs' random ids.
        !text.contains("4111-1111") && !text.contains("SECRET-42"),
        "part of a secret in the logs:\n{text}"
    );
}

/// One HTTP/1.1 POST on a fresh connection; the whole answer.
async fn post(addr: std::net::SocketAddr, session: Option<&str>, body: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let session = session.map_or(String::new(), |id| {
        format!("mcp-session-id: {id}\r\nmcp-protocol-version: 2025-11-25\r\n")
    });
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{session}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    answer
}

/// `server` over HTTP on a loopback port, with a 2025-11-25 session opened:
/// its address and session id.
async fn http_session(server: McpServer) -> (std::net::SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let init = post(addr, None, &initialize()).await;
    let id = init
        .lines()
        .find_map(|l| {
            l.strip_prefix("mcp-session-id: ")
                .or_else(|| l.strip_prefix("Mcp-Session-Id: "))
        })
        .unwrap_or_else(|| panic!("no session: {init}"))
        .trim()
        .to_owned();
    post(
        addr,
        Some(&id),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
    )
    .await;
    (addr, id)
}

#[tokio::test(flavor = "current_thread")]
async fn rmcp_never_logs_a_secret_argument_over_http() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let (addr, id) = http_session(McpServer::new(approving_app(&log))).await;
    let answer = post(addr, Some(&id), &pay_call(2)).await;
    assert!(
        answer.contains("\\\"paid\\\":5") || answer.contains("\"paid\":5"),
        "{answer}"
    );
    assert!(
        log.get().contains(&"paid 5 to ada".to_owned()),
        "the tool got its arguments"
    );
    let text = logs.text();
    assert!(
        text.contains("received request"),
        "rmcp's logs were not captured:\n{text}"
    );
    assert!(!text.contains(SECRET), "a secret in the logs:\n{text}");
    assert!(
        // Four digits alone turn up by chance in the logs' random ids.
        !text.contains("4111-1111") && !text.contains("SECRET-42"),
        "part of a secret in the logs:\n{text}"
    );
}

/// A `tools/call` whose `arguments` is not an object is a custom request to rmcp,
/// which logs its params: over HTTP rmcp sees a stand-in, the reply is the same
/// error, and no log shows the value.
#[tokio::test(flavor = "current_thread")]
async fn arguments_that_are_no_object_never_reach_rmcps_logs_over_http() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let (addr, id) = http_session(McpServer::new(approving_app(&log))).await;
    let mut replies = Vec::new();
    for (n, arguments) in [json!(SECRET), json!([SECRET, 4111])]
        .into_iter()
        .enumerate()
    {
        let body = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
            "params": {"name": "pay.send", "arguments": arguments}})
        .to_string();
        let answer = post(addr, Some(&id), &body).await;
        assert!(answer.contains("\"error\""), "{answer}");
        assert!(!answer.contains(SECRET), "{answer}");
        replies.push(answer);
    }
    // The stand-in gets the reply the value got: rmcp answers by the method.
    let stand_in = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "pay.send", "arguments": "[hidden]"}})
    .to_string();
    // The JSON-RPC message of an answer (an SSE `data:` line or a JSON body).
    let message_of = |a: &str| -> serde_json::Value {
        a.lines()
            .filter_map(|l| l.strip_prefix("data: ").or(Some(l)))
            .find_map(|l| {
                serde_json::from_str::<serde_json::Value>(l.trim())
                    .ok()
                    .filter(serde_json::Value::is_object)
            })
            .unwrap_or_else(|| panic!("no message in {a}"))
    };
    let stand_in_reply = message_of(&post(addr, Some(&id), &stand_in).await);
    assert_eq!(stand_in_reply, message_of(&replies[0]));
    assert!(log.get().is_empty(), "the tool never ran");
    let text = logs.text();
    assert!(
        text.contains("received request"),
        "rmcp's logs were not captured:\n{text}"
    );
    assert!(!text.contains(SECRET), "a secret in the logs:\n{text}");
}
