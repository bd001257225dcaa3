//! `<scope>.submit`: runs `on_submit` with the current values; consequential by
//! default; a deferred submit approved after the form changed is `stale`.

use serde_json::json;
use toolmark::{
    BridgeMessage, Caller, Decision, Effect, Form, FormOptions, OnSubmit, RefusalCode, ToolError,
};

use crate::*;

// The deferred submits run on every confirmation store (built-in, MemoryStore,
// Redis): `stale` is a seed rule a stored confirmation keeps.
on_every_store!(
    an_agent_submit_needs_confirmation_and_runs_as_human_once_approved,
    a_deferred_submit_approved_after_the_values_changed_is_stale,
    a_deferred_submit_approved_with_the_values_unchanged_runs,
    an_agent_fill_after_the_request_makes_the_submit_stale_too,
    any_change_counts_even_one_that_restores_the_same_values,
    a_rejected_submit_is_rejected_not_stale,
);

#[tokio::test]
async fn a_human_submit_runs_on_submit_with_the_current_values() {
    let tm = tm();
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::Human))
        .await;
    assert_eq!(out.output(), Some(&json!({"welcome": "Ada"})));
    assert_eq!(submitted.get(), [(Caller::Human, ada())]);
}

async fn an_agent_submit_needs_confirmation_and_runs_as_human_once_approved(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().expect("needs_confirmation").to_owned();
    assert!(
        submitted.get().is_empty(),
        "nothing submitted before approval"
    );
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(done.output(), Some(&json!({"welcome": "Ada"})));
    assert_eq!(submitted.get(), [(Caller::Human, ada())]);
}

async fn a_deferred_submit_approved_after_the_values_changed_is_stale(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let mut bridge = tm.bridge();
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    // The user edits the form while the confirmation is open.
    form.update(|s| s.email = "ada@lovelace.org".into());
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Stale));
    assert_eq!(
        out.refusal().unwrap().message,
        "Form changed since confirmation was requested"
    );
    assert!(submitted.get().is_empty(), "on_submit did not run");
    // The agent hears it through the bridge, and the id is used up.
    let BridgeMessage::Confirmed {
        confirm_id,
        outcome,
        ..
    } = bridge.recv().await.unwrap()
    else {
        panic!("a confirmed message")
    };
    assert_eq!(
        (confirm_id.as_str(), outcome.refusal_code()),
        (id.as_str(), Some(RefusalCode::Stale))
    );
    let again = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&again), Some(RefusalCode::ConfirmationExpired));
    assert!(tm.pending_confirmations_async().await.unwrap().is_empty());
}

async fn a_deferred_submit_approved_with_the_values_unchanged_runs(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    // Another form changing does not matter.
    Form::new(0_u8).set(1);
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(out.is_ok(), "{}", json_of(&out));
    assert_eq!(submitted.get(), [(Caller::Human, ada())]);
}

async fn an_agent_fill_after_the_request_makes_the_submit_stale_too(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(tm
        .call("signup.fill", json!({"age": 99}), opts(Caller::InApp))
        .await
        .is_ok());
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Stale));
    assert!(submitted.get().is_empty());
}

async fn any_change_counts_even_one_that_restores_the_same_values(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    form.set(ada());
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Stale));
    assert!(submitted.get().is_empty());
}

async fn a_rejected_submit_is_rejected_not_stale(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    form.set(Signup::default());
    let out = tm
        .confirm_pending(&id, Decision::reject_with("not now"))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert_eq!(out.refusal().unwrap().message, "not now");
    assert!(submitted.get().is_empty());
}

#[tokio::test]
async fn an_incomplete_form_is_refused_invalid_before_any_confirmation() {
    let tm = tm();
    let (form, submitted) = signup(&tm);
    form.set(Signup {
        name: "Ada".into(),
        ..Default::default()
    });
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(
        issues(&out),
        [("email".to_owned(), "must be an email address".to_owned())]
    );
    assert!(tm.pending_confirmations().is_empty());
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::Human))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert!(submitted.get().is_empty());
}

#[tokio::test]
async fn the_submit_input_is_the_empty_object() {
    let tm = tm();
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.submit", json!({"name": "Eve"}), opts(Caller::Human))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert!(tm
        .call("signup.submit", json!(null), opts(Caller::Human))
        .await
        .is_ok());
    assert_eq!(submitted.get().len(), 1);
}

#[tokio::test]
async fn the_submit_effect_option_applies() {
    let tm = tm();
    let submitted = Submitted::default();
    let form = Form::new(ada());
    tm.register_form(
        &tm.scope("note"),
        form,
        FormOptions {
            submit_effect: Effect::Write,
            on_submit: Some(submitted.on_submit()),
            ..Default::default()
        },
    )
    .unwrap();
    let out = tm.call("note.submit", json!({}), opts(Caller::InApp)).await;
    assert!(
        out.is_ok(),
        "no confirmation for a write submit: {}",
        json_of(&out)
    );
    assert_eq!(submitted.get(), [(Caller::InApp, ada())]);
}

#[tokio::test]
async fn an_inline_submit_is_approved_by_the_handler_and_runs() {
    let tm = toolmark::testing::test_toolmark();
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let out = tm.call("signup.submit", json!({}), opts(Caller::Mcp)).await;
    assert!(out.is_ok(), "{}", json_of(&out));
    assert_eq!(submitted.get(), [(Caller::Mcp, ada())]);
}

#[tokio::test]
async fn a_failing_on_submit_is_an_error_with_the_secrets_scrubbed() {
    let tm = tm();
    let form = Form::new(ada());
    tm.register_form(
        &tm.scope("pay"),
        form,
        FormOptions {
            sensitive: vec!["card.number".into()],
            on_submit: Some(OnSubmit::new(|_ctx, values: Signup| async move {
                let number = values.card.map(|c| c.number).unwrap_or_default();
                Err::<(), _>(ToolError::new(format!("card {number} was declined")))
            })),
            ..Default::default()
        },
    )
    .unwrap();
    let out = tm.call("pay.submit", json!({}), opts(Caller::Human)).await;
    assert_eq!(out.status(), "error");
    let text = json_of(&out).to_string();
    assert!(text.contains("card [redacted] was declined"), "{text}");
    assert!(!text.contains("4242424242424242"), "{text}");
}
