//! A confirmation belongs to the tool registration it was asked for: it never
//! runs on a tool registered again under the same name after its scope was
//! disposed, on any store; and on another instance it runs only on a tool of that
//! name with the effect and sensitive paths the approver was shown.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde_json::json;
use toolmark::{Decision, Effect, RefusalCode, ScopeOptions, Toolmark};

use crate::stores::on_shared_stores;
use crate::*;

on_every_store!(
    a_confirmation_of_a_disposed_scope_never_runs_on_the_tool_registered_again,
    a_confirmation_of_a_disposed_transparent_scope_never_runs_on_a_root_tool_of_its_name,
    a_confirmation_stays_bound_to_its_registration_through_many_disposals,
);

mod across {
    use super::*;

    on_shared_stores!(another_instance_runs_it_only_on_the_tool_the_approver_was_shown,);
}

async fn a_confirmation_of_a_disposed_scope_never_runs_on_the_tool_registered_again(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let (old, new) = (runs(), runs());
    tm.scope("drafts").register(guarded("send", &old)).unwrap();
    let id = defer(&tm, "drafts.send", json!({"title": "old"})).await;
    tm.scope("drafts").dispose();
    // Registered again at once, under the same full name.
    tm.scope("drafts").register(guarded("send", &new)).unwrap();
    // Dropped with its scope (the agent was told `scope_disposed`): used up.
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::ConfirmationExpired),
        "{}",
        json_of(&out)
    );
    assert!(pending(&tm).await.is_empty(), "not listed");
    assert_eq!((count(&old), count(&new)), (0, 0));
    // A confirmation asked of the new registration runs on it.
    let id = defer(&tm, "drafts.send", json!({"title": "new"})).await;
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!((count(&old), count(&new)), (0, 1));
}

async fn a_confirmation_of_a_disposed_transparent_scope_never_runs_on_a_root_tool_of_its_name(
    s: Store,
) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let (plugin, root) = (runs(), runs());
    let scope = tm.scope_with(
        "plugin",
        ScopeOptions {
            transparent: true,
            ..Default::default()
        },
    );
    scope.register(guarded("deploy", &plugin)).unwrap();
    let id = defer(&tm, "deploy", json!({"title": "from the plugin"})).await;
    let mut bridge = tm.bridge();
    scope.dispose();
    tm.register(guarded("deploy", &root), Default::default())
        .unwrap();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::ConfirmationExpired),
        "{}",
        json_of(&out)
    );
    // The agent was told it was dropped with its scope.
    match tokio::time::timeout(std::time::Duration::from_secs(10), bridge.recv()).await {
        Ok(Some(toolmark::BridgeMessage::Confirmed {
            confirm_id,
            outcome,
            ..
        })) => {
            assert_eq!(confirm_id, id);
            assert_eq!(outcome.refusal_code(), Some(RefusalCode::ScopeDisposed));
        }
        other => panic!("a scope_disposed message, got {other:?}"),
    }
    assert_eq!((count(&plugin), count(&root)), (0, 0));
}

async fn a_confirmation_stays_bound_to_its_registration_through_many_disposals(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let mut ids = Vec::new();
    let counters: Vec<Arc<AtomicUsize>> = (0..4).map(|_| runs()).collect();
    for (i, r) in counters.iter().enumerate() {
        if i > 0 {
            tm.scope("s").dispose();
        }
        tm.scope("s").register(guarded("t", r)).unwrap();
        ids.push(defer(&tm, "s.t", json!({"n": i})).await);
    }
    // Only the last registration is alive: only its confirmation runs, on it.
    for (i, id) in ids.iter().enumerate() {
        let out = tm.confirm_pending(id, Decision::approve()).await;
        if i == 3 {
            assert_eq!(out.output().unwrap()["input"], json!({"n": 3}));
        } else {
            assert_eq!(
                code(&out),
                Some(RefusalCode::ConfirmationExpired),
                "{i}: {}",
                json_of(&out)
            );
        }
    }
    let ran: Vec<usize> = counters.iter().map(count).collect();
    assert_eq!(ran, vec![0, 0, 0, 1]);
}

async fn another_instance_runs_it_only_on_the_tool_the_approver_was_shown(s: Store) {
    let Some(backing) = s.open() else { return };
    let a = backing.build(Toolmark::builder()).await;
    let (ra, rb, rc, rd) = (runs(), runs(), runs(), runs());
    a.register(guarded("create", &ra), Default::default())
        .unwrap();
    // B has `create` as a destructive tool, C with a sensitive path, D as asked.
    let b = backing.build(Toolmark::builder()).await;
    b.register(
        guarded("create", &rb).effect(Effect::Destructive),
        Default::default(),
    )
    .unwrap();
    let c = backing.build(Toolmark::builder()).await;
    c.register(
        guarded("create", &rc).sensitive(["title"]),
        Default::default(),
    )
    .unwrap();
    let d = backing.build(Toolmark::builder()).await;
    d.register(guarded("create", &rd), Default::default())
        .unwrap();
    for other in [&b, &c] {
        let id = defer(&a, "create", json!({"title": "as asked"})).await;
        let out = other.confirm_pending(&id, Decision::approve()).await;
        assert_eq!(
            code(&out),
            Some(RefusalCode::ConfirmationExpired),
            "{}",
            json_of(&out)
        );
        assert!(out.refusal().unwrap().message.contains("not the one"));
    }
    let id = defer(&a, "create", json!({"title": "as asked"})).await;
    assert!(d.confirm_pending(&id, Decision::approve()).await.is_ok());
    let ran: Vec<usize> = [&ra, &rb, &rc, &rd].iter().map(|r| count(r)).collect();
    assert_eq!(ran, vec![0, 0, 0, 1]);
}
