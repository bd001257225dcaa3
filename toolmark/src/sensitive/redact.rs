//! [`Matcher`]: what is sensitive in one tool's input, and redaction.

use std::sync::Arc;

use serde_json::Value;

use super::path::{index_of, location_steps, Seg, SegMatch, SensitivePath, Step};
use super::REDACTED;
use crate::payload::Change;

/// The path that names the whole input (used when the list cannot be read).
static WHOLE_INPUT: [SensitivePath; 1] = [SensitivePath::ROOT];

/// What is sensitive in one tool's input: its resolved (JSON-named) sensitive paths, or
/// "unreadable" (the list could not be read, so the whole input is sensitive).
///
/// Built once at registration; cheap to clone. `Debug` shows the paths, never values.
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    /// The shared state.
    inner: Arc<Inner>,
}

/// The shared state of a [`Matcher`].
#[derive(Debug)]
struct Inner {
    /// The paths, without duplicates (empty when unreadable).
    paths: Vec<SensitivePath>,
    /// The paths could not be read: everything is sensitive.
    unreadable: bool,
    /// The property names the input schema declares, sorted, when known: a key
    /// inside a sensitive value that is not one of them is a map key, itself a
    /// secret.
    names: Option<Vec<Box<str>>>,
}

/// How a location relates to a sensitive path.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Rel<'p> {
    /// The location is at the path's end or inside the value there: all of it is
    /// sensitive.
    Inside,
    /// The location is on the way: these segments remain below it.
    Below(&'p [Seg]),
    /// The path does not go through the location.
    Apart,
}

/// Relates the location `steps` to the path `segs`.
pub(super) fn relate<'p>(segs: &'p [Seg], steps: &[&str]) -> Rel<'p> {
    for (n, step) in steps.iter().enumerate() {
        match segs.get(n) {
            None => return Rel::Inside,
            Some(seg) if seg.matches(Step::Text(step)) => {}
            Some(_) => return Rel::Apart,
        }
    }
    match segs.get(steps.len()..) {
        Some(rest) if !rest.is_empty() => Rel::Below(rest),
        _ => Rel::Inside,
    }
}

/// The placeholder as a value.
pub(super) fn placeholder() -> Value {
    Value::String(REDACTED.to_owned())
}

/// Is `v` the placeholder string?
pub(super) fn is_placeholder(v: &Value) -> bool {
    v.as_str() == Some(REDACTED)
}

/// Replaces the value at the end of `segs` below `v` (every match) with the placeholder.
fn redact_in(v: &mut Value, segs: &[Seg]) {
    let Some((first, rest)) = segs.split_first() else {
        *v = placeholder();
        return;
    };
    match v {
        Value::Object(map) => match first {
            Seg::Key(k) => {
                if let Some(child) = map.get_mut(k) {
                    redact_in(child, rest);
                }
            }
            Seg::Any => map.values_mut().for_each(|child| redact_in(child, rest)),
        },
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                if first.matches(Step::Index(i)) {
                    redact_in(child, rest);
                }
            }
        }
        _ => {}
    }
}

/// Collects the values at the end of `segs` below `v`.
fn collect<'v>(v: &'v Value, segs: &[Seg], out: &mut Vec<&'v Value>) {
    let Some((first, rest)) = segs.split_first() else {
        out.push(v);
        return;
    };
    match v {
        Value::Object(map) => match first {
            Seg::Key(k) => {
                if let Some(child) = map.get(k) {
                    collect(child, rest, out);
                }
            }
            Seg::Any => map.values().for_each(|child| collect(child, rest, out)),
        },
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                if first.matches(Step::Index(i)) {
                    collect(child, rest, out);
                }
            }
        }
        _ => {}
    }
}

/// Pushes the text forms of every scalar leaf of `v`: strings as they are (and as JSON
/// and Rust `Debug` would escape them, where that differs), numbers and booleans as
/// written.
///
/// With `names`, every object key inside `v` that is not a declared property name (a
/// map key) is pushed too.
fn leaves(v: &Value, names: Option<&[Box<str>]>, out: &mut Vec<String>) {
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push(b.to_string()),
        Value::Number(n) => out.push(n.to_string()),
        Value::String(s) => {
            out.push(s.clone());
            if let Ok(json) = serde_json::to_string(s) {
                let inner = json
                    .get(1..json.len().saturating_sub(1))
                    .unwrap_or_default();
                if inner != s {
                    out.push(inner.to_owned());
                }
            }
            let debug = format!("{s:?}");
            let inner = debug
                .get(1..debug.len().saturating_sub(1))
                .unwrap_or_default();
            if inner != s {
                out.push(inner.to_owned());
            }
        }
        Value::Array(items) => items.iter().for_each(|x| leaves(x, names, out)),
        Value::Object(map) => {
            for (k, x) in map {
                if names.is_some_and(|n| n.binary_search_by(|d| (**d).cmp(k)).is_err()) {
                    out.push(k.clone());
                }
                leaves(x, names, out);
            }
        }
    }
}

impl Matcher {
    /// A matcher for `paths` (resolved, JSON names); duplicates are dropped.
    pub(crate) fn new(paths: Vec<SensitivePath>) -> Matcher {
        let mut unique: Vec<SensitivePath> = Vec::with_capacity(paths.len());
        for p in paths {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        Matcher {
            inner: Arc::new(Inner {
                paths: unique,
                unreadable: false,
                names: None,
            }),
        }
    }

    /// [`Matcher::new`] knowing the property names the input schema declares: keys
    /// inside a sensitive value that are not among them are map keys, and secrets
    /// themselves ([`Matcher::secrets`], [`Matcher::redact_location`]).
    pub(crate) fn with_names(paths: Vec<SensitivePath>, mut names: Vec<Box<str>>) -> Matcher {
        names.sort_unstable();
        names.dedup();
        let mut m = Matcher::new(paths);
        if let Some(inner) = Arc::get_mut(&mut m.inner) {
            inner.names = Some(names);
        }
        m
    }

    /// `location` with every map key inside a sensitive value shown as
    /// `"[redacted]"`: a step below a sensitive location that is neither an array
    /// index nor a declared property name. `None` when nothing changes (or the
    /// declared names are unknown).
    pub(crate) fn redact_location(&self, location: &str) -> Option<String> {
        let names = self.inner.names.as_deref()?;
        if self.inner.paths.is_empty() {
            return None;
        }
        let steps = location_steps(location);
        let inside = |n: usize| {
            self.inner
                .paths
                .iter()
                .any(|p| relate(p.segs(), &steps[..n]) == Rel::Inside)
        };
        let first = (1..steps.len()).find(|&n| inside(n))?;
        let secret = |step: &str| {
            index_of(step).is_none() && names.binary_search_by(|d| (**d).cmp(step)).is_err()
        };
        if !steps[first..].iter().any(|s| secret(s)) {
            return None;
        }
        let shown: Vec<&str> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| if i >= first && secret(s) { REDACTED } else { s })
            .collect();
        Some(shown.join("."))
    }

    /// Nothing is sensitive.
    pub(crate) fn none() -> Matcher {
        // One shared allocation for every tool without sensitive paths.
        static NONE: std::sync::LazyLock<Matcher> =
            std::sync::LazyLock::new(|| Matcher::new(Vec::new()));
        NONE.clone()
    }

    /// The list of sensitive paths could not be read: the whole input is sensitive.
    pub(crate) fn unreadable() -> Matcher {
        Matcher {
            inner: Arc::new(Inner {
                paths: Vec::new(),
                unreadable: true,
                names: None,
            }),
        }
    }

    /// Is nothing sensitive? (`false` for [`Matcher::unreadable`].)
    pub(crate) fn is_empty(&self) -> bool {
        !self.inner.unreadable && self.inner.paths.is_empty()
    }

    /// Was the list unreadable?
    pub(crate) fn is_unreadable(&self) -> bool {
        self.inner.unreadable
    }

    /// The sensitive paths (empty for [`Matcher::unreadable`]).
    pub(crate) fn paths(&self) -> &[SensitivePath] {
        &self.inner.paths
    }

    /// The paths the walks use: the whole input when unreadable.
    pub(super) fn walk_paths(&self) -> &[SensitivePath] {
        if self.is_unreadable() {
            &WHOLE_INPUT
        } else {
            self.paths()
        }
    }

    /// Is the location (`cards.0.cvc`; `cards[0].cvc` is read too; `""` is the input)
    /// at or inside a sensitive value?
    ///
    /// A numeric step matches `[]` and a key of the same text; a `?` step (unknown, in
    /// `serde_path_to_error` paths) matches anything. Everything matches when
    /// unreadable. Use it to decide whether an issue message needs
    /// [`withhold_value`](super::withhold_value).
    pub(crate) fn matches(&self, location: &str) -> bool {
        if self.inner.unreadable {
            return true;
        }
        if self.inner.paths.is_empty() {
            return false;
        }
        let steps = location_steps(location);
        self.inner
            .paths
            .iter()
            .any(|p| relate(p.segs(), &steps) == Rel::Inside)
    }

    /// A copy of `input` with every value at a sensitive location replaced by
    /// `"[redacted]"` (`null` too); paths the value does not have are skipped. When
    /// unreadable, the whole input becomes `"[redacted]"`.
    pub(crate) fn redact(&self, input: &Value) -> Value {
        if self.inner.unreadable {
            return placeholder();
        }
        let mut out = input.clone();
        for p in &self.inner.paths {
            redact_in(&mut out, p.segs());
        }
        out
    }

    /// [`Matcher::redact`] for a `value` that sits at `location` inside the input: a
    /// change of `cards` or `cards.0` keeps its value with each `cvc` inside redacted; a
    /// value at (or inside) `cards.0.cvc` is redacted entirely.
    pub(crate) fn redact_at(&self, location: &str, value: &Value) -> Value {
        if self.inner.unreadable {
            return placeholder();
        }
        if self.inner.paths.is_empty() {
            return value.clone();
        }
        let steps = location_steps(location);
        let mut below: Vec<&[Seg]> = Vec::new();
        for p in &self.inner.paths {
            match relate(p.segs(), &steps) {
                Rel::Inside => return placeholder(),
                Rel::Below(rest) => below.push(rest),
                Rel::Apart => {}
            }
        }
        let mut out = value.clone();
        for rest in below {
            redact_in(&mut out, rest);
        }
        out
    }

    /// Each change with its `before` and `after` redacted at the change's path.
    pub(crate) fn redact_changes(&self, changes: &[Change]) -> Vec<Change> {
        changes
            .iter()
            .map(|c| Change {
                path: c.path.clone(),
                before: c.before.as_ref().map(|v| self.redact_at(&c.path, v)),
                after: c.after.as_ref().map(|v| self.redact_at(&c.path, v)),
            })
            .collect()
    }

    /// Every sensitive value of `input` as text, to scrub messages with
    /// [`scrub`](super::scrub): strings as they are (plus their JSON- and
    /// `Debug`-escaped forms where those differ), numbers and booleans as written,
    /// objects and arrays by all their scalar leaves. Non-empty, longest first, without
    /// repeats.
    pub(crate) fn secrets(&self, input: &Value) -> Vec<String> {
        let mut found: Vec<&Value> = Vec::new();
        for p in self.walk_paths() {
            collect(input, p.segs(), &mut found);
        }
        let mut out = Vec::new();
        for v in found {
            leaves(v, self.inner.names.as_deref(), &mut out);
        }
        out.retain(|s| !s.is_empty());
        out.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn m(paths: &[&str]) -> Matcher {
        Matcher::new(
            paths
                .iter()
                .map(|p| SensitivePath::parse(p).expect("test path parses"))
                .collect(),
        )
    }

    fn input() -> Value {
        json!({
            "title": "Robotics",
            "cards": [
                { "number": "4242", "cvc": "123" },
                { "number": "5555", "cvc": "987" }
            ],
            "pin": null
        })
    }

    #[test]
    fn sensitive_values_stay_out_of_confirmation_payloads() {
        let red = m(&["cards[].cvc", "pin", "missing.path", "title[]"]).redact(&input());
        assert_eq!(
            red,
            json!({
                "title": "Robotics",
                "cards": [
                    { "number": "4242", "cvc": "[redacted]" },
                    { "number": "5555", "cvc": "[redacted]" }
                ],
                "pin": "[redacted]"
            })
        );
    }

    #[test]
    fn unreadable_paths_redact_the_whole_input() {
        let u = Matcher::unreadable();
        assert_eq!(u.redact(&input()), json!("[redacted]"));
        assert_eq!(
            u.redact_at("cards.0", &json!({"a": 1})),
            json!("[redacted]")
        );
        assert!(u.matches(""));
        assert!(u.matches("anything.at.all"));
        assert!(!u.is_empty());
        assert!(u.is_unreadable());
        assert!(u.paths().is_empty());
    }

    #[test]
    fn none_redacts_nothing() {
        let n = Matcher::none();
        assert!(n.is_empty());
        assert_eq!(n.redact(&input()), input());
        assert!(!n.matches(""));
        assert!(n.secrets(&input()).is_empty());
    }

    #[test]
    fn change_at_sensitive_location_is_redacted_entirely() {
        let mm = m(&["cards[].cvc"]);
        assert_eq!(
            mm.redact_at("cards.0.cvc", &json!("123")),
            json!("[redacted]")
        );
        assert_eq!(
            mm.redact_at("cards[1].cvc", &json!("987")),
            json!("[redacted]")
        );
        assert_eq!(
            mm.redact_at("cards.0.cvc.x", &json!(1)),
            json!("[redacted]")
        );
        assert_eq!(
            mm.redact_at("cards.0.number", &json!("4242")),
            json!("4242")
        );
    }

    #[test]
    fn change_of_row_keeps_value_with_each_cvc_redacted() {
        let mm = m(&["cards[].cvc"]);
        assert_eq!(
            mm.redact_at("cards.0", &json!({ "number": "4242", "cvc": "123" })),
            json!({ "number": "4242", "cvc": "[redacted]" })
        );
        assert_eq!(
            mm.redact_at("cards", &input()["cards"]),
            json!([
                { "number": "4242", "cvc": "[redacted]" },
                { "number": "5555", "cvc": "[redacted]" }
            ])
        );
        assert_eq!(mm.redact_at("", &input()), mm.redact(&input()));
        assert_eq!(mm.redact_at("title", &json!("x")), json!("x"));
    }

    #[test]
    fn redact_changes_redacts_before_and_after() {
        let mm = m(&["cards[].cvc"]);
        let changes = vec![
            Change {
                path: "cards.1".into(),
                before: Some(json!({ "number": "5555", "cvc": "987" })),
                after: Some(json!({ "number": "5556", "cvc": "988" })),
            },
            Change {
                path: "cards.0.cvc".into(),
                before: None,
                after: Some(json!("111")),
            },
        ];
        let red = serde_json::to_value(mm.redact_changes(&changes)).expect("serializes");
        assert_eq!(
            red,
            json!([
                { "path": "cards.1",
                  "before": { "number": "5555", "cvc": "[redacted]" },
                  "after": { "number": "5556", "cvc": "[redacted]" } },
                { "path": "cards.0.cvc", "before": null, "after": "[redacted]" }
            ])
        );
    }

    #[test]
    fn map_keys_inside_a_sensitive_value_are_redacted_in_locations_and_secrets() {
        let paths = |ps: &[&str]| -> Vec<SensitivePath> {
            ps.iter()
                .map(|p| SensitivePath::parse(p).unwrap())
                .collect()
        };
        let names = || vec!["vault".into(), "wallet".into(), "cvc".into()];
        let mm = Matcher::with_names(paths(&["vault", "wallet[].cvc"]), names());
        assert_eq!(
            mm.redact_location("vault.KEY-1.0").as_deref(),
            Some("vault.[redacted].0")
        );
        assert_eq!(mm.redact_location("vault"), None);
        // Keys above the sensitive value are not secrets; declared names are shown.
        assert_eq!(mm.redact_location("wallet.home.cvc"), None);
        assert_eq!(
            mm.redact_location("wallet.home.cvc.k").as_deref(),
            Some("wallet.home.cvc.[redacted]")
        );
        let secrets = mm.secrets(&json!({"vault": {"KEY-1": "v", "cvc": "w"}}));
        assert!(secrets.contains(&"KEY-1".to_owned()), "{secrets:?}");
        assert!(!secrets.contains(&"cvc".to_owned()), "{secrets:?}");
        // Without the declared names, locations are left alone.
        assert_eq!(m(&["vault"]).redact_location("vault.KEY-1"), None);
    }

    #[test]
    fn brackets_match_any_index_and_numeric_keys() {
        let mm = m(&["cards[].cvc", "grid[][]", "obj.0"]);
        assert!(mm.matches("cards.7.cvc"));
        assert!(mm.matches("cards.7.cvc.deeper"));
        assert!(!mm.matches("cards.7"));
        // `[]` is every value of a map as well.
        assert!(mm.matches("cards.x.cvc"));
        assert!(mm.matches("grid.1.2"));
        assert!(!mm.matches("grid.1"));
        assert!(mm.matches("obj.0"));
        assert!(mm.matches("cards.?.cvc"));
        let v = json!({ "grid": [[1, 2], [3]], "obj": { "0": "s", "1": "p" } });
        assert_eq!(
            mm.redact(&v),
            json!({ "grid": [["[redacted]", "[redacted]"], ["[redacted]"]],
                    "obj": { "0": "[redacted]", "1": "p" } })
        );
    }

    #[test]
    fn nested_sensitive_paths_redact_the_outer_value() {
        let mm = m(&["card", "card.cvc"]);
        assert_eq!(
            mm.redact(&json!({ "card": { "cvc": "1" } })),
            json!({ "card": "[redacted]" })
        );
        assert_eq!(
            m(&["card.cvc", "card"]).redact(&json!({ "card": { "cvc": "1" } })),
            json!({ "card": "[redacted]" })
        );
    }

    #[test]
    fn secrets_are_sensitive_leaves_longest_first() {
        let mm = m(&["cards[].cvc", "card", "pin"]);
        let v = json!({
            "cards": [{ "cvc": "123" }, { "cvc": "12" }, { "cvc": "123" }],
            "card": { "n": 4242, "ok": true, "x": null, "quote": "a\"b", "empty": "" },
            "pin": null,
            "title": "public"
        });
        assert_eq!(
            mm.secrets(&v),
            vec!["4242", "a\\\"b", "true", "123", "a\"b", "12"]
        );
        assert_eq!(
            Matcher::unreadable().secrets(&json!({ "t": "public" })),
            vec!["public"]
        );
    }

    #[test]
    fn duplicates_are_dropped_and_debug_shows_no_values() {
        let mm = m(&["a", "a", "b"]);
        assert_eq!(mm.paths().len(), 2);
        let dbg = format!("{mm:?}");
        assert!(dbg.contains("Key(\"a\")"), "{dbg}");
    }
}
