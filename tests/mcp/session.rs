//! tools/list, tools/call, cancellation, progress, list_changed and elicitation
//! through rmcp's client.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{CallToolRequest, NumberOrString, RequestMetaObject};
use rmcp::model::{ClientRequest, ElicitationAction, PaginatedRequestParams, ProgressToken};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use toolmark::mcp::{Elicitation, McpServer};
use toolmark::Toolmark;

use crate::*;

#[tokio::test]
async fn tools_list_is_sorted_with_annotations_schemas_and_write_only_kept() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let client = connect(&server, Client::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "extra.ping",
            "notes.add",
            "notes.count",
            "notes.purge",
            "pay.send",
            "slow.wait"
        ]
    );
    let by = |n: &str| serde_json::to_value(tools.iter().find(|t| t.name == n).unwrap()).unwrap();
    let count = by("notes.count");
    assert_eq!(count["title"], "Count notes");
    assert_eq!(count["annotations"]["readOnlyHint"], true);
    assert_eq!(
        count["outputSchema"],
        json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]})
    );
    let purge = by("notes.purge");
    assert_eq!(purge["annotations"]["destructiveHint"], true);
    assert_eq!(purge["annotations"]["readOnlyHint"], false);
    let send = by("pay.send");
    assert_eq!(send["annotations"]["destructiveHint"], false);
    assert_eq!(send["annotations"]["openWorldHint"], true);
    assert_eq!(send["inputSchema"]["type"], "object");
    assert_eq!(send["inputSchema"]["properties"]["card"]["writeOnly"], true);
    assert_eq!(by("notes.add")["annotations"]["destructiveHint"], false);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tools_list_pages_with_a_cursor_and_refuses_a_bad_one() {
    let server = McpServer::new(approving_app(&Log::default())).page_size(4);
    let client = connect(&server, Client::default()).await;
    let first = client
        .list_tools(Some(PaginatedRequestParams::default()))
        .await
        .unwrap();
    assert_eq!(first.tools.len(), 4);
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some(cursor)),
        ))
        .await
        .unwrap();
    assert_eq!(second.tools.len(), 2);
    assert!(second.next_cursor.is_none());
    assert_eq!(client.list_all_tools().await.unwrap().len(), 6);
    let bad = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("zz".into())),
        ))
        .await;
    assert!(bad.is_err());
    client.cancel().await.unwrap();
}

/// Each tool's MCP form (its schemas) is built once and shared by every session
/// and every later listing: a change of what is visible copies no schema.
#[tokio::test]
async fn each_tool_is_built_once_and_shared_across_listings() {
    let tm = approving_app(&Log::default());
    let server = McpServer::new(tm.clone());
    let a = server.session();
    let b = server.session();
    let (la, lb) = (list_of(&a), list_of(&b));
    assert_eq!(la.len(), 6);
    let shared = |x: &rmcp::model::Tool, y: &rmcp::model::Tool| {
        std::sync::Arc::ptr_eq(&x.input_schema, &y.input_schema)
    };
    assert!(
        la.iter().zip(lb.iter()).all(|(x, y)| shared(x, y)),
        "sessions share one built tool each"
    );
    tm.scope("extra").set_when(false);
    let lc = list_of(&a);
    assert_eq!(lc.len(), 5);
    for t in lc.iter() {
        let before = la.iter().find(|x| x.name == t.name).unwrap();
        assert!(shared(before, t), "{} was rebuilt", t.name);
    }
}

fn list_of(s: &toolmark::mcp::McpSession) -> std::sync::Arc<Vec<rmcp::model::Tool>> {
    s.tools()
}

#[tokio::test]
async fn call_ok_wraps_non_objects_and_keeps_objects() {
    let server = McpServer::new(approving_app(&Log::default()));
    let client = connect(&server, Client::default()).await;
    let r = client
        .call_tool(call("notes.count", json!({})))
        .await
        .unwrap();
    assert_eq!(
        wire(&r),
        json!({"content": [{"type": "text", "text": "{\"result\":3}"}],
               "structuredContent": {"result": 3}, "isError": false})
    );
    let r = client
        .call_tool(call("notes.add", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"id": 4, "text": "hi"})));
    assert_eq!(r.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn invalid_input_is_an_error_result_naming_the_code_and_field() {
    let server = McpServer::new(approving_app(&Log::default()));
    let client = connect(&server, Client::default()).await;
    let r = client
        .call_tool(call("notes.add", json!({"text": 5})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let s = r.structured_content.clone().unwrap();
    assert_eq!(s["code"], "invalid");
    assert_eq!(s["issues"][0]["path"], "text");
    let text = r.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with("invalid: "), "{text}");
    assert!(text.contains("\n- text: "), "{text}");
    // A tool's own error is an error result too.
    let r = client
        .call_tool(call("notes.add", json!({"text": ""})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(r.structured_content.unwrap()["code"], "tool_error");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_or_hidden_tool_is_the_invalid_params_error() {
    let tm = approving_app(&Log::default());
    let server = McpServer::new(tm.clone());
    let client = connect(&server, Client::default()).await;
    let e = client.call_tool(call("nope", json!({}))).await.unwrap_err();
    assert!(format!("{e:?}").contains("-32602"), "{e:?}");
    tm.scope("extra").set_when(false);
    let e = client
        .call_tool(call("extra.ping", json!({})))
        .await
        .unwrap_err();
    assert!(format!("{e}").contains("Unknown tool"), "{e}");
    // The session is still up.
    assert!(client
        .call_tool(call("notes.count", json!({})))
        .await
        .is_ok());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn consequential_calls_ask_the_apps_handler_inline() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let client = connect(&server, Client::default()).await;
    let r = pay(&client, "ada", 5, SECRET).await;
    assert_eq!(r.structured_content, Some(json!({"paid": 5})));
    let r = pay(&client, "nobody", 5, SECRET).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.structured_content.clone().unwrap(),
        json!({"code": "rejected", "message": "not to nobody", "issues": []})
    );
    // A tool error quoting the secret reaches the client scrubbed.
    let r = pay(&client, "echo", 1, SECRET).await;
    assert!(!wire(&r).to_string().contains(SECRET), "{}", wire(&r));
    assert_eq!(
        log.get(),
        [
            "app asked: Pay 5 to ada",
            "paid 5 to ada",
            "app asked: Pay 5 to nobody",
            "app asked: Pay 1 to echo",
            "paid 1 to echo"
        ]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_confirm_path_guarded_tools_are_hidden_and_not_allowed() {
    let log = Log::default();
    let server = McpServer::new(app(Toolmark::builder(), &log));
    let client = connect(&server, Client::default()).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "pay.send" || n == "notes.purge"));
    let r = pay(&client, "a", 1, "x").await;
    assert_eq!(r.structured_content.unwrap()["code"], "not_allowed");
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn notifications_cancelled_cancels_the_call() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let client = connect(&server, Client::default()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
        "slow.wait",
        json!({"steps": 100000}),
    )));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    started(&log).await;
    handle.cancel(Some("enough".into())).await.unwrap();
    wait_for(&log, "wait cancelled").await;
    assert_eq!(log.get(), ["wait started", "wait cancelled"]);
    // The session goes on.
    assert!(client
        .call_tool(call("notes.count", json!({})))
        .await
        .is_ok());
    client.cancel().await.unwrap();
}

/// Wait until the log shows the long call running (or gives up after 5 s).
async fn started(log: &Log) {
    wait_for(log, "wait started").await;
}

async fn wait_for(log: &Log, what: &str) {
    for _ in 0..1000 {
        if log.get().iter().any(|l| l == what) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never saw {what:?}: {:?}", log.get());
}

#[tokio::test]
async fn the_end_of_the_session_cancels_its_calls() {
    let log = Log::default();
    let server = McpServer::new(approving_app(&log));
    let client = connect(&server, Client::default()).await;
    let peer = client.peer().clone();
    let call_task = tokio::spawn(async move {
        peer.call_tool(call("slow.wait", json!({"steps": 100000})))
            .await
    });
    started(&log).await;
    client.cancel().await.unwrap();
    wait_for(&log, "wait cancelled").await;
    assert_eq!(log.get(), ["wait started", "wait cancelled"]);
    assert!(call_task.await.unwrap().is_err());
}

#[tokio::test]
async fn progress_reaches_a_client_that_sent_a_token() {
    let server = McpServer::new(approving_app(&Log::default()));
    let c = Client::default();
    let progress = c.progress.clone();
    let client = connect(&server, c).await;
    let mut params = call("slow.wait", json!({"steps": 3}));
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    params.meta = Some(meta);
    let r = client.call_tool(params).await.unwrap();
    assert_eq!(r.structured_content, Some(json!({"waited": 3})));
    assert_eq!(
        *progress.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    client.cancel().await.unwrap();
}

/// Let every task run until the runtime idles, then `d` more of virtual time
/// (the test runs on tokio's paused clock: no real time passes).
async fn settle(d: Duration) {
    tokio::time::sleep(d).await;
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_scope_changes_sends_one_list_changed_to_every_session() {
    let tm = approving_app(&Log::default());
    let server = McpServer::new(tm.clone());
    let (c1, c2) = (Client::default(), Client::default());
    let (n1, n2) = (c1.list_changed.clone(), c2.list_changed.clone());
    let a = connect(&server, c1).await;
    let b = connect(&server, c2).await;
    // Both sessions are initialized once a request went through.
    a.list_all_tools().await.unwrap();
    b.list_all_tools().await.unwrap();
    let extra = tm.scope("extra");
    // A burst, all at once: ends hidden, one notification to each session.
    for i in 0..10 {
        extra.set_when(i % 2 == 0);
    }
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 1);
    assert_eq!(n2.load(Ordering::SeqCst), 1);
    assert_eq!(a.list_all_tools().await.unwrap().len(), 5);
    // A burst spread within the coalescing window (5 ms apart): still one.
    for i in 0..3 {
        extra.set_when(i % 2 == 0);
        settle(Duration::from_millis(5)).await;
    }
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 2);
    assert_eq!(a.list_all_tools().await.unwrap().len(), 6);
    // A change that ends where it began sends nothing.
    extra.set_when(false);
    extra.set_when(true);
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 2);
    // Changes further apart than the window each notify.
    extra.set_when(false);
    settle(Duration::from_millis(100)).await;
    extra.set_when(true);
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 4);
    assert_eq!(n2.load(Ordering::SeqCst), 4);
    // Registering a tool, and disposing a scope, each notify.
    tm.scope("late")
        .register(toolmark::ToolSpec::new("x", "X").handler(|_c, i| async { Ok(i) }))
        .unwrap();
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 5);
    tm.scope("late").dispose();
    settle(Duration::from_secs(1)).await;
    assert_eq!(n1.load(Ordering::SeqCst), 6);
    assert_eq!(n2.load(Ordering::SeqCst), 6);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

fn elicit_server(log: &Log, policy: Elicitation) -> McpServer {
    McpServer::new(approving_app(log)).confirm_by_elicitation(policy)
}

#[tokio::test]
async fn elicitation_accept_approves_and_the_message_is_redacted() {
    let log = Log::default();
    let server = elicit_server(&log, Elicitation::consequential());
    let c = Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    };
    let asked = c.asked.clone();
    let client = connect(&server, c).await;
    let r = pay(&client, "ada", 9, SECRET).await;
    assert_eq!(r.structured_content, Some(json!({"paid": 9})));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("Pay 9 to ada"), "{}", asked[0]);
    assert!(!asked[0].contains(SECRET));
    assert_eq!(
        log.get(),
        ["paid 9 to ada"],
        "the app's handler was not asked"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn elicitation_decline_rejects_with_the_reason() {
    let log = Log::default();
    let server = elicit_server(&log, Elicitation::consequential());
    let c = Client {
        elicit: Some(ElicitationAction::Decline),
        ..Client::default()
    };
    let client = connect(&server, c).await;
    let r = pay(&client, "ada", 9, SECRET).await;
    let s = r.structured_content.unwrap();
    assert_eq!(s["code"], "rejected");
    assert!(s["message"].as_str().unwrap().contains("declined"));
    assert!(log.get().is_empty());
    // Cancel rejects too.
    let c = Client {
        elicit: Some(ElicitationAction::Cancel),
        ..Client::default()
    };
    let client2 = connect(&server, c).await;
    let r = pay(&client2, "ada", 9, SECRET).await;
    assert_eq!(r.structured_content.unwrap()["code"], "rejected");
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
    client2.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_falls_back_to_the_apps_handler() {
    let log = Log::default();
    let server = elicit_server(&log, Elicitation::consequential());
    let c = Client::default();
    let asked = c.asked.clone();
    let client = connect(&server, c).await;
    let r = pay(&client, "ada", 2, SECRET).await;
    assert_eq!(r.structured_content, Some(json!({"paid": 2})));
    assert!(asked.lock().unwrap().is_empty());
    assert_eq!(log.get(), ["app asked: Pay 2 to ada", "paid 2 to ada"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn destructive_tools_are_elicited_only_when_the_app_says_so() {
    let log = Log::default();
    let c = || Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    };
    let client = connect(&elicit_server(&log, Elicitation::consequential()), c()).await;
    client
        .call_tool(call("notes.purge", json!({})))
        .await
        .unwrap();
    assert_eq!(log.get(), ["app asked: Delete every note", "purged"]);
    let log2 = Log::default();
    let client2 = connect(
        &elicit_server(&log2, Elicitation::consequential().destructive()),
        c(),
    )
    .await;
    client2
        .call_tool(call("notes.purge", json!({})))
        .await
        .unwrap();
    assert_eq!(log2.get(), ["purged"]);
    // Limited to some tools: others ask the app.
    let log3 = Log::default();
    let client3 = connect(
        &elicit_server(&log3, Elicitation::consequential().only(["other.tool"])),
        c(),
    )
    .await;
    pay(&client3, "a", 1, "x").await;
    assert_eq!(log3.get(), ["app asked: Pay 1 to a", "paid 1 to a"]);
    for c in [client, client2, client3] {
        c.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn per_session_toolmarks_are_independent() {
    let server = McpServer::per_session(|| approving_app(&Log::default()));
    let a = server.session();
    let b = server.session();
    a.toolmark().scope("extra").set_when(false);
    assert_eq!(a.tools().len(), 5);
    assert_eq!(b.tools().len(), 6);
}

#[tokio::test]
async fn a_decision_remembered_for_the_session_covers_only_that_mcp_session() {
    use toolmark::policy::{answering, For};
    let log = Log::default();
    let l = log.clone();
    let tm = app(
        Toolmark::builder().confirm_handler(answering(move |req: toolmark::ConfirmRequest| {
            l.push(format!("app asked: {}", req.summary));
            async move {
                toolmark::Decision::approve()
                    .by("user-1")
                    .remember(For::Session)
            }
        })),
        &log,
    );
    let server = McpServer::new(tm.clone());
    let asked = || {
        log.get()
            .iter()
            .filter(|e| e.starts_with("app asked"))
            .count()
    };
    let first = connect(&server, Client::default()).await;
    for _ in 0..2 {
        let r = first
            .call_tool(call("notes.purge", json!({})))
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{}", wire(&r));
    }
    assert_eq!(asked(), 1, "the second call of the session was covered");
    assert_eq!(tm.remembered().len(), 1);
    // Another client session is asked again.
    let second = connect(&server, Client::default()).await;
    let r = second
        .call_tool(call("notes.purge", json!({})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{}", wire(&r));
    assert_eq!(
        asked(),
        2,
        "a new session is not covered by the first one's decision"
    );
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}
