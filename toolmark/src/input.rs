//! Input handling shared by typed tools and the macro: schema generation, decoding
//! with paths, input limits, output conversion.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::Decoded;
use crate::{Issue, ToolError};

/// The JSON Schema (draft 2020-12) of `T`, as schemars writes it.
pub(crate) fn schema_for<T: schemars::JsonSchema>() -> Value {
    schemars::SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Decode `input` into `T`: every problem becomes an [`Issue`] with a dotted path
/// (`cards.0.cvc`); a property `T` does not declare is an "unknown field" issue unless
/// `allow_unknown`.
pub(crate) fn decode_typed<T: DeserializeOwned>(
    input: &Value,
    allow_unknown: bool,
) -> Result<T, Vec<Issue>> {
    let mut track = serde_path_to_error::Track::new();
    if allow_unknown {
        let de = serde_path_to_error::Deserializer::new(input, &mut track);
        return T::deserialize(de).map_err(|e| vec![serde_issue(&track.path(), &e)]);
    }
    let mut unknown: Vec<Issue> = Vec::new();
    let result = {
        let mut on_ignored = |path: serde_ignored::Path<'_>| {
            unknown.push(Issue::new(ignored_path(&path), "unknown field"));
        };
        let ignored = serde_ignored::Deserializer::new(input, &mut on_ignored);
        let de = serde_path_to_error::Deserializer::new(ignored, &mut track);
        T::deserialize(de)
    };
    match result {
        Ok(value) if unknown.is_empty() => Ok(value),
        Ok(_) => Err(unknown),
        Err(e) => {
            let mut issues = vec![serde_issue(&track.path(), &e)];
            issues.extend(unknown);
            Err(issues)
        }
    }
}

/// [`decode_typed`] boxed as a [`Decoded`].
pub(crate) fn decode<T: DeserializeOwned + Send + 'static>(
    input: &Value,
    allow_unknown: bool,
) -> Result<Decoded, Vec<Issue>> {
    decode_typed::<T>(input, allow_unknown).map(|t| Box::new(t) as Decoded)
}

/// Take the typed input back out of a [`Decoded`].
pub(crate) fn downcast<T: 'static>(decoded: Decoded) -> Result<T, ToolError> {
    decoded.downcast::<T>().map(|b| *b).map_err(|_| {
        ToolError::new(format!(
            "internal error: the decoded input is not a `{}`",
            std::any::type_name::<T>()
        ))
    })
}

/// A tool's output as JSON.
pub(crate) fn output_to_value<O: Serialize + ?Sized>(out: &O) -> Result<Value, ToolError> {
    serde_json::to_value(out)
        .map_err(|e| ToolError::new(format!("the tool's output could not be serialized: {e}")))
}

fn serde_issue(path: &serde_path_to_error::Path, err: &serde_json::Error) -> Issue {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        let part = match seg {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => continue,
        };
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&part);
    }
    Issue::new(out, err.to_string())
}

fn ignored_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    fn walk(path: &Path<'_>, out: &mut Vec<String>) {
        match path {
            Path::Root => {}
            Path::Seq { parent, index } => {
                walk(parent, out);
                out.push(index.to_string());
            }
            Path::Map { parent, key } => {
                walk(parent, out);
                out.push(key.clone());
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => walk(parent, out),
        }
    }
    let mut parts = Vec::new();
    walk(path, &mut parts);
    parts.join(".")
}

/// Limits on the size of an input, checked before decoding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputLimits {
    pub(crate) max_depth: usize,
    pub(crate) max_bytes: usize,
}

/// Refuse an input nested deeper than `max_depth` or larger than about
/// `max_bytes` (its compact JSON size, estimated without serializing). Iterative, so
/// a deeply nested value cannot overflow the stack here.
pub(crate) fn check_limits(input: &Value, limits: InputLimits) -> Result<(), Issue> {
    let mut stack: Vec<(&Value, usize)> = vec![(input, 1)];
    let mut bytes = 0usize;
    while let Some((value, depth)) = stack.pop() {
        if depth > limits.max_depth {
            return Err(Issue::new(
                "",
                format!(
                    "the input is nested deeper than {} levels; flatten it",
                    limits.max_depth
                ),
            ));
        }
        bytes += match value {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter().map(|v| (v, depth + 1)));
                2 + items.len()
            }
            Value::Object(map) => {
                for (k, v) in map {
                    bytes += k.len() + 3;
                    stack.push((v, depth + 1));
                }
                2 + map.len()
            }
        };
        if bytes > limits.max_bytes {
            return Err(Issue::new(
                "",
                format!(
                    "the input is larger than {} bytes; send less at a time",
                    limits.max_bytes
                ),
            ));
        }
    }
    Ok(())
}

/// The name of a JSON value's type, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The empty input `{}`: the input of a tool that takes none.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}
