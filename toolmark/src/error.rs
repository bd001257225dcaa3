//! Typed errors of configuration ([`ConfigError`]) and registration ([`RegisterError`]).

use std::fmt;

use crate::Caller;

/// An invalid [`ToolmarkBuilder`](crate::ToolmarkBuilder) configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A confirmation mode was set for a caller whose mode is fixed: only
    /// [`Caller::InApp`] and [`Caller::Test`] are configurable; WebMcp, Mcp and Tour
    /// are always inline and Human never confirms.
    InvalidConfirmMode {
        /// The caller whose mode was set.
        caller: Caller,
    },
    /// An option has a value that cannot work (a zero `max_pending`, say).
    InvalidOption {
        /// The builder option.
        option: &'static str,
        /// Why it is invalid.
        reason: String,
    },
    /// A durable confirmation store was set without a seal key: everything a
    /// store holds is sealed, and only the app's key may make a record the
    /// toolmark trusts. Give the builder `seal_key(..)`.
    SealKeyRequired,
}

impl ConfigError {
    /// The stable code: `"invalid_confirm_mode"` or `"invalid_option"`.
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::InvalidConfirmMode { .. } => "invalid_confirm_mode",
            ConfigError::InvalidOption { .. } => "invalid_option",
            ConfigError::SealKeyRequired => "seal_key_required",
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidConfirmMode { caller } => write!(
                f,
                "invalid_confirm_mode: the confirmation mode of caller `{caller}` cannot be set; \
                 only `inapp` and `test` are configurable (webmcp, mcp and tour are always inline)"
            ),
            ConfigError::InvalidOption { option, reason } => {
                write!(f, "invalid_option: `{option}`: {reason}")
            }
            ConfigError::SealKeyRequired => write!(
                f,
                "seal_key_required: the confirmation store is durable: give the builder a \
                 32-byte `seal_key(..)`, the same on every instance, so that what it holds is \
                 sealed and only your app can make a record it trusts"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// A tool with this full name is already registered.
    DuplicateTool {
        /// The full name.
        name: String,
    },
    /// The tool name or a scope segment is not `[A-Za-z0-9_-]+`.
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A sensitive path is malformed or names nothing in the input schema.
    InvalidSensitivePath {
        /// The tool's full name.
        tool: String,
        /// The path as given.
        path: String,
        /// What is wrong (position, or which segment the schema lacks).
        reason: String,
    },
    /// The tool extracts `State<T>` but the builder was given no such state.
    MissingState {
        /// The tool's full name.
        tool: String,
        /// The state type's name.
        type_name: &'static str,
    },
    /// The scope was disposed.
    ScopeDisposed {
        /// The scope's path.
        scope: String,
    },
    /// A consequential or destructive tool that no allowed non-human caller could
    /// ever confirm.
    MissingConfirmHandler {
        /// The tool's full name.
        tool: String,
        /// The allowed non-human callers, none of which has a confirmation path.
        callers: Vec<Caller>,
    },
    /// The tool's declared input schema is not a usable JSON Schema, or its
    /// handler is missing.
    InvalidSpec {
        /// The tool's full name.
        tool: String,
        /// What is wrong.
        reason: String,
    },
}

impl RegisterError {
    /// The stable code: `duplicate_tool`, `invalid_name`, `invalid_sensitive_path`,
    /// `missing_state`, `scope_disposed`, `missing_confirm_handler` or `invalid_spec`.
    pub fn code(&self) -> &'static str {
        match self {
            RegisterError::DuplicateTool { .. } => "duplicate_tool",
            RegisterError::InvalidName { .. } => "invalid_name",
            RegisterError::InvalidSensitivePath { .. } => "invalid_sensitive_path",
            RegisterError::MissingState { .. } => "missing_state",
            RegisterError::ScopeDisposed { .. } => "scope_disposed",
            RegisterError::MissingConfirmHandler { .. } => "missing_confirm_handler",
            RegisterError::InvalidSpec { .. } => "invalid_spec",
        }
    }
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::DuplicateTool { name } => write!(
                f,
                "duplicate_tool: a tool named `{name}` is already registered; give one of them \
                 another `name` or put it in another scope"
            ),
            RegisterError::InvalidName { name, reason } => {
                write!(f, "invalid_name: `{name}`: {reason}")
            }
            RegisterError::InvalidSensitivePath { tool, path, reason } => write!(
                f,
                "invalid_sensitive_path: tool `{tool}`, sensitive path \"{path}\": {reason}"
            ),
            RegisterError::MissingState { tool, type_name } => write!(
                f,
                "missing_state: tool `{tool}` extracts `State<{type_name}>`, but the builder \
                 was given no such state; add `.state(value)` to `Toolmark::builder()`"
            ),
            RegisterError::ScopeDisposed { scope } => write!(
                f,
                "scope_disposed: scope `{scope}` was disposed; get a fresh one with `tm.scope(..)`"
            ),
            RegisterError::MissingConfirmHandler { tool, callers } => {
                let names: Vec<&str> = callers.iter().map(|c| c.as_str()).collect();
                write!(
                    f,
                    "missing_confirm_handler: tool `{tool}` needs confirmation, but none of its \
                     callers ({}) has a confirmation path; give the builder a \
                     `confirm_handler(..)`, allow a deferred-mode caller such as inapp, or \
                     (for an MCP server that confirms by elicitation) declare \
                     `client_confirms(Caller::Mcp)`",
                    names.join(", ")
                )
            }
            RegisterError::InvalidSpec { tool, reason } => {
                write!(f, "invalid_spec: tool `{tool}`: {reason}")
            }
        }
    }
}

impl std::error::Error for RegisterError {}

/// Every error of one [`Toolmark::register_collected`](crate::Toolmark::register_collected)
/// call (which registers nothing when any tool fails).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectError {
    /// One error per failing tool check, in tool order.
    pub errors: Vec<RegisterError>,
}

impl CollectError {
    /// The stable code of the first error.
    pub fn code(&self) -> &'static str {
        self.errors
            .first()
            .map_or("invalid_spec", RegisterError::code)
    }
}

impl fmt::Display for CollectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} collected tool(s) failed to register (nothing was registered):",
            self.errors.len()
        )?;
        for e in &self.errors {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CollectError {}
