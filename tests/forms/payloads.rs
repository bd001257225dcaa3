//! The sensitive paths of a form's values, mapped onto each input's shape: a fill's
//! partial input (the patch) and a submit's values.

use serde_json::json;
use toolmark::{Caller, ConfirmQueue, Decision, Effect, Form, FormOptions, Toolmark};

use crate::*;

const SECRETS: [&str; 2] = ["4242424242424242", "737"];

fn guarded_fill(tm: &Toolmark) -> (Form<Signup>, Submitted) {
    let form = signup_form();
    let submitted = Submitted::default();
    tm.register_form(
        &tm.scope("signup"),
        form.clone(),
        FormOptions {
            fill_effect: Effect::Consequential,
            sensitive: vec!["card.cvc".into(), "card.number".into()],
            on_submit: Some(submitted.on_submit()),
            ..Default::default()
        },
    )
    .unwrap();
    (form, submitted)
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} leaks {secret}: {text}");
    }
}

#[tokio::test]
async fn a_deferred_fill_shows_the_patch_and_its_changes_redacted() {
    let tm = tm();
    let (form, _) = guarded_fill(&tm);
    form.set(Signup {
        name: "A".into(),
        ..Default::default()
    });
    let patch = json!({"name": "Ada", "card": {"number": SECRETS[0], "cvc": SECRETS[1]}});
    let out = tm.call("signup.fill", patch, opts(Caller::InApp)).await;
    let v = json_of(&out);
    assert_eq!(v["status"], "needs_confirmation");
    assert_eq!(v["summary"], "Fill in the `signup` form");
    assert_eq!(
        v["changes"],
        json!([
            {"path": "card", "before": null, "after": {"number": "[redacted]", "cvc": "[redacted]"}},
            {"path": "name", "before": "A", "after": "Ada"}
        ])
    );
    let pending = tm.pending_confirmations();
    assert_eq!(
        pending[0].input,
        json!({"name": "Ada", "card": {"number": "[redacted]", "cvc": "[redacted]"}})
    );
    assert_no_secret("needs_confirmation", &public_text(&v));
    assert_no_secret("pending", &public_text(&pending));

    // The approved run still gets the real values.
    let id = out.confirm_id().unwrap().to_owned();
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(form.values().card.unwrap().cvc, SECRETS[1]);
}

#[tokio::test]
async fn an_edited_fill_gets_its_secrets_back_where_the_placeholder_was_left() {
    let tm = tm();
    let (form, _) = guarded_fill(&tm);
    let patch = json!({"name": "Ada", "card": {"number": SECRETS[0], "cvc": SECRETS[1]}});
    let id = tm
        .call("signup.fill", patch, opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let mut edited = tm.pending_confirmations()[0].input.clone();
    edited["name"] = json!("Ada Lovelace");
    let out = tm
        .confirm_pending(&id, Decision::approve_with(edited))
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    let values = form.values();
    assert_eq!(values.name, "Ada Lovelace");
    let card = values.card.unwrap();
    assert_eq!(
        (card.number.as_str(), card.cvc.as_str()),
        (SECRETS[0], SECRETS[1])
    );
}

#[tokio::test]
async fn an_inline_fill_request_is_redacted_at_the_patch_paths() {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    let (form, _) = guarded_fill(&tm);
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let tm = tm.clone();
        async move {
            let patch = json!({"card": {"number": SECRETS[0], "cvc": SECRETS[1]}});
            tm.call("signup.fill", patch, opts(Caller::Mcp)).await
        }
    });
    updates.changed().await.unwrap();
    let req = queue.pending().remove(0);
    assert_eq!(req.tool, "signup.fill");
    assert_eq!(
        req.input,
        json!({"card": {"number": "[redacted]", "cvc": "[redacted]"}})
    );
    assert_no_secret("ConfirmRequest", &public_text(&req));
    queue.approve(&req.confirm_id, None).unwrap();
    let out = call.await.unwrap();
    assert!(out.is_ok(), "{}", json_of(&out));
    assert_no_secret("the fill's output", &public_text(&out));
    assert_eq!(form.values().card.unwrap().number, SECRETS[0]);
}

#[tokio::test]
async fn a_submit_shows_the_values_as_changes_redacted() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    let v = json_of(&out);
    assert_eq!(v["summary"], "Submit the `signup` form");
    assert_eq!(
        v["changes"],
        json!([
            {"path": "age", "before": null, "after": 36},
            {"path": "card", "before": null, "after": {"number": "[redacted]", "cvc": "[redacted]"}},
            {"path": "email", "before": null, "after": "ada@example.com"},
            {"path": "name", "before": null, "after": "Ada"}
        ])
    );
    let pending = tm.pending_confirmations();
    assert_eq!(pending[0].input, json!({}));
    assert_eq!(pending[0].changes, json_changes(&v));
    assert_no_secret("submit confirmation", &public_text(&pending));
}

fn json_changes(v: &serde_json::Value) -> Vec<toolmark::Change> {
    serde_json::from_value(v["changes"].clone()).unwrap()
}

#[tokio::test]
async fn an_inline_submit_request_shows_the_values_redacted() {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    let (form, submitted) = signup(&tm);
    form.set(ada());
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let tm = tm.clone();
        async move { tm.call("signup.submit", json!({}), opts(Caller::Mcp)).await }
    });
    updates.changed().await.unwrap();
    let req = queue.pending().remove(0);
    let card = req.changes.iter().find(|c| c.path == "card").unwrap();
    assert_eq!(
        card.after,
        Some(json!({"number": "[redacted]", "cvc": "[redacted]"}))
    );
    assert_no_secret("ConfirmRequest", &public_text(&req));
    queue.approve(&req.confirm_id, None).unwrap();
    assert!(call.await.unwrap().is_ok());
    assert_eq!(
        submitted.get()[0].1,
        ada(),
        "on_submit gets the real values"
    );
}

/// An invalid edit asks again; the approver is shown what it was shown first (the
/// same changes, though the form changed while it decided, the same summary and
/// input), with the issues.
#[tokio::test]
async fn an_inline_fill_asked_again_shows_what_it_showed_first() {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()
        .unwrap();
    let (form, _) = guarded_fill(&tm);
    form.set(Signup {
        name: "A".into(),
        ..Default::default()
    });
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let tm = tm.clone();
        let patch = json!({"name": "Ada", "card": {"number": SECRETS[0], "cvc": SECRETS[1]}});
        async move { tm.call("signup.fill", patch, opts(Caller::Mcp)).await }
    });
    updates.changed().await.unwrap();
    let first = queue.pending().remove(0);
    assert!(first.issues.is_empty());
    let name = first.changes.iter().find(|c| c.path == "name").unwrap();
    assert_eq!(name.before, Some(json!("A")));
    // The form changes while the user decides; the user's edit is invalid.
    form.set(Signup {
        name: "B".into(),
        ..Default::default()
    });
    queue
        .approve(&first.confirm_id, Some(json!({"name": 42})))
        .unwrap();
    let again = loop {
        updates.changed().await.unwrap();
        if let Some(req) = queue.pending().first() {
            break req.clone();
        }
    };
    assert_eq!(again.confirm_id, first.confirm_id);
    assert_eq!(again.issues[0].path, "name");
    assert_eq!(again.changes, first.changes, "the changes first shown");
    assert_eq!(again.summary, first.summary);
    assert_eq!(again.input, first.input);
    assert_no_secret("ConfirmRequest asked again", &public_text(&again));
    queue.approve(&again.confirm_id, None).unwrap();
    assert!(call.await.unwrap().is_ok());
    assert_eq!(form.values().name, "Ada");
}

#[tokio::test]
async fn no_event_carries_a_form_secret() {
    let tm = tm();
    let mut events = tm.events();
    let (form, _) = guarded_fill(&tm);
    let patch =
        json!({"name": "Ada", "email": "a@b.c", "card": {"number": SECRETS[0], "cvc": SECRETS[1]}});
    let id = tm
        .call("signup.fill", patch, opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(form.values().card.unwrap().cvc, SECRETS[1]);
    let mut seen = 0;
    while let Ok(event) = events.try_recv() {
        assert_no_secret("an event", &public_text(&event));
        seen += 1;
    }
    assert!(seen > 4, "events were emitted ({seen})");
}
