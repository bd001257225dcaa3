//! Tool fixtures shared by the confirmation, sensitive and store test targets
//! (`#[path]`): not every target uses every item.
#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{Effect, ToolSpec};

/// A consequential tool that counts its runs and returns its caller and input.
pub fn guarded(name: &str, runs: &Arc<AtomicUsize>) -> ToolSpec {
    let runs = runs.clone();
    ToolSpec::new(name, format!("Send ({name})"))
        .input_schema(json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
            "additionalProperties": false
        }))
        .effect(Effect::Consequential)
        .summary("Create challenge \"{title}\"")
        .handler(move |ctx, input| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"caller": ctx.caller(), "input": input}))
            }
        })
}

/// A consequential "pay" tool whose cards' cvc (and the pin) are sensitive; it
/// records every input it runs with into `seen` and returns `answer(input)`.
pub fn pay_with(seen: &Arc<Mutex<Vec<Value>>>, answer: fn(&Value) -> Value) -> ToolSpec {
    let seen = seen.clone();
    ToolSpec::new("pay", "Pay with cards")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "pin": {"type": "string"},
                "cards": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"number": {"type": "string"}, "cvc": {"type": "string"}},
                        "required": ["number", "cvc"]
                    }
                }
            },
            "required": ["title", "cards"]
        }))
        .effect(Effect::Consequential)
        .sensitive(["cards[].cvc", "pin"])
        .summary("Pay \"{title}\" with pin {pin}")
        .handler(move |_ctx, input| {
            let seen = seen.clone();
            async move {
                let out = answer(&input);
                seen.lock().unwrap().push(input);
                Ok(out)
            }
        })
}
