//! Queues and deadlines (§5 "Queues", "Deadline without a caller signal"), on
//! tokio's paused clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;
use toolmark::{CallOptions, Caller, Outcome, RefusalCode, ToolError, ToolSpec, Toolmark};

use crate::common::*;

fn sleeper(name: &str, log: &Log) -> ToolSpec {
    let log = log.clone();
    ToolSpec::new(name, "Sleep for `secs`").handler(move |ctx, input| {
        let log = log.clone();
        async move {
            let id = input["id"].as_str().unwrap_or("?").to_owned();
            log.push(format!("start {id}"));
            sleep(Duration::from_secs(input["secs"].as_u64().unwrap_or(1))).await;
            log.push(format!("end {id}"));
            let _ = ctx;
            Ok(json!(id))
        }
    })
}

/// Ignores its signal and never finishes.
fn hung(name: &str) -> ToolSpec {
    ToolSpec::new(name, "Hangs").handler(|_ctx, _input| async move {
        std::future::pending::<()>().await;
        Ok(json!(null))
    })
}

#[tokio::test(start_paused = true)]
async fn calls_in_one_scope_run_serially_in_arrival_order() {
    let tm = tm();
    let log = Log::default();
    tm.scope("s").register(sleeper("work", &log)).unwrap();
    let mut handles = Vec::new();
    for i in 0..5 {
        let tm = tm.clone();
        handles.push(tokio::spawn(async move {
            tm.call(
                "s.work",
                json!({"id": i.to_string(), "secs": 5 - i}),
                as_inapp(),
            )
            .await
        }));
        tokio::task::yield_now().await;
    }
    for h in handles {
        assert!(h.await.unwrap().is_ok());
    }
    assert_eq!(
        log.get(),
        [
            "start 0", "end 0", "start 1", "end 1", "start 2", "end 2", "start 3", "end 3",
            "start 4", "end 4"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn separate_scopes_run_in_parallel() {
    let tm = tm();
    let log = Log::default();
    tm.scope("a").register(sleeper("work", &log)).unwrap();
    tm.scope("b").register(sleeper("work", &log)).unwrap();
    let t0 = Instant::now();
    let (x, y) = tokio::join!(
        tm.call("a.work", json!({"id": "a", "secs": 10}), as_inapp()),
        tm.call("b.work", json!({"id": "b", "secs": 10}), as_inapp()),
    );
    assert!(x.is_ok() && y.is_ok());
    assert_eq!(t0.elapsed(), Duration::from_secs(10), "both ran at once");
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_in_one_scope_never_delays_another_scope() {
    let tm = tm();
    let log = Log::default();
    tm.scope("busy").register(sleeper("work", &log)).unwrap();
    tm.scope("free").register(add("add")).unwrap();
    let first = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call("busy.work", json!({"id": "1", "secs": 100}), as_inapp())
                .await
        }
    });
    let second = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call("busy.work", json!({"id": "2", "secs": 100}), as_inapp())
                .await
        }
    });
    tokio::task::yield_now().await;
    let t0 = Instant::now();
    let out = tm
        .call("free.add", json!({"a": 1, "b": 2}), as_inapp())
        .await;
    assert_eq!(ok(&out), &json!(3));
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert!(!first.is_finished() && !second.is_finished());
    assert!(first.await.unwrap().is_ok());
    assert!(second.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_run_without_signal_is_aborted_after_call_timeout() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let log = Log::default();
    tm.register(sleeper("slow", &log), Default::default())
        .unwrap();
    let t0 = Instant::now();
    let out = tm
        .call("slow", json!({"id": "x", "secs": 1000}), as_inapp())
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    // The tool did not honour the signal but its sleep is dropped at abandonment:
    // cancelled at 120 s, abandoned after the 5 s grace.
    assert_eq!(t0.elapsed(), Duration::from_secs(125));
    assert_eq!(log.get(), ["start x"]);
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_honours_its_signal_ends_at_the_deadline() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let stopped = Arc::new(AtomicUsize::new(0));
    let s = stopped.clone();
    tm.register(
        ToolSpec::new("polite", "Stops when told").handler(move |ctx, _| {
            let s = s.clone();
            async move {
                ctx.signal().cancelled().await;
                s.fetch_add(1, Ordering::SeqCst);
                Ok(json!("stopped early"))
            }
        }),
        Default::default(),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = tm.call("polite", empty(), as_inapp()).await;
    // Once aborted, the outcome is cancelled whatever the tool returns afterwards.
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(t0.elapsed(), Duration::from_secs(30), "no grace needed");
    assert_eq!(stopped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hung_tool_is_abandoned_after_the_grace_and_its_queue_slot_released() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(10))
        .abort_grace(Duration::from_secs(3))
        .dev_events(true)
        .build()
        .unwrap();
    let mut events = tm.events();
    let s = tm.scope("s");
    s.register(hung("hang")).unwrap();
    s.register(add("add")).unwrap();
    let hung_call = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("s.hang", empty(), as_inapp()).await }
    });
    tokio::task::yield_now().await;
    let t0 = Instant::now();
    // Queued behind the hung tool in the same scope.
    let out = tm.call("s.add", json!({"a": 2, "b": 2}), as_inapp()).await;
    assert_eq!(ok(&out), &json!(4));
    assert_eq!(t0.elapsed(), Duration::from_secs(13));
    assert_eq!(
        code(&hung_call.await.unwrap()),
        Some(RefusalCode::Cancelled)
    );
    let mut abandoned = false;
    while let Ok(e) = events.try_recv() {
        abandoned |= e.kind() == "tool_abandoned";
    }
    assert!(abandoned, "a tool_abandoned development event");
}

#[tokio::test(start_paused = true)]
async fn abandonment_applies_with_a_caller_signal_too() {
    let tm = Toolmark::builder()
        .abort_grace(Duration::from_secs(2))
        .build()
        .unwrap();
    tm.register(hung("hang"), Default::default()).unwrap();
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        sleep(Duration::from_secs(7)).await;
        t.cancel();
    });
    let t0 = Instant::now();
    let out = tm
        .call(
            "hang",
            empty(),
            CallOptions::new(Caller::InApp).signal(token),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(t0.elapsed(), Duration::from_secs(9));
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_passes_a_signal_owns_the_deadline() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let log = Log::default();
    tm.register(sleeper("slow", &log), Default::default())
        .unwrap();
    let token = CancellationToken::new();
    let t0 = Instant::now();
    let out = tm
        .call(
            "slow",
            json!({"id": "a", "secs": 300}),
            CallOptions::new(Caller::Mcp).signal(token),
        )
        .await;
    assert_eq!(ok(&out), &json!("a"), "no call_timeout applies");
    assert_eq!(t0.elapsed(), Duration::from_secs(300));
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_caller_signal_aborts_the_run() {
    let tm = tm();
    let token = CancellationToken::new();
    tm.register(
        ToolSpec::new("wait", "Waits for its signal").handler(|ctx, _| async move {
            ctx.signal().cancelled().await;
            Ok(json!("saw the signal"))
        }),
        Default::default(),
    )
    .unwrap();
    let t = token.clone();
    tokio::spawn(async move {
        sleep(Duration::from_secs(4)).await;
        t.cancel();
    });
    let t0 = Instant::now();
    let out = tm
        .call(
            "wait",
            empty(),
            CallOptions::new(Caller::InApp).signal(token),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(t0.elapsed(), Duration::from_secs(4));
}

#[tokio::test(start_paused = true)]
async fn a_queued_call_whose_caller_cancels_never_runs() {
    let tm = tm();
    let log = Log::default();
    tm.register(sleeper("work", &log), Default::default())
        .unwrap();
    let first = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call("work", json!({"id": "1", "secs": 10}), as_inapp())
                .await
        }
    });
    tokio::task::yield_now().await;
    let token = CancellationToken::new();
    let second = tokio::spawn({
        let tm = tm.clone();
        let token = token.clone();
        async move {
            tm.call(
                "work",
                json!({"id": "2", "secs": 1}),
                CallOptions::new(Caller::InApp).signal(token),
            )
            .await
        }
    });
    tokio::task::yield_now().await;
    token.cancel();
    assert_eq!(code(&second.await.unwrap()), Some(RefusalCode::Cancelled));
    assert!(first.await.unwrap().is_ok());
    assert_eq!(log.get(), ["start 1", "end 1"]);
}

#[tokio::test(start_paused = true)]
async fn a_tools_own_timeout_replaces_call_timeout() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(100))
        .build()
        .unwrap();
    let log = Log::default();
    tm.register(
        sleeper("quick", &log).timeout(Duration::from_secs(2)),
        Default::default(),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = tm.call("quick", json!({"secs": 50}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(7),
        "2 s deadline + 5 s grace"
    );
}

#[tokio::test]
async fn a_panicking_tool_yields_error_and_the_next_call_runs() {
    let tm = tm();
    let s = tm.scope("s");
    s.register(
        ToolSpec::new("boom", "Panics").handler(|_ctx, _| async move {
            if true {
                panic!("kaboom");
            }
            Ok(json!(null))
        }),
    )
    .unwrap();
    s.register(add("add")).unwrap();
    let out = tm.call("s.boom", empty(), as_inapp()).await;
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["status"], "error");
    assert!(json["message"].as_str().unwrap().contains("kaboom"));
    let out = tm.call("s.add", json!({"a": 1, "b": 1}), as_inapp()).await;
    assert_eq!(ok(&out), &json!(2), "the queue is not poisoned");
    // And the panicking tool itself can be called again.
    assert_eq!(
        tm.call("s.boom", empty(), as_inapp()).await.status(),
        "error"
    );
}

#[tokio::test]
async fn a_tool_error_yields_error_with_its_message() {
    let tm = tm();
    tm.register(
        ToolSpec::new("fail", "Fails").handler(|_ctx, _| async move {
            Err(ToolError::new("the database is read-only")
                .with_issues(vec![toolmark::Issue::new("title", "taken")]))
        }),
        Default::default(),
    )
    .unwrap();
    let out = tm.call("fail", empty(), as_inapp()).await;
    assert_eq!(
        serde_json::to_value(&out).unwrap(),
        json!({"status": "error", "message": "the database is read-only", "issues": [{"path": "title", "message": "taken"}]})
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_busy() {
    let tm = Toolmark::builder().queue_bound(1).build().unwrap();
    let log = Log::default();
    tm.register(sleeper("work", &log), Default::default())
        .unwrap();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("work", json!({"secs": 10}), as_inapp()).await }
    });
    tokio::task::yield_now().await;
    let waiting = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("work", json!({"secs": 10}), as_inapp()).await }
    });
    tokio::task::yield_now().await;
    let out = tm.call("work", json!({"secs": 10}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Busy));
    assert!(running.await.unwrap().is_ok());
    assert!(waiting.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn disposal_refuses_queued_calls_and_aborts_running_ones() {
    let tm = tm();
    let log = Log::default();
    let s = tm.scope("s");
    s.register(sleeper("work", &log)).unwrap();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call("s.work", json!({"id": "1", "secs": 60}), as_inapp())
                .await
        }
    });
    tokio::task::yield_now().await;
    let queued = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call("s.work", json!({"id": "2", "secs": 60}), as_inapp())
                .await
        }
    });
    tokio::task::yield_now().await;
    s.dispose();
    assert_eq!(
        code(&queued.await.unwrap()),
        Some(RefusalCode::ScopeDisposed)
    );
    assert_eq!(code(&running.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(log.get(), ["start 1"]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_aborts_running_calls_and_refuses_new_ones() {
    let tm = tm();
    let log = Log::default();
    tm.register(sleeper("work", &log), Default::default())
        .unwrap();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("work", json!({"secs": 60}), as_inapp()).await }
    });
    tokio::task::yield_now().await;
    tm.shutdown();
    assert_eq!(code(&running.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(
        code(&tm.call("work", json!({}), as_inapp()).await),
        Some(RefusalCode::Cancelled)
    );
    assert!(tm.is_shut_down());
}

/// One call of `tool` (a sleeper) running for 60 s and `queued` more waiting behind
/// it in its scope's queue.
async fn one_running_and_queued(
    tm: &Toolmark,
    tool: &'static str,
    queued: &[&'static str],
) -> (
    tokio::task::JoinHandle<Outcome>,
    Vec<tokio::task::JoinHandle<Outcome>>,
) {
    let spawn = |id: &'static str| {
        let tm = tm.clone();
        tokio::spawn(async move {
            tm.call(tool, json!({"id": id, "secs": 60}), as_inapp())
                .await
        })
    };
    let running = spawn("1");
    tokio::task::yield_now().await;
    let queued = queued.iter().copied().map(spawn).collect();
    tokio::task::yield_now().await;
    (running, queued)
}

#[tokio::test(start_paused = true)]
async fn shutdown_refuses_queued_calls() {
    let tm = tm();
    let log = Log::default();
    tm.register(sleeper("work", &log), Default::default())
        .unwrap();
    let (running, queued) = one_running_and_queued(&tm, "work", &["2", "3", "4"]).await;
    tm.shutdown();
    for q in queued {
        assert_eq!(code(&q.await.unwrap()), Some(RefusalCode::Cancelled));
    }
    assert_eq!(code(&running.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(log.get(), ["start 1"], "no queued call ran");
}

#[tokio::test(start_paused = true)]
async fn disposing_a_parent_refuses_calls_queued_in_its_child() {
    let tm = tm();
    let log = Log::default();
    let parent = tm.scope("p");
    let child = parent.scope("c");
    child.register(sleeper("work", &log)).unwrap();
    let (running, queued) = one_running_and_queued(&tm, "p.c.work", &["2", "3"]).await;
    parent.dispose();
    for q in queued {
        assert_eq!(code(&q.await.unwrap()), Some(RefusalCode::ScopeDisposed));
    }
    assert_eq!(code(&running.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(log.get(), ["start 1"], "no queued call ran");
}

tokio::task_local! {
    /// A value each caller sets around its own call.
    static CALLER_TAG: String;
}

/// Records, for each run, whether it was polled in its own caller's task: the
/// caller's task-local value and task id, seen from inside the tool.
fn tag_checker(
    name: &str,
    ids: &Arc<std::sync::Mutex<Vec<(String, tokio::task::Id)>>>,
) -> ToolSpec {
    let ids = Arc::clone(ids);
    ToolSpec::new(name, "Reports where it runs").handler(move |_ctx, input| {
        let ids = Arc::clone(&ids);
        async move {
            let tag = input["tag"].as_str().unwrap_or("?").to_owned();
            // Pend once, so that later callers queue behind this run.
            sleep(Duration::from_millis(input["ms"].as_u64().unwrap_or(0))).await;
            let seen = CALLER_TAG.try_with(Clone::clone).ok();
            let task = tokio::task::try_id();
            let caller_task = ids
                .lock()
                .unwrap()
                .iter()
                .find(|(t, _)| *t == tag)
                .map(|(_, id)| *id);
            Ok(json!({
                "tag_seen": seen,
                "own_task": task.is_some() && task == caller_task,
            }))
        }
    })
}

async fn calls_from_own_tasks(tm: &Toolmark, tool: &str, n: usize, ms: u64) {
    let ids = Arc::new(std::sync::Mutex::new(Vec::new()));
    tm.register(tag_checker(tool, &ids), Default::default())
        .unwrap();
    let mut handles = Vec::new();
    for i in 0..n {
        let tm = tm.clone();
        let ids = Arc::clone(&ids);
        let tool = tool.to_owned();
        let tag = format!("caller-{i}");
        handles.push(tokio::spawn(CALLER_TAG.scope(tag.clone(), async move {
            ids.lock().unwrap().push((tag.clone(), tokio::task::id()));
            let out = tm
                .call(&tool, json!({"tag": tag, "ms": ms}), as_inapp())
                .await;
            (tag, out)
        })));
    }
    for h in handles {
        let (tag, out) = h.await.unwrap();
        let Outcome::Ok { output: result } = out else {
            panic!("{tag}: {out:?}");
        };
        assert_eq!(
            result["tag_seen"],
            json!(tag),
            "{tag}: its run saw another caller's task-local value"
        );
        assert_eq!(
            result["own_task"],
            json!(true),
            "{tag}: its run was polled in another task"
        );
    }
}

/// A queued run is polled in its own caller's task — never by the task of the
/// caller whose run released the slot before it — so task-local values, the task id
/// and the caller's tracing context are the caller's own.
#[tokio::test(start_paused = true)]
async fn a_queued_run_is_polled_in_its_own_callers_task() {
    calls_from_own_tasks(&tm(), "where", 8, 10).await;
}

/// The same on two worker threads, with runs that release the slot at once (the case
/// where a releasing caller could be tempted to run the next waiting run itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_is_polled_in_its_own_callers_task_on_two_workers() {
    calls_from_own_tasks(&tm(), "where", 200, 0).await;
}
