//! A "person required" rule: the calling client can never approve, an app answer
//! counts only with an identity, a remembered client approval does not cover it.

use serde_json::json;
use toolmark::{Approver, Caller, Decision, Effect, For, Policy, Rule, Toolmark};

use toolmark::policy::answering;

use crate::*;

on_every_store!(a_deferred_approval_without_an_identity_leaves_it_open,);

fn person_policy() -> Policy {
    Policy::new().rule(Rule::require_person("payments").scope("pay"))
}

#[tokio::test]
async fn a_client_approval_is_refused_and_the_client_is_not_even_asked() {
    // No app handler: only the client could answer, and it may not.
    let (tm, r) = with_tools(Toolmark::builder().policy(person_policy()));
    let client = Asker::new();
    let out = tm
        .call(
            "pay.send",
            json!({}),
            opts(Caller::Mcp).confirm_handler(client.handler(|| Decision::approve().by("user-1"))),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{out:?}");
    assert!(message(&out).contains("payments"), "{}", message(&out));
    assert_eq!(client.count(), 0);
    assert_eq!(runs(&r), 0);
    // The same call of a tool outside the rule is the client's to approve.
    let out = tm
        .call(
            "mail.send",
            json!({}),
            opts(Caller::Mcp).confirm_handler(client.handler(approve)),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(client.count(), 1);
}

#[tokio::test]
async fn the_app_s_person_is_asked_instead_of_the_client() {
    let app = Asker::new();
    let (tm, r) = with_tools(
        Toolmark::builder()
            .policy(person_policy())
            .confirm_handler(app.handler(|| Decision::approve().by("user-1"))),
    );
    let mut events = tm.events();
    let client = Asker::new();
    let out = tm
        .call(
            "pay.send",
            json!({}),
            opts(Caller::Mcp).confirm_handler(client.handler(approve)),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!((app.count(), client.count(), runs(&r)), (1, 0, 1));
    assert_eq!(
        resolved(&mut events)[0].3,
        Approver::User {
            id: "user-1".into()
        }
    );
}

#[tokio::test]
async fn an_app_approval_without_an_identity_is_refused() {
    let (tm, r) = with_tools(
        Toolmark::builder()
            .policy(person_policy())
            .confirm_handler(|_req| async { Decision::approve() }),
    );
    let out = tm.call("pay.send", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{out:?}");
    assert!(message(&out).contains("Decision::by"));
    assert_eq!(runs(&r), 0);
}

async fn a_deferred_approval_without_an_identity_leaves_it_open(s: Store) {
    let Some((tm, r)) = with_tools_on(s, Toolmark::builder().policy(person_policy())).await else {
        return;
    };
    let id = tm
        .call("pay.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::NotAllowed), "{out:?}");
    assert_eq!(tm.pending_confirmations_async().await.unwrap().len(), 1);
    assert_eq!(runs(&r), 0);
    let out = tm
        .confirm_pending(&id, Decision::approve().by("user-1"))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(runs(&r), 1);
    // A rejection needs no identity.
    let id = tm
        .call("pay.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert_eq!(
        code(&tm.confirm_pending(&id, Decision::reject()).await),
        Some(RefusalCode::Rejected)
    );
}

#[tokio::test]
async fn a_remembered_client_approval_does_not_cover_a_person_only_call() {
    // The tool first needs no person; the client approves it for its session
    // (the app lets clients' decisions cover their session). Then it is
    // registered again as destructive, which the person rule covers.
    let (tm, r) =
        with_tools(Toolmark::builder().client_session_decisions(true).policy(
            Policy::new().rule(Rule::require_person("destroy").effect(Effect::Destructive)),
        ));
    let scope = tm.scope("vault");
    scope
        .register(tool("wipe", Effect::Consequential, &r))
        .unwrap();
    let client = Asker::new();
    let call = || {
        opts(Caller::Mcp)
            .session("client-1")
            .confirm_handler(client.handler(|| Decision::approve().remember(For::Session)))
    };
    assert!(tm.call("vault.wipe", json!({}), call()).await.is_ok());
    assert!(tm.call("vault.wipe", json!({}), call()).await.is_ok());
    assert_eq!(client.count(), 1);
    assert_eq!(
        tm.remembered()[0].approver,
        Approver::Client {
            caller: Caller::Mcp
        }
    );
    scope.dispose();
    let scope = tm.scope("vault");
    scope
        .register(tool("wipe", Effect::Destructive, &r))
        .unwrap();
    let out = tm.call("vault.wipe", json!({}), call()).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{out:?}");
    assert_eq!(runs(&r), 2);
}

#[tokio::test]
async fn a_remembered_person_approval_covers_a_person_only_call() {
    let (tm, r) = with_tools(Toolmark::builder().policy(person_policy()).confirm_handler(
        answering(|_req| async { Decision::approve().by("user-1").remember(For::Session) }),
    ));
    let mut events = tm.events();
    assert!(tm
        .call("pay.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert!(tm
        .call("pay.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(runs(&r), 2);
    let log = resolved(&mut events);
    assert!(log[1].3.is_person(), "{:?}", log[1].3);
    assert!(matches!(log[1].3, Approver::Remembered { .. }));
}
