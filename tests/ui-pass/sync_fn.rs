//! A fn that is not async runs on the blocking pool.
use serde_json::json;
use toolmark::{tool, CallOptions, Caller};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

/// Count the words.
#[tool(read_only)]
fn words(input: Text) -> usize {
    input.text.split_whitespace().count()
}

#[tokio::main]
async fn main() {
    let tm = toolmark::testing::test_toolmark();
    tm.register_collected().unwrap();
    let out = tm
        .call(
            "words",
            json!({"text": "one two three"}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(out.output(), Some(&json!(3)));
    assert_eq!(words(Text { text: "a b".into() }), 2);
}
