//! Input schemas per provider: `$schema` dropped, `writeOnly` (sensitive) fields
//! described as sensitive, and OpenAI's strict mode where the schema allows it.

use rustc_hash::FxHashSet;
use serde_json::{json, Map, Value};

/// The sentence added to a sensitive (`writeOnly`) field's description.
pub(crate) const SENSITIVE_NOTE: &str =
    "Sensitive: the value is never shown to approvers, logs or observers.";

/// String formats OpenAI's strict mode accepts.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords strict mode cannot express: a schema that uses one is sent non-strict.
const STRICT_REFUSED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
];

/// Keywords strict mode refuses that only narrow values: kept as a sentence of the
/// description (Toolmark still validates them on every call).
const STRICT_DESCRIBED: &[(&str, &str)] = &[
    ("minLength", "Minimum length"),
    ("maxLength", "Maximum length"),
    ("minProperties", "Minimum properties"),
    ("maxProperties", "Maximum properties"),
    ("uniqueItems", "Unique items"),
    ("default", "Default"),
];

/// Annotations no provider needs.
const DROPPED: &[&str] = &[
    "$schema",
    "$comment",
    "$id",
    "readOnly",
    "deprecated",
    "examples",
];

/// Limits of OpenAI's strict mode.
const STRICT_MAX_DEPTH: usize = 10;
const STRICT_MAX_PROPERTIES: usize = 5000;
const STRICT_MAX_ENUM_VALUES: usize = 1000;

fn append_description(node: &mut Map<String, Value>, sentence: &str) {
    let text = match node.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => {
            let sep = if d.ends_with(['.', '!', '?']) {
                " "
            } else {
                ". "
            };
            format!("{d}{sep}{sentence}")
        }
        _ => sentence.to_owned(),
    };
    node.insert("description".into(), Value::String(text));
}

/// The schema every provider gets: annotations dropped; `writeOnly` fields keep
/// a description saying they are sensitive (and keep the keyword when
/// `keep_write_only`).
pub(crate) fn clean(schema: &Value, keep_write_only: bool) -> Value {
    let mut out = schema.clone();
    clean_in(&mut out, keep_write_only);
    if let Value::Object(top) = &mut out {
        if !top.contains_key("type") && top.contains_key("properties") {
            top.insert("type".into(), json!("object"));
        }
        if top.get("type") == Some(&json!("object")) && !top.contains_key("properties") {
            top.insert("properties".into(), json!({}));
        }
    }
    out
}

fn clean_in(node: &mut Value, keep_write_only: bool) {
    match node {
        Value::Object(map) => {
            for k in DROPPED {
                map.remove(*k);
            }
            if map.get("writeOnly") == Some(&Value::Bool(true)) {
                append_description(map, SENSITIVE_NOTE);
                if !keep_write_only {
                    map.remove("writeOnly");
                }
            }
            for (k, v) in map.iter_mut() {
                // Property names and enum values are data, not schemas.
                if k == "enum" || k == "const" || k == "required" {
                    continue;
                }
                if k == "properties" || k == "$defs" || k == "definitions" {
                    if let Value::Object(children) = v {
                        children
                            .values_mut()
                            .for_each(|c| clean_in(c, keep_write_only));
                    }
                    continue;
                }
                clean_in(v, keep_write_only);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|c| clean_in(c, keep_write_only)),
        _ => {}
    }
}

/// A cleaned schema made strict for OpenAI, or why it cannot be.
pub(crate) fn strict(cleaned: &Value) -> Result<Value, String> {
    let mut out = cleaned.clone();
    let top = out
        .as_object()
        .ok_or_else(|| "the input schema is not an object schema".to_owned())?;
    if top.get("type") != Some(&json!("object")) {
        return Err("the input is not a single object (top-level `type` is not \"object\")".into());
    }
    let mut count = Counts::default();
    strict_node(&mut out, "", 0, true, &mut count)?;
    if let Some(defs) = out.get_mut("$defs").and_then(Value::as_object_mut) {
        for (name, d) in defs.iter_mut() {
            strict_node(d, &format!("/$defs/{name}"), 1, false, &mut count)?;
        }
    }
    if count.properties > STRICT_MAX_PROPERTIES {
        return Err(format!(
            "{} properties (strict mode allows {STRICT_MAX_PROPERTIES})",
            count.properties
        ));
    }
    if count.enum_values > STRICT_MAX_ENUM_VALUES {
        return Err(format!(
            "{} enum values (strict mode allows {STRICT_MAX_ENUM_VALUES})",
            count.enum_values
        ));
    }
    Ok(out)
}

#[derive(Default)]
struct Counts {
    properties: usize,
    enum_values: usize,
}

fn strict_node(
    node: &mut Value,
    at: &str,
    depth: usize,
    top: bool,
    count: &mut Counts,
) -> Result<(), String> {
    let where_ = if at.is_empty() { "/" } else { at };
    if depth > STRICT_MAX_DEPTH {
        return Err(format!(
            "nesting deeper than {STRICT_MAX_DEPTH} levels at {where_}"
        ));
    }
    let Value::Object(map) = node else {
        return Err(format!("a schema that accepts any value at {where_}"));
    };
    if let Some(k) = STRICT_REFUSED.iter().find(|k| map.contains_key(**k)) {
        return Err(format!("`{k}` at {where_} is not supported in strict mode"));
    }
    if let Some(one_of) = map.remove("oneOf") {
        // Every value valid under oneOf is valid under anyOf; Toolmark still
        // validates the call against the original schema.
        map.insert("anyOf".into(), one_of);
    }
    map.remove("writeOnly");
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && !STRICT_FORMATS.contains(&format)
    {
        let sentence = format!("Format: {format}.");
        map.remove("format");
        append_description(map, &sentence);
    }
    for (k, label) in STRICT_DESCRIBED {
        if let Some(v) = map.remove(*k) {
            append_description(map, &format!("{label}: {v}."));
        }
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        count.enum_values += values.len();
    }

    let is_object = map.get("type") == Some(&json!("object")) || map.contains_key("properties");
    if is_object {
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!(
                    "a map (an object with free keys) at {where_} cannot be strict"
                ))
            }
        }
        if !map.contains_key("properties") {
            if !top {
                return Err(format!(
                    "an open object (any keys) at {where_} cannot be strict"
                ));
            }
            map.insert("properties".into(), json!({}));
        }
        let required: FxHashSet<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut all = Vec::new();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            count.properties += props.len();
            for (name, prop) in props.iter_mut() {
                strict_node(prop, &format!("{at}/{name}"), depth + 1, false, count)?;
                if !required.contains(name) {
                    make_nullable(prop);
                }
                all.push(Value::String(name.clone()));
            }
        }
        map.insert("required".into(), Value::Array(all));
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = map.get_mut("items") {
        strict_node(items, &format!("{at}/[]"), depth + 1, false, count)?;
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        for b in branches.iter_mut() {
            strict_node(b, at, depth + 1, false, count)?;
        }
    }
    Ok(())
}

/// An optional property, made required, must accept `null` (the model sends
/// `null` for "not given"; the runner drops those nulls again).
fn make_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else { return };
    let null = json!("null");
    if let Some(t) = map.get_mut("type") {
        match t {
            Value::String(s) if s != "null" => *t = json!([s.clone(), "null"]),
            Value::Array(ts) if !ts.contains(&null) => ts.push(null),
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return;
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches.iter().any(|b| b.get("type") == Some(&null)) {
            branches.push(json!({"type": "null"}));
        }
        return;
    }
    let description = map.remove("description");
    let inner = Value::Object(std::mem::take(map));
    map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
    if let Some(d) = description {
        map.insert("description".into(), d);
    }
}

/// How deep [`drop_optional_nulls`] follows the input (as deep as the input limits
/// let a call go).
const MAX_NULL_DEPTH: usize = 128;

/// Drop the `null`s a strict-mode model sends for properties it was told are
/// optional, by schema position: a `"key": null` goes when `schema`, at that
/// object, lists `key` and does not require it (nested too: `lines[].tags`). The
/// same name required elsewhere, or a `null` at a required property, is kept
/// (the decode then says what is wrong).
pub(crate) fn drop_optional_nulls(value: &mut Value, schema: &Value) {
    drop_at(value, &[schema], schema, 0);
}

/// Follow `$ref` (local, `#/...`) and the branches of `allOf`/`anyOf`/`oneOf` from
/// `nodes`: every schema a value at this position is checked against.
fn expand<'s>(nodes: &[&'s Value], root: &'s Value) -> Vec<&'s Value> {
    let mut out: Vec<&Value> = Vec::new();
    let mut work: Vec<(&Value, usize)> = nodes.iter().map(|n| (*n, 0)).collect();
    while let Some((node, depth)) = work.pop() {
        if depth > 32 || out.iter().any(|n| std::ptr::eq(*n, node)) {
            continue;
        }
        let Value::Object(map) = node else { continue };
        out.push(node);
        if let Some(target) = map
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            work.push((target, depth + 1));
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                work.extend(branches.iter().map(|b| (b, depth + 1)));
            }
        }
    }
    out
}

fn drop_at(value: &mut Value, nodes: &[&Value], root: &Value, depth: usize) {
    if depth > MAX_NULL_DEPTH {
        return;
    }
    let expanded = expand(nodes, root);
    match value {
        Value::Object(map) => {
            // Optional here: some schema at this position lists the key and does
            // not require it, and none requires it.
            let required = |key: &str| {
                expanded.iter().any(|n| {
                    n.get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
                })
            };
            let listed = |key: &str| {
                expanded
                    .iter()
                    .any(|n| n.get("properties").and_then(|p| p.get(key)).is_some())
            };
            map.retain(|k, v| !(v.is_null() && listed(k) && !required(k)));
            for (k, v) in map.iter_mut() {
                let children: Vec<&Value> = expanded
                    .iter()
                    .filter_map(|n| n.get("properties").and_then(|p| p.get(k.as_str())))
                    .collect();
                if !children.is_empty() {
                    drop_at(v, &children, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let children: Vec<&Value> = expanded.iter().filter_map(|n| n.get("items")).collect();
            if !children.is_empty() {
                for item in items {
                    drop_at(item, &children, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(crate) fn limit_description(text: &str, max: Option<usize>) -> String {
    match max {
        Some(max) if text.chars().count() > max => {
            let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_makes_optional_fields_required_and_nullable() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "kind": {"$ref": "#/$defs/Kind"}
            },
            "required": ["name"],
            "$defs": {"Kind": {"type": "string", "enum": ["a", "b"]}}
        });
        let s = strict(&clean(&schema, false)).unwrap();
        assert_eq!(s.get("$schema"), None);
        assert_eq!(s["required"], json!(["count", "kind", "name"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["properties"]["count"]["type"], json!(["integer", "null"]));
        assert_eq!(
            s["properties"]["count"]["description"],
            json!("Format: uint32.")
        );
        assert_eq!(
            s["properties"]["kind"]["anyOf"],
            json!([{"$ref": "#/$defs/Kind"}, {"type": "null"}])
        );
    }

    #[test]
    fn maps_cannot_be_strict() {
        let schema = json!({
            "type": "object",
            "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}
        });
        let err = strict(&clean(&schema, false)).unwrap_err();
        assert!(err.contains("/tags"), "{err}");
    }

    #[test]
    fn nulls_of_optional_properties_are_dropped_by_schema_position() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                "pick": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}
            },
            "required": ["a", "tags"],
            "$defs": {"Line": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "tags": {"type": "array"}},
                "required": ["sku"]
            }}
        });
        let mut v = json!({
            "a": null, "b": null, "tags": null,
            "lines": [{"sku": null, "tags": null}, {"sku": "x", "tags": ["t"]}],
            "pick": {"sku": "y", "tags": null}
        });
        drop_optional_nulls(&mut v, &schema);
        assert_eq!(
            v,
            json!({
                "a": null, "tags": null,
                "lines": [{"sku": null}, {"sku": "x", "tags": ["t"]}],
                "pick": {"sku": "y"}
            })
        );
    }
}
