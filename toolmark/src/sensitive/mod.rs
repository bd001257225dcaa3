//! Sensitive values: the sensitive-path grammar, checking paths against
//! an input schema, `writeOnly` marks, redaction of confirmation payloads, restoring
//! secrets into an approver's edited input, and keeping secrets out of messages.
//!
//! - [`SensitivePath`]: `seg(.seg|[])*`, `[]` matching any array index (see [`path`]).
//! - [`resolve_path`] checks a path against the input schema at registration and names
//!   it in JSON property names; [`mark_write_only`] marks it in the manifest schema.
//! - [`Matcher`] holds one tool's resolved paths (or "unreadable": the whole input is
//!   sensitive) and does the per-call work: [`Matcher::redact`],
//!   [`Matcher::redact_changes`], [`Matcher::restore`], [`Matcher::restore_changes`],
//!   [`Matcher::secrets`].
//! - [`scrub`] and [`withhold_value`] keep secrets out of error, panic and issue
//!   messages.
//!
//! Locations (`cards.0.cvc`) are dotted like [`Issue`](crate::Issue) paths; `""` is the
//! whole input.

mod keys;
mod message;
mod path;
mod redact;
mod restore;
mod schema;

#[cfg(test)]
mod props;

pub(crate) use keys::{declared_names, KeyTree};
pub(crate) use message::{scrub, withhold_value};
// The whole API is re-exported here, whether or not the rest of the crate names each item yet.
#[allow(unused_imports)]
pub(crate) use path::{PathError, Seg, SensitivePath};
pub(crate) use redact::Matcher;
pub(crate) use schema::{mark_write_only, resolve_path, NameMode};

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
