//! Nothing an app type does stops the runtime: a held input whose `Drop` panics
//! never escapes `confirm_pending` (or a call, a cancel, a disposal, a shutdown),
//! and never kills the expiry sweeper — later confirmations still expire on time.

use std::time::Duration;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::{
    BridgeMessage, Caller, ConfirmMode, Decision, Effect, RefusalCode, ToolError, ToolSpec,
    Toolmark,
};

use crate::*;

on_every_store!(
    a_panicking_drop_never_escapes_confirm_pending,
    a_panicking_drop_never_stops_the_expiry_sweeper,
    a_panicking_drop_never_escapes_cancel_dispose_evict_or_shutdown,
);

/// An input whose `Drop` panics when its title starts with "boom".
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Bomb {
    title: String,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.title.starts_with("boom") && !std::thread::panicking() {
            panic!("Drop of a held input panicked");
        }
    }
}

fn bomb_tool() -> ToolSpec {
    ToolSpec::typed("bomb", "Holds a bomb", |_ctx, b: Bomb| async move {
        // Never dropped by a run: defused.
        std::mem::forget(b);
        Ok::<_, ToolError>("ran")
    })
    .effect(Effect::Consequential)
}

async fn on(
    s: Store,
    builder: toolmark::ToolmarkBuilder,
) -> Option<(Toolmark, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    let (tm, runs) = create_on(s, builder).await?;
    tm.scope("x").register(bomb_tool()).unwrap();
    Some((tm, runs))
}

async fn a_panicking_drop_never_escapes_confirm_pending(s: Store) {
    let Some((tm, _)) = on(s, Toolmark::builder()).await else {
        return;
    };
    let id = defer(&tm, "x.bomb", json!({"title": "boom-1"})).await;
    let out = tm.confirm_pending(&id, Decision::reject()).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{}", json_of(&out));
    // An edited approval drops the held input and runs the edited one.
    let id = defer(&tm, "x.bomb", json!({"title": "boom-2"})).await;
    let out = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": "edited"})))
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    // An invalid edit keeps it, then a rejection.
    let id = defer(&tm, "x.bomb", json!({"title": "boom-3"})).await;
    let out = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": 5})))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    let out = tm.confirm_pending(&id, Decision::reject()).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
}

async fn a_panicking_drop_never_stops_the_expiry_sweeper(s: Store) {
    let clock = ManualClock::new();
    let Some((tm, _)) = on(s, Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let first = defer(&tm, "x.bomb", json!({"title": "boom"})).await;
    clock.advance(Duration::from_secs(601));
    let expired = |m: Option<BridgeMessage>| match m {
        Some(BridgeMessage::Confirmed {
            confirm_id,
            outcome,
            ..
        }) => {
            assert_eq!(
                outcome.refusal_code(),
                Some(RefusalCode::ConfirmationExpired)
            );
            confirm_id
        }
        other => panic!("an expiry message, got {other:?}"),
    };
    assert_eq!(expired(next(&mut bridge).await), first);
    // The sweeper is alive: a later confirmation expires on time too.
    let second = defer(&tm, "create", json!({"title": "later"})).await;
    clock.advance(Duration::from_secs(601));
    assert_eq!(expired(next(&mut bridge).await), second);
}

async fn next(bridge: &mut toolmark::Bridge) -> Option<BridgeMessage> {
    tokio::time::timeout(Duration::from_secs(10), bridge.recv())
        .await
        .ok()
        .flatten()
}

async fn a_panicking_drop_never_escapes_cancel_dispose_evict_or_shutdown(s: Store) {
    let Some((tm, runs)) = on(
        s,
        Toolmark::builder()
            .max_pending(1)
            .confirm_mode(Caller::Test, ConfirmMode::Inline)
            .confirm_handler(|_req| async { Decision::reject() }),
    )
    .await
    else {
        return;
    };
    let id = defer(&tm, "x.bomb", json!({"title": "boom-cancel"})).await;
    assert!(cancel(&tm, &id).await);
    // Pushed out by the cap.
    defer(&tm, "x.bomb", json!({"title": "boom-evicted"})).await;
    let last = defer(&tm, "create", json!({"title": "pushes it out"})).await;
    // An inline call rejected: its held input is dropped in the call.
    let out = tm
        .call(
            "x.bomb",
            json!({"title": "boom-inline"}),
            opts(Caller::Test),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{}", json_of(&out));
    // Disposed with one pending.
    let id = defer(&tm, "x.bomb", json!({"title": "boom-disposed"})).await;
    tm.scope("x").dispose();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::ConfirmationExpired),
        "{}",
        json_of(&out)
    );
    // The toolmark still works.
    let id = defer(&tm, "create", json!({"title": "after"})).await;
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(count(&runs), 1);
    let _ = last;
    tm.scope("y").register(bomb_tool()).unwrap();
    defer(&tm, "y.bomb", json!({"title": "boom-shutdown"})).await;
    tm.shutdown();
}
