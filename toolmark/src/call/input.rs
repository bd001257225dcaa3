//! Input handling shared by typed tools and the macro: schema generation, decoding
//! with paths, input limits, output conversion.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::spec::Decoded;
use crate::{Issue, ToolError};

/// The JSON Schema of `T`, generated once per type and process and shared by every
/// `ToolSpec::typed` of that type (registering many tools of one input type costs
/// one schema).
pub(crate) fn shared_schema_for<T: schemars::JsonSchema + 'static>() -> std::sync::Arc<Value> {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock, RwLock};
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    if let Some(schema) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Arc::clone(schema);
    }
    // Generated outside the lock: schemars may run user code (`JsonSchema` impls).
    let schema = Arc::new(schema_for::<T>());
    let mut map = cache.write().unwrap_or_else(|e| e.into_inner());
    Arc::clone(map.entry(id).or_insert(schema))
}

/// The JSON Schema (draft 2020-12) of `T`, as schemars writes it, made standard
/// (no schemars-only formats: see `tools::schema`).
///
/// Only `T`'s own `JsonSchema` fns are named per type: the generation is compiled
/// once, for [`erased::root_schema`] (see there), not once per input type.
pub(crate) fn schema_for<T: schemars::JsonSchema + ?Sized>() -> Value {
    erased::root_schema(erased::SchemaFns {
        schema_name: T::schema_name,
        schema_id: T::schema_id,
        json_schema: T::json_schema,
    })
}

mod erased {
    //! Root schema generation compiled once: schemars' `into_root_schema_for::<T>`
    //! (with its helpers, ~500 lines of IR per type) runs for one private type,
    //! [`Root`], whose `JsonSchema` fns are those of the type being described, read
    //! from a thread-local slot set for the duration of the generation. The schema
    //! is the same: schemars names a root by its `schema_id` and `schema_name` only,
    //! and a type that refers to itself is matched by its `schema_id` (which `Root`
    //! gives as the real type's).

    use std::borrow::Cow;
    use std::cell::Cell;

    use schemars::{JsonSchema, Schema, SchemaGenerator};
    use serde_json::Value;

    /// The `JsonSchema` fns of the type being described.
    #[derive(Clone, Copy)]
    pub(crate) struct SchemaFns {
        pub(crate) schema_name: fn() -> Cow<'static, str>,
        pub(crate) schema_id: fn() -> Cow<'static, str>,
        pub(crate) json_schema: fn(&mut SchemaGenerator) -> Schema,
    }

    thread_local! {
        static CURRENT: Cell<Option<SchemaFns>> = const { Cell::new(None) };
    }

    fn current() -> SchemaFns {
        match CURRENT.with(Cell::get) {
            Some(fns) => fns,
            None => unreachable!("`Root` is described only inside `root_schema`"),
        }
    }

    /// Stands for the type being described (never seen outside `root_schema`).
    struct Root;

    impl JsonSchema for Root {
        fn schema_name() -> Cow<'static, str> {
            (current().schema_name)()
        }

        fn schema_id() -> Cow<'static, str> {
            (current().schema_id)()
        }

        fn json_schema(generator: &mut SchemaGenerator) -> Schema {
            (current().json_schema)(generator)
        }
    }

    /// Puts the previous slot back, also when a `JsonSchema` fn panics.
    struct Restore(Option<SchemaFns>);

    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }

    /// The root schema of the type whose fns are `fns`, made standard.
    pub(crate) fn root_schema(fns: SchemaFns) -> Value {
        let _restore = Restore(CURRENT.with(|c| c.replace(Some(fns))));
        let mut schema = SchemaGenerator::default()
            .into_root_schema_for::<Root>()
            .to_value();
        crate::tools::schema::standardize(&mut schema);
        schema
    }
}

mod track;

/// Decode `input` into `T`: every problem becomes an [`Issue`] with a dotted path
/// (`cards.0.cvc`); a property `T` does not declare is an "unknown field" issue unless
/// `allow_unknown`.
///
/// `T`'s `Deserialize` is compiled once, against [`track::Tracked`]: serde_json's
/// `&Value` deserializer that notes the path of a failure and the fields serde
/// ignored as it goes, so a valid input and an invalid one take the same single pass.
pub(crate) fn decode_typed<T: DeserializeOwned>(
    input: &Value,
    allow_unknown: bool,
) -> Result<T, Vec<Issue>> {
    let tracker = track::Tracker::new(!allow_unknown);
    // What does not need `T` is the tracker's (compiled once).
    match T::deserialize(track::Tracked::root(input, &tracker)) {
        Ok(value) => match tracker.verdict() {
            None => Ok(value),
            Some(issues) => Err(issues),
        },
        Err(e) => Err(tracker.issues(Some(e))),
    }
}

/// Every issue of an input the tool's decode refused: the decode's own (its first
/// failure, then the unknown fields it met), then every other field the input
/// schema finds wrong, so a model fixes them all in one round trip. A problem at
/// the path of the decode's failure, or above it, is the decode's to tell (its
/// message is the more precise); one at another path is added once.
pub(crate) fn every_issue(
    entry: &crate::tools::registry::ToolEntry,
    input: &Value,
    mut issues: Vec<Issue>,
) -> Vec<Issue> {
    // Only a decode that failed on a value: unknown fields alone are all listed.
    let Some(first) = issues.first().filter(|i| i.message != "unknown field") else {
        return issues;
    };
    let failed_at = first.path.clone();
    let Some(validator) = validator_for(&entry.input_schema) else {
        return issues;
    };
    // Where the decode failed, or above it: the decode's message is the more
    // precise (a missing field is a problem of its own wherever it is).
    let decode_tells = |issue: &Issue| {
        if issue.message.starts_with("missing field") {
            return false;
        }
        let path = issue.path.as_str();
        let above = path.is_empty()
            || failed_at
                .strip_prefix(path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
        let inside = !failed_at.is_empty()
            && path
                .strip_prefix(failed_at.as_str())
                .is_some_and(|rest| rest.starts_with('.'));
        above || inside
    };
    for e in validator.iter_errors(input) {
        let path = e
            .instance_path()
            .iter()
            .map(|seg| match seg {
                jsonschema::paths::LocationSegment::Property(p) => p.to_string(),
                jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
            })
            .collect::<Vec<String>>()
            .join(".");
        let found: Vec<Issue> = match e.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                // A key serde already refused (`deny_unknown_fields`) is told once.
                let told = |key: &str| {
                    let quoted = format!("unknown field `{key}`");
                    issues.iter().any(|i| i.message.starts_with(&quoted))
                };
                unexpected
                    .iter()
                    .filter(|key| !told(key))
                    .map(|key| {
                        let at = if path.is_empty() {
                            key.clone()
                        } else {
                            format!("{path}.{key}")
                        };
                        Issue::new(at, "unknown field")
                    })
                    .collect()
            }
            jsonschema::error::ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                vec![Issue::new(path.clone(), format!("missing field `{name}`"))]
            }
            // `masked` never quotes the instance value.
            _ => vec![Issue::new(path.clone(), e.masked().to_string())],
        };
        for issue in found {
            let seen = issues
                .iter()
                .any(|i| i.path == issue.path && i.message == issue.message);
            if !seen && !decode_tells(&issue) {
                issues.push(issue);
            }
        }
        if issues.len() > crate::call::outcome::MAX_ISSUES * 4 {
            break;
        }
    }
    issues
}

/// The JSON Schema validator of a tool's input schema, compiled on the first
/// refused input and kept for the next (a few dozen schemas at most).
fn validator_for(schema: &std::sync::Arc<Value>) -> Option<std::sync::Arc<jsonschema::Validator>> {
    use std::sync::{Arc, Mutex};
    type Cache = Vec<(Arc<Value>, Arc<jsonschema::Validator>)>;
    static CACHE: Mutex<Cache> = Mutex::new(Vec::new());
    const KEEP: usize = 64;
    if let Some((_, v)) = crate::sync::lock(&CACHE)
        .iter()
        .find(|(s, _)| Arc::ptr_eq(s, schema))
    {
        return Some(Arc::clone(v));
    }
    let validator = Arc::new(jsonschema::validator_for(schema).ok()?);
    let mut cache = crate::sync::lock(&CACHE);
    if cache.len() >= KEEP {
        cache.remove(0);
    }
    cache.push((Arc::clone(schema), Arc::clone(&validator)));
    Some(validator)
}

/// Whether serde can ignore no property of an input with this schema: every
/// object schema in it is closed (`additionalProperties: false`, as
/// `#[serde(deny_unknown_fields)]` makes it) or a map (`additionalProperties: {…}`).
/// Then serde itself refuses unknown fields and the decode step skips its own
/// tracking. Conservative: anything it does not recognize counts as open.
pub(crate) fn ignores_nothing(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                let objectish = map.contains_key("properties")
                    || map.get("type").is_some_and(|t| {
                        t == "object"
                            || t.as_array()
                                .is_some_and(|a| a.iter().any(|x| x == "object"))
                    });
                if objectish
                    && !matches!(
                        map.get("additionalProperties"),
                        Some(Value::Bool(false) | Value::Object(_))
                    )
                {
                    return false;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    true
}

/// How the decode step finds properties serde would silently ignore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnknownCheck {
    /// serde refuses unknown fields itself (every object schema is closed).
    Serde,
    /// The decode notes every field serde ignores (the tracked deserializer: free
    /// until it meets one).
    Track,
}

impl UnknownCheck {
    /// [`for_schema`](Self::for_schema), worked out once per shared schema: the
    /// tools of one input type share its schema's `Arc` (registration of many
    /// tools of one type walks it once).
    pub(crate) fn for_shared(schema: &std::sync::Arc<Value>) -> UnknownCheck {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex, OnceLock, Weak};
        /// Entries by schema address, and the size that triggers the next sweep of
        /// dead schemas (doubled after each: amortized constant per insert).
        type Cache = Mutex<(HashMap<usize, (Weak<Value>, UnknownCheck)>, usize)>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let key = Arc::as_ptr(schema) as usize;
        // A live `Weak` keeps its allocation, so an entry whose schema is still
        // alive at this address is this very schema.
        if let Some((weak, check)) = crate::sync::lock(cache).0.get(&key)
            && weak.strong_count() > 0
        {
            return *check;
        }
        let check = UnknownCheck::for_schema(schema);
        let mut guard = crate::sync::lock(cache);
        let (map, sweep_at) = &mut *guard;
        if map.len() >= (*sweep_at).max(1024) {
            map.retain(|_, (weak, _)| weak.strong_count() > 0);
            *sweep_at = map.len() * 2;
        }
        map.insert(key, (Arc::downgrade(schema), check));
        check
    }

    /// Work out the check for an input schema (at registration).
    pub(crate) fn for_schema(schema: &Value) -> UnknownCheck {
        if ignores_nothing(schema) {
            UnknownCheck::Serde
        } else {
            UnknownCheck::Track
        }
    }
}

/// [`decode_typed`] boxed as a [`Decoded`], in the slot [`take`] reads: an
/// `Option<T>`, so that taking it back is a `downcast_mut` and a `take` (less code
/// compiled per input type than `Box<dyn Any>::downcast` and moving out of the box).
pub(crate) fn decode<T: DeserializeOwned + Send + 'static>(
    input: &Value,
    allow_unknown: bool,
) -> Result<Decoded, Vec<Issue>> {
    // `match`, not `map`: no closure compiled per input type.
    match decode_typed::<T>(input, allow_unknown) {
        Ok(t) => Ok(Box::new(Some(t))),
        Err(issues) => Err(issues),
    }
}

/// Take the typed input back out of a [`Decoded`] made by [`decode`].
pub(crate) fn take<T: 'static>(mut decoded: Decoded) -> Result<T, ToolError> {
    if let Some(slot) = decoded.downcast_mut::<Option<T>>()
        && let Some(t) = slot.take()
    {
        return Ok(t);
    }
    Err(not_the_input(std::any::type_name::<T>()))
}

/// Take the typed input back out of a [`Decoded`].
pub(crate) fn downcast<T: 'static>(decoded: Decoded) -> Result<T, ToolError> {
    match decoded.downcast::<T>() {
        Ok(b) => Ok(*b),
        Err(_) => Err(not_the_input(std::any::type_name::<T>())),
    }
}

#[cold]
pub(crate) fn not_the_input(type_name: &str) -> ToolError {
    ToolError::new(format!(
        "internal error: the decoded input is not a `{type_name}`"
    ))
}

/// A tool's output as JSON.
pub(crate) fn output_to_value<O: Serialize + ?Sized>(out: &O) -> Result<Value, ToolError> {
    serde_json::to_value(out)
        .map_err(|e| ToolError::new(format!("the tool's output could not be serialized: {e}")))
}

/// Limits on the size of an input, checked before decoding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputLimits {
    pub(crate) max_depth: usize,
    pub(crate) max_bytes: usize,
}

/// Refuse an input nested deeper than `max_depth` or larger than about
/// `max_bytes` (its compact JSON size, estimated without serializing). Iterative, so
/// a deeply nested value cannot overflow the stack here. Inlined into the call's
/// shape check: a flat input is one loop there, the general walk a call out.
#[inline]
pub(crate) fn check_limits(input: &Value, limits: InputLimits) -> Result<(), Issue> {
    if let Value::Object(map) = input
        && let Some(checked) = check_flat(map, limits)
    {
        return checked;
    }
    check_nested(input, limits)
}

/// [`check_limits`] of a top-level object whose values are all scalars (most
/// inputs): one pass over its entries, with what the general walk would find.
/// `None` at its first container value (the general walk then takes it whole).
#[inline]
fn check_flat(
    map: &serde_json::Map<String, Value>,
    limits: InputLimits,
) -> Option<Result<(), Issue>> {
    if limits.max_depth == 0 {
        return None;
    }
    let mut bytes = 2 + map.len();
    for (k, v) in map {
        let size = match v {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(_) | Value::Object(_) => return None,
        };
        bytes += k.len() + 3 + size;
    }
    Some(if bytes > limits.max_bytes {
        Err(too_large(limits))
    } else {
        Ok(())
    })
}

#[cold]
fn too_large(limits: InputLimits) -> Issue {
    Issue::new(
        "",
        format!(
            "the input is larger than {} bytes; send less at a time",
            limits.max_bytes
        ),
    )
}

/// [`check_limits`], walking every container (iteratively). Kept out of line: its
/// stack and registers would otherwise be set up for every flat input too.
#[inline(never)]
fn check_nested(input: &Value, limits: InputLimits) -> Result<(), Issue> {
    // Only containers go on the stack, so a flat input allocates nothing.
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut bytes = 0usize;
    let mut next = Some((input, 1usize));
    while let Some((value, depth)) = next.take().or_else(|| stack.pop()) {
        if depth > limits.max_depth {
            return Err(Issue::new(
                "",
                format!(
                    "the input is nested deeper than {} levels; flatten it",
                    limits.max_depth
                ),
            ));
        }
        let visit = |child: &'_ Value| -> usize {
            match child {
                Value::Null => 4,
                Value::Bool(_) => 5,
                Value::Number(_) => 8,
                Value::String(s) => s.len() + 2,
                Value::Array(_) | Value::Object(_) => 0,
            }
        };
        match value {
            Value::Array(items) => {
                bytes += 2 + items.len();
                for v in items {
                    bytes += visit(v);
                    if matches!(v, Value::Array(_) | Value::Object(_)) {
                        stack.push((v, depth + 1));
                    }
                }
            }
            Value::Object(map) => {
                bytes += 2 + map.len();
                for (k, v) in map {
                    bytes += k.len() + 3 + visit(v);
                    if matches!(v, Value::Array(_) | Value::Object(_)) {
                        stack.push((v, depth + 1));
                    }
                }
            }
            scalar => bytes += visit(scalar),
        }
        if bytes > limits.max_bytes {
            return Err(too_large(limits));
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

/// The empty input `{}`: the input of a tool that takes none. A property in it is
/// an unknown field (unless the builder allows unknown fields).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
pub struct NoInput {}

impl schemars::JsonSchema for NoInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoInput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "properties": {} })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_schema_of_a_type_is_generated_once_and_shared() {
        let a = shared_schema_for::<Closed>();
        let b = shared_schema_for::<Closed>();
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!(*a, schema_for::<Closed>());
        assert!(!std::sync::Arc::ptr_eq(
            &a,
            &shared_schema_for::<ClosedInner>()
        ));
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Closed {
        a: i64,
        inner: Vec<ClosedInner>,
        map: std::collections::HashMap<String, i64>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct ClosedInner {
        x: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct HalfOpen {
        open: Open,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Open {
        y: i64,
    }

    #[test]
    fn closed_schemas_need_no_unknown_field_tracking() {
        assert!(ignores_nothing(&schema_for::<Closed>()));
        assert!(!ignores_nothing(&schema_for::<HalfOpen>()));
        assert!(!ignores_nothing(&schema_for::<Open>()));
        assert!(!ignores_nothing(&json!({"type": "object"})));
    }

    #[test]
    fn a_closed_type_still_refuses_unknown_fields_through_serde() {
        let issues = decode_typed::<Closed>(&json!({"a": 1, "inner": [{"z": 1}], "map": {}}), true)
            .err()
            .unwrap();
        assert_eq!(issues[0].path, "inner.0.z");
        assert!(
            issues[0].message.contains("unknown field"),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn an_open_type_reports_every_unknown_field() {
        let issues = decode_typed::<HalfOpen>(&json!({"open": {"y": 1, "q": 2}}), false)
            .err()
            .unwrap();
        assert_eq!(issues, [Issue::new("open.q", "unknown field")]);
    }

    #[test]
    fn the_shared_check_is_the_schemas_own_and_follows_each_schema() {
        use std::sync::Arc;
        let open = Arc::new(json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
        let closed = Arc::new(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": false
        }));
        let deep = Arc::new(json!({
            "type": "object",
            "properties": {"p": {"type": "object", "properties": {"x": {}}}}
        }));
        for _ in 0..2 {
            for schema in [&open, &closed, &deep] {
                assert_eq!(
                    UnknownCheck::for_shared(schema),
                    UnknownCheck::for_schema(schema)
                );
            }
        }
        // Schemas made and dropped in turn (an address may come back): each gets
        // its own check.
        for i in 0..200 {
            let schema = if i % 2 == 0 {
                Arc::new((*open).clone())
            } else {
                Arc::new((*deep).clone())
            };
            assert_eq!(
                UnknownCheck::for_shared(&schema),
                UnknownCheck::for_schema(&schema),
                "round {i}"
            );
        }
    }

    #[test]
    fn an_open_schema_is_tracked_by_the_decode_itself() {
        #[derive(Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Flat {
            a: i64,
            tags: Vec<String>,
            map: std::collections::BTreeMap<String, u8>,
        }
        // Flat or not, an open schema is tracked: the tracked decode costs nothing
        // until it meets an ignored field, so no key check runs before it.
        assert_eq!(
            UnknownCheck::for_schema(&schema_for::<Flat>()),
            UnknownCheck::Track
        );
        let unknown = |input: Value| match decode_typed::<Flat>(&input, false) {
            Ok(_) => Vec::new(),
            Err(issues) => issues.into_iter().map(|i| (i.path, i.message)).collect(),
        };
        let flat = json!({"a": 1, "tags": [], "map": {}});
        assert!(unknown(flat).is_empty());
        assert_eq!(
            unknown(json!({"a": 1, "tags": [], "map": {}, "extra": 2})),
            vec![("extra".to_owned(), "unknown field".to_owned())]
        );
        // A map's keys are its own, not unknown fields.
        assert!(unknown(json!({"a": 1, "tags": [], "map": {"extra": 2}})).is_empty());
        // Allowed, an unknown field is dropped without a word.
        assert!(
            decode_typed::<Flat>(&json!({"a": 1, "tags": [], "map": {}, "x": 0}), true).is_ok()
        );
        assert_eq!(
            UnknownCheck::for_schema(&schema_for::<Closed>()),
            UnknownCheck::Serde
        );
        assert_eq!(
            UnknownCheck::for_schema(&schema_for::<HalfOpen>()),
            UnknownCheck::Track
        );
        // A nested user type can ignore fields of its own: track.
        #[derive(Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Nested {
            open: Open,
        }
        assert_eq!(
            UnknownCheck::for_schema(&schema_for::<Nested>()),
            UnknownCheck::Track
        );
    }

    fn serde_issue(path: &serde_path_to_error::Path, err: &dyn std::fmt::Display) -> Issue {
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

    /// The decode as it was before the single tracked pass: three passes (plain,
    /// `serde_ignored`, `serde_path_to_error`), each through its own concrete
    /// deserializer. The tracked decode must give the same issues.
    fn reference_decode<T: DeserializeOwned>(
        input: &Value,
        allow_unknown: bool,
    ) -> Result<T, Vec<Issue>> {
        let mut unknown: Vec<Issue> = Vec::new();
        let decoded = if allow_unknown {
            T::deserialize(input)
        } else {
            let mut on_ignored = |path: serde_ignored::Path<'_>| {
                unknown.push(Issue::new(ignored_path(&path), "unknown field"));
            };
            T::deserialize(serde_ignored::Deserializer::new(input, &mut on_ignored))
        };
        match decoded {
            Ok(value) if unknown.is_empty() => Ok(value),
            Ok(_) => Err(unknown),
            Err(_) => {
                let mut track = serde_path_to_error::Track::new();
                let de = serde_path_to_error::Deserializer::new(input, &mut track);
                let e = T::deserialize(de).err().unwrap();
                let mut issues = vec![serde_issue(&track.path(), &e)];
                issues.extend(unknown);
                Err(issues)
            }
        }
    }

    fn same_issues<T: DeserializeOwned + std::fmt::Debug>(inputs: &[Value]) {
        for input in inputs {
            for allow in [false, true] {
                let new = decode_typed::<T>(input, allow);
                let old = reference_decode::<T>(input, allow);
                assert_eq!(
                    format!("{new:?}"),
                    format!("{old:?}"),
                    "{input} (allow unknown: {allow})"
                );
            }
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Order {
        title: String,
        count: u32,
        ratio: Option<f64>,
        cards: Vec<Card>,
        #[serde(default)]
        by_name: std::collections::BTreeMap<String, Card>,
        kind: Kind,
        tagged: Option<Tagged>,
        either: Option<Either>,
        #[serde(alias = "nick")]
        name: Option<String>,
        #[serde(deserialize_with = "even")]
        even: Option<u8>,
        wrapper: Option<Wrapper>,
        tuple: Option<(u8, String)>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Card {
        number: String,
        cvc: Option<u16>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    enum Kind {
        Plain,
        Gift { to: String },
        Split(u8, u8),
    }

    #[derive(Debug, Deserialize)]
    #[serde(tag = "type")]
    #[allow(dead_code)]
    enum Tagged {
        A { x: u8 },
        B,
    }

    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Either {
        Num(u8),
        Card(Card),
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Wrapper(Card);

    /// Maps whose keys serde reads in every way serde_json allows: as integers, as
    /// booleans, as an enum, through a newtype; flattened, nested and byte fields.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Keys {
        #[serde(default)]
        by_id: std::collections::BTreeMap<u32, Card>,
        #[serde(default)]
        by_sign: std::collections::BTreeMap<i8, u8>,
        #[serde(default)]
        by_flag: std::collections::BTreeMap<bool, u8>,
        #[serde(default)]
        by_kind: std::collections::BTreeMap<KeyKind, Card>,
        #[serde(default)]
        by_name: std::collections::BTreeMap<Name, Card>,
        #[serde(default)]
        bytes: Option<serde_bytes_like::Bytes>,
        #[serde(default)]
        nested: Vec<Vec<Option<Card>>>,
        #[serde(default)]
        unit: Option<()>,
        #[serde(default)]
        variant: Option<Kind>,
        #[serde(flatten)]
        rest: Flat,
    }

    #[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    #[allow(dead_code)]
    enum KeyKind {
        Gold,
        Plain,
    }

    #[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    #[allow(dead_code)]
    struct Name(String);

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        #[serde(default)]
        extra: Option<u8>,
    }

    mod serde_bytes_like {
        /// A byte buffer read through `deserialize_byte_buf` (a string or an array of
        /// bytes in JSON).
        #[derive(Debug)]
        #[allow(dead_code)]
        pub(super) struct Bytes(pub(super) Vec<u8>);

        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bytes, E> {
                        Ok(Bytes(v.as_bytes().to_vec()))
                    }
                    fn visit_seq<A: serde::de::SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<Bytes, A::Error> {
                        let mut out = Vec::new();
                        while let Some(b) = seq.next_element::<u8>()? {
                            out.push(b);
                        }
                        Ok(Bytes(out))
                    }
                }
                d.deserialize_byte_buf(V)
            }
        }
    }

    fn even<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
        let n = u8::deserialize(d)?;
        if n % 2 == 1 {
            return Err(serde::de::Error::custom(format!("{n} is odd")));
        }
        Ok(Some(n))
    }

    #[test]
    fn the_erased_slow_path_gives_the_issues_of_the_three_pass_decode() {
        let ok = json!({"title": "t", "count": 1, "cards": [{"number": "1"}], "kind": "Plain", "even": 2});
        let with = |k: &str, v: Value| {
            let mut o = ok.clone();
            o[k] = v;
            o
        };
        same_issues::<Order>(&[
            ok.clone(),
            json!({}),
            json!({"title": 1}),
            with("count", json!(-1)),
            with("count", json!(1.5)),
            with("count", Value::Null),
            with("ratio", json!("x")),
            with("cards", json!([{"number": "1"}, {"number": 2, "pin": 1}])),
            with("cards", json!([{"number": "1", "pin": 1}, {"number": 2}])),
            with("cards", json!([{"number": "1", "cvc": 70000}])),
            with("by_name", json!({"a": {"number": "1", "x": 1}, "b": {}})),
            with("kind", json!("Other")),
            with("kind", json!({"Gift": {"to": 1}})),
            with("kind", json!({"Gift": {"to": "a", "from": "b"}})),
            with("kind", json!({"Split": [1]})),
            with("tagged", json!({"type": "A", "x": 300})),
            with("tagged", json!({"type": "A", "x": 3, "y": 1})),
            with("tagged", json!({"type": "C"})),
            with("either", json!({"number": "1", "z": 1})),
            with("either", json!("no")),
            with("nick", json!("n")),
            with("nick", json!(5)),
            with("even", json!(3)),
            with("wrapper", json!({"number": "1", "q": 1})),
            with("wrapper", json!({"number": 1})),
            with("tuple", json!([1, "a", 3])),
            with("tuple", json!([1, 2])),
            with("extra", json!({"deep": [1]})),
            json!({"a": 1, "b": 2, "title": [], "z": {"y": 1}}),
            json!([1, 2]),
            json!("x"),
        ]);
        same_issues::<Closed>(&[
            json!({"a": 1, "inner": [{"z": 1}], "map": {}}),
            json!({"a": 1, "inner": [], "map": {"k": "v"}}),
            json!({"a": 1, "inner": [], "map": {}, "b": 2}),
        ]);
        same_issues::<NoInput>(&[json!({}), json!({"a": 1, "b": {"c": 2}}), json!(null)]);
        let card = json!({"number": "1"});
        same_issues::<Keys>(&[
            json!({}),
            json!({"by_id": {"7": card, "8": {"number": 1}}}),
            json!({"by_id": {"7": {"number": "1", "pin": 2}}}),
            json!({"by_id": {"x": card}}),
            json!({"by_id": {"-1": card}}),
            json!({"by_id": {"1.5": card}}),
            json!({"by_id": {"99999999999": card}}),
            json!({"by_id": {"7 ": card}}),
            json!({"by_id": {"7a": card}}),
            json!({"by_id": {"": card}}),
            json!({"by_sign": {"-3": 1, "-4": 300}}),
            json!({"by_sign": {"200": 1}}),
            json!({"by_flag": {"true": 1, "false": "x"}}),
            json!({"by_flag": {"yes": 1}}),
            json!({"by_kind": {"Gold": card, "Plain": {"number": 2}}}),
            json!({"by_kind": {"Gold": {"number": "1", "q": 1}}}),
            json!({"by_kind": {"Silver": card}}),
            json!({"by_name": {"a": {"number": 3}}}),
            json!({"by_name": {"a": {"number": "3", "q": 1}}}),
            json!({"bytes": "abc"}),
            json!({"bytes": [1, 2, 300]}),
            json!({"bytes": 5}),
            json!({"nested": [[null, card], [{"number": 5}]]}),
            json!({"nested": [[{"number": "1", "z": [1]}]]}),
            json!({"nested": {"a": 1}}),
            json!({"unit": 1}),
            json!({"variant": {"Plain": null}}),
            json!({"variant": {"Plain": 1}}),
            json!({"variant": {"Split": 1}}),
            json!({"variant": {"Split": []}}),
            json!({"variant": "Split"}),
            json!({"variant": "Gift"}),
            json!({"variant": {"Gift": [1]}}),
            json!({"variant": {"Gift": "x"}}),
            json!({"variant": {"Gift": {"to": "a"}, "Plain": null}}),
            json!({"variant": {}}),
            json!({"variant": 3}),
            json!({"extra": 300}),
            json!({"extra": 3, "other": 1}),
        ]);
    }

    #[test]
    fn limits_refuse_deep_and_large_inputs() {
        let limits = InputLimits {
            max_depth: 3,
            max_bytes: 100,
        };
        assert!(check_limits(&json!({"a": {"b": {"c": 1}}}), limits).is_ok());
        assert!(check_limits(&json!({"a": {"b": {"c": {"d": 1}}}}), limits).is_err());
        assert!(check_limits(&json!({"a": "x".repeat(200)}), limits).is_err());
    }

    #[test]
    fn the_flat_pass_finds_what_the_general_walk_finds() {
        let inputs = [
            json!({}),
            json!({"a": 1, "title": "x"}),
            json!({"a": null, "title": true, "b": 2.5}),
            json!({"a": "y".repeat(40)}),
            json!({"a": 1, "nested": {"title": 1}}),
            json!({"a": [1, 2], "title": "z"}),
        ];
        for input in &inputs {
            let flat = match input {
                Value::Object(map) => map,
                _ => unreachable!(),
            };
            // Every byte limit around each input's size, and the depths that matter.
            for max_bytes in 0..80 {
                for max_depth in 0..3 {
                    let limits = InputLimits {
                        max_depth,
                        max_bytes,
                    };
                    let walked = check_nested(input, limits);
                    let checked = check_limits(input, limits);
                    assert_eq!(
                        checked.as_ref().map_err(|i| &i.message),
                        walked.as_ref().map_err(|i| &i.message),
                        "{input} {limits:?}"
                    );
                    let is_flat = flat.values().all(|v| !v.is_object() && !v.is_array());
                    if is_flat && max_depth > 0 {
                        assert!(check_flat(flat, limits).is_some());
                    }
                }
            }
        }
    }
}
