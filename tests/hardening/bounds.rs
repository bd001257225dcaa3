//! Every string an attacker controls comes back bounded, on every surface that
//! carries it (key names, issue paths, tool names, the refusal's own message), and
//! an invalid input is refused with every wrong field at once.

use serde_json::{json, Map, Value};
use toolmark::agent::{AgentTools, Provider};
use toolmark::{tool, Caller, Effect, ToolError, ToolSpec, Toolmark};

use crate::*;

mod typed {
    use super::*;

    pub(crate) const MODULE: &str = module_path!();

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // read by serde only
    pub(crate) struct Order {
        pub(crate) qty: u32,
        pub(crate) price: f64,
        pub(crate) name: String,
        pub(crate) lines: Vec<Line>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // read by serde only
    pub(crate) struct Line {
        pub(crate) sku: String,
        pub(crate) count: u32,
    }

    /// Place an order.
    #[tool(read_only)]
    pub(crate) async fn place(input: Order) -> Result<String, ToolError> {
        Ok(input.name)
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // read by serde only
    pub(crate) struct Card {
        pub(crate) holder: String,
        pub(crate) cvc: String,
    }

    /// Store a card.
    #[tool(read_only, sensitive = "cvc")]
    pub(crate) async fn store_card(input: Card) -> Result<String, ToolError> {
        Ok(input.holder)
    }
}

/// The most bytes a refusal about one huge string may have.
const SMALL: usize = 4_000;

#[tokio::test]
async fn a_huge_unknown_key_name_never_comes_back_whole_on_any_surface() {
    let tm = with_tools(typed::MODULE);
    let key = "k".repeat(100_000);
    for tool in ["place", "store_card"] {
        let mut input = Map::new();
        input.insert(key.clone(), json!(1));
        let out = tm.call(tool, Value::Object(input.clone()), inapp()).await;
        let text = json_of(&out);
        assert!(
            text.len() < SMALL,
            "{tool}: a refusal of {} bytes",
            text.len()
        );
        assert!(format!("{out:?}").len() < SMALL);
        // Nested, and many of them.
        let mut many = Map::new();
        for i in 0..50 {
            many.insert(format!("{i}{key}"), json!({ key.clone(): 1 }));
        }
        let out = tm.call(tool, Value::Object(many), inapp()).await;
        assert!(json_of(&out).len() < 20 * SMALL, "{}", json_of(&out).len());
    }
    // Through the agent runner, every provider's result and message.
    for provider in Provider::ALL {
        let agent = AgentTools::new(&tm, provider);
        let name = agent
            .tool_list()
            .names()
            .to_provider("place")
            .unwrap()
            .to_owned();
        let mut input = Map::new();
        input.insert(key.clone(), json!(1));
        let call = toolmark::agent::ToolCallRequest {
            id: Some("c".to_owned()),
            name,
            arguments: Ok(Value::Object(input)),
        };
        let run = agent.run_calls(vec![call]).await;
        let all = Value::Array(run.messages.clone()).to_string();
        assert!(all.len() < SMALL, "{provider:?}: {} bytes", all.len());
    }
}

#[tokio::test]
async fn a_huge_tool_name_never_comes_back_whole() {
    let tm = with_tools(typed::MODULE);
    let name = "t".repeat(100_000);
    let out = tm.call(&name, json!({}), inapp()).await;
    assert!(json_of(&out).len() < 1_000, "{}", json_of(&out).len());
    let agent = AgentTools::new(&tm, Provider::Anthropic);
    let run = agent
        .run_calls(vec![toolmark::agent::ToolCallRequest {
            id: None,
            name,
            arguments: Ok(json!({})),
        }])
        .await;
    assert!(run.messages[0].to_string().len() < SMALL);
}

#[tokio::test]
async fn a_huge_value_quoted_by_a_message_comes_back_bounded() {
    let tm = with_tools(typed::MODULE);
    let big = "v".repeat(100_000);
    // serde quotes an unknown variant or a wrong string; the message is capped.
    let out = tm
        .call(
            "place",
            json!({"qty": big, "price": 1.0, "name": "n", "lines": []}),
            inapp(),
        )
        .await;
    let text = json_of(&out);
    assert!(text.len() < SMALL, "{}", text.len());
    let refusal = out.refusal().unwrap();
    assert!(refusal.message.chars().count() <= 600);
}

#[tokio::test]
async fn a_tool_whose_error_echoes_the_input_is_bounded() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::new("echo", "Fails with its input")
            .effect(Effect::Read)
            .handler(
                |_ctx, input| async move { Err(ToolError::new(format!("cannot use {input}"))) },
            ),
        Default::default(),
    )
    .unwrap();
    let out = tm
        .call("echo", json!({"x": "y".repeat(100_000)}), inapp())
        .await;
    assert!(json_of(&out).len() < 5_000, "{}", json_of(&out).len());
}

#[tokio::test]
async fn a_refusal_lists_every_wrong_field_at_once() {
    let tm = with_tools(typed::MODULE);
    let out = tm
        .call(
            "place",
            json!({
                "qty": "three", "price": "cheap", "name": 7,
                "lines": [{"sku": 1, "count": -1}, {"sku": "ok", "count": 2}]
            }),
            inapp(),
        )
        .await;
    let refusal = out.refusal().expect("refused");
    let mut paths: Vec<&str> = refusal.issues.iter().map(|i| i.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(
        paths,
        ["lines.0.count", "lines.0.sku", "name", "price", "qty"],
        "{refusal:?}"
    );
    // A missing field and a wrong one at once; an unknown field too.
    let out = tm
        .call(
            "place",
            json!({"qty": 1, "price": "x", "lines": [], "extra": true}),
            inapp(),
        )
        .await;
    let refusal = out.refusal().expect("refused");
    let texts: Vec<String> = refusal.issues.iter().map(ToString::to_string).collect();
    assert!(texts.iter().any(|t| t.contains("name")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("price")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("extra")), "{texts:?}");
}

#[tokio::test]
async fn every_wrong_field_is_listed_without_quoting_a_secret() {
    let tm = with_tools(typed::MODULE);
    let out = tm
        .call(
            "store_card",
            json!({"holder": 5, "cvc": 12345}),
            CallOptionsExt::mcp(),
        )
        .await;
    let refusal = out.refusal().expect("refused");
    let paths: Vec<&str> = refusal.issues.iter().map(|i| i.path.as_str()).collect();
    assert!(
        paths.contains(&"holder") && paths.contains(&"cvc"),
        "{paths:?}"
    );
    assert!(!json_of(&out).contains("12345"), "{}", json_of(&out));
}

/// Caller options this file uses.
struct CallOptionsExt;

impl CallOptionsExt {
    fn mcp() -> toolmark::CallOptions {
        toolmark::CallOptions::new(Caller::Mcp)
    }
}
