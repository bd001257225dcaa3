//! The secret canary (`tests/support/canary.rs`) on tasks whose tools ask their
//! client: a marked card number sent to a tool's sensitive `card` appears in no
//! task's creation, status, questions (`inputRequests`, the first quoting the
//! card), partial or final state, no `failed` error of a tool that panicked
//! quoting it, no `completed` error result of a tool that failed quoting it, no
//! key or value the task store was given, and no `tracing` event or span of any
//! target at TRACE.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{CallToolResponse, UpdateTaskParams};
use serde_json::{json, Value};
use toolmark::mcp::{McpServer, MemoryTaskStore, TaskStore};
use toolmark::store::StoreError;
use toolmark::Toolmark;

use crate::canary::{self, Canary};
use crate::tasks_ask::{accept, answers, asking_app, connect, get, task_id, task_options, until};
use crate::*;

/// A task store that keeps every key and value it is given, for the canary.
#[derive(Clone, Default)]
struct Recording {
    inner: Arc<MemoryTaskStore>,
    written: Arc<Mutex<Vec<String>>>,
}

impl TaskStore for Recording {
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: String,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.written
            .lock()
            .unwrap()
            .push(format!("{key} = {value}"));
        self.inner.put(key, value, ttl)
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.inner.get(key)
    }
}

fn terminal(v: &Value) -> bool {
    matches!(
        v["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

#[tokio::test(start_paused = true)]
async fn no_task_surface_shows_a_secret() {
    let trace = canary::capture();
    let mut c = Canary::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    let store = Recording::default();
    let log = Log::default();
    let server = McpServer::new(asking_app(Toolmark::builder(), &log))
        .tasks(task_options().store(store.clone()));
    let client = connect(
        &server,
        Client {
            elicit: Some(rmcp::model::ElicitationAction::Accept),
            tasks: true,
            ..Client::default()
        },
    )
    .await;
    let mut response = |what: &str, r: &CallToolResponse| {
        seen.push((what.to_owned(), format!("{r:?}")));
        if let CallToolResponse::Task(t) = r {
            seen.push((what.to_owned(), serde_json::to_string(t).unwrap()));
        }
    };

    // Two questions (the first quotes the card), answered one at a time.
    let card = c.variant(1);
    let r = client
        .call_tool_once(call("t.check", json!({"card": card})))
        .await
        .unwrap();
    response("the task created", &r);
    let id = task_id(&r);
    let mut states = Vec::new();
    let asking = until(&client, &id, |v| {
        v["inputRequests"].as_object().is_some_and(|o| o.len() == 2)
    })
    .await;
    assert!(
        asking.to_string().contains("elicitation/create"),
        "{asking}"
    );
    states.push(("asking", asking));
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("elicit-0", accept("ada"))]),
        ))
        .await
        .unwrap();
    states.push(("partly answered", get(&client, &id).await));
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("elicit-1", accept("bo"))]),
        ))
        .await
        .unwrap();
    let done = until(&client, &id, terminal).await;
    assert_eq!(done["status"], "completed", "{done}");
    states.push(("completed", done));

    // A panic quoting the card, a tool error quoting another.
    let crash_card = c.variant(3);
    let r = client
        .call_tool_once(call("t.crash", json!({"card": crash_card})))
        .await
        .unwrap();
    response("the crashing task created", &r);
    let failed = until(&client, &task_id(&r), terminal).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    states.push(("failed", failed));
    let fail_card = c.variant(2);
    let r = client
        .call_tool_once(call("t.fail", json!({"card": fail_card})))
        .await
        .unwrap();
    response("the failing task created", &r);
    let completed = until(&client, &task_id(&r), terminal).await;
    assert_eq!(completed["result"]["isError"], true, "{completed}");
    states.push(("a tool error", completed));
    client.cancel().await.unwrap();

    assert_eq!(c.secrets().len(), 3);
    for (what, v) in &states {
        c.assert_absent(what, v.to_string());
    }
    for (what, text) in &seen {
        c.assert_absent(what, text);
    }
    let written = store.written.lock().unwrap().clone();
    assert!(written.len() >= 6, "{written:?}");
    for w in &written {
        c.assert_absent("the task store", w);
    }
    let traced = trace.take();
    let mut checked = 0;
    for line in traced.lines() {
        // The requests as the in-process client sends them (and rmcp reads them
        // before the server does) hold what the client sent.
        if line.contains("CallToolRequest") {
            continue;
        }
        checked += 1;
        c.assert_absent("tracing at TRACE", line);
    }
    assert!(checked > 20, "{checked} lines");
}
