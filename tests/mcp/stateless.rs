//! MCP 2026-07-28 through rmcp's own client in-process (`server/discover`,
//! per-request `_meta`): the list's cache hints, the confirmation by multi
//! round-trip request and its handle's rules (the clock decides expiry), the
//! Tasks extension, and `ctx.log` for a request that opts in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, CancelTaskParams, ElicitResult, ElicitationAction, GetTaskParams,
    InputRequiredResult, InputResponses, ProtocolVersion, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolmark::clock::ManualClock;
use toolmark::mcp::{Elicitation, McpServer, TaskOptions};
use toolmark::{Event, Toolmark};

use crate::*;

/// Serve `server` to `client` speaking 2026-07-28 (discover, no session).
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

fn accept() -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(
        "confirm".to_owned(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap(),
    );
    r
}

fn pay_args(to: &str) -> Value {
    json!({"to": to, "amount": 5, "card": SECRET})
}

/// The app of `main.rs` on a manual clock, its payments confirmed by the client.
fn mrtr_server(log: &Log, clock: &ManualClock) -> (Toolmark, McpServer) {
    let tm = app(
        client_confirms(
            Toolmark::builder()
                .clock(clock.clone())
                .confirm_expiry(Duration::from_secs(60)),
        ),
        log,
    );
    let server = McpServer::new(tm.clone()).confirm_by_elicitation(Elicitation::consequential());
    (tm, server)
}

fn elicits() -> Client {
    Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    }
}

async fn first_round(
    client: &RunningService<RoleClient, Client>,
    args: Value,
) -> InputRequiredResult {
    match client.call_tool_once(call("pay.send", args)).await.unwrap() {
        CallToolResponse::InputRequired(r) => r,
        other => panic!("expected input_required, got {other:?}"),
    }
}

async fn retry(
    client: &RunningService<RoleClient, Client>,
    args: Value,
    state: &str,
    answer: Option<InputResponses>,
) -> CallToolResponse {
    let mut p = call("pay.send", args).with_request_state(state.to_owned());
    if let Some(a) = answer {
        p = p.with_input_responses(a);
    }
    client.call_tool_once(p).await.unwrap()
}

/// A retry the server answers with a JSON-RPC error.
async fn retry_err(
    client: &RunningService<RoleClient, Client>,
    args: Value,
    state: &str,
    answer: Option<InputResponses>,
) -> rmcp::ErrorData {
    let mut p = call("pay.send", args).with_request_state(state.to_owned());
    if let Some(a) = answer {
        p = p.with_input_responses(a);
    }
    match client.call_tool_once(p).await {
        Err(rmcp::ServiceError::McpError(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn complete(r: CallToolResponse) -> Value {
    match r {
        CallToolResponse::Complete(r) => wire(&r),
        other => panic!("expected a result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_2026_client_discovers_and_lists_with_cache_hints() {
    let server = McpServer::new(approving_app(&Log::default())).list_ttl(Duration::from_secs(5));
    let client = connect_2026(&server, Client::default()).await;
    let info = client.peer_info().expect("discovered");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let page = client.list_tools(None).await.unwrap();
    assert_eq!(page.ttl_ms, Some(5_000));
    assert_eq!(page.cache_scope, Some(rmcp::model::CacheScope::Private));
    assert!(page.tools.iter().any(|t| t.name == "pay.send"));
    let r = client
        .call_tool(call("notes.add", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"id": 4, "text": "x"})));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2025_client_gets_no_cache_hints() {
    let server = McpServer::new(approving_app(&Log::default()));
    let client = connect(&server, Client::default()).await;
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let page = client.list_tools(None).await.unwrap();
    assert_eq!((page.ttl_ms, page.cache_scope), (None, None));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcps_client_drives_the_confirmation_round_and_the_tool_runs_once() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (tm, server) = mrtr_server(&log, &clock);
    let mut events = tm.events();
    let client = connect_2026(&server, elicits()).await;
    let r = client
        .call_tool(call("pay.send", pay_args("ada")))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"paid": 5})));
    assert_eq!(log.get(), ["paid 5 to ada"]);
    let asked = client.service().asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("Pay 5 to ada") && asked[0].contains("[redacted]"));
    assert!(!asked[0].contains(SECRET));
    // Recorded as the client's decision, never remembered.
    let approver = loop {
        if let Event::ConfirmationResolved { approver, .. } = events.recv().await.unwrap() {
            break approver;
        }
    };
    assert_eq!(
        approver,
        toolmark::Approver::Client {
            caller: toolmark::Caller::Mcp
        }
    );
    assert!(tm.remembered().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_input_required_round_and_its_handle_carry_no_secret() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (_tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    let text = serde_json::to_string(&ir).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("[redacted]"));
    assert!(log.get().is_empty(), "nothing ran");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_retry_without_an_answer_is_asked_again_and_runs_nothing() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (_tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    let state = ir.request_state.clone().unwrap();
    for _ in 0..2 {
        match retry(&client, pay_args("ada"), &state, None).await {
            CallToolResponse::InputRequired(again) => {
                assert_eq!(again.request_state.as_deref(), Some(state.as_str()));
                assert!(again.input_requests.unwrap().contains_key("confirm"));
            }
            other => panic!("re-asked, got {other:?}"),
        }
    }
    assert!(log.get().is_empty());
    let done = complete(retry(&client, pay_args("ada"), &state, Some(accept())).await);
    assert_eq!(done["structuredContent"], json!({"paid": 5}));
    assert_eq!(log.get(), ["paid 5 to ada"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_handle_past_its_expiry_by_the_clock_is_confirmation_expired() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    clock.advance(Duration::from_secs(61));
    let r = complete(
        retry(
            &client,
            pay_args("ada"),
            ir.request_state.as_deref().unwrap(),
            Some(accept()),
        )
        .await,
    );
    assert_eq!(r["structuredContent"]["code"], "confirmation_expired");
    assert!(log.get().is_empty());
    assert!(tm.pending_confirmations().is_empty(), "withdrawn");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_tampered_handle_or_other_arguments_are_refused_and_the_confirmation_stays() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (_tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    let state = ir.request_state.unwrap();
    let mut tampered = state.clone().into_bytes();
    tampered[3] = if tampered[3] == b'a' { b'b' } else { b'a' };
    let tampered = String::from_utf8(tampered).unwrap();
    for (args, st) in [
        (pay_args("ada"), tampered.as_str()),
        (pay_args("eve"), state.as_str()),
        (
            json!({"to": "ada", "amount": 5, "card": "0000"}),
            state.as_str(),
        ),
        (pay_args("ada"), "not-a-handle"),
    ] {
        // A requestState that fails its integrity check is a protocol error
        // (-32602), with Toolmark's `invalid` refusal as its data.
        let e = retry_err(&client, args, st, Some(accept())).await;
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{e:?}");
        let data = e.data.unwrap();
        assert_eq!(data["code"], "invalid", "{data}");
        assert_eq!(data["issues"][0]["path"], "requestState");
    }
    assert!(log.get().is_empty(), "nothing ran");
    // The untouched handle still approves, once.
    let done = complete(retry(&client, pay_args("ada"), &state, Some(accept())).await);
    assert_eq!(done["structuredContent"], json!({"paid": 5}));
    let replay = complete(retry(&client, pay_args("ada"), &state, Some(accept())).await);
    assert_eq!(replay["structuredContent"]["code"], "confirmation_expired");
    assert_eq!(log.get(), ["paid 5 to ada"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn decline_rejects_and_uses_the_confirmation_up() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (_tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    let state = ir.request_state.unwrap();
    let mut decline = InputResponses::new();
    decline.insert(
        "confirm".into(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Decline)).unwrap(),
    );
    let r = complete(retry(&client, pay_args("ada"), &state, Some(decline)).await);
    assert_eq!(r["structuredContent"]["code"], "rejected");
    let again = complete(retry(&client, pay_args("ada"), &state, Some(accept())).await);
    assert_eq!(again["structuredContent"]["code"], "confirmation_expired");
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_the_policy_a_2026_client_is_confirmed_by_the_apps_handler() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let client = connect_2026(&server, elicits()).await;
    let r = client
        .call_tool_once(call("pay.send", pay_args("ada")))
        .await
        .unwrap();
    assert_eq!(complete(r)["structuredContent"], json!({"paid": 5}));
    assert_eq!(log.get(), ["app asked: Pay 5 to ada", "paid 5 to ada"]);
    client.cancel().await.unwrap();
}

fn tasks_client() -> Client {
    Client {
        elicit: Some(ElicitationAction::Accept),
        tasks: true,
        ..Client::default()
    }
}

async fn task_status(client: &RunningService<RoleClient, Client>, id: &str) -> Value {
    let got = client.get_task(GetTaskParams::new(id)).await.unwrap();
    serde_json::to_value(&got).unwrap()
}

async fn until(client: &RunningService<RoleClient, Client>, id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let v = task_status(client, id).await;
        if v["status"] == status {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "task {id} never reached {status}: {}",
        task_status(client, id).await
    )
}

#[tokio::test]
async fn a_long_call_becomes_a_task_that_completes_and_a_cancelled_one_stops() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log))
        .tasks(TaskOptions::new().after(Duration::from_millis(20)));
    let client = connect_2026(&server, tasks_client()).await;
    // A quick call answers its result.
    let quick = client
        .call_tool_once(call("notes.count", json!({})))
        .await
        .unwrap();
    assert!(matches!(quick, CallToolResponse::Complete(_)));
    // slow.wait: 10 ms a step.
    let CallToolResponse::Task(task) = client
        .call_tool_once(call("slow.wait", json!({"steps": 10})))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(task.task.status, TaskStatus::Working);
    let done = until(&client, &task.task.task_id, "completed").await;
    assert_eq!(done["result"]["structuredContent"], json!({"waited": 10}));
    let CallToolResponse::Task(task) = client
        .call_tool_once(call("slow.wait", json!({"steps": 100_000})))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    client
        .cancel_task(CancelTaskParams::new(task.task.task_id.clone()))
        .await
        .unwrap();
    until(&client, &task.task.task_id, "cancelled").await;
    for _ in 0..100 {
        if log.get().contains(&"wait cancelled".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        log.get().contains(&"wait cancelled".to_owned()),
        "{:?}",
        log.get()
    );
    let unknown = client.get_task(GetTaskParams::new("0".repeat(32))).await;
    assert!(unknown.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_waiting_for_its_clients_approval_is_an_input_required_task() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (_tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, tasks_client()).await;
    let CallToolResponse::Task(task) = client
        .call_tool_once(call("pay.send", pay_args("ada")))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(task.task.status, TaskStatus::InputRequired);
    let id = task.task.task_id.clone();
    let waiting = task_status(&client, &id).await;
    let shown = waiting.to_string();
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(waiting["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap()
        .contains("Pay 5 to ada"));
    assert!(log.get().is_empty());
    // An update that answers nothing the task asked is acknowledged; the task
    // still waits, asking the same question.
    let mut unknown = InputResponses::new();
    unknown.insert("unknown-key".into(), json!({"ignored": true}));
    client
        .update_task(UpdateTaskParams::new(id.clone(), unknown))
        .await
        .unwrap();
    let still = task_status(&client, &id).await;
    assert_eq!(still["status"], "input_required", "{still}");
    assert!(still["inputRequests"]["confirm"].is_object(), "{still}");
    assert!(log.get().is_empty());
    client
        .update_task(UpdateTaskParams::new(id.clone(), accept()))
        .await
        .unwrap();
    let done = until(&client, &id, "completed").await;
    assert_eq!(done["result"]["structuredContent"], json!({"paid": 5}));
    assert!(!done.to_string().contains(SECRET));
    assert_eq!(log.get(), ["paid 5 to ada"]);
    // Answered: a second update is refused.
    assert!(client
        .update_task(UpdateTaskParams::new(id, accept()))
        .await
        .is_err());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_task_waiting_for_approval_cancelled_withdraws_its_confirmation() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let (tm, server) = mrtr_server(&log, &clock);
    let client = connect_2026(&server, tasks_client()).await;
    let CallToolResponse::Task(task) = client
        .call_tool_once(call("pay.send", pay_args("ada")))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(tm.pending_confirmations().len(), 1);
    client
        .cancel_task(CancelTaskParams::new(task.task.task_id.clone()))
        .await
        .unwrap();
    until(&client, &task.task.task_id, "cancelled").await;
    assert!(tm.pending_confirmations().is_empty());
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ctx_log_reaches_a_2026_request_only_when_it_opts_in() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        toolmark::ToolSpec::typed(
            "shout",
            "Log twice",
            |ctx: toolmark::ToolContext, _: toolmark::NoInput| async move {
                ctx.log(toolmark::LogLevel::Debug, "quiet");
                ctx.log(toolmark::LogLevel::Warning, "loud");
                Ok::<_, toolmark::ToolError>(1)
            },
        )
        .effect(toolmark::Effect::Read),
        Default::default(),
    )
    .unwrap();
    let server = McpServer::new(tm);
    let client = connect_2026(&server, Client::default()).await;
    client.call_tool(call("shout", json!({}))).await.unwrap();
    assert!(
        client.service().logs.lock().unwrap().is_empty(),
        "no opt-in"
    );
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_log_level(rmcp::model::LoggingLevel::Warning);
    let mut p = call("shout", json!({}));
    p.meta = Some(meta);
    client.call_tool(p).await.unwrap();
    let logs = client.service().logs.lock().unwrap().clone();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["level"], "warning");
    assert_eq!(logs[0]["data"], "loud");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_person_approves_on_the_apps_page_and_the_decision_is_theirs() {
    use tower::ServiceExt;
    let (log, clock) = (Log::default(), ManualClock::new());
    let tm = app(
        Toolmark::builder()
            .clock(clock.clone())
            .policy(
                toolmark::policy::Policy::new()
                    .rule(toolmark::Rule::require_person("people pay").tool("pay.send")),
            )
            .confirm_handler(|_req: toolmark::ConfirmRequest| async {
                panic!("the app's handler is not asked: the person approves on the page")
            }),
        &log,
    );
    let mut events = tm.events();
    let page = toolmark::mcp::ApprovalPage::new(
        "https://app.example/approve",
        Elicitation::consequential(),
    )
    .identify(|p| {
        p.headers
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let server = McpServer::new(tm.clone()).approve_on_page(page);
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            url: true,
            ..Client::default()
        },
    )
    .await;
    let ir = first_round(&client, pay_args("ada")).await;
    let asked = serde_json::to_value(&ir.input_requests.unwrap()["confirm"]).unwrap();
    assert_eq!(asked["params"]["mode"], "url");
    let url = asked["params"]["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("https://app.example/approve?token="));
    assert!(!url.contains(SECRET));
    let token = url.split("token=").nth(1).unwrap().to_owned();
    let state = ir.request_state.unwrap();
    // The client says "done" before anyone decided: asked again, nothing runs.
    assert!(matches!(
        retry(&client, pay_args("ada"), &state, Some(accept())).await,
        CallToolResponse::InputRequired(_)
    ));
    let router = server.approval_router();
    let call_page = |req: axum::http::Request<axum::body::Body>| {
        let router = router.clone();
        async move {
            let r = router.oneshot(req).await.unwrap();
            let status = r.status();
            let body = http_body_util::BodyExt::collect(r.into_body())
                .await
                .unwrap()
                .to_bytes();
            (status, serde_json::from_slice::<Value>(&body).unwrap())
        }
    };
    let (status, shown) = call_page(
        axum::http::Request::get(format!("/?token={token}"))
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(shown["summary"], "Pay 5 to ada");
    assert_eq!(shown["input"]["card"], "[redacted]");
    let post = |user: Option<&str>, token: &str| {
        let mut b = axum::http::Request::post("/").header("content-type", "application/json");
        if let Some(u) = user {
            b = b.header("x-user", u);
        }
        b.body(axum::body::Body::from(
            json!({"token": token, "approved": true}).to_string(),
        ))
        .unwrap()
    };
    assert_eq!(call_page(post(None, &token)).await.0, 401, "not signed in");
    let mut forged = token.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    assert_eq!(
        call_page(post(Some("eve"), &forged)).await.0,
        404,
        "tampered"
    );
    // Cross-site request forgery: a page elsewhere posting the link's token with the
    // person's cookies is refused, and records nothing.
    let forged_post = |headers: &[(&str, &str)]| {
        let mut b = axum::http::Request::post("/").header("x-user", "alice");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(axum::body::Body::from(
            json!({"token": token, "approved": true}).to_string(),
        ))
        .unwrap()
    };
    for (headers, code) in [
        (vec![("content-type", "text/plain")], 415),
        (vec![], 415),
        (
            vec![("content-type", "application/x-www-form-urlencoded")],
            415,
        ),
        (
            vec![
                ("content-type", "application/json"),
                ("origin", "https://evil.example"),
            ],
            403,
        ),
        (
            vec![("content-type", "application/json"), ("origin", "null")],
            403,
        ),
        (
            vec![
                ("content-type", "application/json"),
                ("origin", "https://app.example.evil.example"),
            ],
            403,
        ),
        (
            vec![
                ("content-type", "application/json"),
                ("sec-fetch-site", "cross-site"),
            ],
            403,
        ),
        (
            vec![
                ("content-type", "application/json"),
                ("sec-fetch-site", "same-site"),
            ],
            403,
        ),
    ] {
        assert_eq!(
            call_page(forged_post(&headers)).await.0,
            code,
            "{headers:?}"
        );
    }
    assert!(matches!(
        retry(&client, pay_args("ada"), &state, Some(accept())).await,
        CallToolResponse::InputRequired(_)
    ));
    // The page itself (its own origin, JSON) decides.
    assert_eq!(
        call_page(forged_post(&[
            ("content-type", "application/json; charset=utf-8"),
            ("origin", "https://app.example"),
            ("sec-fetch-site", "same-origin"),
        ]))
        .await
        .0,
        200
    );
    assert_eq!(call_page(post(Some("eve"), &token)).await.0, 409, "decided");
    assert!(log.get().is_empty(), "the page only records the decision");
    let done = complete(retry(&client, pay_args("ada"), &state, Some(accept())).await);
    assert_eq!(done["structuredContent"], json!({"paid": 5}));
    assert_eq!(log.get(), ["paid 5 to ada"]);
    let approver = loop {
        if let Event::ConfirmationResolved { approver, .. } = events.recv().await.unwrap() {
            break approver;
        }
    };
    assert_eq!(approver, toolmark::Approver::User { id: "alice".into() });
    // Expired by the clock: the page no longer shows it.
    let ir = first_round(&client, pay_args("bo")).await;
    let asked = serde_json::to_value(&ir.input_requests.unwrap()["confirm"]).unwrap();
    let token = asked["params"]["url"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap()
        .to_owned();
    clock.advance(Duration::from_secs(601));
    assert_eq!(call_page(post(Some("alice"), &token)).await.0, 404);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_form_answer_from_the_client_cannot_satisfy_a_person_rule() {
    let (log, clock) = (Log::default(), ManualClock::new());
    let tm = app(
        Toolmark::builder()
            .clock(clock.clone())
            .policy(
                toolmark::policy::Policy::new()
                    .rule(toolmark::Rule::require_person("people pay").tool("pay.send")),
            )
            .confirm_handler(|_req: toolmark::ConfirmRequest| async {
                toolmark::Decision::approve()
            }),
        &log,
    );
    let server = McpServer::new(tm).confirm_by_elicitation(Elicitation::consequential());
    let client = connect_2026(&server, elicits()).await;
    let ir = first_round(&client, pay_args("ada")).await;
    let r = complete(
        retry(
            &client,
            pay_args("ada"),
            ir.request_state.as_deref().unwrap(),
            Some(accept()),
        )
        .await,
    );
    assert_eq!(r["structuredContent"]["code"], "not_allowed", "{r}");
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pin {
    pin: String,
}

/// A tool that asks its client twice; each run is logged.
fn asking_app(log: &Log) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let l = log.clone();
    tm.register(
        toolmark::ToolSpec::typed(
            "ask_twice",
            "Ask for a name, then an age",
            move |ctx: toolmark::ToolContext, p: Pin| {
                let l = l.clone();
                async move {
                    l.push("run");
                    let form = |field: &str, ty: &str| {
                        json!({"type": "object", "properties": {field: {"type": ty}}, "required": [field]})
                    };
                    let name = match ctx
                        .elicit(format!("Your name? (pin {})", p.pin), form("name", "string"))
                        .await?
                    {
                        toolmark::Elicited::Accept(v) => v["name"].clone(),
                        _ => return Ok(json!("no name")),
                    };
                    let age = match ctx.elicit("Your age?", form("age", "integer")).await? {
                        toolmark::Elicited::Accept(v) => v["age"].clone(),
                        _ => return Ok(json!("no age")),
                    };
                    Ok::<_, toolmark::ToolError>(json!({"name": name, "age": age}))
                }
            },
        )
        .effect(toolmark::Effect::Read)
        .sensitive(["pin"]),
        Default::default(),
    )
    .unwrap();
    tm
}

#[tokio::test]
async fn ctx_elicit_goes_back_in_rounds_and_the_tool_runs_again_with_the_answers() {
    let log = Log::default();
    let server = McpServer::new(asking_app(&log));
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            answer: Some(json!({"name": "Ada", "age": 36})),
            ..Client::default()
        },
    )
    .await;
    let r = client
        .call_tool(call("ask_twice", json!({"pin": SECRET})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content,
        Some(json!({"name": "Ada", "age": 36}))
    );
    // One run per round: asked the name, asked the age, done.
    assert_eq!(log.get(), ["run", "run", "run"]);
    let asked = client.service().asked.lock().unwrap().clone();
    assert_eq!(asked, ["Your name? (pin [redacted])", "Your age?"]);
    // The rounds by hand: the first carries no secret, a changed state is refused.
    let first = client
        .call_tool_once(call("ask_twice", json!({"pin": SECRET})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(ir) = first else {
        panic!("a round")
    };
    let text = serde_json::to_string(&ir).unwrap();
    assert!(
        !text.contains(SECRET) && text.contains("elicit-0"),
        "{text}"
    );
    let mut answers = InputResponses::new();
    answers.insert(
        "elicit-0".into(),
        json!({"action": "accept", "content": {"name": "Bo"}}),
    );
    let second = client
        .call_tool_once(
            call("ask_twice", json!({"pin": SECRET}))
                .with_request_state(ir.request_state.clone().unwrap())
                .with_input_responses(answers.clone()),
        )
        .await
        .unwrap();
    let CallToolResponse::InputRequired(ir2) = second else {
        panic!("the second question")
    };
    assert!(ir2.input_requests.unwrap().contains_key("elicit-1"));
    let state = ir2.request_state.unwrap();
    let mut last = InputResponses::new();
    last.insert(
        "elicit-1".into(),
        json!({"action": "accept", "content": {"age": 7}}),
    );
    let other_args = client
        .call_tool_once(
            call("ask_twice", json!({"pin": "0000"}))
                .with_request_state(state.clone())
                .with_input_responses(last.clone()),
        )
        .await;
    match other_args {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert_eq!(e.data.unwrap()["code"], "invalid");
        }
        other => panic!("other arguments: expected -32602, got {other:?}"),
    }
    let done = client
        .call_tool_once(
            call("ask_twice", json!({"pin": SECRET}))
                .with_request_state(state)
                .with_input_responses(last),
        )
        .await
        .unwrap();
    assert_eq!(
        complete(done)["structuredContent"],
        json!({"name": "Bo", "age": 7})
    );
    client.cancel().await.unwrap();
}

/// A 2025-11-25 session: the call waits while the client is sent the page's
/// link (URL mode); the person decides there; the decision is theirs.
#[tokio::test]
async fn a_2025_session_is_sent_the_pages_link_and_the_person_decides() {
    use tower::ServiceExt;
    let log = Log::default();
    let tm = app(
        Toolmark::builder().confirm_handler(|_req: toolmark::ConfirmRequest| async {
            panic!("the app's handler is not asked: the person approves on the page")
        }),
        &log,
    );
    let mut events = tm.events();
    let page = toolmark::mcp::ApprovalPage::new(
        "https://app.example/approve",
        Elicitation::consequential(),
    )
    .identify(|_| Some("bob".to_owned()));
    let server = McpServer::new(tm).approve_on_page(page);
    let router = server.approval_router();
    let rounds = Arc::new(AtomicUsize::new(0));
    let r2 = Arc::clone(&rounds);
    let client = Client {
        elicit: Some(ElicitationAction::Accept),
        url: true,
        on_url: Some(Arc::new(move |url: String| {
            let (router, rounds) = (router.clone(), Arc::clone(&r2));
            Box::pin(async move {
                // The first time the user says "done" without deciding.
                if rounds.fetch_add(1, Ordering::SeqCst) == 0 {
                    return;
                }
                let token = url.split("token=").nth(1).unwrap().to_owned();
                let req = axum::http::Request::post("/")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(
                        json!({"token": token, "approved": true}).to_string(),
                    ))
                    .unwrap();
                assert_eq!(router.oneshot(req).await.unwrap().status(), 200);
            })
        })),
        ..Client::default()
    };
    let client = connect(&server, client).await;
    let r = pay(&client, "ada", 5, SECRET).await;
    assert_eq!(r.structured_content, Some(json!({"paid": 5})));
    assert_eq!(
        rounds.load(Ordering::SeqCst),
        2,
        "asked again after the first 'done'"
    );
    let urls = client.service().urls.lock().unwrap().clone();
    assert!(urls.iter().all(|u| !u.contains(SECRET)));
    assert_eq!(log.get(), ["paid 5 to ada"]);
    let approver = loop {
        if let Event::ConfirmationResolved { approver, .. } = events.recv().await.unwrap() {
            break approver;
        }
    };
    assert_eq!(approver, toolmark::Approver::User { id: "bob".into() });
    client.cancel().await.unwrap();
}

/// Tools that ask the client's model, the user, or the model but cope without.
fn client_needing_app(log: &Log) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let l = log.clone();
    let specs = [
        toolmark::ToolSpec::typed(
            "summarize",
            "Asks the client's model",
            move |ctx: toolmark::ToolContext, p: Pin| {
                let l = l.clone();
                async move {
                    l.push("run");
                    let answer = ctx
                        .sample(
                            toolmark::SampleRequest::new(format!("Summarize (pin {})", p.pin))
                                .max_tokens(50),
                        )
                        .await?;
                    Ok::<_, toolmark::ToolError>(
                        json!({"text": answer.text, "model": answer.model}),
                    )
                }
            },
        )
        .sensitive(["pin"]),
        toolmark::ToolSpec::typed(
            "ask_name",
            "Asks the user",
            |ctx: toolmark::ToolContext, _: toolmark::NoInput| async move {
                let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
                ctx.elicit("Your name?", schema).await?;
                Ok::<_, toolmark::ToolError>(json!("asked"))
            },
        ),
        toolmark::ToolSpec::typed(
            "maybe_summarize",
            "Asks the client's model when it can",
            |ctx: toolmark::ToolContext, _: toolmark::NoInput| async move {
                Ok::<_, toolmark::ToolError>(
                    match ctx.sample(toolmark::SampleRequest::new("Hi")).await {
                        Ok(a) => json!(a.text),
                        Err(e) => json!(format!("without a model: {}", e.code())),
                    },
                )
            },
        ),
    ];
    for spec in specs {
        tm.register(spec.effect(toolmark::Effect::Read), Default::default())
            .unwrap();
    }
    tm
}

/// 2026-07-28: a call that fails because its tool needed a capability the
/// request's `_meta` did not declare is the JSON-RPC error -32021
/// (MissingRequiredClientCapability) naming it; a tool that copes without it
/// answers as usual.
#[tokio::test]
async fn a_capability_the_request_did_not_declare_is_missing_required_client_capability() {
    let log = Log::default();
    let server = McpServer::new(client_needing_app(&log));
    let client = connect_2026(&server, Client::default()).await;
    for (tool, args, capability) in [
        ("summarize", json!({"pin": SECRET}), "sampling"),
        ("ask_name", json!({}), "elicitation"),
    ] {
        match client.call_tool_once(call(tool, args)).await {
            Err(rmcp::ServiceError::McpError(e)) => {
                assert_eq!(
                    e.code,
                    rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "{tool}: {e:?}"
                );
                let data = e.data.unwrap();
                assert!(
                    data["requiredCapabilities"][capability].is_object(),
                    "{tool}: {data}"
                );
                assert!(!data.to_string().contains(SECRET));
            }
            other => panic!("{tool}: expected -32021, got {other:?}"),
        }
    }
    let r = client
        .call_tool(call("maybe_summarize", json!({})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content,
        Some(json!({"result": "without a model: not_supported"}))
    );
    client.cancel().await.unwrap();
}

/// 2026-07-28: `ctx.sample` is an `input_required` round (`sample-N`, a
/// `sampling/createMessage` scrubbed of the call's secrets); the retry with the
/// model's answer runs the tool again and it gets the answer.
#[tokio::test]
async fn ctx_sample_goes_back_in_a_round_and_the_tool_gets_the_models_answer() {
    let log = Log::default();
    let server = McpServer::new(client_needing_app(&log));
    let client = connect_2026(
        &server,
        Client {
            sampling: true,
            ..Client::default()
        },
    )
    .await;
    let first = client
        .call_tool_once(call("summarize", json!({"pin": SECRET})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(ir) = first else {
        panic!("a round: {first:?}")
    };
    let text = serde_json::to_string(&ir).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    let request = serde_json::to_value(&ir.input_requests.as_ref().unwrap()["sample-0"]).unwrap();
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert_eq!(request["params"]["maxTokens"], 50);
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        "Summarize (pin [redacted])"
    );
    let mut answer = InputResponses::new();
    answer.insert(
        "sample-0".into(),
        json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m1"}),
    );
    let done = client
        .call_tool_once(
            call("summarize", json!({"pin": SECRET}))
                .with_request_state(ir.request_state.unwrap())
                .with_input_responses(answer),
        )
        .await
        .unwrap();
    assert_eq!(
        complete(done)["structuredContent"],
        json!({"text": "short", "model": "m1"})
    );
    assert_eq!(log.get(), ["run", "run"]);
    // rmcp's client answers the round itself with its sampling handler.
    let r = client
        .call_tool(call("summarize", json!({"pin": SECRET})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content,
        Some(json!({"text": "sampled: Summarize (pin [redacted])", "model": "test-model"}))
    );
    client.cancel().await.unwrap();
}
