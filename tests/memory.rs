//! Bytes held per registered tool and per pending deferred confirmation, counted by
//! dhat's allocator (live heap bytes after minus before, divided by the count), and
//! the allocations a `#[tool]` call makes (none beyond its output).
//!
//! `cargo test --test memory -- --nocapture` prints the figures (and the bytes a
//! burst of answered confirmations leaves behind). The assertions are
//! ceilings that catch a regression, not goals: the figures and the goals are in
//! BENCHMARKS.md.

use serde_json::json;
use toolmark::{CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Add {
    a: i64,
    b: i64,
}

const N: usize = 2_000;

/// Add two numbers (the call whose allocations are counted).
#[toolmark::tool(scope = "math", read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Heap blocks allocated by `N` calls of `tool` (`math.add`, a `#[tool]` fn, or
/// `typed.add`, a `ToolSpec::typed` tool that reads its context) whose output (a
/// number) needs none: the inputs are made before the count starts.
fn blocks_per_n_tool_calls(rt: &tokio::runtime::Runtime, tool: &str) -> u64 {
    rt.block_on(async {
        let tm = Toolmark::builder().build().unwrap();
        tm.register_collected().unwrap();
        tm.scope("typed")
            .register(ToolSpec::typed("add", "Add", |ctx, i: Add| async move {
                // Reads its context: the call's state is shared with it.
                assert_eq!(ctx.caller(), Caller::InApp);
                Ok::<_, ToolError>(i.a + i.b)
            }))
            .unwrap();
        let call = |input| tm.call(tool, input, CallOptions::new(Caller::InApp));
        // Warm up: first-use caches (the decode's, the scope's) are made.
        for _ in 0..10 {
            assert!(call(json!({"a": 2, "b": 40})).await.is_ok());
        }
        let inputs: Vec<_> = (0..N as i64).map(|i| json!({"a": i, "b": 40})).collect();
        let mut outcomes = Vec::with_capacity(N);
        let before = dhat::HeapStats::get().total_blocks;
        for input in inputs {
            outcomes.push(call(input).await);
        }
        let blocks = dhat::HeapStats::get().total_blocks - before;
        assert!(outcomes.iter().all(toolmark::Outcome::is_ok));
        blocks
    })
}

/// Heap blocks allocated per `#[tool]` call that waits in its scope's queue: `N`
/// calls of `math.add` spawned while another run holds the scope (`math.hold`,
/// until it is told to end), counted from their first polls (where they queue) to
/// their outcomes; their tasks and inputs are made before the count starts.
fn blocks_per_waiting_call(rt: &tokio::runtime::Runtime) -> u64 {
    rt.block_on(async {
        let tm = Toolmark::builder().queue_bound(N + 1).build().unwrap();
        tm.register_collected().unwrap();
        let end = std::sync::Arc::new(tokio::sync::Notify::new());
        let told = std::sync::Arc::clone(&end);
        tm.scope("math")
            .register(ToolSpec::typed(
                "hold",
                "Hold the scope",
                move |_ctx, _: Add| {
                    let told = std::sync::Arc::clone(&told);
                    async move {
                        told.notified().await;
                        Ok::<_, ToolError>(0)
                    }
                },
            ))
            .unwrap();
        let call = |name: &'static str, input| {
            let tm = tm.clone();
            tokio::spawn(async move { tm.call(name, input, CallOptions::new(Caller::InApp)).await })
        };
        let holder = call("math.hold", json!({"a": 0, "b": 0}));
        tokio::task::yield_now().await;
        let waiting: Vec<_> = (0..N as i64)
            .map(|i| call("math.add", json!({"a": i, "b": 40})))
            .collect();
        let before = dhat::HeapStats::get().total_blocks;
        // Every waiting call is polled once (and queues) before the holder ends.
        for _ in 0..N {
            tokio::task::yield_now().await;
        }
        end.notify_one();
        assert!(holder.await.unwrap().is_ok());
        let mut outcomes = Vec::with_capacity(N);
        for task in waiting {
            outcomes.push(task.await.unwrap());
        }
        let blocks = dhat::HeapStats::get().total_blocks - before;
        assert!(outcomes.iter().all(toolmark::Outcome::is_ok));
        blocks / N as u64
    })
}

/// A toolmark room for `N` pending confirmations, with one consequential dynamic
/// tool `send` (`{"title": …}`, summary `Send "{title}"`) that returns its input.
fn send_app() -> Toolmark {
    let tm = Toolmark::builder().max_pending(N + 10).build().unwrap();
    tm.register(send_spec(), Default::default()).unwrap();
    tm
}

/// The `send` tool of [`send_app`].
fn send_spec() -> ToolSpec {
    ToolSpec::new("send", "Send")
        .input_schema(json!({
            "type": "object",
            "properties": {"title": {"type": "string"}},
            "additionalProperties": false
        }))
        .effect(Effect::Consequential)
        .summary("Send \"{title}\"")
        .handler(|_ctx, input| async move { Ok(input) })
}

/// Heap blocks allocated per deferred round trip of a dynamic tool (its request,
/// then its approval and run), the inputs made before the count starts.
fn blocks_per_deferred_round_trip(rt: &tokio::runtime::Runtime) -> (u64, u64) {
    rt.block_on(async {
        let tm = send_app();
        let ask = |input| tm.call("send", input, CallOptions::new(Caller::InApp));
        // Warm up: the store's tables exist and a confirmation was answered.
        for _ in 0..10 {
            let out = ask(json!({"title": "hi"})).await;
            let done = tm
                .confirm_pending(out.confirm_id().unwrap(), toolmark::Decision::approve())
                .await;
            assert!(done.is_ok());
        }
        let inputs: Vec<_> = (0..N).map(|_| json!({"title": "hi"})).collect();
        let mut asked = Vec::with_capacity(N);
        let mut done = Vec::with_capacity(N);
        let before = dhat::HeapStats::get().total_blocks;
        for input in inputs {
            asked.push(ask(input).await);
        }
        let requested = dhat::HeapStats::get().total_blocks;
        for out in &asked {
            let id = out.confirm_id().unwrap();
            done.push(tm.confirm_pending(id, toolmark::Decision::approve()).await);
        }
        let answered = dhat::HeapStats::get().total_blocks;
        assert!(done.iter().all(toolmark::Outcome::is_ok));
        let n = N as u64;
        ((requested - before) / n, (answered - requested) / n)
    })
}

/// Heap blocks allocated per inline round trip of the same tool: the call waits
/// while the app's confirm handler approves, then runs (the inputs made before the
/// count starts).
fn blocks_per_inline_round_trip(rt: &tokio::runtime::Runtime) -> u64 {
    rt.block_on(async {
        let tm = Toolmark::builder()
            .confirm_mode(Caller::InApp, toolmark::ConfirmMode::Inline)
            .confirm_handler(|_req: toolmark::ConfirmRequest| async {
                toolmark::Decision::approve()
            })
            .build()
            .unwrap();
        tm.register(send_spec(), Default::default()).unwrap();
        let call = |input| tm.call("send", input, CallOptions::new(Caller::InApp));
        // Warm up: the table exists and a confirmation was answered.
        for _ in 0..10 {
            assert!(call(json!({"title": "hi"})).await.is_ok());
        }
        let inputs: Vec<_> = (0..N).map(|_| json!({"title": "hi"})).collect();
        let mut done = Vec::with_capacity(N);
        let before = dhat::HeapStats::get().total_blocks;
        for input in inputs {
            done.push(call(input).await);
        }
        let blocks = dhat::HeapStats::get().total_blocks - before;
        assert!(done.iter().all(toolmark::Outcome::is_ok));
        blocks / N as u64
    })
}

fn live_bytes() -> usize {
    dhat::HeapStats::get().curr_bytes
}

fn bytes_per_typed_tool() -> usize {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("math");
    // Warm up: the first registration creates the scope's tables.
    scope
        .register(ToolSpec::typed("warm", "Add", |_ctx, i: Add| async move {
            Ok::<_, ToolError>(i.a + i.b)
        }))
        .unwrap();
    let names: Vec<String> = (0..N).map(|i| format!("add_{i:05}")).collect();
    let before = live_bytes();
    for name in &names {
        scope
            .register(
                ToolSpec::typed(
                    name.as_str(),
                    "Add two numbers",
                    |_ctx, i: Add| async move { Ok::<_, ToolError>(i.a + i.b) },
                )
                .effect(Effect::Read),
            )
            .unwrap();
    }
    let per_tool = (live_bytes() - before) / N;
    drop(tm);
    per_tool
}

fn bytes_per_pending_confirmation(rt: &tokio::runtime::Runtime) -> usize {
    rt.block_on(async {
        let tm = send_app();
        let warm = tm
            .call(
                "send",
                json!({"title": "hi"}),
                CallOptions::new(Caller::InApp),
            )
            .await;
        assert!(warm.confirm_id().is_some());
        let before = live_bytes();
        let mut outcomes = Vec::with_capacity(N);
        for _ in 0..N {
            outcomes.push(
                tm.call(
                    "send",
                    json!({"title": "hi"}),
                    CallOptions::new(Caller::InApp),
                )
                .await,
            );
        }
        // What the caller keeps (the outcomes) is not the store's: drop it first.
        let kept: usize = outcomes.len();
        drop(outcomes);
        assert_eq!(tm.pending_confirmations().len(), kept + 1);
        (live_bytes() - before) / N
    })
}

/// Live bytes left behind by `N` deferred confirmations opened and then answered
/// (rejected): what the store keeps once a burst is over.
fn bytes_left_after_answering(rt: &tokio::runtime::Runtime) -> usize {
    rt.block_on(async {
        let tm = Toolmark::builder().max_pending(N + 10).build().unwrap();
        tm.register(
            ToolSpec::new("send", "Send")
                .effect(Effect::Consequential)
                .handler(|_ctx, input| async move { Ok(input) }),
            Default::default(),
        )
        .unwrap();
        let ask = || tm.call("send", json!({}), CallOptions::new(Caller::InApp));
        // Warm up: the store's tables exist and a confirmation was answered.
        let warm = ask().await;
        let id = warm.confirm_id().unwrap().to_owned();
        assert!(!tm
            .confirm_pending(&id, toolmark::Decision::reject())
            .await
            .is_ok());
        let before = live_bytes();
        let mut ids = Vec::with_capacity(N);
        for _ in 0..N {
            ids.push(ask().await.confirm_id().unwrap().to_owned());
        }
        for id in &ids {
            let out = tm.confirm_pending(id, toolmark::Decision::reject()).await;
            assert!(!out.is_ok());
        }
        drop(ids);
        assert!(tm.pending_confirmations().is_empty());
        live_bytes().saturating_sub(before)
    })
}

#[test]
fn bytes_per_tool_and_per_pending_confirmation() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tool = bytes_per_typed_tool();
    let pending = bytes_per_pending_confirmation(&rt);
    let left = bytes_left_after_answering(&rt);
    let blocks = blocks_per_n_tool_calls(&rt, "math.add");
    let typed_blocks = blocks_per_n_tool_calls(&rt, "typed.add");
    let (request, approval) = blocks_per_deferred_round_trip(&rt);
    let waiting = blocks_per_waiting_call(&rt);
    let inline = blocks_per_inline_round_trip(&rt);
    println!("bytes per registered typed tool: {tool}");
    println!("heap blocks per #[tool] call that waits in its scope's queue: {waiting}");
    println!("heap blocks allocated by {N} #[tool] calls: {blocks}");
    println!(
        "heap blocks allocated by {N} calls of a typed tool reading its context: {typed_blocks}"
    );
    println!("bytes per pending deferred confirmation: {pending}");
    println!("bytes left after {N} confirmations were answered: {left}");
    println!(
        "heap blocks per deferred round trip: {request} (request) + {approval} (approval and run)"
    );
    println!("heap blocks per inline round trip: {inline}");
    // A typed tool holds at most what rmcp 3.11's route for the same tool holds
    // (392 B; 385 B today: its entry, its name once, its closures, its registry
    // slot). A regression that keeps the name twice again, or the manifest's copy of
    // its strings, or an unboxed rarely-used field, fails here.
    assert!(tool > 0 && tool <= 392, "{tool} B per typed tool");
    // The goal, 400 B (323 B today: the record with its rarely-used fields boxed
    // apart, one pointer a bucket in the id table, one ordered index): a regression
    // that keeps the input twice, or its object's whole map node, or a record
    // unboxed in the id table (1,434 B before), or the policy context, changes and
    // redacted copy inline again (566 B), fails here.
    assert!(
        pending > 0 && pending <= 400,
        "{pending} B per pending confirmation"
    );
    // A `#[tool]` call allocates nothing beyond its output (its run is kept inline
    // in the call's future): one boxed run per call (the 2,000 blocks before) fails
    // here.
    assert_eq!(blocks, 0, "{blocks} heap blocks for {N} #[tool] calls");
    // Nor does a call whose tool reads its context: its state, shared with the
    // context, reuses the allocation of the thread's last such call (one block per
    // call, 2,000 here, when each call allocated its own).
    assert_eq!(
        typed_blocks, 0,
        "{typed_blocks} heap blocks for {N} calls of a typed tool"
    );
    // A call that waits in its scope's queue (without a signal of its own)
    // allocates only its place in line, shared with the gate that grants it: its
    // wait is kept in the call's own future (a boxed wait was one block more).
    assert_eq!(
        waiting, 1,
        "{waiting} heap blocks per call waiting in its queue"
    );
    // A deferred round trip of a dynamic tool: its request keeps the input once
    // (no decoded copy is made for a call that does not run yet: 4 blocks more
    // before), validates it without the schema's error iterator (a box, built
    // only for an invalid input) and keeps its summary as a copy of exactly its
    // size (shrinking the one made, a realloc, counted as one more) and its id
    // inline (a block of its own before, 6 in all); the approval
    // moves the held input into the run (kept as it came while the table holds
    // few confirmations, else rebuilt once from its compact form; a tool without
    // sensitive paths: nothing reads the call's input once the run starts; a copy
    // for the run was 3 blocks more) and boxes the run once, the handler's future
    // inside that box (8 blocks with a second box); the run's state, shared with
    // its context, reuses the thread's spare (one block more when it did not).
    assert!(
        request <= 5 && approval <= 3,
        "{request} + {approval} heap blocks per deferred round trip"
    );
    // An inline round trip of the same tool: its view made once and handed to the
    // request (not kept by the table, not copied per request), its id inline, the
    // shown input's keys bounded in place (33 blocks before: the view copied twice
    // more, the table's compact copy, a map rebuilt to bound its keys, the id's
    // text three times).
    assert!(inline <= 17, "{inline} heap blocks per inline round trip");
    // The id table shrinks once a burst is answered (it held ~100 KB for 2,000
    // confirmations when it never shrank).
    assert!(
        left < 8 * N,
        "{left} B left after answering {N} confirmations"
    );
}
