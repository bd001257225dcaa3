//! Inline mode (always for webmcp, mcp and tour) and the ConfirmQueue.

use std::time::Duration;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::{Caller, ConfirmMode, ConfirmQueue, Decision, RefusalCode, Toolmark};

use crate::*;

on_every_store!(
    webmcp_mcp_and_tour_never_see_needs_confirmation,
    the_inline_call_waits_for_the_confirm_queue,
    an_inline_rejection_with_reason_reaches_the_agent,
    an_invalid_inline_edit_asks_again_with_the_same_id_and_the_issues,
    an_inline_approval_after_expiry_is_expired_by_the_clock,
    an_unanswered_inline_confirmation_expires,
    disposal_drops_an_open_inline_confirmation,
    the_callers_signal_ends_an_open_inline_confirmation,
    a_tool_hidden_while_the_user_decides_does_not_run,
    a_per_call_confirm_handler_is_asked_instead_of_the_apps,
    a_per_call_confirm_handler_gives_a_path_when_the_app_has_none,
    a_per_call_confirm_handler_does_not_make_a_deferred_caller_inline,
    confirm_pending_does_not_answer_an_inline_confirmation,
);

async fn webmcp_mcp_and_tour_never_see_needs_confirmation(s: Store) {
    let Some((tm, runs)) = create_on(
        s,
        Toolmark::builder().confirm_handler(|_req| async { Decision::approve() }),
    )
    .await
    else {
        return;
    };
    for caller in [Caller::WebMcp, Caller::Mcp, Caller::Tour] {
        let out = tm.call("create", json!({"title": "x"}), opts(caller)).await;
        assert_eq!(out.status(), "ok", "{caller}");
        assert_eq!(out.output().unwrap()["caller"], caller.as_str());
    }
    assert_eq!(count(&runs), 3);
}

#[test]
fn only_inapp_and_test_modes_are_configurable() {
    for caller in [Caller::WebMcp, Caller::Mcp, Caller::Tour, Caller::Human] {
        for mode in [ConfirmMode::Deferred, ConfirmMode::Inline] {
            let err = Toolmark::builder()
                .confirm_mode(caller, mode)
                .build()
                .unwrap_err();
            assert_eq!(err.code(), "invalid_confirm_mode");
        }
    }
    Toolmark::builder()
        .confirm_mode(Caller::InApp, ConfirmMode::Inline)
        .confirm_mode(Caller::Test, ConfirmMode::Deferred)
        .build()
        .unwrap();
}

async fn the_inline_call_waits_for_the_confirm_queue(s: Store) {
    let queue = ConfirmQueue::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().confirm_handler(queue.handler())).await
    else {
        return;
    };
    let mut updates = queue.subscribe();
    let call = spawn_call(
        &tm,
        "create",
        json!({"title": "Robotics"}),
        opts(Caller::Mcp),
    );
    updates.changed().await.unwrap();
    let pending = queue.pending();
    assert_eq!(pending.len(), 1);
    let req = &pending[0];
    assert_eq!(req.tool, "create");
    assert_eq!(req.caller, Caller::Mcp);
    assert_eq!(req.summary, "Create challenge \"Robotics\"");
    assert_eq!(req.input, json!({"title": "Robotics"}));
    assert!(req.issues.is_empty());
    assert_eq!(count(&runs), 0, "waiting, not run");
    queue.approve(&req.confirm_id, None).unwrap();
    let out = call.await.unwrap();
    assert!(out.is_ok());
    assert!(queue.pending().is_empty());
    // The id is used: a second answer is refused.
    assert_eq!(
        queue.approve(&req.confirm_id, None).unwrap_err().code,
        RefusalCode::ConfirmationExpired
    );
}

/// `confirm_pending` answers deferred confirmations only: given an open inline
/// confirmation's id it is refused, and the inline one stays open for its handler.
async fn confirm_pending_does_not_answer_an_inline_confirmation(s: Store) {
    let queue = ConfirmQueue::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().confirm_handler(queue.handler())).await
    else {
        return;
    };
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "create", json!({"title": "x"}), opts(Caller::Mcp));
    updates.changed().await.unwrap();
    let id = queue.pending()[0].confirm_id.clone();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0, "not run by confirm_pending");
    // Still open (asking again changes nothing): its handler's answer runs it.
    assert_eq!(
        code(&tm.confirm_pending(&id, Decision::approve()).await),
        Some(RefusalCode::ConfirmationExpired)
    );
    queue.approve(&id, None).unwrap();
    assert!(call.await.unwrap().is_ok());
    assert_eq!(count(&runs), 1);
}

async fn an_inline_rejection_with_reason_reaches_the_agent(s: Store) {
    let queue = ConfirmQueue::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().confirm_handler(queue.handler())).await
    else {
        return;
    };
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "create", json!({}), opts(Caller::Tour));
    updates.changed().await.unwrap();
    let id = queue.pending()[0].confirm_id.clone();
    queue.reject_with(&id, "Too expensive").unwrap();
    let out = call.await.unwrap();
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert_eq!(out.refusal().unwrap().message, "Too expensive");
    assert_eq!(count(&runs), 0);
}

async fn an_invalid_inline_edit_asks_again_with_the_same_id_and_the_issues(s: Store) {
    let queue = ConfirmQueue::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().confirm_handler(queue.handler())).await
    else {
        return;
    };
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "create", json!({"title": "a"}), opts(Caller::Mcp));
    updates.changed().await.unwrap();
    let id = queue.pending()[0].confirm_id.clone();
    queue.approve(&id, Some(json!({"title": 42}))).unwrap();
    loop {
        updates.changed().await.unwrap();
        if let Some(req) = queue.pending().first() {
            assert_eq!(req.confirm_id, id, "the same id");
            assert_eq!(req.issues[0].path, "title");
            break;
        }
    }
    queue.approve(&id, Some(json!({"title": "b"}))).unwrap();
    let out = call.await.unwrap();
    assert_eq!(out.output().unwrap()["input"], json!({"title": "b"}));
    assert_eq!(count(&runs), 1);
}

async fn an_inline_approval_after_expiry_is_expired_by_the_clock(s: Store) {
    let clock = ManualClock::new();
    let c = clock.clone();
    let Some(tm) = s
        .build(
            Toolmark::builder()
                .clock(clock.clone())
                .confirm_handler(move |_req| {
                    // The user answers after the clock jumped past expiry (device sleep),
                    // before any timer could run.
                    c.advance(Duration::from_secs(601));
                    async { Decision::approve() }
                }),
        )
        .await
    else {
        return;
    };
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let out = tm.call("create", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0);
}

async fn an_unanswered_inline_confirmation_expires(s: Store) {
    let clock = ManualClock::new();
    let queue = ConfirmQueue::new();
    let Some((tm, _)) = create_on(
        s,
        Toolmark::builder()
            .clock(clock.clone())
            .confirm_handler(queue.handler()),
    )
    .await
    else {
        return;
    };
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "create", json!({}), opts(Caller::WebMcp));
    updates.changed().await.unwrap();
    clock.advance(Duration::from_secs(600));
    let out = call.await.unwrap();
    assert_eq!(code(&out), Some(RefusalCode::ConfirmationExpired));
    assert!(
        queue.pending().is_empty(),
        "the queue drops requests nobody waits for"
    );
}

/// Built-in store only: with a confirmation store, an inline confirmation stays in
/// the process that holds the waiting call (it cannot be answered elsewhere) and
/// is capped there, while deferred ones are capped in the store: the two do not
/// push each other out.
#[tokio::test]
async fn max_pending_counts_inline_confirmations_too() {
    let s = Store::Builtin;
    let queue = ConfirmQueue::new();
    let Some((tm, _)) = create_on(
        s,
        Toolmark::builder()
            .confirm_handler(queue.handler())
            .max_pending(2),
    )
    .await
    else {
        return;
    };
    let inline = spawn_call(&tm, "create", json!({}), opts(Caller::Mcp));
    let mut updates = queue.subscribe();
    updates.changed().await.unwrap();
    tm.call("create", json!({}), opts(Caller::InApp)).await;
    tm.call("create", json!({}), opts(Caller::InApp)).await;
    // The inline one was oldest: it expired.
    assert_eq!(
        code(&inline.await.unwrap()),
        Some(RefusalCode::ConfirmationExpired)
    );
    assert_eq!(tm.pending_confirmations().len(), 2);
}

async fn disposal_drops_an_open_inline_confirmation(s: Store) {
    let queue = ConfirmQueue::new();
    let Some(tm) = s
        .build(Toolmark::builder().confirm_handler(queue.handler()))
        .await
    else {
        return;
    };
    let runs = runs();
    let scope = tm.scope("s");
    scope.register(guarded("create", &runs)).unwrap();
    let mut updates = queue.subscribe();
    let call = spawn_call(&tm, "s.create", json!({}), opts(Caller::Mcp));
    updates.changed().await.unwrap();
    let id = queue.pending()[0].confirm_id.clone();
    scope.dispose();
    assert_eq!(code(&call.await.unwrap()), Some(RefusalCode::ScopeDisposed));
    assert!(queue.approve(&id, None).is_err());
    assert_eq!(count(&runs), 0);
}

async fn the_callers_signal_ends_an_open_inline_confirmation(s: Store) {
    let queue = ConfirmQueue::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().confirm_handler(queue.handler())).await
    else {
        return;
    };
    let token = tokio_util::sync::CancellationToken::new();
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let (tm, token) = (tm.clone(), token.clone());
        async move {
            tm.call("create", json!({}), opts(Caller::Mcp).signal(token))
                .await
        }
    });
    updates.changed().await.unwrap();
    token.cancel();
    assert_eq!(code(&call.await.unwrap()), Some(RefusalCode::Cancelled));
    assert_eq!(count(&runs), 0);
}

async fn a_tool_hidden_while_the_user_decides_does_not_run(s: Store) {
    let runs = runs();
    let queue = ConfirmQueue::new();
    let Some(tm) = s
        .build(Toolmark::builder().confirm_handler(queue.handler()))
        .await
    else {
        return;
    };
    let scope = tm.scope("billing");
    scope.register(guarded("send", &runs)).unwrap();
    let call = tm.call("billing.send", json!({"title": "x"}), opts(Caller::Mcp));
    let answer = async {
        let mut pending = queue.subscribe();
        while pending.borrow_and_update().is_empty() {
            pending.changed().await.unwrap();
        }
        let id = queue.pending()[0].confirm_id.clone();
        scope.set_when(false);
        queue.approve(&id, None).unwrap();
    };
    let (out, ()) = tokio::join!(call, answer);
    assert_eq!(
        out.refusal_code(),
        Some(RefusalCode::UnknownTool),
        "{out:?}"
    );
    assert_eq!(count(&runs), 0);
}

async fn a_per_call_confirm_handler_is_asked_instead_of_the_apps(s: Store) {
    let app_asked = runs();
    let app = app_asked.clone();
    let Some((tm, runs)) = create_on(
        s,
        Toolmark::builder().confirm_handler(move |_req| {
            app.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Decision::approve() }
        }),
    )
    .await
    else {
        return;
    };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let own = opts(Caller::Mcp).confirm_handler(move |req: toolmark::ConfirmRequest| {
        log.lock().unwrap().push(req.summary.clone());
        async { Decision::reject_with("declined in the client") }
    });
    let out = tm.call("create", json!({"title": "X"}), own).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert_eq!(out.refusal().unwrap().message, "declined in the client");
    assert_eq!(*seen.lock().unwrap(), ["Create challenge \"X\""]);
    assert_eq!(count(&app_asked), 0, "the app's handler is not asked");
    assert_eq!(count(&runs), 0);
    // Without one, the app's handler answers as before.
    let out = tm
        .call("create", json!({"title": "X"}), opts(Caller::Mcp))
        .await;
    assert!(out.is_ok());
    assert_eq!(count(&app_asked), 1);
}

async fn a_per_call_confirm_handler_gives_a_path_when_the_app_has_none(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let out = tm.call("create", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::NotAllowed));
    let own = opts(Caller::Mcp).confirm_handler(|_req| async { Decision::approve() });
    let out = tm.call("create", json!({"title": "Y"}), own).await;
    assert!(out.is_ok(), "{}", json_of(&out));
    assert_eq!(count(&runs), 1);
}

async fn a_per_call_confirm_handler_does_not_make_a_deferred_caller_inline(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let own = opts(Caller::InApp).confirm_handler(|_req| async { Decision::approve() });
    let out = tm.call("create", json!({"title": "Z"}), own).await;
    assert_eq!(out.status(), "needs_confirmation");
    assert_eq!(count(&runs), 0);
}
