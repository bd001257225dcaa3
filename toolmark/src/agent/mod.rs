//! In-app agents: the manifest in each LLM provider's tool format, and the model's
//! tool calls run through [`Toolmark::call`] with their results in that provider's
//! format.
//!
//! One [`AgentTools`] per conversation style (provider) and caller:
//!
//! ```
//! use serde_json::json;
//! use toolmark::agent::{AgentTools, Provider};
//! use toolmark::{Effect, ToolError, ToolSpec, Toolmark};
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
//! let agent = AgentTools::new(&tm, Provider::OpenAiChat);
//! // 1. The `tools` field of the request (cached until the manifest changes).
//! let tools = agent.tools_json();
//! assert_eq!(tools[0]["function"]["name"], "people__greet");
//!
//! // 2. The model's reply: run its tool calls, append the result messages.
//! let reply = json!({"role": "assistant", "tool_calls": [{
//!     "id": "call_1", "type": "function",
//!     "function": {"name": "people__greet", "arguments": "{\"name\":\"Ada\"}"}
//! }]});
//! let run = agent.run(&reply).await;
//! assert_eq!(run.messages[0]["role"], "tool");
//! assert_eq!(run.messages[0]["tool_call_id"], "call_1");
//! assert!(run.calls[0].outcome.is_ok());
//! # }
//! ```
//!
//! What each provider gets:
//!
//! - **Names**: `scope.sub.tool` mapped to the provider's pattern (dots become `__`
//!   for OpenAI and Anthropic; Gemini keeps them), shortened to 64 characters with a
//!   stable hash suffix when needed, collision-free within the manifest, and mapped
//!   back exactly ([`NameMap`]).
//! - **Schemas**: `$schema` dropped; sensitive (`writeOnly`) fields described as
//!   sensitive; with [`AgentOptions::strict`], OpenAI's strict mode for every tool
//!   whose schema can be made strict ([`ToolList::not_strict`] says why the others
//!   cannot, and each is logged as a `tracing` warning, target `toolmark`).
//! - **Results**: `needs_confirmation` becomes a result telling the model that the
//!   action waits for the user (with the redacted summary) and not to retry;
//!   [`AgentTools::bridge_message`] turns the later decision into a message for the
//!   conversation. Malformed arguments become an `invalid` result the model can
//!   correct.
//! - **Tracing**: each call runs in a span `execute_tool {tool}` following the
//!   OpenTelemetry GenAI conventions (see [`AgentTools::run`]).

mod format;
mod names;
mod run;
mod schema;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use serde_json::Value;

pub use self::names::{valid_name, NameMap};
pub use self::run::{CallRecord, ToolCallRequest, ToolRun};
use crate::sync::lock;
use crate::{Caller, Toolmark};

/// An LLM API whose tool format Toolmark speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions: `{"type":"function","function":{…}}` tools,
    /// `tool_calls` with string arguments, `role: "tool"` results.
    OpenAiChat,
    /// OpenAI Responses: `{"type":"function","name",…}` tools, `function_call`
    /// items, `function_call_output` results.
    OpenAiResponses,
    /// Anthropic Messages: `{"name","description","input_schema"}` tools,
    /// `tool_use` blocks, `tool_result` blocks.
    Anthropic,
    /// Google Gemini: `functionDeclarations` with `parametersJsonSchema`,
    /// `functionCall` parts, `functionResponse` parts.
    Gemini,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// The provider's own limit on a tool description, in characters (OpenAI:
    /// 1024; the others document none).
    pub const fn description_limit(self) -> Option<usize> {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => Some(1024),
            Provider::Anthropic | Provider::Gemini => None,
        }
    }

    /// A short stable name (`openai_chat`, `openai_responses`, `anthropic`, `gemini`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai_chat",
            Provider::OpenAiResponses => "openai_responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }
}

/// How [`AgentTools`] presents and runs tools.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// Whose manifest, and who calls (default [`Caller::InApp`]).
    pub caller: Caller,
    /// OpenAI strict mode (`strict: true` and a strict schema) for every tool whose
    /// schema allows it (default `false`; ignored by the other providers).
    pub strict: bool,
    /// A description limit of your own, in characters (default: the provider's).
    pub max_description: Option<usize>,
    /// Record each call's arguments (redacted) and result on its span
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Default `false`.
    pub record_io: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            caller: Caller::InApp,
            strict: false,
            max_description: None,
            record_io: false,
        }
    }
}

/// One tool as converted for a provider.
#[derive(Clone, Debug)]
pub(crate) struct Converted {
    /// The Toolmark full name.
    pub(crate) tool: String,
    /// The description as sent.
    pub(crate) description: String,
    /// Whether it was sent in strict mode.
    pub(crate) strict: bool,
    /// Optional property names whose `null` the runner drops (strict tools only).
    pub(crate) nullable: Vec<String>,
}

/// A manifest converted for one provider; built once per
/// [`manifest_version`](Toolmark::manifest_version) and shared.
#[derive(Debug)]
pub struct ToolList {
    provider: Provider,
    version: u64,
    json: Value,
    names: NameMap,
    by_provider_name: FxHashMap<String, Converted>,
    not_strict: Vec<(String, String)>,
}

impl ToolList {
    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The manifest version it was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The tool definitions, one per tool (for Gemini, the function declarations).
    pub fn definitions(&self) -> &[Value] {
        let list = match self.provider {
            Provider::Gemini => self.json.get(0).and_then(|t| t.get("functionDeclarations")),
            _ => Some(&self.json),
        };
        list.and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// The request's `tools` value: an array of tool definitions (for Gemini, one
    /// `{"functionDeclarations": […]}` tool).
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The name mapping.
    pub fn names(&self) -> &NameMap {
        &self.names
    }

    /// With [`AgentOptions::strict`]: the tools (full names) sent non-strict, each
    /// with the reason.
    pub fn not_strict(&self) -> &[(String, String)] {
        &self.not_strict
    }

    pub(crate) fn converted(&self, provider_name: &str) -> Option<&Converted> {
        self.by_provider_name.get(provider_name)
    }
}

/// A call waiting for the user, remembered so the bridge's later message can name
/// the tool the model called.
#[derive(Clone, Debug)]
pub(crate) struct Waiting {
    pub(crate) confirm_id: String,
    pub(crate) provider_name: String,
    pub(crate) call_id: Option<String>,
}

/// How many waiting calls an [`AgentTools`] remembers (the oldest are forgotten).
const MAX_WAITING: usize = 1024;

/// Toolmark tools for one provider and caller: the tool list for requests
/// ([`tools_json`](Self::tools_json)), the runner for the model's tool calls
/// ([`run`](Self::run)) and messages for the bridge's decisions
/// ([`bridge_message`](Self::bridge_message)). Cheap to share (`Arc` it) and safe
/// to use from many tasks.
pub struct AgentTools {
    tm: Toolmark,
    provider: Provider,
    options: AgentOptions,
    cache: Mutex<Option<Arc<ToolList>>>,
    waiting: Mutex<VecDeque<Waiting>>,
}

impl std::fmt::Debug for AgentTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTools")
            .field("provider", &self.provider)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl AgentTools {
    /// Tools of `tm` for `provider`, as seen and called by [`Caller::InApp`].
    pub fn new(tm: &Toolmark, provider: Provider) -> Self {
        AgentTools::with_options(tm, provider, AgentOptions::default())
    }

    /// Tools of `tm` for `provider` with `options`.
    pub fn with_options(tm: &Toolmark, provider: Provider, options: AgentOptions) -> Self {
        AgentTools {
            tm: tm.clone(),
            provider,
            options,
            cache: Mutex::new(None),
            waiting: Mutex::new(VecDeque::new()),
        }
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The options.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The toolmark.
    pub fn toolmark(&self) -> &Toolmark {
        &self.tm
    }

    /// The caller's manifest converted for the provider: rebuilt only when the
    /// manifest version changed (a scope shown, hidden or disposed; a tool
    /// registered), so call it on every turn.
    pub fn tool_list(&self) -> Arc<ToolList> {
        let version = self.tm.manifest_version();
        if let Some(list) = lock(&self.cache).as_ref() {
            if list.version == version {
                return Arc::clone(list);
            }
        }
        let manifest = self.tm.manifest(self.options.caller);
        let list = Arc::new(format::tool_list(
            self.provider,
            &self.options,
            version,
            &manifest,
        ));
        for (tool, reason) in &list.not_strict {
            tracing::warn!(
                target: "toolmark",
                kind = "tool_not_strict",
                tool = %tool,
                provider = self.provider.as_str(),
                reason = %reason,
                "tool sent without strict mode"
            );
        }
        let mut cache = lock(&self.cache);
        match cache.as_ref() {
            // Another task built a newer list meanwhile: keep it.
            Some(newer) if newer.version > version => Arc::clone(newer),
            _ => {
                *cache = Some(Arc::clone(&list));
                list
            }
        }
    }

    /// The request's `tools` value (see [`ToolList::json`]).
    pub fn tools_json(&self) -> Value {
        self.tool_list().json().clone()
    }

    pub(crate) fn remember(&self, w: Waiting) {
        let mut waiting = lock(&self.waiting);
        if waiting.len() >= MAX_WAITING {
            waiting.pop_front();
        }
        waiting.push_back(w);
    }

    pub(crate) fn take_waiting(&self, confirm_id: &str) -> Option<Waiting> {
        let mut waiting = lock(&self.waiting);
        let i = waiting.iter().position(|w| w.confirm_id == confirm_id)?;
        waiting.remove(i)
    }
}
