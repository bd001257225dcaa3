//! An adversarial client against the 2026-07-28 question rounds (`ctx.elicit`,
//! `ctx.sample` as `input_required`), `-32021`, a tampered `requestState` and
//! `tasks/update`: an answer answers only the question it was given for, no
//! secret (alias keys included) reaches a round or an error, a missing
//! capability runs the tool once, and an update that decides nothing changes
//! no task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, ElicitResult, ElicitationAction, GetTaskParams, InputResponses,
    ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolmark::mcp::{Elicitation, McpServer, TaskOptions};
use toolmark::Toolmark;

use crate::*;

async fn connect_2026(server: &McpServer, client: Client) -> RunningService<RoleClient, Client> {
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

fn responses(key: &str, value: Value) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(key.to_owned(), value);
    r
}

/// One JSON object that reads both as an elicitation's accept and as a
/// sampling result.
fn polyglot() -> Value {
    json!({
        "action": "accept",
        "content": {"type": "text", "text": "yes"},
        "role": "assistant",
        "model": "m"
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Target {
    #[allow(dead_code)]
    pin: String,
}

/// `wipe` asks the user "Wipe <the file named by `file`>?" (its own
/// confirmation) and wipes on accept; `muse` asks the client's model, then the
/// user; every run and every wipe is logged.
fn gated_app(log: &Log, file: &Arc<AtomicUsize>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let (l, f) = (log.clone(), Arc::clone(file));
    tm.register(
        toolmark::ToolSpec::typed(
            "wipe",
            "Wipes a file after the user's yes",
            move |ctx: toolmark::ToolContext, _: Target| {
                let (l, f) = (l.clone(), Arc::clone(&f));
                async move {
                    l.push("run");
                    let file = ["a.txt", "b.txt"][f.load(Ordering::SeqCst) % 2];
                    let schema =
                        json!({"type": "object", "properties": {"sure": {"type": "boolean"}}});
                    match ctx.elicit(format!("Wipe {file}?"), schema).await? {
                        toolmark::Elicited::Accept(_) => {
                            l.push(format!("wiped {file}"));
                            Ok::<_, toolmark::ToolError>(json!(format!("wiped {file}")))
                        }
                        _ => Ok(json!("kept")),
                    }
                }
            },
        )
        .sensitive(["pin"]),
        Default::default(),
    )
    .unwrap();
    let l = log.clone();
    tm.register(
        toolmark::ToolSpec::typed(
            "muse",
            "Asks the model, then the user",
            move |ctx: toolmark::ToolContext, _: Target| {
                let l = l.clone();
                async move {
                    l.push("run");
                    let idea = ctx.sample(toolmark::SampleRequest::new("An idea?")).await?;
                    let schema =
                        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
                    match ctx
                        .elicit(format!("Publish {}?", idea.text), schema)
                        .await?
                    {
                        toolmark::Elicited::Accept(_) => {
                            l.push("published");
                            Ok::<_, toolmark::ToolError>(json!("published"))
                        }
                        _ => Ok(json!("kept")),
                    }
                }
            },
        )
        .sensitive(["pin"]),
        Default::default(),
    )
    .unwrap();
    tm
}

fn both() -> Client {
    Client {
        elicit: Some(ElicitationAction::Accept),
        sampling: true,
        ..Client::default()
    }
}

fn asked_keys(r: &CallToolResponse) -> Vec<String> {
    match r {
        CallToolResponse::InputRequired(ir) => ir
            .input_requests
            .as_ref()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
        other => panic!("expected a round, got {other:?}"),
    }
}

/// A `tools/call` answer as the client reads it.
fn text(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::Complete(r) => serde_json::to_string(r).unwrap(),
        CallToolResponse::InputRequired(r) => serde_json::to_string(r).unwrap(),
        CallToolResponse::Task(r) => serde_json::to_string(r).unwrap(),
        other => format!("{other:?}"),
    }
}

fn state_of(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::InputRequired(ir) => ir.request_state.clone().expect("a requestState"),
        other => panic!("expected a round, got {other:?}"),
    }
}

/// A first call carries `inputResponses` for the question the tool will ask:
/// it was asked nothing, so they answer nothing; the tool's question is asked.
#[tokio::test]
async fn a_first_call_cannot_answer_a_question_it_was_never_asked() {
    let log = Log::default();
    let server = McpServer::new(gated_app(&log, &Arc::default()));
    let client = connect_2026(&server, both()).await;
    let accept = serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap();
    let r = client
        .call_tool_once(
            call("wipe", json!({"pin": SECRET}))
                .with_input_responses(responses("elicit-0", accept)),
        )
        .await
        .unwrap();
    assert_eq!(asked_keys(&r), ["elicit-0"]);
    assert_eq!(log.get(), ["run"], "nothing wiped");
    client.cancel().await.unwrap();
}

/// The answer to the user's question sent under the model's key (and the
/// model's answer under the user's key) answers nothing: a sampling result is
/// never the user's approval, nor the reverse, even as one JSON that parses as
/// both.
#[tokio::test]
async fn a_sampling_answer_is_not_an_elicitation_approval_nor_the_reverse() {
    let log = Log::default();
    let server = McpServer::new(gated_app(&log, &Arc::default()));
    let client = connect_2026(&server, both()).await;
    let args = json!({"pin": SECRET});

    // `wipe` asks the user (elicit-0); the answer comes as the model's (sample-0).
    let first = client
        .call_tool_once(call("wipe", args.clone()))
        .await
        .unwrap();
    assert_eq!(asked_keys(&first), ["elicit-0"]);
    let again = client
        .call_tool_once(
            call("wipe", args.clone())
                .with_request_state(state_of(&first))
                .with_input_responses(responses("sample-0", polyglot())),
        )
        .await
        .unwrap();
    assert_eq!(asked_keys(&again), ["elicit-0"], "asked again");
    assert_eq!(log.get(), ["run", "run"], "nothing wiped");

    // `muse` asks the model (sample-0); the answer comes as the user's (elicit-0).
    let first = client
        .call_tool_once(call("muse", args.clone()))
        .await
        .unwrap();
    assert_eq!(asked_keys(&first), ["sample-0"]);
    let again = client
        .call_tool_once(
            call("muse", args.clone())
                .with_request_state(state_of(&first))
                .with_input_responses(responses("elicit-0", polyglot())),
        )
        .await
        .unwrap();
    assert_eq!(asked_keys(&again), ["sample-0"], "the model is asked again");
    // The model's answer, then the user's approval under the user's key: done.
    let second = client
        .call_tool_once(
            call("muse", args.clone())
                .with_request_state(state_of(&again))
                .with_input_responses(responses("sample-0", polyglot())),
        )
        .await
        .unwrap();
    assert_eq!(asked_keys(&second), ["elicit-1"]);
    // The user's key of the *next* question, given early with the model's
    // answer, is not taken either.
    let accept = serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap();
    let done = client
        .call_tool_once(
            call("muse", args.clone())
                .with_request_state(state_of(&second))
                .with_input_responses(responses("elicit-1", accept)),
        )
        .await
        .unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(
        log.get(),
        ["run", "run", "run", "run", "run", "run", "published"]
    );
    client.cancel().await.unwrap();
}

/// The user approved "Wipe a.txt?"; before the retry the tool's question became
/// "Wipe b.txt?": the approval does not carry over to the other question, which
/// is asked.
#[tokio::test]
async fn an_approval_answers_only_the_question_it_was_given_for() {
    let log = Log::default();
    let file = Arc::new(AtomicUsize::new(0));
    let server = McpServer::new(gated_app(&log, &file));
    let client = connect_2026(&server, both()).await;
    let args = json!({"pin": SECRET});
    let first = client
        .call_tool_once(call("wipe", args.clone()))
        .await
        .unwrap();
    let asked = text(&first);
    assert!(asked.contains("Wipe a.txt?"), "{asked}");
    file.store(1, Ordering::SeqCst);
    let accept = serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap();
    let retry = client
        .call_tool_once(
            call("wipe", args.clone())
                .with_request_state(state_of(&first))
                .with_input_responses(responses("elicit-0", accept.clone())),
        )
        .await
        .unwrap();
    let asked = text(&retry);
    assert!(
        asked.contains("Wipe b.txt?"),
        "asked the new question: {asked}"
    );
    assert!(
        !log.get().iter().any(|l| l.starts_with("wiped")),
        "{:?}",
        log.get()
    );
    // Answered for what it asks now: done.
    let done = client
        .call_tool_once(
            call("wipe", args)
                .with_request_state(state_of(&retry))
                .with_input_responses(responses("elicit-0", accept)),
        )
        .await
        .unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(log.get(), ["run", "run", "run", "wiped b.txt"]);
    client.cancel().await.unwrap();
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    #[serde(alias = "card_number")]
    card: String,
    #[serde(alias = "security_code")]
    cvc: String,
}

/// A tool that puts its card and CVC (sensitive) into the model's prompt: the round's request, its `requestState`, the retry's
/// result and the `-32021` / `-32602` errors hold no byte of either.
#[tokio::test]
async fn a_sampling_round_of_a_call_with_a_card_and_cvc_shows_neither() {
    const CARD: &str = "4111111111111111";
    const CVC: &str = "9731";
    let tm = Toolmark::builder().build().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    tm.register(
        toolmark::ToolSpec::typed(
            "check_card",
            "Asks the model about a card",
            move |ctx: toolmark::ToolContext, c: Card| {
                let r = Arc::clone(&r);
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    let mut request = toolmark::SampleRequest::new(format!(
                        "Is card {} with CVC {} valid?",
                        c.card, c.cvc
                    ));
                    request.system_prompt = Some(format!("Card {}/{}", c.card, c.cvc));
                    let answer = ctx.sample(request).await?;
                    Ok::<_, toolmark::ToolError>(json!({"answer": answer.text, "card": c.card}))
                }
            },
        )
        .effect(toolmark::Effect::Read)
        .sensitive(["card", "cvc"]),
        Default::default(),
    )
    .unwrap();
    let server = McpServer::new(tm);
    let args = json!({"card": CARD, "cvc": CVC});
    let mut seen = Vec::new();

    let client = connect_2026(&server, both()).await;
    // Under the alias keys the input is refused `invalid` (the keys are not in the
    // schema), naming the keys, never their values.
    let aliased = client
        .call_tool_once(call(
            "check_card",
            json!({"card_number": CARD, "security_code": CVC}),
        ))
        .await
        .unwrap();
    let refused = text(&aliased);
    assert!(refused.contains("invalid"), "{refused}");
    seen.push(("the input under alias keys", refused));
    let first = client
        .call_tool_once(call("check_card", args.clone()))
        .await
        .unwrap();
    assert_eq!(asked_keys(&first), ["sample-0"]);
    seen.push(("the sampling round", text(&first)));
    let state = state_of(&first);
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "fine"}, "model": "m"});
    let mut changed = state.clone().into_bytes();
    changed[12] = if changed[12] == b'a' { b'b' } else { b'a' };
    let tampered = client
        .call_tool_once(
            call("check_card", args.clone())
                .with_request_state(String::from_utf8(changed).unwrap())
                .with_input_responses(responses("sample-0", answer.clone())),
        )
        .await;
    match &tampered {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            seen.push((
                "-32602",
                format!("{} {e:?}", serde_json::to_string(e).unwrap()),
            ));
        }
        other => panic!("expected -32602, got {other:?}"),
    }
    let done = client
        .call_tool_once(
            call("check_card", args.clone())
                .with_request_state(state)
                .with_input_responses(responses("sample-0", answer)),
        )
        .await
        .unwrap();
    let result = text(&done);
    assert!(result.contains("fine"), "{result}");
    seen.push(("the retry's result", result));
    client.cancel().await.unwrap();

    // A client without sampling: -32021, the tool ran once.
    let client = connect_2026(&server, Client::default()).await;
    let before = runs.load(Ordering::SeqCst);
    match client
        .call_tool_once(call("check_card", args.clone()))
        .await
    {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(
                e.code,
                rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            );
            seen.push((
                "-32021",
                format!("{} {e:?}", serde_json::to_string(&e).unwrap()),
            ));
        }
        other => panic!("expected -32021, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), before + 1, "one run, no loop");
    client.cancel().await.unwrap();

    assert!(seen.len() >= 4);
    for (what, text) in &seen {
        // A sealed `requestState` is a long run of lowercase hex, where four given
        // digits turn up by chance about once in a hundred texts: the secrets are
        // looked for outside such runs (a secret shown in plain text breaks them).
        let plain = outside_hex_runs(text);
        for secret in [CARD, CVC, &CARD[..8], &CARD[8..]] {
            assert!(!plain.contains(secret), "{what} shows {secret}: {text}");
        }
    }
}

/// `text` with every run of 32 or more lowercase hex digits replaced by `…`.
fn outside_hex_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() || ('a'..='f').contains(&c) {
            run.push(c);
            continue;
        }
        out.push_str(if run.len() >= 32 { "…" } else { &run });
        run.clear();
        out.push(c);
    }
    out.push_str(if run.len() >= 32 { "…" } else { &run });
    out
}

/// `tasks/update` that decides nothing (no `confirm`, only the keys of the
/// question rounds, an empty set) is acknowledged and changes no task; an
/// approval of one task decides only that task.
#[tokio::test]
async fn a_tasks_update_that_decides_nothing_changes_no_task() {
    let log = Log::default();
    let tm = app(
        Toolmark::builder().confirm_handler(|_req: toolmark::ConfirmRequest| async {
            panic!("the client confirms")
        }),
        &log,
    );
    let server = McpServer::new(tm)
        .confirm_by_elicitation(Elicitation::consequential())
        .tasks(TaskOptions::new());
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            tasks: true,
            ..Client::default()
        },
    )
    .await;
    let mut ids = Vec::new();
    for to in ["ada", "bo"] {
        let CallToolResponse::Task(task) = client
            .call_tool_once(call(
                "pay.send",
                json!({"to": to, "amount": 3, "card": SECRET}),
            ))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        ids.push(task.task.task_id.clone());
    }
    let status = |v: &Value| v["status"].as_str().unwrap_or_default().to_owned();
    let get = |id: String| {
        let client = &client;
        async move {
            serde_json::to_value(client.get_task(GetTaskParams::new(&id)).await.unwrap()).unwrap()
        }
    };
    for id in &ids {
        assert_eq!(status(&get(id.clone()).await), "input_required");
    }
    let accept = serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap();
    for nothing in [
        InputResponses::new(),
        responses("elicit-0", accept.clone()),
        responses("sample-0", polyglot()),
        responses("Confirm", accept.clone()),
    ] {
        client
            .update_task(UpdateTaskParams::new(ids[0].clone(), nothing))
            .await
            .expect("acknowledged");
    }
    for id in &ids {
        let t = get(id.clone()).await;
        assert_eq!(status(&t), "input_required", "{t}");
        assert!(!t.to_string().contains(SECRET), "{t}");
    }
    assert!(log.get().is_empty(), "{:?}", log.get());
    // An unknown task id is not found and decides nothing.
    assert!(client
        .update_task(UpdateTaskParams::new(
            format!("{}x", ids[1]),
            responses("confirm", accept.clone())
        ))
        .await
        .is_err());
    // Approving the first decides the first only.
    client
        .update_task(UpdateTaskParams::new(
            ids[0].clone(),
            responses("confirm", accept),
        ))
        .await
        .unwrap();
    let mut last = Value::Null;
    for _ in 0..500 {
        last = get(ids[0].clone()).await;
        if status(&last) == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status(&last), "completed", "{last}");
    assert_eq!(status(&get(ids[1].clone()).await), "input_required");
    assert_eq!(log.get(), ["paid 3 to ada"]);
    client.cancel().await.unwrap();
}

/// Over HTTP (no session): a question round's `requestState` with the user's
/// approval, sent by another caller (another `Authorization`), is the JSON-RPC
/// error `-32602` and nothing runs past the question; its own caller completes.
#[tokio::test]
async fn another_caller_cannot_use_a_question_rounds_state() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let log = Log::default();
    let router = McpServer::new(gated_app(&log, &Arc::default())).router();
    let post = |who: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let req = axum::http::Request::post("/")
            .header("host", "127.0.0.1:3000")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "wipe")
            .header("authorization", format!("Bearer {who}"))
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let router = router.clone();
        async move {
            let res = router.oneshot(req).await.unwrap();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&body).into_owned();
            // A plain JSON reply, or one SSE event.
            let json = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .unwrap_or(&text)
                .trim()
                .to_owned();
            serde_json::from_str::<Value>(&json).unwrap_or_else(|e| panic!("{e}: {text}"))
        }
    };
    let first = post(
        "alice",
        json!({"name": "wipe", "arguments": {"pin": SECRET}}),
    )
    .await;
    let state = first["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a round: {first}"))
        .to_owned();
    assert!(!first.to_string().contains(SECRET), "{first}");
    let retry = json!({
        "name": "wipe",
        "arguments": {"pin": SECRET},
        "requestState": state,
        "inputResponses": {"elicit-0": {"action": "accept"}}
    });
    let stolen = post("mallory", retry.clone()).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    assert_eq!(stolen["error"]["data"]["code"], "invalid", "{stolen}");
    assert!(!stolen.to_string().contains(SECRET), "{stolen}");
    assert_eq!(log.get(), ["run"], "nothing ran for the other caller");
    let own = post("alice", retry).await;
    assert_eq!(
        own["result"]["structuredContent"]["result"], "wiped a.txt",
        "{own}"
    );
    assert_eq!(log.get(), ["run", "run", "wiped a.txt"]);
}
