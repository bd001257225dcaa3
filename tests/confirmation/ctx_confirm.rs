//! `ctx.confirm` inside a run.

use std::time::Duration;

use serde_json::json;
use tokio::time::{sleep, Instant};
use toolmark::clock::ManualClock;
use toolmark::{
    Ask, Caller, Change, ConfirmMode, ConfirmQueue, Decision, Event, RefusalCode, ToolSpec,
    Toolmark,
};

use crate::*;

/// A write tool that asks mid-run and returns the answer.
fn asking(name: &str) -> ToolSpec {
    ToolSpec::new(name, "Asks mid-run").handler(|ctx, _| async move {
        let r = ctx
            .confirm(Ask::new("Overwrite the draft?").changes(vec![Change::new(
                "title",
                Some(json!("old")),
                Some(json!("new")),
            )]))
            .await;
        Ok(json!({"approved": r.approved, "reason": r.reason, "changes": r.changes.len()}))
    })
}

#[tokio::test]
async fn a_human_caller_is_approved_at_once() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(asking("t"), Default::default()).unwrap();
    let out = tm.call("t", json!({}), opts(Caller::Human)).await;
    assert_eq!(
        out.output().unwrap(),
        &json!({"approved": true, "reason": null, "changes": 1})
    );
}

#[tokio::test]
async fn a_deferred_caller_gets_confirmation_unavailable_and_a_dev_event() {
    let tm = Toolmark::builder()
        .confirm_handler(|_r| async { Decision::approve() })
        .dev_events(true)
        .build()
        .unwrap();
    let mut events = tm.events();
    tm.register(asking("t"), Default::default()).unwrap();
    let out = tm.call("t", json!({}), opts(Caller::InApp)).await;
    assert_eq!(
        out.output().unwrap(),
        &json!({"approved": false, "reason": "confirmation_unavailable", "changes": 0})
    );
    let mut unavailable = false;
    while let Ok(e) = events.try_recv() {
        unavailable |= matches!(
            e,
            Event::CtxConfirmUnavailable {
                caller: Caller::InApp,
                ..
            }
        );
    }
    assert!(unavailable, "ctx_confirm_unavailable development event");
}

#[tokio::test]
async fn no_handler_gets_confirmation_unavailable() {
    let tm = Toolmark::builder()
        .confirm_mode(Caller::InApp, ConfirmMode::Inline)
        .build()
        .unwrap();
    tm.register(asking("t"), Default::default()).unwrap();
    let out = tm.call("t", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(out.output().unwrap()["reason"], "confirmation_unavailable");
}

#[tokio::test]
async fn an_inline_caller_awaits_the_handler() {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    tm.register(asking("t"), Default::default()).unwrap();
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "t", json!({}), opts(Caller::Mcp));
    updates.changed().await.unwrap();
    let req = queue.pending().remove(0);
    assert_eq!(req.summary, "Overwrite the draft?");
    assert_eq!(req.changes[0].path, "title");
    queue.reject_with(&req.confirm_id, "keep it").unwrap();
    let out = call.await.unwrap();
    assert_eq!(
        out.output().unwrap(),
        &json!({"approved": false, "reason": "keep it", "changes": 0})
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_paused_while_ctx_confirm_is_open_and_resumes_with_the_time_left() {
    // call_timeout 10 s. The tool works 4 s, asks (the user takes 60 s), then works
    // `after` seconds more: 5 s fits in the 6 s left, 7 s does not.
    for (after, expect_ok) in [(5, true), (7, false)] {
        let tm = Toolmark::builder()
            .call_timeout(Duration::from_secs(10))
            .confirm_handler(|_r| async {
                sleep(Duration::from_secs(60)).await;
                Decision::approve()
            })
            .build()
            .unwrap();
        tm.register(
            ToolSpec::new("t", "Works, asks, works").handler(move |ctx, _| async move {
                sleep(Duration::from_secs(4)).await;
                let r = ctx.confirm(Ask::new("Go on?")).await;
                assert!(r.approved);
                sleep(Duration::from_secs(after)).await;
                Ok(json!("done"))
            }),
            Default::default(),
        )
        .unwrap();
        let t0 = Instant::now();
        let out = tm.call("t", json!({}), opts(Caller::Mcp)).await;
        if expect_ok {
            assert!(out.is_ok(), "{}", json_of(&out));
            assert_eq!(t0.elapsed(), Duration::from_secs(69));
        } else {
            assert_eq!(code(&out), Some(RefusalCode::Cancelled));
            // Aborted at 4 + 60 + 6 s; the tool (which ignores its signal) ends
            // 1 s into the grace, and is still cancelled.
            assert_eq!(t0.elapsed(), Duration::from_secs(71));
        }
    }
}

#[tokio::test]
async fn ctx_confirm_is_bounded_by_the_expiry() {
    let clock = ManualClock::new();
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .clock(clock.clone())
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    tm.register(asking("t"), Default::default()).unwrap();
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "t", json!({}), opts(Caller::Tour));
    updates.changed().await.unwrap();
    clock.advance(Duration::from_secs(601));
    let out = call.await.unwrap();
    assert_eq!(out.output().unwrap()["reason"], "confirmation_expired");
}

#[tokio::test]
async fn ctx_confirm_is_bounded_by_the_call_signal() {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let s = seen.clone();
    tm.register(
        ToolSpec::new("t", "Asks").handler(move |ctx, _| {
            let s = s.clone();
            async move {
                let r = ctx.confirm(Ask::new("?")).await;
                *s.lock().unwrap() = r.reason.clone();
                Ok(json!(null))
            }
        }),
        Default::default(),
    )
    .unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let (tm, token) = (tm.clone(), token.clone());
        async move {
            tm.call("t", json!({}), opts(Caller::Mcp).signal(token))
                .await
        }
    });
    updates.changed().await.unwrap();
    token.cancel();
    assert_eq!(code(&call.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(seen.lock().unwrap().as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn an_approved_ctx_confirm_returns_the_edited_changes() {
    let tm = Toolmark::builder()
        .confirm_handler(|req: toolmark::ConfirmRequest| async move {
            let mut changes = serde_json::to_value(&req.changes).unwrap();
            changes[0]["after"] = json!("edited");
            Decision::approve_with(changes)
        })
        .build()
        .unwrap();
    tm.register(
        ToolSpec::new("t", "Asks").handler(|ctx, _| async move {
            let r = ctx
                .confirm(Ask::new("?").changes(vec![Change::new(
                    "title",
                    None,
                    Some(json!("new")),
                )]))
                .await;
            Ok(serde_json::to_value(&r.changes).unwrap())
        }),
        Default::default(),
    )
    .unwrap();
    let out = tm.call("t", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(
        out.output().unwrap(),
        &json!([{"path": "title", "before": null, "after": "edited"}])
    );
}

/// The input a `ctx.confirm` shows its approver is the call's (redacted), for a
/// tool with and without sensitive paths: the run taking its input by move must
/// not leave the approver a `null`.
#[tokio::test]
async fn ctx_confirm_shows_the_approver_the_calls_input() {
    for sensitive in [false, true] {
        let queue = ConfirmQueue::new();
        let tm = Toolmark::builder()
            .confirm_handler(queue.handler())
            .build()
            .unwrap();
        let mut spec = ToolSpec::new("t", "Asks mid-run")
            .input_schema(json!({
                "type": "object",
                "properties": {"title": {"type": "string"}, "cvc": {"type": "string"}}
            }))
            .handler(|ctx, input| async move {
                let r = ctx.confirm(Ask::new("Send it?")).await;
                Ok(json!({"approved": r.approved, "title": input["title"]}))
            });
        if sensitive {
            spec = spec.sensitive(["cvc"]);
        }
        tm.register(spec, Default::default()).unwrap();
        let mut updates = queue.subscribe();
        let input = json!({"title": "hi", "cvc": "123"});
        let call = spawn_call(&tm, "t", input.clone(), opts(Caller::Mcp));
        updates.changed().await.unwrap();
        let req = queue.pending().remove(0);
        let shown = if sensitive {
            json!({"title": "hi", "cvc": "[redacted]"})
        } else {
            input.clone()
        };
        assert_eq!(req.input, shown, "sensitive: {sensitive}");
        queue.approve(&req.confirm_id, None).unwrap();
        let out = call.await.unwrap();
        assert_eq!(
            out.output().unwrap(),
            &json!({"approved": true, "title": "hi"}),
            "sensitive: {sensitive}"
        );
    }
}
