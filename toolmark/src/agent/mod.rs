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
//!   back exactly ([`NameMap`]). A name once shown keeps its tool for the life of the
//!   `AgentTools`: when a tool arrives whose readable name is taken, only the
//!   newcomer gets a suffix, and a name whose tool left never comes to mean another.
//!   A name that is not in the list the model was given (a Toolmark name, a hidden
//!   tool, a made-up one) is refused `unknown_tool`.
//! - **Conversations**: one `AgentTools` per conversation. Its
//!   [`bridge_message`](AgentTools::bridge_message) answers only for the
//!   confirmations its own calls asked for (another conversation's, or an unknown
//!   id, gives `None`), and [`AgentOptions::session`] keeps "this session" decisions
//!   to it.
//! - **Schemas**: `$schema` dropped; sensitive (`writeOnly`) fields described as
//!   sensitive; with [`AgentOptions::strict`], OpenAI's strict mode for every tool
//!   whose schema can be made strict ([`ToolList::not_strict`] says why the others
//!   cannot, and each is logged as a `tracing` warning, target `toolmark`). Strict
//!   mode makes every optional property required and nullable; the runner drops the
//!   `null` a model sends for one, by its position in the schema (`lines[].tags` too),
//!   and keeps a `null` at a property the tool requires (the decode then says so).
//! - **Results**: `needs_confirmation` becomes a result telling the model that the
//!   action waits for the user (with the redacted summary) and not to retry;
//!   [`AgentTools::bridge_message`] turns the later decision into a message for the
//!   conversation. Malformed arguments become an `invalid` result the model can
//!   correct.
//! - **Tracing**: each call runs in a span `execute_tool {tool}` following the
//!   OpenTelemetry GenAI conventions (see [`AgentTools::run`]).

mod format;
pub(crate) mod names;
#[cfg(feature = "rig")]
#[cfg_attr(docsrs, doc(cfg(feature = "rig")))]
pub mod rig;
mod run;
mod schema;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use self::names::Target;
pub use self::names::{valid_name, NameMap};
pub use self::run::{CallRecord, ToolCallRequest, ToolRun};
use crate::sync::lock;
use crate::{Caller, ToolInfo, Toolmark};

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
    /// Record each call's arguments and result on its span
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Default `false`.
    /// Both are what an observer may see of the call: built from the call's secret
    /// set after its decode, so `"[redacted]"` at every sensitive path and under
    /// every key the input schema does not list (an alias of a sensitive field),
    /// and no secret of the call anywhere else.
    pub record_io: bool,
    /// The conversation these tools serve, as a session id (see
    /// [`CallOptions::session`](crate::CallOptions::session)): a decision an
    /// approver remembers [`For::Session`](crate::policy::For::Session) on a call of
    /// this conversation covers later calls of this conversation only. Give each
    /// conversation its own. `None` (default): calls share the toolmark's one
    /// session, as plain [`Toolmark::call`]s without a session do.
    pub session: Option<String>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            caller: Caller::InApp,
            strict: false,
            max_description: None,
            record_io: false,
            session: None,
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
    /// A strict tool's input schema: the runner drops the `null` a model sends for
    /// a property this schema does not require, at that position only.
    pub(crate) strict_schema: Option<Arc<Value>>,
}

/// One tool's conversion, reused by later lists while the tool keeps its schema
/// (the same `Arc`, so an unchanged registration), its description and its
/// provider name.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    /// Held, so the pointer compared stays this schema's.
    pub(crate) schema: Arc<Value>,
    pub(crate) source_description: String,
    pub(crate) provider_name: String,
    /// The tool definition in the provider's format.
    pub(crate) def: Arc<Value>,
    pub(crate) converted: Converted,
    /// With strict mode: why the tool is not strict.
    pub(crate) not_strict: Option<String>,
}

impl ToolEntry {
    fn matches(&self, info: &ToolInfo, provider_name: &str) -> bool {
        Arc::ptr_eq(&self.schema, &info.input_schema)
            && self.provider_name == provider_name
            && self.source_description == info.description
    }
}

/// A manifest's names: the mapping, and each provider name's position in the list.
/// Reused while the manifest's names (in order) stay the same.
#[derive(Debug)]
struct NameIndex {
    toolmark: Vec<String>,
    map: NameMap,
    position: FxHashMap<String, usize>,
}

impl NameIndex {
    /// The names of `manifest`: those `book` gave before kept, newcomers named.
    fn new(provider: Provider, manifest: &[ToolInfo], book: &mut NameMap) -> NameIndex {
        let map = NameMap::assign(
            Target::Provider(provider),
            manifest.iter().map(|t| t.name.as_str()),
            book,
        );
        let mut position = FxHashMap::default();
        position.reserve(manifest.len());
        for (i, t) in manifest.iter().enumerate() {
            // Manifest names are distinct, so each has its own mapped name.
            let name = map.to_provider(&t.name).unwrap_or(&t.name);
            position.insert(name.to_owned(), i);
        }
        NameIndex {
            toolmark: manifest.iter().map(|t| t.name.clone()).collect(),
            map,
            position,
        }
    }

    fn same_names(&self, manifest: &[ToolInfo]) -> bool {
        self.toolmark.len() == manifest.len()
            && self
                .toolmark
                .iter()
                .zip(manifest)
                .all(|(a, b)| *a == b.name)
    }
}

/// What a conversion keeps for the next one: each tool's conversion (tools no
/// longer in the manifest are dropped), the names, and every name given so far
/// (kept for the life of the [`AgentTools`]: a name shown once never stands for
/// another tool).
#[derive(Debug, Default)]
struct ConvertCache {
    entries: FxHashMap<String, Arc<ToolEntry>>,
    names: Option<Arc<NameIndex>>,
    book: NameMap,
}

/// A manifest converted for one provider; built once per
/// [`manifest_version`](Toolmark::manifest_version) and shared. Serializes as
/// [`json`](Self::json) (without building it).
#[derive(Debug)]
pub struct ToolList {
    provider: Provider,
    version: u64,
    entries: Vec<Arc<ToolEntry>>,
    names: Arc<NameIndex>,
    json: OnceLock<Value>,
    not_strict: Vec<(String, String)>,
}

impl ToolList {
    /// Convert `manifest`, reusing the conversions in `cache` of tools that did not
    /// change, and leave the new ones there.
    fn build(
        provider: Provider,
        options: &AgentOptions,
        version: u64,
        manifest: &[ToolInfo],
        cache: &mut ConvertCache,
    ) -> ToolList {
        let names = match &cache.names {
            Some(n) if n.same_names(manifest) => Arc::clone(n),
            _ => Arc::new(NameIndex::new(provider, manifest, &mut cache.book)),
        };
        let mut old = std::mem::take(&mut cache.entries);
        let mut kept = FxHashMap::default();
        kept.reserve(manifest.len());
        let mut entries = Vec::with_capacity(manifest.len());
        let mut not_strict = Vec::new();
        for info in manifest {
            let name = names.map.to_provider(&info.name).unwrap_or(&info.name);
            let (key, entry) = match old.remove_entry(info.name.as_str()) {
                Some((key, e)) if e.matches(info, name) => (key, e),
                found => {
                    let e = Arc::new(format::convert_tool(provider, options, info, name));
                    if let Some(reason) = &e.not_strict {
                        tracing::warn!(
                            target: "toolmark",
                            kind = "tool_not_strict",
                            tool = %info.name,
                            provider = provider.as_str(),
                            reason = %reason,
                            "tool sent without strict mode"
                        );
                    }
                    (found.map_or_else(|| info.name.clone(), |(k, _)| k), e)
                }
            };
            if let Some(reason) = &entry.not_strict {
                not_strict.push((info.name.clone(), reason.clone()));
            }
            entries.push(Arc::clone(&entry));
            kept.insert(key, entry);
        }
        cache.entries = kept;
        cache.names = Some(Arc::clone(&names));
        ToolList {
            provider,
            version,
            entries,
            names,
            json: OnceLock::new(),
            not_strict,
        }
    }

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
        let json = self.json();
        let list = match self.provider {
            Provider::Gemini => json.get(0).and_then(|t| t.get("functionDeclarations")),
            _ => Some(json),
        };
        list.and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// The request's `tools` value: an array of tool definitions (for Gemini, one
    /// `{"functionDeclarations": […]}` tool). Assembled on the first call (a copy
    /// of every definition), then borrowed; to send the list without that copy,
    /// serialize the `ToolList` itself.
    pub fn json(&self) -> &Value {
        self.json
            .get_or_init(|| format::assemble(self.provider, &self.entries))
    }

    /// The name mapping.
    pub fn names(&self) -> &NameMap {
        &self.names.map
    }

    /// With [`AgentOptions::strict`]: the tools (full names) sent non-strict, each
    /// with the reason.
    pub fn not_strict(&self) -> &[(String, String)] {
        &self.not_strict
    }

    pub(crate) fn converted(&self, provider_name: &str) -> Option<&Converted> {
        let i = *self.names.position.get(provider_name)?;
        self.entries.get(i).map(|e| &e.converted)
    }
}

/// The same JSON as [`ToolList::json`], written straight from the per-tool
/// definitions.
impl Serialize for ToolList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Defs<'a>(&'a [Arc<ToolEntry>]);
        impl Serialize for Defs<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(|e| &*e.def))
            }
        }
        #[derive(Serialize)]
        struct Gemini<'a> {
            #[serde(rename = "functionDeclarations")]
            declarations: Defs<'a>,
        }
        match self.provider {
            Provider::Gemini => serializer.collect_seq([Gemini {
                declarations: Defs(&self.entries),
            }]),
            _ => Defs(&self.entries).serialize(serializer),
        }
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
    convert: Mutex<ConvertCache>,
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
            convert: Mutex::new(ConvertCache::default()),
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
    /// registered), so call it on every turn. A rebuild converts only the tools
    /// that changed (a new registration, another description or provider name);
    /// the others keep their converted definition.
    pub fn tool_list(&self) -> Arc<ToolList> {
        let version = self.tm.manifest_version();
        if let Some(list) = lock(&self.cache).as_ref()
            && list.version == version
        {
            return Arc::clone(list);
        }
        let list = {
            let mut convert = lock(&self.convert);
            // Another task may have built this version while this one waited.
            if let Some(list) = lock(&self.cache).as_ref()
                && list.version >= version
            {
                return Arc::clone(list);
            }
            let manifest = self.tm.manifest_shared(self.options.caller);
            Arc::new(ToolList::build(
                self.provider,
                &self.options,
                version,
                &manifest,
                &mut convert,
            ))
        };
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

    /// The manifest converted from scratch, without the per-tool conversions kept
    /// from earlier lists, the request JSON assembled: what a rebuild cost before
    /// those were kept. For benchmarks.
    #[doc(hidden)]
    pub fn convert_uncached(&self) -> ToolList {
        let manifest = self.tm.manifest_shared(self.options.caller);
        let list = ToolList::build(
            self.provider,
            &self.options,
            self.tm.manifest_version(),
            &manifest,
            &mut ConvertCache::default(),
        );
        list.json();
        list
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Effect, ToolSpec};

    fn spec(name: &str, description: &str, field: &str) -> ToolSpec {
        ToolSpec::new(name, description)
            .input_schema(json!({
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field]
            }))
            .effect(Effect::Read)
            .handler(|_ctx, input| async move { Ok(input) })
    }

    fn def<'a>(list: &'a ToolList, tool: &str) -> &'a Arc<Value> {
        let name = list.names().to_provider(tool).unwrap();
        &list.entries[list.names.position[name]].def
    }

    #[test]
    fn a_rebuild_converts_only_the_tools_that_changed() {
        let tm = Toolmark::builder().build().unwrap();
        tm.scope("a").register(spec("one", "One", "x")).unwrap();
        let b = tm.scope("b");
        b.register(spec("two", "Two", "y")).unwrap();
        let agent = AgentTools::new(&tm, Provider::OpenAiChat);
        let first = agent.tool_list();

        // Another tool appears: `a.one` keeps its conversion.
        tm.scope("c").register(spec("three", "Three", "z")).unwrap();
        let second = agent.tool_list();
        assert_eq!(second.entries.len(), 3);
        assert!(Arc::ptr_eq(def(&first, "a.one"), def(&second, "a.one")));
        assert!(Arc::ptr_eq(def(&first, "b.two"), def(&second, "b.two")));

        // `b.two` registered anew with another schema: converted again.
        b.dispose();
        tm.scope("b").register(spec("two", "Two", "w")).unwrap();
        let third = agent.tool_list();
        assert!(Arc::ptr_eq(def(&first, "a.one"), def(&third, "a.one")));
        assert!(!Arc::ptr_eq(def(&first, "b.two"), def(&third, "b.two")));
        assert_eq!(
            def(&third, "b.two")["function"]["parameters"]["required"],
            json!(["w"])
        );
        // Tools gone from the manifest leave the per-tool cache.
        assert_eq!(lock(&agent.convert).entries.len(), 3);
        tm.scope("c").dispose();
        agent.tool_list();
        assert_eq!(lock(&agent.convert).entries.len(), 2);
    }

    #[test]
    fn a_tool_whose_provider_name_changes_is_converted_again() {
        let tm = Toolmark::builder().build().unwrap();
        tm.scope("a").register(spec("b", "Dotted", "x")).unwrap();
        let agent = AgentTools::new(&tm, Provider::Anthropic);
        assert_eq!(agent.tool_list().definitions()[0]["name"], "a__b");
        // `a__b` has the same readable form: `a.b` keeps the name it was shown
        // under, the newcomer gets a hash suffix.
        tm.register(spec("a__b", "Underscored", "y"), Default::default())
            .unwrap();
        let list = agent.tool_list();
        assert_eq!(list.names().to_toolmark("a__b"), Some("a.b"));
        for d in list.definitions() {
            let name = d["name"].as_str().unwrap();
            let tool = list.names().to_toolmark(name).unwrap();
            assert_eq!(list.converted(name).unwrap().tool, tool);
            if tool == "a__b" {
                assert!(name.starts_with("a__b_"), "{name}");
            }
        }
    }

    #[test]
    fn a_list_serializes_as_its_json() {
        let tm = Toolmark::builder().build().unwrap();
        tm.scope("a").register(spec("one", "One", "x")).unwrap();
        tm.register(spec("two", "Two", "y"), Default::default())
            .unwrap();
        for provider in Provider::ALL {
            let list = AgentTools::new(&tm, provider).tool_list();
            assert_eq!(&serde_json::to_value(&*list).unwrap(), list.json());
        }
    }
}
