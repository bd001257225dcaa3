//! Tasks (2026-07-28, the Tasks extension) whose tools ask their client: a
//! task's `ctx.elicit`/`ctx.sample` are its `inputRequests` (several at once),
//! `tasks/update` answers them (partly, or wholly), each answer only the
//! question it was given for, and the tool goes on where it waited; before the
//! call is a task a question is a multi round-trip round. Also: a panicking
//! tool's task is `failed`, a failing tool's `completed` with `isError`; per-tool
//! task support; a task's questions answered on another instance (Redis).
//! No card number reaches a task's status, questions or result.

use std::time::Duration;

use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, InputResponses, ProtocolVersion,
    UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolmark::mcp::{McpServer, TaskOptions, TaskSupport};
use toolmark::{Content, Elicited, NoInput, ToolError, ToolSpec, Toolmark};

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    card: String,
}

const WORK: Duration = Duration::from_secs(2);

fn name_of(e: Elicited) -> String {
    match e {
        Elicited::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
        Elicited::Decline => "declined".to_owned(),
        Elicited::Cancel => "cancelled".to_owned(),
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"]
    })
}

/// The tools: `t.check` works, then asks two questions at once (the first
/// quotes the sensitive card); `t.title` works, then asks the model;
/// `t.crash` panics quoting the card; `t.fail` fails; `t.quick` answers at once
/// (`required`); `t.ask_first` asks at once (`required`); `t.forbid` works
/// long (`forbidden`).
pub(crate) fn asking_app(builder: toolmark::ToolmarkBuilder, log: &Log) -> Toolmark {
    let tm = builder.build().unwrap();
    let t = tm.scope("t");
    let l = log.clone();
    t.register(
        ToolSpec::typed("check", "Checks a card", move |ctx, c: Card| {
            let l = l.clone();
            async move {
                tokio::time::sleep(WORK).await;
                let (a, b) = tokio::join!(
                    ctx.elicit(format!("Is {} yours?", c.card), schema()),
                    ctx.elicit("Who pays?", schema())
                );
                let (a, b) = (name_of(a?), name_of(b?));
                l.push(format!("checked: {a} / {b}"));
                Ok::<_, ToolError>(Content::text(format!("{} ok: {a} / {b}", c.card)))
            }
        })
        .effect(toolmark::Effect::Read)
        .sensitive(["card"]),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("title", "Asks the model", |ctx, _: NoInput| async move {
            tokio::time::sleep(WORK).await;
            let s = ctx.sample("A title, please").await?;
            Ok::<_, ToolError>(Content::text(format!("title: {}", s.text)))
        })
        .effect(toolmark::Effect::Read),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("crash", "Panics", |_ctx, c: Card| async move {
            tokio::time::sleep(WORK).await;
            if std::hint::black_box(true) {
                panic!("crashed holding {}", c.card);
            }
            Ok::<_, ToolError>(Content::text("unreachable"))
        })
        .effect(toolmark::Effect::Read)
        .sensitive(["card"]),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("fail", "Fails", |_ctx, c: Card| async move {
            tokio::time::sleep(WORK).await;
            Err::<(), _>(ToolError::new(format!("card {} refused", c.card)))
        })
        .effect(toolmark::Effect::Read)
        .sensitive(["card"]),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("quick", "Answers at once", |_ctx, _: NoInput| async move {
            Ok::<_, ToolError>(Content::text("quick"))
        })
        .effect(toolmark::Effect::Read),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("ask_first", "Asks at once", |ctx, _: NoInput| async move {
            let name = name_of(ctx.elicit("Your name?", schema()).await?);
            Ok::<_, ToolError>(Content::text(format!("Hello, {name}!")))
        })
        .effect(toolmark::Effect::Read),
    )
    .unwrap();
    t.register(
        ToolSpec::typed("forbid", "Works long", |_ctx, _: NoInput| async move {
            tokio::time::sleep(WORK).await;
            Ok::<_, ToolError>(Content::text("done in one answer"))
        })
        .effect(toolmark::Effect::Read),
    )
    .unwrap();
    tm
}

pub(crate) fn task_options() -> TaskOptions {
    TaskOptions::new()
        .after(Duration::from_millis(500))
        .poll(Duration::from_millis(50))
        .support("t.quick", TaskSupport::Required)
        .support("t.ask_first", TaskSupport::Required)
        .support("t.forbid", TaskSupport::Forbidden)
}

pub(crate) async fn connect(
    server: &McpServer,
    client: Client,
) -> RunningService<RoleClient, Client> {
    let (a, b) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    client
        .serve_with_lifecycle(
            b,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("client discovers")
}

fn asks_all(tasks: bool) -> Client {
    Client {
        elicit: Some(rmcp::model::ElicitationAction::Accept),
        sampling: true,
        tasks,
        ..Client::default()
    }
}

pub(crate) fn answers(pairs: &[(&str, Value)]) -> InputResponses {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

pub(crate) fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

pub(crate) fn task_id(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::Task(t) => t.task.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    }
}

pub(crate) async fn get(client: &RunningService<RoleClient, Client>, id: &str) -> Value {
    serde_json::to_value(client.get_task(GetTaskParams::new(id)).await.unwrap()).unwrap()
}

fn status(v: &Value) -> &str {
    v["status"].as_str().unwrap_or_default()
}

fn keys(v: &Value) -> Vec<String> {
    v["inputRequests"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Poll `tasks/get` (every 50 ms, at most 20 s) until `done` holds.
pub(crate) async fn until(
    client: &RunningService<RoleClient, Client>,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        last = get(client, id).await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task did not get there: {last}")
}

fn terminal(v: &Value) -> bool {
    matches!(status(v), "completed" | "failed" | "cancelled")
}

/// Two questions at once: both are the task's `inputRequests`; answering one
/// keeps the other pending (and only it); an answer under a key never asked,
/// or of the other kind, answers nothing; the second answer completes the
/// task with both answers. The card is in no question, status or result.
#[tokio::test(start_paused = true)]
async fn a_tasks_two_questions_are_answered_one_at_a_time() {
    let log = Log::default();
    let server = McpServer::new(asking_app(Toolmark::builder(), &log)).tasks(task_options());
    let client = connect(&server, asks_all(true)).await;
    let r = client
        .call_tool_once(call("t.check", json!({"card": SECRET})))
        .await
        .unwrap();
    let id = task_id(&r);
    assert!(!format!("{r:?}").contains(SECRET));
    let asking = until(&client, &id, |v| keys(v).len() == 2).await;
    assert_eq!(status(&asking), "input_required", "{asking}");
    assert_eq!(keys(&asking), ["elicit-0", "elicit-1"]);
    assert!(!asking.to_string().contains(SECRET), "{asking}");
    assert!(asking.to_string().contains("Who pays?"), "{asking}");
    let sampled = json!({"role": "assistant", "model": "m",
        "content": {"type": "text", "text": "x"}});
    // Nothing answered: a key never asked, a sampling result for a form.
    for nothing in [
        answers(&[("elicit-7", accept("mallory"))]),
        answers(&[("sample-0", sampled.clone())]),
        answers(&[("elicit-0", sampled)]),
        InputResponses::new(),
    ] {
        client
            .update_task(UpdateTaskParams::new(id.clone(), nothing))
            .await
            .expect("acknowledged");
        assert_eq!(keys(&get(&client, &id).await), ["elicit-0", "elicit-1"]);
    }
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("elicit-0", accept("ada"))]),
        ))
        .await
        .unwrap();
    let partly = get(&client, &id).await;
    assert_eq!(status(&partly), "input_required", "{partly}");
    assert_eq!(keys(&partly), ["elicit-1"]);
    assert!(log.get().is_empty());
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("elicit-1", accept("bo"))]),
        ))
        .await
        .unwrap();
    let done = until(&client, &id, terminal).await;
    assert_eq!(status(&done), "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("ok: ada / bo"), "{text}");
    assert!(!done.to_string().contains(SECRET), "{done}");
    assert_eq!(log.get(), ["checked: ada / bo"], "the tool ran once");
    client.cancel().await.unwrap();
}

/// `ctx.sample` inside a task: a `sample-N` request answered by the model's
/// result (an elicitation's answer does not fit it).
#[tokio::test(start_paused = true)]
async fn a_tasks_sampling_question_takes_only_a_sampling_result() {
    let server =
        McpServer::new(asking_app(Toolmark::builder(), &Log::default())).tasks(task_options());
    let client = connect(&server, asks_all(true)).await;
    let id = task_id(
        &client
            .call_tool_once(call("t.title", json!({})))
            .await
            .unwrap(),
    );
    let asking = until(&client, &id, |v| status(v) == "input_required").await;
    assert_eq!(keys(&asking), ["sample-0"]);
    assert_eq!(
        asking["inputRequests"]["sample-0"]["method"],
        "sampling/createMessage"
    );
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("sample-0", accept("not a model"))]),
        ))
        .await
        .unwrap();
    assert_eq!(keys(&get(&client, &id).await), ["sample-0"]);
    let sampled = json!({"role": "assistant", "model": "m",
        "content": {"type": "text", "text": "Tasks that ask"}});
    client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("sample-0", sampled)]),
        ))
        .await
        .unwrap();
    let done = until(&client, &id, terminal).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "title: Tasks that ask",
        "{done}"
    );
    client.cancel().await.unwrap();
}

/// A client that did not declare elicitation: the task's tool is told at once
/// (`not_supported`), nothing waits.
#[tokio::test(start_paused = true)]
async fn a_tasks_question_the_client_cannot_answer_is_not_asked() {
    let server =
        McpServer::new(asking_app(Toolmark::builder(), &Log::default())).tasks(task_options());
    let client = connect(
        &server,
        Client {
            tasks: true,
            ..Client::default()
        },
    )
    .await;
    let id = task_id(
        &client
            .call_tool_once(call("t.check", json!({"card": SECRET})))
            .await
            .unwrap(),
    );
    let done = until(&client, &id, terminal).await;
    assert_eq!(status(&done), "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(done.to_string().contains("not_supported"), "{done}");
    assert!(!done.to_string().contains(SECRET), "{done}");
    client.cancel().await.unwrap();
}

/// `tasks/cancel` while the tool waits for its answers: the task is
/// `cancelled` at once and the tool does not go on.
#[tokio::test(start_paused = true)]
async fn a_task_waiting_for_answers_is_cancelled() {
    let log = Log::default();
    let server = McpServer::new(asking_app(Toolmark::builder(), &log)).tasks(task_options());
    let client = connect(&server, asks_all(true)).await;
    let id = task_id(
        &client
            .call_tool_once(call("t.check", json!({"card": SECRET})))
            .await
            .unwrap(),
    );
    until(&client, &id, |v| keys(v).len() == 2).await;
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    assert_eq!(status(&get(&client, &id).await), "cancelled");
    // A late answer finds nothing to answer; the task stays cancelled.
    let _ = client
        .update_task(UpdateTaskParams::new(
            id.clone(),
            answers(&[("elicit-0", accept("ada")), ("elicit-1", accept("bo"))]),
        ))
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(status(&get(&client, &id).await), "cancelled");
    assert!(log.get().is_empty(), "{:?}", log.get());
    client.cancel().await.unwrap();
}

/// A panicking tool's task is `failed` with a JSON-RPC error (no result, no
/// panic message: it quoted the card); a tool that returns its error is a
/// `completed` task whose result is the error (`isError`), scrubbed.
#[tokio::test(start_paused = true)]
async fn a_panic_fails_the_task_and_a_tool_error_completes_it() {
    let server =
        McpServer::new(asking_app(Toolmark::builder(), &Log::default())).tasks(task_options());
    let client = connect(&server, asks_all(true)).await;
    let crash = task_id(
        &client
            .call_tool_once(call("t.crash", json!({"card": SECRET})))
            .await
            .unwrap(),
    );
    let failed = until(&client, &crash, terminal).await;
    assert_eq!(status(&failed), "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed["error"]["message"].is_string(), "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
    assert!(!failed.to_string().contains(SECRET), "{failed}");
    assert!(!failed.to_string().contains("crashed holding"), "{failed}");
    let fail = task_id(
        &client
            .call_tool_once(call("t.fail", json!({"card": SECRET})))
            .await
            .unwrap(),
    );
    let completed = until(&client, &fail, terminal).await;
    assert_eq!(status(&completed), "completed", "{completed}");
    assert_eq!(completed["result"]["isError"], true, "{completed}");
    assert!(completed.get("error").is_none(), "{completed}");
    assert!(completed.to_string().contains("refused"), "{completed}");
    assert!(!completed.to_string().contains(SECRET), "{completed}");
    client.cancel().await.unwrap();
}

/// Per-tool task support: a `required` tool answers `-32021` (naming the
/// Tasks extension) to a client without it, and a task (even when it ends at
/// once) to a client with it; a `forbidden` tool answers its result however
/// long it works.
#[tokio::test(start_paused = true)]
async fn task_support_per_tool() {
    let server =
        McpServer::new(asking_app(Toolmark::builder(), &Log::default())).tasks(task_options());
    let without = connect(&server, asks_all(false)).await;
    let err = without
        .call_tool_once(call("t.quick", json!({})))
        .await
        .expect_err("-32021");
    let err = format!("{err:?}");
    assert!(err.contains("-32021"), "{err}");
    assert!(err.contains("io.modelcontextprotocol/tasks"), "{err}");
    // An optional tool is a plain call without the extension.
    let r = without
        .call_tool_once(call("t.forbid", json!({})))
        .await
        .unwrap();
    assert!(matches!(r, CallToolResponse::Complete(_)), "{r:?}");
    without.cancel().await.unwrap();

    let with = connect(&server, asks_all(true)).await;
    let r = with
        .call_tool_once(call("t.quick", json!({})))
        .await
        .unwrap();
    let id = task_id(&r);
    let done = get(&with, &id).await;
    assert_eq!(status(&done), "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "quick");
    let r = with
        .call_tool_once(call("t.forbid", json!({})))
        .await
        .unwrap();
    match r {
        CallToolResponse::Complete(c) => {
            assert_eq!(
                serde_json::to_value(&c).unwrap()["content"][0]["text"],
                "done in one answer"
            )
        }
        other => panic!("a forbidden tool is never a task: {other:?}"),
    }
    with.cancel().await.unwrap();
}

/// A question asked before the call is a task is a multi round-trip round (no
/// task id); the retry with its answer (and the round's `requestState`) is the
/// task, whose result has the answer.
#[tokio::test(start_paused = true)]
async fn a_round_before_the_task_then_the_task() {
    let server =
        McpServer::new(asking_app(Toolmark::builder(), &Log::default())).tasks(task_options());
    let client = connect(&server, asks_all(true)).await;
    let first = client
        .call_tool_once(call("t.ask_first", json!({})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(round) = &first else {
        panic!("a round first: {first:?}")
    };
    let key = round
        .input_requests
        .as_ref()
        .and_then(|m| m.keys().next().cloned())
        .expect("a question");
    let state = round.request_state.clone().expect("a requestState");
    let retry = client
        .call_tool_once(
            call("t.ask_first", json!({}))
                .with_input_responses(answers(&[(&key, accept("Alice"))]))
                .with_request_state(state),
        )
        .await
        .unwrap();
    let id = task_id(&retry);
    let done = until(&client, &id, terminal).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
    client.cancel().await.unwrap();
}

/// Two instances share one Redis (tasks' states and the answers in it, one
/// seal key): the task runs on the first; the second shows its questions,
/// takes the answers (left sealed in the store) and the waiting tool on the
/// first gets them; the second then shows the result. No card in Redis.
#[cfg(feature = "redis")]
#[tokio::test]
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
async fn a_tasks_questions_answered_on_another_instance() {
    use toolmark::mcp::RedisTaskStore;
    let url = crate::external::redis_url();
    let prefix = format!("toolmark-test:tasks-ask:{}:", std::process::id());
    let log = Log::default();
    let instance = |log: &Log| {
        let tm = asking_app(Toolmark::builder().seal_key([7; 32]), log);
        let url = url.clone();
        let prefix = prefix.clone();
        async move {
            let store = RedisTaskStore::connect(&url).await.unwrap().prefix(prefix);
            McpServer::new(tm).tasks(task_options().store(store))
        }
    };
    let a = instance(&log).await;
    let b = instance(&Log::default()).await;
    let on_a = connect(&a, asks_all(true)).await;
    let on_b = connect(&b, asks_all(true)).await;
    let id = task_id(
        &on_a
            .call_tool_once(call("t.check", json!({"card": SECRET})))
            .await
            .unwrap(),
    );
    let asking = until(&on_b, &id, |v| keys(v).len() == 2).await;
    assert_eq!(status(&asking), "input_required");
    on_b.update_task(UpdateTaskParams::new(
        id.clone(),
        answers(&[("elicit-1", accept("bo"))]),
    ))
    .await
    .unwrap();
    let partly = get(&on_b, &id).await;
    assert_eq!(keys(&partly), ["elicit-0"], "{partly}");
    on_b.update_task(UpdateTaskParams::new(
        id.clone(),
        answers(&[("elicit-0", accept("ada"))]),
    ))
    .await
    .unwrap();
    let done = until(&on_b, &id, terminal).await;
    assert_eq!(status(&done), "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("ok: ada / bo"), "{text}");
    assert_eq!(
        log.get(),
        ["checked: ada / bo"],
        "ran on the first instance"
    );
    // Nothing in Redis holds the card.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(keys.iter().any(|k| k.contains("task-answer:")), "{keys:?}");
    for k in &keys {
        let v: String = redis::cmd("GET")
            .arg(k)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(!v.contains(SECRET) && !k.contains(SECRET));
        // Sealed values are lowercase hex, where "ada" turns up by chance: the answer
        // in plain text would be a JSON string.
        assert!(!v.contains("\"ada\""), "answers are sealed: {k}");
    }
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut conn)
        .await
        .unwrap();
    on_a.cancel().await.unwrap();
    on_b.cancel().await.unwrap();
}
