//! Restoring secrets into an approver's edited input (the "Sensitive values" rule
//! of confirmation).
//!
//! The approver was shown `redact(original)`. Walking the edited value alongside the
//! original:
//!
//! 1. at a sensitive location, the literal `"[redacted]"` gets the original value back
//!    when the original has a value there and every array on the way kept its row
//!    identity; otherwise it is an issue;
//! 2. a sensitive location the approver changed keeps the new value, but a
//!    `"[redacted]"` inside that new value was never shown there: an issue;
//! 3. row identity: an array a sensitive path steps through keeps no row identity when
//!    its length changed; with the same length, row `i` keeps it only when its
//!    non-sensitive values equal the original row `i`'s (sensitive locations ignored on
//!    both sides);
//! 4. under a key the approver restructured (a type change, or a key the original does
//!    not have) no placeholder has a value to take;
//! 5. a `"[redacted]"` where the approver was not shown one (outside the sensitive
//!    paths) is an issue, unless the original held that literal at that position;
//! 6. unreadable paths make the whole input one sensitive value: an approval that sends
//!    it back as `"[redacted]"` restores it, any placeholder inside an edited input is
//!    an issue;
//! 7. an approval that edits nothing restores exactly the original.
//!
//! Every issue is `"Re-enter sensitive field"` at the placeholder's dotted location; all
//! of them are reported, sorted by path.

use serde_json::{Map, Value};

use super::path::{location_steps, push_location, Seg, SegMatch, Step};
use super::redact::{is_placeholder, relate, Matcher, Rel};
use super::REENTER;
use crate::payload::Change;
use crate::payload::Issue;

/// The remaining segments of every sensitive path that leads through a location.
type State<'p> = Vec<&'p [Seg]>;

/// Is a location with this state sensitive (some path ends at or above it)?
fn is_sensitive(state: &[&[Seg]]) -> bool {
    state.iter().any(|rest| rest.is_empty())
}

/// The state one `step` further down.
fn step_state<'p>(state: &[&'p [Seg]], step: Step<'_>) -> State<'p> {
    state
        .iter()
        .filter_map(|rest| match rest.split_first() {
            Some((seg, tail)) if seg.matches(step) => Some(tail),
            _ => None,
        })
        .collect()
}

/// Are `edited` and `original` the same apart from their sensitive locations (which may
/// differ, be missing or be added on either side)?
fn same_row(edited: &Value, original: &Value, state: &[&[Seg]]) -> bool {
    if state.is_empty() {
        return edited == original;
    }
    if is_sensitive(state) {
        return true;
    }
    match (edited, original) {
        (Value::Object(e), Value::Object(o)) => {
            let check = |k: &str, a: Option<&Value>, b: Option<&Value>| {
                let child = step_state(state, Step::Key(k));
                match (a, b) {
                    (Some(a), Some(b)) => same_row(a, b, &child),
                    _ => is_sensitive(&child),
                }
            };
            e.iter().all(|(k, a)| check(k, Some(a), o.get(k)))
                && o.iter()
                    .all(|(k, b)| e.contains_key(k) || check(k, None, Some(b)))
        }
        (Value::Array(e), Value::Array(o)) => {
            e.len() == o.len()
                && e.iter()
                    .zip(o)
                    .enumerate()
                    .all(|(i, (a, b))| same_row(a, b, &step_state(state, Step::Index(i))))
        }
        _ => edited == original,
    }
}

/// One restore walk: collects issues while rebuilding the value.
struct Walk {
    /// Every placeholder that cannot be restored.
    issues: Vec<Issue>,
}

impl Walk {
    /// Records a "Re-enter sensitive field" issue at `loc`.
    fn issue(&mut self, loc: &str) {
        self.issues.push(Issue::new(loc, REENTER));
    }

    /// Records an issue for every placeholder inside `v` (not `v` itself).
    fn flag_nested(&mut self, v: &Value, loc: &mut String) {
        let visit = |this: &mut Self, child: &Value, step: &str, loc: &mut String| {
            let len = loc.len();
            push_location(loc, step);
            if is_placeholder(child) {
                this.issue(loc);
            } else {
                this.flag_nested(child, loc);
            }
            loc.truncate(len);
        };
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    visit(self, child, k, loc);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    visit(self, child, &i.to_string(), loc);
                }
            }
            _ => {}
        }
    }

    /// Restores `edited` at `loc`.
    ///
    /// `restorable` is the original value at this location when it may give its
    /// secrets back (same structure, every row on the way kept its identity);
    /// `positional` is the original value at the same position (what the approver was
    /// shown there, before redaction); `state` says which sensitive paths lead here.
    fn node(
        &mut self,
        edited: Value,
        restorable: Option<&Value>,
        positional: Option<&Value>,
        state: &[&[Seg]],
        loc: &mut String,
    ) -> Value {
        if is_sensitive(state) {
            if is_placeholder(&edited) {
                return match restorable {
                    Some(original) => original.clone(),
                    None => {
                        self.issue(loc);
                        edited
                    }
                };
            }
            self.flag_nested(&edited, loc);
            return edited;
        }
        match edited {
            Value::String(s) if s == super::REDACTED => {
                if !positional.is_some_and(is_placeholder) {
                    self.issue(loc);
                }
                Value::String(s)
            }
            Value::Object(map) => {
                let r = restorable.and_then(Value::as_object);
                let p = positional.and_then(Value::as_object);
                let mut out = Map::new();
                for (k, v) in map {
                    let child = step_state(state, Step::Key(&k));
                    let len = loc.len();
                    push_location(loc, &k);
                    let v = self.node(
                        v,
                        r.and_then(|m| m.get(&k)),
                        p.and_then(|m| m.get(&k)),
                        &child,
                        loc,
                    );
                    loc.truncate(len);
                    out.insert(k, v);
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let r = restorable.and_then(Value::as_array);
                let p = positional.and_then(Value::as_array);
                // Rows keep their identity only when the length is unchanged.
                let same_len = r.is_some_and(|r| r.len() == items.len());
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    let child = step_state(state, Step::Index(i));
                    let row = r
                        .filter(|_| same_len)
                        .and_then(|r| r.get(i))
                        .filter(|o| child.is_empty() || same_row(&v, o, &child));
                    let len = loc.len();
                    push_location(loc, &i.to_string());
                    let v = self.node(v, row, p.and_then(|p| p.get(i)), &child, loc);
                    loc.truncate(len);
                    out.push(v);
                }
                Value::Array(out)
            }
            other => other,
        }
    }
}

/// The edited changes of a `ctx.confirm` approval, read from JSON.
fn parse_changes(edited: Value) -> Result<Vec<Change>, Issue> {
    const SHAPE: &str = "objects {\"path\": string, \"before\": value, \"after\": value}";
    let Value::Array(items) = edited else {
        return Err(Issue::new(
            "",
            format!("The edited changes must be an array of {SHAPE}"),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(mut map) = item else {
            return Err(Issue::new(
                "",
                format!("Edited change {i} is not an object; changes are {SHAPE}"),
            ));
        };
        let Some(Value::String(path)) = map.remove("path") else {
            return Err(Issue::new(
                "",
                format!("Edited change {i} has no \"path\" string; changes are {SHAPE}"),
            ));
        };
        // As `Change` deserializes: a missing or null side is `None`.
        let side = |v: Option<Value>| v.filter(|v| !v.is_null());
        let before = side(map.remove("before"));
        let after = side(map.remove("after"));
        out.push(Change {
            path,
            before,
            after,
        });
    }
    Ok(out)
}

/// Sorts and deduplicates issues; `Ok(value)` when there are none.
fn finish<T>(value: T, mut issues: Vec<Issue>) -> Result<T, Vec<Issue>> {
    if issues.is_empty() {
        return Ok(value);
    }
    issues.sort_by(|a, b| a.path.cmp(&b.path));
    issues.dedup();
    Err(issues)
}

impl Matcher {
    /// The initial walk state at the input's root.
    fn root_state(&self) -> State<'_> {
        self.walk_paths().iter().map(|p| p.segs()).collect()
    }

    /// Restores secrets into an approver's `edited` input.
    ///
    /// `original` is the real input the approver was shown redacted. Returns the input to
    /// validate, or every issue `{path, "Re-enter sensitive field"}` (see the module docs
    /// for the rule).
    pub(crate) fn restore(&self, original: &Value, edited: Value) -> Result<Value, Vec<Issue>> {
        let mut walk = Walk { issues: Vec::new() };
        let state = self.root_state();
        let mut loc = String::new();
        let out = walk.node(edited, Some(original), Some(original), &state, &mut loc);
        finish(out, walk.issues)
    }

    /// The restore rule for `ctx.confirm` changes.
    ///
    /// `original` are the tool's own (unredacted) changes; `edited` is the approver's
    /// JSON array of `{path, before, after}` (a missing or `null` side is `None`). Each
    /// edited change takes the first not yet used original change with the same path,
    /// and its `before` and `after` are restored like [`Matcher::restore`] at that
    /// location; an edited change without such an original has nothing to restore. When
    /// the location steps through `[]` (a change of `cards.0`), the change's value is
    /// one row's content: it restores only when its non-sensitive values are unchanged.
    /// Issue paths join the change's path and the path inside its value
    /// (`cards.0.cvc`); a malformed `edited` is one issue at `""`.
    pub(crate) fn restore_changes(
        &self,
        original: &[Change],
        edited: Value,
    ) -> Result<Vec<Change>, Vec<Issue>> {
        let parsed = parse_changes(edited).map_err(|issue| vec![issue])?;
        let mut used = vec![false; original.len()];
        let mut walk = Walk { issues: Vec::new() };
        let mut out = Vec::with_capacity(parsed.len());
        for Change {
            path,
            before,
            after,
        } in parsed
        {
            let orig = original
                .iter()
                .enumerate()
                .find(|(i, c)| !used.get(*i).copied().unwrap_or(true) && c.path == path)
                .map(|(i, c)| {
                    if let Some(u) = used.get_mut(i) {
                        *u = true;
                    }
                    c
                });
            let steps = location_steps(&path);
            let mut state: State<'_> = Vec::new();
            let mut through_rows = false;
            for p in self.walk_paths() {
                match relate(p.segs(), &steps) {
                    Rel::Inside => state.push(&[]),
                    Rel::Below(rest) => state.push(rest),
                    Rel::Apart => continue,
                }
                let on_way = &p.segs()[..steps.len().min(p.segs().len())];
                through_rows |= on_way.contains(&Seg::Any);
            }
            let mut side = |edited: Option<Value>, original: Option<&Value>| {
                let edited = edited?;
                let restorable = original
                    .filter(|o| !through_rows || state.is_empty() || same_row(&edited, o, &state));
                let mut loc = path.clone();
                Some(walk.node(edited, restorable, original, &state, &mut loc))
            };
            let before = side(before, orig.and_then(|c| c.before.as_ref()));
            let after = side(after, orig.and_then(|c| c.after.as_ref()));
            out.push(Change {
                path,
                before,
                after,
            });
        }
        finish(out, walk.issues)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sensitive::SensitivePath;

    fn m(paths: &[&str]) -> Matcher {
        Matcher::new(
            paths
                .iter()
                .map(|p| SensitivePath::parse(p).expect("test path parses"))
                .collect(),
        )
    }

    fn cards() -> Matcher {
        m(&["cards[].cvc"])
    }

    fn original() -> Value {
        json!({
            "title": "Robotics",
            "cards": [
                { "number": "4242", "cvc": "123" },
                { "number": "5555", "cvc": "987" }
            ]
        })
    }

    fn issues(paths: &[&str]) -> Vec<Issue> {
        paths.iter().map(|p| Issue::new(*p, REENTER)).collect()
    }

    fn shown() -> Value {
        cards().redact(&original())
    }

    #[test]
    fn approval_that_edits_nothing_restores_the_real_input() {
        assert_eq!(cards().restore(&original(), shown()), Ok(original()));
    }

    #[test]
    fn placeholder_left_at_sensitive_path_gets_real_value_back() {
        let mut edited = shown();
        edited["title"] = json!("Robotics 2");
        let mut want = original();
        want["title"] = json!("Robotics 2");
        assert_eq!(cards().restore(&original(), edited), Ok(want));
    }

    #[test]
    fn secret_is_never_replaced_by_the_placeholder() {
        let out = cards().restore(&original(), shown()).expect("restores");
        assert!(!serde_json::to_string(&out)
            .expect("json")
            .contains("[redacted]"));
    }

    #[test]
    fn changed_sensitive_value_keeps_new_value() {
        let mut edited = shown();
        edited["cards"][1]["cvc"] = json!("000");
        let mut want = original();
        want["cards"][1]["cvc"] = json!("000");
        assert_eq!(cards().restore(&original(), edited), Ok(want));
    }

    #[test]
    fn changed_sensitive_value_with_placeholder_inside_needs_reentry() {
        let mm = m(&["card"]);
        let orig = json!({ "card": { "number": "4242", "cvc": "123" } });
        let edited = json!({ "card": { "number": "4242", "cvc": "[redacted]" } });
        assert_eq!(mm.restore(&orig, edited), Err(issues(&["card.cvc"])));
    }

    #[test]
    fn placeholder_in_deleted_row_array_needs_reentry() {
        let mut edited = shown();
        edited["cards"].as_array_mut().expect("array").remove(0);
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.0.cvc"]))
        );
    }

    #[test]
    fn placeholder_in_inserted_row_array_needs_reentry() {
        let mut edited = shown();
        edited["cards"]
            .as_array_mut()
            .expect("array")
            .push(json!({ "number": "1111", "cvc": "222" }));
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.0.cvc", "cards.1.cvc"]))
        );
    }

    #[test]
    fn placeholder_in_reordered_row_needs_reentry() {
        let mut edited = shown();
        edited["cards"].as_array_mut().expect("array").swap(0, 1);
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.0.cvc", "cards.1.cvc"]))
        );
    }

    #[test]
    fn placeholder_in_edited_row_needs_reentry() {
        let mut edited = shown();
        edited["cards"][1]["number"] = json!("5556");
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.1.cvc"]))
        );
    }

    #[test]
    fn changed_secret_does_not_break_row_identity() {
        // Row 0's secret changes; row 1 (unchanged) still gets its secret back.
        let mut edited = shown();
        edited["cards"][0]["cvc"] = json!("321");
        let mut want = original();
        want["cards"][0]["cvc"] = json!("321");
        assert_eq!(cards().restore(&original(), edited), Ok(want));
    }

    #[test]
    fn row_with_new_secret_after_reorder_keeps_it() {
        let mut edited = shown();
        edited["cards"].as_array_mut().expect("array").swap(0, 1);
        edited["cards"][0]["cvc"] = json!("987");
        edited["cards"][1]["cvc"] = json!("123");
        let want = json!({
            "title": "Robotics",
            "cards": [
                { "number": "5555", "cvc": "987" },
                { "number": "4242", "cvc": "123" }
            ]
        });
        assert_eq!(cards().restore(&original(), edited), Ok(want));
    }

    #[test]
    fn placeholder_under_restructured_key_needs_reentry() {
        // The array became an object: its rows are not the original rows.
        let edited = json!({
            "title": "Robotics",
            "cards": { "0": { "number": "4242", "cvc": "[redacted]" } }
        });
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.0.cvc"]))
        );
        let mm = m(&["profile.ssn"]);
        let orig = json!({ "profile": "none" });
        let edited = json!({ "profile": { "ssn": "[redacted]" } });
        assert_eq!(mm.restore(&orig, edited), Err(issues(&["profile.ssn"])));
    }

    #[test]
    fn placeholder_under_key_missing_from_original_needs_reentry() {
        let mm = m(&["backup.cvc"]);
        let orig = json!({ "title": "x" });
        let edited = json!({ "title": "x", "backup": { "cvc": "[redacted]" } });
        assert_eq!(mm.restore(&orig, edited), Err(issues(&["backup.cvc"])));
    }

    #[test]
    fn placeholder_outside_sensitive_paths_is_refused() {
        let mut edited = shown();
        edited["title"] = json!("[redacted]");
        edited["cards"][0]["number"] = json!("[redacted]");
        assert_eq!(
            cards().restore(&original(), edited),
            Err(issues(&["cards.0.cvc", "cards.0.number", "title"]))
        );
        // With nothing sensitive at all.
        assert_eq!(
            Matcher::none().restore(&json!({ "a": "x" }), json!({ "a": "[redacted]" })),
            Err(issues(&["a"]))
        );
    }

    #[test]
    fn literal_placeholder_the_approver_was_shown_is_kept() {
        let orig = json!({ "title": "[redacted]", "cards": [] });
        assert_eq!(cards().restore(&orig, orig.clone()), Ok(orig.clone()));
        // A literal moved to a position that held something else is refused.
        let orig = json!({ "notes": ["[redacted]", "x"] });
        let edited = json!({ "notes": ["x", "[redacted]"] });
        assert_eq!(
            Matcher::none().restore(&orig, edited),
            Err(issues(&["notes.1"]))
        );
    }

    #[test]
    fn unreadable_paths_refuse_any_placeholder() {
        let u = Matcher::unreadable();
        let orig = original();
        let edited = json!({ "title": "[redacted]", "cards": [{ "cvc": "[redacted]" }] });
        assert_eq!(
            u.restore(&orig, edited),
            Err(issues(&["cards.0.cvc", "title"]))
        );
        // An edit without placeholders is taken as it is.
        let edited = json!({ "title": "T", "cards": [] });
        assert_eq!(u.restore(&orig, edited.clone()), Ok(edited));
        // Sending back exactly what was shown (the whole input redacted) edits nothing.
        assert_eq!(u.restore(&orig, u.redact(&orig)), Ok(orig));
    }

    #[test]
    fn approver_reenters_the_value_and_approves_again() {
        let mut edited = shown();
        edited["cards"].as_array_mut().expect("array").swap(0, 1);
        assert!(cards().restore(&original(), edited.clone()).is_err());
        edited["cards"][0]["cvc"] = json!("987");
        edited["cards"][1]["cvc"] = json!("123");
        assert!(cards().restore(&original(), edited).is_ok());
    }

    #[test]
    fn all_issues_are_reported_sorted() {
        let mm = m(&["cards[].cvc", "pin"]);
        let orig = json!({ "pin": "1", "cards": [{ "n": 1, "cvc": "a" }] });
        let edited = json!({ "pin": "[redacted]", "x": "[redacted]", "cards": [{ "n": 2, "cvc": "[redacted]" }] });
        assert_eq!(
            mm.restore(&orig, edited),
            Err(issues(&["cards.0.cvc", "x"]))
        );
    }

    #[test]
    fn nested_arrays_check_identity_at_every_level() {
        let mm = m(&["groups[].cards[].cvc"]);
        let orig = json!({ "groups": [
            { "name": "a", "cards": [{ "n": 1, "cvc": "x" }, { "n": 2, "cvc": "y" }] },
            { "name": "b", "cards": [{ "n": 3, "cvc": "z" }] }
        ] });
        assert_eq!(mm.restore(&orig, mm.redact(&orig)), Ok(orig.clone()));
        // Editing an inner row's public value breaks only the groups containing it.
        let mut edited = mm.redact(&orig);
        edited["groups"][0]["cards"][1]["n"] = json!(20);
        assert_eq!(
            mm.restore(&orig, edited),
            Err(issues(&["groups.0.cards.0.cvc", "groups.0.cards.1.cvc"]))
        );
    }

    #[test]
    fn null_secret_is_restored() {
        let mm = m(&["pin"]);
        let orig = json!({ "pin": null });
        assert_eq!(mm.restore(&orig, mm.redact(&orig)), Ok(orig));
    }

    fn changes_json(c: &[Change]) -> Value {
        serde_json::to_value(c).expect("changes serialize")
    }

    fn tool_changes() -> Vec<Change> {
        vec![
            Change {
                path: "cards.1".into(),
                before: Some(json!({ "number": "5555", "cvc": "987" })),
                after: Some(json!({ "number": "5555", "cvc": "988" })),
            },
            Change {
                path: "cards.0.cvc".into(),
                before: Some(json!("123")),
                after: Some(json!("124")),
            },
            Change {
                path: "title".into(),
                before: None,
                after: Some(json!("Robotics")),
            },
        ]
    }

    #[test]
    fn unedited_changes_are_restored_exactly() {
        let mm = cards();
        let shown = changes_json(&mm.redact_changes(&tool_changes()));
        match mm.restore_changes(&tool_changes(), shown) {
            Ok(got) => assert_eq!(changes_json(&got), changes_json(&tool_changes())),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn changes_follow_the_same_rule_with_joined_issue_paths() {
        let mm = cards();
        let edited = json!([
            // A row change whose public value was edited: its cvc cannot come back.
            { "path": "cards.1",
              "before": { "number": "5555", "cvc": "[redacted]" },
              "after": { "number": "5550", "cvc": "[redacted]" } },
            // A new secret at a sensitive location is kept.
            { "path": "cards.0.cvc", "before": "[redacted]", "after": "999" },
            // A placeholder outside the sensitive paths.
            { "path": "title", "after": "[redacted]" },
            // A change the tool never proposed.
            { "path": "cards.2", "after": { "number": "1", "cvc": "[redacted]" } }
        ]);
        match mm.restore_changes(&tool_changes(), edited) {
            Ok(_) => panic!("placeholders without values were accepted"),
            Err(e) => assert_eq!(e, issues(&["cards.1.cvc", "cards.2.cvc", "title"])),
        }
    }

    #[test]
    fn changes_restore_secrets_and_keep_new_values() {
        let mm = cards();
        let edited = json!([
            { "path": "cards.0.cvc", "before": "[redacted]", "after": "999" },
            { "path": "cards.1", "before": { "number": "5555", "cvc": "[redacted]" },
              "after": { "number": "5555", "cvc": "[redacted]" } }
        ]);
        match mm.restore_changes(&tool_changes(), edited) {
            Ok(got) => assert_eq!(
                changes_json(&got),
                json!([
                    { "path": "cards.0.cvc", "before": "123", "after": "999" },
                    { "path": "cards.1", "before": { "number": "5555", "cvc": "987" },
                      "after": { "number": "5555", "cvc": "988" } }
                ])
            ),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn changes_with_the_same_path_pair_up_in_order() {
        let mm = m(&["pin"]);
        let orig = vec![
            Change {
                path: "pin".into(),
                before: None,
                after: Some(json!("1")),
            },
            Change {
                path: "pin".into(),
                before: None,
                after: Some(json!("2")),
            },
        ];
        let shown = changes_json(&mm.redact_changes(&orig));
        match mm.restore_changes(&orig, shown) {
            Ok(got) => assert_eq!(changes_json(&got), changes_json(&orig)),
            Err(e) => panic!("{e:?}"),
        }
        let three = json!([
            { "path": "pin", "after": "[redacted]" },
            { "path": "pin", "after": "[redacted]" },
            { "path": "pin", "after": "[redacted]" }
        ]);
        match mm.restore_changes(&orig, three) {
            Ok(_) => panic!("third placeholder has no original"),
            Err(e) => assert_eq!(e, issues(&["pin"])),
        }
    }

    #[test]
    fn malformed_edited_changes_are_one_issue() {
        let mm = cards();
        for bad in [
            json!({ "path": "x" }),
            json!(["x"]),
            json!([{ "before": 1 }]),
            json!([{ "path": 3 }]),
        ] {
            match mm.restore_changes(&tool_changes(), bad) {
                Ok(_) => panic!("malformed changes accepted"),
                Err(e) => {
                    assert_eq!(e.len(), 1);
                    assert_eq!(e[0].path, "");
                    assert!(e[0].message.contains("\"path\""), "{}", e[0].message);
                }
            }
        }
    }

    #[test]
    fn unreadable_paths_refuse_placeholders_in_changes() {
        let u = Matcher::unreadable();
        let orig = tool_changes();
        let shown = changes_json(&u.redact_changes(&orig));
        assert_eq!(shown[0]["after"], json!("[redacted]"));
        match u.restore_changes(&orig, shown) {
            Ok(got) => assert_eq!(changes_json(&got), changes_json(&orig)),
            Err(e) => panic!("{e:?}"),
        }
        let edited =
            json!([{ "path": "cards.1", "after": { "number": "5555", "cvc": "[redacted]" } }]);
        match u.restore_changes(&orig, edited) {
            Ok(_) => panic!("placeholder accepted while unreadable"),
            Err(e) => assert_eq!(e, issues(&["cards.1.cvc"])),
        }
    }
}
