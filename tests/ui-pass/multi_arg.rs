//! Plain arguments become the fields of a generated input.
use serde_json::json;
use toolmark::{tool, CallOptions, Caller};

/// Add two numbers.
#[tool(read_only)]
async fn add(
    #[arg(description = "The first term")] a: i64,
    b: Option<i64>,
    tags: Vec<String>,
) -> i64 {
    a + b.unwrap_or(0) + i64::try_from(tags.len()).unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tm = toolmark::testing::test_toolmark();
    tm.register_collected().unwrap();
    let out = tm
        .call(
            "add",
            json!({"a": 2, "b": 3, "tags": ["x"]}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(out.output(), Some(&json!(6)));
    // A direct call keeps the original signature.
    assert_eq!(add(1, None, Vec::new()).await, 1);
}
