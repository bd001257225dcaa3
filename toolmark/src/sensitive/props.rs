//! Property tests: a secret never appears in a redacted payload, an unedited approval
//! restores the real input, `"[redacted]"` never reaches a tool, and scrubbing removes
//! every secret from a message.
//!
//! Inputs are small random JSON objects (depth ≤ 4, ≤ 4 members per container) whose
//! string leaves are unique markers `<S{n}>`; sensitive paths are random walks through
//! the input's own keys.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::message::withhold_value;
use super::path::{Seg, SensitivePath};
use super::{scrub, Matcher, REDACTED};
use crate::payload::Change;

/// One step of a location, typed (the oracle does not use the module's own matching).
#[derive(Clone, Debug, PartialEq, Eq)]
enum At {
    /// An object member.
    K(String),
    /// An array element.
    I(usize),
}

/// The dotted form of a location.
fn dotted(loc: &[At]) -> String {
    loc.iter()
        .map(|s| match s {
            At::K(k) => k.clone(),
            At::I(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The value at a typed location.
fn get<'v>(v: &'v Value, loc: &[At]) -> Option<&'v Value> {
    loc.iter().try_fold(v, |cur, s| match (cur, s) {
        (Value::Object(m), At::K(k)) => m.get(k),
        (Value::Array(a), At::I(i)) => a.get(*i),
        _ => None,
    })
}

/// The mutable value at a typed location.
fn get_mut<'v>(v: &'v mut Value, loc: &[At]) -> Option<&'v mut Value> {
    loc.iter().try_fold(v, |cur, s| match (cur, s) {
        (Value::Object(m), At::K(k)) => m.get_mut(k),
        (Value::Array(a), At::I(i)) => a.get_mut(*i),
        _ => None,
    })
}

/// Oracle: is `loc` at or inside the value a path names?
fn oracle_matches(paths: &[SensitivePath], loc: &[At]) -> bool {
    paths.iter().any(|p| {
        p.segs().len() <= loc.len()
            && p.segs()
                .iter()
                .zip(loc)
                .all(|(seg, step)| match (seg, step) {
                    (Seg::Key(k), At::K(s)) => k == s,
                    (Seg::Key(k), At::I(i)) => *k == i.to_string(),
                    // `[]`: every element of an array, every value of a map.
                    (Seg::Any, At::I(_) | At::K(_)) => true,
                })
    })
}

/// Every node of `v` with its location, in document order.
fn nodes(v: &Value) -> Vec<(Vec<At>, &Value)> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), v)];
    while let Some((loc, node)) = stack.pop() {
        match node {
            Value::Object(m) => {
                for (k, c) in m {
                    let mut l = loc.clone();
                    l.push(At::K(k.clone()));
                    stack.push((l, c));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    let mut l = loc.clone();
                    l.push(At::I(i));
                    stack.push((l, c));
                }
            }
            _ => {}
        }
        out.push((loc, node));
    }
    out
}

/// The marker strings at sensitive locations of `v` (which sits at `base`).
fn sensitive_markers(paths: &[SensitivePath], base: &[At], v: &Value) -> Vec<String> {
    nodes(v)
        .into_iter()
        .filter_map(|(loc, node)| {
            let s = node.as_str()?;
            let mut full = base.to_vec();
            full.extend(loc);
            (s.starts_with("<S") && oracle_matches(paths, &full)).then(|| s.to_owned())
        })
        .collect()
}

/// A leaf: `""` stands for a fresh marker (numbered later); sometimes the literal
/// placeholder, to exercise "the approver was shown it".
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => Just(Value::String(String::new())),
        2 => any::<i8>().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
        1 => Just(Value::String(REDACTED.to_owned())),
    ]
}

/// Object keys: few, so that random paths and rows overlap; `0` is a numeric key.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "0"]).prop_map(str::to_owned)
}

/// A random JSON tree of depth ≤ 4 with ≤ 4 members per container.
fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..=4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..=4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Replaces every `""` leaf with a unique marker.
fn number_markers(v: &mut Value, next: &mut usize) {
    match v {
        Value::String(s) if s.is_empty() => {
            *s = format!("<S{next}>");
            *next += 1;
        }
        Value::Array(a) => a.iter_mut().for_each(|c| number_markers(c, next)),
        Value::Object(m) => m.values_mut().for_each(|c| number_markers(c, next)),
        _ => {}
    }
}

/// A random input: an object with 1 to 4 members.
fn input() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), tree(), 1..=4).prop_map(|m| {
        let mut v = Value::Object(m.into_iter().collect());
        number_markers(&mut v, &mut 0);
        v
    })
}

/// A path following `choices` through `v`'s own keys (`[]` or a numeric key for arrays).
fn path_from(v: &Value, choices: &[u8]) -> Option<SensitivePath> {
    let mut segs = Vec::new();
    let mut cur = v;
    for (n, &c) in choices.iter().enumerate() {
        let c = usize::from(c);
        match cur {
            Value::Object(m) if !m.is_empty() => {
                let (k, child) = m.iter().nth(c % m.len())?;
                segs.push(Seg::Key(k.clone()));
                cur = child;
            }
            Value::Array(a) if !a.is_empty() => {
                let i = c % a.len();
                segs.push(if c % 5 == 4 {
                    Seg::Key(i.to_string())
                } else {
                    Seg::Any
                });
                cur = &a[i];
            }
            Value::Array(_) => {
                segs.push(Seg::Any);
                break;
            }
            _ => break,
        }
        if n > 0 && c % 3 == 0 {
            break;
        }
    }
    if c_missing(choices) {
        segs.push(Seg::Key("zz".to_owned()));
    }
    matches!(segs.first(), Some(Seg::Key(_))).then(|| SensitivePath::from_segs(segs))
}

/// Sometimes a path continues with a key the input does not have.
fn c_missing(choices: &[u8]) -> bool {
    choices.first().is_some_and(|c| c % 11 == 10)
}

/// A random input with random sensitive paths through its own keys.
fn input_and_paths() -> impl Strategy<Value = (Value, Vec<SensitivePath>)> {
    (
        input(),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 1..=5), 0..=3),
    )
        .prop_map(|(v, walks)| {
            let paths = walks.iter().filter_map(|w| path_from(&v, w)).collect();
            (v, paths)
        })
}

/// A random concrete location in `v` following `choices`, stopping early sometimes.
fn location(v: &Value, choices: &[u8]) -> Vec<At> {
    let mut loc = Vec::new();
    let mut cur = v;
    for &c in choices {
        let c = usize::from(c);
        match cur {
            Value::Object(m) if !m.is_empty() => {
                let Some((k, child)) = m.iter().nth(c % m.len()) else {
                    break;
                };
                loc.push(At::K(k.clone()));
                cur = child;
            }
            Value::Array(a) if !a.is_empty() => {
                loc.push(At::I(c % a.len()));
                cur = &a[c % a.len()];
            }
            _ => break,
        }
        if c % 4 == 0 {
            break;
        }
    }
    loc
}

/// The kinds of edit an approver makes.
#[derive(Clone, Debug)]
enum Edit {
    /// Set a node to a fresh scalar.
    Scalar(Vec<u8>),
    /// Delete an object member.
    DeleteKey(Vec<u8>),
    /// Insert a copy of a row (or a fresh scalar) into an array.
    InsertRow(Vec<u8>, u8),
    /// Remove an array row.
    RemoveRow(Vec<u8>, u8),
    /// Swap two array rows.
    SwapRows(Vec<u8>, u8, u8),
    /// Give a sensitive location a new value.
    ReplaceSensitive(u8, Vec<u8>),
    /// Turn a container into another shape.
    Restructure(Vec<u8>),
    /// Put a placeholder anywhere.
    Placeholder(Vec<u8>),
}

fn edit() -> impl Strategy<Value = Edit> {
    let walk = || prop::collection::vec(any::<u8>(), 0..=5);
    prop_oneof![
        walk().prop_map(Edit::Scalar),
        walk().prop_map(Edit::DeleteKey),
        (walk(), any::<u8>()).prop_map(|(w, i)| Edit::InsertRow(w, i)),
        (walk(), any::<u8>()).prop_map(|(w, i)| Edit::RemoveRow(w, i)),
        (walk(), any::<u8>(), any::<u8>()).prop_map(|(w, i, j)| Edit::SwapRows(w, i, j)),
        (any::<u8>(), walk()).prop_map(|(p, w)| Edit::ReplaceSensitive(p, w)),
        walk().prop_map(Edit::Restructure),
        walk().prop_map(Edit::Placeholder),
    ]
}

/// The array at the end of a random walk (or the nearest array above it).
fn array_at<'v>(v: &'v mut Value, walk: &[u8]) -> Option<&'v mut Vec<Value>> {
    let mut loc = location(v, walk);
    loop {
        if get(v, &loc).is_some_and(Value::is_array) {
            return get_mut(v, &loc).and_then(Value::as_array_mut);
        }
        loc.pop()?;
    }
}

/// A concrete location of one of `paths` in `v` (`[]` takes the index from `walk`).
fn sensitive_location(v: &Value, paths: &[SensitivePath], pick: u8, walk: &[u8]) -> Vec<At> {
    let mut loc = Vec::new();
    let Some(p) = paths.get(usize::from(pick) % paths.len().max(1)) else {
        return loc;
    };
    let mut cur = v;
    for (n, seg) in p.segs().iter().enumerate() {
        let step = match (seg, cur) {
            (Seg::Key(k), Value::Object(_)) => At::K(k.clone()),
            (Seg::Key(k), Value::Array(_)) => match k.parse() {
                Ok(i) => At::I(i),
                Err(_) => break,
            },
            (Seg::Any, Value::Array(a)) if !a.is_empty() => {
                At::I(usize::from(walk.get(n).copied().unwrap_or(0)) % a.len())
            }
            _ => break,
        };
        loc.push(step);
        match get(v, &loc) {
            Some(next) => cur = next,
            None => {
                loc.pop();
                break;
            }
        }
    }
    loc
}

/// Applies an edit; `fresh` numbers new values.
fn apply(v: &mut Value, e: &Edit, paths: &[SensitivePath], fresh: &mut usize) {
    *fresh += 1;
    let new_scalar = Value::String(format!("<E{fresh}>"));
    match e {
        Edit::Scalar(w) => {
            let loc = location(v, w);
            if let Some(node) = get_mut(v, &loc)
                && !node.is_object()
                && !node.is_array()
            {
                *node = new_scalar;
            }
        }
        Edit::DeleteKey(w) => {
            let mut loc = location(v, w);
            if let Some(At::K(k)) = loc.pop()
                && let Some(Value::Object(m)) = get_mut(v, &loc)
            {
                m.remove(&k);
            }
        }
        Edit::InsertRow(w, i) => {
            if let Some(a) = array_at(v, w) {
                let at = usize::from(*i) % (a.len() + 1);
                let row = a.get(usize::from(*i) % a.len().max(1)).cloned();
                a.insert(at, row.unwrap_or(new_scalar));
            }
        }
        Edit::RemoveRow(w, i) => {
            if let Some(a) = array_at(v, w)
                && !a.is_empty()
            {
                let at = usize::from(*i) % a.len();
                a.remove(at);
            }
        }
        Edit::SwapRows(w, i, j) => {
            if let Some(a) = array_at(v, w)
                && !a.is_empty()
            {
                let (i, j) = (usize::from(*i) % a.len(), usize::from(*j) % a.len());
                a.swap(i, j);
            }
        }
        Edit::ReplaceSensitive(p, w) => {
            let loc = sensitive_location(v, paths, *p, w);
            if !loc.is_empty()
                && let Some(node) = get_mut(v, &loc)
            {
                *node = new_scalar;
            }
        }
        Edit::Restructure(w) => {
            let loc = location(v, w);
            if let Some(node) = get_mut(v, &loc) {
                *node = match node.take() {
                    Value::Object(m) => Value::Array(m.into_iter().map(|(_, x)| x).collect()),
                    Value::Array(a) => Value::Object(
                        a.into_iter()
                            .enumerate()
                            .map(|(i, x)| (i.to_string(), x))
                            .collect(),
                    ),
                    _ => new_scalar,
                };
            }
        }
        Edit::Placeholder(w) => {
            let loc = location(v, w);
            if let Some(node) = get_mut(v, &loc) {
                *node = Value::String(REDACTED.to_owned());
            }
        }
    }
}

/// Random changes at random locations of `v`.
fn changes_of(v: &Value, walks: &[(Vec<u8>, Vec<u8>, bool)]) -> Vec<Change> {
    walks
        .iter()
        .map(|(a, b, with_before)| {
            let at = location(v, a);
            let other = location(v, b);
            // Change's JSON reads `null` as "no value": keep sides non-null.
            let side = |loc: &[At]| get(v, loc).filter(|x| !x.is_null()).cloned();
            Change {
                path: dotted(&at),
                before: if *with_before { side(&at) } else { None },
                after: side(&other),
            }
        })
        .collect()
}

fn change_walks() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>, bool)>> {
    prop::collection::vec(
        (
            prop::collection::vec(any::<u8>(), 0..=5),
            prop::collection::vec(any::<u8>(), 0..=5),
            any::<bool>(),
        ),
        0..=3,
    )
}

/// The typed location of a dotted path, resolved against `v` (numeric steps are
/// indices in arrays).
fn typed(v: &Value, dotted_path: &str) -> Vec<At> {
    let mut loc = Vec::new();
    if dotted_path.is_empty() {
        return loc;
    }
    for step in dotted_path.split('.') {
        let at = match get(v, &loc) {
            Some(Value::Array(_)) => match step.parse() {
                Ok(i) => At::I(i),
                Err(_) => At::K(step.to_owned()),
            },
            _ => At::K(step.to_owned()),
        };
        loc.push(at);
    }
    loc
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    /// (a) No sensitive value is left anywhere in a redacted input.
    #[test]
    fn redact_never_leaves_a_sensitive_value((x, paths) in input_and_paths()) {
        let m = Matcher::new(paths.clone());
        let red = json(&m.redact(&x));
        for marker in sensitive_markers(&paths, &[], &x) {
            prop_assert!(!red.contains(&marker), "{marker} in {red}");
        }
        // Everything else is untouched.
        let red = m.redact(&x);
        for (loc, node) in nodes(&x) {
            if !oracle_matches(&paths, &loc) && !node.is_object() && !node.is_array() {
                prop_assert_eq!(get(&red, &loc), Some(node));
            }
        }
        prop_assert_eq!(json(&Matcher::unreadable().redact(&x)), "\"[redacted]\"");
    }

    /// (a) No sensitive value is left in redacted ctx.confirm changes.
    #[test]
    fn redact_changes_never_leaves_a_sensitive_value(
        (x, paths) in input_and_paths(),
        walks in change_walks(),
    ) {
        let m = Matcher::new(paths.clone());
        let changes = changes_of(&x, &walks);
        let red = m.redact_changes(&changes);
        for (c, r) in changes.iter().zip(&red) {
            prop_assert_eq!(&c.path, &r.path);
            let base = typed(&x, &c.path);
            for (orig, shown) in [(&c.before, &r.before), (&c.after, &r.after)] {
                let (Some(orig), Some(shown)) = (orig, shown) else {
                    prop_assert_eq!(orig.is_none(), shown.is_none());
                    continue;
                };
                let text = json(shown);
                for marker in sensitive_markers(&paths, &base, orig) {
                    prop_assert!(!text.contains(&marker), "{marker} in {text} at {}", c.path);
                }
            }
        }
    }

    /// (b) An approval that edits nothing restores exactly the real input.
    #[test]
    fn unedited_approval_restores_the_input((x, paths) in input_and_paths()) {
        for m in [Matcher::new(paths), Matcher::none(), Matcher::unreadable()] {
            prop_assert_eq!(m.restore(&x, m.redact(&x)), Ok(x.clone()));
        }
    }

    /// (b) The same for ctx.confirm changes, through their JSON form.
    #[test]
    fn unedited_changes_restore_exactly(
        (x, paths) in input_and_paths(),
        walks in change_walks(),
    ) {
        let changes = changes_of(&x, &walks);
        for m in [Matcher::new(paths), Matcher::unreadable()] {
            let shown = serde_json::to_value(m.redact_changes(&changes)).unwrap_or_default();
            match m.restore_changes(&changes, shown) {
                Ok(got) => prop_assert_eq!(json(&got), json(&changes)),
                Err(e) => prop_assert!(false, "issues {:?}", e),
            }
        }
    }

    /// (c) "[redacted]" never reaches a tool where the original did not hold it, a
    /// secret is only restored onto its own position, and every issue points at a
    /// placeholder of the edited input.
    #[test]
    fn placeholder_never_reaches_the_tool(
        (x, paths) in input_and_paths(),
        edits in prop::collection::vec(edit(), 1..=3),
    ) {
        for m in [Matcher::new(paths.clone()), Matcher::unreadable()] {
            let mut edited = m.redact(&x);
            let mut fresh = 0;
            for e in &edits {
                apply(&mut edited, e, &paths, &mut fresh);
            }
            let secrets: Vec<(Vec<At>, &str)> = nodes(&x)
                .into_iter()
                .filter(|(loc, _)| m.is_unreadable() || oracle_matches(&paths, loc))
                .filter_map(|(loc, n)| n.as_str().filter(|s| s.starts_with("<S")).map(|s| (loc, s)))
                .collect();
            match m.restore(&x, edited.clone()) {
                Ok(out) => {
                    for (loc, node) in nodes(&out) {
                        if node.as_str() == Some(REDACTED) {
                            prop_assert_eq!(get(&x, &loc), Some(node), "at {}", dotted(&loc));
                        }
                        if let Some(s) = node.as_str()
                            && let Some((home, _)) = secrets.iter().find(|(_, m)| *m == s) {
                                prop_assert_eq!(home, &loc, "{} moved", s);
                            }
                    }
                }
                Err(issues) => {
                    prop_assert!(!issues.is_empty());
                    for i in &issues {
                        prop_assert_eq!(&i.message, super::REENTER);
                        let at = typed(&edited, &i.path);
                        prop_assert_eq!(
                            get(&edited, &at).and_then(Value::as_str),
                            Some(REDACTED),
                            "issue at {} is not a placeholder", i.path
                        );
                    }
                }
            }
        }
    }

    /// (d) `secrets` + `scrub` remove every secret from a message that embeds them.
    #[test]
    fn scrub_removes_every_secret(
        (x, paths) in input_and_paths(),
        filler in "[ -~]{0,8}",
    ) {
        let m = Matcher::new(paths.clone());
        let markers = sensitive_markers(&paths, &[], &x);
        let secrets = m.secrets(&x);
        for marker in &markers {
            prop_assert!(secrets.contains(marker));
        }
        let message = format!(
            "failed{filler}{}{filler}{}",
            markers.join(&filler),
            json(&get(&x, &[]))
        );
        let clean = scrub(&message, &secrets);
        // (An input may hold the literal placeholder as a secret; it is what scrubbing
        // writes, so it is the one secret that may remain.)
        for s in secrets.iter().filter(|s| *s != REDACTED) {
            prop_assert!(!clean.contains(s.as_str()), "{s} in {clean}");
        }
    }

    /// (d) Scrubbing arbitrary secrets out of arbitrary text leaves none of them.
    #[test]
    fn scrub_removes_arbitrary_secrets(
        secrets in prop::collection::vec("[0-9A-Z\u{e9}]{1,4}", 0..=4),
        parts in prop::collection::vec("[0-9A-Z \u{e9}]{0,6}", 0..=6),
    ) {
        let message = parts.join("");
        let clean = scrub(&message, &secrets);
        for s in &secrets {
            prop_assert!(!clean.contains(s.as_str()), "{s} in {clean}");
        }
    }

    /// Serde messages about a sensitive value never quote it after `withhold_value`.
    #[test]
    fn withheld_messages_never_quote_the_value(
        head in prop::sample::select(vec!["", "map, expected ", "integer `", "string \"", "character `"]),
        tail in "[ -~]{0,12}",
        kind in 0u8..6,
    ) {
        use serde::de::{Error as _, Unexpected};
        let value = format!("{head}SECRET{tail}");
        let msg = match kind {
            0 => serde_json::Error::invalid_type(Unexpected::Str(&value), &"u32").to_string(),
            1 => serde_json::Error::invalid_value(Unexpected::Other(&value), &"a pin").to_string(),
            2 => serde_json::Error::unknown_variant(&value, &["Visa", "Amex"]).to_string(),
            3 => serde_json::Error::unknown_variant(&value, &[]).to_string(),
            4 => serde_json::Error::unknown_field(&value, &["a"]).to_string(),
            _ => format!("cards[0].cvc: invalid type: string {value:?}, expected u16"),
        };
        let out = withhold_value(&msg);
        prop_assert!(!out.contains("SECRET"), "{msg} -> {out}");
    }
}
