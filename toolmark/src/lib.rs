//! # Toolmark
//!
//! Expose your Rust app's own functions as **tools** that AI agents discover and
//! call — safely. A tool is an async fn with a typed input; Toolmark generates its
//! JSON input schema, checks it at registration, and serves it to humans, in-app
//! agents, MCP clients, browser agents, product tours and tests:
//!
//! - **Confirmation** (§7): consequential and destructive calls wait for the user,
//!   deferred (`needs_confirmation`, then [`Toolmark::confirm_pending`]) or inline
//!   (a [`ConfirmHandler`] such as [`ConfirmQueue`]).
//! - **Secrets** never reach an approver or an observer: sensitive input paths are
//!   `"[redacted]"` in every confirmation payload, event and `Debug`, and restored
//!   when an approver edits the input.
//! - **Scopes** (§5) show, hide and dispose whole groups of tools; each scope runs
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
//! Module map: [`scope`] (§5), [`confirm`](crate::ConfirmQueue) (§7),
//! [`clock`], [`event`] (§9), [`testing`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod call;
mod caller;
pub mod clock;
mod collect;
mod confirm;
mod context;
mod error;
pub mod event;
mod input;
mod outcome;
mod registry;
pub mod scope;
mod sensitive;
mod summary;
pub mod testing;
mod tool;
mod toolmark;
mod undo;

#[doc(hidden)]
pub mod __private {
    pub use crate::private::*;
}
mod private;

pub use crate::call::CallOptions;
pub use crate::caller::{Caller, CallerSet, ConfirmMode};
pub use crate::collect::Collected;
pub use crate::confirm::{
    Ask, Change, ConfirmHandler, ConfirmQueue, ConfirmRequest, ConfirmResult, Decision,
    PendingConfirmation, QueueHandler,
};
pub use crate::context::{Progress, State, ToolContext};
pub use crate::error::{CollectError, ConfigError, RegisterError};
pub use crate::event::{Bridge, BridgeMessage, Event};
pub use crate::input::NoInput;
pub use crate::outcome::{Issue, NeedsConfirmation, Outcome, Refusal, RefusalCode, ToolError};
pub use crate::scope::{Scope, ScopeGuard, ScopeOptions};
pub use crate::tool::{Decoded, Effect, StateNeed, ToolAnnotations, ToolInfo, ToolSpec};
pub use crate::toolmark::{RegisterOptions, Toolmark, ToolmarkBuilder};

/// The sensitive-value placeholder: `"[redacted]"`.
pub const REDACTED: &str = "[redacted]";
