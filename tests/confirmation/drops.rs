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

/// A store of the app's own that panics (here: every operation once armed).
struct Panicky {
    inner: toolmark::store::MemoryStore,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Panicky {
    fn check(&self) {
        if self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("the app's store panicked");
        }
    }
}

mod panicky_impl {
    use futures_util::future::BoxFuture;
    use toolmark::store::{Caps, ConfirmRecord, ConfirmStore, DecisionRecord, Evicted, StoreError};
    use toolmark::Caller;

    impl ConfirmStore for super::Panicky {
        fn durable(&self) -> bool {
            false
        }
        fn put(
            &self,
            r: ConfirmRecord,
            c: Caps,
        ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
            self.check();
            self.inner.put(r, c)
        }
        fn take<'a>(
            &'a self,
            id: &'a str,
            token: &'a str,
            keep_until: std::time::SystemTime,
        ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
            self.check();
            self.inner.take(id, token, keep_until)
        }
        fn restore<'a>(
            &'a self,
            id: &'a str,
            token: &'a str,
        ) -> BoxFuture<'a, Result<bool, StoreError>> {
            self.check();
            self.inner.restore(id, token)
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
            self.check();
            self.inner.list()
        }
        fn take_expired(
            &self,
            now: std::time::SystemTime,
        ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
            self.check();
            self.inner.take_expired(now)
        }
        fn publish(&self, m: String) -> BoxFuture<'_, Result<(), StoreError>> {
            self.inner.publish(m)
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<String> {
            self.inner.subscribe()
        }
        fn remember(&self, d: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
            self.inner.remember(d)
        }
        fn remembered_for<'a>(
            &'a self,
            tool: &'a str,
            caller: Caller,
        ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>> {
            self.inner.remembered_for(tool, caller)
        }
        fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>> {
            self.inner.remembered()
        }
        fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
            self.inner.forget(id)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_store_never_escapes_a_call_or_an_answer_nor_stops_the_sweeper() {
    use std::sync::atomic::Ordering;
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clock = ManualClock::new();
    let (tm, runs) = create_tm(
        Toolmark::builder()
            .clock(clock.clone())
            .confirm_store(Panicky {
                inner: toolmark::store::MemoryStore::new(),
                armed: armed.clone(),
            }),
    );
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({"title": "before"})).await;
    armed.store(true, Ordering::SeqCst);
    let out = tm.call("create", json!({}), opts(Caller::InApp)).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::Unavailable),
        "{}",
        json_of(&out)
    );
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(
        matches!(out, toolmark::Outcome::Error(_)),
        "{}",
        json_of(&out)
    );
    // The sweeper met the panics too; disarmed, it expires on time.
    clock.advance(Duration::from_secs(1));
    tokio::task::yield_now().await;
    armed.store(false, Ordering::SeqCst);
    clock.advance(Duration::from_secs(601));
    let msg = next(&mut bridge).await;
    assert!(
        matches!(&msg, Some(BridgeMessage::Confirmed { confirm_id, .. }) if *confirm_id == id),
        "{msg:?}"
    );
    assert_eq!(count(&runs), 0);
}
