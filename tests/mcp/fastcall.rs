//! The 2026-07-28 `tools/call` fast path of `McpServer::router()` answers
//! exactly as rmcp's own service does: the same status, content type and bytes
//! for results, refusals, tool errors, a secret in the input, confirmations by
//! multi round-trip request (and their retries on either path), and everything
//! it leaves to rmcp (header mismatches, other versions, malformed `_meta`,
//! progress, tasks, unknown tools). The slow side is the same Toolmark behind
//! `McpServer::per_session` (no cached catalog: rmcp's service for every
//! request), or, on the same router, a request carrying an `Mcp-Session-Id`
//! header, which rmcp ignores on a 2026-07-28 request and the fast path leaves
//! to it. rmcp's own DEBUG line "received request" shows which path answered.

use axum::body::Body;
use http_body_util::BodyExt;
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{json, Value};
use toolmark::mcp::{Elicitation, McpServer, TaskOptions};
use tower::ServiceExt;

use crate::*;

/// A DEBUG capture for this thread (the tests run on a current-thread
/// runtime, so every task the server spawns is on it).
fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    crate::logs::capture_at(tracing::Level::DEBUG)
}

fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// A request: the body, then header lines (name, value) over the usual ones
/// (a `None` value leaves a usual header out).
struct Req {
    body: Value,
    headers: Vec<(&'static str, Option<String>)>,
}

impl Req {
    /// A 2026-07-28 `tools/call` of `name` with `args`.
    fn call(name: &str, args: Value) -> Req {
        Req::call_with(name, args, json!({}))
    }

    fn call_with(name: &str, args: Value, capabilities: Value) -> Req {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": meta(capabilities)}});
        Req {
            body,
            headers: vec![("mcp-name", Some(name.to_owned()))],
        }
    }

    fn header(mut self, name: &'static str, value: Option<&str>) -> Req {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.map(str::to_owned)));
        self
    }

    /// The same request to rmcp's service on the same router.
    fn via_rmcp(self) -> Req {
        self.header("mcp-session-id", Some("ignored-on-2026"))
    }

    fn build(&self) -> axum::http::Request<Body> {
        let mut usual: Vec<(&str, Option<String>)> = vec![
            ("host", Some("127.0.0.1:3000".into())),
            ("content-type", Some("application/json".into())),
            ("accept", Some("application/json, text/event-stream".into())),
            ("mcp-protocol-version", Some("2026-07-28".into())),
            ("mcp-method", Some("tools/call".into())),
        ];
        usual.retain(|(n, _)| !self.headers.iter().any(|(m, _)| m == n));
        let mut b = axum::http::Request::post("/");
        for (name, value) in usual.iter().chain(self.headers.iter()) {
            if let Some(v) = value {
                for one in v.split('\n') {
                    b = b.header(*name, one);
                }
            }
        }
        b.body(Body::from(self.body.to_string())).unwrap()
    }
}

/// (status, content type, body).
type Answer = (u16, String, String);

async fn send(router: &axum::Router, req: &Req) -> Answer {
    let res = router.clone().oneshot(req.build()).await.unwrap();
    let status = res.status().as_u16();
    let kind = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8_lossy(&body).into_owned())
}

/// The fast router and rmcp's, over one Toolmark.
fn routers(tm: &Toolmark, with: impl Fn(McpServer) -> McpServer) -> (axum::Router, axum::Router) {
    let t = tm.clone();
    (
        with(McpServer::new(tm.clone())).router(),
        with(McpServer::per_session(move || t.clone())).router(),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn results_refusals_and_errors_are_the_same_bytes_as_rmcps() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = approving_app(&log);
    let (fast, slow) = routers(&tm, |s| s);
    let cases = [
        // ok: an object, a wrapped integer (declared schema), a string.
        Req::call("notes.add", json!({"text": "hi"})),
        Req::call("notes.count", json!({})),
        Req::call("extra.ping", json!({})),
        // refused: invalid input (with the secret in it), and not an object.
        Req::call(
            "pay.send",
            json!({"to": "ada", "amount": "five", "card": SECRET}),
        ),
        Req::call("notes.add", json!({"text": 5})),
        // a tool's own error, and one echoing the secret.
        Req::call("notes.add", json!({"text": ""})),
        Req::call(
            "pay.send",
            json!({"to": "echo", "amount": 5, "card": SECRET}),
        ),
        // confirmed by the app's handler: approved, and rejected.
        Req::call(
            "pay.send",
            json!({"to": "ada", "amount": 5, "card": SECRET}),
        ),
        Req::call(
            "pay.send",
            json!({"to": "nobody", "amount": 5, "card": SECRET}),
        ),
        Req::call("notes.purge", json!({})),
    ];
    for req in &cases {
        let a = send(&fast, req).await;
        assert_eq!(
            rmcp_requests(&logs),
            0,
            "the fast path answered {}",
            req.body
        );
        let b = send(&slow, req).await;
        assert_eq!(rmcp_requests(&logs), 1, "rmcp answered {}", req.body);
        assert_eq!(a, b, "{}", req.body);
        assert_eq!(a.0, 200);
        assert_eq!(a.1, "application/json");
        assert!(!a.2.contains(SECRET), "{}", a.2);
    }
    // The same on one router through rmcp's path.
    for req in cases {
        let a = send(&fast, &req).await;
        let b = send(&fast, &req.via_rmcp()).await;
        assert_eq!(rmcp_requests(&logs), 1);
        assert_eq!(a, b);
    }
    // Every call ran its tool once per request: 4 × (approved + echo).
    let paid = log.get().iter().filter(|l| l.starts_with("paid")).count();
    assert_eq!(paid, 8, "{:?}", log.get());
}

#[tokio::test(flavor = "current_thread")]
async fn what_the_fast_path_leaves_to_rmcp_is_answered_as_before() {
    let (logs, _guard) = capture();
    let tm = approving_app(&Log::default());
    let (fast, slow) = routers(&tm, |s| s);
    let ok = || Req::call("notes.count", json!({}));
    let mut no_meta = ok();
    no_meta.body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let mut old_meta = ok();
    old_meta.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2025-11-25");
    let mut future_meta = ok();
    future_meta.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let mut progress = Req::call("slow.wait", json!({"steps": 1}));
    progress.body["params"]["_meta"]["progressToken"] = json!("p1");
    let mut log_level = ok();
    log_level.body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let mut batch = ok();
    batch.body = json!([batch.body]);
    let mut listed = ok();
    listed.body["method"] = json!("tools/list");
    let cases = [
        ok().header("mcp-name", Some("notes.purge")),
        ok().header("mcp-name", None),
        ok().header("mcp-name", Some("notes.count\nnotes.count")),
        ok().header("mcp-name", Some("=?base64?bm90ZXMuY291bnQ=?=")),
        ok().header("mcp-method", Some("tools/list")),
        ok().header("mcp-param-region", Some("eu")),
        ok().header("mcp-protocol-version", Some("2025-11-25")),
        ok().header("accept", Some("application/json")),
        ok().header("content-type", Some("text/plain")),
        Req::call("no.such_tool", json!({})),
        no_meta,
        old_meta,
        future_meta,
        progress,
        log_level,
        batch,
        listed,
    ];
    for req in &cases {
        let a = send(&fast, req).await;
        rmcp_requests(&logs);
        let b = send(&slow, req).await;
        assert_eq!(a, b, "{} {:?}", req.body, req.headers);
    }
    // A tool whose schema names an Mcp-Param header is left to rmcp, which
    // checks such headers against the body.
    let tm2 = Toolmark::builder().build().unwrap();
    tm2.scope("geo")
        .register(
            ToolSpec::new("find", "Find")
                .input_schema(json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}}}))
                .effect(Effect::Read)
                .handler(|_ctx, _input| async { Ok(json!({"found": 1})) }),
        )
        .unwrap();
    let (fast2, slow2) = routers(&tm2, |s| s);
    let plain = Req::call("geo.find", json!({"region": "eu"}));
    let with_header =
        Req::call("geo.find", json!({"region": "eu"})).header("mcp-param-region", Some("eu"));
    rmcp_requests(&logs);
    let a = send(&fast2, &with_header).await;
    assert_eq!(rmcp_requests(&logs), 1, "left to rmcp's service");
    assert_eq!(a.0, 200, "{}", a.2);
    assert_eq!(a, send(&slow2, &with_header).await);
    // Without its header: rmcp's -32020 (checked against the real argument),
    // the same on both.
    let missing = send(&fast2, &plain).await;
    assert_eq!(missing.0, 400, "{}", missing.2);
    assert_eq!(missing, send(&slow2, &plain).await);
}

/// `requestState` is a fresh sealed handle per round: the rest is compared.
fn masked(body: &str) -> (Value, Option<String>) {
    let mut v: Value = serde_json::from_str(body).unwrap();
    let state = v["result"]
        .as_object_mut()
        .and_then(|r| r.remove("requestState"))
        .and_then(|s| s.as_str().map(str::to_owned));
    (v, state)
}

fn answered(state: &str, action: ElicitationAction) -> Req {
    let mut req = Req::call_with(
        "pay.send",
        json!({"to": "ada", "amount": 5, "card": SECRET}),
        json!({"elicitation": {"form": {}}}),
    );
    req.body["params"]["requestState"] = json!(state);
    req.body["params"]["inputResponses"] =
        json!({"confirm": serde_json::to_value(ElicitResult::new(action)).unwrap()});
    req
}

#[tokio::test(flavor = "current_thread")]
async fn a_confirmation_by_multi_round_trip_request_is_the_same_on_both_paths() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = app(client_confirms(Toolmark::builder()), &log);
    let (fast, slow) = routers(&tm, |s| {
        s.confirm_by_elicitation(Elicitation::consequential())
    });
    let ask = || {
        Req::call_with(
            "pay.send",
            json!({"to": "ada", "amount": 5, "card": SECRET}),
            json!({"elicitation": {"form": {}}}),
        )
    };
    // The first round: input_required with a handle, no secret, no run.
    let a = send(&fast, &ask()).await;
    assert_eq!(rmcp_requests(&logs), 0);
    let b = send(&slow, &ask()).await;
    assert_eq!(rmcp_requests(&logs), 1);
    assert_eq!((a.0, &a.1), (b.0, &b.1));
    let ((va, sa), (vb, sb)) = (masked(&a.2), masked(&b.2));
    assert_eq!(va, vb);
    assert_eq!(va["result"]["resultType"], "input_required", "{}", a.2);
    // The handle is lowercase hex, where four given digits turn up by chance: a
    // part of the card in plain text would start a JSON string.
    assert!(!a.2.contains(SECRET) && !a.2.contains("\"4111"), "{}", a.2);
    let (sa, sb) = (sa.unwrap(), sb.unwrap());
    // The retry with the answer runs the tool once, the same answer.
    let done_a = send(&fast, &answered(&sa, ElicitationAction::Accept)).await;
    assert_eq!(rmcp_requests(&logs), 0);
    let done_b = send(&slow, &answered(&sb, ElicitationAction::Accept)).await;
    assert_eq!(done_a, done_b);
    assert!(done_a.2.contains(r#""paid":5"#), "{}", done_a.2);
    // Replayed: the same refusal.
    let again_a = send(&fast, &answered(&sa, ElicitationAction::Accept)).await;
    let again_b = send(&slow, &answered(&sb, ElicitationAction::Accept)).await;
    assert_eq!(again_a, again_b);
    assert!(again_a.2.contains("confirmation_expired"), "{}", again_a.2);
    // Declined, and a retry without an answer (asked again, runs nothing).
    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let (_, sa) = masked(&send(&fast, &ask()).await.2);
        let (_, sb) = masked(&send(&slow, &ask()).await.2);
        let mut bare_a = answered(sa.as_deref().unwrap(), action.clone());
        bare_a.body["params"]
            .as_object_mut()
            .unwrap()
            .remove("inputResponses");
        let mut bare_b = answered(sb.as_deref().unwrap(), action.clone());
        bare_b.body["params"]
            .as_object_mut()
            .unwrap()
            .remove("inputResponses");
        let (ra, rb) = (send(&fast, &bare_a).await, send(&slow, &bare_b).await);
        assert_eq!(masked(&ra.2).0, masked(&rb.2).0);
        let ra = send(&fast, &answered(sa.as_deref().unwrap(), action.clone())).await;
        let rb = send(&slow, &answered(sb.as_deref().unwrap(), action.clone())).await;
        assert_eq!(ra, rb);
        if action == ElicitationAction::Decline {
            assert!(ra.2.contains("rejected"), "{}", ra.2);
        }
    }
    // A tampered handle and other arguments: the same refusal.
    let (_, s) = masked(&send(&fast, &ask()).await.2);
    let s = s.unwrap();
    let mut tampered = s.clone().into_bytes();
    tampered[3] = if tampered[3] == b'a' { b'b' } else { b'a' };
    let tampered = String::from_utf8(tampered).unwrap();
    let mut other = answered(&s, ElicitationAction::Accept);
    other.body["params"]["arguments"]["to"] = json!("mallory");
    other = other.header("mcp-name", Some("pay.send"));
    for req in [answered(&tampered, ElicitationAction::Accept), other] {
        let a = send(&fast, &req).await;
        let b = send(&fast, &req.via_rmcp()).await;
        assert_eq!(a, b);
        assert!(a.2.contains("invalid"), "{}", a.2);
    }
    // Asked on one path, answered on the other: one run each.
    let (_, s1) = masked(&send(&fast, &ask()).await.2);
    let r1 = send(
        &fast,
        &answered(&s1.unwrap(), ElicitationAction::Accept).via_rmcp(),
    )
    .await;
    let (_, s2) = masked(&send(&fast, &ask().via_rmcp()).await.2);
    let r2 = send(&fast, &answered(&s2.unwrap(), ElicitationAction::Accept)).await;
    assert_eq!(r1, r2);
    assert!(r1.2.contains(r#""paid":5"#), "{}", r1.2);
    let paid = log.get().iter().filter(|l| l.starts_with("paid")).count();
    assert_eq!(paid, 4, "{:?}", log.get());
}

#[tokio::test(flavor = "current_thread")]
async fn a_task_is_left_to_rmcp() {
    let (logs, _guard) = capture();
    let tm = approving_app(&Log::default());
    let server = McpServer::new(tm).tasks(TaskOptions::new());
    let router = server.router();
    let req = Req::call_with(
        "notes.count",
        json!({}),
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    );
    let a = send(&router, &req).await;
    assert_eq!(rmcp_requests(&logs), 1, "{}", a.2);
    // Without the tasks capability the same server's call is fast.
    let b = send(&router, &Req::call("notes.count", json!({}))).await;
    assert_eq!(rmcp_requests(&logs), 0, "{}", b.2);
    assert!(b.2.contains(r#""result":3"#), "{}", b.2);
}
