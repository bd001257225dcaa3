//! Who decided, in every `confirmation_resolved`: a user (with the app's id), the
//! app without an id, the calling client, a policy rule, a remembered decision.

use serde_json::json;
use toolmark::{
    Approver, Ask, Caller, ConfirmQueue, Decision, Effect, Event, Policy, Rule, ToolSpec, Toolmark,
};

use toolmark::policy::answering;

use crate::*;

on_every_store!(confirm_pending_records_the_user_it_is_given,);

#[tokio::test]
async fn the_app_handler_answer_is_the_user_it_names_or_the_app() {
    let asker = Asker::new();
    let (tm, _) = with_tools(inline_inapp(
        Toolmark::builder().confirm_handler(asker.handler(|| Decision::approve().by("user-42"))),
    ));
    let mut events = tm.events();
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    assert_eq!(
        resolved(&mut events)[0].3,
        Approver::User {
            id: "user-42".into()
        }
    );

    let (tm, _) =
        with_tools(Toolmark::builder().confirm_handler(|_req| async { Decision::approve() }));
    let mut events = tm.events();
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(resolved(&mut events)[0].3, Approver::App);
}

async fn confirm_pending_records_the_user_it_is_given(s: Store) {
    let Some((tm, _)) = with_tools_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut events = tm.events();
    let id = tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(tm
        .confirm_pending(&id, Decision::approve().by("u-1"))
        .await
        .is_ok());
    let id = tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    tm.confirm_pending(&id, Decision::reject_with("no").by("u-2"))
        .await;
    let id = tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    tm.confirm_pending(&id, Decision::approve()).await;
    let log = resolved(&mut events);
    assert_eq!(log[0].3, Approver::User { id: "u-1".into() });
    assert_eq!(
        (log[1].1, log[1].3.clone()),
        (false, Approver::User { id: "u-2".into() })
    );
    assert_eq!(log[2].3, Approver::App);
}

#[tokio::test]
async fn a_call_s_own_handler_is_the_client_whatever_identity_it_claims() {
    let app = Asker::new();
    let (tm, _) = with_tools(Toolmark::builder().confirm_handler(app.handler(approve)));
    let mut events = tm.events();
    let client = Asker::new();
    let out = tm
        .call(
            "mail.send",
            json!({}),
            opts(Caller::Mcp).confirm_handler(client.handler(|| Decision::approve().by("admin"))),
        )
        .await;
    assert!(out.is_ok());
    assert_eq!(client.count(), 1);
    assert_eq!(app.count(), 0);
    assert_eq!(
        resolved(&mut events)[0].3,
        Approver::Client {
            caller: Caller::Mcp
        }
    );
}

#[tokio::test]
async fn policy_decisions_name_their_rule_and_have_no_request_before_them() {
    let (tm, _) = with_tools(
        Toolmark::builder().policy(
            Policy::new()
                .rule(Rule::allow("drafts").tool("mail.save_draft"))
                .rule(Rule::deny("no-deletes", "Delete by hand").effect(Effect::Destructive)),
        ),
    );
    let mut events = tm.events();
    tm.call("mail.save_draft", json!({}), opts(Caller::InApp))
        .await;
    tm.call("files.delete", json!({}), opts(Caller::InApp))
        .await;
    let mut requested = 0;
    let mut log = Vec::new();
    while let Ok(e) = events.try_recv() {
        match e {
            Event::ConfirmationRequested { .. } => requested += 1,
            Event::ConfirmationResolved {
                confirm_id,
                tool,
                approved,
                reason,
                approver,
                edited_paths,
            } => {
                assert_eq!(confirm_id.len(), 32);
                assert!(edited_paths.is_empty());
                log.push((tool, approved, reason, approver));
            }
            _ => {}
        }
    }
    assert_eq!(requested, 0);
    assert_eq!(
        log,
        vec![
            (
                "mail.save_draft".to_owned(),
                true,
                None,
                Approver::Policy {
                    rule: "drafts".into()
                }
            ),
            (
                "files.delete".to_owned(),
                false,
                Some("Delete by hand".to_owned()),
                Approver::Policy {
                    rule: "no-deletes".into()
                }
            ),
        ]
    );
}

#[tokio::test]
async fn the_queue_answers_with_an_identity() {
    let queue = ConfirmQueue::new();
    let (tm, r) = with_tools(Toolmark::builder().confirm_handler(queue.handler()));
    let mut events = tm.events();
    let call = {
        let tm = tm.clone();
        tokio::spawn(async move { tm.call("mail.send", json!({}), opts(Caller::Mcp)).await })
    };
    let mut updates = queue.subscribe();
    let id = loop {
        if let Some(req) = queue.pending().first() {
            break req.confirm_id.clone();
        }
        updates.changed().await.unwrap();
    };
    queue.answer(&id, Decision::approve().by("ops-9")).unwrap();
    assert!(call.await.unwrap().is_ok());
    assert_eq!(runs(&r), 1);
    assert_eq!(
        resolved(&mut events)[0].3,
        Approver::User { id: "ops-9".into() }
    );
    assert!(queue.answer("nope", Decision::approve()).is_err());
}

#[tokio::test]
async fn ctx_confirm_answers_are_attributed() {
    let tm = Toolmark::builder()
        .confirm_handler(answering(|_req| async {
            Decision::approve()
                .by("u-5")
                .remember(toolmark::For::Always)
        }))
        .build()
        .unwrap();
    tm.scope("a")
        .register(
            ToolSpec::new("w", "W")
                .effect(Effect::Write)
                .handler(|ctx, _| async move {
                    Ok(json!(ctx.confirm(Ask::new("Sure?")).await.approved))
                }),
        )
        .unwrap();
    let mut events = tm.events();
    let out = tm.call("a.w", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(out.output(), Some(&json!(true)));
    assert_eq!(
        resolved(&mut events)[0].3,
        Approver::User { id: "u-5".into() }
    );
}

#[tokio::test]
async fn the_audit_carries_no_sensitive_value() {
    let tm = Toolmark::builder()
        .confirm_handler(answering(|_req| async {
            Decision::approve_with(json!({"pin": "9876"})).by("u")
        }))
        .policy(Policy::new().rule(Rule::ask("doors").scope("door")))
        .build()
        .unwrap();
    let r = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tm.scope("door")
        .register(tool("unlock", Effect::Consequential, &r).sensitive(["pin"]))
        .unwrap();
    let mut events = tm.events();
    assert!(tm
        .call("door.unlock", json!({"pin": "1234"}), opts(Caller::Mcp))
        .await
        .is_ok());
    let mut seen = 0;
    while let Ok(e) = events.try_recv() {
        let text = format!("{} {e:?}", serde_json::to_string(&e).unwrap());
        assert!(!text.contains("1234") && !text.contains("9876"), "{text}");
        if let Event::ConfirmationResolved {
            edited_paths,
            approver,
            ..
        } = e
        {
            assert_eq!(edited_paths, vec!["pin".to_owned()]);
            assert_eq!(approver, Approver::User { id: "u".into() });
            seen += 1;
        }
    }
    assert_eq!(seen, 1);
}

#[test]
fn approvers_serialize_as_tagged_objects() {
    let remembered = Approver::Remembered {
        id: "r1".into(),
        by: Box::new(Approver::Client {
            caller: Caller::Mcp,
        }),
    };
    assert_eq!(
        serde_json::to_value(&remembered).unwrap(),
        json!({"kind": "remembered", "id": "r1", "by": {"kind": "client", "caller": "mcp"}})
    );
    assert_eq!(
        serde_json::to_value(Approver::App).unwrap(),
        json!({"kind": "app"})
    );
    assert!(!remembered.is_person());
    assert!(Approver::Remembered {
        id: "r".into(),
        by: Box::new(Approver::User { id: "u".into() })
    }
    .is_person());
    assert!(!Approver::App.is_person());
    assert!(!Approver::Policy { rule: "x".into() }.is_person());
}
