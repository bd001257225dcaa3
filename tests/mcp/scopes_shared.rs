//! A scope shared across instances (`ToolmarkBuilder::share_scope`) reaches MCP
//! clients: hidden or shown on instance A, a 2025-11-25 session on instance B
//! gets `notifications/tools/list_changed` and B's next `tools/list` agrees.
//! Two toolmarks on one `MemoryStore` (Redis across processes: tests/store and
//! tests/mcp/instances.rs).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use toolmark::mcp::McpServer;
use toolmark::store::MemoryStore;
use toolmark::{ScopeOptions, ToolError, ToolSpec, Toolmark};

use crate::*;

fn instance(store: &MemoryStore) -> Toolmark {
    let tm = Toolmark::builder()
        .confirm_store(store.clone())
        .seal_key([3; 32])
        .scope_at("admin", ScopeOptions::hidden())
        .share_scope("admin")
        .build()
        .unwrap();
    tm.scope_at("admin")
        .register(
            ToolSpec::new("stats", "Usage statistics")
                .handler(|_ctx, _input| async { Ok::<_, ToolError>(json!(1)) }),
        )
        .unwrap();
    tm.register(
        ToolSpec::new("ping", "Ping")
            .handler(|_ctx, _input| async { Ok::<_, ToolError>(json!(1)) }),
        Default::default(),
    )
    .unwrap();
    tm
}

#[tokio::test(start_paused = true)]
async fn a_scope_shown_or_hidden_on_one_instance_notifies_the_sessions_of_another() {
    let store = MemoryStore::new();
    let (a, b) = (instance(&store), instance(&store));
    let client = Client::default();
    let changed = client.list_changed.clone();
    let session = connect(&McpServer::new(b), client).await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    assert_eq!(names(session.list_all_tools().await.unwrap()), ["ping"]);

    a.scope_at("admin").set_when(true);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(changed.load(Ordering::SeqCst), 1);
    assert_eq!(
        names(session.list_all_tools().await.unwrap()),
        ["admin.stats", "ping"]
    );

    a.scope_at("admin").set_when(false);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(changed.load(Ordering::SeqCst), 2);
    assert_eq!(names(session.list_all_tools().await.unwrap()), ["ping"]);

    // The same state again changes nothing: no notification.
    a.scope_at("admin").set_when(false);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(changed.load(Ordering::SeqCst), 2);
    session.cancel().await.unwrap();
}
