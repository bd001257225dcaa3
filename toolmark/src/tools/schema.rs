//! Every schema a tool exports is standard JSON Schema 2020-12.
//!
//! schemars writes Rust's number types as non-standard formats (`"format":
//! "uint32"`, `"int64"`, `"double"`, …, with the format's name as the title of a
//! bare number schema); an ajv-based client (the TypeScript SDK, the MCP
//! Inspector) warns about every unknown format on every call, and a strict
//! validator refuses the schema. [`standardize`] rewrites such a schema once,
//! where it is made (`schema_for`, and the `ToolSpec` setters of hand-written
//! schemas), so the manifest, MCP and every provider format get the same
//! standard schema:
//!
//! - an integer format becomes the bounds it means (`uint8` → `minimum: 0,
//!   maximum: 255`; 64-bit and wider ones only `minimum: 0` when unsigned, as
//!   their bounds are past what clients hold exactly in a JSON number), kept
//!   where the schema already has tighter ones;
//! - any other format outside the 2020-12 vocabulary is dropped (it is an
//!   annotation: validators ignore it), the standard ones (`date-time`, `email`,
//!   `uuid`, …) stay;
//! - a `title` that only repeats a dropped format name goes too.
//!
//! Values (`const`, `default`, `enum`, `examples`) are data and never touched.

use serde_json::{Map, Value};

/// The formats JSON Schema 2020-12 defines (the format-annotation vocabulary).
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose values are data, not schemas.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// The bounds an integer format of schemars stands for.
fn integer_bounds(format: &str) -> Option<(Option<i128>, Option<i128>)> {
    let bounds = match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        // 64-bit bounds are past what a JSON number holds exactly in most
        // clients (2^53): only the sign is said.
        "int64" | "int" | "int128" => (None, None),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint" | "uint128" => (Some(0), None),
        _ => return None,
    };
    Some(bounds)
}

/// A JSON number for a bound (every bound above fits an `i64`).
fn number(n: i128) -> Value {
    i64::try_from(n).map_or(Value::Null, Value::from)
}

/// Whether `schema` holds anything [`standardize`] would change.
#[cfg(test)]
fn needs_standardizing(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| match (k.as_str(), v) {
            (key, _) if DATA_KEYWORDS.contains(&key) => false,
            ("format", Value::String(f)) => !STANDARD_FORMATS.contains(&f.as_str()),
            (_, v) => needs_standardizing(v),
        }),
        Value::Array(items) => items.iter().any(needs_standardizing),
        _ => false,
    }
}

/// Rewrite `schema` (and every schema inside it) into standard JSON Schema
/// 2020-12 (see the module docs).
pub(crate) fn standardize(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            standardize_one(map);
            for (key, value) in map.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    standardize(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standardize),
        _ => {}
    }
}

/// One schema object's own `format`.
fn standardize_one(map: &mut Map<String, Value>) {
    let format = match map.get("format") {
        Some(Value::String(f)) if !STANDARD_FORMATS.contains(&f.as_str()) => f.clone(),
        _ => return,
    };
    map.remove("format");
    if map.get("title").and_then(Value::as_str) == Some(format.as_str()) {
        map.remove("title");
    }
    let Some((min, max)) = integer_bounds(&format) else {
        return;
    };
    // An existing bound at least as tight wins.
    let have = |key: &str| map.get(key).and_then(Value::as_f64);
    let keep_min = min.is_none_or(|m| have("minimum").is_some_and(|h| h >= m as f64))
        || map.contains_key("exclusiveMinimum");
    let keep_max = max.is_none_or(|m| have("maximum").is_some_and(|h| h <= m as f64))
        || map.contains_key("exclusiveMaximum");
    if let (Some(min), false) = (min, keep_min) {
        map.insert("minimum".to_owned(), number(min));
    }
    if let (Some(max), false) = (max, keep_max) {
        map.insert("maximum".to_owned(), number(max));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Numbers {
        a: u8,
        b: u32,
        c: u64,
        d: usize,
        e: i16,
        f: i64,
        g: f64,
        h: f32,
        i: Option<u16>,
        j: Vec<u32>,
        k: std::net::IpAddr,
        when: String,
    }

    fn formats(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if let ("format", Value::String(f)) = (k.as_str(), v) {
                        out.push(f.clone());
                    }
                    formats(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| formats(v, out)),
            _ => {}
        }
    }

    #[test]
    fn schemars_number_formats_become_standard_bounds() {
        let raw = schemars::SchemaGenerator::default()
            .into_root_schema_for::<Numbers>()
            .to_value();
        let mut before = Vec::new();
        formats(&raw, &mut before);
        assert!(before.iter().any(|f| f == "uint32"), "{raw}");
        assert!(needs_standardizing(&raw));
        let mut s = raw;
        standardize(&mut s);
        let mut after = Vec::new();
        formats(&s, &mut after);
        assert!(after.is_empty(), "{after:?} in {s}");
        assert!(!needs_standardizing(&s));
        let p = &s["properties"];
        assert_eq!(p["a"]["minimum"], 0);
        assert_eq!(p["a"]["maximum"], 255);
        assert_eq!(p["b"]["maximum"], u32::MAX);
        assert_eq!(p["c"]["minimum"], 0);
        assert!(p["c"].get("maximum").is_none());
        assert_eq!(p["d"]["minimum"], 0);
        assert!(p["d"].get("maximum").is_none());
        assert_eq!(p["e"]["minimum"], i16::MIN);
        assert_eq!(p["f"], json!({"type": "integer"}));
        assert_eq!(p["g"], json!({"type": "number"}));
        assert_eq!(p["j"]["items"]["minimum"], 0);
    }

    #[test]
    fn standard_formats_data_and_tighter_bounds_are_kept() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "date-time"},
                "id": {"type": "string", "format": "uuid"},
                "n": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 9},
                "m": {"type": "integer", "format": "int32", "exclusiveMinimum": 0},
                "phone": {"type": "string", "format": "phone"},
                "format": {"type": "string"},
                "bare": {"title": "uint64", "type": "integer", "format": "uint64"},
                "named": {"title": "Count", "type": "integer", "format": "uint64"}
            },
            "default": {"n": {"format": "uint8"}},
            "examples": [{"format": "int64"}],
            "$defs": {"D": {"anyOf": [{"type": "integer", "format": "int8"}, {"type": "null"}]}}
        });
        standardize(&mut s);
        let p = &s["properties"];
        assert_eq!(p["at"]["format"], "date-time");
        assert_eq!(p["id"]["format"], "uuid");
        assert_eq!(
            p["n"],
            json!({"type": "integer", "minimum": 1, "maximum": 9})
        );
        assert_eq!(
            p["m"],
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": i32::MAX})
        );
        assert_eq!(p["phone"], json!({"type": "string"}));
        assert_eq!(p["format"], json!({"type": "string"}));
        assert_eq!(p["bare"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(p["named"]["title"], "Count");
        assert_eq!(s["default"], json!({"n": {"format": "uint8"}}));
        assert_eq!(s["examples"], json!([{"format": "int64"}]));
        assert_eq!(
            s["$defs"]["D"]["anyOf"][0],
            json!({"type": "integer", "minimum": -128, "maximum": 127})
        );
    }
}
