//! The test app: dynamic tools that count their runs and record what they got,
//! pages for the browser tests, and a tee of every response byte for the
//! secret scan.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use toolmark::webmcp::WebMcp;
use toolmark::{Effect, Scope, ScopeOptions, ToolSpec, Toolmark, ToolmarkBuilder};

/// The card number and cvc planted as secrets: they must never leave the app.
pub const CANARY_NUMBER: &str = "4929518355723187";
pub const CANARY_CVC: &str = "918273";

/// A name longer than the 128 characters Chromium keeps.
pub fn long_name() -> String {
    format!("l{}", "o".repeat(139))
}

pub struct TestApp {
    pub tm: Toolmark,
    pub webmcp: WebMcp,
    /// Runs of `pay.send`.
    pub runs: Arc<AtomicUsize>,
    /// The inputs `pay.send` ran with (the real values).
    pub seen: Arc<Mutex<Vec<Value>>>,
    /// Set when a `slow.wait` run saw its signal cancelled.
    pub cancelled: Arc<AtomicBool>,
    /// `slow.wait` runs until it gets a permit from here (or is cancelled).
    pub release: Arc<Semaphore>,
    /// Runs of `slow.wait` started.
    pub slow_started: Arc<AtomicUsize>,
    /// The `extra` scope (shown at first).
    pub extra: Scope,
    /// Every response: (method, path, status, origin header) and its bytes.
    pub tee: Arc<Tee>,
}

#[derive(Default)]
pub struct Tee {
    pub bytes: Mutex<Vec<u8>>,
    pub requests: Mutex<Vec<Seen>>,
}

/// One request the app answered.
#[derive(Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub origin: Option<String>,
}

pub fn pay_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "card": {
                "type": "object",
                "properties": {"number": {"type": "string"}, "cvc": {"type": "string"}},
                "required": ["number", "cvc"],
                "additionalProperties": false
            }
        },
        "required": ["title", "card"],
        "additionalProperties": false
    })
}

/// The test app; `builder` adds options to the toolmark, `web` to the endpoints.
pub fn test_app(
    builder: impl FnOnce(ToolmarkBuilder) -> ToolmarkBuilder,
    web: impl FnOnce(WebMcp) -> WebMcp,
) -> TestApp {
    let tm = builder(Toolmark::builder()).build().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cancelled = Arc::new(AtomicBool::new(false));
    let release = Arc::new(Semaphore::new(0));
    let slow_started = Arc::new(AtomicUsize::new(0));

    tm.register(
        ToolSpec::new("read", "Read the notes")
            .effect(Effect::Read)
            .handler(|_ctx, _input| async { Ok(json!({"notes": ["alpha", "beta"]})) }),
        toolmark::RegisterOptions {
            scope: Some(tm.scope("notes")),
        },
    )
    .unwrap();

    let (r, s) = (runs.clone(), seen.clone());
    tm.register(
        ToolSpec::new("send", "Pay with a card")
            .input_schema(pay_schema())
            .effect(Effect::Consequential)
            .sensitive(["card.number", "card.cvc"])
            .summary("Pay \"{title}\"")
            .handler(move |_ctx, input| {
                let (r, s) = (r.clone(), s.clone());
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    let number = input["card"]["number"].as_str().unwrap_or("").to_owned();
                    s.lock().unwrap().push(input.clone());
                    if number.len() < 12 || !number.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(toolmark::ToolError::new(format!(
                            "not a card number: {number}"
                        )));
                    }
                    Ok(json!({
                        "paid": input["title"],
                        "last4": &number[number.len() - 4..],
                        // A careless tool echoing the secret: scrubbed by Toolmark.
                        "echo": number,
                    }))
                }
            }),
        toolmark::RegisterOptions {
            scope: Some(tm.scope("pay")),
        },
    )
    .unwrap();

    let (c, rel, started) = (cancelled.clone(), release.clone(), slow_started.clone());
    tm.register(
        ToolSpec::new("wait", "Wait until released").handler(move |ctx, _input| {
            let (c, rel, started) = (c.clone(), rel.clone(), started.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                let signal = ctx.signal();
                tokio::select! {
                    permit = rel.acquire() => {
                        permit.unwrap().forget();
                        Ok(json!("released"))
                    }
                    () = signal.cancelled() => {
                        c.store(true, Ordering::SeqCst);
                        Ok(json!("cancelled"))
                    }
                }
            }
        }),
        toolmark::RegisterOptions {
            scope: Some(tm.scope("slow")),
        },
    )
    .unwrap();

    let extra = tm.scope_with("extra", ScopeOptions::default());
    tm.register(
        ToolSpec::new("hello", "Say hello")
            .effect(Effect::Read)
            .handler(|_ctx, _input| async { Ok(json!("hello")) }),
        toolmark::RegisterOptions {
            scope: Some(extra.clone()),
        },
    )
    .unwrap();

    tm.register(
        ToolSpec::new(long_name(), "A tool with a long name")
            .effect(Effect::Read)
            .handler(|_ctx, _input| async { Ok(json!("long")) }),
        toolmark::RegisterOptions::default(),
    )
    .unwrap();

    let webmcp = web(WebMcp::new(tm.clone()));
    TestApp {
        tm,
        webmcp,
        runs,
        seen,
        cancelled,
        release,
        slow_started,
        extra,
        tee: Arc::new(Tee::default()),
    }
}

impl TestApp {
    /// The app's router: its pages and the endpoints at `/toolmark`, every
    /// response teed.
    pub fn router(&self) -> Router {
        let tee = Arc::clone(&self.tee);
        let polyfill = polyfill_path();
        let (show, hide) = (self.extra.clone(), self.extra.clone());
        let (started, cancelled) = (self.slow_started.clone(), self.cancelled.clone());
        let router = Router::new()
            .route(
                "/test/slow",
                get(move || {
                    let body = json!({
                        "started": started.load(Ordering::SeqCst),
                        "cancelled": cancelled.load(Ordering::SeqCst),
                    });
                    async move { body.to_string() }
                }),
            )
            .route(
                "/test/extra/show",
                axum::routing::post(move || {
                    show.set_when(true);
                    async { "shown" }
                }),
            )
            .route(
                "/test/extra/hide",
                axum::routing::post(move || {
                    hide.set_when(false);
                    async { "hidden" }
                }),
            )
            .route("/", get(|| async { Html(page(true, "")) }))
            .route("/plain", get(|| async { Html(page(false, "")) }))
            .route("/dup", get(|| async { Html(page(true, DUP)) }))
            .route("/polyfill", get(|| async { Html(page(true, POLYFILL)) }))
            .route(
                "/navigator",
                get(|| async { Html(page(true, &format!("{POLYFILL}{NAVIGATOR}"))) }),
            )
            .route(
                "/interaction",
                get(|| async { Html(page(true, INTERACTION)) }),
            )
            .route("/evil", get(|| async { Html(EVIL) }))
            .route(
                "/polyfill.js",
                get(move || {
                    let polyfill = polyfill.clone();
                    async move {
                        match polyfill.and_then(|p| std::fs::read_to_string(p).ok()) {
                            Some(js) => ([("content-type", "text/javascript")], js).into_response(),
                            None => {
                                (axum::http::StatusCode::NOT_FOUND, "no polyfill").into_response()
                            }
                        }
                    }
                }),
            )
            .nest("/toolmark", self.webmcp.router());
        with_tee(router, tee)
    }
}

/// `router` with every request and every response byte recorded into `tee`.
pub fn with_tee(router: Router, tee: Arc<Tee>) -> Router {
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let tee = Arc::clone(&tee);
            async move { teed(tee, req, next).await }
        },
    ))
}

async fn teed(tee: Arc<Tee>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let origin = req
        .headers()
        .get("origin")
        .and_then(|o| o.to_str().ok())
        .map(str::to_owned);
    let res = next.run(req).await;
    tee.requests.lock().unwrap().push(Seen {
        method,
        path,
        status: res.status().as_u16(),
        origin,
    });
    let (parts, body) = res.into_parts();
    let body = body.into_data_stream().inspect(move |chunk| {
        if let Ok(bytes) = chunk {
            tee.bytes.lock().unwrap().extend_from_slice(bytes);
        }
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// `@mcp-b/webmcp-polyfill`'s IIFE build: `$TOOLMARK_WEBMCP_POLYFILL`, else
/// `.ci/node/node_modules/@mcp-b/webmcp-polyfill/dist/index.iife.js`.
pub fn polyfill_path() -> Option<std::path::PathBuf> {
    let p = match std::env::var_os("TOOLMARK_WEBMCP_POLYFILL") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(".ci/node/node_modules/@mcp-b/webmcp-polyfill/dist/index.iife.js"),
    };
    p.exists().then_some(p)
}

/// A page of the app: the shim, and (with `confirm`) a scripted `onConfirm` the
/// browser test answers through `window.__answer(i, decision)`. Before the
/// shim, `head` runs (a polyfill, or the page's own tool); every
/// `registerTool` is counted by name in `window.__registered`.
fn page(confirm: bool, head: &str) -> String {
    let confirm_js = if confirm {
        r#"
  window.__asked = [];
  window.__answers = [];
  window.__closed = [];
  window.toolmarkWebMcp = {
    onConfirm(request, { signal }) {
      // The shim closes the dialog when the call ends without an answer.
      signal.addEventListener("abort", () => window.__closed.push(request.confirmId));
      return new Promise((resolve) => {
        window.__asked.push(request);
        window.__answers.push(resolve);
        const p = document.createElement("pre");
        p.className = "asked";
        p.textContent = JSON.stringify(request);
        document.body.append(p);
      });
    },
  };
  window.__answer = (i, decision) => window.__answers[i](decision);"#
    } else {
        ""
    };
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>test app</title>
{head}
<script>
  window.__registered = {{}};
  const mc = document.modelContext || navigator.modelContext;
  if (mc) {{
    const register = mc.registerTool.bind(mc);
    mc.registerTool = (tool, options) => {{
      window.__registered[tool.name] = (window.__registered[tool.name] || 0) + 1;
      return register(tool, options);
    }};
  }}
  window.__console = [];
  for (const level of ["log", "warn", "error"]) {{
    const orig = console[level].bind(console);
    console[level] = (...args) => {{ window.__console.push([level, args.map(String).join(" ")]); orig(...args); }};
  }}{confirm_js}
</script>
<script type="module" src="/toolmark/webmcp.js"></script>
</head><body><h1>test app</h1></body></html>"#
    )
}

/// Three tools the browser does not keep, which the shim must report: the
/// page's own tool has the name of one of the app's (Chromium refuses the
/// duplicate); a page script renames `extra.hello` to `extra/hello` on its way
/// to the browser (Chromium refuses the name); and it swallows `slow.wait`
/// without an error (a silent drop, found only by reading `getTools()`).
const DUP: &str = r#"<script>
  const original = document.modelContext.registerTool.bind(document.modelContext);
  document.modelContext.registerTool = (tool, options) =>
    tool.name === "slow.wait" ? Promise.resolve()
      : original(tool.name === "extra.hello" ? {...tool, name: "extra/hello"} : tool, options);
  original({
    name: "notes.read", description: "the page's own", inputSchema: {type: "object"},
    execute: async () => ({content: [{type: "text", text: "page"}]}),
  });
</script>"#;

/// A browser that offers `requestUserInteraction` to `execute` (Chromium 156
/// does not yet): a page script hands every `execute` a client that has one,
/// and counts its uses in `window.__interactions`.
const INTERACTION: &str = r#"<script>
  window.__interactions = 0;
  const original = document.modelContext.registerTool.bind(document.modelContext);
  document.modelContext.registerTool = (tool, options) => original({
    ...tool,
    execute: (input, client) => tool.execute(input, {
      signal: client && client.signal,
      requestUserInteraction: async (callback) => { window.__interactions += 1; return await callback(); },
    }),
  }, options);
</script>"#;

/// An older draft's browser: `navigator.modelContext` only (the polyfill's
/// alias, with `document.modelContext` taken away).
const NAVIGATOR: &str = r#"<script>
  delete Document.prototype.modelContext;
  if (document.modelContext || !navigator.modelContext) throw new Error("setup");
</script>"#;

const POLYFILL: &str = r#"<script src="/polyfill.js"></script>"#;

/// An attacker's page, loaded from another origin (`localhost` when the app is
/// at `127.0.0.1`): it tries every endpoint of the app's origin.
const EVIL: &str = r#"<!doctype html><html><body><script>
  window.attack = async (target) => {
    const out = {};
    const tryFetch = async (label, path, init) => {
      try {
        const r = await fetch(target + path, init);
        out[label] = r.type === "opaque" ? "opaque" : r.status + " " + (await r.text());
      } catch (e) {
        out[label] = "blocked: " + e.name;
      }
    };
    const mark = {"X-Toolmark-WebMCP": "1", "Content-Type": "application/json"};
    await tryFetch("page_with_header", "/toolmark/page", {method: "POST", headers: mark, body: "{}"});
    await tryFetch("page_simple", "/toolmark/page", {method: "POST", mode: "no-cors", body: "{}"});
    await tryFetch("call_simple", "/toolmark/call", {method: "POST", mode: "no-cors",
      body: JSON.stringify({tool: "pay.send", input: {title: "x", card: {number: "1", cvc: "2"}}})});
    await tryFetch("call_with_header", "/toolmark/call", {method: "POST", headers: {...mark, "X-Toolmark-Page": "0".repeat(32)},
      body: JSON.stringify({tool: "notes.read", input: {}})});
    await tryFetch("answer_simple", "/toolmark/answer", {method: "POST", mode: "no-cors",
      body: JSON.stringify({confirmId: "0".repeat(32), approved: true})});
    await tryFetch("stream_simple", "/toolmark/stream", {method: "POST", mode: "no-cors", body: "{}"});
    return out;
  };
</script></body></html>"#;
