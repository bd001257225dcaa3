//! # Toolmark
//!
//! Expose your Rust app's own functions as **tools** that AI agents discover and
//! call — safely. A tool is an async fn with a typed input; Toolmark generates its
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
//! ```
//! use serde_json::json;
//! use toolmark::{CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};
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
//! let manifest = tm.manifest(Caller::InApp);
//! assert_eq!(manifest[0].name, "people.greet");
//!
//! let outcome = tm.call("people.greet", json!({"name": "Ada"}), CallOptions::new(Caller::InApp)).await;
//! assert_eq!(outcome.output(), Some(&json!("Hello, Ada!")));
//! # }
//! ```
//!
//! Where to look: [`scope`] (groups, visibility, queues), [`ConfirmQueue`] and
//! [`Toolmark::confirm_pending`] (confirmation), [`policy`] (approval policies,
//! remembered decisions, who approved), [`clock`], [`event`] (events and the
//! bridge), [`testing`]; forms and wizards in [`form`] and [`wizard`], undo in
//! [`ToolContext::on_undo`] and [`Toolmark::undo`].

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

// The traits whose names rustc prints in `#[tool]` compile errors ("the trait
// `ToolInputDecode` is not implemented for `Query`"): re-exported outside the
// hidden `__private` module, rustc prints them by their bare name instead of a path
// into it. Generated code still names them through `__private`.
#[doc(hidden)]
pub use crate::tools::private::{
    SequenceOrMap, ToolArgDecode, ToolArgSchema, ToolArgSend, ToolErrorType, ToolInputDecode,
    ToolInputSchema, ToolInputSend, ToolOutput, ToolRun,
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
pub use crate::content::{Content, ContentBlock, EmbeddedResource};
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
/// ```
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
/// `call_timeout` for this tool). Names and scope segments are `[A-Za-z0-9_-]+`.
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
