//! `McpServer::serve_io` parses each line once, into rmcp's own message type,
//! and hands rmcp's service parsed messages: a line that does not parse gets
//! the reply rmcp's stdio transport gives it (none, or an `Invalid Request`
//! with a null id), the same bytes as `serve_transport` over rmcp's own
//! transport, and nothing of the line reaches any log, at TRACE (rmcp's
//! transport logs such a line, and serde's error quoting it, at DEBUG). A
//! 2025-11-25 session, every line of which goes to rmcp's service, is
//! byte-identical to `serve_transport`.

use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{json, Value};
use toolmark::mcp::{Elicitation, McpServer};

use crate::stdio_fast::{capture, meta, Wire};
use crate::*;

/// A raw line client of a 2025-11-25 session (opened by `initialize`), on
/// `serve_io` (`fast`) or `serve_transport`; with the `initialize` answer.
async fn open_2025(server: McpServer, fast: bool, capabilities: Value) -> (Wire, String) {
    let mut wire = Wire::connect(server, fast);
    let init = wire
        .ask(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .await;
    wire.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    (wire, init)
}

/// Send `raw` (one line, its ending included), then `marker`; the lines
/// written before the marker's answer (whose id is `marker_id`).
async fn replies(wire: &mut Wire, raw: &[u8], marker: &Value, marker_id: u64) -> Vec<String> {
    use tokio::io::AsyncWriteExt;
    let w = wire.w.as_mut().unwrap();
    w.write_all(raw).await.unwrap();
    w.flush().await.unwrap();
    wire.send(marker).await;
    let mut before = Vec::new();
    loop {
        let line = wire.recv().await;
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("whole: {line}"));
        if v["id"] == json!(marker_id) {
            assert!(v.get("result").is_some(), "{line}");
            return before;
        }
        before.push(line);
    }
}

/// What rmcp's transport answers a line with.
enum Expect {
    /// Nothing: unparsable, ignored, or dropped.
    Nothing,
    /// An `Invalid Request` error without an id.
    Invalid,
    /// An error for the request's id (rmcp read it as a custom request).
    Error,
    /// The request's answer.
    Answer,
}

/// Malformed lines of every class, each with the canary secret, and lines
/// rmcp reads after trimming (a byte-order mark, CRLF): `(what, the line)`.
fn malformed() -> Vec<(&'static str, Expect, Vec<u8>)> {
    let m = meta(json!({}));
    let line = |v: Value| format!("{v}\n").into_bytes();
    vec![
        (
            "bad JSON (cut short)",
            Expect::Nothing,
            format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"pay.send","arguments":{{"card":"{SECRET}"}}"#
            )
            .into_bytes()
            .into_iter()
            .chain(*b"\n")
            .collect(),
        ),
        ("not JSON",
            Expect::Nothing, format!("card {SECRET}\n").into_bytes()),
        (
            "a string `arguments`",
            Expect::Error,
            line(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                        "params": {"name": "pay.send", "arguments": SECRET, "_meta": m}})),
        ),
        (
            "`arguments` an array",
            Expect::Error,
            line(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                        "params": {"name": "pay.send", "arguments": [SECRET]}})),
        ),
        (
            "an error of no shape",
            Expect::Invalid,
            line(json!({"jsonrpc": "2.0", "id": 7, "error": SECRET})),
        ),
        (
            "a response with neither result nor error",
            Expect::Invalid,
            line(json!({"jsonrpc": "2.0", "id": 7, "card": SECRET})),
        ),
        ("JSON of no message",
            Expect::Invalid, line(json!({"card": SECRET}))),
        ("a JSON array",
            Expect::Invalid, line(json!([SECRET]))),
        (
            "a wrong version",
            Expect::Invalid,
            line(json!({"jsonrpc": "1.0", "id": 8, "method": "ping", "params": {"card": SECRET}})),
        ),
        (
            "a non-standard notification",
            Expect::Nothing,
            line(json!({"jsonrpc": "2.0", "method": "notifications/card",
                        "params": {"card": SECRET}})),
        ),
        (
            "an LSP-style notification",
            Expect::Nothing,
            line(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                        "params": {"text": SECRET}})),
        ),
        (
            "a byte-order mark before bad JSON",
            Expect::Nothing,
            [b"\xEF\xBB\xBF".as_slice(), format!("{{{SECRET}\n").as_bytes()].concat(),
        ),
        ("an empty line",
            Expect::Nothing, b"\n".to_vec()),
        ("a CR alone",
            Expect::Nothing, b"\r\n".to_vec()),
        ("a byte-order mark alone",
            Expect::Nothing, b"\xEF\xBB\xBF\n".to_vec()),
        (
            "invalid UTF-8",
            Expect::Nothing,
            [b"{\"card\":\"\xFF".as_slice(), SECRET.as_bytes(), b"\"}\n"].concat(),
        ),
        (
            "a line over 16 MiB",
            Expect::Nothing,
            format!(
                r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"notes.add","arguments":{{"text":"{SECRET}{}"}}}}}}"#,
                "x".repeat(16 << 20)
            )
            .into_bytes()
            .into_iter()
            .chain(*b"\n")
            .collect(),
        ),
        (
            "a well-formed request with a byte-order mark, CRLF",
            Expect::Answer,
            [
                b"\xEF\xBB\xBF".as_slice(),
                json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                       "params": {"name": "notes.count", "_meta": m}})
                .to_string()
                .as_bytes(),
                b"\r\n",
            ]
            .concat(),
        ),
    ]
}

/// Every malformed line on one session kind: serve_io's replies and logs,
/// then serve_transport's, compared.
async fn compare(
    open: impl Fn(bool) -> std::pin::Pin<Box<dyn std::future::Future<Output = Wire>>>,
) {
    // Answered by rmcp's service on both paths, so after what it answers
    // for the line before.
    let marker = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list",
                        "params": {"_meta": meta(json!({}))}});
    let (logs, guard) = capture();
    let mut fast = open(true).await;
    let mut fast_replies = Vec::new();
    for (what, _, raw) in malformed() {
        fast_replies.push((what, replies(&mut fast, &raw, &marker, 99).await));
    }
    let fast_logs = logs.take();
    drop(guard);
    assert!(
        !fast_logs.contains(SECRET) && !fast_logs.contains("4111-1111"),
        "a secret in serve_io's logs: {fast_logs}"
    );
    assert!(
        fast_logs.contains("an incoming line of no message's shape"),
        "the logs were captured: {fast_logs}"
    );
    // rmcp's own transport, for the same lines: the replies to match (and
    // its DEBUG log quotes the line: what the front keeps out).
    let (logs, _guard) = capture();
    let mut slow = open(false).await;
    for (what, expect, raw) in malformed() {
        let slow_replies = replies(&mut slow, &raw, &marker, 99).await;
        let (_, fast_replies) = fast_replies.iter().find(|(w, _)| *w == what).unwrap();
        assert_eq!(fast_replies, &slow_replies, "{what}");
        match expect {
            Expect::Nothing => assert!(slow_replies.is_empty(), "{what}: {slow_replies:?}"),
            Expect::Invalid => assert_eq!(
                slow_replies,
                [r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request"}}"#],
                "{what}"
            ),
            Expect::Error => {
                assert_eq!(slow_replies.len(), 1, "{what}: {slow_replies:?}");
                assert!(
                    slow_replies[0].contains(r#""id":6,"error""#),
                    "{slow_replies:?}"
                );
            }
            Expect::Answer => {
                assert_eq!(slow_replies.len(), 1, "{what}: {slow_replies:?}");
                assert!(
                    slow_replies[0].contains(r#""result":3"#),
                    "{slow_replies:?}"
                );
            }
        }
    }
    assert!(
        logs.take().contains(SECRET),
        "rmcp's own transport logs the line (the leak the front closes)"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn malformed_lines_get_rmcps_replies_and_no_log_sees_them_2026() {
    let tm = approving_app(&Log::default());
    compare(|fast| {
        let server = McpServer::new(tm.clone());
        Box::pin(async move { Wire::open(server, fast).await })
    })
    .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn malformed_lines_get_rmcps_replies_and_no_log_sees_them_2025() {
    let tm = approving_app(&Log::default());
    compare(|fast| {
        let server = McpServer::new(tm.clone());
        Box::pin(async move { open_2025(server, fast, json!({})).await.0 })
    })
    .await;
}

/// A 2025-11-25 session: initialize, list, a call, a confirmation by
/// elicitation (the server asks the client; it accepts, then declines).
async fn session_2025(wire: &mut Wire, init: String) -> Vec<String> {
    let mut seen = vec![init];
    seen.push(
        wire.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await,
    );
    seen.push(
        wire.ask(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "notes.add", "arguments": {"text": "hi"}}}))
            .await,
    );
    for (id, action) in [
        (4, ElicitationAction::Accept),
        (5, ElicitationAction::Decline),
    ] {
        let asking = wire
            .ask(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "pay.send",
                                     "arguments": {"to": "ada", "amount": 5, "card": SECRET}}}))
            .await;
        let v: Value = serde_json::from_str(&asking).unwrap();
        assert_eq!(v["method"], "elicitation/create", "{asking}");
        assert!(!asking.contains(SECRET), "{asking}");
        wire.send(&json!({"jsonrpc": "2.0", "id": v["id"],
                          "result": serde_json::to_value(ElicitResult::new(action)).unwrap()}))
            .await;
        seen.push(asking);
        seen.push(wire.recv().await);
    }
    seen
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_2025_session_is_byte_identical_to_serve_transport() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = app(client_confirms(Toolmark::builder()), &log);
    let server = || McpServer::new(tm.clone()).confirm_by_elicitation(Elicitation::consequential());
    let capabilities = json!({"elicitation": {"form": {}}});
    let (mut fast, init) = open_2025(server(), true, capabilities.clone()).await;
    let a = session_2025(&mut fast, init).await;
    let (mut slow, init) = open_2025(server(), false, capabilities).await;
    let b = session_2025(&mut slow, init).await;
    assert_eq!(a, b);
    assert!(a[0].contains("2025-11-25"), "{}", a[0]);
    assert!(a[1].contains("pay.send"), "{}", a[1]);
    assert!(a[4].contains(r#""paid":5"#), "{}", a[4]);
    assert!(!a[6].contains(r#""paid""#), "{}", a[6]);
    assert_eq!(
        log.get().iter().filter(|l| l.starts_with("paid")).count(),
        2,
        "{:?}",
        log.get()
    );
    let text = logs.take();
    assert!(!text.contains(SECRET), "{text}");
    for wire in [&mut fast, &mut slow] {
        wire.end().await;
        assert_eq!(wire.recv().await, "");
    }
    fast.served.await.unwrap().unwrap();
    slow.served.await.unwrap().unwrap();
}
