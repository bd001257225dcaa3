//! Each provider's shapes: tool definitions, tool results, and the message that
//! carries a bridge decision. One function per direction, one `match` per provider.

use std::sync::Arc;

use serde_json::{json, Value};

use super::schema::{clean, limit_description, strict};
use super::{AgentOptions, Converted, Provider, ToolEntry};
use crate::sensitive::{bounded, MAX_PATH_CHARS};
use crate::{Outcome, RefusalCode, ToolInfo};

/// Convert one tool, named `name` for the provider.
pub(crate) fn convert_tool(
    provider: Provider,
    options: &AgentOptions,
    info: &ToolInfo,
    name: &str,
) -> ToolEntry {
    let max = options.max_description.or(provider.description_limit());
    let description = limit_description(&info.description, max);
    let keep_write_only = provider == Provider::Anthropic;
    let cleaned = clean(&info.input_schema, keep_write_only);
    let openai = matches!(provider, Provider::OpenAiChat | Provider::OpenAiResponses);
    let mut not_strict = None;
    let (schema, is_strict) = if openai && options.strict {
        match strict(&cleaned) {
            Ok(s) => (s, true),
            Err(reason) => {
                not_strict = Some(reason);
                (cleaned, false)
            }
        }
    } else {
        (cleaned, false)
    };
    let strict_schema = is_strict.then(|| Arc::clone(&info.input_schema));
    let def = match provider {
        Provider::OpenAiChat if options.strict => json!({
            "type": "function",
            "function": {
                "name": name, "description": description,
                "parameters": schema, "strict": is_strict,
            }
        }),
        Provider::OpenAiChat => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema}
        }),
        Provider::OpenAiResponses => json!({
            "type": "function", "name": name, "description": description,
            "parameters": schema, "strict": is_strict,
        }),
        Provider::Anthropic => json!({
            "name": name, "description": description, "input_schema": schema,
        }),
        Provider::Gemini => json!({
            "name": name, "description": description, "parametersJsonSchema": schema,
        }),
    };
    ToolEntry {
        schema: Arc::clone(&info.input_schema),
        source_description: info.description.clone(),
        provider_name: name.to_owned(),
        def: Arc::new(def),
        not_strict,
        converted: Converted {
            tool: info.name.clone(),
            description,
            strict_schema,
        },
    }
}

/// The request's `tools` value from the definitions (for Gemini, one
/// `{"functionDeclarations": […]}` tool).
pub(crate) fn assemble(provider: Provider, entries: &[Arc<ToolEntry>]) -> Value {
    let tools: Vec<Value> = entries.iter().map(|e| Value::clone(&e.def)).collect();
    match provider {
        Provider::Gemini => json!([{"functionDeclarations": tools}]),
        _ => Value::Array(tools),
    }
}

/// What the model reads for an outcome: the outcome's JSON, except for
/// `needs_confirmation`, which says the action waits for the user and must not be
/// retried (the confirm id is left out: only the user approves).
pub(crate) fn result_payload(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::NeedsConfirmation {
            summary,
            changes,
            expires_at,
            ..
        } => {
            let expires = humantime::format_rfc3339_millis(*expires_at).to_string();
            json!({
                "status": "waiting_for_user",
                "summary": summary,
                "changes": changes,
                "expiresAt": expires,
                "message": "This action is waiting for the user's confirmation and has not run yet. \
                            Do not call the tool again for it: the user's decision will arrive \
                            in a later message.",
            })
        }
        other => serde_json::to_value(other).unwrap_or_else(
            |_| json!({"status": "error", "message": "the outcome could not be serialized"}),
        ),
    }
}

/// Whether the provider should see the result as an error.
pub(crate) fn is_error(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Refused(_) | Outcome::Error(_))
}

/// The tool-result block for one call.
pub(crate) fn result_block(
    provider: Provider,
    call_id: Option<&str>,
    name: &str,
    outcome: &Outcome,
) -> Value {
    // A successful call answers with its output itself; anything else with the
    // outcome's JSON (status, code, message, issues).
    let payload = match outcome {
        Outcome::Ok { output } => output.clone(),
        other => result_payload(other),
    };
    let text = match &payload {
        Value::String(s) if outcome.is_ok() => s.clone(),
        other => other.to_string(),
    };
    // What the model wrote comes back bounded (a valid id or name is far shorter).
    let id = bounded(call_id.unwrap_or_default(), MAX_PATH_CHARS);
    let id = id.as_ref();
    let name = bounded(name, MAX_PATH_CHARS);
    let name = name.as_ref();
    match provider {
        Provider::OpenAiChat => json!({"role": "tool", "tool_call_id": id, "content": text}),
        Provider::OpenAiResponses => {
            json!({"type": "function_call_output", "call_id": id, "output": text})
        }
        Provider::Anthropic => json!({
            "type": "tool_result", "tool_use_id": id, "content": text,
            "is_error": is_error(outcome),
        }),
        Provider::Gemini => {
            let key = if is_error(outcome) { "error" } else { "output" };
            let mut part = json!({"name": name, "response": {key: payload}});
            if call_id.is_some() {
                part["id"] = json!(id);
            }
            json!({"functionResponse": part})
        }
    }
}

/// The messages to append for a batch of result blocks.
pub(crate) fn result_messages(provider: Provider, blocks: Vec<Value>) -> Vec<Value> {
    if blocks.is_empty() {
        return blocks;
    }
    match provider {
        Provider::OpenAiChat | Provider::OpenAiResponses => blocks,
        Provider::Anthropic => vec![json!({"role": "user", "content": blocks})],
        Provider::Gemini => vec![json!({"role": "user", "parts": blocks})],
    }
}

/// A user-role text message in the provider's format.
pub(crate) fn text_message(provider: Provider, text: &str) -> Value {
    match provider {
        Provider::OpenAiChat => json!({"role": "user", "content": text}),
        Provider::OpenAiResponses => json!({"type": "message", "role": "user", "content": text}),
        Provider::Anthropic => json!({"role": "user", "content": [{"type": "text", "text": text}]}),
        Provider::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
    }
}

/// The sentence for a bridge decision.
pub(crate) fn decision_text(tool: &str, call_id: Option<&str>, outcome: &Outcome) -> String {
    let call = call_id.map(|id| format!(", call {id}")).unwrap_or_default();
    let head = format!("Update on the action that was waiting for the user (tool {tool}{call}):");
    match outcome {
        Outcome::Ok { output } => {
            format!("{head} the user approved it and it ran. Result: {output}")
        }
        Outcome::Refused(r) if r.code == RefusalCode::Rejected => {
            format!("{head} the user rejected it; it did not run. {}", r.message)
        }
        Outcome::Refused(r) if r.code == RefusalCode::ConfirmationExpired => format!(
            "{head} the confirmation expired; it did not run. Ask the user before trying again."
        ),
        Outcome::Refused(r) => {
            format!("{head} it did not run ({}): {}", r.code, r.message)
        }
        Outcome::Error(e) => format!("{head} the user approved it but it failed: {}", e.message),
        Outcome::NeedsConfirmation { summary, .. } => {
            format!("{head} it is still waiting for the user: {summary}")
        }
    }
}
