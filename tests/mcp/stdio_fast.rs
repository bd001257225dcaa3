//! `McpServer::serve_io` (what `serve_stdio` runs) answers a self-contained
//! 2026-07-28 `tools/call` itself, and exactly as rmcp's own service does: the
//! same lines, byte for byte, as `serve_transport` (rmcp's serve loop for
//! every message) gives for the same requests, for results, refusals, tool
//! errors, a secret in the input, confirmations by multi round-trip request,
//! progress, a cancelled call, rmcp's own messages between fast answers, and
//! the end of input while a call runs. rmcp's DEBUG line "received request"
//! shows which path answered; the arguments never reach rmcp's logs.

use std::time::Duration;

use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use toolmark::mcp::{Elicitation, McpServer};

use crate::*;

/// A TRACE capture for this thread (the tests run on a current-thread
/// runtime, so every task the server spawns is on it).
pub(crate) fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    crate::logs::capture_at(tracing::Level::TRACE)
}

pub(crate) fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

pub(crate) fn call(id: u64, name: &str, args: Value) -> Value {
    call_with(id, name, args, json!({}))
}

fn call_with(id: u64, name: &str, args: Value, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": args, "_meta": meta(capabilities)}})
}

/// A raw line client of one served session.
pub(crate) struct Wire {
    pub(crate) w: Option<WriteHalf<DuplexStream>>,
    pub(crate) r: BufReader<ReadHalf<DuplexStream>>,
    pub(crate) served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Wire {
    /// A raw line client of `server`, nothing sent yet. `fast`: `serve_io`; else
    /// `serve_transport` (rmcp's loop for everything).
    pub(crate) fn connect(server: McpServer, fast: bool) -> Wire {
        let (a, b) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(async move {
            if fast {
                let (read, write) = tokio::io::split(a);
                server.serve_io(read, write).await
            } else {
                server.serve_transport(a).await
            }
        });
        let (r, w) = tokio::io::split(b);
        Wire {
            w: Some(w),
            r: BufReader::new(r),
            served,
        }
    }

    /// A 2026-07-28 session on `serve_io` (`fast`) or `serve_transport`.
    pub(crate) async fn open(server: McpServer, fast: bool) -> Wire {
        let mut wire = Wire::connect(server, fast);
        // A 2026-07-28 session: discover, then a first request opens it.
        wire.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                          "params": {"_meta": meta(json!({}))}}),
        )
        .await;
        let discovered = wire.recv().await;
        assert!(discovered.contains("2026-07-28"), "{discovered}");
        wire.send(&call(1, "extra.ping", json!({}))).await;
        let first = wire.recv().await;
        assert!(first.contains("pong"), "{first}");
        wire
    }

    pub(crate) async fn send(&mut self, v: &Value) {
        self.send_raw(&v.to_string()).await;
    }

    pub(crate) async fn send_raw(&mut self, line: &str) {
        let w = self.w.as_mut().unwrap();
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    /// The next line the server writes (without its newline); "" at the end.
    pub(crate) async fn recv(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(30), self.r.read_line(&mut line))
            .await
            .expect("an answer")
            .unwrap();
        line.trim_end_matches('\n').to_owned()
    }

    /// The end of input.
    pub(crate) async fn end(&mut self) {
        self.w.take().unwrap().shutdown().await.unwrap();
    }

    /// Send `v` and read one line.
    pub(crate) async fn ask(&mut self, v: &Value) -> String {
        self.send(v).await;
        self.recv().await
    }
}

/// Both servers on one Toolmark: (fast, rmcp's path).
async fn wires(tm: &Toolmark, with: impl Fn(McpServer) -> McpServer) -> (Wire, Wire) {
    (
        Wire::open(with(McpServer::new(tm.clone())), true).await,
        Wire::open(with(McpServer::new(tm.clone())), false).await,
    )
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn results_refusals_and_errors_are_the_same_bytes_as_rmcps() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = approving_app(&log);
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    rmcp_requests(&logs);
    let cases = [
        call(7, "notes.add", json!({"text": "hi"})),
        call(8, "notes.count", json!({})),
        call(9, "extra.ping", json!({})),
        // refused: invalid input with the secret in it, and a wrong type.
        call(
            10,
            "pay.send",
            json!({"to": "ada", "amount": "five", "card": SECRET}),
        ),
        call(11, "notes.add", json!({"text": 5})),
        // a tool's own error, and one echoing the secret.
        call(12, "notes.add", json!({"text": ""})),
        call(
            13,
            "pay.send",
            json!({"to": "echo", "amount": 5, "card": SECRET}),
        ),
        // confirmed by the app's handler: approved, and rejected.
        call(
            14,
            "pay.send",
            json!({"to": "ada", "amount": 5, "card": SECRET}),
        ),
        call(
            15,
            "pay.send",
            json!({"to": "nobody", "amount": 5, "card": SECRET}),
        ),
        call(16, "notes.purge", json!({})),
        // an unknown tool, a string id, no arguments.
        call(17, "no.such_tool", json!({})),
        json!({"jsonrpc": "2.0", "id": "s-1", "method": "tools/call",
               "params": {"name": "notes.count", "_meta": meta(json!({}))}}),
    ];
    for req in &cases {
        let a = fast.ask(req).await;
        assert_eq!(rmcp_requests(&logs), 0, "the fast path answered {req}");
        let b = slow.ask(req).await;
        assert_eq!(rmcp_requests(&logs), 1, "rmcp answered {req}");
        assert_eq!(a, b, "{req}");
        assert!(!a.contains(SECRET), "{a}");
    }
    let paid = log.get().iter().filter(|l| l.starts_with("paid")).count();
    assert_eq!(paid, 4, "{:?}", log.get());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn what_the_fast_path_leaves_to_rmcp_is_answered_as_before() {
    let (logs, _guard) = capture();
    let tm = approving_app(&Log::default());
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    let ok = || call(20, "notes.count", json!({}));
    let mut no_meta = ok();
    no_meta["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let mut old_meta = ok();
    old_meta["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let mut extra_key = ok();
    extra_key["extra"] = json!(1);
    let mut listed = ok();
    listed["method"] = json!("tools/list");
    listed["params"] = json!({"_meta": meta(json!({}))});
    let bom = format!("\u{feff}{}", ok());
    // Without client info: rmcp's dispatch answers it on either path.
    let a = fast.ask(&no_meta).await;
    assert_eq!(a, slow.ask(&no_meta).await);
    for raw in [
        old_meta.to_string(),
        extra_key.to_string(),
        listed.to_string(),
        bom,
    ] {
        rmcp_requests(&logs);
        fast.send_raw(&raw).await;
        let a = fast.recv().await;
        assert_eq!(rmcp_requests(&logs), 1, "left to rmcp: {raw}");
        slow.send_raw(&raw).await;
        assert_eq!(a, slow.recv().await, "{raw}");
    }
    // Lines rmcp's parser refuses are refused alike: `_meta` not an object,
    // a key twice in `params`.
    let mut bad_meta = ok();
    bad_meta["params"]["_meta"] = json!(3);
    let repeated = r#"{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"notes.count","name":"extra.ping","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    for raw in [bad_meta.to_string(), repeated.to_owned()] {
        fast.send_raw(&raw).await;
        let a = fast.recv().await;
        slow.send_raw(&raw).await;
        assert_eq!(a, slow.recv().await, "{raw}");
    }
    // A task (the server keeps tasks; the request declares them): rmcp's.
    let tasked = call_with(
        21,
        "notes.count",
        json!({}),
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    );
    rmcp_requests(&logs);
    let a = fast.ask(&tasked).await;
    assert_eq!(rmcp_requests(&logs), 1, "left to rmcp: {a}");
    assert_eq!(a, slow.ask(&tasked).await);
    // A long line (within rmcp's 16 MiB) is read whole and taken alike.
    let long = call(23, "notes.add", json!({"text": "x".repeat(2 << 20)}));
    rmcp_requests(&logs);
    let a = fast.ask(&long).await;
    assert_eq!(rmcp_requests(&logs), 0);
    assert_eq!(a, slow.ask(&long).await);
}

/// `requestState` is a fresh sealed handle per round: the rest is compared.
fn masked(line: &str) -> (Value, Option<String>) {
    let mut v: Value = serde_json::from_str(line).unwrap();
    let state = v["result"]
        .as_object_mut()
        .and_then(|r| r.remove("requestState"))
        .and_then(|s| s.as_str().map(str::to_owned));
    (v, state)
}

fn answered(id: u64, state: &str, action: ElicitationAction) -> Value {
    let mut req = call_with(
        id,
        "pay.send",
        json!({"to": "ada", "amount": 5, "card": SECRET}),
        json!({"elicitation": {"form": {}}}),
    );
    req["params"]["requestState"] = json!(state);
    req["params"]["inputResponses"] =
        json!({"confirm": serde_json::to_value(ElicitResult::new(action)).unwrap()});
    req
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_confirmation_by_multi_round_trip_request_is_the_same_on_both_paths() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = app(client_confirms(Toolmark::builder()), &log);
    let (mut fast, mut slow) = wires(&tm, |s| {
        s.confirm_by_elicitation(Elicitation::consequential())
    })
    .await;
    rmcp_requests(&logs);
    let ask = |id| {
        call_with(
            id,
            "pay.send",
            json!({"to": "ada", "amount": 5, "card": SECRET}),
            json!({"elicitation": {"form": {}}}),
        )
    };
    // Asked: input_required with a handle, no secret, nothing run.
    let a = fast.ask(&ask(30)).await;
    assert_eq!(rmcp_requests(&logs), 0);
    let b = slow.ask(&ask(30)).await;
    assert_eq!(rmcp_requests(&logs), 1);
    let ((va, sa), (vb, sb)) = (masked(&a), masked(&b));
    assert_eq!(va, vb);
    assert_eq!(va["result"]["resultType"], "input_required", "{a}");
    assert!(!a.contains(SECRET), "{a}");
    let (sa, sb) = (sa.unwrap(), sb.unwrap());
    // Approved: the tool runs once, the same answer.
    let done_a = fast
        .ask(&answered(31, &sa, ElicitationAction::Accept))
        .await;
    assert_eq!(rmcp_requests(&logs), 0);
    let done_b = slow
        .ask(&answered(31, &sb, ElicitationAction::Accept))
        .await;
    assert_eq!(done_a, done_b);
    assert!(done_a.contains(r#""paid":5"#), "{done_a}");
    // Replayed: the same refusal.
    let again_a = fast
        .ask(&answered(32, &sa, ElicitationAction::Accept))
        .await;
    let again_b = slow
        .ask(&answered(32, &sb, ElicitationAction::Accept))
        .await;
    assert_eq!(again_a, again_b);
    assert!(again_a.contains("confirmation_expired"), "{again_a}");
    // Tampered: the same -32602.
    let (_, s) = masked(&fast.ask(&ask(33)).await);
    let mut tampered = s.unwrap().into_bytes();
    tampered[3] = if tampered[3] == b'a' { b'b' } else { b'a' };
    let tampered = String::from_utf8(tampered).unwrap();
    let ta = fast
        .ask(&answered(34, &tampered, ElicitationAction::Accept))
        .await;
    let tb = slow
        .ask(&answered(34, &tampered, ElicitationAction::Accept))
        .await;
    assert_eq!(ta, tb);
    assert!(ta.contains("-32602") && ta.contains("invalid"), "{ta}");
    // Asked on rmcp's path, answered on the fast one (one Toolmark).
    rmcp_requests(&logs);
    let (_, s) = masked(&slow.ask(&ask(35)).await);
    assert_eq!(rmcp_requests(&logs), 1);
    let crossed = fast
        .ask(&answered(36, &s.unwrap(), ElicitationAction::Accept))
        .await;
    assert_eq!(rmcp_requests(&logs), 0);
    assert!(crossed.contains(r#""paid":5"#), "{crossed}");
    let paid = log.get().iter().filter(|l| l.starts_with("paid")).count();
    assert_eq!(paid, 3, "{:?}", log.get());
}

/// Read lines until the answer to `id`: (the lines before it, the answer).
async fn until_answer(wire: &mut Wire, id: u64) -> (Vec<String>, String) {
    let mut before = Vec::new();
    loop {
        let line = wire.recv().await;
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("a whole line: {line}"));
        if v["id"] == json!(id) && v.get("method").is_none() {
            return (before, line);
        }
        before.push(line);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn progress_goes_out_through_rmcp_before_the_fast_answer() {
    let (logs, _guard) = capture();
    let tm = approving_app(&Log::default());
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    rmcp_requests(&logs);
    let mut req = call(40, "slow.wait", json!({"steps": 3}));
    req["params"]["_meta"]["progressToken"] = json!("p1");
    fast.send(&req).await;
    let (notes_a, a) = until_answer(&mut fast, 40).await;
    assert_eq!(rmcp_requests(&logs), 0, "the fast path took the call");
    slow.send(&req).await;
    let (notes_b, b) = until_answer(&mut slow, 40).await;
    assert_eq!((notes_a.clone(), a), (notes_b, b));
    assert_eq!(notes_a.len(), 3, "{notes_a:?}");
    assert!(notes_a.iter().all(|n| n.contains("notifications/progress")));
    // Several calls at once, fast answers between rmcp's notifications and
    // rmcp's own answers: every line whole, each call's progress before its
    // answer.
    for id in 41..46 {
        let mut r = call(id, "slow.wait", json!({"steps": 2}));
        r["params"]["_meta"]["progressToken"] = json!(format!("p{id}"));
        fast.send(&r).await;
        fast.send(
            &json!({"jsonrpc": "2.0", "id": id + 100, "method": "tools/list",
                          "params": {"_meta": meta(json!({}))}}),
        )
        .await;
    }
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|l: &&Value| l.get("result").is_some())
        .count()
        < 10
    {
        let line = fast.recv().await;
        seen.push(serde_json::from_str::<Value>(&line).unwrap_or_else(|_| panic!("whole: {line}")));
    }
    for id in 41..46 {
        let answer = seen.iter().position(|v| v["id"] == json!(id)).unwrap();
        let progress: Vec<usize> = seen
            .iter()
            .enumerate()
            .filter(|(_, v)| v["params"]["progressToken"] == json!(format!("p{id}")))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(progress.len(), 2, "{seen:?}");
        assert!(progress.iter().all(|&i| i < answer), "{seen:?}");
        assert!(seen[answer].to_string().contains(r#""waited":2"#));
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_cancelled_fast_call_is_cancelled_and_not_answered() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = approving_app(&log);
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    rmcp_requests(&logs);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 50, "reason": "enough"}});
    for wire in [&mut fast, &mut slow] {
        wire.send(&call(50, "slow.wait", json!({"steps": 1000})))
            .await;
        tokio::time::sleep(Duration::from_millis(25)).await;
        wire.send(&cancel).await;
        // The next call is answered, and nothing for the cancelled one.
        let next = wire.ask(&call(51, "extra.ping", json!({}))).await;
        assert!(
            next.contains(r#""id":51"#) && next.contains("pong"),
            "{next}"
        );
    }
    let cancelled = log.get().iter().filter(|l| *l == "wait cancelled").count();
    assert_eq!(cancelled, 2, "{:?}", log.get());
    // No secret, nothing else in rmcp's logs to check here.
    rmcp_requests(&logs);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_end_of_input_while_a_call_runs_still_answers_it() {
    let tm = approving_app(&Log::default());
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    let mut answers = Vec::new();
    for wire in [&mut fast, &mut slow] {
        wire.send(&call(60, "slow.wait", json!({"steps": 3}))).await;
        wire.end().await;
        let answer = wire.recv().await;
        assert_eq!(wire.recv().await, "", "the output ends after the answer");
        answers.push(answer);
    }
    assert_eq!(answers[0], answers[1]);
    assert!(answers[0].contains(r#""waited":3"#), "{}", answers[0]);
    fast.served.await.unwrap().unwrap();
    slow.served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_call_still_running_past_the_drain_is_cancelled_at_the_end_of_input() {
    let log = Log::default();
    let tm = approving_app(&log);
    let mut fast = Wire::open(McpServer::new(tm), true).await;
    fast.send(&call(70, "slow.wait", json!({"steps": 100_000})))
        .await;
    tokio::time::sleep(Duration::from_millis(25)).await;
    fast.end().await;
    // rmcp's loop gives its calls 5 s after the end of input; so does the front.
    assert_eq!(
        fast.recv().await,
        "",
        "no answer: cancelled after the drain"
    );
    fast.served.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(
        log.get().iter().any(|l| l == "wait cancelled"),
        "{:?}",
        log.get()
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn no_secret_reaches_rmcps_logs_on_either_side_of_the_front() {
    let (logs, _guard) = capture();
    let log = Log::default();
    let tm = approving_app(&log);
    // A 2025-11-25 session: every message goes through rmcp's loop, behind `Quiet`.
    let (a, b) = tokio::io::duplex(1 << 16);
    let server = McpServer::new(tm.clone());
    let served = tokio::spawn(async move {
        let (read, write) = tokio::io::split(a);
        server.serve_io(read, write).await
    });
    let (r, w) = tokio::io::split(b);
    let mut old = Wire {
        w: Some(w),
        r: BufReader::new(r),
        served,
    };
    let init = old
        .ask(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .await;
    assert!(init.contains("2025-11-25"), "{init}");
    old.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let mut pay = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "pay.send", "arguments": {"to": "ada", "amount": 5, "card": SECRET}}});
    let paid = old.ask(&pay).await;
    assert!(paid.contains(r#""paid":5"#), "{paid}");
    assert!(rmcp_requests(&logs) >= 1, "rmcp's logs were captured");
    // A 2026-07-28 session: a call the front takes, and one it leaves to rmcp
    // (another version in its `_meta`).
    let mut fast = Wire::open(McpServer::new(tm), true).await;
    pay = call(
        3,
        "pay.send",
        json!({"to": "ada", "amount": 5, "card": SECRET}),
    );
    let paid = fast.ask(&pay).await;
    assert!(paid.contains(r#""paid":5"#), "{paid}");
    pay["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let left = fast.ask(&pay).await;
    assert!(
        left.contains(r#""paid":5"#),
        "rmcp's dispatch ran it: {left}"
    );
    rmcp_requests(&logs);
    assert_eq!(
        log.get().iter().filter(|l| l.starts_with("paid")).count(),
        3
    );
}

// Two worker threads: rmcp's writes and the fast answer may run at the same
// time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_message_longer_than_the_pipe_still_comes_before_the_answer() {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("big")
        .register(
            ToolSpec::typed("log", "Log a lot", |ctx, _: toolmark::NoInput| async move {
                for i in 0..3 {
                    ctx.log(
                        toolmark::LogLevel::Info,
                        format!("{i}{}", "x".repeat(300_000)),
                    );
                }
                Ok::<_, ToolError>("done")
            })
            .effect(Effect::Read),
        )
        .unwrap();
    tm.scope("extra")
        .register(
            ToolSpec::typed("ping", "Ping", |_ctx, _: toolmark::NoInput| async {
                Ok::<_, ToolError>("pong")
            })
            .effect(Effect::Read),
        )
        .unwrap();
    let (mut fast, mut slow) = wires(&tm, |s| s).await;
    let mut req = call(80, "big.log", json!({}));
    req["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    for _ in 0..20 {
        fast.send(&req).await;
        let (notes_a, a) = until_answer(&mut fast, 80).await;
        slow.send(&req).await;
        let (notes_b, b) = until_answer(&mut slow, 80).await;
        assert_eq!(notes_a.len(), 3, "every message before the answer");
        assert_eq!((notes_a, a), (notes_b, b));
    }
}
