//! Deferred mode (the default for inapp).

use std::time::Duration;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::{BridgeMessage, Caller, ConfirmMode, Decision, Outcome, RefusalCode, Toolmark};

use crate::*;

on_every_store!(
    deferred_call_returns_needs_confirmation_and_the_tool_has_not_run,
    approval_runs_the_tool_as_human_and_the_bridge_delivers_the_outcome,
    an_approved_run_executes_as_human_even_when_human_is_not_an_allowed_caller,
    an_edited_input_is_revalidated_and_an_invalid_edit_keeps_the_id,
    an_invalid_deferred_call_is_refused_invalid_never_needs_confirmation,
    a_rejection_and_its_reason_reach_the_agent,
    a_second_approval_of_the_same_id_is_confirmation_expired,
    fifty_concurrent_approvals_of_one_id_run_the_tool_exactly_once,
    an_approval_after_expiry_is_expired_by_the_clock_with_no_timer_run,
    expiry_sends_a_bridge_message_when_the_clock_moves,
    at_most_max_pending_are_pending_and_the_oldest_expire_first,
    disposal_drops_pending_confirmations,
    test_callers_can_be_set_to_deferred,
    cancel_pending_withdraws_a_confirmation,
    every_bridge_subscriber_gets_every_message_in_order,
    a_pending_confirmation_of_a_hidden_tool_is_unknown_tool_and_stays_pending,
    a_hidden_tools_confirmation_still_expires,
);

async fn deferred_call_returns_needs_confirmation_and_the_tool_has_not_run(s: Store) {
    let clock = ManualClock::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    let out = tm
        .call("create", json!({"title": "Robotics"}), opts(Caller::InApp))
        .await;
    let v = json_of(&out);
    assert_eq!(v["status"], "needs_confirmation");
    assert_eq!(v["summary"], "Create challenge \"Robotics\"");
    assert_eq!(v["changes"], json!([]));
    let id = v["confirmId"].as_str().unwrap();
    assert_eq!(id.len(), 32, "128 bits, hex");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    // Default expiry: 10 minutes after the clock's now (ManualClock starts at
    // 2026-01-01T00:00:00Z).
    assert_eq!(v["expiresAt"], "2026-01-01T00:10:00.000Z");
    assert_eq!(count(&runs), 0);
    let pending = pending(&tm).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].confirm_id, id);
    assert_eq!(pending[0].tool, "create");
    assert_eq!(pending[0].caller, Caller::InApp);
}

async fn approval_runs_the_tool_as_human_and_the_bridge_delivers_the_outcome(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let out = tm
        .call("create", json!({"title": "Robotics"}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    let result = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(result.output().unwrap()["caller"], "human");
    assert_eq!(count(&runs), 1);
    let BridgeMessage::Confirmed {
        confirm_id,
        tool,
        outcome,
    } = bridge.recv().await.unwrap()
    else {
        panic!("a confirmed message")
    };
    assert_eq!(
        (confirm_id.as_str(), tool.as_str()),
        (id.as_str(), "create")
    );
    assert_eq!(outcome, result);
    let msg = serde_json::to_value(BridgeMessage::Confirmed {
        confirm_id,
        tool,
        outcome,
    })
    .unwrap();
    assert_eq!(msg["type"], "confirmed");
    assert_eq!(msg["outcome"]["status"], "ok");
    assert!(pending(&tm).await.is_empty());
}

async fn an_approved_run_executes_as_human_even_when_human_is_not_an_allowed_caller(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let runs = runs();
    tm.register(
        guarded("create", &runs).callers([Caller::InApp]),
        Default::default(),
    )
    .unwrap();
    let id = defer(&tm, "create", json!({})).await;
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.output().unwrap()["caller"], "human");
}

async fn an_edited_input_is_revalidated_and_an_invalid_edit_keeps_the_id(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let id = defer(&tm, "create", json!({"title": "Robotics"})).await;
    let bad = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": 5})))
        .await;
    assert_eq!(code(&bad), Some(RefusalCode::Invalid));
    assert_eq!(bad.refusal().unwrap().issues[0].path, "title");
    assert_eq!(count(&runs), 0);
    assert_eq!(
        pending(&tm).await.len(),
        1,
        "a refused decision does not use up the id"
    );
    let good = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": "Chess"})))
        .await;
    assert_eq!(good.output().unwrap()["input"], json!({"title": "Chess"}));
    assert_eq!(count(&runs), 1);
}

async fn an_invalid_deferred_call_is_refused_invalid_never_needs_confirmation(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let out = tm
        .call("create", json!({"title": 1}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert!(pending(&tm).await.is_empty());
}

async fn a_rejection_and_its_reason_reach_the_agent(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    let out = tm
        .confirm_pending(&id, Decision::reject_with("Not this week"))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert_eq!(out.refusal().unwrap().message, "Not this week");
    let BridgeMessage::Confirmed { outcome, .. } = bridge.recv().await.unwrap() else {
        unreachable!()
    };
    assert_eq!(outcome, out);
    assert_eq!(count(&runs), 0);
}

async fn a_second_approval_of_the_same_id_is_confirmation_expired(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let id = defer(&tm, "create", json!({})).await;
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    let again = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&again), Some(RefusalCode::ConfirmationExpired));
    let unknown = tm
        .confirm_pending("00000000000000000000000000000000", Decision::approve())
        .await;
    assert_eq!(code(&unknown), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 1);
}

async fn fifty_concurrent_approvals_of_one_id_run_the_tool_exactly_once(s: Store) {
    let Some((tm, runs)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let id = defer(&tm, "create", json!({})).await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let mut handles = Vec::new();
    for _ in 0..50 {
        let (tm, id, barrier) = (tm.clone(), id.clone(), barrier.clone());
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            tm.confirm_pending(&id, Decision::approve()).await
        }));
    }
    let mut oks = 0;
    for h in handles {
        match h.await.unwrap() {
            Outcome::Ok { .. } => oks += 1,
            other => assert_eq!(code(&other), Some(RefusalCode::ConfirmationExpired)),
        }
    }
    assert_eq!(oks, 1);
    assert_eq!(count(&runs), 1);
}

async fn an_approval_after_expiry_is_expired_by_the_clock_with_no_timer_run(s: Store) {
    let clock = ManualClock::new();
    let Some((tm, runs)) = create_on(s, Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    let id = defer(&tm, "create", json!({})).await;
    // The clock jumps (a laptop slept); nothing has had a chance to run a timer.
    clock.advance(Duration::from_secs(601));
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0);
}

async fn expiry_sends_a_bridge_message_when_the_clock_moves(s: Store) {
    let clock = ManualClock::new();
    let Some((tm, _)) = create_on(
        s,
        Toolmark::builder()
            .clock(clock.clone())
            .confirm_expiry(Duration::from_secs(60)),
    )
    .await
    else {
        return;
    };
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    clock.advance(Duration::from_secs(59));
    tokio::task::yield_now().await;
    assert!(bridge.try_recv().is_none());
    clock.advance(Duration::from_secs(2));
    let BridgeMessage::Confirmed {
        confirm_id,
        outcome,
        ..
    } = bridge.recv().await.unwrap()
    else {
        unreachable!()
    };
    assert_eq!(confirm_id, id);
    assert_eq!(code(&outcome), Some(RefusalCode::ConfirmationExpired));
    assert!(pending(&tm).await.is_empty());
}

async fn at_most_max_pending_are_pending_and_the_oldest_expire_first(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let mut ids = Vec::new();
    for n in 0..101 {
        let out = tm
            .call("create", json!({"n": n}), opts(Caller::InApp))
            .await;
        ids.push(out.confirm_id().unwrap().to_owned());
    }
    let pending = pending(&tm).await;
    assert_eq!(pending.len(), 100);
    assert_eq!(pending[0].confirm_id, ids[1], "oldest first");
    let BridgeMessage::Confirmed {
        confirm_id,
        outcome,
        ..
    } = bridge.recv().await.unwrap()
    else {
        unreachable!()
    };
    assert_eq!(confirm_id, ids[0]);
    assert_eq!(code(&outcome), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(
        code(&tm.confirm_pending(&ids[0], Decision::approve()).await),
        Some(RefusalCode::ConfirmationExpired)
    );
    assert!(tm
        .confirm_pending(&ids[100], Decision::approve())
        .await
        .is_ok());
}

async fn disposal_drops_pending_confirmations(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let runs = runs();
    let scope = tm.scope("challenges");
    scope.register(guarded("create", &runs)).unwrap();
    tm.register(guarded("other", &runs), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "challenges.create", json!({})).await;
    let other = defer(&tm, "other", json!({})).await;
    scope.dispose();
    let pending = pending(&tm).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].confirm_id, other);
    let BridgeMessage::Confirmed {
        confirm_id,
        outcome,
        ..
    } = bridge.recv().await.unwrap()
    else {
        unreachable!()
    };
    assert_eq!(confirm_id, id);
    assert_eq!(code(&outcome), Some(RefusalCode::ScopeDisposed));
    let late = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&late), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0);
}

async fn test_callers_can_be_set_to_deferred(s: Store) {
    let Some((tm, _)) = create_on(
        s,
        Toolmark::builder().confirm_mode(Caller::Test, ConfirmMode::Deferred),
    )
    .await
    else {
        return;
    };
    let out = tm.call("create", json!({}), opts(Caller::Test)).await;
    assert_eq!(out.status(), "needs_confirmation");
}

async fn cancel_pending_withdraws_a_confirmation(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    assert!(cancel(&tm, &id).await);
    assert!(!cancel(&tm, &id).await);
    let BridgeMessage::Confirmed { outcome, .. } = bridge.recv().await.unwrap() else {
        unreachable!()
    };
    assert_eq!(code(&outcome), Some(RefusalCode::Cancelled));
    assert_eq!(
        code(&tm.confirm_pending(&id, Decision::approve()).await),
        Some(RefusalCode::ConfirmationExpired)
    );
}

/// Built-in store only: a stored confirmation outlives the toolmark that made it
/// (shutting one instance down leaves it to the others; tests/store/instances.rs
/// approves one after a restart).
#[tokio::test]
async fn shutdown_expires_every_open_confirmation() {
    let s = Store::Builtin;
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut bridge = tm.bridge();
    tm.call("create", json!({}), opts(Caller::InApp)).await;
    tm.shutdown();
    assert!(pending(&tm).await.is_empty());
    let BridgeMessage::Confirmed { outcome, .. } = bridge.recv().await.unwrap() else {
        unreachable!()
    };
    assert_eq!(code(&outcome), Some(RefusalCode::ConfirmationExpired));
}

async fn every_bridge_subscriber_gets_every_message_in_order(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut a = tm.bridge();
    let mut b = tm.bridge();
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(defer(&tm, "create", json!({})).await);
    }
    for id in &ids {
        tm.confirm_pending(id, Decision::reject()).await;
    }
    for rx in [&mut a, &mut b] {
        for id in &ids {
            let BridgeMessage::Confirmed { confirm_id, .. } = rx.recv().await.unwrap() else {
                unreachable!()
            };
            assert_eq!(&confirm_id, id);
        }
    }
}

/// Not on Redis: the test runs on tokio's paused clock, which jumps to the next
/// timer whenever the runtime waits, so every wait on the network would end in the
/// store's operation timeout. The run after an approval is the same on every store.
#[tokio::test(start_paused = true)]
async fn the_run_an_approval_starts_has_the_no_signal_deadline_builtin() {
    the_run_an_approval_starts_has_the_no_signal_deadline(Store::Builtin).await;
}

#[tokio::test(start_paused = true)]
async fn the_run_an_approval_starts_has_the_no_signal_deadline_memory() {
    the_run_an_approval_starts_has_the_no_signal_deadline(Store::Memory).await;
}

async fn the_run_an_approval_starts_has_the_no_signal_deadline(s: Store) {
    let Some(tm) = s
        .build(
            Toolmark::builder()
                .call_timeout(Duration::from_secs(30))
                .abort_grace(Duration::from_secs(2)),
        )
        .await
    else {
        return;
    };
    tm.register(
        toolmark::ToolSpec::new("hang", "Hangs after approval")
            .effect(toolmark::Effect::Destructive)
            .handler(|_ctx, _input| async move {
                std::future::pending::<()>().await;
                Ok(json!(null))
            }),
        Default::default(),
    )
    .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "hang", json!({})).await;
    let t0 = tokio::time::Instant::now();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(32),
        "30 s deadline + 2 s grace"
    );
    let BridgeMessage::Confirmed { outcome, .. } = bridge.recv().await.unwrap() else {
        unreachable!()
    };
    assert_eq!(code(&outcome), Some(RefusalCode::Cancelled));
}

async fn a_pending_confirmation_of_a_hidden_tool_is_unknown_tool_and_stays_pending(s: Store) {
    let runs = runs();
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let parent = tm.scope("billing");
    let scope = parent.scope("refunds");
    scope.register(guarded("send", &runs)).unwrap();
    let out = tm
        .call(
            "billing.refunds.send",
            json!({"title": "x"}),
            opts(Caller::InApp),
        )
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    for hide in [&scope, &parent] {
        hide.set_when(false);
        for decision in [Decision::approve(), Decision::reject()] {
            let refused = tm.confirm_pending(&id, decision).await;
            assert_eq!(refused.refusal_code(), Some(RefusalCode::UnknownTool));
        }
        assert_eq!(pending(&tm).await.len(), 1, "not used up");
        assert_eq!(count(&runs), 0);
        hide.set_when(true);
    }
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(count(&runs), 1);
}

async fn a_hidden_tools_confirmation_still_expires(s: Store) {
    let runs = runs();
    let clock = ManualClock::new();
    let Some(tm) = s.build(Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    let scope = tm.scope("billing");
    scope.register(guarded("send", &runs)).unwrap();
    let out = tm
        .call("billing.send", json!({"title": "x"}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    scope.set_when(false);
    clock.advance(Duration::from_secs(601));
    scope.set_when(true);
    let late = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(late.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0);
}

/// The scan that follows every Redis test finds a secret written in clear (so its
/// passing means something).
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_scan_after_each_test_finds_a_secret_in_clear() {
    use futures_util::FutureExt;
    let leak = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let key = leak.clone();
    let caught = std::panic::AssertUnwindSafe(stores::run(Store::Redis, |s| async move {
        let Some(stores::Backing::Redis { url, prefix }) = s.open() else {
            panic!("a Redis store")
        };
        *key.lock().unwrap() = format!("{prefix}:leak");
        let client = ::redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = ::redis::cmd("SET")
            .arg(format!("{prefix}:leak"))
            .arg(format!("{{\"pin\":\"{}\"}}", stores::SECRETS[0]))
            .query_async(&mut conn)
            .await
            .unwrap();
    }))
    .catch_unwind()
    .await;
    let err = caught.expect_err("the scan finds the secret");
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("a secret is in Redis in clear"), "{text}");
    // Leave no secret behind for a scan of the whole Redis after the suite.
    let url = stores::redis_url();
    let client = ::redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = leak.lock().unwrap().clone();
    let deleted: i64 = ::redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
}

/// What an approved run holds when its deadline cuts it off is released before
/// its outcome is delivered: the run is dropped before the bridge message (and,
/// with a store, the other instances) tell the agent.
async fn a_cut_off_approved_run_is_dropped_before_its_outcome_is_delivered(s: Store) {
    struct Held {
        bridge: std::sync::Arc<std::sync::Mutex<toolmark::Bridge>>,
        delivered_first: std::sync::Arc<std::sync::Mutex<Option<bool>>>,
    }
    impl Drop for Held {
        fn drop(&mut self) {
            let delivered = self.bridge.lock().unwrap().try_recv().is_some();
            *self.delivered_first.lock().unwrap() = Some(delivered);
        }
    }
    let Some(tm) = s
        .build(
            Toolmark::builder()
                .call_timeout(Duration::from_secs(30))
                .abort_grace(Duration::from_secs(2)),
        )
        .await
    else {
        return;
    };
    let bridge = std::sync::Arc::new(std::sync::Mutex::new(tm.bridge()));
    let delivered_first = std::sync::Arc::new(std::sync::Mutex::new(None));
    let (b, d) = (bridge.clone(), delivered_first.clone());
    tm.register(
        toolmark::ToolSpec::new("hang", "Hangs once approved")
            .effect(toolmark::Effect::Destructive)
            .handler(move |_ctx, _input| {
                let held = Held {
                    bridge: b.clone(),
                    delivered_first: d.clone(),
                };
                async move {
                    let _held = held;
                    std::future::pending::<()>().await;
                    Ok(json!(null))
                }
            }),
        Default::default(),
    )
    .unwrap();
    let id = defer(&tm, "hang", json!({})).await;
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Cancelled));
    assert_eq!(
        *delivered_first.lock().unwrap(),
        Some(false),
        "the run was dropped after its outcome was delivered"
    );
    // And the outcome was delivered.
    assert!(bridge.lock().unwrap().try_recv().is_some());
}

// Tokio's paused clock runs the 30 s deadline and the grace at once (a Redis store
// needs real time: the other stores stand for it here).
#[tokio::test(start_paused = true)]
async fn a_cut_off_approved_run_is_dropped_before_its_outcome_is_delivered_builtin() {
    a_cut_off_approved_run_is_dropped_before_its_outcome_is_delivered(Store::Builtin).await;
}

#[tokio::test(start_paused = true)]
async fn a_cut_off_approved_run_is_dropped_before_its_outcome_is_delivered_memory() {
    a_cut_off_approved_run_is_dropped_before_its_outcome_is_delivered(Store::Memory).await;
}
