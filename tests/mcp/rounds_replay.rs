//! A tool's own question round (`ctx.elicit` / `ctx.sample` as `input_required`,
//! MCP 2026-07-28) is single use, as a confirmation's handle is: the retry that
//! answers it runs the tool once; the same `requestState` sent again (after the
//! retry, or racing it, on the same instance or on another one sharing the
//! confirmation store) is `confirmation_expired` and runs nothing.

use std::sync::Arc;

use rmcp::model::{
    CallToolResponse, ElicitResult, ElicitationAction, InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::{Toolmark, ToolmarkBuilder};

use crate::*;

async fn connect_2026(server: &McpServer) -> RunningService<RoleClient, Client> {
    let (a, b) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    Client {
        elicit: Some(ElicitationAction::Accept),
        sampling: true,
        ..Client::default()
    }
    .serve_with_lifecycle(
        b,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("client discovers")
}

/// `ship` asks the user "Ship the order?" and ships on accept; `muse` asks
/// the client's model and ships its idea. Every shipment is logged.
fn shop(builder: ToolmarkBuilder, log: &Log) -> Toolmark {
    let tm = builder.build().unwrap();
    let l = log.clone();
    tm.register(
        toolmark::ToolSpec::typed(
            "ship",
            "Ships the order after the user's yes",
            move |ctx: toolmark::ToolContext, _: toolmark::NoInput| {
                let l = l.clone();
                async move {
                    let schema =
                        json!({"type": "object", "properties": {"sure": {"type": "boolean"}}});
                    match ctx.elicit("Ship the order?", schema).await? {
                        toolmark::Elicited::Accept(_) => {
                            l.push("shipped");
                            Ok::<_, toolmark::ToolError>(json!("shipped"))
                        }
                        _ => Ok(json!("kept")),
                    }
                }
            },
        ),
        Default::default(),
    )
    .unwrap();
    let l = log.clone();
    tm.register(
        toolmark::ToolSpec::typed(
            "muse",
            "Ships the model's idea",
            move |ctx: toolmark::ToolContext, _: toolmark::NoInput| {
                let l = l.clone();
                async move {
                    let idea = ctx.sample(toolmark::SampleRequest::new("An idea?")).await?;
                    l.push(format!("shipped {}", idea.text));
                    Ok::<_, toolmark::ToolError>(json!("shipped"))
                }
            },
        ),
        Default::default(),
    )
    .unwrap();
    tm
}

fn accept() -> Value {
    serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap()
}

fn sampled() -> Value {
    json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "socks"}})
}

fn retry(tool: &str, state: &str, key: &str, answer: Value) -> rmcp::model::CallToolRequestParams {
    let mut r = InputResponses::new();
    r.insert(key.to_owned(), answer);
    call(tool, json!({}))
        .with_request_state(state.to_owned())
        .with_input_responses(r)
}

fn state_of(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::InputRequired(ir) => ir.request_state.clone().expect("a requestState"),
        other => panic!("expected a round, got {other:?}"),
    }
}

/// The refusal code of a complete, failed result (`None`: it succeeded).
fn refusal(r: &CallToolResponse) -> Option<String> {
    match r {
        CallToolResponse::Complete(r) if r.is_error == Some(true) => {
            let text = serde_json::to_string(r).unwrap();
            Some(
                ["confirmation_expired", "unavailable", "invalid"]
                    .into_iter()
                    .find(|c| text.contains(c))
                    .unwrap_or("other")
                    .to_owned(),
            )
        }
        CallToolResponse::Complete(_) => None,
        other => panic!("expected a result, got {other:?}"),
    }
}

/// Ask, answer (the tool runs once), then send the same retry again: refused
/// `confirmation_expired`, nothing runs; for an elicitation and a sampling round.
#[tokio::test]
async fn a_question_rounds_retry_replayed_after_it_completed_runs_nothing() {
    let log = Log::default();
    let server = McpServer::new(shop(Toolmark::builder(), &log));
    let client = connect_2026(&server).await;
    for (tool, key, answer, done) in [
        ("ship", "elicit-0", accept(), "shipped"),
        ("muse", "sample-0", sampled(), "shipped socks"),
    ] {
        let first = client.call_tool_once(call(tool, json!({}))).await.unwrap();
        let state = state_of(&first);
        let ok = client
            .call_tool_once(retry(tool, &state, key, answer.clone()))
            .await
            .unwrap();
        assert_eq!(refusal(&ok), None, "{ok:?}");
        let again = client
            .call_tool_once(retry(tool, &state, key, answer))
            .await
            .unwrap();
        assert_eq!(
            refusal(&again).as_deref(),
            Some("confirmation_expired"),
            "{again:?}"
        );
        assert_eq!(
            log.get().iter().filter(|l| *l == done).count(),
            1,
            "{:?}",
            log.get()
        );
    }
    // A round re-asked (a retry without its answer) is used too: its state
    // does not come back.
    let first = client
        .call_tool_once(call("ship", json!({})))
        .await
        .unwrap();
    let state = state_of(&first);
    let asked_again = client
        .call_tool_once(retry("ship", &state, "other", accept()))
        .await
        .unwrap();
    let fresh = state_of(&asked_again);
    assert_ne!(fresh, state);
    let replay = client
        .call_tool_once(retry("ship", &state, "elicit-0", accept()))
        .await
        .unwrap();
    assert_eq!(refusal(&replay).as_deref(), Some("confirmation_expired"));
    let ok = client
        .call_tool_once(retry("ship", &fresh, "elicit-0", accept()))
        .await
        .unwrap();
    assert_eq!(refusal(&ok), None, "{ok:?}");
    assert_eq!(log.get(), ["shipped", "shipped socks", "shipped"]);
    client.cancel().await.unwrap();
}

/// Eight copies of the answering retry at once: one runs the tool, the others
/// are `confirmation_expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_of_one_round_racing_run_the_tool_once() {
    let log = Log::default();
    let server = McpServer::new(shop(Toolmark::builder(), &log));
    let client = Arc::new(connect_2026(&server).await);
    let first = client
        .call_tool_once(call("ship", json!({})))
        .await
        .unwrap();
    let state = state_of(&first);
    let runs = (0..8).map(|_| {
        let (client, state) = (Arc::clone(&client), state.clone());
        tokio::spawn(async move {
            client
                .call_tool_once(retry("ship", &state, "elicit-0", accept()))
                .await
                .unwrap()
        })
    });
    let mut codes = Vec::new();
    for run in runs.collect::<Vec<_>>() {
        codes.push(refusal(&run.await.unwrap()));
    }
    assert_eq!(codes.iter().filter(|c| c.is_none()).count(), 1, "{codes:?}");
    assert!(
        codes.iter().flatten().all(|c| c == "confirmation_expired"),
        "{codes:?}"
    );
    assert_eq!(log.get(), ["shipped"]);
}

/// Two instances share one Redis: the round asked on one is answered on the
/// other (it runs once); the same retry, on either instance, and racing copies
/// on both, run nothing more.
#[cfg(feature = "redis")]
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_is_single_use_across_instances_on_redis() {
    use toolmark::store::{RedisStore, RedisStoreOptions};
    let url = crate::external::redis_url();
    let prefix = format!("tm-rounds-{}", std::process::id());
    let log = Log::default();
    let mut servers = Vec::new();
    let mut tms = Vec::new();
    for _ in 0..2 {
        let store = RedisStore::connect_with(&url, RedisStoreOptions::default().prefix(&prefix))
            .await
            .expect("the test Redis is reachable");
        let tm = shop(
            Toolmark::builder().seal_key([7; 32]).confirm_store(store),
            &log,
        );
        servers.push(McpServer::new(tm.clone()));
        tms.push(tm);
    }
    let one = Arc::new(connect_2026(&servers[0]).await);
    let two = Arc::new(connect_2026(&servers[1]).await);
    let first = one.call_tool_once(call("ship", json!({}))).await.unwrap();
    let state = state_of(&first);
    let ok = two
        .call_tool_once(retry("ship", &state, "elicit-0", accept()))
        .await
        .unwrap();
    assert_eq!(refusal(&ok), None, "{ok:?}");
    for client in [&one, &two] {
        let again = client
            .call_tool_once(retry("ship", &state, "elicit-0", accept()))
            .await
            .unwrap();
        assert_eq!(
            refusal(&again).as_deref(),
            Some("confirmation_expired"),
            "{again:?}"
        );
    }
    // Racing on both instances: one runs.
    let first = one.call_tool_once(call("ship", json!({}))).await.unwrap();
    let state = state_of(&first);
    let runs: Vec<_> = (0..6)
        .map(|i| {
            let client = Arc::clone(if i % 2 == 0 { &one } else { &two });
            let state = state.clone();
            tokio::spawn(async move {
                client
                    .call_tool_once(retry("ship", &state, "elicit-0", accept()))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut codes = Vec::new();
    for run in runs {
        codes.push(refusal(&run.await.unwrap()));
    }
    assert_eq!(codes.iter().filter(|c| c.is_none()).count(), 1, "{codes:?}");
    assert_eq!(log.get(), ["shipped", "shipped"]);
    // The placeholder of a used round is no pending confirmation.
    for tm in &tms {
        assert!(tm.pending_confirmations_async().await.unwrap().is_empty());
    }
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// Without Redis this test is reported ignored, never `ok`.
#[cfg(feature = "redis")]
#[test]
fn the_redis_round_test_is_reported_ignored_unless_redis_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "redis"),
        &["rounds_replay::a_round_is_single_use_across_instances_on_redis"],
    );
}
