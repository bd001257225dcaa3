//! The `x-mcp-header` annotations of an input schema (MCP 2026-07-28, SEP-2243:
//! a parameter an HTTP client copies into an `Mcp-Param-*` header so that
//! gateways can route on it), checked at registration: well formed as MCP
//! clients require (rmcp's client drops a tool whose annotations are not), and
//! never on a sensitive value (a header is read by every proxy and log on the
//! way; redaction cannot reach it).

use serde_json::{Map, Value};

use crate::sensitive::Matcher;

const KEY: &str = "x-mcp-header";

/// Why `schema`'s `x-mcp-header` annotations cannot be registered, if they
/// cannot: off a `properties` chain from the root, not a non-empty HTTP token,
/// the same header twice (case-insensitive), on anything but a `string`,
/// `integer` or `boolean` property, on a sensitive one (by `sensitive`, or
/// `writeOnly`), or on a tool whose sensitive paths are read at call time
/// (`dynamic`).
pub(crate) fn check(schema: &Value, sensitive: &Matcher, dynamic: bool) -> Result<(), String> {
    let Value::Object(root) = schema else {
        return Ok(());
    };
    let mut all = 0;
    count(schema, &mut all);
    if all == 0 {
        return Ok(());
    }
    if dynamic {
        return Err(format!(
            "its sensitive paths are read at each call, so no parameter can be an `{KEY}` \
             (a header would carry it past redaction)"
        ));
    }
    let mut found = Vec::new();
    on_chain(root.get("properties"), &mut Vec::new(), false, &mut found);
    if found.len() != all || root.contains_key(KEY) {
        return Err(format!(
            "`{KEY}` must annotate a property reached from the root through `properties` alone"
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (path, prop, write_only) in found {
        let at = path.join(".");
        let header = match prop.get(KEY) {
            Some(Value::String(h)) if !h.is_empty() && h.bytes().all(is_tchar) => h,
            _ => {
                return Err(format!(
                    "property `{at}`: `{KEY}` must be a non-empty HTTP header name token"
                ))
            }
        };
        if !seen.insert(header.to_ascii_lowercase()) {
            return Err(format!(
                "property `{at}`: `{KEY}` `{header}` is used twice (header names ignore case)"
            ));
        }
        if !matches!(
            prop.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        ) {
            return Err(format!(
                "property `{at}`: `{KEY}` needs a required string, integer or boolean \
                 (one `type`, not an `Option`)"
            ));
        }
        if write_only || sensitive.matches(&at) {
            return Err(format!(
                "property `{at}` is sensitive and cannot be an `{KEY}`: a header is read by \
                 every proxy on the way, where redaction cannot reach it"
            ));
        }
    }
    Ok(())
}

/// Every `x-mcp-header` key in `v` (not inside instance data).
fn count(v: &Value, n: &mut usize) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if k == KEY {
                    *n += 1;
                } else if !matches!(k.as_str(), "default" | "const" | "enum" | "examples") {
                    count(v, n);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| count(i, n)),
        _ => {}
    }
}

/// The annotated properties along `properties` chains: (path, schema, whether
/// it or a property above it is `writeOnly`).
fn on_chain<'a>(
    props: Option<&'a Value>,
    at: &mut Vec<String>,
    write_only: bool,
    out: &mut Vec<(Vec<String>, &'a Map<String, Value>, bool)>,
) {
    let Some(Value::Object(props)) = props else {
        return;
    };
    for (name, prop) in props {
        let Value::Object(prop) = prop else {
            continue;
        };
        let write_only = write_only || prop.get("writeOnly") == Some(&Value::Bool(true));
        at.push(name.clone());
        if prop.contains_key(KEY) {
            out.push((at.clone(), prop, write_only));
        }
        on_chain(prop.get("properties"), at, write_only, out);
        at.pop();
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn props(p: Value) -> Value {
        json!({"type": "object", "properties": p})
    }

    #[test]
    fn well_formed_plain_headers_pass_and_every_malformed_one_is_refused() {
        let none = Matcher::none();
        let ok = props(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "where": {"type": "object", "properties": {
                "zone": {"type": "integer", "x-mcp-header": "Zone"}}}
        }));
        assert_eq!(check(&ok, &none, false), Ok(()));
        assert_eq!(
            check(&props(json!({"a": {"type": "string"}})), &none, true),
            Ok(())
        );
        for bad in [
            props(json!({"a": {"type": "string", "x-mcp-header": ""}})),
            props(json!({"a": {"type": "string", "x-mcp-header": "My Region"}})),
            props(json!({"a": {"type": "string", "x-mcp-header": "Région"}})),
            props(json!({"a": {"type": "string", "x-mcp-header": 3}})),
            props(json!({"a": {"type": "number", "x-mcp-header": "A"}})),
            props(json!({"a": {"type": ["string", "null"], "x-mcp-header": "A"}})),
            props(
                json!({"a": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "A"}}),
            ),
            props(json!({"a": {"type": "string", "x-mcp-header": "A"},
                         "b": {"type": "string", "x-mcp-header": "a"}})),
            props(
                json!({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}),
            ),
            json!({"type": "object", "x-mcp-header": "A"}),
            json!({"type": "object", "$defs": {"D": {"type": "string", "x-mcp-header": "A"}}}),
        ] {
            assert!(check(&bad, &none, false).is_err(), "{bad}");
        }
        // The dynamic case refuses any header.
        assert!(check(&ok, &none, true).is_err());
    }

    #[test]
    fn a_sensitive_parameter_is_never_a_header() {
        let schema = props(json!({
            "card": {"type": "string", "x-mcp-header": "Card"},
            "region": {"type": "string", "x-mcp-header": "Region"}
        }));
        let paths = vec![crate::sensitive::SensitivePath::parse("card").unwrap()];
        let err = check(&schema, &Matcher::new(paths), false).unwrap_err();
        assert!(err.contains("`card` is sensitive"), "{err}");
        let marked = props(json!({
            "card": {"type": "string", "writeOnly": true, "x-mcp-header": "Card"}
        }));
        assert!(check(&marked, &Matcher::none(), false).is_err());
        let under = props(json!({"pay": {"type": "object", "writeOnly": true,
            "properties": {"pin": {"type": "string", "x-mcp-header": "Pin"}}}}));
        assert!(check(&under, &Matcher::none(), false).is_err());
    }
}
