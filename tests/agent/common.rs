//! Fixtures: tools with nested inputs, optional fields, enums, maps, sensitive
//! fields and dotted names; scripted model responses for each provider.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};
use toolmark::agent::Provider;
use toolmark::clock::ManualClock;
use toolmark::{Effect, NoInput, ToolError, ToolSpec, Toolmark};

/// A card number no surface may show.
pub(crate) const SECRET_NUMBER: &str = "4111111111111111";
/// A CVC no surface may show.
pub(crate) const SECRET_CVC: &str = "7Q2X";

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct Address {
    /// Street and number.
    pub(crate) street: String,
    /// City.
    pub(crate) city: String,
    /// Postal code, when known.
    pub(crate) zip: Option<String>,
}

/// The customer's plan.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Plan {
    Free,
    Pro,
    Enterprise,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct NewCustomer {
    /// Full name.
    pub(crate) name: String,
    /// Contact e-mail.
    pub(crate) email: Option<String>,
    pub(crate) plan: Plan,
    pub(crate) address: Address,
    /// Number of seats.
    pub(crate) seats: Option<u32>,
    #[serde(default)]
    pub(crate) tags: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct Labels {
    /// Label name → value.
    pub(crate) labels: BTreeMap<String, String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct NewCard {
    /// Name on the card.
    pub(crate) holder: String,
    /// Card number.
    pub(crate) number: String,
    /// Security code.
    pub(crate) cvc: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct Lookup {
    /// The customer's id.
    pub(crate) id: u64,
}

/// The long scope name that must be shortened for every provider.
pub(crate) const LONG: &str =
    "organisation_settings.integrations_and_webhooks.outgoing_deliveries.redeliver_failed";

/// A toolmark on a manual clock with the fixture tools.
pub(crate) fn fixture() -> (Toolmark, ManualClock) {
    let clock = ManualClock::new();
    let tm = Toolmark::builder().clock(clock.clone()).build().unwrap();
    tm.scope_at("crm.customers")
        .register(
            ToolSpec::typed(
                "create",
                "Create a customer with an address and a plan.",
                |_ctx, c: NewCustomer| async move {
                    let plan = match c.plan {
                        Plan::Free => "free",
                        Plan::Pro => "pro",
                        Plan::Enterprise => "enterprise",
                    };
                    Ok::<_, ToolError>(json!({
                        "id": 42, "name": c.name, "plan": plan, "city": c.address.city,
                        "street": c.address.street, "zip": c.address.zip, "email": c.email,
                        "seats": c.seats, "tags": c.tags,
                    }))
                },
            )
            .effect(Effect::Write),
        )
        .unwrap();
    tm.scope_at("crm.customers")
        .register(
            ToolSpec::typed(
                "get",
                "Look up a customer by id.",
                |_ctx, l: Lookup| async move {
                    if l.id == 404 {
                        Err(ToolError::new("no customer with that id"))
                    } else {
                        Ok(json!({"id": l.id, "name": "Ada Lovelace"}))
                    }
                },
            )
            .effect(Effect::Read),
        )
        .unwrap();
    tm.scope_at("crm.labels")
        .register(
            ToolSpec::typed(
                "set",
                "Set labels on the workspace.",
                |_ctx, l: Labels| async move { Ok::<_, ToolError>(l.labels.len()) },
            )
            .effect(Effect::Write),
        )
        .unwrap();
    tm.scope("billing")
        .register(
            ToolSpec::typed(
                "add_card",
                "Add a payment card.",
                |_ctx, c: NewCard| async move {
                    if c.holder.is_empty() || c.cvc.is_empty() {
                        return Err(ToolError::new("holder and security code are required"));
                    }
                    let last4 = c
                        .number
                        .get(c.number.len().saturating_sub(4)..)
                        .unwrap_or("");
                    Ok(format!("card ending {last4} added"))
                },
            )
            .effect(Effect::Consequential)
            .sensitive(["number", "cvc"])
            .summary("Add a card for {holder}"),
        )
        .unwrap();
    tm.root()
        .register(
            ToolSpec::typed(
                "status",
                "Report the service status.",
                |_ctx, _: NoInput| async { Ok::<_, ToolError>("all systems nominal") },
            )
            .effect(Effect::Read),
        )
        .unwrap();
    let (scope, tool) = LONG.rsplit_once('.').unwrap();
    tm.scope_at(scope)
        .register(
            ToolSpec::typed(
                "redeliver_failed",
                "Redeliver failed webhook deliveries.",
                |_ctx, _: NoInput| async { Ok::<_, ToolError>(0) },
            )
            .effect(Effect::Write),
        )
        .unwrap();
    assert_eq!(tool, "redeliver_failed");
    (tm, clock)
}

/// The provider's name for a Toolmark tool.
pub(crate) fn pname(provider: Provider, tool: &str) -> String {
    let (tm, _) = fixture();
    let agent = toolmark::agent::AgentTools::new(&tm, provider);
    agent
        .tool_list()
        .names()
        .to_provider(tool)
        .unwrap()
        .to_owned()
}

/// One scripted model response per provider, with five calls: a normal call, a
/// malformed call, a call that waits for the user (with secrets), a tool error,
/// and an unknown tool.
pub(crate) fn scripted_response(provider: Provider) -> Value {
    let create = pname(provider, "crm.customers.create");
    let get = pname(provider, "crm.customers.get");
    let card = pname(provider, "billing.add_card");
    let customer = json!({
        "name": "Ada Lovelace", "plan": "pro",
        "address": {"street": "1 Analytical St", "city": "London"}, "tags": ["vip"]
    });
    let card_in = json!({"holder": "Ada", "number": SECRET_NUMBER, "cvc": SECRET_CVC});
    match provider {
        Provider::OpenAiChat => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
                "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": create, "arguments": customer.to_string()}},
                    {"id": "call_2", "type": "function", "function": {"name": get, "arguments": "{\"id\": 7"}},
                    {"id": "call_3", "type": "function", "function": {"name": card, "arguments": card_in.to_string()}},
                    {"id": "call_4", "type": "function", "function": {"name": get, "arguments": "{\"id\":404}"}},
                    {"id": "call_5", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}}
                ]}}]
        }),
        Provider::OpenAiResponses => json!({
            "id": "resp_1", "object": "response", "created_at": 1767225600, "model": "gpt-4o-mini",
            "status": "completed", "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "output": [
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": create, "arguments": customer.to_string(), "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": get, "arguments": "[7]", "status": "completed"},
                {"type": "function_call", "id": "fc_3", "call_id": "call_3", "name": card, "arguments": card_in.to_string(), "status": "completed"},
                {"type": "function_call", "id": "fc_4", "call_id": "call_4", "name": get, "arguments": "{\"id\":404}", "status": "completed"},
                {"type": "function_call", "id": "fc_5", "call_id": "call_5", "name": "no_such_tool", "arguments": "{}", "status": "completed"}
            ]
        }),
        Provider::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 10},
            "content": [
                {"type": "text", "text": "Working on it."},
                {"type": "tool_use", "id": "toolu_1", "name": create, "input": customer},
                {"type": "tool_use", "id": "toolu_2", "name": get, "input": {"id": "seven"}},
                {"type": "tool_use", "id": "toolu_3", "name": card, "input": card_in},
                {"type": "tool_use", "id": "toolu_4", "name": get, "input": {"id": 404}},
                {"type": "tool_use", "id": "toolu_5", "name": "no_such_tool", "input": {}}
            ]
        }),
        Provider::Gemini => json!({
            "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
                {"functionCall": {"id": "fc_1", "name": create, "args": customer}},
                {"functionCall": {"id": "fc_2", "name": get, "args": {"id": -1}}},
                {"functionCall": {"id": "fc_3", "name": card, "args": card_in}},
                {"functionCall": {"id": "fc_4", "name": get, "args": {"id": 404}}},
                {"functionCall": {"name": "no_such_tool", "args": {}}}
            ]}}],
            "modelVersion": "gemini-2.5-flash"
        }),
        _ => unreachable!("a provider without a scripted response"),
    }
}

/// `tests/agent/golden/<name>.json`; `TOOLMARK_UPDATE_GOLDEN=1` rewrites it.
pub(crate) fn golden(name: &str, actual: &Value) {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agent/golden")
        .join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("TOOLMARK_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with TOOLMARK_UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    assert_eq!(
        serde_json::from_str::<Value>(&expected).unwrap(),
        *actual,
        "{} differs (run with TOOLMARK_UPDATE_GOLDEN=1 to accept)",
        path.display()
    );
}

/// Whether `text` holds a fixture secret.
pub(crate) fn leaks(text: &str) -> bool {
    text.contains(SECRET_NUMBER) || text.contains(SECRET_CVC)
}
