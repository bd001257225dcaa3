//! Redaction in every payload toward an approver or an observer.

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolmark::{
    Ask, CallOptions, Caller, Change, ConfirmRequest, Decision, Effect, RefusalCode, ToolError,
    ToolSpec, Toolmark,
};

use crate::*;

fn assert_no_secret(text: &str) {
    for secret in ["pin-9876", "cvc-111", "cvc-222"] {
        assert!(!text.contains(secret), "secret {secret} leaked in: {text}");
    }
}

#[tokio::test]
async fn pending_confirmation_input_is_redacted_and_the_run_gets_the_real_input() {
    let seen = seen();
    let tm = deferred_tm(&seen);
    let mut events = tm.events();
    let out = tm.call("pay", input(), inapp()).await;
    assert_no_secret(&json_of(&out));
    assert!(
        json_of(&out).contains("pin [redacted]"),
        "the summary is redacted too"
    );
    let pending = tm.pending_confirmations();
    assert_eq!(pending[0].input, redacted_input());
    assert_no_secret(&json_of(&pending));
    assert_no_secret(&format!("{pending:?}"));
    let done = tm
        .confirm_pending(out.confirm_id().unwrap(), Decision::approve())
        .await;
    assert!(done.is_ok());
    assert_eq!(
        seen.lock().unwrap()[0],
        input(),
        "the approved run still gets the real input"
    );
    while let Ok(e) = events.try_recv() {
        assert_no_secret(&json_of(&e));
        assert_no_secret(&format!("{e:?}"));
    }
}

#[tokio::test]
async fn confirm_request_input_is_redacted() {
    let (seen, shown) = (seen(), Arc::new(Mutex::new(Vec::new())));
    let tm = inline_tm(&seen, &shown, |_| Decision::approve());
    let out = tm.call("pay", input(), CallOptions::new(Caller::Mcp)).await;
    assert!(out.is_ok());
    let req = shown.lock().unwrap()[0].clone();
    assert_eq!(req.input, redacted_input());
    assert_no_secret(&json_of(&req));
    assert_no_secret(&format!("{req:?}"));
    assert_eq!(seen.lock().unwrap()[0], input());
}

#[test]
fn input_schemas_mark_sensitive_properties_write_only() {
    let seen = seen();
    let tm = deferred_tm(&seen);
    let info = &tm.manifest(Caller::InApp)[0];
    let schema = &info.input_schema;
    assert_eq!(schema["properties"]["pin"]["writeOnly"], true);
    assert_eq!(
        schema["properties"]["cards"]["items"]["properties"]["cvc"]["writeOnly"],
        true
    );
    assert!(schema["properties"]["title"].get("writeOnly").is_none());
    assert!(
        schema["properties"]["cards"]["items"]["properties"]["number"]
            .get("writeOnly")
            .is_none()
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    card: Card,
    backup: Option<Card>,
    history: Vec<Card>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Card {
    card_number: String,
    security_code: String,
}

#[test]
fn write_only_sits_beside_the_ref_never_on_a_shared_def() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::typed("order", "Order", |_c, _o: Order| async {
            Ok::<_, ToolError>(())
        })
        .sensitive(["card", "history[].securityCode"]),
        Default::default(),
    )
    .unwrap();
    let schema = &tm.manifest(Caller::Human)[0].input_schema;
    let card = &schema["properties"]["card"];
    assert_eq!(card["writeOnly"], true);
    assert!(
        card.get("$ref").is_some(),
        "the mark sits beside the $ref: {card}"
    );
    let defs = &schema["$defs"]["Card"]["properties"];
    assert!(
        defs["securityCode"].get("writeOnly").is_none(),
        "the shared def is untouched"
    );
    assert!(schema["properties"]["backup"].get("writeOnly").is_none());
    assert_eq!(
        schema["properties"]["history"]["items"]["properties"]["securityCode"]["writeOnly"],
        true
    );
}

#[test]
fn a_path_that_names_nothing_in_the_schema_is_invalid_sensitive_path() {
    let tm = Toolmark::builder().build().unwrap();
    let seen = seen();
    for (path, hint) in [
        ("cards[].cvv", "cvv"),
        ("cards[.cvc", "position"),
        ("title[]", "[]"),
        ("history[].security_code", "security_code"),
    ] {
        let err = tm
            .register(pay(&seen).sensitive([path]), Default::default())
            .unwrap_err();
        assert_eq!(err.code(), "invalid_sensitive_path", "{path}");
        assert!(err.to_string().contains(hint), "{path}: {err}");
    }
    // A serde rename is caught: JSON names are what dynamic and typed specs give.
    let err = tm
        .register(
            ToolSpec::typed("order", "Order", |_c, _o: Order| async {
                Ok::<_, ToolError>(())
            })
            .sensitive(["card.security_code"]),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_sensitive_path");
}

fn asking(changes: Vec<Change>) -> ToolSpec {
    ToolSpec::new("edit", "Edit cards")
        .input_schema(json!({
            "type": "object",
            "properties": {"cards": {"type": "array", "items": {"type": "object", "properties": {"number": {"type": "string"}, "cvc": {"type": "string"}}}}}
        }))
        .sensitive(["cards[].cvc"])
        .handler(move |ctx, _input| {
            let changes = changes.clone();
            async move {
                let r = ctx.confirm(Ask::new("Replace the cards?").changes(changes)).await;
                Ok(json!({"approved": r.approved, "reason": r.reason, "changes": r.changes}))
            }
        })
}

#[tokio::test]
async fn ctx_confirm_changes_are_redacted_at_and_under_sensitive_paths() {
    let shown: Arc<Mutex<Vec<ConfirmRequest>>> = Arc::new(Mutex::new(Vec::new()));
    let s = shown.clone();
    let tm = Toolmark::builder()
        .confirm_handler(move |req: ConfirmRequest| {
            s.lock().unwrap().push(req);
            async { Decision::approve() }
        })
        .build()
        .unwrap();
    let changes = vec![
        Change::new("cards.0.cvc", Some(json!("111")), Some(json!("333"))),
        Change::new("cards", None, Some(json!([{"number": "1", "cvc": "444"}]))),
        Change::new("cards.1", Some(json!({"number": "2", "cvc": "555"})), None),
    ];
    tm.register(asking(changes.clone()), Default::default())
        .unwrap();
    let out = tm
        .call("edit", json!({"cards": []}), CallOptions::new(Caller::Mcp))
        .await;
    let shown = shown.lock().unwrap()[0].changes.clone();
    assert_eq!(
        serde_json::to_value(&shown).unwrap(),
        json!([
            {"path": "cards.0.cvc", "before": REDACTED, "after": REDACTED},
            {"path": "cards", "before": null, "after": [{"number": "1", "cvc": REDACTED}]},
            {"path": "cards.1", "before": {"number": "2", "cvc": REDACTED}, "after": null}
        ])
    );
    // The tool gets its real changes back.
    assert_eq!(
        out.output().unwrap()["changes"],
        serde_json::to_value(&changes).unwrap()
    );
}

#[tokio::test]
async fn ctx_confirm_edits_restore_secrets_and_a_stray_placeholder_is_invalid() {
    let changes = vec![Change::new(
        "cards",
        None,
        Some(json!([{"number": "1", "cvc": "444"}])),
    )];
    // Edit the public value: the cvc placeholder is restored.
    let tm = Toolmark::builder()
        .confirm_handler(|req: ConfirmRequest| async move {
            let mut c = serde_json::to_value(&req.changes).unwrap();
            assert_eq!(c[0]["after"][0]["cvc"], REDACTED);
            c[0]["after"][0]["number"] = json!("1");
            Decision::approve_with(c)
        })
        .build()
        .unwrap();
    tm.register(asking(changes.clone()), Default::default())
        .unwrap();
    let out = tm
        .call("edit", json!({}), CallOptions::new(Caller::Mcp))
        .await;
    assert_eq!(
        out.output().unwrap()["changes"][0]["after"][0]["cvc"],
        "444"
    );
    // A changed row loses its secret: the outcome is { approved: false, reason: "invalid" }.
    let tm = Toolmark::builder()
        .confirm_handler(|req: ConfirmRequest| async move {
            let mut c = serde_json::to_value(&req.changes).unwrap();
            c[0]["after"][0]["number"] = json!("999");
            Decision::approve_with(c)
        })
        .build()
        .unwrap();
    tm.register(asking(changes), Default::default()).unwrap();
    let out = tm
        .call("edit", json!({}), CallOptions::new(Caller::Mcp))
        .await;
    assert_eq!(out.output().unwrap()["approved"], false);
    assert_eq!(out.output().unwrap()["reason"], "invalid");
}

#[tokio::test]
async fn issue_messages_never_quote_a_sensitive_value() {
    let tm = Toolmark::builder().build().unwrap();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Login {
        user: String,
        pin: u32,
    }
    tm.register(
        ToolSpec::typed("login", "Log in", |_c, _l: Login| async {
            Ok::<_, ToolError>(())
        })
        .sensitive(["pin"]),
        Default::default(),
    )
    .unwrap();
    let out = tm
        .call(
            "login",
            json!({"user": "ada", "pin": "hunter2-9876"}),
            inapp(),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    let issue = &out.refusal().unwrap().issues[0];
    assert_eq!(issue.path, "pin");
    assert!(!issue.message.contains("hunter2"), "{}", issue.message);
    assert!(issue.message.contains("expected"), "{}", issue.message);
    assert!(!json_of(&out).contains("hunter2"));
}

#[tokio::test]
async fn tool_errors_and_panics_are_scrubbed_of_the_calls_secrets() {
    let tm = Toolmark::builder().build().unwrap();
    let spec = |name: &str, panic: bool| {
        ToolSpec::new(name, "Leaky")
            .input_schema(json!({"type": "object", "properties": {"pin": {"type": "string"}}}))
            .sensitive(["pin"])
            .handler(move |_ctx, input| async move {
                let pin = input["pin"].as_str().unwrap_or_default().to_owned();
                if panic {
                    panic!("bad pin {pin}");
                }
                Err(ToolError::new(format!("pin {pin} rejected by the bank")))
            })
    };
    tm.register(spec("err", false), Default::default()).unwrap();
    tm.register(spec("boom", true), Default::default()).unwrap();
    for name in ["err", "boom"] {
        let out = tm.call(name, json!({"pin": "pin-9876"}), inapp()).await;
        let text = json_of(&out);
        assert!(!text.contains("pin-9876"), "{text}");
        assert!(text.contains(REDACTED), "{text}");
    }
}

#[tokio::test]
async fn when_the_paths_cannot_be_read_the_whole_input_is_redacted() {
    let seen = seen();
    let s = seen.clone();
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::new("plugin", "A plugin tool")
            .effect(Effect::Consequential)
            .sensitive_fn(|| Err("the plugin is not loaded".to_owned()))
            .handler(move |_ctx, input| {
                let s = s.clone();
                async move {
                    s.lock().unwrap().push(input);
                    Ok(json!(null))
                }
            }),
        Default::default(),
    )
    .unwrap();
    let out = tm
        .call("plugin", json!({"token": "abc-123"}), inapp())
        .await;
    let id = out.confirm_id().unwrap().to_owned();
    assert_eq!(tm.pending_confirmations()[0].input, json!(REDACTED));
    // Any placeholder in an edit is refused: nothing can be restored.
    let bad = tm
        .confirm_pending(&id, Decision::approve_with(json!({"token": REDACTED})))
        .await;
    assert_eq!(
        issues_of(&bad),
        [("token".to_owned(), "Re-enter sensitive field".to_owned())]
    );
    // Approving without an edit runs with the real input.
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(seen.lock().unwrap()[0], json!({"token": "abc-123"}));
}

#[tokio::test]
async fn dynamic_paths_are_read_at_request_time() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::new("plugin", "A plugin tool")
            .input_schema(json!({"type": "object", "properties": {"token": {"type": "string"}, "note": {"type": "string"}}}))
            .effect(Effect::Destructive)
            .sensitive_fn(|| Ok(vec!["token".to_owned()]))
            .handler(|_ctx, input| async move { Ok(input) }),
        Default::default(),
    )
    .unwrap();
    tm.call("plugin", json!({"token": "abc-123", "note": "hi"}), inapp())
        .await;
    assert_eq!(
        tm.pending_confirmations()[0].input,
        json!({"token": REDACTED, "note": "hi"})
    );
    assert_eq!(
        tm.manifest(Caller::InApp)[0].input_schema["properties"]["token"]["writeOnly"],
        true
    );
}

#[test]
fn debug_output_never_prints_secrets() {
    let d = Decision::approve_with(json!({"pin": "9876"}));
    assert!(!format!("{d:?}").contains("9876"));
    let c = Change::new("pin", Some(json!("9876")), Some(json!("1111")));
    let text = format!("{c:?}");
    assert!(!text.contains("9876") && !text.contains("1111"), "{text}");
    let ctx = toolmark::testing::context(Caller::Test).build();
    assert!(!format!("{ctx:?}").contains("input"));
}
