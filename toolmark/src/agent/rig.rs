//! The [rig](https://docs.rs/rig-core/0.40.0) adapter (feature `rig`, built against
//! `rig-core` **0.40.0**): every tool a caller sees as a rig [`ToolDyn`], gathered
//! in a rig [`ToolSet`] or boxed for `AgentBuilder::tools`.
//!
//! Each call runs through [`Toolmark::call`] for the caller, so confirmations,
//! redaction, scopes and per-scope queues apply as for any other agent. Names are
//! the provider-safe names of the OpenAI/Anthropic mapping (`billing.refund` is
//! `billing__refund`), descriptions and schemas the same conversion the other
//! providers get. A call that needs the user's confirmation answers the model that
//! the action waits for the user and must not be retried; invalid input and
//! failures come back as a tool error whose text is the refusal (code, message and
//! the fields at fault), so the model can correct itself.
//!
//! ```
//! use toolmark::agent::rig::RigTools;
//! use toolmark::{Caller, Effect, ToolError, ToolSpec, Toolmark};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet { name: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tm = Toolmark::builder().build().unwrap();
//! tm.scope("people").register(
//!     ToolSpec::typed("greet", "Greet someone", |_ctx, input: Greet| async move {
//!         Ok::<_, ToolError>(format!("Hello, {}!", input.name))
//!     })
//!     .effect(Effect::Read),
//! ).unwrap();
//!
//! let rig_tools = RigTools::new(&tm, Caller::InApp);
//! let set = rig_tools.tool_set(); // or `rig_tools.boxed()` for `AgentBuilder::tools`
//! let out = set.call("people__greet", r#"{"name":"Ada"}"#.into()).await.unwrap();
//! assert_eq!(out, "Hello, Ada!");
//! # }
//! ```
//!
//! A set (and a rig agent built with it) lists the tools visible when it was built;
//! build it again for the next turn to follow scopes shown or hidden (cheap: the
//! conversion is cached per manifest version). A tool whose scope was hidden since
//! is refused by [`Toolmark::call`] all the same.

use std::sync::Arc;

use rig_core::completion::ToolDefinition;
use rig_core::tool::{
    ToolCallExtensions, ToolDyn, ToolError, ToolExecutionResult, ToolFailure, ToolSet,
};
use rig_core::wasm_compat::WasmBoxedFuture;
use serde_json::Value;

use super::format::{is_error, result_block};
use super::run::string_arguments;
use super::{AgentOptions, AgentTools, Provider, ToolCallRequest};
use crate::{BridgeMessage, Caller, Outcome, RefusalCode, Toolmark};

/// The names, descriptions and schemas rig tools get: the OpenAI Chat conversion
/// (names `^[a-zA-Z0-9_-]{1,64}$`, which OpenAI, Anthropic and OpenAI-compatible
/// providers all accept).
const PROVIDER: Provider = Provider::OpenAiChat;

/// Toolmark tools for rig, for one caller: build the [`ToolSet`] (or the boxed
/// tools) for each turn, and turn the bridge's decisions into text for the
/// conversation. Cheap to clone.
#[derive(Clone, Debug)]
pub struct RigTools {
    agent: Arc<AgentTools>,
}

impl RigTools {
    /// The tools of `tm` that `caller` sees, called as `caller`.
    pub fn new(tm: &Toolmark, caller: Caller) -> Self {
        RigTools::with_options(
            tm,
            AgentOptions {
                caller,
                ..AgentOptions::default()
            },
        )
    }

    /// With `options` (the caller, a description limit, recording arguments and
    /// results on the spans; `strict` is ignored: rig sends no strict flag).
    pub fn with_options(tm: &Toolmark, options: AgentOptions) -> Self {
        let options = AgentOptions {
            strict: false,
            ..options
        };
        RigTools {
            agent: Arc::new(AgentTools::with_options(tm, PROVIDER, options)),
        }
    }

    /// One rig tool per tool the caller sees now, in manifest order.
    pub fn tools(&self) -> Vec<RigTool> {
        let list = self.agent.tool_list();
        list.definitions()
            .iter()
            .filter_map(|def| {
                let f = def.get("function")?;
                Some(RigTool {
                    agent: Arc::clone(&self.agent),
                    definition: ToolDefinition {
                        name: f.get("name")?.as_str()?.to_owned(),
                        description: f
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        parameters: f.get("parameters").cloned().unwrap_or(Value::Null),
                    },
                })
            })
            .collect()
    }

    /// The tools boxed, for rig's `AgentBuilder::tools`.
    pub fn boxed(&self) -> Vec<Box<dyn ToolDyn>> {
        self.tools()
            .into_iter()
            .map(|t| Box::new(t) as Box<dyn ToolDyn>)
            .collect()
    }

    /// The tools as a rig [`ToolSet`].
    pub fn tool_set(&self) -> ToolSet {
        ToolSet::from_tools(self.tools())
    }

    /// The text to add to the conversation (as a user message) when the bridge
    /// reports how a call that waited for the user ended; `None` for other
    /// messages.
    pub fn bridge_text(&self, msg: &BridgeMessage) -> Option<String> {
        let message = self.agent.bridge_message(msg)?;
        message
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The [`AgentTools`] underneath (OpenAI Chat conversion).
    pub fn agent_tools(&self) -> &AgentTools {
        &self.agent
    }
}

/// The tools of `tm` that `caller` sees, as a rig [`ToolSet`] (see [`RigTools`]).
pub fn tool_set(tm: &Toolmark, caller: Caller) -> ToolSet {
    RigTools::new(tm, caller).tool_set()
}

/// One Toolmark tool as a rig [`ToolDyn`]; calls run through [`Toolmark::call`].
#[derive(Clone, Debug)]
pub struct RigTool {
    agent: Arc<AgentTools>,
    definition: ToolDefinition,
}

impl RigTool {
    /// The definition rig sends to the model.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Run the call with JSON `args` (a string, as rig passes them): the outcome
    /// and the text the model reads.
    async fn execute(&self, args: String) -> (Option<Outcome>, String) {
        let arguments = string_arguments(Some(&Value::String(args)));
        let request = ToolCallRequest {
            id: None,
            name: self.definition.name.clone(),
            arguments,
        };
        let mut run = self.agent.run_calls(vec![request]).await;
        let Some(call) = run.calls.pop() else {
            return (None, "the call did not run".to_owned());
        };
        let block = result_block(PROVIDER, None, &call.name, &call.outcome);
        let text = match block.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => block.to_string(),
        };
        (Some(call.outcome), text)
    }
}

impl ToolDyn for RigTool {
    fn name(&self) -> String {
        self.definition.name.clone()
    }

    fn description(&self) -> String {
        self.definition.description.clone()
    }

    fn parameters(&self) -> Value {
        self.definition.parameters.clone()
    }

    fn call<'a>(&'a self, args: String) -> WasmBoxedFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            match self.execute(args).await {
                (Some(outcome), text) if !is_error(&outcome) => Ok(text),
                (_, text) => Err(ToolError::ToolCallError(text.into())),
            }
        })
    }

    /// The structured result rig's agent loop reports to its hooks: a refusal
    /// carries its code (`invalid` as invalid arguments, `unknown_tool` as not
    /// found), a tool's failure the code `tool_error`; a call waiting for the user
    /// is a success whose text says so.
    fn call_structured<'a>(
        &'a self,
        args: String,
        _extensions: &'a ToolCallExtensions,
    ) -> WasmBoxedFuture<'a, ToolExecutionResult> {
        Box::pin(async move {
            let (outcome, text) = self.execute(args).await;
            let failure = match &outcome {
                Some(Outcome::Refused(r)) => {
                    let failure = match r.code {
                        RefusalCode::Invalid => ToolFailure::invalid_args(text.clone()),
                        RefusalCode::UnknownTool => ToolFailure::not_found(text.clone()),
                        _ => ToolFailure::other(text.clone()),
                    };
                    failure.with_code(r.code.as_str())
                }
                Some(Outcome::Error(_)) => ToolFailure::other(text.clone()).with_code("tool_error"),
                Some(_) => return ToolExecutionResult::success(text),
                None => ToolFailure::other(text.clone()),
            };
            ToolExecutionResult::failed(text, failure)
        })
    }
}
