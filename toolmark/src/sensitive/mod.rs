//! Sensitive values: the sensitive-path grammar, checking paths against
//! an input schema, `writeOnly` marks, redaction of confirmation payloads, restoring
//! secrets into an approver's edited input, keeping secrets out of messages, and the
//! one way out of the runtime.
//!
//! - [`SensitivePath`]: `seg(.seg|[])*`, `[]` matching any array index (see [`path`]).
//! - [`resolve_path`] checks a path against the input schema at registration and names
//!   it in JSON property names; [`mark_write_only`] marks it in the manifest schema.
//! - [`Matcher`] holds one tool's resolved paths (or "unreadable": the whole input is
//!   sensitive) and does the per-call work: [`Matcher::redact`],
//!   [`Matcher::redact_changes`], [`Matcher::restore`], [`Matcher::restore_changes`],
//!   [`Matcher::secrets`].
//! - [`scrub`] and `withhold_value` keep secrets out of error, panic and issue
//!   messages.
//! - [`SecretSet`] and [`Observed`] (in `secrets.rs`): the one way out.
//!
//! Locations (`cards.0.cvc`) are dotted like [`Issue`](crate::Issue) paths; `""` is the
//! whole input.
//!
//! # The secret set of a call, and the one way out
//!
//! Every byte that leaves the runtime toward an observer — a call's outcome, a
//! bridge message and the pub/sub message that carries it to other instances, an
//! event, a `tracing` field, the pending list, a provider's tool result and message,
//! an MCP result or notification, a refusal's issues, a recorded span argument — is
//! built from the call's **secret set**, through one type, [`Observed`], that only a
//! [`SecretSet`] can make. A surface never redacts on its own: it translates what
//! that path produced. A call waiting for confirmation has one such view, built
//! once by its secret set ([`View`]: summary, changes, redacted input): what the
//! approver is shown, the pending list, the `confirmation_requested` event, the
//! `needs_confirmation` outcome and the record a confirmation store seals all read
//! it; every answer's outcome (a rejection's reason, a re-validation's issues, the
//! run's output) goes through the secret set of the held input before it reaches
//! the caller, the bridge, or the other instances over the store's bus.
//!
//! What counts as a secret of a call (the values a tool's decode can read at a
//! sensitive path):
//!
//! - every value at a sensitive path of the input, whole and as text in every form a
//!   message may quote it (as is, JSON-escaped, `Debug`-escaped), and every map key
//!   inside it;
//! - every value under a key the input schema does not list, for a tool with
//!   sensitive paths: serde may read a `#[serde(alias)]` or another spelling into a
//!   sensitive field (such an input is refused "unknown field" before the decode, and
//!   its refusal and recorded arguments never show those values);
//! - the sensitive values of the state the tool works on: a form's values at its
//!   sensitive paths for its `fill` and `submit`, every step's for a wizard's
//!   `next`, `back` and `submit` (so those tools count as tools with sensitive
//!   values: an approval of them is never remembered).
//!
//! What the one way out does with them: a string equal to a secret becomes
//! `"[redacted]"`, a secret inside a longer string is replaced there (object keys
//! too), a number written like a secret becomes `"[redacted]"`, an issue at a
//! sensitive location never quotes its value, and a map key inside a sensitive value
//! is `"[redacted]"` in an issue path. On the same path every string an attacker
//! controls is bounded: issue paths (key names) and object keys of recorded
//! arguments at 200 characters, issue messages at 300, a refusal's own message at
//! 600, a summary at 200, a tool's error message at 4,000.
//!
//! What is **not** guaranteed: a secret the tool transforms before it returns it
//! (upper-cased, sliced, hashed, base64-encoded) cannot be recognized; a value that
//! is not at a sensitive path is not a secret (mark every field that holds one); what
//! a tool writes to its own logs, files or services, or a panic message printed by a
//! panic hook the app installs itself, is the app's; a secret shorter than the text
//! around it may also blank out equal text elsewhere in the same outcome (erring on
//! the safe side); a secret quoted in a field that is not sensitive is shown
//! scrubbed to an approver, and an approval that sends that edited input back runs
//! with the scrubbed text there (what the approver saw is what runs); a
//! dependency's own log of the raw request (rmcp's DEBUG lines of `tools/call`)
//! does not pass through this path.

mod keys;
mod message;
mod path;
mod redact;
mod restore;
mod schema;
mod secrets;

#[cfg(test)]
mod props;

pub(crate) use keys::{declared_names, KeyTree};
pub(crate) use message::scrub;
#[cfg(feature = "fuzz")]
pub(crate) use message::withhold_value;
// The whole API is re-exported here, whether or not the rest of the crate names each item yet.
#[allow(unused_imports)]
pub(crate) use path::{PathError, Seg, SensitivePath};
pub(crate) use redact::Matcher;
pub(crate) use schema::{mark_write_only, resolve_path, NameMode};
pub(crate) use secrets::SUMMARY_CHARS;
pub(crate) use secrets::{
    bound, bounded, CompactView, Observed, SecretSet, StateSecretsFn, View, MAX_ISSUE_CHARS,
    MAX_MESSAGE_CHARS, MAX_PATH_CHARS,
};

/// Parse and resolve every path of a tool against its input `schema`. A `json:`
/// prefix names JSON properties; any other path is read in `default` mode. The
/// first path that fails is returned with the reason.
pub(crate) fn resolve_all(
    paths: &[String],
    schema: &serde_json::Value,
    default: NameMode,
) -> Result<Vec<SensitivePath>, (String, String)> {
    paths
        .iter()
        .map(|p| {
            let (text, mode) = match toolmark_syntax::path::split_json(p) {
                (rest, true) => (rest, NameMode::Json),
                (text, false) => (text, default),
            };
            SensitivePath::parse(text)
                .map_err(|e| e.to_string())
                .and_then(|parsed| resolve_path(&parsed, schema, mode))
                .map_err(|reason| (p.clone(), reason))
        })
        .collect()
}

/// The placeholder that stands for a sensitive value in every payload toward an
/// approver or observer.
pub(crate) const REDACTED: &str = "[redacted]";

/// The issue message for a placeholder that has no real value to take.
pub(crate) const REENTER: &str = "Re-enter sensitive field";
