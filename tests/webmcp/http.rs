//! The endpoints as an attacker (or a careless client) reaches them, in
//! process: origins, tokens, another page's answers, bounds, the stream, and
//! what a page without `onConfirm` gets.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use toolmark::event::Event;
use toolmark::{Caller, Decision};
use tower::ServiceExt;

use crate::app::{long_name, test_app, TestApp, CANARY_CVC, CANARY_NUMBER};

const HOST: &str = "127.0.0.1:4000";
const ORIGIN: &str = "http://127.0.0.1:4000";

fn request(path: &str, token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post(format!("/toolmark{path}"))
        .header("host", HOST)
        .header("origin", ORIGIN)
        .header("x-toolmark-webmcp", "1")
        .header("content-type", "application/json");
    if let Some(t) = token {
        b = b.header("x-toolmark-page", t);
    }
    b.body(body.into()).unwrap()
}

async fn send(router: &Router, req: Request<Body>) -> Response {
    router.clone().oneshot(req).await.unwrap()
}

async fn text(res: Response) -> String {
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

async fn new_page(router: &Router) -> String {
    let res = send(router, request("/page", None, "{}")).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = serde_json::from_str(&text(res).await).unwrap();
    v["token"].as_str().unwrap().to_owned()
}

/// A streaming body read line by line.
struct Lines {
    body: Body,
    buf: String,
}

impl Lines {
    fn new(res: Response) -> Self {
        Lines {
            body: res.into_body(),
            buf: String::new(),
        }
    }

    /// The next line; `None` when the body ended.
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.find('\n') {
                let line = self.buf[..i].to_owned();
                self.buf.drain(..=i);
                return Some(line);
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.push_str(std::str::from_utf8(&data).unwrap());
                    }
                }
                _ => return None,
            }
        }
    }

    /// The next server-sent `tools` message.
    async fn tools(&mut self) -> Value {
        loop {
            let line = self.next().await.expect("the stream is open");
            if let Some(data) = line.strip_prefix("data: ") {
                return serde_json::from_str(data).unwrap();
            }
        }
    }
}

async fn open_stream(router: &Router, token: &str, confirm: bool) -> Lines {
    let res = send(
        router,
        request(
            "/stream",
            Some(token),
            json!({"confirm": confirm}).to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    Lines::new(res)
}

fn names(tools: &Value) -> Vec<String> {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn pay_input() -> Value {
    json!({"title": "rent", "card": {"number": CANARY_NUMBER, "cvc": CANARY_CVC}})
}

async fn call(router: &Router, token: &str, tool: &str, input: Value) -> Lines {
    let res = send(
        router,
        request(
            "/call",
            Some(token),
            json!({"tool": tool, "input": input}).to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    Lines::new(res)
}

async fn next_json(lines: &mut Lines) -> Value {
    serde_json::from_str(&lines.next().await.expect("a line")).unwrap()
}

fn app() -> (TestApp, Router) {
    let app = test_app(|b| b, |w| w);
    let router = app.router();
    (app, router)
}

#[tokio::test]
async fn the_script_is_served_as_javascript_from_the_crate() {
    let (_app, router) = app();
    let res = send(
        &router,
        Request::get("/toolmark/webmcp.js")
            .header("host", HOST)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(text(res).await, toolmark::webmcp::WebMcp::script());
}

#[tokio::test]
async fn another_origin_is_refused_and_runs_nothing() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let body = || json!({"tool": "pay.send", "input": pay_input()}).to_string();
    for (origin, site) in [
        (Some("http://evil.example"), None),
        (Some("http://localhost:4000"), None), // another origin on the same machine
        (Some("http://127.0.0.1:4001"), None),
        (Some("null"), None),
        (None, None),
        (Some(ORIGIN), Some("cross-site")),
        (Some(ORIGIN), Some("same-site")),
    ] {
        for path in ["/page", "/stream", "/call", "/answer", "/report"] {
            let mut b = Request::post(format!("/toolmark{path}"))
                .header("host", HOST)
                .header("x-toolmark-webmcp", "1")
                .header("x-toolmark-page", &token);
            if let Some(o) = origin {
                b = b.header("origin", o);
            }
            if let Some(s) = site {
                b = b.header("sec-fetch-site", s);
            }
            let res = send(&router, b.body(Body::from(body())).unwrap()).await;
            assert_eq!(
                res.status(),
                StatusCode::FORBIDDEN,
                "{path} from {origin:?} ({site:?})"
            );
            assert!(text(res).await.contains("origin_not_allowed"));
        }
    }
    // Without the shim's header (a form post, a simple fetch): refused too.
    let res = send(
        &router,
        Request::post("/toolmark/page")
            .header("host", HOST)
            .header("origin", ORIGIN)
            .body(Body::from("{}"))
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // A Host other than loopback (DNS rebinding), or a malformed one that starts
    // like loopback: refused, the script too.
    for host in ["evil.example", "[::1]evil", "localhost:80@evil.example"] {
        for path in ["/toolmark/page", "/toolmark/webmcp.js"] {
            let res = send(
                &router,
                Request::post(path)
                    .header("host", host)
                    .header("origin", format!("http://{host}"))
                    .header("x-toolmark-webmcp", "1")
                    .body(Body::from("{}"))
                    .unwrap(),
            )
            .await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{host} {path}");
        }
    }
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_request_without_the_pages_token_is_refused_and_runs_nothing() {
    let (app, router) = app();
    let _real = new_page(&router).await;
    let guess = "0".repeat(32);
    for token in [None, Some(guess.as_str()), Some("")] {
        for path in ["/stream", "/call", "/answer", "/report"] {
            let res = send(
                &router,
                request(
                    path,
                    token,
                    json!({"tool": "notes.read", "input": {}, "confirmId": "x", "approved": true,
                           "refused": []})
                    .to_string(),
                ),
            )
            .await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path} {token:?}");
        }
    }
    // The token is a header, never a URL parameter.
    let res = send(
        &router,
        request(
            &format!("/call?token={_real}"),
            None,
            json!({"tool": "notes.read"}).to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn another_pages_token_cannot_answer_this_pages_confirmation() {
    let (app, router) = app();
    let (a, b) = (new_page(&router).await, new_page(&router).await);
    let _stream_a = open_stream(&router, &a, true).await;
    let mut lines = call(&router, &a, "pay.send", pay_input()).await;
    let asked = next_json(&mut lines).await;
    assert_eq!(asked["type"], "confirm");
    let request = &asked["request"];
    let id = request["confirmId"].as_str().unwrap().to_owned();
    // The page is shown the redacted request.
    assert_eq!(request["input"]["card"]["cvc"], "[redacted]");
    assert_eq!(request["input"]["card"]["number"], "[redacted]");
    assert_eq!(request["caller"], "webmcp");
    // Page B answers A's confirmation: refused, nothing runs.
    let res = send(&router, request_answer(&b, &id, json!({"approved": true}))).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
    // A answers: rejected with its reason, still nothing ran.
    let res = send(
        &router,
        request_answer(&a, &id, json!({"approved": false, "reason": "not now"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let result = next_json(&mut lines).await;
    assert_eq!(result["type"], "result");
    assert_eq!(result["result"]["isError"], true);
    assert_eq!(result["result"]["structuredContent"]["code"], "rejected");
    assert!(result["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("not now"));
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
    // A second answer to the same id: there is none open.
    let res = send(&router, request_answer(&a, &id, json!({"approved": true}))).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
}

fn request_answer(token: &str, id: &str, decision: Value) -> Request<Body> {
    let mut body = decision;
    body["confirmId"] = json!(id);
    request("/answer", Some(token), body.to_string())
}

#[tokio::test]
async fn an_approval_runs_once_with_the_real_values_and_no_secret_leaves() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let _stream = open_stream(&router, &token, true).await;
    let mut lines = call(&router, &token, "pay.send", pay_input()).await;
    let asked = next_json(&mut lines).await;
    let id = asked["request"]["confirmId"].as_str().unwrap().to_owned();
    // The approver sends the public input back, placeholders and all, with an
    // edit: the secrets are restored, the edit is re-validated and kept.
    let mut edited = asked["request"]["input"].clone();
    edited["title"] = json!("rent, edited");
    let res = send(
        &router,
        request_answer(&token, &id, json!({"approved": true, "input": edited})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let result = next_json(&mut lines).await;
    let all = format!("{asked}{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["structuredContent"]["last4"], "3187");
    assert_eq!(
        result["result"]["structuredContent"]["paid"],
        "rent, edited"
    );
    // The tool's echo of the number is scrubbed by Toolmark.
    assert_eq!(result["result"]["structuredContent"]["echo"], "[redacted]");
    assert!(
        !all.contains(CANARY_NUMBER) && !all.contains(CANARY_CVC),
        "{all}"
    );
    assert_eq!(app.runs.load(Ordering::SeqCst), 1);
    let seen = app.seen.lock().unwrap()[0].clone();
    assert_eq!(seen["card"]["number"], CANARY_NUMBER);
    assert_eq!(seen["card"]["cvc"], CANARY_CVC);
    assert!(lines.next().await.is_none(), "one result, then the end");
}

#[tokio::test]
async fn an_invalid_edit_is_asked_again_with_its_issues() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let _stream = open_stream(&router, &token, true).await;
    let mut lines = call(&router, &token, "pay.send", pay_input()).await;
    let first = next_json(&mut lines).await;
    let id = first["request"]["confirmId"].as_str().unwrap().to_owned();
    let mut edited = first["request"]["input"].clone();
    edited["title"] = json!(42);
    send(
        &router,
        request_answer(&token, &id, json!({"approved": true, "input": edited})),
    )
    .await;
    let again = next_json(&mut lines).await;
    assert_eq!(again["type"], "confirm");
    assert_eq!(again["request"]["confirmId"], id.as_str());
    assert_eq!(again["request"]["issues"][0]["path"], "title");
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
    send(
        &router,
        request_answer(&token, &id, json!({"approved": true})),
    )
    .await;
    let result = next_json(&mut lines).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(app.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn oversized_bodies_are_refused_before_parsing() {
    let (app, router) = {
        let app = test_app(|b| b, |w| w.max_body_bytes(1024));
        let r = app.router();
        (app, r)
    };
    let token = new_page(&router).await;
    let big = json!({"tool": "pay.send", "input": {"title": "x".repeat(4096)}}).to_string();
    // Declared too large.
    let res = send(&router, request("/call", Some(&token), big.clone())).await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Streamed without a length.
    let chunks: Vec<Result<String, std::io::Error>> = vec![Ok(big.clone())];
    let streamed = Body::from_stream(futures_util::stream::iter(chunks));
    let mut req = request("/call", Some(&token), streamed);
    req.headers_mut().remove("content-length");
    let res = send(&router, req).await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
    // The default bound is the toolmark's input limit plus 16 KiB.
    let (_app, router) = app_default();
    let token = new_page(&router).await;
    let huge = "x".repeat((1 << 20) + 17 * 1024);
    let res = send(
        &router,
        request(
            "/call",
            Some(&token),
            json!({"tool": "notes.read", "input": {"t": huge}}).to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

fn app_default() -> (TestApp, Router) {
    app()
}

#[tokio::test]
async fn too_many_open_calls_from_one_page_are_refused() {
    let app = test_app(|b| b, |w| w.max_open_calls(2));
    let router = app.router();
    let token = new_page(&router).await;
    let other = new_page(&router).await;
    let one = call(&router, &token, "slow.wait", json!({})).await;
    let two = call(&router, &token, "slow.wait", json!({})).await;
    let res = send(
        &router,
        request(
            "/call",
            Some(&token),
            json!({"tool": "notes.read"}).to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another page is not affected.
    let mut three = call(&router, &other, "notes.read", json!({})).await;
    assert_eq!(next_json(&mut three).await["result"]["isError"], false);
    // Calls that end free their slot.
    app.release.add_permits(2);
    for mut lines in [one, two] {
        assert_eq!(
            next_json(&mut lines).await["result"]["structuredContent"]["result"],
            "released"
        );
    }
    let mut four = call(&router, &token, "notes.read", json!({})).await;
    assert_eq!(next_json(&mut four).await["result"]["isError"], false);
}

#[tokio::test]
async fn closing_the_call_cancels_it() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let mut events = app.tm.events();
    let lines = call(&router, &token, "slow.wait", json!({})).await;
    // The call runs, then the page goes away (the browser's abort signal).
    while app.slow_started.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    drop(lines);
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Ok(Event::CallFinished { tool, code, .. })) if tool == "slow.wait" => {
                assert_eq!(code, Some(toolmark::RefusalCode::Cancelled));
                break;
            }
            Ok(Ok(_)) => {}
            other => panic!("no call_finished: {other:?}"),
        }
    }
    assert!(
        app.cancelled.load(Ordering::SeqCst),
        "the tool saw its signal"
    );
}

#[tokio::test]
async fn the_stream_follows_scopes_and_a_new_stream_replaces_the_old() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let mut first = open_stream(&router, &token, true).await;
    let tools = first.tools().await;
    let listed = names(&tools);
    assert!(listed.contains(&"extra.hello".to_owned()), "{listed:?}");
    assert!(listed.contains(&"pay.send".to_owned()));
    // Annotations as Chromium reads them, and the input schema.
    let pay = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "pay.send")
        .unwrap();
    assert_eq!(pay["annotations"]["consequentialHint"], true);
    assert_eq!(pay["annotations"]["readOnlyHint"], false);
    assert_eq!(
        pay["inputSchema"]["properties"]["card"]["properties"]["cvc"]["writeOnly"],
        true
    );
    app.extra.set_when(false);
    let tools = first.tools().await;
    assert!(!names(&tools).contains(&"extra.hello".to_owned()));
    app.extra.set_when(true);
    assert!(names(&first.tools().await).contains(&"extra.hello".to_owned()));
    // A second stream for the page: it gets the whole list; the first ends.
    let mut second = open_stream(&router, &token, true).await;
    assert_eq!(names(&second.tools().await), listed);
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut rest = Vec::new();
        while let Some(line) = first.next().await {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("the superseded stream ended");
    assert!(rest.iter().all(|l| l.is_empty()), "{rest:?}");
    // A disposed scope's tools go too.
    app.extra.dispose();
    assert!(!names(&second.tools().await).contains(&"extra.hello".to_owned()));
}

#[tokio::test]
async fn names_the_browser_refuses_are_mapped_and_called_back() {
    let (_app, router) = app();
    let token = new_page(&router).await;
    let tools = open_stream(&router, &token, true).await.tools().await;
    let long = names(&tools)
        .into_iter()
        .find(|n| n.starts_with("loooo"))
        .unwrap();
    assert_eq!(long.len(), 128);
    assert!(long
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)));
    let entry = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == long.as_str())
        .unwrap();
    assert_eq!(entry["toolmarkName"], long_name());
    let mut lines = call(&router, &token, &long, json!({})).await;
    assert_eq!(
        next_json(&mut lines).await["result"]["structuredContent"]["result"],
        "long"
    );
    // The Toolmark name itself is not a browser name: unknown.
    let mut lines = call(&router, &token, &long_name(), json!({})).await;
    let r = next_json(&mut lines).await;
    assert_eq!(r["result"]["structuredContent"]["code"], "unknown_tool");
}

#[tokio::test]
async fn a_page_without_on_confirm_does_not_get_guarded_tools_and_a_dev_event_says_so() {
    let app = test_app(|b| b.dev_events(true), |w| w);
    let router = app.router();
    let token = new_page(&router).await;
    let mut events = app.tm.events();
    let tools = open_stream(&router, &token, false).await.tools().await;
    assert!(!names(&tools).contains(&"pay.send".to_owned()));
    assert!(names(&tools).contains(&"notes.read".to_owned()));
    assert_eq!(tools["hidden"], json!(["pay.send"]));
    let mut said = false;
    while let Ok(e) = events.try_recv() {
        if let Event::MissingConfirmHandler { tool, callers } = e {
            assert_eq!((tool.as_str(), callers), ("pay.send", vec![Caller::WebMcp]));
            said = true;
        }
    }
    assert!(said, "a missing_confirm_handler event for pay.send");
    // Calling it anyway (an agent that remembers the name): not allowed, not run.
    let mut lines = call(&router, &token, "pay.send", pay_input()).await;
    let r = next_json(&mut lines).await;
    assert_eq!(r["result"]["structuredContent"]["code"], "not_allowed");
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_apps_own_handler_is_a_path_for_a_page_without_on_confirm() {
    let app = test_app(
        |b| b.confirm_handler(|_req| async { Decision::reject_with("asked the app") }),
        |w| w,
    );
    let router = app.router();
    let token = new_page(&router).await;
    let tools = open_stream(&router, &token, false).await.tools().await;
    assert!(names(&tools).contains(&"pay.send".to_owned()));
    assert_eq!(tools["hidden"], json!([]));
    let mut lines = call(&router, &token, "pay.send", pay_input()).await;
    let r = next_json(&mut lines).await;
    assert_eq!(r["type"], "result", "the page is not asked");
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("asked the app"));
}

#[tokio::test]
async fn bad_request_bodies_are_refused_without_echoing_them() {
    let (app, router) = app();
    let token = new_page(&router).await;
    let res = send(
        &router,
        request(
            "/call",
            Some(&token),
            format!("{{\"tool\": \"pay.send\", \"input\": {{\"card\": \"{CANARY_NUMBER}\""),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(!text(res).await.contains(CANARY_NUMBER));
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn refused_registrations_reach_the_apps_log_and_nothing_else_does() {
    // The app's log: what a default `tracing_subscriber::fmt()` shows (INFO).
    let (log, _guard) = crate::logs::capture_at(tracing::Level::INFO);
    let (_app, router) = app();
    let token = new_page(&router).await;
    let res = send(
        &router,
        request(
            "/report",
            Some(&token),
            json!({"refused": [
                {"name": "notes.read", "reason": "Duplicate tool name\nforged line"},
                {"name": "not.ours", "reason": "anything"}
            ]})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let text = log.text();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("did not register"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("notes.read") && lines[0].contains("Duplicate tool name"));
    // A page cannot write lines of its own into the app's log.
    assert!(
        !text.contains("\nforged line") && !text.contains("not.ours"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_stream_gets_a_keep_alive_every_15_seconds_even_while_calls_go_on() {
    let (_app, router) = app();
    let token = new_page(&router).await;
    let mut stream = open_stream(&router, &token, true).await;
    stream.tools().await;
    let start = tokio::time::Instant::now();
    // Calls at 5 s and 10 s: events the stream wakes for, but sends nothing.
    for _ in 0..2 {
        tokio::time::advance(Duration::from_secs(5)).await;
        let mut lines = call(&router, &token, "notes.read", json!({})).await;
        assert_eq!(next_json(&mut lines).await["result"]["isError"], false);
    }
    let line = loop {
        let line = stream.next().await.unwrap();
        if !line.is_empty() {
            break line;
        }
    };
    assert_eq!(line, ": keep-alive");
    assert_eq!(start.elapsed(), Duration::from_secs(15));
}
