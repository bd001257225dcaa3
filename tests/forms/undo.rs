//! Undo: `ctx.on_undo(restorer)` during a run; `tm.undo()` runs the newest restorer
//! in its scope's queue, with no caller signal, under `call_timeout` and the abort
//! grace. Paused clock: no real sleeps.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;
use toolmark::{Caller, Outcome, RefusalCode, ToolError, ToolSpec, Toolmark};

use crate::*;

/// `add {n}` adds `n` to the counter and registers a restorer that subtracts it
/// (logging `undo {n}`).
fn counter_tool(counter: &Arc<AtomicI64>, log: &Arc<Mutex<Vec<String>>>) -> ToolSpec {
    let counter = counter.clone();
    let log = log.clone();
    ToolSpec::new("add", "Add n").handler(move |ctx, input| {
        let counter = counter.clone();
        let log = log.clone();
        async move {
            let n = input["n"].as_i64().unwrap_or(1);
            counter.fetch_add(n, Ordering::SeqCst);
            ctx.on_undo(move || async move {
                counter.fetch_sub(n, Ordering::SeqCst);
                log.lock().unwrap().push(format!("undo {n}"));
                Ok(())
            });
            Ok(json!(n))
        }
    })
}

struct Counter {
    tm: Toolmark,
    value: Arc<AtomicI64>,
    log: Arc<Mutex<Vec<String>>>,
}

fn counter(tm: Toolmark, scope: &str) -> Counter {
    let value = Arc::new(AtomicI64::new(0));
    let log = Arc::default();
    tm.scope(scope)
        .register(counter_tool(&value, &log))
        .unwrap();
    Counter { tm, value, log }
}

fn undone(c: &Counter) -> Vec<String> {
    c.log.lock().unwrap().clone()
}

#[tokio::test]
async fn undo_with_an_empty_stack_is_none() {
    let tm = tm();
    assert!(tm.undo().await.is_none());
    assert_eq!(tm.undo_depth(), 0);
}

#[tokio::test]
async fn undo_after_a_successful_call_runs_its_restorer() {
    let c = counter(tm(), "count");
    let out =
        c.tm.call("count.add", json!({"n": 5}), opts(Caller::InApp))
            .await;
    assert!(out.is_ok());
    assert_eq!(c.value.load(Ordering::SeqCst), 5);
    assert_eq!(c.tm.undo_depth(), 1);
    let undone_outcome = c.tm.undo().await.expect("something to undo");
    assert_eq!(
        undone_outcome,
        Outcome::Ok {
            output: json!(null)
        }
    );
    assert_eq!(c.value.load(Ordering::SeqCst), 0);
    assert!(c.tm.undo().await.is_none(), "each restorer runs once");
}

#[tokio::test]
async fn undo_runs_the_newest_restorer_first() {
    let c = counter(tm(), "count");
    for n in [1, 2, 3] {
        assert!(c
            .tm
            .call("count.add", json!({"n": n}), opts(Caller::InApp))
            .await
            .is_ok());
    }
    for _ in 0..3 {
        assert!(c.tm.undo().await.unwrap().is_ok());
    }
    assert_eq!(undone(&c), ["undo 3", "undo 2", "undo 1"]);
    assert_eq!(c.value.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failing_call_that_registered_nothing_leaves_nothing_to_undo() {
    let tm = tm();
    tm.register(
        ToolSpec::new("fail", "Fails").handler(|_ctx, _input| async { Err(ToolError::new("no")) }),
        Default::default(),
    )
    .unwrap();
    assert_eq!(
        tm.call("fail", json!({}), opts(Caller::InApp))
            .await
            .status(),
        "error"
    );
    assert!(tm.undo().await.is_none());
}

#[tokio::test]
async fn a_failing_or_panicking_restorer_is_an_error_outcome() {
    let tm = tm();
    tm.register(
        ToolSpec::new("twice", "Registers two bad restorers").handler(|ctx, _input| async move {
            ctx.on_undo(|| async { Err(ToolError::new("cannot undo")) });
            ctx.on_undo(|| async {
                panic!("restorer panicked");
            });
            Ok(json!(null))
        }),
        Default::default(),
    )
    .unwrap();
    assert!(tm
        .call("twice", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    let panicked = tm.undo().await.unwrap();
    assert_eq!(panicked.status(), "error");
    assert!(json_of(&panicked).to_string().contains("restorer panicked"));
    let failed = tm.undo().await.unwrap();
    assert_eq!(json_of(&failed)["message"], "cannot undo");
}

#[tokio::test(start_paused = true)]
async fn a_hung_restorer_is_cancelled_after_the_call_timeout_and_the_abort_grace() {
    let tm = Toolmark::builder()
        .call_timeout(Duration::from_secs(30))
        .abort_grace(Duration::from_secs(2))
        .build()
        .unwrap();
    tm.scope("s")
        .register(
            ToolSpec::new("hang_later", "Its undo hangs").handler(|ctx, _input| async move {
                ctx.on_undo(|| async {
                    std::future::pending::<()>().await;
                    Ok(())
                });
                Ok(json!(null))
            }),
        )
        .unwrap();
    assert!(tm
        .call("s.hang_later", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    let t0 = Instant::now();
    let out = tm.undo().await.unwrap();
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(32),
        "call_timeout + abort grace"
    );
    // The queue is free again.
    tm.scope("s")
        .register(ToolSpec::new("ping", "Ping").handler(|_ctx, _input| async { Ok(json!("pong")) }))
        .unwrap();
    assert!(tm
        .call("s.ping", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_restorer_runs_in_its_scope_queue_behind_a_running_call() {
    let tm = tm();
    let c = counter(tm.clone(), "a");
    assert!(c
        .tm
        .call("a.add", json!({"n": 1}), opts(Caller::InApp))
        .await
        .is_ok());
    // A slow call holds scope `a`'s queue for 10 s; another scope's queue is free.
    let release = Arc::new(Notify::new());
    let busy = {
        let release = release.clone();
        ToolSpec::new("busy", "Waits").handler(move |_ctx, _input| {
            let release = release.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                release.notify_one();
                Ok(json!(null))
            }
        })
    };
    tm.scope("a").register(busy).unwrap();
    let t0 = Instant::now();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("a.busy", json!({}), opts(Caller::InApp)).await }
    });
    tokio::task::yield_now().await;
    let out = tm.undo().await.unwrap();
    assert!(out.is_ok());
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(10),
        "the undo waited for the queue"
    );
    assert!(running.await.unwrap().is_ok());
    assert_eq!(c.value.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_restorer_does_not_wait_for_another_scopes_queue() {
    let tm = tm();
    let c = counter(tm.clone(), "a");
    assert!(c
        .tm
        .call("a.add", json!({"n": 1}), opts(Caller::InApp))
        .await
        .is_ok());
    tm.scope("b")
        .register(
            ToolSpec::new("busy", "Waits").handler(|_ctx, _input| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(json!(null))
            }),
        )
        .unwrap();
    let t0 = Instant::now();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("b.busy", json!({}), opts(Caller::InApp)).await }
    });
    tokio::task::yield_now().await;
    assert!(tm.undo().await.unwrap().is_ok());
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert!(running.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_restorer_waiting_for_its_queue_when_the_scope_is_disposed_is_scope_disposed() {
    let tm = tm();
    let c = counter(tm.clone(), "a");
    assert!(c
        .tm
        .call("a.add", json!({"n": 1}), opts(Caller::InApp))
        .await
        .is_ok());
    tm.scope("a")
        .register(
            ToolSpec::new("busy", "Waits").handler(|ctx, _input| async move {
                ctx.signal().cancelled().await;
                Ok(json!(null))
            }),
        )
        .unwrap();
    let running = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("a.busy", json!({}), opts(Caller::InApp)).await }
    });
    tokio::task::yield_now().await;
    let undo = tokio::spawn({
        let tm = tm.clone();
        async move { tm.undo().await }
    });
    tokio::task::yield_now().await;
    tm.scope("a").dispose();
    let out = undo.await.unwrap().unwrap();
    assert_eq!(code(&out), Some(RefusalCode::ScopeDisposed));
    assert_eq!(code(&running.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(c.value.load(Ordering::SeqCst), 1, "the restorer never ran");
}

#[tokio::test]
async fn the_undo_stack_keeps_the_newest_undo_limit_restorers() {
    let c = counter(Toolmark::builder().undo_limit(2).build().unwrap(), "count");
    for n in [1, 2, 3] {
        assert!(c
            .tm
            .call("count.add", json!({"n": n}), opts(Caller::InApp))
            .await
            .is_ok());
    }
    assert_eq!(c.tm.undo_depth(), 2, "the oldest was dropped");
    while c.tm.undo().await.is_some() {}
    assert_eq!(undone(&c), ["undo 3", "undo 2"]);
    assert_eq!(c.value.load(Ordering::SeqCst), 1);

    let none = counter(Toolmark::builder().undo_limit(0).build().unwrap(), "count");
    assert!(none
        .tm
        .call("count.add", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    assert!(
        none.tm.undo().await.is_none(),
        "undo_limit(0) keeps nothing"
    );
}

#[tokio::test]
async fn the_default_undo_limit_is_100() {
    let c = counter(tm(), "count");
    for _ in 0..101 {
        assert!(c
            .tm
            .call("count.add", json!({"n": 1}), opts(Caller::InApp))
            .await
            .is_ok());
    }
    assert_eq!(c.tm.undo_depth(), 100);
}

#[tokio::test]
async fn restorers_of_a_disposed_scope_are_dropped() {
    let tm = tm();
    let a = counter(tm.clone(), "a");
    let b = counter(tm.clone(), "b");
    assert!(tm
        .call("b.add", json!({"n": 1}), opts(Caller::InApp))
        .await
        .is_ok());
    assert!(tm
        .call("a.add", json!({"n": 2}), opts(Caller::InApp))
        .await
        .is_ok());
    tm.scope("a").dispose();
    assert_eq!(tm.undo_depth(), 1);
    assert!(tm.undo().await.unwrap().is_ok());
    assert_eq!(undone(&b), ["undo 1"]);
    assert!(undone(&a).is_empty());
    assert!(tm.undo().await.is_none());
}

#[tokio::test]
async fn a_fill_can_be_undone() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    assert!(tm
        .call(
            "signup.fill",
            json!({"name": "Eve", "age": 20}),
            opts(Caller::InApp)
        )
        .await
        .is_ok());
    assert_eq!(form.values().name, "Eve");
    let out = tm.undo().await.unwrap();
    assert!(out.is_ok(), "{}", json_of(&out));
    assert_eq!(form.values(), ada());
    assert_eq!(form.version(), 3, "an undo is a change");
}

#[tokio::test]
async fn undoing_a_fill_after_the_user_edited_the_form_changes_nothing() {
    let tm = tm();
    let (form, _) = signup(&tm);
    assert!(tm
        .call("signup.fill", json!({"name": "Eve"}), opts(Caller::InApp))
        .await
        .is_ok());
    form.update(|s| s.email = "eve@example.com".into());
    let out = tm.undo().await.unwrap();
    assert_eq!(out.status(), "error");
    assert_eq!(
        json_of(&out)["message"],
        "The form changed since this fill; nothing was undone"
    );
    let values = form.values();
    assert_eq!(
        (values.name.as_str(), values.email.as_str()),
        ("Eve", "eve@example.com")
    );
}

#[tokio::test]
async fn a_refused_fill_leaves_nothing_to_undo() {
    let tm = tm();
    signup(&tm);
    let out = tm
        .call("signup.fill", json!({"age": "x"}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert!(tm.undo().await.is_none());
}

#[tokio::test]
async fn shutdown_clears_the_undo_stack() {
    let c = counter(tm(), "count");
    assert!(c
        .tm
        .call("count.add", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    c.tm.shutdown();
    assert!(c.tm.undo().await.is_none());
}
