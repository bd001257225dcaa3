//! Hardening: secrets in outputs and panic messages, panics in handlers and
//! sensitive fns, sync runs that never return, blocking async tools, and calls into
//! the caller's own scope.
//!
//! The panic-hook and process-exit rules are checked in a child process (this test
//! binary run again with `TOOLMARK_CHILD` set): the hook is process-wide, and only
//! a child can show that the process exits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::json;
use toolmark::{
    Ask, CallOptions, Caller, Effect, Event, Outcome, RefusalCode, RegisterOptions, ToolError,
    ToolSpec, Toolmark,
};

use crate::common::{add, as_inapp, code, echo, ok, tm};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pay {
    holder: String,
    cvc: String,
}

const SECRET: &str = "S3CRET-991";

fn pay_input() -> serde_json::Value {
    json!({ "holder": "Ada", "cvc": SECRET })
}

// ---- outputs echo no secrets ----------------------------------------------------

#[tokio::test]
async fn outputs_are_scrubbed_of_the_calls_secrets() {
    let tm = tm();
    tm.register(
        ToolSpec::typed("pay", "Pay", |_ctx, p: Pay| async move {
            Ok::<_, ToolError>(json!({
                "message": format!("charged {} using cvc {}", p.holder, p.cvc),
                "cvc": p.cvc,
                "list": [p.cvc.clone(), 7],
                p.cvc.clone(): "as a key",
            }))
        })
        .effect(Effect::Write)
        .sensitive(["cvc"]),
        RegisterOptions::default(),
    )
    .unwrap();
    let out = tm.call("pay", pay_input(), as_inapp()).await;
    let text = serde_json::to_string(ok(&out)).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(
        ok(&out)["message"],
        json!("charged Ada using cvc [redacted]")
    );
    assert_eq!(ok(&out)["cvc"], json!("[redacted]"));
    assert_eq!(ok(&out)["list"], json!(["[redacted]", 7]));
}

#[tokio::test]
async fn outputs_of_tools_without_sensitive_paths_are_untouched() {
    let tm = tm();
    tm.register(echo("echo"), RegisterOptions::default())
        .unwrap();
    let out = tm.call("echo", json!({ "cvc": SECRET }), as_inapp()).await;
    assert_eq!(ok(&out), &json!({ "cvc": SECRET }));
}

// ---- panics in handlers and sensitive fns ---------------------------------------

#[tokio::test]
async fn a_panicking_inline_confirm_handler_is_an_error_and_the_runtime_stays_usable() {
    let tm = Toolmark::builder()
        .confirm_handler(|_r| async { panic!("handler exploded") })
        .build()
        .unwrap();
    tm.register(
        echo("charge").effect(Effect::Consequential),
        RegisterOptions::default(),
    )
    .unwrap();
    tm.register(add("add"), RegisterOptions::default()).unwrap();
    let out = tm
        .call("charge", json!({}), CallOptions::new(Caller::Mcp))
        .await;
    match &out {
        Outcome::Error(e) => assert!(e.message.contains("confirm handler panicked"), "{e:?}"),
        other => panic!("expected error, got {other:?}"),
    }
    // Nothing left open, nothing poisoned: the next calls work.
    assert!(tm.pending_confirmations().is_empty());
    let out = tm
        .call(
            "add",
            json!({"a": 1, "b": 2}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(ok(&out), &json!(3));
}

#[tokio::test]
async fn a_panicking_confirm_handler_in_ctx_confirm_is_a_denial() {
    let tm = Toolmark::builder()
        .confirm_handler(|_r| async { panic!("handler exploded") })
        .build()
        .unwrap();
    tm.register(
        ToolSpec::new("ask", "Ask mid-run")
            .effect(Effect::Write)
            .handler(|ctx, _input| async move {
                let r = ctx.confirm(Ask::new("Really?")).await;
                Ok(json!({ "approved": r.approved, "reason": r.reason }))
            }),
        RegisterOptions::default(),
    )
    .unwrap();
    let out = tm
        .call("ask", json!({}), CallOptions::new(Caller::Mcp))
        .await;
    assert_eq!(
        ok(&out),
        &json!({ "approved": false, "reason": "confirm_handler_failed" })
    );
}

#[tokio::test]
async fn a_panicking_sensitive_fn_at_registration_is_a_register_error() {
    let tm = tm();
    let err = tm
        .register(
            echo("t").sensitive_fn(|| panic!("no paths today")),
            RegisterOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
    assert!(err.to_string().contains("sensitive_fn"), "{err}");
    tm.register(add("add"), RegisterOptions::default()).unwrap();
    assert!(tm
        .call("add", json!({"a": 1, "b": 1}), as_inapp())
        .await
        .is_ok());
}

#[tokio::test]
async fn a_panicking_sensitive_fn_at_call_time_makes_the_whole_input_sensitive() {
    let tm = tm();
    let armed = Arc::new(AtomicBool::new(false));
    let fuse = Arc::clone(&armed);
    tm.register(
        ToolSpec::new("t", "Fails with the input")
            .input_schema(json!({
                "type": "object",
                "properties": { "cvc": { "type": "string" }, "x": { "type": "string" } }
            }))
            .effect(Effect::Write)
            .sensitive_fn(move || {
                if fuse.load(Ordering::SeqCst) {
                    panic!("sensitive paths unavailable");
                }
                Ok(vec!["cvc".to_owned()])
            })
            .handler(|_ctx, input| async move {
                Err::<serde_json::Value, _>(ToolError::new(format!("bad input {input}")))
            }),
        RegisterOptions::default(),
    )
    .unwrap();
    armed.store(true, Ordering::SeqCst);
    let out = tm
        .call("t", json!({ "cvc": SECRET, "x": "other" }), as_inapp())
        .await;
    match &out {
        Outcome::Error(e) => {
            assert!(!e.message.contains(SECRET), "{e:?}");
            assert!(!e.message.contains("other"), "{e:?}");
        }
        other => panic!("expected error, got {other:?}"),
    }
    // Still usable.
    let again = tm.call("t", json!({ "cvc": SECRET }), as_inapp()).await;
    assert_eq!(again.status(), "error");
}

// ---- the deadline decides -------------------------------------------------------

/// Stands in for a tool blocking its thread for `d`: moves tokio's paused clock on
/// by `d` without yielding (the first poll of `advance` moves the clock).
fn block_for(d: Duration) {
    let _ = tokio::time::advance(d).now_or_never();
}

fn blocking_tool(name: &str, pend_first: bool) -> ToolSpec {
    ToolSpec::new(name, "Blocks its thread")
        .effect(Effect::Read)
        .timeout(Duration::from_secs(1))
        .handler(move |_ctx, _input| async move {
            if pend_first {
                tokio::task::yield_now().await;
            }
            block_for(Duration::from_secs(5));
            Ok(json!("done"))
        })
}

/// The first poll is timed on the real (coarse monotonic) clock, so this test
/// really blocks its thread, for 60 ms against a 20 ms deadline: the paused clock
/// cannot stand in for a thread that does not yield.
#[tokio::test]
async fn a_result_after_the_deadline_on_the_first_poll_is_cancelled() {
    let tm = tm();
    tm.register(
        ToolSpec::new("b", "Blocks its thread on the first poll")
            .effect(Effect::Read)
            .timeout(Duration::from_millis(20))
            .handler(|_ctx, _input| async move {
                std::thread::sleep(Duration::from_millis(60));
                Ok(json!("done"))
            }),
        RegisterOptions::default(),
    )
    .unwrap();
    let out = tm.call("b", json!({}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled), "{out:?}");
}

#[tokio::test(start_paused = true)]
async fn a_result_after_the_deadline_in_the_slow_path_is_cancelled() {
    let tm = tm();
    tm.register(blocking_tool("b", true), RegisterOptions::default())
        .unwrap();
    let out = tm.call("b", json!({}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled), "{out:?}");
}

#[tokio::test(start_paused = true)]
async fn a_result_within_the_deadline_is_ok() {
    let tm = tm();
    tm.register(
        ToolSpec::new("q", "Quick")
            .effect(Effect::Read)
            .timeout(Duration::from_secs(1))
            .handler(|_ctx, _input| async move {
                block_for(Duration::from_millis(999));
                Ok(json!("done"))
            }),
        RegisterOptions::default(),
    )
    .unwrap();
    assert!(tm.call("q", json!({}), as_inapp()).await.is_ok());
}

// ---- calls into the caller's own scope ------------------------------------------

fn nesting_tm() -> Toolmark {
    let tm = tm();
    let s = tm.scope("s");
    s.register(add("add")).unwrap();
    tm.scope("t").register(add("add")).unwrap();
    s.register(
        ToolSpec::new("via_ctx", "Calls through ctx.call")
            .effect(Effect::Read)
            .handler(|ctx, input| async move {
                let name = input["name"].as_str().unwrap_or_default().to_owned();
                let out = ctx.call(&name, json!({"a": 2, "b": 3})).await;
                Ok(serde_json::to_value(&out).unwrap())
            }),
    )
    .unwrap();
    let inner = tm.clone();
    s.register(
        ToolSpec::new("via_tm", "Calls through tm.call")
            .effect(Effect::Read)
            .handler(move |_ctx, _input| {
                let tm = inner.clone();
                async move {
                    let out = tm.call("s.add", json!({"a": 2, "b": 3}), as_inapp()).await;
                    Ok(serde_json::to_value(&out).unwrap())
                }
            }),
    )
    .unwrap();
    tm
}

#[tokio::test(start_paused = true)]
async fn ctx_call_runs_a_same_scope_tool_inside_the_held_slot() {
    let tm = nesting_tm();
    let started = tokio::time::Instant::now();
    let out = tm
        .call("s.via_ctx", json!({"name": "s.add"}), as_inapp())
        .await;
    assert_eq!(ok(&out), &json!({"status": "ok", "output": 5}));
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn ctx_call_runs_another_scopes_tool_through_its_queue_and_checks_like_a_call() {
    let tm = nesting_tm();
    let out = tm
        .call("s.via_ctx", json!({"name": "t.add"}), as_inapp())
        .await;
    assert_eq!(ok(&out), &json!({"status": "ok", "output": 5}));
    let out = tm
        .call("s.via_ctx", json!({"name": "s.nope"}), as_inapp())
        .await;
    assert_eq!(ok(&out)["code"], json!("unknown_tool"));
}

#[tokio::test(start_paused = true)]
async fn a_plain_call_into_the_callers_own_scope_is_refused_busy_at_once() {
    let tm = nesting_tm();
    let started = tokio::time::Instant::now();
    let out = tm.call("s.via_tm", json!({}), as_inapp()).await;
    let inner = ok(&out);
    assert_eq!(inner["code"], json!("busy"), "{inner}");
    assert!(
        inner["message"].as_str().unwrap().contains("ctx.call"),
        "{inner}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
    // The slot was released: the scope still works.
    let out = tm.call("s.add", json!({"a": 1, "b": 1}), as_inapp()).await;
    assert_eq!(ok(&out), &json!(2));
}

// ---- sync runs that never return --------------------------------------------------

/// A sync tool the way `#[tool]` expands a sync fn: its body blocks on `release`.
fn sync_tool(
    name: &str,
    release: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
) -> ToolSpec {
    ToolSpec::new(name, "Blocks until released")
        .effect(Effect::Read)
        .timeout(Duration::from_secs(1))
        .handler(move |ctx, _input| {
            let release = Arc::clone(&release);
            async move {
                let run = toolmark::__private::sync_run(&ctx);
                toolmark::__private::run_blocking(run, move || {
                    let _ = release.lock().unwrap().recv();
                })
                .await;
                Ok(json!("released"))
            }
        })
}

#[tokio::test(start_paused = true)]
async fn abandoned_sync_runs_are_counted_bounded_and_reported() {
    let tm = Toolmark::builder()
        .max_abandoned_sync_runs(1)
        .abort_grace(Duration::from_millis(10))
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let rx = Arc::new(std::sync::Mutex::new(rx));
    tm.register(
        sync_tool("stuck", Arc::clone(&rx)),
        RegisterOptions::default(),
    )
    .unwrap();
    let mut events = tm.events();
    let out = tm.call("stuck", json!({}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    let mut seen = None;
    while let Ok(e) = events.try_recv() {
        if let Event::SyncRunAbandoned { tool, abandoned } = e {
            seen = Some((tool, abandoned));
        }
    }
    assert_eq!(seen, Some(("stuck".to_owned(), 1)));
    let out = tm.call("stuck", json!({}), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::Busy), "{out:?}");
    assert!(out.refusal().unwrap().message.contains("never returned"));
    // Release the first run: its thread ends and the count drops.
    tx.send(()).unwrap();
    let mut freed = false;
    for _ in 0..100_000 {
        tx.send(()).unwrap();
        let out = tm.call("stuck", json!({}), as_inapp()).await;
        if out.is_ok() {
            freed = true;
            break;
        }
        std::thread::yield_now();
    }
    assert!(freed, "the count never dropped after the thread ended");
}

/// Runs this binary again as a child with `TOOLMARK_CHILD=mode`, running only the
/// test `name`; returns its stderr, after checking it exited (within `bound`) with
/// success.
fn run_child(mode: &str, name: &str, bound: Duration) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("TOOLMARK_CHILD", mode)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Real time here: the rule is about a real process exiting. The wait ends as
    // soon as the child exits; the bound only fails a child that hangs.
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            panic!("child `{mode}` did not exit within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "child `{mode}` failed: {err}");
    err
}

fn child_mode() -> Option<String> {
    std::env::var("TOOLMARK_CHILD").ok()
}

#[test]
fn a_sync_run_that_never_returns_does_not_keep_the_process_from_exiting() {
    if child_mode().is_some() {
        return;
    }
    run_child(
        "sync_exit",
        "escapes::child_sync_exit",
        Duration::from_secs(60),
    );
}

#[test]
fn child_sync_exit() {
    if child_mode().as_deref() != Some("sync_exit") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tm = Toolmark::builder()
            .abort_grace(Duration::from_millis(10))
            .build()
            .unwrap();
        let (_tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        tm.register(
            sync_tool("forever", rx).timeout(Duration::from_millis(50)),
            RegisterOptions::default(),
        )
        .unwrap();
        let out = tm.call("forever", json!({}), as_inapp()).await;
        assert_eq!(code(&out), Some(RefusalCode::Cancelled));
        std::mem::forget(_tx);
    });
    // With the blocking pool this drop would wait for the stuck thread forever.
    drop(rt);
}

// ---- the scrubbing panic hook -----------------------------------------------------

#[test]
fn panics_inside_a_run_are_printed_scrubbed_and_others_untouched() {
    if child_mode().is_some() {
        return;
    }
    let err = run_child(
        "panic_hook",
        "escapes::child_panic_hook",
        Duration::from_secs(60),
    );
    assert!(!err.contains(SECRET), "{err}");
    assert!(err.contains("async cvc [redacted] rejected"), "{err}");
    assert!(err.contains("sync cvc [redacted] rejected"), "{err}");
    assert!(err.contains("outside a run: S3CRET-OUT"), "{err}");
    assert!(err.contains("no secret here"), "{err}");
}

#[test]
fn with_scrub_panics_off_the_hook_is_not_installed() {
    if child_mode().is_some() {
        return;
    }
    let err = run_child(
        "panic_hook_off",
        "escapes::child_panic_hook",
        Duration::from_secs(60),
    );
    assert!(
        err.contains(&format!("async cvc {SECRET} rejected")),
        "{err}"
    );
}

#[test]
fn child_panic_hook() {
    let on = match child_mode().as_deref() {
        Some("panic_hook") => true,
        Some("panic_hook_off") => false,
        _ => return,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tm = Toolmark::builder().scrub_panics(on).build().unwrap();
        tm.register(
            ToolSpec::typed("async_pay", "Pay", |_ctx, p: Pay| async move {
                if p.holder == "plain" {
                    panic!("no secret here");
                }
                panic!("async cvc {} rejected", p.cvc);
                #[allow(unreachable_code)]
                Ok::<(), ToolError>(())
            })
            .effect(Effect::Write)
            .sensitive(["cvc"]),
            RegisterOptions::default(),
        )
        .unwrap();
        tm.register(
            ToolSpec::typed("sync_pay", "Pay", |ctx, p: Pay| async move {
                let run = toolmark::__private::sync_run(&ctx);
                toolmark::__private::run_blocking(run, move || -> () {
                    panic!("sync cvc {} rejected", p.cvc);
                })
                .await;
                Ok::<(), ToolError>(())
            })
            .effect(Effect::Write)
            .sensitive(["cvc"]),
            RegisterOptions::default(),
        )
        .unwrap();
        for tool in ["async_pay", "sync_pay"] {
            let out = tm.call(tool, pay_input(), as_inapp()).await;
            assert_eq!(out.status(), "error");
        }
        let out = tm
            .call(
                "async_pay",
                json!({"holder": "plain", "cvc": "1"}),
                as_inapp(),
            )
            .await;
        assert_eq!(out.status(), "error");
    });
    let _ = std::thread::spawn(|| panic!("outside a run: S3CRET-OUT")).join();
}

/// `levels` scopes `d0`…, each with a tool `down` that calls the next level's `down`
/// with a plain `tm.call`; the last level calls `d{target}.down`, a scope an
/// enclosing run holds.
fn chain_tm(levels: usize, target: usize) -> Toolmark {
    let tm = tm();
    for i in 0..levels {
        let next = if i + 1 < levels {
            format!("d{}.down", i + 1)
        } else {
            format!("d{target}.down")
        };
        let handle = tm.clone();
        tm.scope(&format!("d{i}"))
            .register(
                ToolSpec::new("down", "Calls one level down")
                    .effect(Effect::Read)
                    .handler(move |_ctx, _input| {
                        let (tm, next) = (handle.clone(), next.clone());
                        async move {
                            let out = tm.call(&next, json!({}), as_inapp()).await;
                            Ok(serde_json::to_value(&out).unwrap())
                        }
                    }),
            )
            .unwrap();
    }
    tm
}

/// The innermost outcome of a chain of nested `ok` outcomes.
fn innermost(mut v: &serde_json::Value) -> &serde_json::Value {
    while v["status"] == json!("ok") && v["output"].is_object() {
        v = &v["output"];
    }
    v
}

#[tokio::test(start_paused = true)]
async fn a_call_into_a_scope_held_many_runs_up_is_refused_busy_at_any_depth() {
    // 20 nested runs on one thread: more than the marker keeps in its inline
    // cells, so both the outermost scope and one past the inline depth are held.
    for target in [0, 18] {
        let tm = chain_tm(20, target);
        let started = tokio::time::Instant::now();
        let out = serde_json::to_value(tm.call("d0.down", json!({}), as_inapp()).await).unwrap();
        let last = innermost(&out);
        assert_eq!(last["code"], json!("busy"), "target d{target}: {last}");
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
