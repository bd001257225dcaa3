//! `State<T>` parameters are extracted from the builder's states.
use serde_json::json;
use toolmark::{tool, CallOptions, Caller, State, ToolContext};

struct Greeting(&'static str);

#[tool]
async fn greet(ctx: ToolContext, greeting: State<Greeting>, name: String) -> String {
    let Greeting(word) = *greeting;
    format!("{word} {name} ({})", ctx.caller())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tm = toolmark::testing::test_toolmark_builder()
        .state(Greeting("Hello"))
        .build()
        .unwrap();
    tm.register_collected().unwrap();
    let out = tm
        .call(
            "greet",
            json!({"name": "Ada"}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(out.output(), Some(&json!("Hello Ada (mcp)")));
}
