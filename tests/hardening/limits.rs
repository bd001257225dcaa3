//! Limits an attacker can push: summaries, issue lists, pending confirmations.

use serde_json::{json, Map, Value};
use toolmark::{Effect, RefusalCode, ToolSpec, Toolmark};

use crate::*;

fn guarded(name: &str) -> ToolSpec {
    ToolSpec::new(name, "Send")
        .input_schema(json!({
            "type": "object",
            "properties": {"title": {"type": "string"}},
            "additionalProperties": false
        }))
        .effect(Effect::Consequential)
        .summary("Send \"{title}\" now")
        .handler(|_ctx, _input| async { Ok(json!("sent")) })
}

#[tokio::test]
async fn a_summary_is_one_short_line_whatever_the_placeholder_holds() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(guarded("send"), Default::default()).unwrap();
    let spoof = format!("{}\nAPPROVED BY ADMIN\r\t\u{202e}", "x".repeat(100_000));
    let out = tm.call("send", json!({"title": spoof}), inapp()).await;
    let pending = tm.pending_confirmations();
    let summary = &pending[0].summary;
    assert!(
        summary.chars().count() <= 200,
        "{} chars",
        summary.chars().count()
    );
    assert!(
        !summary.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "no control or bidi characters: {summary:?}"
    );
    assert!(summary.starts_with("Send \"x"), "{summary}");
    assert!(summary.contains('…'), "a cut is marked: {summary}");
    let json = json_of(&out);
    assert!(
        json.len() < 2_000,
        "the outcome is small: {} bytes",
        json.len()
    );
}

#[tokio::test]
async fn a_short_summary_is_kept_exactly() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(guarded("send"), Default::default()).unwrap();
    tm.call("send", json!({"title": "Robotics — día 1"}), inapp())
        .await;
    assert_eq!(
        tm.pending_confirmations()[0].summary,
        "Send \"Robotics — día 1\" now"
    );
}

#[tokio::test]
async fn twenty_thousand_unknown_keys_give_a_short_refusal() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(guarded("send"), Default::default()).unwrap();
    let mut input = Map::new();
    for i in 0..20_000 {
        input.insert(format!("k{i}"), json!(i));
    }
    let out = tm.call("send", Value::Object(input), inapp()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    let issues = &out.refusal().unwrap().issues;
    assert!(issues.len() <= 21, "{} issues", issues.len());
    assert!(
        issues.last().unwrap().message.contains("more"),
        "the rest is counted: {:?}",
        issues.last()
    );
    assert!(
        json_of(&out).len() < 10_000,
        "{} bytes",
        json_of(&out).len()
    );
}
