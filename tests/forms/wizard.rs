//! Wizards: ordered steps, each a form in its own scope, shown only while current;
//! `next`, `back`, `submit`.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolmark::{
    Caller, Decision, Effect, Form, Issue, RefusalCode, StepOptions, ToolError, Toolmark, Wizard,
};

use crate::*;

// The deferred submits run on every confirmation store (built-in, MemoryStore,
// Redis): `stale` is a seed rule a stored confirmation keeps.
on_every_store!(
    a_deferred_wizard_submit_approved_after_any_step_changed_is_stale,
    a_deferred_wizard_submit_approved_with_nothing_changed_runs_as_human,
);

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Details {
    #[serde(default)]
    name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Payment {
    #[serde(default)]
    number: String,
    #[serde(default)]
    cvc: String,
}

fn required(field: &'static str, value: &str) -> Result<(), Vec<Issue>> {
    if value.is_empty() {
        Err(vec![Issue::new(field, "required")])
    } else {
        Ok(())
    }
}

struct Fixture {
    tm: Toolmark,
    wizard: Wizard,
    details: Form<Details>,
    payment: Form<Payment>,
    submitted: Arc<Mutex<Vec<(Caller, Value)>>>,
}

/// Wizard `signup` with steps `details` (name required) and `payment` (number
/// required; number and cvc sensitive).
fn fixture(tm: Toolmark) -> Fixture {
    let details = Form::with_validator(Details::default(), |d: &Details| required("name", &d.name));
    let payment = Form::with_validator(Payment::default(), |p: &Payment| {
        required("number", &p.number)
    });
    let submitted: Arc<Mutex<Vec<(Caller, Value)>>> = Arc::default();
    let log = submitted.clone();
    let wizard = Wizard::new()
        .step("details", details.clone(), StepOptions::default())
        .step(
            "payment",
            payment.clone(),
            StepOptions {
                sensitive: vec!["number".into(), "cvc".into()],
                ..Default::default()
            },
        )
        .on_submit(move |ctx, values| {
            let log = log.clone();
            async move {
                let name = values.get::<Details>("details").unwrap().name.clone();
                assert!(values.get::<Payment>("payment").is_some());
                assert!(values.get::<Details>("payment").is_none(), "typed by step");
                log.lock()
                    .unwrap()
                    .push((ctx.caller(), values.json().clone()));
                Ok::<_, ToolError>(json!({"welcome": name}))
            }
        });
    tm.register_wizard(&tm.scope("signup"), wizard.clone())
        .unwrap();
    Fixture {
        tm,
        wizard,
        details,
        payment,
        submitted,
    }
}

async fn call(tm: &Toolmark, name: &str, input: Value) -> toolmark::Outcome {
    tm.call(name, input, opts(Caller::InApp)).await
}

#[tokio::test]
async fn only_the_current_step_is_shown() {
    let f = fixture(tm());
    assert_eq!(
        names(&f.tm, Caller::InApp),
        ["signup.details.fill", "signup.next"]
    );
    assert_eq!(f.wizard.current(), "details");
    assert_eq!(f.wizard.current_index(), 0);
    assert_eq!(f.wizard.step_names(), ["details", "payment"]);
}

#[tokio::test]
async fn filling_a_step_that_is_not_current_is_unknown_tool() {
    let f = fixture(tm());
    let out = call(&f.tm, "signup.payment.fill", json!({"number": "4242"})).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    assert_eq!(f.payment.version(), 0);

    f.details.set(Details { name: "Ada".into() });
    assert!(call(&f.tm, "signup.next", json!({})).await.is_ok());
    let out = call(&f.tm, "signup.details.fill", json!({"name": "Eve"})).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    assert_eq!(f.details.values().name, "Ada");
}

#[tokio::test]
async fn next_and_back_move_between_steps() {
    let f = fixture(tm());
    let mut moves = f.wizard.subscribe();
    assert!(call(&f.tm, "signup.details.fill", json!({"name": "Ada"}))
        .await
        .is_ok());
    let out = call(&f.tm, "signup.next", json!({})).await;
    assert_eq!(
        out.output(),
        Some(&json!({"step": "payment", "index": 1, "steps": 2}))
    );
    assert_eq!(f.wizard.current(), "payment");
    assert!(moves.has_changed().unwrap());
    assert_eq!(*moves.borrow_and_update(), 1);
    assert_eq!(
        names(&f.tm, Caller::InApp),
        ["signup.back", "signup.payment.fill", "signup.submit"]
    );

    let out = call(&f.tm, "signup.back", json!({})).await;
    assert_eq!(
        out.output(),
        Some(&json!({"step": "details", "index": 0, "steps": 2}))
    );
    assert_eq!(f.wizard.current(), "details");
    assert_eq!(
        names(&f.tm, Caller::InApp),
        ["signup.details.fill", "signup.next"]
    );
}

#[tokio::test]
async fn next_is_refused_while_the_current_step_is_incomplete() {
    let f = fixture(tm());
    let out = call(&f.tm, "signup.next", json!({})).await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(
        issues(&out),
        [("details.name".to_owned(), "required".to_owned())]
    );
    assert_eq!(f.wizard.current(), "details");
}

#[tokio::test]
async fn there_is_no_back_on_the_first_step_and_no_next_on_the_last() {
    let f = fixture(tm());
    let out = call(&f.tm, "signup.back", json!({})).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    let out = call(&f.tm, "signup.submit", json!({})).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::UnknownTool),
        "submit is on the last step"
    );
    assert!(f.wizard.go_to("payment"));
    let out = call(&f.tm, "signup.next", json!({})).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
}

#[tokio::test]
async fn the_app_navigates_with_go_to() {
    let f = fixture(tm());
    assert!(f.wizard.go_to("payment"));
    assert_eq!(f.wizard.current(), "payment");
    assert!(names(&f.tm, Caller::InApp).contains(&"signup.payment.fill".to_owned()));
    assert!(!f.wizard.go_to("nowhere"));
    assert_eq!(f.wizard.current(), "payment");
}

#[tokio::test]
async fn submit_validates_every_step() {
    let f = fixture(tm());
    assert!(call(&f.tm, "signup.details.fill", json!({"name": "Ada"}))
        .await
        .is_ok());
    assert!(call(&f.tm, "signup.next", json!({})).await.is_ok());
    assert!(call(
        &f.tm,
        "signup.payment.fill",
        json!({"number": "4242", "cvc": "737"})
    )
    .await
    .is_ok());
    // The user clears the first step's name after moving on.
    f.details.set(Details::default());
    let out =
        f.tm.call("signup.submit", json!({}), opts(Caller::Human))
            .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
    assert_eq!(
        issues(&out),
        [("details.name".to_owned(), "required".to_owned())]
    );
    let out = call(&f.tm, "signup.submit", json!({})).await;
    assert_eq!(
        code(&out),
        Some(RefusalCode::Invalid),
        "refused before any confirmation"
    );
    assert!(f.tm.pending_confirmations().is_empty());
    assert!(f.submitted.lock().unwrap().is_empty());
    assert!(f.wizard.validate().is_err());

    f.details.set(Details { name: "Ada".into() });
    let out =
        f.tm.call("signup.submit", json!({}), opts(Caller::Human))
            .await;
    assert_eq!(out.output(), Some(&json!({"welcome": "Ada"})));
    assert_eq!(
        f.submitted.lock().unwrap()[0],
        (
            Caller::Human,
            json!({"details": {"name": "Ada"}, "payment": {"number": "4242", "cvc": "737"}})
        )
    );
}

async fn ready(f: &Fixture) {
    f.details.set(Details { name: "Ada".into() });
    f.payment.set(Payment {
        number: "4242424242424242".into(),
        cvc: "737".into(),
    });
    assert!(f.wizard.go_to("payment"));
}

#[tokio::test]
async fn a_deferred_wizard_submit_shows_each_step_redacted() {
    let f = fixture(tm());
    ready(&f).await;
    let out = call(&f.tm, "signup.submit", json!({})).await;
    let v = json_of(&out);
    assert_eq!(v["summary"], "Submit the `signup` wizard");
    assert_eq!(
        v["changes"],
        json!([
            {"path": "details", "before": null, "after": {"name": "Ada"}},
            {"path": "payment", "before": null, "after": {"number": "[redacted]", "cvc": "[redacted]"}}
        ])
    );
    let text = public_text(&f.tm.pending_confirmations());
    assert!(!text.contains("4242") && !text.contains("737"), "{text}");
}

async fn a_deferred_wizard_submit_approved_after_any_step_changed_is_stale(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let f = fixture(tm);
    ready(&f).await;
    let id = call(&f.tm, "signup.submit", json!({}))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    // A step that is not current changes.
    f.details.update(|d| d.name = "Eve".into());
    let out = f.tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(code(&out), Some(RefusalCode::Stale));
    assert_eq!(
        out.refusal().unwrap().message,
        "Form changed since confirmation was requested"
    );
    assert!(f.submitted.lock().unwrap().is_empty());
}

async fn a_deferred_wizard_submit_approved_with_nothing_changed_runs_as_human(s: Store) {
    let Some(tm) = s.build(toolmark::Toolmark::builder()).await else {
        return;
    };
    let f = fixture(tm);
    ready(&f).await;
    let id = call(&f.tm, "signup.submit", json!({}))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let out = f.tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.output(), Some(&json!({"welcome": "Ada"})));
    assert_eq!(f.submitted.lock().unwrap()[0].0, Caller::Human);
}

#[tokio::test]
async fn the_step_forms_are_readable_from_the_wizard() {
    let f = fixture(tm());
    let form: Form<Details> = f.wizard.form("details").unwrap();
    form.set(Details { name: "Ada".into() });
    assert_eq!(f.details.values().name, "Ada", "the same handle");
    assert!(f.wizard.form::<Payment>("details").is_none(), "wrong type");
    assert!(f.wizard.form::<Details>("nowhere").is_none());
}

#[tokio::test]
async fn a_step_fill_uses_the_step_options() {
    let tm = tm();
    let wizard = Wizard::new().step(
        "only",
        Form::new(Payment::default()),
        StepOptions {
            fill_effect: Effect::Destructive,
            sensitive: vec!["cvc".into()],
        },
    );
    tm.register_wizard(&tm.scope("w"), wizard).unwrap();
    let fill = tm
        .manifest(Caller::InApp)
        .into_iter()
        .find(|t| t.name == "w.only.fill")
        .unwrap();
    assert_eq!(fill.effect, Effect::Destructive);
    assert!(fill.input_schema.to_string().contains("writeOnly"));
    let out = tm
        .call("w.only.fill", json!({"cvc": "737"}), opts(Caller::InApp))
        .await;
    assert_eq!(
        json_of(&tm.pending_confirmations()[0].input),
        json!({"cvc": "[redacted]"})
    );
    assert!(out.confirm_id().is_some());
}

#[tokio::test]
async fn a_wizard_without_on_submit_has_no_submit_and_its_effect_is_configurable() {
    let tm = tm();
    let plain = Wizard::new().step("a", Form::new(Details::default()), StepOptions::default());
    tm.register_wizard(&tm.scope("plain"), plain.clone())
        .unwrap();
    assert!(plain.go_to("a"));
    assert_eq!(
        names(&tm, Caller::InApp),
        ["plain.a.fill"],
        "one step: no next, no back, no submit"
    );

    let quick = Wizard::new()
        .step(
            "a",
            Form::new(Details { name: "x".into() }),
            StepOptions::default(),
        )
        .submit_effect(Effect::Write)
        .on_submit(|_ctx, _values| async { Ok::<_, ToolError>("done") });
    tm.register_wizard(&tm.scope("quick"), quick).unwrap();
    let out = tm
        .call("quick.submit", json!({}), opts(Caller::InApp))
        .await;
    assert_eq!(out.output(), Some(&json!("done")));
}

#[tokio::test]
async fn wizard_registration_errors() {
    let tm = tm();
    let err = tm
        .register_wizard(&tm.scope("w"), Wizard::new())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");

    let twice = Wizard::new()
        .step("a", Form::new(Details::default()), StepOptions::default())
        .step("a", Form::new(Details::default()), StepOptions::default());
    assert_eq!(
        tm.register_wizard(&tm.scope("w"), twice)
            .unwrap_err()
            .code(),
        "invalid_spec"
    );

    let bad = Wizard::new().step("a b", Form::new(Details::default()), StepOptions::default());
    assert_eq!(
        tm.register_wizard(&tm.scope("w"), bad).unwrap_err().code(),
        "invalid_name"
    );

    let secret = Wizard::new().step(
        "a",
        Form::new(Details::default()),
        StepOptions {
            sensitive: vec!["pin".into()],
            ..Default::default()
        },
    );
    let err = tm.register_wizard(&tm.scope("w"), secret).unwrap_err();
    assert_eq!(err.code(), "invalid_sensitive_path");
    assert!(names(&tm, Caller::Human).is_empty(), "nothing registered");

    let once = Wizard::new().step("a", Form::new(Details::default()), StepOptions::default());
    tm.register_wizard(&tm.scope("w"), once.clone()).unwrap();
    let err = tm
        .register_wizard(&tm.scope("v"), once.clone())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
    // After its scope is disposed (the dialog closed), it can be registered again.
    tm.scope("w").dispose();
    tm.register_wizard(&tm.scope("w"), once).unwrap();
    assert_eq!(names(&tm, Caller::Human), ["w.a.fill"]);
}

#[tokio::test]
async fn a_failed_registration_leaves_existing_scopes_as_they_were() {
    let tm = tm();
    tm.scope("w")
        .scope("b")
        .register(
            toolmark::ToolSpec::new("fill", "taken")
                .handler(|_ctx, input| async move { Ok(input) }),
        )
        .unwrap();
    let wizard = Wizard::new()
        .step("a", Form::new(Details::default()), StepOptions::default())
        .step("b", Form::new(Details::default()), StepOptions::default());
    let err = tm.register_wizard(&tm.scope("w"), wizard).unwrap_err();
    assert_eq!(err.code(), "duplicate_tool");
    assert_eq!(names(&tm, Caller::Human), ["w.b.fill"], "still shown");
}

#[tokio::test]
async fn disposing_the_wizard_scope_removes_every_wizard_tool() {
    let f = fixture(tm());
    f.tm.scope("signup").dispose();
    assert!(names(&f.tm, Caller::Human).is_empty());
    assert!(
        f.wizard.go_to("payment"),
        "the wizard itself still navigates"
    );
    assert!(names(&f.tm, Caller::Human).is_empty());
}

#[tokio::test]
async fn builder_methods_never_change_a_registered_wizard() {
    let f = fixture(tm());
    let copy = f.wizard.clone().step(
        "extra",
        Form::new(Details::default()),
        StepOptions::default(),
    );
    assert_eq!(copy.step_names(), ["details", "payment", "extra"]);
    assert_eq!(f.wizard.step_names(), ["details", "payment"]);
}

#[tokio::test]
async fn a_validator_may_read_the_wizard_while_next_checks_its_step() {
    let tm = tm();
    let wizard_cell: Arc<std::sync::OnceLock<Wizard>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (cell, log) = (wizard_cell.clone(), seen.clone());
    let details = Form::with_validator(Details::default(), move |d: &Details| {
        if let Some(w) = cell.get() {
            log.lock().unwrap().push(w.current().to_owned());
        }
        required("name", &d.name)
    });
    details.set(Details { name: "Ada".into() });
    let wizard = Wizard::new()
        .step("details", details, StepOptions::default())
        .step(
            "payment",
            Form::new(Payment::default()),
            StepOptions::default(),
        );
    tm.register_wizard(&tm.scope("w"), wizard.clone()).unwrap();
    let _ = wizard_cell.set(wizard.clone());
    let out = tm.call("w.next", json!({}), opts(Caller::InApp)).await;
    assert!(out.is_ok(), "{}", json_of(&out));
    let seen = seen.lock().unwrap().clone();
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s == "details"),
        "{seen:?}"
    );
    assert_eq!(wizard.current(), "payment");
}
