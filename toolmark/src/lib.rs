//! # Toolmark
//!
//! Expose your Rust app's own functions as **tools** that AI agents discover and
//! call — safely. One attribute turns an async fn into a tool; Toolmark generates its
//! JSON input schema, checks it at registration, and serves it to humans, in-app
//! agents, MCP clients, browser agents, product tours and tests:
//!
//! - **Confirmation**: consequential and destructive calls wait for the user,
//!   deferred (`needs_confirmation`, then [`Toolmark::confirm_pending`]) or inline
//!   (a [`ConfirmHandler`] such as [`ConfirmQueue`]).
//! - **Secrets** never reach an approver or an observer: sensitive input paths are
//!   `"[redacted]"` in every confirmation payload, event and `Debug`, and restored
//!   when an approver edits the input.
//! - **Scopes** show, hide and dispose whole groups of tools; each scope runs
//!   its calls in order, under a deadline, and a hung tool cannot block it.
//!
//! ```standalone_crate
//! use serde_json::json;
//! use toolmark::{tool, CallOptions, Caller, Decision, ToolError, Toolmark};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Payment { payee: String, amount_cents: u64, card: Card }
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Card { number: String, cvc: String }
//!
//! /// Pay someone with a card.
//! #[tool(scope = "billing", consequential, sensitive = ["card.number", "card.cvc"],
//!        summary = "Pay {payee} {amount_cents} cents")]
//! async fn pay(input: Payment) -> Result<String, ToolError> {
//!     Ok(format!("paid {} cents to {}", input.amount_cents, input.payee))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tm = Toolmark::builder().build().unwrap();
//! tm.register_collected().unwrap();                 // every #[tool] in the binary
//! assert_eq!(tm.manifest(Caller::InApp)[0].name, "billing.pay");
//!
//! // An in-app agent calls it: the user must approve first (deferred).
//! let input = json!({"payee": "Ada", "amount_cents": 500,
//!                    "card": {"number": "4242424242424242", "cvc": "123"}});
//! let out = tm.call("billing.pay", input, CallOptions::new(Caller::InApp)).await;
//! let pending = &tm.pending_confirmations()[0];
//! assert_eq!(pending.summary, "Pay Ada 500 cents");
//! assert_eq!(pending.input["card"]["cvc"], "[redacted]");  // the approver never sees it
//!
//! // The user approves in the app's UI: the tool runs with the real card.
//! let done = tm.confirm_pending(out.confirm_id().unwrap(), Decision::approve()).await;
//! assert_eq!(done.output(), Some(&json!("paid 500 cents to Ada")));
//! # }
//! ```
//!
//! # The guide
//!
//! [`guide`] has one chapter per topic, every example a running doctest:
//! [tools](guide::tools), [callers and confirmation](guide::confirmation) (including
//! who approves when your server is a headless MCP process),
//! [secrets and the security model](guide::security),
//! [scopes and queues](guide::scopes), [forms](guide::forms),
//! [serving MCP](guide::mcp), [in-app agents](guide::agents),
//! [WebMCP](guide::webmcp), [many instances](guide::instances) and
//! [testing](guide::testing).
//!
//! # Where to look
//!
//! - The crate root: [`Toolmark`] and [`ToolmarkBuilder`] (configuration,
//!   registration, calls, the manifest), [`tool`] (the attribute), [`ToolSpec`]
//!   (dynamic tools), [`ToolContext`] (what a running tool can do), [`Outcome`] and
//!   [`RefusalCode`] (results), [`Caller`] and [`ConfirmMode`], [`Decision`],
//!   [`ConfirmQueue`], [`Form`], [`Wizard`], [`Content`].
//! - [`scope`]: groups, visibility (including scopes that start hidden), disposal,
//!   queues.
//! - [`policy`]: approval policies, remembered decisions, who approved.
//! - [`event`]: events and the bridge of deferred outcomes.
//! - [`clock`]: the injected clock (`ManualClock` for tests).
//! - [`form`] and [`wizard`]: forms and wizards; undo is [`ToolContext::on_undo`] and
//!   [`Toolmark::undo`].
//! - [`store`]: confirmation stores shared by many instances (`MemoryStore`;
//!   `RedisStore` with feature `redis`).
//! - [`agent`]: in-app agents — OpenAI, Anthropic and Gemini tool formats, running a
//!   model's tool calls, tracing spans; `agent::rig` with feature `rig`.
//! - `mcp` (feature `mcp`): the MCP server (stdio and Streamable HTTP).
//! - [`testing`]: a test toolmark and a `ToolContext` for unit tests.
//! - [`guide`]: the guide.
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | `mcp` | `toolmark::mcp`: an MCP server on rmcp (stdio, Streamable HTTP, axum `Router`) |
//! | `redis` | `store::RedisStore` (implies `durable`) |
//! | `durable` | sealing of stored confirmations (`ToolmarkBuilder::seal_key`) |
//! | `rig` | `agent::rig`: tools as rig `ToolDyn`s |

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
mod call;
mod caller;
pub mod clock;
mod confirm;
mod content;
mod error;
pub mod event;
mod forms;
pub mod guide;
mod hex;
#[cfg(any(feature = "mcp", feature = "webmcp"))]
mod http_host;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod payload;
pub mod scope;
mod sensitive;
pub mod store;
mod sync;
pub mod testing;
mod toolmark;
mod tools;
#[cfg(feature = "webmcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "webmcp")))]
pub mod webmcp;

pub use crate::forms::{form, wizard};

/// The entry points of the fuzz targets in `fuzz/` (feature `fuzz`): not part of
/// the public API.
#[cfg(feature = "fuzz")]
#[doc(hidden)]
#[path = "fuzz.rs"]
pub mod __fuzz;

#[doc(hidden)]
pub mod __private {
    pub use crate::tools::private::*;
}

/// The sealed-record entry points of the `seal_open` fuzz target. Not an API.
#[doc(hidden)]
pub mod __fuzz_seal {
    /// The most characters of a summary an observer is shown: a genuine record's
    /// summary is never longer (it is bounded when the confirmation is made).
    pub const SUMMARY_CHARS: usize = crate::sensitive::SUMMARY_CHARS;

    /// Read `record_json` as a stored record and open it under `key`, as
    /// `confirm_pending` does: the summary it holds, or `None` when refused.
    pub fn open_record(key: &[u8; 32], record_json: &str) -> Option<String> {
        crate::store::flow::fuzz::open_record(key, record_json)
    }

    /// A genuine stored record (JSON) of confirmation `id`, sealed under `key`.
    pub fn seal_record(
        key: &[u8; 32],
        id: &str,
        summary: &str,
        input: serde_json::Value,
    ) -> Option<String> {
        crate::store::flow::fuzz::seal_record(key, id, summary, input)
    }
}

// The traits whose names rustc prints in `#[tool]` compile errors ("the trait
// `ToolInputDecode` is not implemented for `Query`"): re-exported outside the
// hidden `__private` module, rustc prints them by their bare name instead of a path
// into it. Generated code still names them through `__private`.
#[doc(hidden)]
pub use crate::tools::private::{
    run_async, Run, SequenceOrMap, ToolArgDecode, ToolArgSchema, ToolArgSend, ToolErrorType,
    ToolInputDecode, ToolInputSchema, ToolInputSend, ToolOutput,
};

pub use crate::call::client::{
    CallerClient, ClientError, ElicitRequest, Elicited, LogLevel, LogMessage, SampleMessage,
    SampleRequest, SampleRole, Sampled,
};
pub use crate::call::context::{Progress, State, ToolContext};
pub use crate::call::input::NoInput;
pub use crate::call::outcome::{Issue, Outcome, Refusal, RefusalCode, ToolError};
pub use crate::call::CallOptions;
pub use crate::caller::{Caller, CallerSet, ConfirmMode};
pub use crate::confirm::policy;
pub use crate::confirm::policy::{Answer, Approver, For, Policy, Remembered, Rule};
pub use crate::confirm::{
    Ask, Change, ConfirmHandler, ConfirmQueue, ConfirmRequest, ConfirmResult, Decision,
    PendingConfirmation, QueueHandler,
};
pub use crate::content::{Content, ContentBlock, EmbeddedResource, ResourceLink};
pub use crate::error::{CollectError, ConfigError, RegisterError};
pub use crate::event::{Bridge, BridgeMessage, Event, Events};
pub use crate::forms::form::{Form, FormOptions, OnSubmit};
pub use crate::forms::wizard::{StepOptions, Wizard, WizardValues};
pub use crate::scope::{Scope, ScopeGuard, ScopeOptions};
pub use crate::toolmark::{RegisterOptions, Toolmark, ToolmarkBuilder};
pub use crate::tools::collect::Collected;
pub use crate::tools::spec::{Decoded, Effect, StateNeed, ToolAnnotations, ToolInfo, ToolSpec};

/// Turns a fn into a tool: `#[tool(...)]` generates its input schema, its table of
/// sensitive paths and its registration, collected by
/// [`Toolmark::register_collected`].
///
/// ```standalone_crate
/// use toolmark::{tool, CallOptions, Caller, ToolContext, ToolError};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NewCard { holder: String, number: String, cvc: String }
///
/// /// Add a payment card.
/// #[tool(scope = "billing", consequential, sensitive = ["number", "cvc"],
///        summary = "Add a card for {holder}")]
/// async fn add_card(input: NewCard, ctx: ToolContext) -> Result<String, ToolError> {
///     Ok(format!("card of {} added by {}", input.holder, ctx.caller()))
/// }
///
/// /// Add two numbers.
/// #[tool(read_only)]
/// fn add(#[arg(description = "The first term")] a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let tm = toolmark::testing::test_toolmark();
/// tm.register_collected().unwrap();
/// let out = tm.call("add", serde_json::json!({"a": 2, "b": 3}), CallOptions::new(Caller::Mcp)).await;
/// assert_eq!(out.output(), Some(&serde_json::json!(5)));
/// assert_eq!(tm.manifest(Caller::InApp)[0].name, "add");
/// assert_eq!(tm.manifest(Caller::InApp)[1].name, "billing.add_card");
/// # }
/// ```
///
/// **Keys** (all optional): `name = "…"` (default: the fn name), `scope = "a.b"`
/// (registered into [`Toolmark::scope_at`]`("a.b")`), one of `read_only`,
/// `consequential`, `destructive` (default: [`Effect::Write`]), `sensitive = "p"`
/// (repeatable, or `sensitive = ["p", "q"]`), `callers = [inapp, mcp]` (of `human`,
/// `inapp`, `webmcp`, `mcp`, `tour`, `test`; default: all), `summary = "…{field}…"`,
/// `description = "…"` (default: the doc comment, lines joined and trimmed),
/// `title = "…"`, `timeout = "30s"` (humantime syntax; replaces the builder's
/// `call_timeout` for this tool), `open_world` or `closed_world` (whether the tool
/// reaches beyond the app; default: only consequential tools do, see
/// [`ToolSpec::open_world`]), `idempotent` (a retry with the same input has no
/// further effect; default: only reads, see [`ToolSpec::idempotent`]). Names and
/// scope segments are `[A-Za-z0-9_-]+`.
///
/// **Parameters**, in any order: [`ToolContext`], any number of [`State<T>`], and
/// either one *input type* (a type of yours, `Deserialize + JsonSchema`, that is the
/// whole input) or *plain arguments* (std types: `bool`, integers, floats, `char`,
/// `String`, `Vec`, `VecDeque`, `Option`, maps, sets, tuples, arrays, and
/// `serde_json::Value` (written `Value`, `serde_json::Value` or `::serde_json::Value`);
/// any other type with `#[arg]`), which become the fields of a generated input, each documented with
/// `#[arg(description = "…")]`. No input is the empty object `{}`. `ToolContext` and
/// `State` are recognized by name; a plain argument is named by a plain identifier.
///
/// **Return**: `T: Serialize`, or `Result<T, E>` with `E: Display` or [`ToolError`]
/// (whose issues are kept). A `Result` is recognized by its last path segment, so
/// `anyhow::Result<T>` works; a type alias with another name is a plain output. A
/// `JsonSchema` output also gives the manifest an `outputSchema`. A fn that is not
/// `async` runs on a thread of Toolmark's own (not tokio's blocking pool: a sync fn
/// that never returns cannot keep the process from exiting).
///
/// **Sensitive paths** (`seg(.seg|[])*`, `[]` for every element of a sequence or
/// every value of a map, `Option` transparent) name the input's *Rust* fields and are
/// checked by the compiler: a missing field, or `[]` after a field that is neither a
/// sequence nor a map, is an error under the path. The runtime maps them to JSON names (also through a `rename_all`
/// convention). For a field with an explicit `#[serde(rename = "…")]`, or inside an
/// enum variant, write the JSON names after `json:` (`"json:card.Number"`): such a
/// path is checked against the input schema at registration. Summary placeholders
/// (`{field}`, `{a.b}`) name input fields and are checked the same way. The checks
/// read the fields, so the fields a path names must be visible where the tool is
/// defined.
///
/// The fn is kept as written, so it can still be called directly (with
/// [`testing::context`] for its `ToolContext`). A tool must be a free fn (no `self`,
/// no generics, not in an `impl` block). Every mistake is a compile error at the
/// offending token.
pub use toolmark_macros::tool;

/// The sensitive-value placeholder: `"[redacted]"`.
pub const REDACTED: &str = "[redacted]";
