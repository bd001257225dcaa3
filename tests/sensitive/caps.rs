//! One refusal lists at most 20 issues, then one issue "and N more issues",
//! wherever the issues come from: the typed decode, the key check of a tool with
//! sensitive paths, a dynamic tool's schema validation, restoring an approver's edit.

use serde_json::{json, Map, Value};
use toolmark::{Decision, Outcome, RefusalCode, ToolSpec, Toolmark};

use crate::*;

fn many_keys(n: usize) -> Value {
    let map: Map<String, Value> = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
    Value::Object(map)
}

fn assert_capped(out: &Outcome, total: usize) {
    let r = out.refusal().unwrap_or_else(|| panic!("refused: {out:?}"));
    assert_eq!(r.code, RefusalCode::Invalid);
    assert_eq!(r.issues.len(), 21, "{:?}", &r.issues[..3]);
    let last = r.issues.last().unwrap();
    assert_eq!(last.path, "");
    assert_eq!(last.message, format!("and {} more issues", total - 20));
    assert!(
        r.message.ends_with(&format!("(and {} more)", total - 1)),
        "{}",
        r.message
    );
    assert!(serde_json::to_string(out).unwrap().len() < 4_000);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Plain {
    a: Option<i64>,
}

#[tokio::test]
async fn issues_are_capped_for_the_typed_decode_and_the_key_check() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::typed("plain", "Plain", |_ctx, _p: Plain| async { Ok(1) }),
        Default::default(),
    )
    .unwrap();
    tm.register(
        ToolSpec::typed("secret", "Secret", |_ctx, _p: Plain| async { Ok(1) }).sensitive(["a"]),
        Default::default(),
    )
    .unwrap();
    for tool in ["plain", "secret"] {
        let out = tm.call(tool, many_keys(20_000), inapp()).await;
        assert_capped(&out, 20_000);
    }
    // At the limit, nothing is cut.
    let out = tm.call("plain", many_keys(20), inapp()).await;
    assert_eq!(out.refusal().unwrap().issues.len(), 20);
}

#[tokio::test]
async fn issues_are_capped_for_a_dynamic_schema() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::new("dyn", "Dynamic")
            .input_schema(json!({
                "type": "object",
                "additionalProperties": {"type": "string"}
            }))
            .handler(|_ctx, _input| async { Ok(json!(1)) }),
        Default::default(),
    )
    .unwrap();
    let out = tm.call("dyn", many_keys(500), inapp()).await;
    assert_capped(&out, 500);
}

#[tokio::test]
async fn issues_are_capped_when_restoring_an_edit() {
    let seen = seen();
    let tm = deferred_tm(&seen);
    let id = tm
        .call("pay", input(), inapp())
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    // 100 new rows, each with a placeholder that has no value to take.
    let mut edit = redacted_input();
    edit["cards"] = (0..100)
        .map(|i| json!({"number": format!("n{i}"), "cvc": REDACTED}))
        .collect();
    let out = tm.confirm_pending(&id, Decision::approve_with(edit)).await;
    assert_capped(&out, 100);
    assert!(seen.lock().unwrap().is_empty());
}
