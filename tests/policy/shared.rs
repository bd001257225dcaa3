//! Remembered decisions on a shared confirmation store: a `For::Always` decision
//! is kept in the store, so every instance on it (and an instance built after a
//! restart) honours and lists it, and `forget_async` on one revokes it for all; a
//! `For::Session` decision stays in the process that made it.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde_json::json;
use toolmark::policy::Remembered;
use toolmark::{Caller, ConfirmMode, Decision, Effect, For, Toolmark};

use crate::stores::{Backing, SECRETS};
use crate::*;

on_shared_stores!(
    an_always_approval_on_a_stored_confirmation_covers_every_instance,
    an_always_decision_survives_a_restart,
    forget_on_one_instance_revokes_for_every_instance,
    an_inline_always_decision_is_kept_in_the_store_and_a_session_one_is_not,
    a_tool_with_sensitive_paths_never_gets_a_stored_approval,
    a_stored_decision_covers_neither_another_caller_nor_another_tool_nor_another_effect,
    a_session_decision_on_a_stored_confirmation_covers_that_session_only,
);

/// An instance on `backing` with the tools of [`with_tools`] and, with `asker`,
/// an inline confirm handler for the in-app agent too.
async fn instance(
    backing: &Backing,
    builder: toolmark::ToolmarkBuilder,
) -> (Toolmark, Arc<AtomicUsize>) {
    let tm = backing.build(builder).await;
    let runs = register_tools(&tm);
    (tm, runs)
}

/// Call `tool` as `caller` on `tm` (deferred) and return its confirm id.
async fn deferred(tm: &Toolmark, tool: &str, caller: Caller) -> String {
    let out = tm.call(tool, json!({}), opts(caller)).await;
    out.confirm_id()
        .unwrap_or_else(|| panic!("needs_confirmation, got {out:?}"))
        .to_owned()
}

async fn listed(tm: &Toolmark) -> Vec<Remembered> {
    tm.remembered_async().await.expect("the store is reachable")
}

async fn an_always_approval_on_a_stored_confirmation_covers_every_instance(s: Store) {
    let Some(backing) = s.open() else { return };
    let (a, runs_a) = instance(&backing, Toolmark::builder()).await;
    let (b, runs_b) = instance(&backing, Toolmark::builder()).await;
    // Called on A, approved on B for always.
    let id = deferred(&a, "mail.send", Caller::InApp).await;
    let out = b
        .confirm_pending(&id, Decision::approve().by("user-7").remember(For::Always))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(runs_b.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Both instances list it, with who made it.
    for tm in [&a, &b] {
        let all = listed(tm).await;
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(
            (all[0].tool.as_str(), all[0].caller, all[0].duration),
            ("mail.send", Caller::InApp, For::Always)
        );
        assert_eq!(all[0].effect, Effect::Consequential);
        assert_eq!(
            all[0].approver,
            Approver::User {
                id: "user-7".into()
            }
        );
    }
    // A's next call runs at once, as its caller, answered by B's decision.
    let mut events = a.events();
    let out = a.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(caller_of(&out), json!("inapp"));
    assert_eq!(runs(&runs_a), 1);
    let log = resolved(&mut events);
    assert!(
        matches!(&log[0].3, Approver::Remembered { id, by } if *id == listed(&a).await[0].id && by.is_person()),
        "{log:?}"
    );
    assert!(a.pending_confirmations_async().await.unwrap().is_empty());
}

async fn an_always_decision_survives_a_restart(s: Store) {
    let Some(backing) = s.open() else { return };
    let (a, _) = instance(&backing, Toolmark::builder()).await;
    let id = deferred(&a, "mail.send", Caller::InApp).await;
    assert!(a
        .confirm_pending(&id, Decision::approve().remember(For::Always))
        .await
        .is_ok());
    let kept = listed(&a).await;
    drop(a);
    // The app restarts: a new instance on the same store.
    let (a2, runs2) = instance(&backing, Toolmark::builder()).await;
    assert_eq!(listed(&a2).await, kept);
    let out = a2.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(runs(&runs2), 1);
}

async fn forget_on_one_instance_revokes_for_every_instance(s: Store) {
    let Some(backing) = s.open() else { return };
    let (a, runs_a) = instance(&backing, Toolmark::builder()).await;
    let (b, _) = instance(&backing, Toolmark::builder()).await;
    let id = deferred(&a, "mail.send", Caller::InApp).await;
    assert!(a
        .confirm_pending(
            &id,
            Decision::reject_with("Never by the agent").remember(For::Always)
        )
        .await
        .refusal()
        .is_some());
    // Remembered rejection: B refuses at once with its reason.
    let out = b.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert_eq!(message(&out), "Never by the agent", "{out:?}");
    let remembered_id = listed(&b).await[0].id.clone();
    // B's local forget does not reach the store; forget_async does.
    assert!(!b.forget(&remembered_id));
    assert!(b.forget_async(&remembered_id).await.unwrap());
    assert!(
        !a.forget_async(&remembered_id).await.unwrap(),
        "gone for A too"
    );
    assert!(listed(&a).await.is_empty());
    // A asks again.
    let out = a.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    assert_eq!(runs(&runs_a), 0);
}

async fn an_inline_always_decision_is_kept_in_the_store_and_a_session_one_is_not(s: Store) {
    let Some(backing) = s.open() else { return };
    let asker = Asker::new();
    let (a, _) = instance(
        &backing,
        Toolmark::builder().confirm_handler(
            asker.handler(|| Decision::approve().by("user-1").remember(For::Always)),
        ),
    )
    .await;
    let session_asker = Asker::new();
    let (b, runs_b) = instance(
        &backing,
        Toolmark::builder().confirm_handler(
            session_asker.handler(|| Decision::approve().by("user-2").remember(For::Session)),
        ),
    )
    .await;
    // An MCP call on A, approved inline for always: B's MCP calls are covered.
    assert!(a
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert!(b
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!((asker.count(), session_asker.count()), (1, 0));
    // A session decision on B stays in B.
    assert!(b
        .call("files.delete", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(session_asker.count(), 1);
    assert_eq!(b.remembered().len(), 1, "B's own session decision");
    assert!(a.remembered().is_empty(), "A keeps none in itself");
    assert_eq!(listed(&a).await.len(), 1, "A sees only the stored one");
    assert_eq!(listed(&b).await.len(), 2);
    assert!(a
        .call("files.delete", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 2, "A asks: B's session decision is not A's");
    assert_eq!(runs(&runs_b), 2);
}

async fn a_tool_with_sensitive_paths_never_gets_a_stored_approval(s: Store) {
    let Some(backing) = s.open() else { return };
    let (a, _) = instance(&backing, Toolmark::builder()).await;
    let (b, _) = instance(&backing, Toolmark::builder()).await;
    let r = Arc::new(AtomicUsize::new(0));
    for tm in [&a, &b] {
        tm.scope("door")
            .register(tool("unlock", Effect::Consequential, &r).sensitive(["pin"]))
            .unwrap();
    }
    let id = a
        .call(
            "door.unlock",
            json!({"pin": SECRETS[0]}),
            opts(Caller::InApp),
        )
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(b
        .confirm_pending(&id, Decision::approve().remember(For::Always))
        .await
        .is_ok());
    assert!(listed(&a).await.is_empty());
    // Another secret: asked again, on either instance.
    for tm in [&a, &b] {
        let out = tm
            .call(
                "door.unlock",
                json!({"pin": SECRETS[1]}),
                opts(Caller::InApp),
            )
            .await;
        assert!(out.confirm_id().is_some(), "{out:?}");
    }
    // A rejection is kept (it holds no secret).
    let id = a.pending_confirmations_async().await.unwrap()[0]
        .confirm_id
        .clone();
    assert!(a
        .confirm_pending(&id, Decision::reject().remember(For::Always))
        .await
        .refusal()
        .is_some());
    let all = listed(&b).await;
    assert_eq!(all.len(), 1);
    assert!(!all[0].approved);
    let text = serde_json::to_string(&all).unwrap();
    assert!(SECRETS.iter().all(|s| !text.contains(s)), "{text}");
}

async fn a_stored_decision_covers_neither_another_caller_nor_another_tool_nor_another_effect(
    s: Store,
) {
    let Some(backing) = s.open() else { return };
    let deferred_test = || Toolmark::builder().confirm_mode(Caller::Test, ConfirmMode::Deferred);
    let (a, _) = instance(&backing, deferred_test()).await;
    let id = deferred(&a, "mail.send", Caller::InApp).await;
    assert!(a
        .confirm_pending(&id, Decision::approve().remember(For::Always))
        .await
        .is_ok());
    // Another caller, another tool: asked.
    let out = a.call("mail.send", json!({}), opts(Caller::Test)).await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    let out = a
        .call("mail.save_draft", json!({}), opts(Caller::InApp))
        .await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    // Another instance has `mail.send` as a destructive tool: not what was approved.
    let b = backing.build(Toolmark::builder()).await;
    let r = Arc::new(AtomicUsize::new(0));
    b.scope("mail")
        .register(tool("send", Effect::Destructive, &r))
        .unwrap();
    let out = b.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    // The same tool, caller and effect: covered.
    assert!(a
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
}

/// The call's session id is sealed with its stored confirmation: a session
/// decision on it covers that session, on the instance that took the answer (a
/// session decision stays in its process), as it does without a store.
async fn a_session_decision_on_a_stored_confirmation_covers_that_session_only(s: Store) {
    let Some(backing) = s.open() else { return };
    let (a, runs_a) = instance(&backing, Toolmark::builder()).await;
    let (b, runs_b) = instance(&backing, Toolmark::builder()).await;
    let out = a
        .call(
            "mail.send",
            json!({}),
            opts(Caller::InApp).session("sess-1"),
        )
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    // Answered on B for the session.
    assert!(b
        .confirm_pending(&id, Decision::approve().remember(For::Session))
        .await
        .is_ok());
    assert_eq!(runs(&runs_b), 1);
    let kept = b.remembered();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].session_bound);
    assert!(a.remembered().is_empty(), "a session decision stays in B");
    // B: that session runs at once; another session, or none, is asked.
    assert!(b
        .call(
            "mail.send",
            json!({}),
            opts(Caller::InApp).session("sess-1")
        )
        .await
        .is_ok());
    assert_eq!(runs(&runs_b), 2);
    for other in [opts(Caller::InApp).session("sess-2"), opts(Caller::InApp)] {
        let out = b.call("mail.send", json!({}), other).await;
        assert!(out.confirm_id().is_some(), "asked: {out:?}");
    }
    // The session ends: its decision goes.
    assert_eq!(b.end_session("sess-1"), 1);
    let out = b
        .call(
            "mail.send",
            json!({}),
            opts(Caller::InApp).session("sess-1"),
        )
        .await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    assert_eq!(runs(&runs_a), 0);
    assert!(listed(&a).await.is_empty(), "nothing in the store");
}
