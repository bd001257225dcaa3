//! `anyhow::Result<T>` is a `Result` (by its last path segment); its error becomes
//! the error outcome's message.
use serde_json::json;
use toolmark::{tool, CallOptions, Caller};

#[tool]
async fn parse(text: String) -> anyhow::Result<i64> {
    Ok(text.trim().parse()?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tm = toolmark::testing::test_toolmark();
    tm.register_collected().unwrap();
    let ok = tm
        .call(
            "parse",
            json!({"text": " 42 "}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(ok.output(), Some(&json!(42)));
    let err = tm
        .call("parse", json!({"text": "x"}), CallOptions::new(Caller::Mcp))
        .await;
    assert_eq!(err.status(), "error");
    assert_eq!(
        serde_json::to_value(&err).unwrap()["message"],
        "invalid digit found in string"
    );
}
