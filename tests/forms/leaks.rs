//! Form and wizard submits never hand the user's secrets to an observer: the submit
//! tool carries the form's sensitive values (its outcome, the bridge message, the
//! pub/sub message another instance receives), a remembered approval never answers
//! a later submit of a form with sensitive fields, and a wizard step's refusal
//! withholds a secret exactly as a form's does.

use serde_json::{json, Value};
use toolmark::{
    BridgeMessage, Caller, Decision, For, Form, FormOptions, Issue, OnSubmit, Outcome, RefusalCode,
    StepOptions, ToolError, Toolmark, Wizard,
};

use crate::*;

on_every_store!(
    an_approved_submit_returns_no_secret_in_the_outcome_the_bridge_or_pub_sub,
    a_remembered_approval_never_answers_a_later_submit_of_a_form_with_secrets,
);

const CARD: &str = "4242424242424242";
const CVC: &str = "737";

/// An `on_submit` that hands the whole values back (as an app that echoes what it
/// saved would).
fn echoing(tm: &Toolmark) -> Form<Signup> {
    let form = signup_form();
    tm.register_form(
        &tm.scope("signup"),
        form.clone(),
        FormOptions {
            sensitive: vec!["card.cvc".into(), "card.number".into()],
            on_submit: Some(OnSubmit::new(|_ctx, values: Signup| async move {
                Ok::<_, ToolError>(json!({
                    "saved": values,
                    "note": format!("charged card {}", values.card.as_ref().map_or("", |c| &c.number)),
                }))
            })),
            ..Default::default()
        },
    )
    .unwrap();
    form
}

fn assert_no_card(what: &str, text: &str) {
    assert!(!text.contains(CARD), "the card number in {what}: {text}");
    assert!(
        !text.contains(&format!("\"{CVC}\"")),
        "the cvc in {what}: {text}"
    );
}

async fn an_approved_submit_returns_no_secret_in_the_outcome_the_bridge_or_pub_sub(s: Store) {
    let Some(backing) = s.open() else { return };
    let tm = backing.build(Toolmark::builder()).await;
    // A second instance on the same store gets the bridge message over pub/sub.
    let other = backing.build(Toolmark::builder()).await;
    let form = echoing(&tm);
    echoing(&other);
    form.set(ada());
    let mut bridge = tm.bridge();
    let mut remote = other.bridge();
    let mut events = tm.events();

    let asked = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    assert_no_card("needs_confirmation", &json_of(&asked).to_string());
    let id = asked.confirm_id().expect("needs_confirmation").to_owned();
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(done.is_ok(), "{done:?}");
    let text = json_of(&done).to_string();
    assert_no_card("the outcome", &text);
    assert_no_card("the outcome's Debug", &format!("{done:?}"));
    assert!(text.contains("[redacted]"), "{text}");
    assert_eq!(done.output().unwrap()["saved"]["name"], "Ada");

    let msg = bridge.recv().await.expect("a bridge message");
    assert_no_card("the bridge message", &json_of(&msg).to_string());
    if s != Store::Builtin {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(5), remote.recv())
            .await
            .expect("the other instance hears of it")
            .expect("a bridge message");
        let BridgeMessage::Confirmed { confirm_id, .. } = &msg else {
            panic!("{msg:?}")
        };
        assert_eq!(confirm_id, &id);
        assert_no_card("the pub/sub bridge message", &json_of(&msg).to_string());
    }
    while let Ok(e) = events.try_recv() {
        assert_no_card("an event", &format!("{} {e:?}", json_of(&e)));
    }
}

async fn a_remembered_approval_never_answers_a_later_submit_of_a_form_with_secrets(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let form = echoing(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .expect("needs_confirmation")
        .to_owned();
    let done = tm
        .confirm_pending(&id, Decision::approve().remember(For::Always))
        .await;
    assert!(done.is_ok(), "{done:?}");
    assert!(
        tm.remembered_async().await.unwrap().is_empty(),
        "an approval of a submit of a form with sensitive fields is not remembered"
    );
    // Another card: the approver saw `[redacted]`, so this is asked again.
    form.update(|v| {
        v.card = Some(Card {
            number: "5555555555554444".to_owned(),
            cvc: "999".to_owned(),
        })
    });
    let again = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    assert!(again.confirm_id().is_some(), "{again:?}");
}

#[tokio::test]
async fn a_remembered_session_approval_never_answers_a_later_submit_either() {
    let tm = tm();
    let form = echoing(&tm);
    form.set(ada());
    let id = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let done = tm
        .confirm_pending(&id, Decision::approve().remember(For::Session))
        .await;
    assert!(done.is_ok());
    assert!(tm.remembered().is_empty());
    let again = tm
        .call("signup.submit", json!({}), opts(Caller::InApp))
        .await;
    assert!(again.confirm_id().is_some(), "{again:?}");
}

/// A wizard in scope `pay`: `details` (a name), then `payment` (a card, sensitive,
/// whose validator quotes what it refuses), submitting everything it got back.
fn wizard(tm: &Toolmark) -> (Form<Payment>, Wizard) {
    let payment = Form::with_validator(Payment::default(), |p: &Payment| {
        if p.card.starts_with('4') && p.card.len() == 16 {
            Ok(())
        } else {
            Err(vec![Issue::new(
                "card",
                format!("{} is not a card number", p.card),
            )])
        }
    });
    let wizard = Wizard::new()
        .step(
            "payment",
            payment.clone(),
            StepOptions {
                sensitive: vec!["card".into()],
                ..Default::default()
            },
        )
        .step(
            "done",
            Form::new(Details::default()),
            StepOptions::default(),
        )
        .on_submit(|_ctx, values| async move { Ok::<_, ToolError>(values.json().clone()) });
    tm.register_wizard(&tm.scope("pay"), wizard.clone())
        .unwrap();
    (payment, wizard)
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Payment {
    card: String,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Details {
    note: String,
}

#[tokio::test]
async fn a_wizard_submit_to_an_mcp_caller_returns_no_secret() {
    // test_toolmark approves inline: an MCP caller gets the run's outcome at once.
    let tm = toolmark::testing::test_toolmark();
    let (payment, wizard) = wizard(&tm);
    payment.set(Payment {
        card: CARD.to_owned(),
    });
    let mcp = opts(Caller::Mcp);
    let next = tm.call("pay.next", json!({}), mcp.clone()).await;
    assert!(next.is_ok(), "{next:?}");
    assert_eq!(wizard.current(), "done");
    let out = tm.call("pay.submit", json!({}), mcp).await;
    assert!(out.is_ok(), "{out:?}");
    assert_no_card("the wizard's submit outcome", &json_of(&out).to_string());
    assert_eq!(out.output().unwrap()["payment"]["card"], "[redacted]");
}

#[tokio::test]
async fn a_wizard_steps_refusal_withholds_the_secret_as_a_forms_does() {
    let tm = toolmark::testing::test_toolmark();
    let (payment, _wizard) = wizard(&tm);
    let typo = "4242-4242-4242-4242";
    payment.set(Payment {
        card: typo.to_owned(),
    });
    let out = tm.call("pay.next", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    let text = json_of(&out).to_string();
    assert!(!text.contains(typo), "the card in the refusal: {text}");
    assert!(text.contains("payment.card"), "{text}");
    // The same validator on a form, submitted: the same redaction.
    let tm2 = toolmark::testing::test_toolmark();
    let form = Form::with_validator(
        Payment {
            card: typo.to_owned(),
        },
        |p: &Payment| {
            Err(vec![Issue::new(
                "card",
                format!("{} is not a card number", p.card),
            )])
        },
    );
    tm2.register_form(
        &tm2.scope("pay"),
        form,
        FormOptions {
            sensitive: vec!["card".into()],
            on_submit: Some(OnSubmit::new(|_ctx, _v: Payment| async move {
                Ok::<_, ToolError>("ok")
            })),
            ..Default::default()
        },
    )
    .unwrap();
    let on_form = tm2.call("pay.submit", json!({}), opts(Caller::Mcp)).await;
    let form_issue = &on_form.refusal().unwrap().issues[0];
    let wizard_issue = &out.refusal().unwrap().issues[0];
    assert_eq!(wizard_issue.message, form_issue.message);
    assert!(form_issue.message.contains("[redacted]"), "{form_issue:?}");
}

#[tokio::test]
async fn a_wizard_submits_refusal_and_a_failing_on_submit_keep_every_steps_secret_out() {
    let tm = toolmark::testing::test_toolmark();
    let failing = Form::new(Payment::default());
    let wizard = Wizard::new()
        .step(
            "payment",
            failing.clone(),
            StepOptions {
                sensitive: vec!["card".into()],
                ..Default::default()
            },
        )
        .on_submit(|_ctx, values| async move {
            let card = values.json()["payment"]["card"].clone();
            Err::<Value, _>(ToolError::new(format!("declined: {card}")))
        });
    tm.register_wizard(&tm.scope("w"), wizard).unwrap();
    failing.set(Payment {
        card: CARD.to_owned(),
    });
    let out: Outcome = tm.call("w.submit", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(out.status(), "error");
    assert_no_card("a failing wizard submit", &json_of(&out).to_string());
}

#[tokio::test]
async fn a_card_typed_while_the_submit_ran_never_comes_back() {
    // The values the set was built from at the call's start are not the last word:
    // the user may type while the call waits in its queue or runs.
    let tm = tm();
    let form = signup_form();
    let typed = form.clone();
    tm.register_form(
        &tm.scope("signup"),
        form.clone(),
        FormOptions {
            sensitive: vec!["card.cvc".into(), "card.number".into()],
            on_submit: Some(OnSubmit::new(move |_ctx, _values: Signup| {
                let typed = typed.clone();
                async move {
                    typed.update(|v| {
                        v.card = Some(Card {
                            number: "6011000990139424".to_owned(),
                            cvc: "4321".to_owned(),
                        })
                    });
                    Ok::<_, ToolError>(json!({"now": typed.values()}))
                }
            })),
            ..Default::default()
        },
    )
    .unwrap();
    form.set(ada());
    let out = tm
        .call("signup.submit", json!({}), opts(Caller::Human))
        .await;
    let text = json_of(&out).to_string();
    assert!(out.is_ok(), "{text}");
    assert!(!text.contains("6011000990139424"), "{text}");
    assert!(!text.contains("4321"), "{text}");
}
