//! [`KeyTree`]: which keys a tool's input may hold, so that no value the tool's
//! decode reads lies outside what redaction sees.
//!
//! Redaction works on the names the input schema lists; serde reads more than that
//! (an `alias`, a key a flattened or tagged type picks up, a key an open struct would
//! ignore today and read tomorrow). For a tool with sensitive paths, the input is
//! walked alongside its schema before the decode, and a key the schema does not list
//! is refused `unknown field` at its path, at every depth.
//!
//! The schema is compiled once, at registration: local `$ref`s are followed,
//! `allOf`/`anyOf`/`oneOf` are merged (a key is listed if some branch lists it),
//! `additionalProperties`/`patternProperties` as a schema of an object that lists no
//! properties make a map (its values are walked), `items`/`prefixItems` are the
//! elements of an array. An object schema that lists no properties and allows any
//! key (a `serde_json::Value`, a non-object type) is not walked: redaction sees the
//! raw JSON there. An object schema that lists properties refuses every other key,
//! even when it also allows more (`additionalProperties: true`, a flattened map),
//! because serde may route such a key into a listed field by an alias.

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::schema::{expand_all, property_names, step_items, step_key, typed_as, ANY_SCHEMA};
use crate::payload::Issue;

/// How many nodes a compiled schema may have.
const MAX_NODES: usize = 4096;

/// The index of the node that accepts anything.
const ANY: u32 = 0;

/// One compiled schema location.
#[derive(Clone, Debug, Default)]
struct Node {
    /// Accepts any value, unchecked.
    any: bool,
    /// The listed properties, sorted by name, with their nodes.
    props: Vec<(Box<str>, u32)>,
    /// An object with no listed properties: the schema of its values (a map), or
    /// `None` when it takes no key at all.
    values: Option<u32>,
    /// The schema of an array's elements.
    items: u32,
}

/// Where keys are checked: an input schema compiled for [`KeyTree::check`].
#[derive(Clone, Debug)]
pub(crate) struct KeyTree {
    nodes: Vec<Node>,
    /// The node of the input itself.
    root: u32,
}

/// Where [`KeyTree::check`] reports: the first issues, and a count of the rest.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The first `limit` issues.
    pub(crate) issues: Vec<Issue>,
    /// How many more there were.
    pub(crate) more: usize,
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    memo: FxHashMap<Vec<usize>, u32>,
    work: Vec<(u32, Vec<&'a Value>)>,
}

impl<'a> Compiler<'a> {
    /// The node for the schemas `at` (expanded through `$ref` and combinators).
    fn intern(&mut self, at: &[&'a Value]) -> Result<u32, String> {
        let mut unresolved = Vec::new();
        let expanded = expand_all(at, self.root, &mut unresolved);
        if !unresolved.is_empty() || expanded.iter().any(|n| **n == Value::Bool(true)) {
            // A reference that cannot be followed, or a `true` schema: anything.
            return Ok(ANY);
        }
        let mut key: Vec<usize> = expanded
            .iter()
            .map(|n| std::ptr::from_ref::<Value>(n) as usize)
            .collect();
        key.sort_unstable();
        key.dedup();
        if let Some(&id) = self.memo.get(&key) {
            return Ok(id);
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(format!(
                "its input schema is too large to check keys against (more than {MAX_NODES} \
                 distinct object and array schemas)"
            ));
        }
        let id = u32::try_from(self.nodes.len()).map_err(|e| e.to_string())?;
        self.nodes.push(Node::default());
        self.memo.insert(key, id);
        self.work.push((id, expanded));
        Ok(id)
    }

    fn build(&mut self, expanded: &[&'a Value]) -> Result<Node, String> {
        let names = property_names(expanded);
        let mut props = Vec::with_capacity(names.len());
        for name in &names {
            let child = self.intern(&step_key(expanded, name))?;
            props.push((Box::<str>::from(*name), child));
        }
        props.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut map_values: Vec<&Value> = Vec::new();
        let mut closed = false;
        for n in expanded {
            match n.get("additionalProperties") {
                Some(Value::Bool(false)) => closed = true,
                Some(v) => map_values.push(v),
                None => {}
            }
            if let Some(Value::Object(patterns)) = n.get("patternProperties") {
                map_values.extend(patterns.values());
            }
        }
        let values = if !props.is_empty() {
            None
        } else if !map_values.is_empty() {
            Some(self.intern(&map_values)?)
        } else if closed {
            None
        } else {
            // No listed property, any key allowed (or not an object at all).
            Some(ANY)
        };
        let elements: Vec<&Value> = step_items(expanded)
            .into_iter()
            .filter(|e| !std::ptr::eq(*e, &ANY_SCHEMA))
            .collect();
        let is_array = expanded
            .iter()
            .any(|n| typed_as(n, "array") || n.get("items").is_some());
        let items = if elements.is_empty() || !is_array {
            ANY
        } else {
            self.intern(&elements)?
        };
        let any = props.is_empty() && values == Some(ANY) && items == ANY;
        Ok(Node {
            any,
            props,
            values,
            items,
        })
    }
}

impl KeyTree {
    /// Compile `schema` (at registration). Fails only for a schema too large to
    /// compile.
    pub(crate) fn compile(schema: &Value) -> Result<KeyTree, String> {
        let mut c = Compiler {
            root: schema,
            nodes: vec![Node {
                any: true,
                props: Vec::new(),
                values: Some(ANY),
                items: ANY,
            }],
            memo: FxHashMap::default(),
            work: Vec::new(),
        };
        let root = c.intern(&[schema])?;
        while let Some((id, expanded)) = c.work.pop() {
            let node = c.build(&expanded)?;
            c.nodes[id as usize] = node;
        }
        Ok(KeyTree {
            nodes: c.nodes,
            root,
        })
    }

    /// Every key of `input` the schema does not list, as "unknown field" issues at
    /// their dotted paths (the first `limit`; the rest are counted).
    pub(crate) fn check(&self, input: &Value, limit: usize) -> Found {
        let mut found = Found::default();
        let mut path = String::new();
        self.walk(input, self.root, &mut path, limit, &mut found);
        found
    }

    fn walk(&self, value: &Value, id: u32, path: &mut String, limit: usize, found: &mut Found) {
        let node = &self.nodes[id as usize];
        if node.any {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let next = match node.props.binary_search_by(|(k, _)| (**k).cmp(key)) {
                        Ok(i) => Some(node.props[i].1),
                        Err(_) if node.props.is_empty() => node.values,
                        Err(_) => None,
                    };
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    match next {
                        Some(next) => self.walk(child, next, path, limit, found),
                        None if found.issues.len() < limit => {
                            found.issues.push(Issue::new(path.clone(), "unknown field"));
                        }
                        None => found.more += 1,
                    }
                    path.truncate(len);
                }
            }
            Value::Array(items) => {
                if node.items == ANY {
                    return;
                }
                for (i, child) in items.iter().enumerate() {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(itoa(i).as_str());
                    self.walk(child, node.items, path, limit, found);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
}

impl KeyTree {
    /// The node a key of an object at `node` leads to (`None`: the key is not listed).
    fn child(node: &Node, key: &str) -> Option<u32> {
        match node.props.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => Some(node.props[i].1),
            Err(_) if node.props.is_empty() => node.values,
            Err(_) => None,
        }
    }

    /// Push the text forms of every value under a key the schema does not list
    /// (with every object key inside it): values serde may read into a sensitive
    /// field by an alias, so secrets of the call.
    pub(crate) fn unlisted_leaves(&self, input: &Value, out: &mut Vec<String>) {
        self.walk_unlisted(input, self.root, out);
    }

    fn walk_unlisted(&self, value: &Value, id: u32, out: &mut Vec<String>) {
        let node = &self.nodes[id as usize];
        if node.any {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    match Self::child(node, key) {
                        Some(next) => self.walk_unlisted(child, next, out),
                        None => all_leaves(child, out),
                    }
                }
            }
            Value::Array(items) if node.items != ANY => {
                for child in items {
                    self.walk_unlisted(child, node.items, out);
                }
            }
            _ => {}
        }
    }

    /// Replace the value under every key the schema does not list with
    /// `"[redacted]"`.
    pub(crate) fn redact_unlisted(&self, input: &mut Value) {
        self.redact_walk(input, self.root);
    }

    fn redact_walk(&self, value: &mut Value, id: u32) {
        let node = &self.nodes[id as usize];
        if node.any {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    match Self::child(node, key) {
                        Some(next) => self.redact_walk(child, next),
                        None => *child = Value::String(super::REDACTED.to_owned()),
                    }
                }
            }
            Value::Array(items) if node.items != ANY => {
                for child in items {
                    self.redact_walk(child, node.items);
                }
            }
            _ => {}
        }
    }
}

/// The text forms of every scalar of `v` and every object key inside it.
fn all_leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                out.push(k.clone());
                all_leaves(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| all_leaves(x, out)),
        other => super::redact::leaves(other, None, out),
    }
}

/// Every property name `schema` declares anywhere (the keys of every `properties`).
pub(crate) fn declared_names(schema: &Value) -> Vec<Box<str>> {
    let mut out: Vec<Box<str>> = Vec::new();
    let mut stack = vec![schema];
    while let Some(n) = stack.pop() {
        match n {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    out.extend(props.keys().map(|k| Box::<str>::from(k.as_str())));
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn itoa(i: usize) -> String {
    i.to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn unknown(schema: &Value, input: &Value) -> Vec<String> {
        KeyTree::compile(schema)
            .expect("compiles")
            .check(input, 100)
            .issues
            .into_iter()
            .map(|i| i.path)
            .collect()
    }

    #[test]
    fn unlisted_keys_are_found_at_every_depth() {
        let s = json!({
            "type": "object",
            "properties": {
                "holder": {"type": "string"},
                "cards": {"type": "array", "items": {"$ref": "#/$defs/Card"}},
                "backup": {"anyOf": [{"$ref": "#/$defs/Card"}, {"type": "null"}]},
                "meta": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Card"}},
                "raw": true,
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/Card"}]}
            },
            "$defs": {"Card": {"type": "object", "properties": {"cvc": {"type": "string"}}}}
        });
        let input = json!({
            "holder": "a", "cvv": "x",
            "cards": [{"cvc": "1"}, {"cvv": "2"}],
            "backup": {"CVC": "3"},
            "meta": {"any key": {"cvc": "4", "pin": "5"}},
            "raw": {"anything": {"goes": 1}},
            "pair": ["s", {"cvc": "6", "x": 7}]
        });
        let mut got = unknown(&s, &input);
        got.sort();
        assert_eq!(
            got,
            [
                "backup.CVC",
                "cards.1.cvv",
                "cvv",
                "meta.any key.pin",
                "pair.1.x"
            ]
        );
        assert!(unknown(&s, &json!({"holder": "a", "backup": null})).is_empty());
    }

    #[test]
    fn a_key_is_listed_if_some_branch_lists_it() {
        let s = json!({
            "oneOf": [
                {"type": "object", "properties": {"kind": {"const": "a"}, "x": {}}},
                {"type": "object", "properties": {"kind": {"const": "b"}, "y": {}}}
            ]
        });
        assert!(unknown(&s, &json!({"kind": "a", "y": 1})).is_empty());
        assert_eq!(unknown(&s, &json!({"kind": "a", "z": 1})), ["z"]);
    }

    #[test]
    fn listed_properties_refuse_other_keys_even_when_more_are_allowed() {
        let s = json!({
            "type": "object",
            "properties": {"a": {}},
            "additionalProperties": true
        });
        assert_eq!(unknown(&s, &json!({"a": 1, "b": 2})), ["b"]);
        let open = json!({"type": "object"});
        assert!(unknown(&open, &json!({"b": {"c": 2}})).is_empty());
        let closed = json!({"type": "object", "additionalProperties": false});
        assert_eq!(unknown(&closed, &json!({"b": 2})), ["b"]);
    }

    #[test]
    fn recursive_schemas_compile_and_walk() {
        let s = json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {
                "v": {}, "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
            }}}
        });
        let input = json!({"v": 1, "children": [{"v": 2, "children": [{"w": 3}]}]});
        assert_eq!(unknown(&s, &input), ["children.0.children.0.w"]);
    }

    #[test]
    fn issues_past_the_limit_are_counted() {
        let s = json!({"type": "object", "properties": {"a": {}}});
        let input: serde_json::Map<String, Value> =
            (0..50).map(|i| (format!("k{i}"), json!(i))).collect();
        let found = KeyTree::compile(&s)
            .unwrap()
            .check(&Value::Object(input), 20);
        assert_eq!((found.issues.len(), found.more), (20, 30));
    }
}
