//! Running the model's tool calls: read them from the provider's response, call
//! each through [`Toolmark::call`](crate::Toolmark::call) (concurrently, each in its
//! own OpenTelemetry GenAI span), answer in the provider's format.

use futures_util::future::join_all;
use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

use super::format::{decision_text, result_block, result_messages, result_payload, text_message};
use super::schema::drop_optional_nulls;
use super::{AgentTools, Provider, Waiting};
use crate::sensitive::{bounded, MAX_PATH_CHARS};
use crate::{BridgeMessage, CallOptions, Issue, Outcome, Refusal, RefusalCode};

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRequest {
    /// The provider's call id (Gemini may leave it out).
    pub id: Option<String>,
    /// The tool name as the model wrote it (the provider's name).
    pub name: String,
    /// The arguments, or why they are not a JSON value (a malformed string).
    pub arguments: Result<Value, String>,
}

/// One call that ran (or was refused).
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// The provider's call id.
    pub call_id: Option<String>,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The Toolmark tool it named (the model's name when it named none).
    pub tool: String,
    /// What came of it.
    pub outcome: Outcome,
    /// The tool-result block in the provider's format.
    pub result: Value,
}

/// The model's tool calls, run: what came of each, and the messages to append to
/// the conversation.
#[derive(Clone, Debug, Default)]
pub struct ToolRun {
    /// Each call, in the order the model wrote them.
    pub calls: Vec<CallRecord>,
    /// What to append to the conversation, in the provider's format: OpenAI Chat
    /// one `role: "tool"` message per call; Responses one `function_call_output`
    /// item per call; Anthropic one `user` message of `tool_result` blocks; Gemini
    /// one `user` content of `functionResponse` parts. Empty when the model called
    /// no tool.
    pub messages: Vec<Value>,
}

impl ToolRun {
    /// Whether the model called no tool (its turn is over).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Arguments sent as a JSON string (OpenAI): parsed; `""` counts as `{}`.
pub(super) fn string_arguments(v: Option<&Value>) -> Result<Value, String> {
    match v {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Value::Null),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
            format!(
                "the arguments are not valid JSON (line {}, column {}); send one JSON object",
                e.line(),
                e.column()
            )
        }),
        // Lenient: an object where a string was expected is taken as is.
        Some(other) => Ok(other.clone()),
    }
}

/// The list at `key` of `v`, or `v` itself when it is a list.
fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    match v {
        Value::Array(items) => items,
        _ => v
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
    }
}

/// The tool calls in a provider's response. Accepts the whole response or the
/// assistant message / output list / content inside it.
pub(crate) fn extract(provider: Provider, response: &Value) -> Vec<ToolCallRequest> {
    match provider {
        Provider::OpenAiChat => {
            let message = response
                .get("choices")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("message"))
                .unwrap_or(response);
            list(message, "tool_calls")
                .iter()
                .map(|tc| {
                    let f = tc.get("function").unwrap_or(&Value::Null);
                    ToolCallRequest {
                        id: str_field(tc, "id"),
                        name: str_field(f, "name").unwrap_or_default(),
                        arguments: string_arguments(f.get("arguments")),
                    }
                })
                .collect()
        }
        Provider::OpenAiResponses => list(response, "output")
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
            .map(|i| ToolCallRequest {
                id: str_field(i, "call_id"),
                name: str_field(i, "name").unwrap_or_default(),
                arguments: string_arguments(i.get("arguments")),
            })
            .collect(),
        Provider::Anthropic => list(response, "content")
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .map(|b| ToolCallRequest {
                id: str_field(b, "id"),
                name: str_field(b, "name").unwrap_or_default(),
                arguments: Ok(b.get("input").cloned().unwrap_or(Value::Null)),
            })
            .collect(),
        Provider::Gemini => {
            let content = response
                .get("candidates")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("content"))
                .unwrap_or(response);
            list(content, "parts")
                .iter()
                .filter_map(|p| p.get("functionCall"))
                .map(|fc| ToolCallRequest {
                    id: str_field(fc, "id"),
                    name: str_field(fc, "name").unwrap_or_default(),
                    arguments: Ok(fc.get("args").cloned().unwrap_or(Value::Null)),
                })
                .collect()
        }
    }
}

/// The span's `error.type`: the refusal code, or `tool_error`.
fn error_type(outcome: &Outcome) -> Option<&'static str> {
    match outcome {
        Outcome::Refused(r) => Some(r.code.as_str()),
        Outcome::Error(_) => Some("tool_error"),
        _ => None,
    }
}

impl AgentTools {
    /// The tool calls in `response` (see [`run`](Self::run) for what is accepted).
    pub fn tool_calls(&self, response: &Value) -> Vec<ToolCallRequest> {
        extract(self.provider, response)
    }

    /// Run the model's tool calls in `response` and answer each, matched by call id.
    ///
    /// `response` is the provider's response JSON or the part that holds the calls:
    /// OpenAI Chat a completion or its assistant message (`tool_calls`, arguments
    /// a JSON string); Responses a response or its `output` list (`function_call`
    /// items); Anthropic a message or its `content` (`tool_use` blocks); Gemini a
    /// `GenerateContentResponse`, a candidate's `content`, or its `parts`
    /// (`functionCall` parts).
    ///
    /// Calls run concurrently through [`Toolmark::call`](crate::Toolmark::call);
    /// calls into one scope keep the model's order (the scope's queue). Malformed
    /// arguments become an `invalid` result the model can correct. A call that
    /// needs the user's confirmation answers that the action waits for the user and
    /// must not be retried; pass the bridge's later message to
    /// [`bridge_message`](Self::bridge_message). Never panics.
    ///
    /// Each call runs in a `tracing` span named `execute_tool` whose `otel.name` is
    /// `execute_tool {tool}`, with `gen_ai.operation.name = "execute_tool"`,
    /// `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"`,
    /// `gen_ai.tool.description`, and `error.type` (the refusal code, or
    /// `tool_error`) on failure; with [`AgentOptions::record_io`](super::AgentOptions::record_io),
    /// `gen_ai.tool.call.arguments` (redacted) and `gen_ai.tool.call.result`.
    pub async fn run(&self, response: &Value) -> ToolRun {
        self.run_calls(self.tool_calls(response)).await
    }

    /// Run already extracted tool calls (see [`run`](Self::run)).
    pub async fn run_calls(&self, calls: Vec<ToolCallRequest>) -> ToolRun {
        if calls.is_empty() {
            return ToolRun::default();
        }
        let list = self.tool_list();
        let runs = calls.into_iter().map(|call| {
            let list = &list;
            async move {
                // Only a name of the list the model was given names a tool: any
                // other is `unknown_tool`, never a tool of the same Toolmark name.
                let converted = list.converted(&call.name);
                let tool = converted.map_or_else(|| call.name.clone(), |c| c.tool.clone());
                let shown_tool = bounded(&tool, MAX_PATH_CHARS);
                let span = tracing::info_span!(
                    target: "toolmark::agent",
                    "execute_tool",
                    otel.name = %format_args!("execute_tool {shown_tool}"),
                    otel.kind = "internal",
                    gen_ai.operation.name = "execute_tool",
                    gen_ai.tool.name = %shown_tool,
                    gen_ai.tool.call.id = Empty,
                    gen_ai.tool.type = "function",
                    gen_ai.tool.description = Empty,
                    gen_ai.tool.call.arguments = Empty,
                    gen_ai.tool.call.result = Empty,
                    error.type = Empty,
                );
                if let Some(id) = &call.id {
                    span.record("gen_ai.tool.call.id", bounded(id, MAX_PATH_CHARS).as_ref());
                }
                if let Some(c) = converted {
                    span.record("gen_ai.tool.description", c.description.as_str());
                }
                let outcome = match (call.arguments, converted) {
                    (_, None) => Outcome::refused(
                        RefusalCode::UnknownTool,
                        format!(
                            "No tool named `{}` is available now",
                            bounded(&call.name, 120)
                        ),
                    ),
                    (Err(message), Some(_)) => {
                        Outcome::Refused(Refusal::invalid(vec![Issue::new("", message)]))
                    }
                    (Ok(mut input), Some(c)) => {
                        if let Some(schema) = &c.strict_schema {
                            drop_optional_nulls(&mut input, schema);
                        }
                        // Recorded after the call, from its secret set (so what the
                        // decode may read under an alias key is redacted too).
                        let recorded = self.options.record_io.then(|| input.clone());
                        let mut options = CallOptions::new(self.options.caller);
                        if let Some(session) = &self.options.session {
                            options = options.session(session.clone());
                        }
                        let outcome = self
                            .tm
                            .call(&c.tool, input, options)
                            .instrument(span.clone())
                            .await;
                        if let Some(input) = recorded
                            && let Some(observed) = self.tm.redact_input(&c.tool, &input)
                        {
                            span.record(
                                "gen_ai.tool.call.arguments",
                                observed.to_string().as_str(),
                            );
                        }
                        outcome
                    }
                };
                if let Some(e) = error_type(&outcome) {
                    span.record("error.type", e);
                }
                if self.options.record_io {
                    span.record(
                        "gen_ai.tool.call.result",
                        result_payload(&outcome).to_string().as_str(),
                    );
                }
                let result = result_block(self.provider, call.id.as_deref(), &call.name, &outcome);
                CallRecord {
                    call_id: call.id,
                    name: call.name,
                    tool,
                    outcome,
                    result,
                }
            }
        });
        let calls = join_all(runs).await;
        for c in &calls {
            if let Outcome::NeedsConfirmation { confirm_id, .. } = &c.outcome {
                self.remember(Waiting {
                    confirm_id: confirm_id.clone(),
                    provider_name: c.name.clone(),
                    call_id: c.call_id.clone(),
                });
            }
        }
        let messages = result_messages(
            self.provider,
            calls.iter().map(|c| c.result.clone()).collect(),
        );
        ToolRun { calls, messages }
    }

    /// A message for the conversation, in the provider's format, telling the model
    /// how a call that waited for the user ended: approved (with its result),
    /// rejected, expired or dropped. A user-role text message; append it before
    /// the model's next turn.
    ///
    /// Only for a confirmation this `AgentTools` issued (a call its
    /// [`run`](Self::run) answered with "waiting for the user"), once: the bridge
    /// carries every conversation's decisions, and one conversation never receives
    /// another's result. Any other message (another conversation's, an unknown or
    /// already answered id) gives `None`.
    ///
    /// ```
    /// # use toolmark::agent::{AgentTools, Provider};
    /// # async fn demo(tm: toolmark::Toolmark, agent: AgentTools) {
    /// let mut bridge = tm.bridge();
    /// while let Some(msg) = bridge.recv().await {
    ///     if let Some(message) = agent.bridge_message(&msg) {
    ///         // conversation.push(message);
    /// #       let _ = message;
    ///     }
    /// }
    /// # }
    /// ```
    pub fn bridge_message(&self, msg: &BridgeMessage) -> Option<Value> {
        match msg {
            BridgeMessage::Confirmed {
                confirm_id,
                tool,
                outcome,
            } => {
                let _ = tool;
                let waiting = self.take_waiting(confirm_id)?;
                let text =
                    decision_text(&waiting.provider_name, waiting.call_id.as_deref(), outcome);
                Some(text_message(self.provider, &text))
            }
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}
