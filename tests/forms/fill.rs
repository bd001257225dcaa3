//! `Form<T>` and `<scope>.fill`: a JSON merge patch (RFC 7396) validated against `T`.

use serde_json::json;
use toolmark::{Caller, Decision, Effect, Form, FormOptions, RefusalCode};

use crate::*;

#[test]
fn set_and_update_change_the_values_bump_the_version_and_notify_subscribers() {
    let form = Form::new(Signup::default());
    let mut changes = form.subscribe();
    assert_eq!(form.version(), 0);
    assert!(!changes.has_changed().unwrap());

    form.set(ada());
    assert_eq!(form.values(), ada());
    assert_eq!(form.version(), 1);
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow_and_update(), 1);

    form.update(|s| s.age = Some(37));
    assert_eq!(form.read(|s| s.age), Some(37));
    assert_eq!(form.version(), 2);
    assert_eq!(*changes.borrow_and_update(), 2);

    // A clone is the same form.
    let other = form.clone();
    other.update(|s| s.name = "Grace".to_owned());
    assert_eq!(form.values().name, "Grace");
    assert_eq!(form.version(), 3);
}

#[test]
fn debug_never_shows_the_values() {
    let form = Form::new(ada());
    let shown = format!("{form:?}");
    assert!(shown.contains("version"), "{shown}");
    assert!(!shown.contains("4242") && !shown.contains("Ada"), "{shown}");
}

#[test]
fn the_validator_checks_the_current_values() {
    let form = signup_form();
    let issues = form.validate().unwrap_err();
    assert_eq!(issues.len(), 2);
    assert_eq!(issues[0].path, "name");
    form.set(ada());
    assert!(form.validate().is_ok());
    assert!(
        Form::new(Signup::default()).validate().is_ok(),
        "no validator: always valid"
    );
}

#[tokio::test]
async fn register_form_adds_fill_and_submit_with_their_default_effects() {
    let tm = tm();
    signup(&tm);
    let manifest = tm.manifest(Caller::InApp);
    let names: Vec<&str> = manifest.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["signup.fill", "signup.submit"]);
    let fill = &manifest[0];
    assert_eq!(fill.effect, Effect::Write);
    assert!(!fill.needs_confirmation);
    let submit = &manifest[1];
    assert_eq!(submit.effect, Effect::Consequential);
    assert!(submit.needs_confirmation);
    assert_eq!(submit.input_schema["type"], "object");
    let props = submit
        .input_schema
        .get("properties")
        .and_then(|p| p.as_object());
    assert!(props.is_none_or(|p| p.is_empty()), "submit takes {{}}");
}

#[tokio::test]
async fn the_fill_schema_is_the_values_schema_with_nothing_required_and_secrets_write_only() {
    let tm = tm();
    signup(&tm);
    let fill = &tm.manifest(Caller::InApp)[0];
    let schema = &*fill.input_schema;
    assert!(
        schema.get("required").is_none(),
        "a patch may omit any field: {schema}"
    );
    let props = schema["properties"].as_object().unwrap();
    let keys: Vec<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(keys, ["age", "card", "email", "name"]);
    let text = schema.to_string();
    assert!(
        text.contains("\"writeOnly\":true"),
        "sensitive paths are marked: {text}"
    );
}

#[tokio::test]
async fn fill_merges_a_partial_input_into_the_values() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(Signup {
        name: "Ada".into(),
        email: "ada@example.com".into(),
        ..Default::default()
    });
    let out = tm
        .call("signup.fill", json!({"age": 36}), opts(Caller::InApp))
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    let values = form.values();
    assert_eq!(values.age, Some(36));
    assert_eq!(
        values.name, "Ada",
        "fields the patch does not name are kept"
    );
    assert_eq!(values.email, "ada@example.com");
    assert_eq!(form.version(), 2);
}

#[tokio::test]
async fn a_nested_object_merges_and_null_clears_an_optional_field() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    // Only the cvc changes: the card's number is kept (RFC 7396 merges objects).
    let out = tm
        .call(
            "signup.fill",
            json!({"card": {"cvc": "999"}}),
            opts(Caller::InApp),
        )
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    let card = form.values().card.unwrap();
    assert_eq!(
        (card.number.as_str(), card.cvc.as_str()),
        ("4242424242424242", "999")
    );

    let out = tm
        .call(
            "signup.fill",
            json!({"age": null, "card": null}),
            opts(Caller::InApp),
        )
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    let values = form.values();
    assert_eq!((values.age, values.card), (None, None));
    assert_eq!(values.name, "Ada");
}

#[tokio::test]
async fn the_fill_output_is_the_new_values_with_secrets_redacted() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.fill", json!({"age": 40}), opts(Caller::InApp))
        .await;
    assert_eq!(
        out.output().unwrap(),
        &json!({
            "name": "Ada", "email": "ada@example.com", "age": 40,
            "card": {"number": "[redacted]", "cvc": "[redacted]"}
        })
    );
}

#[tokio::test]
async fn null_on_a_required_field_is_invalid_and_the_values_are_untouched() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    let out = tm
        .call(
            "signup.fill",
            json!({"name": null, "age": 1}),
            opts(Caller::InApp),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert!(
        issues(&out)
            .iter()
            .any(|(_, m)| m.contains("missing field `name`")),
        "{:?}",
        issues(&out)
    );
    assert_eq!(form.values(), ada());
    assert_eq!(form.version(), 1);
}

#[tokio::test]
async fn a_patch_that_does_not_decode_as_the_values_type_is_invalid_at_its_path() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    let out = tm
        .call("signup.fill", json!({"age": "old"}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(issues(&out)[0].0, "age");

    let out = tm
        .call(
            "signup.fill",
            json!({"card": {"cvc": 5}}),
            opts(Caller::InApp),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    let found = issues(&out);
    assert_eq!(found[0].0, "card.cvc");

    let out = tm
        .call("signup.fill", json!({"nickname": "A"}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(issues(&out)[0].0, "nickname");
    assert!(issues(&out)[0].1.contains("unknown field"));

    let out = tm
        .call("signup.fill", json!([1, 2]), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(form.values(), ada());
    assert_eq!(form.version(), 1, "no refused fill touched the values");
}

#[tokio::test]
async fn an_issue_about_a_sensitive_field_never_quotes_its_value() {
    let tm = tm();
    let (form, _) = signup(&tm);
    form.set(ada());
    // A cvc of the wrong type: serde's message would quote the value.
    let out = tm
        .call(
            "signup.fill",
            json!({"card": {"cvc": 987_654}}),
            opts(Caller::InApp),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(issues(&out)[0].0, "card.cvc");
    let text = json_of(&out).to_string();
    assert!(!text.contains("987654"), "{text}");
}

#[tokio::test]
async fn a_fill_does_not_ask_the_validator() {
    // The form starts incomplete (no email): filling the name alone still works.
    let tm = tm();
    let (form, _) = signup(&tm);
    let out = tm
        .call("signup.fill", json!({"name": "Ada"}), opts(Caller::InApp))
        .await;
    assert!(out.is_ok(), "{}", json_of(&out));
    assert!(form.validate().is_err());
}

#[tokio::test]
async fn the_fill_effect_option_makes_a_fill_need_confirmation() {
    let tm = tm();
    let form = Form::new(Signup::default());
    tm.register_form(
        &tm.scope("profile"),
        form.clone(),
        FormOptions {
            fill_effect: Effect::Consequential,
            ..Default::default()
        },
    )
    .unwrap();
    let out = tm
        .call("profile.fill", json!({"name": "Ada"}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().expect("needs_confirmation").to_owned();
    assert_eq!(form.version(), 0, "nothing filled before approval");
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(done.is_ok(), "{}", json_of(&done));
    assert_eq!(form.values().name, "Ada");
}

#[tokio::test]
async fn a_deferred_fill_applies_its_patch_to_the_values_current_at_approval() {
    let tm = tm();
    let form = Form::new(Signup::default());
    tm.register_form(
        &tm.scope("profile"),
        form.clone(),
        FormOptions {
            fill_effect: Effect::Consequential,
            ..Default::default()
        },
    )
    .unwrap();
    let out = tm
        .call("profile.fill", json!({"age": 36}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    // The user types a name meanwhile: the fill is not stale, and keeps it.
    form.update(|s| s.name = "Ada".into());
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(done.is_ok(), "{}", json_of(&done));
    let values = form.values();
    assert_eq!((values.name.as_str(), values.age), ("Ada", Some(36)));
}

#[tokio::test]
async fn a_form_without_on_submit_has_no_submit_tool() {
    let tm = tm();
    tm.register_form(
        &tm.scope("draft"),
        Form::new(Signup::default()),
        FormOptions::default(),
    )
    .unwrap();
    assert_eq!(names(&tm, Caller::InApp), ["draft.fill"]);
}

#[tokio::test]
async fn form_tools_follow_their_scope() {
    let tm = tm();
    let (form, _) = signup(&tm);
    let scope = tm.scope("signup");
    scope.set_when(false);
    let out = tm
        .call("signup.fill", json!({"name": "Ada"}), opts(Caller::InApp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    assert!(names(&tm, Caller::InApp).is_empty());
    scope.set_when(true);
    assert!(tm
        .call("signup.fill", json!({"name": "Ada"}), opts(Caller::InApp))
        .await
        .is_ok());
    scope.dispose();
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::Human))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    assert_eq!(
        form.values().name,
        "Ada",
        "the form itself outlives its tools"
    );
}

#[tokio::test]
async fn registration_checks_sensitive_paths_and_registers_nothing_on_error() {
    let tm = tm();
    let submitted = Submitted::default();
    let err = tm
        .register_form(
            &tm.scope("signup"),
            signup_form(),
            FormOptions {
                sensitive: vec!["card.pin".into()],
                on_submit: Some(submitted.on_submit()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_sensitive_path");
    assert!(err.to_string().contains("signup.fill"), "{err}");
    assert!(names(&tm, Caller::Human).is_empty());

    // The macro's `json:` marker is accepted (form paths are JSON names anyway).
    tm.register_form(
        &tm.scope("marked"),
        signup_form(),
        FormOptions {
            sensitive: vec!["json:card.cvc".into()],
            ..Default::default()
        },
    )
    .unwrap();
    tm.scope("marked").dispose();

    // `[]` after a field that is not a sequence.
    let err = tm
        .register_form(
            &tm.scope("signup"),
            signup_form(),
            FormOptions {
                sensitive: vec!["card[].cvc".into()],
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_sensitive_path");
}

#[tokio::test]
async fn registration_errors_of_the_scope() {
    let tm = tm();
    let gone = tm.scope("gone");
    gone.dispose();
    let err = tm
        .register_form(&gone, Form::new(Signup::default()), FormOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), "scope_disposed");

    let other = Toolmark::builder().build().unwrap();
    let err = tm
        .register_form(
            &other.scope("x"),
            Form::new(Signup::default()),
            FormOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");

    signup(&tm);
    let err = tm
        .register_form(
            &tm.scope("signup"),
            Form::new(Signup::default()),
            FormOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "duplicate_tool");
}

#[tokio::test]
async fn a_form_in_the_root_scope_has_unprefixed_tools() {
    let tm = tm();
    tm.register_form(
        &tm.root(),
        Form::new(Signup::default()),
        FormOptions::default(),
    )
    .unwrap();
    assert_eq!(names(&tm, Caller::InApp), ["fill"]);
}
