//! What a call returns: [`Outcome`], its refusal codes and validation issues.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::payload::Change;

/// How many issues one `invalid` refusal lists; the rest are counted in one more issue.
pub(crate) const MAX_ISSUES: usize = 20;

/// The most characters one issue message keeps (a longer one ends in `…`).
pub(crate) const MAX_ISSUE_CHARS: usize = crate::sensitive::MAX_ISSUE_CHARS;

pub use crate::payload::Issue;

/// Why a call was refused. Serialized snake_case (`"unknown_tool"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RefusalCode {
    /// No such tool, or its scope is hidden (`when: false`) or disposed.
    UnknownTool,
    /// The tool does not allow this caller (or the caller has no confirmation path).
    NotAllowed,
    /// The input (or an approver's edit) failed validation; see the issues.
    Invalid,
    /// The user rejected the confirmation.
    Rejected,
    /// The confirmation id expired, was already used, or never existed.
    ConfirmationExpired,
    /// A form changed since its submit was put up for confirmation.
    Stale,
    /// The call was aborted (deadline, caller signal, shutdown) or never ran.
    Cancelled,
    /// The tool's scope was disposed before the call ran.
    ScopeDisposed,
    /// The scope's queue is full.
    Busy,
    /// The confirmation store cannot be reached (connection lost, timeout): the
    /// call was not stored, or the answer not taken, and nothing ran. Try again.
    Unavailable,
}

impl RefusalCode {
    /// The stable code string (`"unknown_tool"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            RefusalCode::UnknownTool => "unknown_tool",
            RefusalCode::NotAllowed => "not_allowed",
            RefusalCode::Invalid => "invalid",
            RefusalCode::Rejected => "rejected",
            RefusalCode::ConfirmationExpired => "confirmation_expired",
            RefusalCode::Stale => "stale",
            RefusalCode::Cancelled => "cancelled",
            RefusalCode::ScopeDisposed => "scope_disposed",
            RefusalCode::Busy => "busy",
            RefusalCode::Unavailable => "unavailable",
        }
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused call: a stable code, a message for the agent, and input issues.
///
/// JSON (inside an [`Outcome`]): `{"status":"refused","code":"invalid","message":"…","issues":[…]}`;
/// `issues` is left out when empty.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refusal {
    /// The stable refusal code.
    pub code: RefusalCode,
    /// A sentence for the agent (never quotes a sensitive value).
    pub message: String,
    /// Input problems, for `invalid`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<Issue>,
}

impl Refusal {
    /// A refusal with `code` and `message`.
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
            issues: Vec::new(),
        }
    }

    /// An `invalid` refusal carrying `issues`: the first 20 of them,
    /// then (when there were more) one issue at `""` saying how many more there were.
    pub fn invalid(issues: Vec<Issue>) -> Self {
        Refusal::invalid_capped(issues, 0)
    }

    /// [`Refusal::invalid`] for issues a producer already cut short: `more` issues
    /// were found beyond `issues`.
    pub(crate) fn invalid_capped(mut issues: Vec<Issue>, more: usize) -> Self {
        let more = more + issues.len().saturating_sub(MAX_ISSUES);
        issues.truncate(MAX_ISSUES);
        for issue in &mut issues {
            // What the caller sent (key names, values) comes back bounded.
            crate::sensitive::bound(&mut issue.message, MAX_ISSUE_CHARS);
            crate::sensitive::bound(&mut issue.path, crate::sensitive::MAX_PATH_CHARS);
        }
        let message = match issues.split_first() {
            None => "Invalid input".to_owned(),
            Some((first, rest)) => match rest.len() + more {
                0 => format!("Invalid input: {first}"),
                n => format!("Invalid input: {first} (and {n} more)"),
            },
        };
        if more > 0 {
            issues.push(Issue::new("", format!("and {more} more issues")));
        }
        let mut message = message;
        crate::sensitive::bound(&mut message, crate::sensitive::MAX_MESSAGE_CHARS);
        Refusal {
            code: RefusalCode::Invalid,
            message,
            issues,
        }
    }

    /// The stable code string.
    pub fn code_str(&self) -> &'static str {
        self.code.as_str()
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Refusal {}

/// The error a tool returns: a message and optional input issues.
///
/// A tool returning `Err(ToolError)` yields `{"status":"error","message":…,"issues"?:…}`.
/// Any `E: Display` returned by a `#[tool]` fn becomes a `ToolError` with its message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolError {
    /// What went wrong.
    pub message: String,
    /// Input problems the tool found itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<Issue>,
}

impl ToolError {
    /// A tool error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            issues: Vec::new(),
        }
    }

    /// This error with `issues` attached.
    #[must_use]
    pub fn with_issues(mut self, issues: Vec<Issue>) -> Self {
        self.issues = issues;
        self
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

/// The result of a call.
///
/// ```json
/// {"status":"ok","output":…}
/// {"status":"needs_confirmation","confirmId":"…","summary":"…","changes":[],"expiresAt":"…"}
/// {"status":"refused","code":"not_allowed","message":"…","issues":[…]}
/// {"status":"error","message":"…"}
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and returned `output`.
    Ok {
        /// The tool's output, as JSON.
        output: Value,
    },
    /// A deferred confirmation is pending; the tool has not run. Approve or reject
    /// it with [`Toolmark::confirm_pending`](crate::Toolmark::confirm_pending).
    #[serde(rename_all = "camelCase")]
    NeedsConfirmation {
        /// The id to approve or reject (128 random bits, hex).
        confirm_id: String,
        /// A one-line summary for the user (the tool's summary template, filled).
        summary: String,
        /// The changes the call would make (redacted).
        changes: Vec<Change>,
        /// When the confirmation expires (RFC 3339 in JSON).
        #[serde(with = "crate::clock::rfc3339")]
        expires_at: std::time::SystemTime,
    },
    /// The call was refused; the tool did not run (or its run was aborted).
    Refused(Refusal),
    /// The tool itself failed or panicked.
    Error(ToolError),
}

impl Outcome {
    /// A refusal outcome.
    pub fn refused(code: RefusalCode, message: impl Into<String>) -> Self {
        Outcome::Refused(Refusal::new(code, message))
    }

    /// `"ok"`, `"needs_confirmation"`, `"refused"` or `"error"`.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok { .. } => "ok",
            Outcome::NeedsConfirmation { .. } => "needs_confirmation",
            Outcome::Refused(_) => "refused",
            Outcome::Error(_) => "error",
        }
    }

    /// Whether the tool ran and succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok { .. })
    }

    /// The output of a successful call.
    pub fn output(&self) -> Option<&Value> {
        match self {
            Outcome::Ok { output } => Some(output),
            _ => None,
        }
    }

    /// The refusal code of a refused call.
    pub fn refusal_code(&self) -> Option<RefusalCode> {
        match self {
            Outcome::Refused(r) => Some(r.code),
            _ => None,
        }
    }

    /// The refusal, if refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Outcome::Refused(r) => Some(r),
            _ => None,
        }
    }

    /// The confirmation id of a `needs_confirmation` outcome.
    pub fn confirm_id(&self) -> Option<&str> {
        match self {
            Outcome::NeedsConfirmation { confirm_id, .. } => Some(confirm_id),
            _ => None,
        }
    }
}

impl From<Refusal> for Outcome {
    fn from(r: Refusal) -> Self {
        Outcome::Refused(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_message_keeps_at_most_300_characters() {
        let long = Refusal::invalid(vec![Issue::new("a", "é".repeat(1000))]);
        let kept = &long.issues[0].message;
        assert_eq!(kept.chars().count(), MAX_ISSUE_CHARS);
        assert!(kept.ends_with('…'));
        let exact = Refusal::invalid(vec![Issue::new("a", "x".repeat(MAX_ISSUE_CHARS))]);
        assert_eq!(exact.issues[0].message, "x".repeat(MAX_ISSUE_CHARS));
    }
}
