//! Caps an attacker can push: one caller cannot push out everyone else's
//! confirmations, every eviction is an event, and a bridge subscriber that does not
//! read holds bounded memory.

use serde_json::json;
use toolmark::{BridgeMessage, Caller, ConfirmMode, Event, RefusalCode, Toolmark};

use crate::*;

on_every_store!(
    a_caller_alone_may_fill_max_pending_and_the_oldest_expire_first,
    one_caller_cannot_push_out_another_callers_confirmations,
    a_set_per_caller_bound_is_hard_and_evicts_only_that_callers_oldest,
    a_bridge_subscriber_that_falls_behind_gets_one_lagged_message_then_the_rest,
);

/// A toolmark where InApp and Test are both deferred, with `send` registered.
async fn two_deferred_callers(
    s: Store,
    build: impl FnOnce(toolmark::ToolmarkBuilder) -> toolmark::ToolmarkBuilder,
) -> Option<Toolmark> {
    let tm = s
        .build(build(
            Toolmark::builder().confirm_mode(Caller::Test, ConfirmMode::Deferred),
        ))
        .await?;
    tm.register(guarded("send", &runs()), Default::default())
        .unwrap();
    Some(tm)
}

async fn ask(tm: &Toolmark, caller: Caller, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let out = tm.call("send", json!({"n": i}), opts(caller)).await;
        ids.push(out.confirm_id().expect("needs_confirmation").to_owned());
    }
    ids
}

async fn pending_of(tm: &Toolmark, caller: Caller) -> Vec<String> {
    pending(tm)
        .await
        .into_iter()
        .filter(|p| p.caller == caller)
        .map(|p| p.confirm_id)
        .collect()
}

async fn a_caller_alone_may_fill_max_pending_and_the_oldest_expire_first(s: Store) {
    let Some(tm) = two_deferred_callers(s, |b| b).await else {
        return;
    };
    let ids = ask(&tm, Caller::InApp, 101).await;
    let pending = pending_of(&tm, Caller::InApp).await;
    assert_eq!(pending.len(), 100);
    assert_eq!(pending, ids[1..].to_vec());
}

async fn one_caller_cannot_push_out_another_callers_confirmations(s: Store) {
    let Some(tm) = two_deferred_callers(s, |b| b).await else {
        return;
    };
    let mut events = tm.events();
    let theirs = ask(&tm, Caller::Test, 3).await;
    let mine = ask(&tm, Caller::InApp, 150).await;
    assert_eq!(pending_of(&tm, Caller::Test).await, theirs, "untouched");
    let left = pending_of(&tm, Caller::InApp).await;
    assert_eq!(left.len(), 97, "the flooding caller lost its own oldest");
    assert_eq!(left, mine[53..].to_vec());
    let mut evicted = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let Event::ConfirmationEvicted {
            confirm_id,
            caller,
            reason,
            ..
        } = e
        {
            assert_eq!(caller, Caller::InApp);
            assert_eq!(reason, "max_pending_per_caller");
            evicted.push(confirm_id);
        }
    }
    assert_eq!(
        evicted,
        mine[..53].to_vec(),
        "one event per eviction, in order"
    );
}

async fn a_set_per_caller_bound_is_hard_and_evicts_only_that_callers_oldest(s: Store) {
    let Some(tm) = two_deferred_callers(s, |b| b.max_pending_per_caller(3)).await else {
        return;
    };
    let mut bridge = tm.bridge();
    let theirs = ask(&tm, Caller::Test, 2).await;
    let mine = ask(&tm, Caller::InApp, 5).await;
    assert_eq!(pending_of(&tm, Caller::InApp).await, mine[2..].to_vec());
    assert_eq!(pending_of(&tm, Caller::Test).await, theirs);
    // The evicted ones expire: the agent hears of each through the bridge.
    for id in &mine[..2] {
        let Some(BridgeMessage::Confirmed {
            confirm_id,
            outcome,
            ..
        }) = bridge.recv().await
        else {
            panic!("a bridge message")
        };
        assert_eq!(&confirm_id, id);
        assert_eq!(
            outcome.refusal_code(),
            Some(RefusalCode::ConfirmationExpired)
        );
    }
}

#[tokio::test]
async fn a_zero_per_caller_bound_or_bridge_capacity_is_a_config_error() {
    for builder in [
        Toolmark::builder().max_pending_per_caller(0),
        Toolmark::builder().bridge_capacity(0),
    ] {
        let err = builder.build().unwrap_err();
        assert_eq!(err.code(), "invalid_option");
    }
}

async fn a_bridge_subscriber_that_falls_behind_gets_one_lagged_message_then_the_rest(s: Store) {
    let Some(tm) = two_deferred_callers(s, |b| b.bridge_capacity(2).max_pending(1000)).await else {
        return;
    };
    let mut slow = tm.bridge();
    let mut fast = tm.bridge();
    let ids = ask(&tm, Caller::InApp, 5).await;
    let mut fast_seen = Vec::new();
    for id in &ids {
        assert!(cancel(&tm, id).await);
        while let Some(BridgeMessage::Confirmed { confirm_id, .. }) = fast.try_recv() {
            fast_seen.push(confirm_id);
        }
    }
    assert_eq!(fast_seen, ids, "a subscriber that keeps up loses nothing");
    let kept = |m: Option<BridgeMessage>| match m {
        Some(BridgeMessage::Confirmed { confirm_id, .. }) => confirm_id,
        other => panic!("expected a confirmed message, got {other:?}"),
    };
    assert_eq!(kept(slow.recv().await), ids[0]);
    assert_eq!(kept(slow.recv().await), ids[1]);
    assert_eq!(slow.recv().await, Some(BridgeMessage::Lagged { missed: 3 }));
    assert!(slow.try_recv().is_none());
    // Caught up: new messages arrive again.
    let more = ask(&tm, Caller::InApp, 1).await;
    cancel(&tm, &more[0]).await;
    assert_eq!(kept(slow.recv().await), more[0]);
    assert_eq!(
        serde_json::to_value(BridgeMessage::Lagged { missed: 3 }).unwrap(),
        json!({"type": "lagged", "missed": 3})
    );
}
