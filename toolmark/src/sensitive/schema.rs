//! Sensitive paths against an input JSON Schema: checking and naming them at
//! registration ([`resolve_path`]) and marking them `writeOnly` ([`mark_write_only`]).
//!
//! Schemas are JSON Schema draft 2020-12 as schemars 1.x writes them: `$defs` and local
//! `$ref`, `Option<T>` as `anyOf [T, {"type": "null"}]` or a type array, sequences and
//! sets as `items`, tuples as `prefixItems`, enums as `oneOf`/`anyOf`, flattened structs
//! as `allOf`. A map (`additionalProperties`/`patternProperties`) has no nameable keys.

use serde_json::{Map, Value};

use super::path::{segs_to_string, Seg, SensitivePath};

/// How the segments of a sensitive path name properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameMode {
    /// Each key is the JSON property name, exactly (dynamic tools, forms, and the
    /// documented JSON-name form for explicit renames and enum variants).
    Json,
    /// Each key is a Rust field name (what `#[tool(sensitive = …)]` checks at compile
    /// time): the property of the same name (a leading `r#` stripped), else the one
    /// property that a single serde `rename_all` convention turns the name into.
    Rust,
}

/// The serde `rename_all` conventions, by their serde names.
const RULES: [&str; 8] = [
    "lowercase",
    "UPPERCASE",
    "PascalCase",
    "camelCase",
    "snake_case",
    "SCREAMING_SNAKE_CASE",
    "kebab-case",
    "SCREAMING-KEBAB-CASE",
];

/// serde's `RenameRule::apply_to_field` for the rule named `rule` (one of [`RULES`]).
fn apply_rule(rule: &str, field: &str) -> String {
    match rule {
        "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "PascalCase" => pascal(field),
        "camelCase" => {
            let p = pascal(field);
            let mut chars = p.chars();
            match chars.next() {
                Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
                None => p,
            }
        }
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.to_ascii_uppercase().replace('_', "-"),
        // "lowercase", "snake_case": serde leaves a field name as it is.
        _ => field.to_owned(),
    }
}

/// serde's PascalCase for a (snake_case) field name.
fn pascal(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut capitalize = true;
    for ch in field.chars() {
        if ch == '_' {
            capitalize = true;
        } else if capitalize {
            out.push(ch.to_ascii_uppercase());
            capitalize = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// How many schema nodes one step may expand (`$ref`, `allOf`, `anyOf`, `oneOf`).
const EXPAND_BUDGET: usize = 1024;
/// Combinators whose branches a step walks into.
const COMBINATORS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// The schema that accepts anything: the elements of an array without `items`.
pub(super) static ANY_SCHEMA: Value = Value::Bool(true);

/// Decodes `%XX` escapes of a URI fragment.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Resolves a local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any JSON pointer,
/// `~0`/`~1` and `%XX` escaped) against the document `root`.
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let frag = reference.strip_prefix('#')?;
    if frag.is_empty() {
        return Some(root);
    }
    if let Some(found) = percent_decode(frag).and_then(|p| root.pointer(&p)) {
        return Some(found);
    }
    root.pointer(frag)
}

/// Collects `node` and every schema that applies with it (through `$ref` and the
/// combinators) into `out`; references that cannot be followed go to `unresolved`.
fn expand<'a>(
    node: &'a Value,
    root: &'a Value,
    out: &mut Vec<&'a Value>,
    unresolved: &mut Vec<String>,
    budget: &mut usize,
) {
    if *budget == 0 || out.iter().any(|seen| std::ptr::eq(*seen, node)) {
        return;
    }
    *budget -= 1;
    out.push(node);
    let Value::Object(map) = node else { return };
    if let Some(reference) = map.get("$ref") {
        match reference.as_str().and_then(|r| resolve_ref(root, r)) {
            Some(target) => expand(target, root, out, unresolved, budget),
            None => unresolved.push(reference.to_string()),
        }
    }
    for kw in COMBINATORS {
        if let Some(Value::Array(branches)) = map.get(kw) {
            for b in branches {
                expand(b, root, out, unresolved, budget);
            }
        }
    }
}

/// Expands every node of `nodes`.
pub(super) fn expand_all<'a>(
    nodes: &[&'a Value],
    root: &'a Value,
    unresolved: &mut Vec<String>,
) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut budget = EXPAND_BUDGET;
    for n in nodes {
        expand(n, root, &mut out, unresolved, &mut budget);
    }
    out
}

/// The property names declared by the expanded nodes, without repeats.
pub(super) fn property_names<'a>(expanded: &[&'a Value]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for n in expanded {
        if let Some(props) = n.get("properties").and_then(Value::as_object) {
            for k in props.keys() {
                if !names.contains(&k.as_str()) {
                    names.push(k);
                }
            }
        }
    }
    names
}

/// The schemas of property `name` in the expanded nodes.
pub(super) fn step_key<'a>(expanded: &[&'a Value], name: &str) -> Vec<&'a Value> {
    expanded
        .iter()
        .filter_map(|n| n.get("properties").and_then(|p| p.get(name)))
        .collect()
}

/// Does the node say `"type": ty` (alone or in a type array)?
pub(super) fn typed_as(node: &Value, ty: &str) -> bool {
    type_includes(node.get("type"), ty)
}

/// Is `ty` the value of a `type` keyword, or one of its list?
fn type_includes(type_kw: Option<&Value>, ty: &str) -> bool {
    match type_kw {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(ty)),
        _ => false,
    }
}

/// The element schemas of the array nodes among the expanded ones.
pub(super) fn step_items<'a>(expanded: &[&'a Value]) -> Vec<&'a Value> {
    let mut out = Vec::new();
    for n in expanded {
        let items = n.get("items");
        let prefix = n.get("prefixItems").and_then(Value::as_array);
        if let Some(items) = items
            && items != &Value::Bool(false)
        {
            out.push(items);
        }
        if let Some(prefix) = prefix {
            out.extend(prefix.iter());
        }
        if items.is_none() && prefix.is_none() && typed_as(n, "array") {
            out.push(&ANY_SCHEMA);
        }
    }
    out
}

/// The value schemas of the map nodes among the expanded ones: an
/// `additionalProperties` schema (not `false`) and every `patternProperties` schema.
pub(super) fn step_values<'a>(expanded: &[&'a Value]) -> Vec<&'a Value> {
    let mut out = Vec::new();
    for n in expanded {
        match n.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(v) => out.push(v),
        }
        if let Some(Value::Object(patterns)) = n.get("patternProperties") {
            out.extend(patterns.values());
        }
    }
    out
}

/// What `[]` steps into: the elements of an array, the values of a map.
fn step_any<'a>(expanded: &[&'a Value]) -> Vec<&'a Value> {
    let mut out = step_items(expanded);
    out.extend(step_values(expanded));
    out
}

/// Describes a place for an error: "the input" or "the input at \"cards[]\"".
fn place(at: &[Seg]) -> String {
    if at.is_empty() {
        "the input".to_owned()
    } else {
        format!("the input at {:?}", segs_to_string(at))
    }
}

/// The note about references that could not be followed, if any.
fn unresolved_note(unresolved: &[String]) -> String {
    if unresolved.is_empty() {
        String::new()
    } else {
        format!(
            "; could not follow \"$ref\" {} (only local \"#/…\" references are followed)",
            unresolved.join(", ")
        )
    }
}

/// Which serde conventions turn `field` into one of `props`: each distinct property
/// with the conventions that produce it.
fn convention_matches(field: &str, props: &[&str]) -> Vec<(String, Vec<&'static str>)> {
    let mut found: Vec<(String, Vec<&'static str>)> = Vec::new();
    for rule in RULES {
        let name = apply_rule(rule, field);
        if !props.contains(&name.as_str()) {
            continue;
        }
        match found.iter_mut().find(|(n, _)| *n == name) {
            Some((_, rules)) => rules.push(rule),
            None => found.push((name, vec![rule])),
        }
    }
    found
}

/// Checks `path` against the input `schema` and returns it with JSON property names.
///
/// [`NameMode::Json`]: every key must be a property name exactly. [`NameMode::Rust`]: a
/// key is a Rust field name; the property of the same name (a leading `r#` stripped) is
/// used if present, else the property that a single serde `rename_all` convention
/// produces (`lowercase`, `UPPERCASE`, `PascalCase`, `camelCase`, `snake_case`,
/// `SCREAMING_SNAKE_CASE`, `kebab-case`, `SCREAMING-KEBAB-CASE`, with serde's field
/// semantics); none or several distinct ones are an error.
///
/// A key steps into `properties` of the schema or of any branch of
/// `allOf`/`anyOf`/`oneOf` and through local `$ref`s; `[]` steps into `items` or
/// `prefixItems` of an array (or anything, for an array without `items`). Map keys
/// (`additionalProperties`, `patternProperties`) cannot be named. The error is a
/// sentence naming the segment and where it was looked up.
///
/// A key that names no property but whose following segments resolve at the same
/// level (the fields of a `#[serde(flatten)]` field sit in the struct around it)
/// gets a suggestion of the `json:` path to write instead.
pub(crate) fn resolve_path(
    path: &SensitivePath,
    schema: &Value,
    mode: NameMode,
) -> Result<SensitivePath, String> {
    resolve_segs(vec![schema], path.segs(), schema, mode, true).map(SensitivePath::from_segs)
}

/// [`resolve_path`] for `segs` starting at `nodes`; `suggest`: look for the flatten
/// suggestion on an error.
fn resolve_segs<'a>(
    mut nodes: Vec<&'a Value>,
    segs: &[Seg],
    schema: &'a Value,
    mode: NameMode,
    suggest: bool,
) -> Result<Vec<Seg>, String> {
    let mut resolved: Vec<Seg> = Vec::with_capacity(segs.len());
    for (n, seg) in segs.iter().enumerate() {
        let at = &segs[..n];
        let mut unresolved = Vec::new();
        let expanded = expand_all(&nodes, schema, &mut unresolved);
        match seg {
            Seg::Key(name) => {
                let props = property_names(&expanded);
                let json_name = match mode {
                    NameMode::Json => props.contains(&name.as_str()).then(|| name.clone()),
                    NameMode::Rust => {
                        let field = name.strip_prefix("r#").unwrap_or(name);
                        if props.contains(&field) {
                            Some(field.to_owned())
                        } else {
                            let mut found = convention_matches(field, &props);
                            if found.len() > 1 {
                                let list: Vec<String> = found
                                    .iter()
                                    .map(|(p, rules)| format!("{p:?} ({})", rules.join(", ")))
                                    .collect();
                                return Err(format!(
                                    "{name:?} is ambiguous in {}: serde rename_all conventions \
                                     map it to several properties: {}; name the property by \
                                     its JSON name instead",
                                    place(at),
                                    list.join(", ")
                                ));
                            }
                            found.pop().map(|(p, _)| p)
                        }
                    }
                };
                let Some(json_name) = json_name else {
                    let mut e = not_a_property(name, at, &expanded, &props, &unresolved);
                    let rest = &segs[n + 1..];
                    if suggest
                        && !rest.is_empty()
                        && let Ok(tail) = resolve_segs(nodes, rest, schema, mode, false)
                    {
                        let mut full = resolved;
                        full.extend(tail);
                        e.push_str(&format!(
                            "; if {name:?} is a #[serde(flatten)] field, its fields sit at \
                                 this level: write \"json:{}\"",
                            segs_to_string(&full)
                        ));
                    }
                    return Err(e);
                };
                nodes = step_key(&expanded, &json_name);
                resolved.push(Seg::Key(json_name));
            }
            Seg::Any => {
                nodes = step_any(&expanded);
                if nodes.is_empty() {
                    return Err(format!(
                        "\"[]\" cannot step into {}: it is neither an array (no \"items\") \
                         nor a map (no \"additionalProperties\" schema){}",
                        place(at),
                        unresolved_note(&unresolved)
                    ));
                }
                resolved.push(Seg::Any);
            }
        }
    }
    Ok(resolved)
}

/// The error for a key that names no property.
fn not_a_property(
    name: &str,
    at: &[Seg],
    expanded: &[&Value],
    props: &[&str],
    unresolved: &[String],
) -> String {
    let is_map = expanded.iter().any(|n| {
        n.get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false))
            || n.get("patternProperties").is_some()
    });
    let detail = if !props.is_empty() {
        let mut sorted = props.to_vec();
        sorted.sort_unstable();
        format!(" (properties: {})", sorted.join(", "))
    } else if is_map {
        ": it is a map, and only declared properties can be named, not map keys; use \"[]\" \
         for every value of the map"
            .to_owned()
    } else if expanded
        .iter()
        .any(|n| typed_as(n, "array") || n.get("items").is_some())
    {
        ": it is an array; use \"[]\" to step into its elements".to_owned()
    } else {
        ": it has no properties".to_owned()
    };
    format!(
        "{name:?} is not a property of {}{detail}{}",
        place(at),
        unresolved_note(unresolved)
    )
}

/// Does `segs` lead anywhere from `node` (JSON names)?
fn reaches(node: &Value, segs: &[Seg], root: &Value) -> bool {
    let mut nodes = vec![node];
    for seg in segs {
        let mut unresolved = Vec::new();
        let expanded = expand_all(&nodes, root, &mut unresolved);
        nodes = match seg {
            Seg::Key(k) => step_key(&expanded, k),
            Seg::Any => step_any(&expanded),
        };
        if nodes.is_empty() {
            return false;
        }
    }
    true
}

/// Annotation keywords: where an inlined definition and the `$ref`'s siblings both have
/// one, the sibling's (the property's own) wins.
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// How deep [`mark`] may recurse (path steps plus combinator and reference hops).
const MARK_DEPTH: usize = 256;

/// Marks every sensitive path `"writeOnly": true` in `schema`.
///
/// `paths` are resolved (JSON names, see [`resolve_path`]). The mark goes on the
/// property's own schema, beside its `$ref` if it has one, never into a shared `$defs`
/// entry. Where a path goes through a `$ref` to a nested property, a copy of the
/// referenced definition is inlined at that point and marked, so other users of the
/// definition are unaffected. Through `allOf`/`anyOf`/`oneOf`, every branch that has the
/// path is marked. A path the schema does not have is skipped.
pub(crate) fn mark_write_only(schema: &mut Value, paths: &[SensitivePath]) {
    if paths.is_empty() {
        return;
    }
    let root = schema.clone();
    for p in paths {
        mark(schema, p.segs(), &root, 0);
    }
    prune_defs(schema);
}

/// The containers of definitions at the root of a schema document.
const DEF_CONTAINERS: [&str; 2] = ["$defs", "definitions"];

/// The definition a local `$ref` names: `("$defs", "Card")` for `#/$defs/Card` (or
/// anything below it). `None` for a reference that does not point into a
/// definition; `Some((container, ""))` for one naming a whole container.
fn def_of(reference: &str) -> Option<(&'static str, String)> {
    let pointer = percent_decode(reference.strip_prefix('#')?)?;
    let rest = pointer.strip_prefix('/')?;
    let (first, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let container = DEF_CONTAINERS.into_iter().find(|c| *c == first)?;
    let name = tail.split('/').next().unwrap_or("");
    Some((container, name.replace("~1", "/").replace("~0", "~")))
}

/// Pushes every `$ref` string below `node`.
fn refs_in<'a>(node: &'a Value, out: &mut Vec<&'a str>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    out.push(r);
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
}

/// Drops the root's `$defs` (and `definitions`) entries that nothing references any
/// more, directly or through other kept entries, and a container left empty. Marking
/// inlines copies of definitions, which can leave the originals unused. A reference
/// that names a whole container keeps everything.
fn prune_defs(schema: &mut Value) {
    let Value::Object(root) = schema else { return };
    if !DEF_CONTAINERS.iter().any(|c| root.contains_key(*c)) {
        return;
    }
    let mut pending: Vec<&str> = Vec::new();
    for (k, v) in root.iter() {
        if !DEF_CONTAINERS.contains(&k.as_str()) {
            refs_in(v, &mut pending);
        }
    }
    let mut used: Vec<(&'static str, String)> = Vec::new();
    while let Some(r) = pending.pop() {
        let Some((container, name)) = def_of(r) else {
            continue;
        };
        if name.is_empty() {
            return;
        }
        if used.iter().any(|(c, n)| *c == container && *n == name) {
            continue;
        }
        if let Some(def) = root.get(container).and_then(|d| d.get(&name)) {
            refs_in(def, &mut pending);
        }
        used.push((container, name));
    }
    let used: Vec<(&'static str, String)> = used;
    for container in DEF_CONTAINERS {
        let Some(Value::Object(defs)) = root.get_mut(container) else {
            continue;
        };
        defs.retain(|name, _| used.iter().any(|(c, n)| *c == container && n == name));
        if defs.is_empty() {
            root.remove(container);
        }
    }
}

/// Marks the end of `segs` below `node`; `root` is the unmodified document.
fn mark(node: &mut Value, segs: &[Seg], root: &Value, depth: usize) {
    if depth > MARK_DEPTH {
        return;
    }
    let Some((first, rest)) = segs.split_first() else {
        set_write_only(node);
        return;
    };
    let Value::Object(map) = node else { return };
    let target = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r));
    if let Some(target) = target
        && reaches(target, segs, root)
    {
        inline(map, private_copy(target));
    }
    match first {
        Seg::Key(k) => {
            if let Some(child) = map
                .get_mut("properties")
                .and_then(Value::as_object_mut)
                .and_then(|p| p.get_mut(k))
            {
                mark(child, rest, root, depth + 1);
            }
        }
        Seg::Any => {
            let mut stepped = false;
            if let Some(items) = map.get_mut("items") {
                stepped = true;
                mark(items, rest, root, depth + 1);
            }
            if let Some(Value::Array(prefix)) = map.get_mut("prefixItems") {
                stepped = true;
                for item in prefix {
                    mark(item, rest, root, depth + 1);
                }
            }
            if let Some(values) = map
                .get_mut("additionalProperties")
                .filter(|v| **v != Value::Bool(false))
            {
                stepped = true;
                mark(values, rest, root, depth + 1);
            }
            if let Some(Value::Object(patterns)) = map.get_mut("patternProperties") {
                stepped = true;
                for v in patterns.values_mut() {
                    mark(v, rest, root, depth + 1);
                }
            }
            if !stepped && rest.is_empty() && type_includes(map.get("type"), "array") {
                let mut items = Value::Bool(true);
                set_write_only(&mut items);
                map.insert("items".to_owned(), items);
            }
        }
    }
    for kw in COMBINATORS {
        if let Some(Value::Array(branches)) = map.get_mut(kw) {
            for b in branches {
                if reaches(b, segs, root) {
                    mark(b, segs, root, depth + 1);
                }
            }
        }
    }
}

/// Puts `"writeOnly": true` on a schema (a `true` schema becomes `{"writeOnly": true}`).
fn set_write_only(node: &mut Value) {
    match node {
        Value::Object(map) => {
            map.insert("writeOnly".to_owned(), Value::Bool(true));
        }
        Value::Bool(true) => {
            let mut map = Map::new();
            map.insert("writeOnly".to_owned(), Value::Bool(true));
            *node = Value::Object(map);
        }
        _ => {}
    }
}

/// A copy of a definition fit to inline: without document-level keywords.
fn private_copy(target: &Value) -> Value {
    let mut copy = target.clone();
    if let Value::Object(m) = &mut copy {
        for kw in ["$schema", "$id", "$defs", "definitions"] {
            m.remove(kw);
        }
    }
    copy
}

/// Replaces the `$ref` of `map` by `copy`: merged into `map` when their keywords agree
/// (the sibling's annotations win), else as one more `allOf` branch.
fn inline(map: &mut Map<String, Value>, copy: Value) {
    map.remove("$ref");
    match copy {
        Value::Object(def) => {
            let conflict = def.iter().any(|(k, v)| {
                map.get(k)
                    .is_some_and(|mine| mine != v && !ANNOTATIONS.contains(&k.as_str()))
            });
            if conflict {
                push_all_of(map, Value::Object(def));
            } else {
                for (k, v) in def {
                    map.entry(k).or_insert(v);
                }
            }
        }
        Value::Bool(true) => {}
        other => push_all_of(map, other),
    }
}

/// Adds a branch to `allOf`.
fn push_all_of(map: &mut Map<String, Value>, branch: Value) {
    match map.get_mut("allOf") {
        Some(Value::Array(all)) => all.push(branch),
        _ => {
            map.insert("allOf".to_owned(), Value::Array(vec![branch]));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(s: &str) -> SensitivePath {
        SensitivePath::parse(s).expect("test path parses")
    }

    fn json_name(path: &str, schema: &Value) -> Result<String, String> {
        resolve_path(&p(path), schema, NameMode::Json).map(|r| r.to_string())
    }

    fn rust_name(path: &str, schema: &Value) -> Result<String, String> {
        resolve_path(&p(path), schema, NameMode::Rust).map(|r| r.to_string())
    }

    /// What schemars 1.x writes for
    /// `struct NewChallenge { title: String, cards: Vec<Card>, backup: Option<Card>,
    ///  tags: HashSet<String>, meta: HashMap<String, String>, pay: Payment,
    ///  grid: Vec<Vec<Card>>, pair: (String, Card), r#type: String, owner: Option<Owner> }`,
    /// `struct Card { number: String, cvc: String }`,
    /// `#[serde(rename_all = "camelCase")] struct Owner { full_name: String, tax_id: Option<String> }`,
    /// `enum Payment { Cash, Card { pin: String }, Iban(String) }`.
    fn challenge_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "NewChallenge",
            "type": "object",
            "properties": {
                "title": { "type": "string" },
                "cards": { "type": "array", "items": { "$ref": "#/$defs/Card" } },
                "backup": { "anyOf": [ { "$ref": "#/$defs/Card" }, { "type": "null" } ] },
                "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true },
                "meta": { "type": "object", "additionalProperties": { "type": "string" } },
                "pay": { "$ref": "#/$defs/Payment", "description": "How to pay." },
                "grid": { "type": "array", "items": { "type": "array", "items": { "$ref": "#/$defs/Card" } } },
                "pair": { "type": "array", "prefixItems": [ { "type": "string" }, { "$ref": "#/$defs/Card" } ], "minItems": 2, "maxItems": 2 },
                "type": { "type": "string" },
                "owner": { "anyOf": [ { "$ref": "#/$defs/Owner" }, { "type": "null" } ] }
            },
            "required": ["title", "cards", "tags", "meta", "pay", "grid", "pair", "type"],
            "$defs": {
                "Card": {
                    "type": "object",
                    "properties": { "number": { "type": "string" }, "cvc": { "type": "string" } },
                    "required": ["number", "cvc"]
                },
                "Owner": {
                    "type": "object",
                    "properties": {
                        "fullName": { "type": "string" },
                        "taxId": { "type": ["string", "null"] }
                    },
                    "required": ["fullName"]
                },
                "Payment": {
                    "oneOf": [
                        { "type": "string", "const": "Cash" },
                        { "type": "object", "properties": { "Card": { "type": "object", "properties": { "pin": { "type": "string" } }, "required": ["pin"] } }, "required": ["Card"], "additionalProperties": false },
                        { "type": "object", "properties": { "Iban": { "type": "string" } }, "required": ["Iban"], "additionalProperties": false }
                    ]
                }
            }
        })
    }

    #[test]
    fn resolves_paths_through_refs_options_vecs_sets_tuples_and_enums() {
        let s = challenge_schema();
        for path in [
            "title",
            "cards",
            "cards[]",
            "cards[].cvc",
            "backup.cvc",
            "tags[]",
            "pay",
            "pay.Card.pin",
            "pay.Iban",
            "grid[][].cvc",
            "pair[]",
            "pair[].cvc",
            "owner.fullName",
            "owner.taxId",
            "meta",
        ] {
            assert_eq!(json_name(path, &s).as_deref(), Ok(path), "{path}");
        }
    }

    #[test]
    fn missing_property_names_segment_and_lists_properties() {
        let s = challenge_schema();
        assert_eq!(
            json_name("cards[].cvv", &s),
            Err(
                "\"cvv\" is not a property of the input at \"cards[]\" (properties: cvc, number)"
                    .to_owned()
            )
        );
        let root = json_name("titel", &s).expect_err("typo");
        assert!(
            root.starts_with(
                "\"titel\" is not a property of the input (properties: backup, cards, grid,"
            ),
            "{root}"
        );
    }

    #[test]
    fn map_keys_cannot_be_named() {
        let e = json_name("meta.token", &challenge_schema()).expect_err("map key");
        assert_eq!(
            e,
            "\"token\" is not a property of the input at \"meta\": it is a map, and only \
             declared properties can be named, not map keys; use \"[]\" for every value of the map"
        );
        assert_eq!(
            json_name("meta[]", &challenge_schema()).as_deref(),
            Ok("meta[]")
        );
    }

    #[test]
    fn brackets_on_a_non_array_are_an_error() {
        let s = challenge_schema();
        assert_eq!(
            json_name("title[]", &s),
            Err(
                "\"[]\" cannot step into the input at \"title\": it is neither an array (no \
                 \"items\") nor a map (no \"additionalProperties\" schema)"
                    .to_owned()
            )
        );
        assert!(json_name("backup[]", &s).is_err());
        assert!(json_name("cards[][]", &s).is_err());
        let e = json_name("cards.cvc", &s).expect_err("missing []");
        assert!(e.contains("use \"[]\""), "{e}");
    }

    #[test]
    fn json_mode_needs_the_exact_property_name() {
        let s = challenge_schema();
        assert!(json_name("owner.full_name", &s).is_err());
        assert!(json_name("r#type", &s).is_err());
        assert_eq!(json_name("type", &s).as_deref(), Ok("type"));
    }

    #[test]
    fn rust_mode_maps_field_names_through_rename_all() {
        let s = challenge_schema();
        assert_eq!(
            rust_name("owner.full_name", &s).as_deref(),
            Ok("owner.fullName")
        );
        assert_eq!(rust_name("owner.tax_id", &s).as_deref(), Ok("owner.taxId"));
        assert_eq!(rust_name("r#type", &s).as_deref(), Ok("type"));
        assert_eq!(rust_name("cards[].cvc", &s).as_deref(), Ok("cards[].cvc"));
        let e = rust_name("owner.fullname", &s).expect_err("no convention yields it");
        assert!(
            e.starts_with("\"fullname\" is not a property of the input at \"owner\""),
            "{e}"
        );
    }

    #[test]
    fn rust_mode_covers_every_serde_convention() {
        let cases = [
            ("card_number", "CARD_NUMBER"),
            ("card_number", "CardNumber"),
            ("card_number", "cardNumber"),
            ("card_number", "card-number"),
            ("card_number", "CARD-NUMBER"),
            ("cvc", "CVC"),
        ];
        for (field, prop) in cases {
            let s = json!({ "type": "object", "properties": { prop: { "type": "string" } } });
            assert_eq!(
                rust_name(field, &s).as_deref(),
                Ok(prop),
                "{field} -> {prop}"
            );
        }
    }

    #[test]
    fn rust_mode_refuses_an_ambiguous_convention() {
        let s = json!({
            "type": "object",
            "properties": { "cardNumber": {}, "CardNumber": {}, "other": {} }
        });
        let e = rust_name("card_number", &s).expect_err("ambiguous");
        assert_eq!(
            e,
            "\"card_number\" is ambiguous in the input: serde rename_all conventions map it to \
             several properties: \"CardNumber\" (PascalCase), \"cardNumber\" (camelCase); name \
             the property by its JSON name instead"
        );
        // Two conventions with the same result are one match.
        let s = json!({ "type": "object", "properties": { "ID": {} } });
        assert_eq!(rust_name("id", &s).as_deref(), Ok("ID"));
        // The exact name wins over conventions.
        let s = json!({ "type": "object", "properties": { "card_number": {}, "cardNumber": {} } });
        assert_eq!(rust_name("card_number", &s).as_deref(), Ok("card_number"));
    }

    #[test]
    fn resolves_definitions_pointer_escapes_and_type_arrays() {
        let s = json!({
            "type": "object",
            "properties": {
                "a": { "$ref": "#/definitions/A~1B" },
                "b": { "$ref": "#/$defs/Wrapper%3CCard%3E" },
                "c": { "type": ["object", "null"], "properties": { "pin": {} } },
                "d": { "$ref": "#" }
            },
            "definitions": { "A/B": { "properties": { "x": {} } } },
            "$defs": { "Wrapper<Card>": { "properties": { "inner": { "properties": { "cvc": {} } } } } }
        });
        assert_eq!(json_name("a.x", &s).as_deref(), Ok("a.x"));
        assert_eq!(json_name("b.inner.cvc", &s).as_deref(), Ok("b.inner.cvc"));
        assert_eq!(json_name("c.pin", &s).as_deref(), Ok("c.pin"));
        assert_eq!(json_name("d.d.c.pin", &s).as_deref(), Ok("d.d.c.pin"));
    }

    #[test]
    fn unresolvable_refs_and_cycles_are_errors_not_hangs() {
        let s = json!({
            "type": "object",
            "properties": { "a": { "$ref": "other.json#/X" }, "b": { "$ref": "#/$defs/Loop" } },
            "$defs": { "Loop": { "anyOf": [ { "$ref": "#/$defs/Loop" } ] } }
        });
        let e = json_name("a.x", &s).expect_err("non-local ref");
        assert!(
            e.contains("could not follow \"$ref\" \"other.json#/X\""),
            "{e}"
        );
        assert!(json_name("b.x", &s).is_err());
    }

    #[test]
    fn flattened_structs_resolve_through_all_of() {
        let s = json!({
            "type": "object",
            "properties": { "id": {} },
            "allOf": [ { "$ref": "#/$defs/Card" } ],
            "$defs": { "Card": { "properties": { "cvc": {} } } }
        });
        assert_eq!(json_name("cvc", &s).as_deref(), Ok("cvc"));
    }

    fn marked(mut schema: Value, paths: &[&str]) -> Value {
        let paths: Vec<SensitivePath> = paths
            .iter()
            .map(|t| resolve_path(&p(t), &schema, NameMode::Json).expect("resolves"))
            .collect();
        mark_write_only(&mut schema, &paths);
        schema
    }

    #[test]
    fn write_only_goes_on_the_property() {
        let s = marked(challenge_schema(), &["title", "owner.taxId", "tags[]"]);
        assert_eq!(s["properties"]["title"]["writeOnly"], json!(true));
        assert_eq!(s["properties"]["tags"]["items"]["writeOnly"], json!(true));
        assert_eq!(s["properties"]["tags"].get("writeOnly"), None);
        // Through Option's anyOf and a $ref: the Owner definition is copied.
        let owner = &s["properties"]["owner"]["anyOf"][0];
        assert_eq!(owner.get("$ref"), None);
        assert_eq!(owner["properties"]["taxId"]["writeOnly"], json!(true));
        assert_eq!(
            s["properties"]["owner"]["anyOf"][1],
            json!({ "type": "null" })
        );
        // Owner was inlined at its only use: its definition is dropped.
        let mut defs = challenge_schema()["$defs"].clone();
        defs.as_object_mut().unwrap().remove("Owner");
        assert_eq!(s["$defs"], defs);
    }

    #[test]
    fn write_only_goes_beside_a_ref_not_into_defs() {
        let s = marked(challenge_schema(), &["pay", "backup"]);
        assert_eq!(
            s["properties"]["pay"],
            json!({ "$ref": "#/$defs/Payment", "description": "How to pay.", "writeOnly": true })
        );
        assert_eq!(s["properties"]["backup"]["writeOnly"], json!(true));
        assert_eq!(s["$defs"], challenge_schema()["$defs"]);
    }

    #[test]
    fn write_only_through_a_ref_marks_an_inlined_copy() {
        let s = marked(challenge_schema(), &["cards[].cvc"]);
        let items = &s["properties"]["cards"]["items"];
        assert_eq!(items.get("$ref"), None);
        assert_eq!(items["properties"]["cvc"]["writeOnly"], json!(true));
        assert_eq!(items["properties"]["number"], json!({ "type": "string" }));
        assert_eq!(items["required"], json!(["number", "cvc"]));
        // Other users of $defs/Card are unaffected.
        assert_eq!(s["$defs"], challenge_schema()["$defs"]);
        assert_eq!(
            s["properties"]["backup"]["anyOf"][0],
            json!({ "$ref": "#/$defs/Card" })
        );
        assert_eq!(
            s["properties"]["grid"],
            challenge_schema()["properties"]["grid"]
        );
    }

    #[test]
    fn write_only_through_a_ref_with_siblings_keeps_them() {
        let s = marked(challenge_schema(), &["pay", "pay.Card.pin"]);
        let pay = &s["properties"]["pay"];
        assert_eq!(pay.get("$ref"), None);
        assert_eq!(pay["description"], json!("How to pay."));
        assert_eq!(pay["writeOnly"], json!(true));
        assert_eq!(
            pay["oneOf"][1]["properties"]["Card"]["properties"]["pin"]["writeOnly"],
            json!(true)
        );
        // Branches without the step are left alone.
        assert_eq!(
            pay["oneOf"][0],
            json!({ "type": "string", "const": "Cash" })
        );
        assert_eq!(
            pay["oneOf"][2],
            challenge_schema()["$defs"]["Payment"]["oneOf"][2]
        );
        let mut defs = challenge_schema()["$defs"].clone();
        defs.as_object_mut().unwrap().remove("Payment");
        assert_eq!(s["$defs"], defs);
    }

    #[test]
    fn defs_nothing_references_after_inlining_are_dropped() {
        let base = json!({
            "type": "object",
            "properties": {
                "cards": { "type": "array", "items": { "$ref": "#/$defs/Card" } },
                "note": { "$ref": "#/definitions/Note" }
            },
            "$defs": {
                "Card": { "type": "object", "properties": {
                    "cvc": { "type": "string" }, "addr": { "$ref": "#/$defs/Address" }
                } },
                "Address": { "type": "object", "properties": { "zip": { "$ref": "#/$defs/Zip" } } },
                "Zip": { "type": "string" },
                "Loop": { "anyOf": [ { "$ref": "#/$defs/Loop" } ] }
            },
            "definitions": { "Note": { "type": "string" } }
        });
        let s = marked(base.clone(), &["cards[].cvc"]);
        // Card is inlined; its copy still uses Address, which uses Zip (kept
        // transitively); Loop was never used; Note is used by "note".
        let defs: Vec<&String> = s["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(defs, ["Address", "Zip"]);
        assert_eq!(s["definitions"], base["definitions"]);
        // Every def unused: the empty container is dropped too.
        let s = marked(
            json!({
                "type": "object",
                "properties": { "c": { "$ref": "#/$defs/C" } },
                "$defs": { "C": { "type": "object", "properties": { "cvc": {} } } }
            }),
            &["c.cvc"],
        );
        assert_eq!(s.get("$defs"), None);
        assert_eq!(
            s["properties"]["c"]["properties"]["cvc"]["writeOnly"],
            json!(true)
        );
        // A reference to a whole container keeps everything.
        let s = marked(
            json!({
                "type": "object",
                "properties": { "c": { "$ref": "#/$defs/C" }, "all": { "$ref": "#/$defs" } },
                "$defs": { "C": { "type": "object", "properties": { "cvc": {} } } }
            }),
            &["c.cvc"],
        );
        assert!(s["$defs"].get("C").is_some());
    }

    #[test]
    fn write_only_marks_nested_arrays_tuples_and_every_branch() {
        let s = marked(
            challenge_schema(),
            &["grid[][].cvc", "pair[].cvc", "backup.cvc"],
        );
        assert_eq!(
            s["properties"]["grid"]["items"]["items"]["properties"]["cvc"]["writeOnly"],
            json!(true)
        );
        assert_eq!(
            s["properties"]["pair"]["prefixItems"][0],
            json!({ "type": "string" })
        );
        assert_eq!(
            s["properties"]["pair"]["prefixItems"][1]["properties"]["cvc"]["writeOnly"],
            json!(true)
        );
        assert_eq!(
            s["properties"]["backup"]["anyOf"][0]["properties"]["cvc"]["writeOnly"],
            json!(true)
        );
        assert_eq!(s["$defs"], challenge_schema()["$defs"]);
    }

    #[test]
    fn write_only_conflicting_siblings_inline_as_all_of() {
        let mut s = json!({
            "type": "object",
            "properties": { "c": { "$ref": "#/$defs/Card", "type": "object" } },
            "$defs": { "Card": { "type": ["object", "null"], "properties": { "cvc": {} } } }
        });
        mark_write_only(&mut s, &[p("c.cvc")]);
        let c = &s["properties"]["c"];
        assert_eq!(c["type"], json!("object"));
        assert_eq!(c["allOf"][0]["properties"]["cvc"]["writeOnly"], json!(true));
    }

    #[test]
    fn write_only_through_brackets_marks_every_value_of_a_map() {
        let s = marked(
            json!({
                "type": "object",
                "properties": {
                    "wallet": { "type": "object", "additionalProperties": { "$ref": "#/$defs/Card" } },
                    "vault": { "type": "object", "additionalProperties": { "type": "string" } }
                },
                "$defs": { "Card": { "type": "object", "properties": { "cvc": {}, "holder": {} } } }
            }),
            &["wallet[].cvc", "vault[]"],
        );
        let card = &s["properties"]["wallet"]["additionalProperties"];
        assert_eq!(card["properties"]["cvc"]["writeOnly"], json!(true));
        assert_eq!(card["properties"]["holder"].get("writeOnly"), None);
        assert_eq!(
            s["properties"]["vault"]["additionalProperties"]["writeOnly"],
            json!(true)
        );
        assert_eq!(s.get("$defs"), None);
    }

    #[test]
    fn write_only_on_an_array_without_items_adds_items() {
        let mut s = json!({ "type": "object", "properties": { "raw": { "type": "array" } } });
        mark_write_only(&mut s, &[p("raw[]")]);
        assert_eq!(
            s["properties"]["raw"]["items"],
            json!({ "writeOnly": true })
        );
    }

    #[test]
    fn write_only_survives_recursive_definitions() {
        let mut s = json!({
            "$ref": "#/$defs/Tree",
            "$defs": { "Tree": { "type": "object", "properties": {
                "secret": {}, "children": { "type": "array", "items": { "$ref": "#/$defs/Tree" } }
            } } }
        });
        let path = resolve_path(&p("children[].children[].secret"), &s, NameMode::Json)
            .expect("recursive schema resolves");
        mark_write_only(&mut s, &[path]);
        let inner = &s["properties"]["children"]["items"]["properties"]["children"]["items"];
        assert_eq!(inner["properties"]["secret"]["writeOnly"], json!(true));
        assert_eq!(
            inner["properties"]["children"]["items"],
            json!({ "$ref": "#/$defs/Tree" })
        );
        assert_eq!(s["$defs"]["Tree"]["properties"]["secret"], json!({}));
    }
}
