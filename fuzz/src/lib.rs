//! Shim for the fuzz targets: compiles toolmark's crate-private `sensitive` module on its
//! own (the same way its unit tests can be run in a scratch crate), with stand-ins for
//! the two crate items it names, `crate::Issue` and `crate::confirm::Change`, and
//! exposes one checking function per fuzz target.

#![forbid(unsafe_code)]
#![allow(dead_code, unused_imports)]

use serde_json::{json, Value};

/// Stand-in for `toolmark::outcome` (same fields as the real `Issue`).
pub mod outcome {
    use serde::{Deserialize, Serialize};

    /// One problem with an input, at a dotted path.
    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Issue {
        /// Where the problem is (`cards.0.cvc`); `""` is the whole input.
        pub path: String,
        /// What is wrong.
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
}

/// Stand-in for `toolmark::confirm` (same fields as the real `Change`).
pub mod confirm {
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    /// One change a confirmation shows: the value at `path` before and after.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
    pub struct Change {
        /// Where the change is, dotted.
        pub path: String,
        /// The value before (`None`: it did not exist).
        #[serde(default)]
        pub before: Option<Value>,
        /// The value after (`None`: it is removed).
        #[serde(default)]
        pub after: Option<Value>,
    }
}

pub use outcome::Issue;

#[path = "../../toolmark/src/sensitive/mod.rs"]
mod sensitive;

use confirm::Change;
use sensitive::{
    mark_write_only, resolve_path, scrub, withhold_value, Matcher, NameMode, Seg, SensitivePath,
    REDACTED, REENTER,
};

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

/// Fuzz target `sensitive_path`: any text as a sensitive path, a location and a serde
/// message. Panics on a broken invariant.
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
                    assert_eq!(marked["$defs"], schema["$defs"], "$defs must stay shared");
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
    let _ = withhold_value(text);
    // serde's messages never quote the value after withhold_value.
    use serde::de::{Error as _, Unexpected};
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

/// Fuzz target `restore`: three lines — sensitive paths (space separated; `!` means
/// unreadable), the original input (JSON), the approver's edit (JSON). Panics on a
/// broken invariant.
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
