//! The secret canary (`tests/support/canary.rs`) on the 2026-07-28 surfaces: a
//! marked card number sent to the sensitive `card` of `pay.send` appears in no
//! `input_required` round (the elicitation and its `requestState`), no retry's
//! result or refusal, no task's status, result or stored record (key and value),
//! no approval page's `GET`, no stored confirmation record, no event, and no
//! `tracing` event or span of any target (rmcp's included). A tool that puts its
//! card number and CVC into `ctx.sample`'s prompt shows neither in the sampling
//! round (messages, system prompt, `requestState`), the retry's result, a
//! tampered retry's `-32602`, a `-32021`, or the refusal of the input sent
//! under the fields' serde alias keys.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolResponse, ElicitResult, ElicitationAction, GetTaskParams, InputResponses,
    ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolmark::mcp::{
    ApprovalPage, Elicitation, McpServer, MemoryTaskStore, TaskOptions, TaskStore,
};
use toolmark::store::{ConfirmStore, MemoryStore, StoreError};
use toolmark::Toolmark;
use tower::ServiceExt as _;

use crate::canary::{self, Canary};
use crate::*;

/// A task store that keeps what it is given, for the canary to read: every key and
/// every value ever written.
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

/// Everything an observer of the 2026-07-28 surfaces reads, as text.
#[derive(Default)]
struct Seen(Vec<(String, String)>);

impl Seen {
    fn add(&mut self, what: &str, value: &impl serde::Serialize) {
        self.0
            .push((what.to_owned(), serde_json::to_string(value).unwrap()));
    }
    fn text(&mut self, what: &str, text: String) {
        self.0.push((what.to_owned(), text));
    }
    /// A `tools/call` answer, as sent and as `Debug`.
    fn response(&mut self, what: &str, r: &CallToolResponse) {
        match r {
            CallToolResponse::Complete(r) => self.add(what, r),
            CallToolResponse::InputRequired(r) => self.add(what, r),
            CallToolResponse::Task(r) => self.add(what, r),
            other => panic!("{what}: {other:?}"),
        }
        self.text(&format!("{what} (Debug)"), format!("{r:?}"));
    }

    /// A response that is a result or a JSON-RPC error (both are read by the client).
    fn outcome(&mut self, what: &str, r: &Result<CallToolResponse, rmcp::ServiceError>) {
        match r {
            Ok(r) => self.response(what, r),
            Err(rmcp::ServiceError::McpError(e)) => {
                self.add(what, e);
                self.text(&format!("{what} (Debug)"), format!("{e:?}"));
            }
            Err(other) => panic!("{what}: {other:?}"),
        }
    }
}

async fn tasks_and_rounds(c: &mut Canary, seen: &mut Seen) {
    let log = Log::default();
    let store = MemoryStore::new();
    let tm = app(
        Toolmark::builder()
            .confirm_store(store.clone())
            .confirm_handler(|_req: toolmark::ConfirmRequest| async {
                panic!("the client confirms")
            }),
        &log,
    );
    let mut events = tm.events();
    let tasks = Recording::default();
    let server = McpServer::new(tm.clone())
        .confirm_by_elicitation(Elicitation::consequential().edits())
        .tasks(TaskOptions::new().store(tasks.clone()));

    // A confirmation by multi round-trip request: the round, a tampered retry, an
    // edit that puts the redacted card back, the approval.
    let card = c.variant(1);
    let args = json!({"to": "ada", "amount": 5, "card": card});
    // The harness sees the card where it is (as the client sent it, JSON-escaped).
    assert!(c.check("the arguments sent", args.to_string()).is_err());
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            ..Client::default()
        },
    )
    .await;
    let CallToolResponse::InputRequired(round) = client
        .call_tool_once(call("pay.send", args.clone()))
        .await
        .unwrap()
    else {
        panic!("input_required")
    };
    seen.add("input_required round", &round);
    let state = round.request_state.clone().unwrap();
    let pending = tm.pending_confirmations_async().await.unwrap();
    seen.add("pending confirmations", &pending);
    seen.text(
        "stored records",
        format!("{:?}", store.list().await.unwrap()),
    );
    let mut tampered = state.clone().into_bytes();
    tampered[10] = if tampered[10] == b'a' { b'b' } else { b'a' };
    let refused = client
        .call_tool_once(
            call("pay.send", args.clone())
                .with_request_state(String::from_utf8(tampered).unwrap())
                .with_input_responses(accept()),
        )
        .await;
    seen.outcome("a tampered retry", &refused);
    let other = client
        .call_tool_once(
            call("pay.send", json!({"to": "eve", "amount": 5, "card": card}))
                .with_request_state(state.clone())
                .with_input_responses(accept()),
        )
        .await;
    seen.outcome("a retry with other arguments", &other);
    let done = client
        .call_tool_once(
            call("pay.send", args.clone())
                .with_request_state(state.clone())
                .with_input_responses(accept()),
        )
        .await
        .unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    seen.response("the approved retry", &done);
    let replayed = client
        .call_tool_once(
            call("pay.send", args.clone())
                .with_request_state(state)
                .with_input_responses(accept()),
        )
        .await
        .unwrap();
    seen.response("a replayed retry", &replayed);
    // A careless tool echoing the card in its error.
    let echo_args = json!({"to": "echo", "amount": 5, "card": card});
    let CallToolResponse::InputRequired(round) = client
        .call_tool_once(call("pay.send", echo_args.clone()))
        .await
        .unwrap()
    else {
        panic!("input_required")
    };
    let echoed = client
        .call_tool_once(
            call("pay.send", echo_args)
                .with_request_state(round.request_state.unwrap())
                .with_input_responses(accept()),
        )
        .await
        .unwrap();
    seen.response("an approved call whose tool echoes the card", &echoed);
    client.cancel().await.unwrap();

    // A task waiting for its client's approval, then completed.
    let card = c.secret();
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            tasks: true,
            ..Client::default()
        },
    )
    .await;
    let CallToolResponse::Task(task) = client
        .call_tool_once(call(
            "pay.send",
            json!({"to": "bo", "amount": 7, "card": card}),
        ))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    seen.add("the task created", &task);
    let id = task.task.task_id.clone();
    let waiting = client.get_task(GetTaskParams::new(&id)).await.unwrap();
    seen.add("tasks/get (input_required)", &waiting);
    client
        .update_task(UpdateTaskParams::new(id.clone(), accept()))
        .await
        .unwrap();
    let mut last = Value::Null;
    for _ in 0..500 {
        last =
            serde_json::to_value(client.get_task(GetTaskParams::new(&id)).await.unwrap()).unwrap();
        if last["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["result"]["structuredContent"], json!({"paid": 7}));
    seen.add("tasks/get (completed)", &last);
    client.cancel().await.unwrap();
    assert_eq!(
        log.get(),
        ["paid 5 to ada", "paid 5 to echo", "paid 7 to bo"]
    );

    let written = tasks.written.lock().unwrap().clone();
    assert!(written.len() >= 3, "{written:?}");
    seen.text("task store keys and values", written.join("\n"));
    seen.text(
        "stored records",
        format!("{:?}", store.list().await.unwrap()),
    );
    let mut evs = Vec::new();
    while let Ok(e) = events.try_recv() {
        evs.push(format!("{e:?}"));
    }
    assert!(!evs.is_empty());
    seen.text("events", evs.join("\n"));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CardCheck {
    #[serde(alias = "card_number")]
    card: String,
    #[serde(alias = "security_code")]
    cvc: String,
}

/// A sampling round (`sample-N`) whose tool was called with a card number and
/// CVC and puts both into the model's prompt and system prompt.
async fn sampling_round(c: &mut Canary, seen: &mut Seen) {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        toolmark::ToolSpec::typed(
            "card_check",
            "Asks the client's model about a card",
            |ctx: toolmark::ToolContext, p: CardCheck| async move {
                let mut request = toolmark::SampleRequest::new(format!(
                    "Is the card {} (CVC {}) valid?",
                    p.card, p.cvc
                ))
                .max_tokens(20);
                request.system_prompt = Some(format!("You check card {} / {}", p.card, p.cvc));
                let answer = ctx.sample(request).await?;
                Ok::<_, toolmark::ToolError>(json!({"answer": answer.text, "checked": p.card}))
            },
        )
        .effect(toolmark::Effect::Read)
        .sensitive(["card", "cvc"]),
        Default::default(),
    )
    .unwrap();
    let server = McpServer::new(tm);
    let card = c.variant(3);
    let cvc = c.variant(0);
    let args = json!({"card": card, "cvc": cvc});
    let sampling = Client {
        sampling: true,
        ..Client::default()
    };
    let client = connect_2026(&server, sampling).await;
    // Under the alias keys the input is refused (they are not in the schema).
    let aliased = client
        .call_tool_once(call(
            "card_check",
            json!({"card_number": card, "security_code": cvc}),
        ))
        .await;
    seen.outcome("the input under alias keys", &aliased);
    let first = client
        .call_tool_once(call("card_check", args.clone()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(round) = &first else {
        panic!("a sampling round: {first:?}")
    };
    assert!(round
        .input_requests
        .as_ref()
        .unwrap()
        .contains_key("sample-0"));
    seen.response("the sampling round", &first);
    let state = round.request_state.clone().unwrap();
    let mut answer = InputResponses::new();
    answer.insert(
        "sample-0".to_owned(),
        json!({"role": "assistant", "content": {"type": "text", "text": "looks fine"}, "model": "m"}),
    );
    let mut tampered = state.clone().into_bytes();
    tampered[10] = if tampered[10] == b'a' { b'b' } else { b'a' };
    let refused = client
        .call_tool_once(
            call("card_check", args.clone())
                .with_request_state(String::from_utf8(tampered).unwrap())
                .with_input_responses(answer.clone()),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    seen.outcome("a tampered sampling retry", &refused);
    let done = client
        .call_tool_once(
            call("card_check", args.clone())
                .with_request_state(state)
                .with_input_responses(answer),
        )
        .await
        .unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    seen.response("the sampling retry's result", &done);
    // rmcp's client answering the round itself: the request its model got.
    let auto = client
        .call_tool(call("card_check", args.clone()))
        .await
        .unwrap();
    seen.add("the result after rmcp's client answered", &auto);
    let asked = client.service().sampled.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    seen.add("the sampling request the client's model got", &asked);
    client.cancel().await.unwrap();
    // Without the sampling capability: -32021.
    let client = connect_2026(&server, Client::default()).await;
    let missing = client.call_tool_once(call("card_check", args)).await;
    assert!(
        matches!(&missing, Err(rmcp::ServiceError::McpError(e))
            if e.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY),
        "{missing:?}"
    );
    seen.outcome("-32021", &missing);
    client.cancel().await.unwrap();
}

async fn approval_page(c: &mut Canary, seen: &mut Seen) {
    let log = Log::default();
    let tm = app(
        Toolmark::builder().confirm_handler(|_req: toolmark::ConfirmRequest| async {
            panic!("the person approves on the page")
        }),
        &log,
    );
    let page = ApprovalPage::new("https://app.example/approve", Elicitation::consequential())
        .identify(|_| Some("alice".to_owned()));
    let server = McpServer::new(tm).approve_on_page(page);
    let card = c.variant(2);
    let args = json!({"to": "cy", "amount": 9, "card": card});
    let client = connect_2026(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            url: true,
            ..Client::default()
        },
    )
    .await;
    let CallToolResponse::InputRequired(round) = client
        .call_tool_once(call("pay.send", args.clone()))
        .await
        .unwrap()
    else {
        panic!("input_required")
    };
    seen.add("the URL-mode round", &round);
    let asked = serde_json::to_value(&round.input_requests.as_ref().unwrap()["confirm"]).unwrap();
    let token = asked["params"]["url"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap()
        .to_owned();
    let router = server.approval_router();
    let get = router
        .clone()
        .oneshot(
            axum::http::Request::get(format!("/?token={token}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let body = http_body_util::BodyExt::collect(get.into_body())
        .await
        .unwrap()
        .to_bytes();
    let shown: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(shown["input"]["card"], "[redacted]", "{shown}");
    seen.text(
        "the approval page's GET",
        String::from_utf8_lossy(&body).into_owned(),
    );
    let post = router
        .oneshot(
            axum::http::Request::post("/")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    json!({"token": token, "approved": true}).to_string(),
                ))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(post.status(), 200);
    let done = client
        .call_tool_once(
            call("pay.send", args)
                .with_request_state(round.request_state.unwrap())
                .with_input_responses(accept()),
        )
        .await
        .unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    seen.response("the retry after the page's approval", &done);
    assert_eq!(log.get(), ["paid 9 to cy"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn no_2026_surface_shows_a_secret() {
    let trace = canary::capture();
    let mut c = Canary::new();
    let mut seen = Seen::default();
    tasks_and_rounds(&mut c, &mut seen).await;
    approval_page(&mut c, &mut seen).await;
    sampling_round(&mut c, &mut seen).await;
    assert_eq!(c.secrets().len(), 5);
    for (what, text) in &seen.0 {
        c.assert_absent(what, text);
    }
    let traced = trace.take();
    assert!(traced.contains("rmcp"), "the capture saw rmcp's events");
    let mut checked = 0;
    for line in traced.lines() {
        // The requests themselves, as the in-process client sends them and as rmcp
        // reads them before the server does, hold what the client sent; keeping
        // the server's copy out of rmcp's log is the stream transport's business
        // (the server's lines of every other kind are checked here).
        if target(line).starts_with("rmcp") && line.contains("CallToolRequest") {
            continue;
        }
        checked += 1;
        c.assert_absent("tracing at TRACE", line);
    }
    assert!(checked > 100, "{checked} lines");
}

/// The target of a captured line (`event LEVEL target …`, `span target name …`).
fn target(line: &str) -> &str {
    let mut words = line.split(' ');
    match words.next() {
        Some("event") => words.nth(1),
        Some("span") => words.next(),
        _ => None,
    }
    .unwrap_or_default()
}
