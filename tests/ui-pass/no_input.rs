//! A tool without input takes `{}`.
use serde_json::json;
use toolmark::{tool, CallOptions, Caller, ToolContext};

/// Say hello.
#[tool(read_only, name = "hello-world", title = "Hello")]
async fn hello(ctx: ToolContext) -> String {
    format!("hello, {}", ctx.caller())
}

#[tool]
fn nothing() {}

#[tokio::main]
async fn main() {
    let tm = toolmark::testing::test_toolmark();
    tm.register_collected().unwrap();
    let out = tm
        .call("hello-world", json!({}), CallOptions::new(Caller::Tour))
        .await;
    assert_eq!(out.output(), Some(&json!("hello, tour")));
    let out = tm
        .call(
            "nothing",
            serde_json::Value::Null,
            CallOptions::new(Caller::Tour),
        )
        .await;
    assert_eq!(out.output(), Some(&json!(null)));
    let info = tm.manifest(Caller::Human);
    assert_eq!(info[0].name, "hello-world");
    assert_eq!(info[0].description, "Say hello.");
    assert_eq!(info[0].title.as_deref(), Some("Hello"));
}
