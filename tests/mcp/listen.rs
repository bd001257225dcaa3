//! 2026-07-28 `subscriptions/listen`: a change the client makes as soon as it
//! has the acknowledgment is notified. rmcp acknowledges a stream before it
//! calls the handler's `listen`, so the stream measures from what the client
//! saw when it was accepted (a stream that started from its own first poll
//! lost a change made in between: seen from the Python SDK under load).

use serde_json::{json, Value};
use toolmark::mcp::McpServer;

use crate::stdio_fast::{meta, Wire};
use crate::*;

/// Opens a listen stream for the tool list on `wire` and reads up to its
/// acknowledgment.
async fn listen(wire: &mut Wire) {
    wire.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                      "params": {"notifications": {"toolsListChanged": true},
                                 "_meta": meta(json!({}))}}),
    )
    .await;
    loop {
        let line = wire.recv().await;
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["method"] == "notifications/subscriptions/acknowledged" {
            assert_eq!(
                v["params"]["notifications"]["toolsListChanged"], true,
                "{line}"
            );
            return;
        }
        assert!(v.get("id").is_none(), "before the acknowledgment: {line}");
    }
}

/// The next `notifications/tools/list_changed` (other lines skipped); `None`
/// when the server writes none for 5 s of the (paused) clock.
async fn list_changed(wire: &mut Wire) -> Option<String> {
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            let line = wire.recv().await;
            if line.contains("notifications/tools/list_changed") {
                return line;
            }
        }
    })
    .await
    .ok()
}

async fn change_right_after_the_acknowledgment(fast: bool) {
    let tm = approving_app(&Log::default());
    let extra = tm.scope("extra");
    // The client is a task of its own, woken by the acknowledgment's bytes
    // before the server's stream runs on: it hides a scope with tools at once.
    let client = tokio::spawn(async move {
        let mut wire = Wire::open(McpServer::new(tm.clone()), fast).await;
        listen(&mut wire).await;
        extra.set_when(false);
        let hidden = list_changed(&mut wire).await;
        tm.scope("extra").set_when(true);
        let shown = list_changed(&mut wire).await;
        (hidden, shown)
    });
    let (hidden, shown) = client.await.unwrap();
    assert!(
        hidden.is_some(),
        "fast {fast}: the change right after the acknowledgment was not notified"
    );
    assert!(
        shown.is_some(),
        "fast {fast}: a later change was not notified"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_change_right_after_the_acknowledgment_is_notified_serve_io() {
    change_right_after_the_acknowledgment(true).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_change_right_after_the_acknowledgment_is_notified_serve_transport() {
    change_right_after_the_acknowledgment(false).await;
}
