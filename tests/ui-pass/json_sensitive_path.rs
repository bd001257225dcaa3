//! A `json:` sensitive path names JSON properties: the way to mark a field with an
//! explicit `#[serde(rename)]`, checked at registration.
use serde_json::json;
use toolmark::{tool, Caller, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Login {
    user: String,
    #[serde(rename = "pass-word")]
    password: String,
}

#[tool(consequential, sensitive = "json:pass-word")]
async fn login(input: Login) -> Result<String, ToolError> {
    let _ = input.password;
    Ok(input.user)
}

fn main() {
    let tm = toolmark::testing::test_toolmark();
    tm.register_collected().unwrap();
    let schema = &tm.manifest(Caller::Human)[0].input_schema;
    assert_eq!(schema["properties"]["pass-word"]["writeOnly"], json!(true));
    assert!(schema["properties"]["user"].get("writeOnly").is_none());
}
