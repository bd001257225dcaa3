//! Remembered decisions: session vs always, what they never cover, revocation,
//! and the sensitive-value rule.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::{Approver, Caller, Decision, Effect, For, ToolSpec, Toolmark};

use toolmark::policy::answering;

use crate::*;

on_every_store!(
    an_always_decision_covers_every_session_and_outlives_end_session,
    a_deferred_approval_remembered_answers_later_calls_at_once,
    a_newer_decision_replaces_the_older_one,
    an_approval_of_a_tool_with_sensitive_paths_is_never_remembered,
    a_rejection_of_a_tool_with_sensitive_paths_is_remembered,
);

/// A toolmark whose handler approves with `remember` the first time and rejects
/// afterwards (so a second run proves the remembered decision answered).
fn once(remember: For) -> (Toolmark, Arc<AtomicUsize>, Asker) {
    let asker = Asker::new();
    let first = Arc::new(AtomicUsize::new(0));
    let (tm, r) = with_tools(Toolmark::builder().confirm_handler(asker.handler(move || {
        if first.fetch_add(1, Ordering::SeqCst) == 0 {
            Decision::approve().by("user-1").remember(remember)
        } else {
            Decision::reject_with("asked again").into()
        }
    })));
    (tm, r, asker)
}

/// [`once`] on a fresh `store`, or `None`: skip.
async fn once_on(s: Store, remember: For) -> Option<(Toolmark, Arc<AtomicUsize>, Asker)> {
    let asker = Asker::new();
    let first = Arc::new(AtomicUsize::new(0));
    let tm = s
        .build(Toolmark::builder().confirm_handler(asker.handler(move || {
            if first.fetch_add(1, Ordering::SeqCst) == 0 {
                Decision::approve().by("user-1").remember(remember)
            } else {
                Decision::reject_with("asked again").into()
            }
        })))
        .await?;
    let r = register_tools(&tm);
    Some((tm, r, asker))
}

fn session(caller: Caller, id: &str) -> toolmark::CallOptions {
    opts(caller).session(id)
}

#[tokio::test]
async fn a_session_decision_covers_that_session_until_it_ends() {
    let (tm, r, asker) = once(For::Session);
    assert!(tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s1"))
        .await
        .is_ok());
    assert!(tm
        .call("mail.send", json!({"to": "b"}), session(Caller::Mcp, "s1"))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    assert_eq!(runs(&r), 2);
    // Another session, and calls without a session, are asked.
    let out = tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s2"))
        .await;
    assert_eq!(message(&out), "asked again");
    let out = tm.call("mail.send", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(message(&out), "asked again");
    assert_eq!(asker.count(), 3);
    // The session ends: its decisions go.
    assert_eq!(tm.end_session("s2"), 0);
    assert_eq!(tm.end_session("s1"), 1);
    assert!(tm.remembered().is_empty());
    let out = tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s1"))
        .await;
    assert_eq!(message(&out), "asked again");
}

#[tokio::test]
async fn a_session_decision_without_a_session_id_covers_calls_without_one() {
    let (tm, _, asker) = once(For::Session);
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    let listed = tm.remembered();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].session_bound);
    let out = tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s1"))
        .await;
    assert_eq!(message(&out), "asked again");
}

async fn an_always_decision_covers_every_session_and_outlives_end_session(s: Store) {
    let Some((tm, r, asker)) = once_on(s, For::Always).await else {
        return;
    };
    assert!(tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s1"))
        .await
        .is_ok());
    assert!(tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s2"))
        .await
        .is_ok());
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(tm.end_session("s1"), 0);
    assert!(tm
        .call("mail.send", json!({}), session(Caller::Mcp, "s1"))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    assert_eq!(runs(&r), 4);
}

#[tokio::test]
async fn a_remembered_decision_never_covers_another_tool_or_caller() {
    let (tm, r, asker) = once(For::Always);
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    let out = tm
        .call("mail.save_draft", json!({}), opts(Caller::Mcp))
        .await;
    assert_eq!(message(&out), "asked again");
    let out = tm.call("mail.send", json!({}), opts(Caller::Test)).await;
    assert_eq!(message(&out), "asked again");
    assert_eq!(asker.count(), 3);
    assert_eq!(runs(&r), 1);
}

#[tokio::test]
async fn forget_revokes_a_remembered_decision() {
    let (tm, _, asker) = once(For::Always);
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    let listed = tm.remembered();
    assert_eq!(listed.len(), 1);
    let id = listed[0].id.clone();
    assert!(tm.forget(&id));
    assert!(!tm.forget(&id));
    assert!(tm.remembered().is_empty());
    let out = tm.call("mail.send", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(message(&out), "asked again");
    assert_eq!(asker.count(), 2);
}

#[tokio::test]
async fn the_listing_says_what_was_remembered_by_whom_and_when() {
    let clock = ManualClock::new();
    let start = toolmark::clock::Clock::now(&clock);
    let asker = Asker::new();
    let (tm, _) = with_tools(Toolmark::builder().clock(clock.clone()).confirm_handler(
        asker.handler(|| Decision::approve().by("user-7").remember(For::Session)),
    ));
    clock.advance(std::time::Duration::from_secs(30));
    assert!(tm
        .call(
            "mail.send",
            json!({}),
            session(Caller::Mcp, "secret-session-id")
        )
        .await
        .is_ok());
    let r = &tm.remembered()[0];
    assert_eq!(r.tool, "mail.send");
    assert_eq!(r.caller, Caller::Mcp);
    assert_eq!(r.duration, For::Session);
    assert!(r.session_bound);
    assert!(r.approved);
    assert_eq!(
        r.approver,
        Approver::User {
            id: "user-7".into()
        }
    );
    assert_eq!(r.created_at, start + std::time::Duration::from_secs(30));
    // The session id is neither listed nor in Debug.
    let shown = format!("{} {r:?}", serde_json::to_string(r).unwrap());
    assert!(!shown.contains("secret-session-id"), "{shown}");
}

async fn a_deferred_approval_remembered_answers_later_calls_at_once(s: Store) {
    let Some((tm, r)) = with_tools_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut events = tm.events();
    let out = tm.call("mail.send", json!({}), opts(Caller::InApp)).await;
    let id = out.confirm_id().unwrap().to_owned();
    let approved = tm
        .confirm_pending(&id, Decision::approve().by("user-3").remember(For::Always))
        .await;
    assert!(approved.is_ok(), "{approved:?}");
    // The next call runs now, as the in-app caller, with no confirmation.
    let out = tm.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(caller_of(&out), json!("inapp"));
    assert!(tm.pending_confirmations_async().await.unwrap().is_empty());
    assert_eq!(runs(&r), 2);
    let log = resolved(&mut events);
    assert_eq!(
        log[0].3,
        Approver::User {
            id: "user-3".into()
        }
    );
    match &log[1].3 {
        Approver::Remembered { id, by } => {
            assert_eq!(id, &tm.remembered_async().await.unwrap()[0].id);
            assert_eq!(
                **by,
                Approver::User {
                    id: "user-3".into()
                }
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_remembered_rejection_refuses_later_calls_with_its_reason() {
    let asker = Asker::new();
    let (tm, r) = with_tools(Toolmark::builder().confirm_handler(
        asker.handler(|| Decision::reject_with("Not this week").remember(For::Session)),
    ));
    for _ in 0..2 {
        let out = tm.call("mail.send", json!({}), opts(Caller::Mcp)).await;
        assert_eq!(code(&out), Some(RefusalCode::Rejected));
        assert_eq!(message(&out), "Not this week");
    }
    assert_eq!(asker.count(), 1);
    assert_eq!(runs(&r), 0);
    assert!(!tm.remembered()[0].approved);
}

async fn a_newer_decision_replaces_the_older_one(s: Store) {
    let Some((tm, _)) = with_tools_on(s, Toolmark::builder()).await else {
        return;
    };
    // Two calls pending at once, answered one after the other.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = tm.call("mail.send", json!({}), opts(Caller::InApp)).await;
        ids.push(out.confirm_id().unwrap().to_owned());
    }
    for (id, decision) in ids.iter().zip([
        Decision::approve(),
        Decision::reject_with("changed my mind"),
    ]) {
        tm.confirm_pending(id, decision.remember(For::Always)).await;
    }
    let listed = tm.remembered_async().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].approved);
    let out = tm.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert_eq!(message(&out), "changed my mind");
}

#[tokio::test]
async fn a_policy_deny_or_allow_is_never_overridden_by_a_remembered_decision() {
    use toolmark::{Policy, Rule};
    let (tm, r) = with_tools(Toolmark::builder().policy(
        Policy::new().rule(Rule::deny("no-drafts", "Drafts are off").tool("mail.save_draft")),
    ));
    // Remember an approval of mail.send, then check a deny of another tool holds,
    // and that remembered decisions do not leak across tools through the policy.
    let id = tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    tm.confirm_pending(&id, Decision::approve().remember(For::Always))
        .await;
    let out = tm
        .call("mail.save_draft", json!({}), opts(Caller::InApp))
        .await;
    assert_eq!(message(&out), "Drafts are off");
    assert_eq!(runs(&r), 1);
}

/// A tool with a sensitive `pin`.
fn pin_tool(r: &Arc<AtomicUsize>) -> ToolSpec {
    tool("unlock", Effect::Consequential, r).sensitive(["pin"])
}

async fn an_approval_of_a_tool_with_sensitive_paths_is_never_remembered(s: Store) {
    let asker = Asker::new();
    let Some(tm) = s
        .build(
            Toolmark::builder()
                .confirm_handler(asker.handler(|| Decision::approve().remember(For::Always))),
        )
        .await
    else {
        return;
    };
    let r = Arc::new(AtomicUsize::new(0));
    tm.scope("door").register(pin_tool(&r)).unwrap();
    let mut events = tm.events();
    assert!(tm
        .call("door.unlock", json!({"pin": "1111"}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert!(tm.remembered_async().await.unwrap().is_empty());
    // A later call with another secret is asked: the approver never saw either.
    assert!(tm
        .call("door.unlock", json!({"pin": "2222"}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 2);
    assert_eq!(runs(&r), 2);
    while let Ok(e) = events.try_recv() {
        assert!(
            !matches!(e, toolmark::Event::DecisionRemembered { .. }),
            "{e:?}"
        );
    }
    // Deferred alike.
    let id = tm
        .call(
            "door.unlock",
            json!({"pin": "PIN-7310"}),
            opts(Caller::InApp),
        )
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(tm
        .confirm_pending(&id, Decision::approve().remember(For::Session))
        .await
        .is_ok());
    assert!(tm
        .call("door.unlock", json!({"pin": "4444"}), opts(Caller::InApp))
        .await
        .confirm_id()
        .is_some());
}

async fn a_rejection_of_a_tool_with_sensitive_paths_is_remembered(s: Store) {
    let asker = Asker::new();
    let Some(tm) = s
        .build(
            Toolmark::builder()
                .confirm_handler(asker.handler(|| Decision::reject().remember(For::Always))),
        )
        .await
    else {
        return;
    };
    let r = Arc::new(AtomicUsize::new(0));
    tm.scope("door").register(pin_tool(&r)).unwrap();
    for pin in ["PIN-7310", "2222"] {
        let out = tm
            .call("door.unlock", json!({"pin": pin}), opts(Caller::Mcp))
            .await;
        assert_eq!(code(&out), Some(RefusalCode::Rejected));
    }
    assert_eq!(asker.count(), 1);
    assert_eq!(runs(&r), 0);
}

#[tokio::test]
async fn a_remembered_decision_emits_decision_remembered_without_the_session_id() {
    let (tm, _, _) = once(For::Session);
    let mut events = tm.events();
    assert!(tm
        .call("mail.send", json!({}), session(Caller::Mcp, "sess-xyz"))
        .await
        .is_ok());
    let mut found = false;
    while let Ok(e) = events.try_recv() {
        let text = serde_json::to_string(&e).unwrap();
        assert!(!text.contains("sess-xyz"), "{text}");
        if let toolmark::Event::DecisionRemembered {
            tool,
            caller,
            duration,
            approved,
            remember_id,
        } = e
        {
            assert_eq!(
                (tool.as_str(), caller, duration, approved),
                ("mail.send", Caller::Mcp, For::Session, true)
            );
            assert_eq!(remember_id, tm.remembered()[0].id);
            found = true;
        }
    }
    assert!(found);
}

#[tokio::test]
async fn at_most_4096_are_kept_and_the_oldest_goes_first() {
    let (tm, _) = with_tools(Toolmark::builder().confirm_handler(answering(|_req| async {
        Decision::approve().remember(For::Session)
    })));
    for i in 0..4097 {
        let out = tm
            .call(
                "mail.send",
                json!({}),
                session(Caller::Mcp, &format!("s{i}")),
            )
            .await;
        assert!(out.is_ok());
    }
    assert_eq!(tm.remembered().len(), 4096);
    // The first session's decision was dropped, the second's is kept.
    assert_eq!(tm.end_session("s0"), 0);
    assert_eq!(tm.end_session("s1"), 1);
}
