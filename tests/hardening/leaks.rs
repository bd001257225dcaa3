//! Secret leaks: every value the tool's decode reads is seen by redaction, outputs and
//! confirmation changes are scrubbed, and map keys under a sensitive path are secret.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{
    tool, Ask, CallOptions, Caller, Change, ConfirmRequest, Decision, Effect, RefusalCode,
    ToolContext, ToolError, ToolSpec, Toolmark,
};

use crate::*;

mod alias {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Card {
        pub(crate) holder: String,
        #[serde(alias = "cvv")]
        pub(crate) cvc: String,
    }

    /// Pay with a card.
    #[tool(consequential, sensitive = "cvc", summary = "Pay {holder} (cvc {cvc})")]
    pub(crate) async fn pay_alias(input: Card) -> Result<String, ToolError> {
        Err(ToolError::new(format!("declined: cvc {}", input.cvc)))
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Order {
        pub(crate) item: String,
        pub(crate) card: Card,
    }

    /// Order with a card (the alias one level down).
    #[tool(consequential, sensitive = "card.cvc")]
    pub(crate) async fn order_alias(input: Order) -> String {
        format!("ordered {}", input.item)
    }
}

/// An inline toolmark with `module`'s tools whose handler approves and records each
/// request it is shown.
fn approving_and_recording(module: &str) -> (Toolmark, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let shown = Arc::new(Mutex::new(Vec::new()));
    let seen = shown.clone();
    let tm = Toolmark::builder()
        .confirm_handler(move |req: ConfirmRequest| {
            seen.lock().unwrap().push(req);
            async { Decision::approve() }
        })
        .build()
        .unwrap();
    tm.register_collected_where(|c| c.module_path == module)
        .unwrap();
    (tm, shown)
}

fn everything_observed(tm: &Toolmark, out: &toolmark::Outcome) -> Vec<(&'static str, String)> {
    let pending = tm.pending_confirmations();
    vec![
        ("outcome", json_of(out)),
        ("outcome Debug", format!("{out:?}")),
        ("pending", json_of(&pending)),
        ("pending Debug", format!("{pending:?}")),
    ]
}

#[tokio::test]
async fn an_alias_key_holding_a_secret_is_refused_invalid_and_never_shown() {
    let tm = with_tools(alias::MODULE);
    let mut events = tm.events();
    let out = tm
        .call(
            "pay_alias",
            json!({"holder": "Ada", "cvv": "S3CRET"}),
            inapp(),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    assert!(tm.pending_confirmations().is_empty());
    assert_absent("S3CRET", &everything_observed(&tm, &out));
    while let Ok(e) = events.try_recv() {
        assert_absent(
            "S3CRET",
            &[("event", json_of(&e)), ("event Debug", format!("{e:?}"))],
        );
    }
}

#[tokio::test]
async fn an_alias_key_is_refused_at_every_depth_even_when_unknown_fields_are_allowed() {
    let tm = Toolmark::builder()
        .allow_unknown_fields(true)
        .build()
        .unwrap();
    tm.register_collected_where(|c| c.module_path == alias::MODULE)
        .unwrap();
    let out = tm
        .call(
            "order_alias",
            json!({"item": "book", "card": {"holder": "Ada", "cvv": "N3STED"}}),
            inapp(),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    let issues = &out.refusal().unwrap().issues;
    assert!(
        issues.iter().any(|i| i.path == "card.cvv"),
        "the unknown key is named at its path: {issues:?}"
    );
    assert_absent("N3STED", &everything_observed(&tm, &out));
    // The schema's own names still work.
    let ok = tm
        .call(
            "order_alias",
            json!({"item": "book", "card": {"holder": "Ada", "cvc": "N3STED"}}),
            inapp(),
        )
        .await;
    assert!(ok.confirm_id().is_some(), "{ok:?}");
    assert_absent("N3STED", &everything_observed(&tm, &ok));
}

#[tokio::test]
async fn an_inline_confirm_request_never_sees_an_aliased_secret() {
    let (tm, shown) = approving_and_recording(alias::MODULE);
    let out = tm
        .call(
            "pay_alias",
            json!({"holder": "Ada", "cvv": "S3CRET"}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    assert!(
        shown.lock().unwrap().is_empty(),
        "never asked with bad input"
    );
    assert_absent("S3CRET", &[("outcome", json_of(&out))]);
}

mod outputs {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Charge {
        pub(crate) amount: u32,
        pub(crate) cvc: String,
    }

    /// Charge and echo the secret (a careless tool).
    #[tool(sensitive = "cvc")]
    pub(crate) async fn charge_echo(input: Charge) -> Value {
        json!({
            "message": format!("charged {} using cvc {}", input.amount, input.cvc),
            "cvc": input.cvc,
            "list": [input.cvc.clone()],
        })
    }

    /// The same, consequential: the output reaches the agent through the bridge.
    #[tool(consequential, sensitive = "cvc")]
    pub(crate) async fn charge_echo_guarded(input: Charge) -> String {
        format!("charged using cvc {}", input.cvc)
    }
}

#[tokio::test]
async fn a_tool_output_that_echoes_a_secret_is_scrubbed_before_it_leaves() {
    let tm = with_tools(outputs::MODULE);
    let out = tm
        .call(
            "charge_echo",
            json!({"amount": 5, "cvc": "C-7788"}),
            inapp(),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_absent("C-7788", &[("ok outcome", json_of(&out))]);
    let output = out.output().unwrap();
    assert!(output["message"]
        .as_str()
        .unwrap()
        .starts_with("charged 5 using cvc "));
}

#[tokio::test]
async fn an_approved_run_output_is_scrubbed_in_the_bridge_message_too() {
    let tm = with_tools(outputs::MODULE);
    let mut bridge = tm.bridge();
    let out = tm
        .call(
            "charge_echo_guarded",
            json!({"amount": 5, "cvc": "C-9911"}),
            inapp(),
        )
        .await;
    let done = tm
        .confirm_pending(out.confirm_id().unwrap(), Decision::approve())
        .await;
    assert!(done.is_ok(), "{done:?}");
    let msg = bridge.recv().await.unwrap();
    assert_absent(
        "C-9911",
        &[
            ("confirm_pending outcome", json_of(&done)),
            ("bridge", json_of(&msg)),
        ],
    );
}

mod changes {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Wallet {
        pub(crate) cards: Vec<Card>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Card {
        pub(crate) number: String,
        pub(crate) cvc: String,
    }

    /// Asks mid-run with changes that name a secret two ways.
    #[tool(sensitive = "cards[].cvc")]
    pub(crate) async fn update_wallet(input: Wallet, ctx: ToolContext) -> bool {
        let cvc = input.cards[0].cvc.clone();
        ctx.confirm(Ask {
            summary: "Update the wallet".into(),
            changes: vec![
                Change {
                    path: "/cards/0/cvc".into(),
                    before: None,
                    after: Some(json!(cvc.clone())),
                },
                Change {
                    path: "note".into(),
                    before: None,
                    after: Some(json!(format!("new card with cvc {cvc}"))),
                },
            ],
        })
        .await
        .approved
    }
}

#[tokio::test]
async fn ctx_confirm_changes_are_redacted_by_pointer_paths_and_scrubbed_of_secrets() {
    let (tm, shown) = approving_and_recording(changes::MODULE);
    let out = tm
        .call(
            "update_wallet",
            json!({"cards": [{"number": "4242", "cvc": "Z-4455"}]}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    let shown = shown.lock().unwrap();
    assert_eq!(shown.len(), 1);
    assert_absent(
        "Z-4455",
        &[
            ("ConfirmRequest", json_of(&shown[0])),
            ("ConfirmRequest Debug", format!("{:?}", shown[0])),
        ],
    );
}

mod maps {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Vault {
        pub(crate) owner: String,
        pub(crate) vault: HashMap<String, u32>,
    }

    /// Stores codes under secret names.
    #[tool(consequential, sensitive = "vault")]
    pub(crate) async fn store_vault(input: Vault) -> usize {
        input.vault.len()
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Purse {
        pub(crate) wallet: HashMap<String, Card>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Card {
        pub(crate) number: String,
        pub(crate) cvc: String,
    }

    /// Every card of a map of cards.
    #[tool(consequential, sensitive = "wallet[].cvc")]
    pub(crate) async fn store_purse(input: Purse) -> usize {
        input.wallet.len()
    }
}

#[tokio::test]
async fn keys_of_a_sensitive_map_never_appear_in_issues() {
    let tm = with_tools(maps::MODULE);
    let out = tm
        .call(
            "store_vault",
            json!({"owner": "Ada", "vault": {"KEY-s3cret": "not a number"}}),
            inapp(),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    assert_absent(
        "KEY-s3cret",
        &[
            ("refusal", json_of(&out)),
            ("refusal Debug", format!("{out:?}")),
        ],
    );
    assert_absent("not a number", &[("refusal", json_of(&out))]);
}

#[tokio::test]
async fn brackets_step_into_every_value_of_a_map() {
    let tm = with_tools(maps::MODULE);
    let out = tm
        .call(
            "store_purse",
            json!({"wallet": {
                "home": {"number": "4242", "cvc": "M-111"},
                "work": {"number": "5555", "cvc": "M-222"}
            }}),
            inapp(),
        )
        .await;
    assert!(out.confirm_id().is_some(), "{out:?}");
    let pending = tm.pending_confirmations();
    assert_eq!(
        pending[0].input["wallet"]["home"]["cvc"],
        json!("[redacted]")
    );
    assert_eq!(pending[0].input["wallet"]["work"]["number"], json!("5555"));
    assert_absent("M-111", &[("pending", json_of(&pending))]);
    assert_absent("M-222", &[("pending", json_of(&pending))]);
    let schema = schema_of(&tm, "store_purse");
    assert!(
        schema.to_string().contains("writeOnly"),
        "the map's cvc is writeOnly: {schema}"
    );
    let done = tm
        .confirm_pending(out.confirm_id().unwrap(), Decision::approve())
        .await;
    assert_eq!(done.output(), Some(&json!(2)));
}

mod values {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    /// Stores any JSON under a name.
    #[tool]
    pub(crate) async fn put_value(name: String, data: Value) -> Value {
        json!({"name": name, "data": data})
    }

    /// Only a JSON value.
    #[tool]
    pub(crate) async fn put_only_value(data: Value) -> Value {
        data
    }
}

#[tokio::test]
async fn a_plain_value_argument_is_a_field_like_any_other() {
    let tm = with_tools(values::MODULE);
    for name in ["put_value", "put_only_value"] {
        let schema = schema_of(&tm, name);
        assert!(
            schema["properties"].get("data").is_some(),
            "{name}: data is a property: {schema}"
        );
    }
    let out = tm
        .call("put_only_value", json!({"data": {"x": 1}}), inapp())
        .await;
    assert_eq!(out.output(), Some(&json!({"x": 1})));
    let out = tm
        .call("put_only_value", json!({"data": 1, "other": 2}), inapp())
        .await;
    assert_eq!(
        out.refusal_code(),
        Some(RefusalCode::Invalid),
        "unknown fields are refused again: {out:?}"
    );
}

mod defs {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Card {
        pub(crate) number: String,
        pub(crate) cvc: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // some fields are only read by serde
    pub(crate) struct Checkout {
        pub(crate) card: Card,
    }

    /// One card, its cvc sensitive: the def is inlined for `writeOnly`.
    #[tool(sensitive = "card.cvc")]
    pub(crate) async fn checkout(input: Checkout) -> String {
        input.card.number
    }
}

#[tokio::test]
async fn the_manifest_drops_defs_nothing_references() {
    let tm = with_tools(defs::MODULE);
    let schema = schema_of(&tm, "checkout");
    let text = schema.to_string();
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for name in defs.keys() {
            assert!(
                text.contains(&format!("#/$defs/{name}\"")),
                "$defs/{name} is referenced nowhere: {schema}"
            );
        }
        assert!(!defs.is_empty(), "an empty $defs is dropped: {schema}");
    }
}

#[tokio::test]
async fn a_pending_confirmation_of_a_hidden_tool_waits_until_it_shows_again() {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("billing");
    scope
        .register(
            ToolSpec::new("refund", "Refund")
                .input_schema(json!({"type": "object", "properties": {}}))
                .effect(Effect::Consequential)
                .handler(|_ctx, _input| async { Ok(json!("refunded")) }),
        )
        .unwrap();
    let out = tm.call("billing.refund", json!({}), inapp()).await;
    let id = out.confirm_id().unwrap().to_owned();
    scope.set_when(false);
    let refused = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(
        refused.refusal_code(),
        Some(RefusalCode::UnknownTool),
        "{refused:?}"
    );
    assert_eq!(tm.pending_confirmations().len(), 1, "not consumed");
    scope.set_when(true);
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(done.output(), Some(&json!("refunded")), "{done:?}");
}

#[tokio::test]
async fn a_panicking_confirm_handler_is_an_error_outcome_and_the_runtime_stays_usable() {
    let tm = Toolmark::builder()
        .confirm_handler(|req: ConfirmRequest| async move {
            if req.summary.contains("boom") {
                panic!("handler bug");
            }
            Decision::approve()
        })
        .build()
        .unwrap();
    tm.register(
        ToolSpec::new("send", "Send")
            .input_schema(json!({"type": "object", "properties": {"title": {"type": "string"}}}))
            .effect(Effect::Consequential)
            .summary("Send {title}")
            .handler(|_ctx, _input| async { Ok(json!("sent")) }),
        Default::default(),
    )
    .unwrap();
    let mcp = || CallOptions::new(Caller::Mcp);
    let out = tm.call("send", json!({"title": "boom"}), mcp()).await;
    assert_eq!(out.status(), "error", "{out:?}");
    let out = tm.call("send", json!({"title": "fine"}), mcp()).await;
    assert_eq!(out.output(), Some(&json!("sent")), "{out:?}");
}
