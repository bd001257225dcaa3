//! MCP, as the server is today: over stdio (rmcp's own client, in-process) and
//! over Streamable HTTP (the router, as a tower service). Fewer cases: each one
//! opens a session.

#![allow(deprecated)] // rmcp marks logging deprecated for a future revision

use std::sync::{Arc, Mutex};

use axum::body::Body;
use http_body_util::BodyExt;
use proptest::test_runner::TestCaseError;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    LoggingMessageNotificationParam, ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::Toolmark;
use tower::ServiceExt as _;

use crate::app::{app, App, Card, Payment, Signup};
use crate::canary::{self, Canary};
use crate::core::{check, Observer};
use crate::{plants, runner, Plant};

/// A client recording every log notification it gets.
#[derive(Clone, Default)]
struct Client {
    logs: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("canary", "0"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .unwrap()
            .push(serde_json::to_string(&params).unwrap());
    }
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let p = CallToolRequestParams::new(name.to_owned());
    match args {
        Value::Object(o) => p.with_arguments(o),
        _ => p,
    }
}

/// Put the plant's secrets in the form and the wizard, as a user typing.
fn type_secrets(app: &App, c: &mut Canary, p: Plant, secret: &str) {
    app.signup.set(Signup {
        name: "Ada".to_owned(),
        card: Some(Card {
            number: c.variant(p.kind.wrapping_add(1)),
            cvc: secret.to_owned(),
        }),
    });
    app.wizard.go_to("payment");
    app.payment.set(Payment {
        card: secret.to_owned(),
    });
}

/// The calls each session makes: (tool, arguments).
fn calls(p: Plant, secret: &str, number: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("vault.pay", p.pay_input("Ada", secret, number)),
        ("vault.pay", p.pay_input("fail", secret, number)),
        ("vault.note", json!({"title": "t", "secret": secret})),
        ("vault.labels", json!({"labels": {secret: number}})),
        ("signup.submit", json!({})),
        ("checkout.next", json!({})),
        ("checkout.submit", json!({})),
    ]
}

/// Lines of `trace` from targets other than rmcp's own, and rmcp's (issue 19
/// item 4: checked on their own below, so a leak there is named as rmcp's).
fn split_trace(trace: &str) -> (String, String) {
    let (mut ours, mut rmcp) = (String::new(), String::new());
    for line in trace.lines() {
        let mut words = line.split(' ');
        let target = match words.next() {
            Some("event") => words.nth(1),
            Some("span") => words.next(),
            _ => None,
        }
        .unwrap_or_default();
        let to = if target.starts_with("rmcp") {
            &mut rmcp
        } else {
            &mut ours
        };
        to.push_str(line);
        to.push('\n');
    }
    (ours, rmcp)
}

async fn stdio_case(
    server: &McpServer,
    app: &App,
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let mut seen = Vec::new();
    type_secrets(app, c, p, secret);
    let number = c.variant(p.kind.wrapping_add(2));
    let (a, b) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::default();
    let running = client.clone().serve(b).await.expect("client connects");
    let tools = running.list_all_tools().await.expect("tools/list");
    seen.push(("tools/list", serde_json::to_string(&tools).unwrap()));
    for (name, args) in calls(p, secret, &number) {
        match running.call_tool(call(name, args)).await {
            Ok(result) => seen.push((
                "a tools/call result",
                serde_json::to_string(&result).unwrap(),
            )),
            Err(e) => seen.push(("a tools/call error", format!("{e:?} {e}"))),
        }
    }
    let _ = running.cancel().await;
    for l in client.logs.lock().unwrap().drain(..) {
        seen.push(("a notifications/message", l));
    }
    seen
}

fn post(session: Option<&str>, body: String) -> axum::http::Request<Body> {
    let mut req = axum::http::Request::post("/")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    req.body(Body::from(body)).unwrap()
}

async fn send(router: &axum::Router, req: axum::http::Request<Body>) -> (Option<String>, String) {
    let res = router.clone().oneshot(req).await.unwrap();
    let session = res
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        res.into_body().collect(),
    )
    .await
    .expect("the response ends")
    .unwrap()
    .to_bytes();
    (session, String::from_utf8_lossy(&body).into_owned())
}

async fn http_case(
    router: &axum::Router,
    app: &App,
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let mut seen = Vec::new();
    type_secrets(app, c, p, secret);
    let number = c.variant(p.kind.wrapping_add(2));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "canary", "version": "0"}}});
    let (session, body) = send(router, post(None, init.to_string())).await;
    seen.push(("an HTTP initialize response", body));
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    send(router, post(Some(&session), initialized.to_string())).await;
    for (i, (name, args)) in calls(p, secret, &number).into_iter().enumerate() {
        let req = json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
            "params": {"name": name, "arguments": args}});
        let (_, body) = send(router, post(Some(&session), req.to_string())).await;
        assert!(
            body.contains("\"result\"") || body.contains("\"error\""),
            "{body}"
        );
        seen.push(("an HTTP tools/call response", body));
    }
    seen
}

#[test]
fn mcp_surfaces() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let app = rt.block_on(async { app(Toolmark::builder()) });
    let server = McpServer::new(app.tm.clone());
    let router = server.router();
    let observer = std::cell::RefCell::new(rt.block_on(async { Observer::new(&app.tm) }));
    let _ = trace.take();
    let mut run = runner(48);
    let result = run.run(&(plants(), proptest::bool::ANY), |(p, http)| {
        let (mut c, secret) = p.canary();
        let mut seen = rt.block_on(async {
            if http {
                http_case(&router, &app, p, &mut c, &secret).await
            } else {
                stdio_case(&server, &app, p, &mut c, &secret).await
            }
        });
        seen.extend(app.seen.take());
        let mut observed = rt.block_on(async { observer.borrow_mut().take(&app.tm, &trace) });
        // The trace: rmcp's own lines are checked by the test below.
        for (what, text) in &mut observed {
            if *what == "tracing at TRACE" {
                *text = split_trace(text).0;
            }
        }
        seen.extend(observed);
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// rmcp's own DEBUG/TRACE lines (`rmcp::service: received request …`) never carry
/// the `tools/call` arguments as the client sent them: the server
/// (`McpServer::serve_transport`, as `serve_stdio`) takes them out before rmcp reads
/// the message. The client runs on a thread of its own, outside the capture: its
/// own lines hold the request it sends (the caller's own secrets), which are not
/// the server's to hide.
#[test]
fn mcp_rmcp_trace_carries_no_secret() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let app = rt.block_on(async { app(Toolmark::builder()) });
    let server = McpServer::new(app.tm.clone());
    let mut run = runner(8);
    let result = run.run(&plants(), |p| {
        let (mut c, secret) = p.canary();
        type_secrets(&app, &mut c, p, &secret);
        let number = c.variant(p.kind.wrapping_add(2));
        let calls = calls(p, &secret, &number);
        let (a, b) = tokio::io::duplex(1 << 16);
        let client = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let running = Client::default().serve(b).await.expect("client connects");
                running.list_all_tools().await.expect("tools/list");
                let mut answered = 0;
                for (name, args) in calls {
                    if running.call_tool(call(name, args)).await.is_ok() {
                        answered += 1;
                    }
                }
                let _ = running.cancel().await;
                answered
            })
        });
        rt.block_on(async { server.serve_transport(a).await })
            .expect("the session ends when the client leaves");
        let answered = client.join().expect("the client thread");
        assert!(answered > 0, "no call was answered");
        let (_, rmcp) = split_trace(&trace.take());
        assert!(
            rmcp.contains("rmcp"),
            "rmcp's own lines were captured (the check has something to read)"
        );
        c.check("rmcp's own tracing", rmcp)
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
