//! Workloads for instruction counting under callgrind (exact and repeatable, where
//! wall-clock time on a shared machine is not): each runs one piece of work `N`
//! times after a warm-up, so subtracting a run with `N = 0` leaves the work alone.
//!
//! ```sh
//! cargo bench --bench counts --no-run        # prints the binary's path
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     target/release/deps/counts-<hash> register 10000
//! callgrind_annotate /tmp/cg.out | head -40
//! ```
//!
//! Workloads: `register N` (N `ToolSpec::typed` tools built and registered into a
//! fresh Toolmark; the Toolmark is not dropped, as criterion times no drop),
//! `specs N` (building the same specs without registering them: the baseline),
//! `call N` (N `tm.call("math.add", {a, b})` of a `#[tool]` fn),
//! `call_typed N` (the same call of a `ToolSpec::typed` tool),
//! `direct N` (the work a call wraps, by hand: `serde_json::from_value` of the same
//! input into the typed struct, the addition, `serde_json::to_value` of the sum),
//! `queued N` (N spawned calls of `math.add` that each wait in the scope's queue
//! behind a run holding it, then run in turn) and `unqueued N` (the same tasks,
//! nothing holding the scope: subtract it to leave what the wait costs),
//! `sizes` (prints the size of a call's future, held whole by whoever awaits it, and
//! of what it holds),
//! `invalid N` (N calls of `math.add` whose input has a wrong type: the slow decode),
//! `confirm N` (N deferred round trips: call → `needs_confirmation` →
//! `confirm_pending` → run), `confirm_store N` (the same on a `MemoryStore`: every
//! confirmation sealed, kept, taken and opened), `confirm_plain N` (the same tool
//! with the same input called N times as a `write` tool, which needs no
//! confirmation: the round trip's own baseline), `confirm_inline N` (the same tool
//! called N times in inline mode: each call waits while the confirm handler
//! approves, then runs),
//! `after_change N` (N reads of a 10,000-tool manifest, each after a scope was
//! hidden and shown again; the tools are registered first, so subtract `after_change
//! 0`), `json N` (the same, then the manifest's JSON),
//! and with `--features mcp`, `rmcp_list N` / `rmcp_json N` (N `list_all` of an rmcp
//! `ToolRouter` holding the same 10,000 tools, and that list as JSON), `rmcp_register N` (the same N typed tools built and
//! added to an rmcp 3.11 `ToolRouter` the way its `#[tool]` macro does; not dropped),
//! `mcp_list N` (N tools/list answers of `toolmark::mcp` for the 10,000 tools, each
//! the first after a scope was hidden and shown again: the listing rebuilt, each
//! tool copied into the answer, the answer as JSON), `rmcp_same_json N` (N
//! answers of rmcp's own handler for the very same tools, titles and hints
//! included: `list_all` into a `ListToolsResult`, as JSON) and `rmcp_call N` (N calls of the same typed tool through rmcp's cached
//! `ToolRouter::call`: the router built once, a request context cloned per call).
//!
//! Every call workload clones the same input `{"a": 2, "b": 40}` per call (each side
//! takes it by value) and runs on a current-thread runtime.
//!
//! Allocations and live bytes: the same binary under valgrind's DHAT
//! (`valgrind --tool=dhat --dhat-out-file=/dev/null counts call 2000` prints the
//! blocks allocated in total and live at exit), subtracting the run with `N = 0`.

use serde_json::json;
use std::hint::black_box;
use toolmark::{
    tool, CallOptions, Caller, ConfirmRequest, Decision, Effect, ToolError, ToolSpec, Toolmark,
};

#[cfg(feature = "mcp")]
#[path = "common/rmcp_side.rs"]
#[allow(dead_code)]
mod rmcp_side;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Add {
    a: i64,
    b: i64,
}

/// Add two numbers.
#[tool(scope = "math", read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn typed_spec(name: String) -> ToolSpec {
    ToolSpec::typed(name, "Add two numbers", |_ctx, i: Add| async move {
        Ok::<_, ToolError>(i.a + i.b)
    })
    .effect(Effect::Read)
}

fn typed_specs(n: usize) -> Vec<ToolSpec> {
    (0..n).map(|i| typed_spec(format!("add_{i}"))).collect()
}

fn register(specs: Vec<ToolSpec>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("math");
    for spec in specs {
        scope.register(spec).unwrap();
    }
    tm
}

fn calls(n: usize, name: &str, input: &serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected().unwrap();
    tm.scope("typed")
        .register(typed_spec("add".to_owned()))
        .unwrap();
    rt.block_on(async {
        for _ in 0..10 {
            black_box(
                tm.call(name, input.clone(), CallOptions::new(Caller::InApp))
                    .await,
            );
        }
        for _ in 0..n {
            black_box(
                tm.call(
                    name,
                    black_box(input.clone()),
                    CallOptions::new(Caller::InApp),
                )
                .await,
            );
        }
    });
}

/// `n` calls of `math.add` that each wait in the scope's queue: spawned while a
/// run of `math.hold` holds the scope, all polled once (each joins the queue), then
/// the holder ends and they run in turn. With `wait` = false the same tasks are
/// spawned with nothing holding the scope (each runs at once when polled): the
/// difference is what waiting in the queue costs a call. Current-thread runtime:
/// every wait parks (no spin).
fn queued(n: usize, wait: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tm = Toolmark::builder().queue_bound(n + 1).build().unwrap();
        tm.register_collected().unwrap();
        let end = std::sync::Arc::new(tokio::sync::Notify::new());
        let told = std::sync::Arc::clone(&end);
        tm.scope("math")
            .register(
                ToolSpec::typed("hold", "Hold the scope", move |_ctx, _: Add| {
                    let told = std::sync::Arc::clone(&told);
                    async move {
                        told.notified().await;
                        Ok::<_, ToolError>(0)
                    }
                })
                .effect(Effect::Read),
            )
            .unwrap();
        let call = |name: &'static str, input| {
            let tm = tm.clone();
            tokio::spawn(async move { tm.call(name, input, CallOptions::new(Caller::InApp)).await })
        };
        let holder = wait.then(|| call("math.hold", json!({"a": 0, "b": 0})));
        tokio::task::yield_now().await;
        let tasks: Vec<_> = (0..n as i64)
            .map(|i| call("math.add", json!({"a": i, "b": 40})))
            .collect();
        for _ in 0..n {
            tokio::task::yield_now().await;
        }
        end.notify_one();
        if let Some(holder) = holder {
            black_box(holder.await.unwrap());
        }
        for task in tasks {
            black_box(task.await.unwrap());
        }
    });
}

/// The work a call wraps, written by hand (the baseline of the call rows).
fn direct(n: usize, input: &serde_json::Value) {
    let once = |input: serde_json::Value| {
        let typed: Add = serde_json::from_value(input).expect("a valid input");
        serde_json::to_value(typed.a + typed.b).expect("a number")
    };
    for _ in 0..10 {
        black_box(once(input.clone()));
    }
    for _ in 0..n {
        black_box(once(black_box(input.clone())));
    }
}

/// The same call through rmcp 3.11's `ToolRouter::call`.
#[cfg(feature = "mcp")]
fn rmcp_calls(n: usize, input: &serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cached = rmcp_side::CachedCall::new();
        let args = |v: serde_json::Value| match v {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("an object input"),
        };
        for _ in 0..10 {
            black_box(cached.call(args(input.clone())).await.expect("a result"));
        }
        for _ in 0..n {
            let _ = black_box(cached.call(args(black_box(input.clone()))).await);
        }
    });
}

/// How `confirms` calls its tool.
#[derive(Clone, Copy, PartialEq)]
enum Round {
    /// Deferred: `needs_confirmation`, then `confirm_pending`.
    Deferred,
    /// Inline: the call waits while the confirm handler approves.
    Inline,
    /// A `write` tool: no confirmation.
    Plain,
}

/// `store`: kept in a `MemoryStore` (sealed records) instead of the built-in table.
fn confirms(n: usize, store: bool, round: Round) {
    let plain = round == Round::Plain;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut builder = Toolmark::builder()
            .confirm_handler(|_req: ConfirmRequest| async { Decision::approve() });
        if store {
            builder = builder
                .seal_key([7; 32])
                .confirm_store(toolmark::store::MemoryStore::new());
        }
        if round == Round::Inline {
            builder = builder.confirm_mode(Caller::InApp, toolmark::ConfirmMode::Inline);
        }
        let tm = builder.build().unwrap();
        tm.register(
            ToolSpec::new("guarded", "Send a message")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"title": {"type": "string"}},
                    "additionalProperties": false
                }))
                .effect(if plain {
                    Effect::Write
                } else {
                    Effect::Consequential
                })
                .summary("Send \"{title}\"")
                .handler(|_ctx, input| async move { Ok(input) }),
            Default::default(),
        )
        .unwrap();
        let input = json!({"title": "Robotics"});
        for i in 0..10 + n {
            let out = tm
                .call(
                    "guarded",
                    black_box(input.clone()),
                    CallOptions::new(Caller::InApp),
                )
                .await;
            if round != Round::Deferred {
                assert!(black_box(out).is_ok(), "call {i} ran");
                continue;
            }
            let id = out.confirm_id().expect("needs_confirmation").to_owned();
            let done = black_box(tm.confirm_pending(&id, Decision::approve()).await);
            assert!(done.is_ok(), "round trip {i} ran");
        }
    });
}

/// The manifest bench's 10,000 dynamic tools, and a scope with one tool to toggle.
fn manifest_tools() -> (Toolmark, toolmark::Scope) {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("s");
    for i in 0..10_000 {
        scope
            .register(
                ToolSpec::new(format!("tool_{i:05}"), "A tool that adds two numbers")
                    .input_schema(manifest_schema())
                    .effect(Effect::Read)
                    .handler(|_ctx, input| async move { Ok(input) }),
            )
            .unwrap();
    }
    let toggled = tm.scope("other");
    toggled
        .register(
            ToolSpec::new("toggle", "Toggled").handler(|_ctx, input| async move { Ok(input) }),
        )
        .unwrap();
    (tm, toggled)
}

fn manifest_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    })
}

fn after_change(n: usize, as_json: bool) {
    let (tm, toggled) = manifest_tools();
    black_box(tm.manifest_shared(Caller::Mcp));
    for _ in 0..n {
        toggled.set_when(false);
        toggled.set_when(true);
        if as_json {
            black_box(tm.manifest_json(Caller::Mcp));
        } else {
            black_box(tm.manifest_shared(Caller::Mcp));
        }
    }
    std::mem::forget(tm);
}

/// The first tools/list answer after each change, as `toolmark::mcp` builds it.
#[cfg(feature = "mcp")]
fn mcp_list(n: usize) {
    let (tm, toggled) = manifest_tools();
    let session = toolmark::mcp::McpServer::new(tm.clone()).session();
    // The tools' MCP forms are made on the first listing, once per registration.
    black_box(session.tools_for(false));
    for _ in 0..n {
        toggled.set_when(false);
        toggled.set_when(true);
        let answer = rmcp::model::ListToolsResult::with_all_items(session.tools_for(false));
        black_box(serde_json::to_vec(&answer).unwrap());
    }
    std::mem::forget((tm, session));
}

/// rmcp's own handler's tools/list answer for the same tools (a `ToolRouter`
/// holding exactly the tools Toolmark lists).
#[cfg(feature = "mcp")]
fn rmcp_same_json(n: usize) {
    let (tm, _toggled) = manifest_tools();
    let tools = toolmark::mcp::McpServer::new(tm.clone())
        .session()
        .tools_for(false);
    let mut router = rmcp::handler::server::router::tool::ToolRouter::<rmcp_side::Server>::new();
    for tool in tools {
        router.add_route(rmcp::handler::server::router::tool::ToolRoute::new(
            tool,
            rmcp_side::add_route_handler,
        ));
    }
    black_box(router.list_all());
    for _ in 0..n {
        let answer = rmcp::model::ListToolsResult::with_all_items(router.list_all());
        black_box(serde_json::to_vec(&answer).unwrap());
    }
    std::mem::forget((tm, router));
}

/// The size of a call's future (held whole by whoever awaits it: a spawned task's
/// cell) and of what it holds, for the `#[tool]` fn and the `ToolSpec::typed` tool.
fn sizes() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected().unwrap();
    tm.scope("typed")
        .register(typed_spec("add".to_owned()))
        .unwrap();
    for name in ["math.add", "typed.add"] {
        println!("{name}:");
        let sizes = tm
            .__call_sizes(name, &json!({"a": 2, "b": 40}))
            .expect("the tool and a valid input");
        for (what, bytes) in sizes {
            println!("  {what}: {bytes} bytes");
        }
    }
    let confirm = tm.confirm_pending("id", Decision::approve());
    println!(
        "confirm_pending future: {} bytes",
        std::mem::size_of_val(&confirm)
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    // Warm-up: first-use costs (schema caches, lazy statics) stay out of the count.
    black_box(register(typed_specs(1)));
    match args.first().map(String::as_str) {
        Some("register") => {
            let specs = typed_specs(n);
            std::mem::forget(black_box(register(specs)));
        }
        #[cfg(feature = "mcp")]
        Some("rmcp_register") => {
            black_box(rmcp_side::register_all(rmcp_side::typed_routes(1)));
            let routes = rmcp_side::typed_routes(n);
            std::mem::forget(black_box(rmcp_side::register_all(routes)));
        }
        Some("confirm") => confirms(n, false, Round::Deferred),
        Some("confirm_store") => confirms(n, true, Round::Deferred),
        Some("confirm_plain") => confirms(n, false, Round::Plain),
        Some("confirm_inline") => confirms(n, false, Round::Inline),
        Some("after_change") => after_change(n, false),
        Some("json") => after_change(n, true),
        #[cfg(feature = "mcp")]
        Some(w @ ("rmcp_list" | "rmcp_json")) => {
            let router = rmcp_side::router_with(10_000, &manifest_schema());
            black_box(router.list_all());
            for _ in 0..n {
                let list = router.list_all();
                if w == "rmcp_json" {
                    black_box(serde_json::to_vec(&list).unwrap());
                }
                black_box(list);
            }
            std::mem::forget(router);
        }
        #[cfg(feature = "mcp")]
        Some("mcp_list") => mcp_list(n),
        #[cfg(feature = "mcp")]
        Some("rmcp_same_json") => rmcp_same_json(n),
        Some("specs") => {
            std::mem::forget(black_box(typed_specs(n)));
        }
        Some("call") => calls(n, "math.add", &json!({"a": 2, "b": 40})),
        Some("call_typed") => calls(n, "typed.add", &json!({"a": 2, "b": 40})),
        Some("direct") => direct(n, &json!({"a": 2, "b": 40})),
        #[cfg(feature = "mcp")]
        Some("rmcp_call") => rmcp_calls(n, &json!({"a": 2, "b": 40})),
        Some("invalid") => calls(n, "math.add", &json!({"a": "two", "b": 40})),
        Some("sizes") => sizes(),
        Some("queued") => queued(n, true),
        Some("unqueued") => queued(n, false),
        // `cargo bench` runs every bench target: nothing to do without a workload.
        _ => eprintln!(
            "usage: counts register|specs|call|call_typed|direct|rmcp_call|invalid|queued|unqueued|sizes|confirm|confirm_store|confirm_plain|confirm_inline|after_change|json|rmcp_register|rmcp_list|rmcp_json [N]"
        ),
    }
}
