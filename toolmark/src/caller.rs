//! Who calls a tool ([`Caller`]) and how each caller gets confirmations ([`ConfirmMode`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who is calling a tool.
///
/// Serialized lowercase: `"human"`, `"inapp"`, `"webmcp"`, `"mcp"`, `"tour"`, `"test"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Caller {
    /// The user, acting through the app's own UI. Never asked to confirm.
    Human,
    /// An agent running inside the app (deferred confirmation by default).
    InApp,
    /// A browser agent through WebMCP (always inline confirmation).
    WebMcp,
    /// An MCP client (always inline confirmation).
    Mcp,
    /// A scripted product tour (always inline confirmation).
    Tour,
    /// A test (inline confirmation by default).
    Test,
}

impl Caller {
    /// Every caller, in declaration order.
    pub const ALL: [Caller; 6] = [
        Caller::Human,
        Caller::InApp,
        Caller::WebMcp,
        Caller::Mcp,
        Caller::Tour,
        Caller::Test,
    ];

    /// The caller's lowercase name, as serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            Caller::Human => "human",
            Caller::InApp => "inapp",
            Caller::WebMcp => "webmcp",
            Caller::Mcp => "mcp",
            Caller::Tour => "tour",
            Caller::Test => "test",
        }
    }

    /// The confirmation mode this caller has unless the builder sets another
    /// (only [`Caller::InApp`] and [`Caller::Test`] may be set).
    pub const fn default_confirm_mode(self) -> ConfirmMode {
        match self {
            Caller::InApp => ConfirmMode::Deferred,
            _ => ConfirmMode::Inline,
        }
    }

    /// Whether the builder may change this caller's confirmation mode.
    pub const fn confirm_mode_configurable(self) -> bool {
        matches!(self, Caller::InApp | Caller::Test)
    }

    pub(crate) const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a caller gets the user's approval for a consequential or destructive call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmMode {
    /// The call returns `needs_confirmation` at once; the app approves later with
    /// [`Toolmark::confirm_pending`](crate::Toolmark::confirm_pending).
    Deferred,
    /// The call stays open while the app's [`ConfirmHandler`](crate::ConfirmHandler)
    /// asks the user.
    Inline,
}

/// A set of callers (the callers a tool allows).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallerSet(u8);

impl CallerSet {
    /// Every caller.
    pub const ALL: CallerSet = CallerSet(0b11_1111);
    /// No caller.
    pub const EMPTY: CallerSet = CallerSet(0);

    /// A set of the given callers.
    pub fn of(callers: impl IntoIterator<Item = Caller>) -> Self {
        callers.into_iter().fold(CallerSet::EMPTY, CallerSet::with)
    }

    /// This set plus `caller`.
    #[must_use]
    pub const fn with(self, caller: Caller) -> Self {
        CallerSet(self.0 | caller.bit())
    }

    /// Whether `caller` is in the set.
    pub const fn contains(self, caller: Caller) -> bool {
        self.0 & caller.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The callers in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Caller> {
        Caller::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl Default for CallerSet {
    fn default() -> Self {
        CallerSet::ALL
    }
}

impl fmt::Debug for CallerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<Caller> for CallerSet {
    fn from_iter<I: IntoIterator<Item = Caller>>(iter: I) -> Self {
        CallerSet::of(iter)
    }
}

impl From<&[Caller]> for CallerSet {
    fn from(callers: &[Caller]) -> Self {
        CallerSet::of(callers.iter().copied())
    }
}

impl<const N: usize> From<[Caller; N]> for CallerSet {
    fn from(callers: [Caller; N]) -> Self {
        CallerSet::of(callers)
    }
}
