//! Restoring secrets into an approver's edited input (deferred and inline).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{CallOptions, Caller, Decision, RefusalCode};

use crate::*;

const REENTER: &str = "Re-enter sensitive field";

on_every_store!(
    the_pending_list_shows_every_secret_redacted,
    an_approval_sending_the_public_input_back_restores_every_secret,
    a_placeholder_left_at_a_sensitive_path_gets_its_real_value_before_validation,
    a_sensitive_value_the_approver_changed_keeps_the_new_value,
    a_secret_is_not_restored_when_the_array_length_changed,
    a_secret_is_not_restored_onto_a_reordered_row,
    a_secret_is_not_restored_onto_an_edited_row,
    a_placeholder_under_a_restructured_key_is_refused,
    a_placeholder_outside_the_sensitive_paths_is_refused,
);

/// Call `pay` deferred on a fresh `s` and approve it with `edit`; `None`: skip.
async fn approve_deferred(
    s: Store,
    edit: Value,
) -> Option<(toolmark::Outcome, Vec<Value>, toolmark::Toolmark, String)> {
    let seen = seen();
    let tm = deferred_on(s, &seen).await?;
    let id = tm
        .call("pay", input(), inapp())
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let out = tm.confirm_pending(&id, Decision::approve_with(edit)).await;
    let ran = seen.lock().unwrap().clone();
    Some((out, ran, tm, id))
}

async fn the_pending_list_shows_every_secret_redacted(s: Store) {
    let seen = seen();
    let Some(tm) = deferred_on(s, &seen).await else {
        return;
    };
    let out = tm.call("pay", input(), inapp()).await;
    let id = out.confirm_id().unwrap().to_owned();
    assert_eq!(json_of(&out).matches("pin-9876").count(), 0, "{out:?}");
    let pending = tm.pending_confirmations_async().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].input, redacted_input());
    assert_eq!(pending[0].summary, "Pay \"Robotics\" with pin [redacted]");
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(
        seen.lock().unwrap()[0],
        input(),
        "the run gets every secret"
    );
}

async fn an_approval_sending_the_public_input_back_restores_every_secret(s: Store) {
    let Some((out, ran, _, _)) = approve_deferred(s, redacted_input()).await else {
        return;
    };
    assert!(out.is_ok());
    assert_eq!(ran[0], input());
}

async fn a_placeholder_left_at_a_sensitive_path_gets_its_real_value_before_validation(s: Store) {
    let mut edit = redacted_input();
    edit["title"] = json!("Chess");
    let Some((out, ran, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert!(out.is_ok());
    let mut expected = input();
    expected["title"] = json!("Chess");
    assert_eq!(ran[0], expected);
}

async fn a_sensitive_value_the_approver_changed_keeps_the_new_value(s: Store) {
    let mut edit = redacted_input();
    edit["cards"][1]["cvc"] = json!("999");
    edit["pin"] = json!("0000");
    let Some((_, ran, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(ran[0]["cards"][1]["cvc"], "999");
    assert_eq!(ran[0]["cards"][0]["cvc"], "cvc-111");
    assert_eq!(ran[0]["pin"], "0000");
}

async fn a_secret_is_not_restored_when_the_array_length_changed(s: Store) {
    let mut edit = redacted_input();
    edit["cards"].as_array_mut().unwrap().remove(0);
    let Some((out, ran, tm, id)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    assert_eq!(
        issues_of(&out),
        [("cards.0.cvc".to_owned(), REENTER.to_owned())]
    );
    assert!(ran.is_empty());
    // The approver re-enters the value and approves again: the id is still good.
    let mut fixed = redacted_input();
    fixed["cards"].as_array_mut().unwrap().remove(0);
    fixed["cards"][0]["cvc"] = json!("cvc-222");
    assert!(tm
        .confirm_pending(&id, Decision::approve_with(fixed))
        .await
        .is_ok());
}

async fn a_secret_is_not_restored_onto_a_reordered_row(s: Store) {
    let mut edit = redacted_input();
    edit["cards"].as_array_mut().unwrap().swap(0, 1);
    let Some((out, _, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(
        issues_of(&out),
        [
            ("cards.0.cvc".to_owned(), REENTER.to_owned()),
            ("cards.1.cvc".to_owned(), REENTER.to_owned())
        ]
    );
}

async fn a_secret_is_not_restored_onto_an_edited_row(s: Store) {
    let mut edit = redacted_input();
    edit["cards"][0]["number"] = json!("4000");
    let Some((out, _, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(
        issues_of(&out),
        [("cards.0.cvc".to_owned(), REENTER.to_owned())]
    );
}

async fn a_placeholder_under_a_restructured_key_is_refused(s: Store) {
    let mut edit = redacted_input();
    edit["cards"] = json!({"number": "4242", "cvc": REDACTED});
    let Some((out, _, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    assert!(issues_of(&out).iter().any(|(_, m)| m == REENTER));
}

async fn a_placeholder_outside_the_sensitive_paths_is_refused(s: Store) {
    let mut edit = redacted_input();
    edit["title"] = json!(REDACTED);
    let Some((out, ran, _, _)) = approve_deferred(s, edit).await else {
        return;
    };
    assert_eq!(issues_of(&out), [("title".to_owned(), REENTER.to_owned())]);
    assert!(ran.is_empty(), "\"[redacted]\" never reaches a tool");
}

#[tokio::test]
async fn an_inline_edit_is_restored_and_a_stray_placeholder_asks_again() {
    let (seen, shown) = (seen(), Arc::new(Mutex::new(Vec::new())));
    let answers = Arc::new(Mutex::new(vec![
        {
            let mut e = redacted_input();
            e["title"] = json!(REDACTED);
            e
        },
        {
            let mut e = redacted_input();
            e["title"] = json!("Chess");
            e
        },
    ]));
    let tm = inline_tm(&seen, &shown, move |_req| {
        Decision::approve_with(answers.lock().unwrap().remove(0))
    });
    let out = tm
        .call("pay", input(), CallOptions::new(Caller::Tour))
        .await;
    assert!(out.is_ok());
    let shown = shown.lock().unwrap();
    assert_eq!(shown.len(), 2, "asked again with the same id");
    assert_eq!(shown[0].confirm_id, shown[1].confirm_id);
    assert_eq!(shown[1].issues[0].path, "title");
    assert_eq!(shown[1].issues[0].message, REENTER);
    let mut expected = input();
    expected["title"] = json!("Chess");
    assert_eq!(seen.lock().unwrap()[0], expected);
}
