//! Entry points of the fuzz targets in `fuzz/` (feature `fuzz`; not part of the
//! public API): each takes the fuzzer's bytes, drives the crate's real private
//! modules, and panics when an invariant breaks.
//!
//! - [`check_path`](crate::__fuzz::check_path): the sensitive-path parser, schema resolution, location
//!   matching and message rewriting, on any text.
//! - `check_mrtr_handle`: an MCP multi round-trip
//!   request's `requestState` handle, opened as the server opens what a client
//!   sends: anything is refused without a panic; a genuine handle opens for its
//!   call only (tool, caller, arguments), under its key and purpose only, and not
//!   with a byte changed.
//! - [`check_restore`](crate::__fuzz::check_restore): redaction and the restore rule, on paths, an input and an
//!   approver's edit.
//! - [`check_decode`](crate::__fuzz::check_decode): the tracked decode, with alias and unknown keys, against
//!   serde_json's own decode; and the secret set of the call: no value the decode
//!   can read at a sensitive path (aliases included) reaches its refusal or its
//!   recorded arguments.

use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::call::input::decode_typed;
use crate::call::outcome::Refusal;
use crate::payload::Change;
use crate::sensitive::{
    declared_names, mark_write_only, resolve_all, resolve_path, scrub, withhold_value, KeyTree,
    Matcher, NameMode, SecretSet, Seg, SensitivePath, REDACTED, REENTER,
};
use crate::Outcome;

pub use crate::store::request_state::fuzz::check_handle as check_mrtr_handle;

/// A schemars-1.x-shaped input schema to resolve fuzzed paths against.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": { "type": "string" },
            "cards": { "type": "array", "items": { "$ref": "#/$defs/Card" } },
            "backup": { "anyOf": [ { "$ref": "#/$defs/Card" }, { "type": "null" } ] },
            "grid": { "type": "array", "items": { "type": "array", "items": { "$ref": "#/$defs/Card" } } },
            "meta": { "type": "object", "additionalProperties": { "type": "string" } },
            "owner": { "$ref": "#/$defs/Owner", "description": "Who." },
            "tree": { "$ref": "#/$defs/Tree" }
        },
        "$defs": {
            "Card": { "type": "object", "properties": { "number": { "type": "string" }, "cvc": { "type": "string" } } },
            "Owner": { "type": "object", "properties": { "fullName": { "type": "string" }, "taxId": { "type": ["string", "null"] } } },
            "Tree": { "type": "object", "properties": { "secret": {}, "children": { "type": "array", "items": { "$ref": "#/$defs/Tree" } } } }
        }
    })
}

/// Target `sensitive_path`: any text as a sensitive path, a location and a serde
/// message.
pub fn check_path(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match SensitivePath::parse(text) {
        Ok(path) => {
            // The canonical form is the text itself, and it parses back.
            assert_eq!(path.to_string(), text);
            assert_eq!(SensitivePath::parse(text).as_ref(), Ok(&path));
            assert!(matches!(path.segs().first(), Some(Seg::Key(_))));
            let schema = schema();
            for mode in [NameMode::Json, NameMode::Rust] {
                if let Ok(resolved) = resolve_path(&path, &schema, mode) {
                    assert_eq!(resolved.segs().len(), path.segs().len());
                    let mut marked = schema.clone();
                    mark_write_only(&mut marked, &[resolved]);
                    // The mark never goes into a shared definition: every entry
                    // kept is the original (entries only the marked path used are
                    // inlined there and pruned).
                    if let Some(Value::Object(kept)) = marked.get("$defs") {
                        for (name, def) in kept {
                            assert_eq!(
                                Some(def),
                                schema["$defs"].get(name),
                                "$defs/{name} changed"
                            );
                        }
                    }
                }
            }
            let m = Matcher::new(vec![path]);
            let _ = m.matches(text);
            let _ = m.redact(&schema);
        }
        Err(e) => {
            assert!(e.position <= text.len());
            assert!(text.is_char_boundary(e.position));
            let _ = e.to_string();
        }
    }
    let m = Matcher::new(vec![
        SensitivePath::parse("cards[].cvc").expect("fixed path")
    ]);
    let _ = m.matches(text);
    let _ = m.redact_at(text, &json!({ "cvc": "1", "cards": [{ "cvc": "2" }] }));
    let _ = m.redact_location(text);
    let _ = withhold_value(text);
    // serde's messages never quote the value after withhold_value.
    let typed = serde_json::Error::invalid_type(Unexpected::Str(text), &"u32").to_string();
    assert_eq!(
        withhold_value(&typed),
        "invalid type: string (value withheld), expected u32"
    );
    let variant = serde_json::Error::unknown_variant(text, &["Visa"]).to_string();
    assert_eq!(
        withhold_value(&variant),
        "unknown variant (value withheld), expected `Visa`"
    );
    let other = serde_json::Error::invalid_value(Unexpected::Other(text), &"a pin").to_string();
    let out = withhold_value(&other);
    let plain = [
        "null",
        "unit value",
        "Option value",
        "newtype struct",
        "sequence",
        "map",
        "enum",
        "unit variant",
        "newtype variant",
        "tuple variant",
        "struct variant",
        "byte array",
    ];
    let valued = [
        "boolean",
        "integer",
        "floating point",
        "character",
        "string",
    ];
    let allowed = out == "invalid value: (value withheld), expected a pin"
        || plain
            .iter()
            .any(|k| out == format!("invalid value: {k}, expected a pin"))
        || valued
            .iter()
            .any(|k| out == format!("invalid value: {k} (value withheld), expected a pin"));
    assert!(allowed, "{other:?} -> {out:?}");
    // Scrubbing removes every secret found in the text (a secret sharing characters
    // with the placeholder could be re-formed around it, so those are not checked).
    let half: String = text.chars().take(text.chars().count() / 2).collect();
    let clean = scrub(text, std::slice::from_ref(&half));
    if !half.is_empty() && !half.chars().any(|c| REDACTED.contains(c)) {
        assert!(!clean.contains(half.as_str()), "{text:?} -> {clean:?}");
    }
    // Bounding keeps at most the limit, on a character boundary.
    let mut cut = text.to_owned();
    crate::sensitive::bound(&mut cut, 16);
    assert!(cut.chars().count() <= 16);
}

/// The sensitive paths on the first line of a `restore` input.
fn paths_line(line: &str) -> Option<Vec<SensitivePath>> {
    line.split_whitespace()
        .map(|p| SensitivePath::parse(p).ok())
        .collect()
}

/// Every node of `v` as a JSON pointer.
fn pointers(v: &Value, at: String, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(c, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push((at, v.clone()));
}

/// Target `restore`: three lines — sensitive paths (space separated; `!` means
/// unreadable), the original input (JSON), the approver's edit (JSON).
pub fn check_restore(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let (Some(first), Some(orig), Some(edited)) = (lines.next(), lines.next(), lines.next()) else {
        return;
    };
    let m = if first.trim() == "!" {
        Matcher::unreadable()
    } else {
        match paths_line(first) {
            Some(paths) => Matcher::new(paths),
            None => return,
        }
    };
    let Ok(original) = serde_json::from_str::<Value>(orig) else {
        return;
    };
    // An approval that edits nothing restores exactly the original.
    assert_eq!(
        m.restore(&original, m.redact(&original)),
        Ok(original.clone())
    );
    let secrets = m.secrets(&original);
    let _ = scrub(orig, &secrets);

    let changes = vec![
        Change {
            path: String::new(),
            before: None,
            after: Some(original.clone()).filter(|v| !v.is_null()),
        },
        Change {
            path: "cards.0".to_owned(),
            before: original
                .pointer("/cards/0")
                .cloned()
                .filter(|v| !v.is_null()),
            after: original
                .pointer("/cards/1")
                .cloned()
                .filter(|v| !v.is_null()),
        },
    ];
    let shown = serde_json::to_value(m.redact_changes(&changes)).unwrap_or_default();
    assert_eq!(m.restore_changes(&changes, shown), Ok(changes.clone()));

    let Ok(edited) = serde_json::from_str::<Value>(edited) else {
        return;
    };
    match m.restore(&original, edited.clone()) {
        Ok(out) => {
            // "[redacted]" reaches the tool only where the original held that literal.
            let mut nodes = Vec::new();
            pointers(&out, String::new(), &mut nodes);
            for (at, node) in nodes {
                if node.as_str() == Some(REDACTED) {
                    assert_eq!(original.pointer(&at), Some(&node), "placeholder at {at}");
                }
            }
        }
        Err(issues) => {
            assert!(!issues.is_empty());
            assert!(issues.iter().all(|i| i.message == REENTER));
        }
    }
    let _ = m.restore_changes(&changes, edited);
}

/// The input type the decode target decodes: a sensitive `cvc` with a serde
/// alias, rows whose sensitive `number` has one too, an optional list.
#[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Payment {
    holder: String,
    #[serde(alias = "security_code")]
    cvc: String,
    #[serde(default)]
    rows: Vec<Row>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Row {
    #[serde(alias = "pan")]
    number: String,
    tags: Option<Vec<u8>>,
}

/// The keys serde reads into a sensitive field of [`Payment`], where they are.
fn sensitive_values<'v>(input: &'v Value, out: &mut Vec<&'v str>) {
    let Value::Object(map) = input else { return };
    for key in ["cvc", "security_code"] {
        leaf_strings(map.get(key), out);
    }
    if let Some(Value::Array(rows)) = map.get("rows") {
        for row in rows {
            if let Value::Object(row) = row {
                for key in ["number", "pan"] {
                    leaf_strings(row.get(key), out);
                }
            }
        }
    }
}

fn leaf_strings<'v>(v: Option<&'v Value>, out: &mut Vec<&'v str>) {
    match v {
        Some(Value::String(s)) => out.push(s),
        Some(Value::Array(items)) => items.iter().for_each(|i| leaf_strings(Some(i), out)),
        Some(Value::Object(m)) => m.values().for_each(|i| leaf_strings(Some(i), out)),
        _ => {}
    }
}

/// `input` with every value [`sensitive_values`] finds replaced by `"Z"`.
fn blanked(input: &Value) -> Value {
    fn blank(v: &mut Value) {
        match v {
            Value::String(s) => *s = "Z".to_owned(),
            Value::Array(items) => items.iter_mut().for_each(blank),
            Value::Object(m) => m.values_mut().for_each(blank),
            _ => {}
        }
    }
    let mut out = input.clone();
    if let Value::Object(map) = &mut out {
        for key in ["cvc", "security_code"] {
            if let Some(v) = map.get_mut(key) {
                blank(v);
            }
        }
        if let Some(Value::Array(rows)) = map.get_mut("rows") {
            for row in rows {
                if let Value::Object(row) = row {
                    for key in ["number", "pan"] {
                        if let Some(v) = row.get_mut(key) {
                            blank(v);
                        }
                    }
                }
            }
        }
    }
    out
}

/// What an observer reads of a call of the decode target with `input`: its refusal
/// (if the key check or the decode refuse it) and its recorded arguments.
fn observed(input: &Value, matcher: &Matcher, keys: &KeyTree) -> String {
    let set = SecretSet::of_call(matcher, input, Some(keys), None);
    let found = keys.check(input, 20);
    let issues = if found.issues.is_empty() {
        decode_typed::<Payment>(input, false)
            .err()
            .unwrap_or_default()
    } else {
        found.issues
    };
    let outcome = set.outcome(Outcome::Refused(Refusal::invalid(set.issues(issues))));
    let arguments = set.arguments(input, Some(keys));
    format!(
        "{} {:?} {}",
        serde_json::to_string(outcome.get()).unwrap_or_default(),
        outcome.get(),
        arguments.get()
    )
}

/// Target `decode`: any JSON value as a call's input. The tracked decode agrees
/// with serde_json's (same success, same value; unknown fields reported only when
/// asked); and a value serde can read into a sensitive field (under its name or an
/// alias) never reaches the refusal or the recorded arguments, unless the same
/// text is there when those values are blanked (it is then the message's own).
pub fn check_decode(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let reference = serde_json::from_value::<Payment>(input.clone()).ok();
    let tracked = decode_typed::<Payment>(&input, true).ok();
    assert_eq!(
        tracked, reference,
        "the tracked decode disagrees with serde_json"
    );
    if let Ok(strict) = decode_typed::<Payment>(&input, false) {
        assert_eq!(Some(&strict), reference.as_ref());
    }

    let schema = crate::call::input::schema_for::<Payment>();
    let paths = resolve_all(
        &["cvc".to_owned(), "rows[].number".to_owned()],
        &schema,
        NameMode::Json,
    )
    .expect("the target's paths resolve");
    let matcher = Matcher::with_names(paths, declared_names(&schema));
    let keys = KeyTree::compile(&schema).expect("the target's schema compiles");
    let text = observed(&input, &matcher, &keys);
    let vocabulary = observed(&blanked(&input), &matcher, &keys);
    let mut secrets = Vec::new();
    sensitive_values(&input, &mut secrets);
    for s in secrets {
        // A value with a bracket could be re-formed around a placeholder.
        let checkable = s.chars().count() >= 4 && !s.contains(['[', ']']);
        if checkable && !vocabulary.contains(s) {
            assert!(
                !text.contains(s),
                "the sensitive value {s:?} reached an observer: {text}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    /// Inputs the fuzzers found; each once broke an invariant its target checks.
    #[test]
    fn found_inputs_hold() {
        // A path through `owner` (Rust names): `Owner` is inlined and marked there,
        // and its now unused definition pruned; the target had wanted `$defs` equal.
        super::check_path(b"___owner_._____taxId___");
        super::check_path(b"owner.taxId");
    }
}
