//! WebMCP (`toolmark::webmcp`), driven in process through its axum `Router` with
//! tower's `oneshot`, as a page's shim drives it: a page session, its tool stream,
//! calls answered as NDJSON (the page's confirmations: approved with the shown
//! input sent back, edited, or rejected with a reason quoting a secret), and the
//! page's answers. Every response byte is checked, with the app's events, bridge,
//! pending list and trace.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use toolmark::webmcp::WebMcp;
use toolmark::Toolmark;
use tower::ServiceExt;

use crate::app::{app, App};
use crate::canary::{self, Canary};
use crate::core::{check, Observer};
use crate::{plants, runner, Plant};

const HOST: &str = "127.0.0.1:4000";
const ORIGIN: &str = "http://127.0.0.1:4000";

fn request(path: &str, token: Option<&str>, body: String) -> Request<Body> {
    let mut b = Request::post(format!("/toolmark{path}"))
        .header("host", HOST)
        .header("origin", ORIGIN)
        .header("x-toolmark-webmcp", "1")
        .header("content-type", "application/json");
    if let Some(t) = token {
        b = b.header("x-toolmark-page", t);
    }
    b.body(Body::from(body)).unwrap()
}

async fn send(router: &Router, req: Request<Body>) -> Response {
    router.clone().oneshot(req).await.unwrap()
}

async fn text(res: Response) -> String {
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An NDJSON body, line by line.
struct Lines {
    body: Body,
    buf: String,
}

impl Lines {
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.find('\n') {
                let line = self.buf[..i].to_owned();
                self.buf.drain(..=i);
                return Some(line);
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("the call answers within 10 s");
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.push_str(&String::from_utf8_lossy(&data));
                    }
                }
                _ => return None,
            }
        }
    }
}

/// A page: its token, and its open tool stream (kept open: the page's
/// `onConfirm` is there).
pub(crate) struct Page {
    token: String,
    _stream: Response,
}

async fn new_page(router: &Router) -> (Page, Vec<(&'static str, String)>) {
    let res = send(router, request("/page", None, "{}".to_owned())).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let body = text(res).await;
    let token = serde_json::from_str::<Value>(&body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let stream = send(
        router,
        request(
            "/stream",
            Some(&token),
            json!({"confirm": true}).to_string(),
        ),
    )
    .await;
    assert_eq!(stream.status(), StatusCode::OK);
    (
        Page {
            token,
            _stream: stream,
        },
        vec![("a page session response", body)],
    )
}

/// Call `tool` as the page, answering its confirmations as `p` says; every line
/// of the answer and every answer's response is seen.
async fn call(
    router: &Router,
    page: &Page,
    p: Plant,
    secret: &str,
    tool: &str,
    input: Value,
) -> Vec<(&'static str, String)> {
    let mut seen = Vec::new();
    let res = send(
        router,
        request(
            "/call",
            Some(&page.token),
            json!({"tool": tool, "input": input}).to_string(),
        ),
    )
    .await;
    if res.status() != StatusCode::OK {
        seen.push(("a refused WebMCP call", text(res).await));
        return seen;
    }
    let mut lines = Lines {
        body: res.into_body(),
        buf: String::new(),
    };
    // At most a few rounds: an invalid edit is asked again once.
    for round in 0..4 {
        let Some(line) = lines.next().await else {
            break;
        };
        seen.push(("a WebMCP call line", line.clone()));
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        if v["type"] != "confirm" {
            continue;
        }
        let request = &v["request"];
        let id = request["confirmId"].as_str().unwrap_or_default();
        let shown = request["input"].clone();
        let mut answer = match (p.pick.wrapping_add(round) % 4, shown) {
            (0, shown) => json!({"approved": true, "input": shown}),
            (1, mut shown) => {
                if let Some(obj) = shown.as_object_mut() {
                    obj.insert("holder".into(), json!("Grace"));
                }
                json!({"approved": true, "input": shown})
            }
            (2, _) => json!({"approved": false, "reason": format!("not with {secret}")}),
            _ => json!({"approved": true}),
        };
        answer["confirmId"] = json!(id);
        let res = send(
            router,
            request_to("/answer", &page.token, answer.to_string()),
        )
        .await;
        seen.push(("a WebMCP answer's response", text(res).await));
    }
    seen
}

fn request_to(path: &str, token: &str, body: String) -> Request<Body> {
    request(path, Some(token), body)
}

/// One case: `vault.pay` (a secret under the plant's key, rows under an alias),
/// `vault.note`, `vault.labels` (secret map keys) and a wrong-typed `vault.pay`.
async fn case(
    router: &Router,
    page: &Page,
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let number = c.variant(p.kind.wrapping_add(1));
    let mut seen = Vec::new();
    let holder = if p.pick.is_multiple_of(7) {
        "fail"
    } else {
        "Ada"
    };
    seen.extend(
        call(
            router,
            page,
            p,
            secret,
            "vault.pay",
            p.pay_input(holder, secret, &number),
        )
        .await,
    );
    seen.extend(
        call(
            router,
            page,
            p,
            secret,
            "vault.note",
            json!({"title": "t", "secret": secret}),
        )
        .await,
    );
    seen.extend(
        call(
            router,
            page,
            p,
            secret,
            "vault.labels",
            json!({"labels": {secret: number.clone(), "x": 5}}),
        )
        .await,
    );
    seen.extend(
        call(
            router,
            page,
            p,
            secret,
            "vault.pay",
            json!({"holder": 1, p.cvc_key(): secret, "cards": [{"label": 2, "number": secret}]}),
        )
        .await,
    );
    seen
}

#[test]
fn webmcp_endpoints() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let (app, router): (App, Router) = rt.block_on(async {
        let app = app(Toolmark::builder());
        let router = Router::new().nest("/toolmark", WebMcp::new(app.tm.clone()).router());
        (app, router)
    });
    let (page, first) = rt.block_on(new_page(&router));
    let observer = std::cell::RefCell::new(rt.block_on(async { Observer::new(&app.tm) }));
    let _ = trace.take();
    let mut run = runner(500);
    let result = run.run(&plants(), |p| {
        let (mut c, secret) = p.canary();
        let mut seen = first.clone();
        seen.extend(rt.block_on(case(&router, &page, p, &mut c, &secret)));
        seen.extend(app.seen.take());
        seen.extend(rt.block_on(async { observer.borrow_mut().take(&app.tm, &trace) }));
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
