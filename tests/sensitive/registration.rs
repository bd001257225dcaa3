//! What registration and validation say about sensitive paths: a path through a
//! flattened field suggests the `json:` form that works; a withheld value still
//! names the expected type; the manifest keeps no unused `$defs`.

use serde_json::json;
use toolmark::{Caller, ToolSpec, Toolmark};

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Card {
    holder: String,
    cvc: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    id: String,
    #[serde(flatten)]
    card: Card,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Wallet {
    cards: Vec<Card>,
    other: Vec<Card>,
}

#[test]
fn a_sensitive_path_through_a_flattened_field_suggests_the_json_form() {
    let tm = Toolmark::builder().build().unwrap();
    let err = tm
        .register(
            ToolSpec::typed("order", "Order", |_ctx, _o: Order| async { Ok(1) })
                .sensitive(["card.cvc"]),
            Default::default(),
        )
        .expect_err("card is flattened");
    assert_eq!(err.code(), "invalid_sensitive_path");
    let text = err.to_string();
    assert!(text.contains("write \"json:cvc\""), "{text}");
    assert!(text.contains("flatten"), "{text}");
    // The suggested form registers.
    tm.register(
        ToolSpec::typed("order", "Order", |_ctx, _o: Order| async { Ok(1) })
            .sensitive(["json:cvc"]),
        Default::default(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_withheld_value_of_a_dynamic_tool_still_names_the_expected_type() {
    let seen = seen();
    let tm = deferred_tm(&seen);
    let mut bad = input();
    bad["pin"] = json!(9876);
    let out = tm.call("pay", bad, inapp()).await;
    assert_eq!(
        issues_of(&out),
        [(
            "pin".to_owned(),
            "expected string (value withheld)".to_owned()
        )]
    );
    assert!(!json_of(&out).contains("9876"));
}

#[test]
fn the_manifest_keeps_no_unused_defs_after_inlining() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::typed("one", "One use of Card", |_ctx, _w: Order| async { Ok(1) })
            .sensitive(["json:cvc"]),
        Default::default(),
    )
    .unwrap();
    tm.register(
        ToolSpec::typed("two", "Two uses of Card", |_ctx, _w: Wallet| async {
            Ok(1)
        })
        .sensitive(["cards[].cvc", "other[].cvc"]),
        Default::default(),
    )
    .unwrap();
    for tool in tm.manifest(Caller::Human) {
        let schema = tool.input_schema.to_string();
        assert!(!schema.contains("$defs"), "{}: {schema}", tool.name);
        assert!(schema.contains("writeOnly"), "{}: {schema}", tool.name);
    }
}
