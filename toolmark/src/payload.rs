//! The plain data every surface shares: an [`Issue`] (a problem at a JSON path) and a
//! [`Change`] (a value before and after, at a path). A leaf: it imports nothing from
//! the rest of the crate, so `sensitive/` (redaction, restore), `confirm/`, the call
//! pipeline and the adapters can all speak it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One problem with a call's input (or with an approver's edit), at a JSON path.
///
/// `path` is dotted with array indices as numbers: `cards.0.cvc`; the empty string
/// is the input itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// Where the problem is, dotted (`cards.0.cvc`); `""` is the whole input.
    pub path: String,
    /// What is wrong. Never quotes a sensitive value.
    pub message: String,
}

impl Issue {
    /// An issue at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Issue {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// One change a confirmation shows the approver: the value at `path` before and after.
///
/// `path` is dotted like an [`Issue`](crate::Issue) path (`cards.0.cvc`); a change a
/// tool passes to `ctx.confirm` may also give a JSON Pointer (`/cards/0/cvc`), which
/// is read as the dotted path. JSON: `{"path", "before", "after"}`.
#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Change {
    /// Where the change is, dotted (`cards.0`); `""` is the whole input.
    pub path: String,
    /// The value before the change (`None`: it did not exist).
    #[serde(default)]
    pub before: Option<Value>,
    /// The value after the change (`None`: it is removed).
    #[serde(default)]
    pub after: Option<Value>,
}

impl fmt::Debug for Change {
    /// Shows the path only: a change's values may hold secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Change")
            .field("path", &self.path)
            .field("before", &self.before.as_ref().map(|_| ".."))
            .field("after", &self.after.as_ref().map(|_| ".."))
            .finish()
    }
}
