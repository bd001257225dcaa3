//! The one way out: a call's [`SecretSet`], and [`Observed`], the only type of value
//! that may leave the runtime toward an observer.
//!
//! A call's secret set is every value its tool's decode can read at a sensitive
//! path: the values at the sensitive paths of its input (and the map keys inside
//! them), the values under keys the input schema does not list (a serde `alias`, a
//! case variant: serde may read them into a sensitive field), and the sensitive
//! values of the state the tool works on (a form's or a wizard's values). Each is
//! kept as text in every form a message may show it (as is, JSON-escaped,
//! `Debug`-escaped).
//!
//! An [`Observed`] value can only be built here, by a secret set (or, for a
//! refusal with a fixed message, from a `&'static str`, which holds nothing of any
//! call): the pipeline hands every surface (outcome, bridge message, pub/sub
//! message, provider result, MCP result, span field) an `Observed` value, so a
//! surface cannot forget to redact and never redacts on its own.
//!
//! On the same path, every string an attacker controls is bounded: an issue path
//! (key names) keeps at most [`MAX_PATH_CHARS`] characters, an issue message
//! [`MAX_ISSUE_CHARS`], a refusal's own message [`MAX_MESSAGE_CHARS`], a tool's
//! error message [`MAX_ERROR_CHARS`], a summary [`SUMMARY_CHARS`], and an object key
//! in recorded arguments [`MAX_PATH_CHARS`].

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::keys::KeyTree;
use super::message::{scrub, withhold_value};
use super::redact::Matcher;
use super::REDACTED;
use crate::call::outcome::{Outcome, Refusal, ToolError};
use crate::payload::{Change, Issue};

/// The sensitive values of the state a tool works on now (a form's values at its
/// sensitive paths), as the text forms [`Matcher::secrets`] gives.
pub(crate) type StateSecretsFn = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// The most characters an issue path keeps (a longer one ends in `…`).
pub(crate) const MAX_PATH_CHARS: usize = 200;
/// The most characters an issue message keeps.
pub(crate) const MAX_ISSUE_CHARS: usize = 300;
/// The most characters a refusal's own message keeps.
pub(crate) const MAX_MESSAGE_CHARS: usize = 600;
/// The most characters a tool's error message keeps.
pub(crate) const MAX_ERROR_CHARS: usize = 4000;
/// The most characters a confirmation summary keeps.
pub(crate) const SUMMARY_CHARS: usize = 200;

/// Cut `s` to at most `max` characters, the last one `…` when cut, never inside a
/// character.
pub(crate) fn bound(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    if let Some((cut, _)) = s.char_indices().nth(max.saturating_sub(1))
        && s[cut..].chars().nth(1).is_some()
    {
        s.truncate(cut);
        s.push('…');
    }
}

/// [`bound`] on a borrowed string: a copy only when it must be cut.
pub(crate) fn bounded(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max || s.chars().nth(max).is_none() {
        std::borrow::Cow::Borrowed(s)
    } else {
        let mut owned = s.to_owned();
        bound(&mut owned, max);
        std::borrow::Cow::Owned(owned)
    }
}

/// A value fit for an observer: built only by a [`SecretSet`] (which scrubbed it of
/// the call's secrets and bounded what an attacker controls in it), or from text
/// fixed at compile time.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub(crate) struct Observed<T>(T);

impl<T> Observed<T> {
    /// The value, to hand to the surface.
    pub(crate) fn into_inner(self) -> T {
        self.0
    }

    /// The value, borrowed.
    pub(crate) fn get(&self) -> &T {
        &self.0
    }
}

impl Observed<Outcome> {
    /// A refusal whose message is fixed at compile time: nothing of a call is in it.
    pub(crate) fn fixed(code: crate::RefusalCode, message: &'static str) -> Self {
        Observed(Outcome::refused(code, message))
    }
}

impl Observed<crate::BridgeMessage> {
    /// The bridge message of a resolved confirmation: its outcome is observed already
    /// (the id is the runtime's own, the tool name a registered one).
    pub(crate) fn confirmed(confirm_id: &str, tool: &str, outcome: Observed<Outcome>) -> Self {
        Observed(crate::BridgeMessage::Confirmed {
            confirm_id: confirm_id.to_owned(),
            tool: tool.to_owned(),
            outcome: outcome.0,
        })
    }

    /// The message that tells a subscriber it missed `missed` messages.
    pub(crate) fn lagged(missed: u64) -> Self {
        Observed(crate::BridgeMessage::Lagged { missed })
    }
}

/// What an approver, the pending list, the `confirmation_requested` event, a
/// stored record and a `needs_confirmation` outcome show of a call waiting for
/// confirmation. Only a [`SecretSet`] makes one (as [`Observed<View>`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct View {
    /// The summary, one line, scrubbed and bounded.
    pub(crate) summary: String,
    /// The changes, redacted at sensitive paths, scrubbed, paths bounded.
    pub(crate) changes: Vec<Change>,
    /// The input, `"[redacted]"` at every sensitive path and every secret scrubbed
    /// from the rest; `None`: the input itself (a call with no secret at all, whose
    /// input is kept once).
    pub(crate) shown: Option<Value>,
}

/// An [`Observed<View>`] as a deferred confirmation keeps it for as long as it
/// waits: the summary at its exact size, and the changes and shown input (which
/// most calls do not have) boxed together. Made only from an `Observed<View>` and
/// read only through its accessors, so what it holds is what the call's secret set
/// built.
pub(crate) struct CompactView {
    summary: Box<str>,
    rest: Option<Box<(Vec<Change>, Option<Value>)>>,
}

impl CompactView {
    /// The summary.
    pub(crate) fn summary(&self) -> &str {
        &self.summary
    }

    /// The changes.
    pub(crate) fn changes(&self) -> &[Change] {
        self.rest.as_deref().map_or(&[], |(c, _)| c.as_slice())
    }

    /// The input as shown, when it differs from the input.
    pub(crate) fn shown(&self) -> Option<&Value> {
        self.rest.as_deref().and_then(|(_, s)| s.as_ref())
    }
}

impl Observed<View> {
    /// The view, kept small (see [`CompactView`]).
    pub(crate) fn compact(self) -> CompactView {
        let View {
            summary,
            changes,
            shown,
        } = self.0;
        CompactView {
            summary: summary.into_boxed_str(),
            rest: (!changes.is_empty() || shown.is_some()).then(|| Box::new((changes, shown))),
        }
    }

    /// The `needs_confirmation` outcome of a kept call whose view is kept
    /// [`compact`](Self::compact): the summary as made (with room to spare) goes
    /// to the outcome, and this view keeps a copy of exactly its size, so
    /// compacting it copies nothing again. The same text either way.
    pub(crate) fn needs_confirmation(
        &mut self,
        confirm_id: &str,
        expires_at: std::time::SystemTime,
    ) -> Observed<Outcome> {
        let exact = String::from(self.0.summary.as_str());
        let summary = std::mem::replace(&mut self.0.summary, exact);
        self.needs_confirmation_with(confirm_id, summary, expires_at)
    }

    /// The `needs_confirmation` outcome of this view, with `summary` (this view's
    /// own summary, as text).
    fn needs_confirmation_with(
        &self,
        confirm_id: &str,
        summary: String,
        expires_at: std::time::SystemTime,
    ) -> Observed<Outcome> {
        Observed(Outcome::NeedsConfirmation {
            confirm_id: confirm_id.to_owned(),
            summary,
            changes: self.0.changes.clone(),
            expires_at,
        })
    }
}

/// The secrets of one call (see the [module docs](self)). Empty for a tool with
/// no sensitive paths and no sensitive state: building and using it then costs
/// nothing.
#[derive(Clone, Default)]
pub(crate) struct SecretSet {
    inner: Option<Arc<SetInner>>,
}

struct SetInner {
    matcher: Matcher,
    /// Non-empty text forms, longest first, without repeats.
    texts: Arc<[String]>,
}

impl std::fmt::Debug for SecretSet {
    /// The number of secrets, never one of them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSet")
            .field("secrets", &self.texts().len())
            .finish()
    }
}

impl SecretSet {
    /// No secrets.
    pub(crate) const fn none() -> SecretSet {
        SecretSet { inner: None }
    }

    /// The secret set of a call of a tool whose sensitive paths are `matcher`, with
    /// `input`: the values at the sensitive paths, the values under keys `keys` (the
    /// input schema) does not list, and the sensitive values of the tool's `state`.
    pub(crate) fn of_call(
        matcher: &Matcher,
        input: &Value,
        keys: Option<&KeyTree>,
        state: Option<&StateSecretsFn>,
    ) -> SecretSet {
        if matcher.is_empty() && state.is_none() {
            return SecretSet::none();
        }
        let mut texts = matcher.secrets(input);
        if !matcher.is_empty()
            && let Some(keys) = keys
        {
            keys.unlisted_leaves(input, &mut texts);
        }
        if let Some(state) = state {
            // A panicking state reader counts as one with no secrets beyond the input's.
            if let Ok(more) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state())) {
                texts.extend(more);
            }
        }
        SecretSet::from_texts(matcher.clone(), texts)
    }

    /// A set of `texts` (any order) for a tool whose sensitive paths are `matcher`.
    pub(crate) fn from_texts(matcher: Matcher, mut texts: Vec<String>) -> SecretSet {
        texts.retain(|s| !s.is_empty());
        texts.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        texts.dedup();
        SecretSet {
            inner: Some(Arc::new(SetInner {
                matcher,
                texts: texts.into(),
            })),
        }
    }

    /// This set and `more` secrets (the state a tool read while it ran).
    pub(crate) fn with_more(&self, more: Vec<String>) -> SecretSet {
        if more.is_empty() {
            return self.clone();
        }
        let mut texts = self.texts().to_vec();
        texts.extend(more);
        let matcher = self.matcher().cloned().unwrap_or_else(Matcher::none);
        SecretSet::from_texts(matcher, texts)
    }

    /// Whether there is nothing to scrub.
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.as_ref().is_none_or(|i| i.texts.is_empty())
    }

    /// The secrets' text forms, longest first.
    pub(crate) fn texts(&self) -> &[String] {
        self.inner.as_ref().map_or(&[], |i| &i.texts)
    }

    /// The texts, shared (for the panic hook of the run).
    #[inline]
    pub(crate) fn shared_texts(&self) -> Option<Arc<[String]>> {
        self.inner
            .as_ref()
            .filter(|i| !i.texts.is_empty())
            .map(|i| Arc::clone(&i.texts))
    }

    fn matcher(&self) -> Option<&Matcher> {
        self.inner.as_ref().map(|i| &i.matcher)
    }

    /// `text` with every secret replaced by `"[redacted]"`.
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        if self.is_empty() {
            text.to_owned()
        } else {
            scrub(text, self.texts())
        }
    }

    fn scrub_in_place(&self, text: &mut String) {
        if !self.is_empty() {
            let texts = self.texts();
            if texts.iter().any(|s| text.contains(s.as_str())) {
                *text = scrub(text, texts);
            }
        }
    }

    /// `value` with every secret scrubbed from every string (values and object
    /// keys): a string equal to a secret becomes `"[redacted]"`, a secret inside a
    /// longer string is replaced there, and a number written like a secret becomes
    /// `"[redacted]"`. A transformed secret (upper-cased, sliced, encoded) cannot be
    /// recognized.
    pub(crate) fn scrub_value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        self.scrub_walk(value)
    }

    fn scrub_walk(&self, value: Value) -> Value {
        match value {
            Value::String(mut s) => {
                self.scrub_in_place(&mut s);
                Value::String(s)
            }
            Value::Number(n) => {
                let text = n.to_string();
                if self.texts().contains(&text) {
                    Value::String(REDACTED.to_owned())
                } else {
                    Value::Number(n)
                }
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.scrub_walk(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(mut k, v)| {
                        self.scrub_in_place(&mut k);
                        (k, self.scrub_walk(v))
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    /// Issues fit for an observer: a message at a sensitive location never quotes
    /// the value, no message holds a secret, a map key inside a sensitive value is
    /// shown as `"[redacted]"` in the path, and paths and messages are bounded.
    pub(crate) fn issues(&self, issues: Vec<Issue>) -> Vec<Issue> {
        self.issues_with(issues, true)
    }

    fn issues_with(&self, mut issues: Vec<Issue>, withhold: bool) -> Vec<Issue> {
        let matcher = self.matcher().filter(|m| !m.is_empty());
        for issue in &mut issues {
            // Scrubbed first: withholding cuts a message at the first quote, which
            // may sit inside a secret and leave its start behind.
            self.scrub_in_place(&mut issue.message);
            if let Some(m) = matcher {
                if withhold && m.matches(&issue.path) {
                    issue.message = withhold_value(&issue.message);
                }
                if let Some(path) = m.redact_location(&issue.path) {
                    issue.path = path;
                }
            }
            self.scrub_in_place(&mut issue.path);
            bound(&mut issue.path, MAX_PATH_CHARS);
            bound(&mut issue.message, MAX_ISSUE_CHARS);
        }
        issues
    }

    /// A tool's error with its message and issues kept free of secrets, bounded.
    pub(crate) fn error(&self, mut e: ToolError) -> ToolError {
        self.scrub_in_place(&mut e.message);
        bound(&mut e.message, MAX_ERROR_CHARS);
        e.issues = self.issues(e.issues);
        e
    }

    fn refusal(&self, mut r: Refusal) -> Refusal {
        // The count a capped refusal ends with ("and 19980 more issues", "… (and
        // 19999 more)") is the runtime's own text: a secret that happens to be a
        // number (a value under an unlisted key) must not blank it out.
        let count = count_tail(&r);
        let (head, tail) = r
            .message
            .split_at(r.message.len() - count.map_or(0, |(m, _)| m));
        let (mut head, tail) = (head.to_owned(), tail.to_owned());
        self.scrub_in_place(&mut head);
        head.push_str(&tail);
        r.message = head;
        bound(&mut r.message, MAX_MESSAGE_CHARS);
        // Issues were made safe where they were found; this pass only scrubs and
        // bounds them again (it never rewrites a message twice).
        let last = count
            .and_then(|(_, issue)| issue)
            .and_then(|_| r.issues.pop());
        r.issues = self.issues_with(r.issues, false);
        r.issues.extend(last);
        r
    }

    fn changes(&self, changes: Vec<Change>) -> Vec<Change> {
        // Most calls have none: nothing to walk (the collect below is not free).
        if changes.is_empty() {
            return changes;
        }
        changes
            .into_iter()
            .map(|mut c| {
                self.scrub_in_place(&mut c.path);
                bound(&mut c.path, MAX_PATH_CHARS);
                Change {
                    path: c.path,
                    before: c.before.map(|v| self.scrub_value(v)),
                    after: c.after.map(|v| self.scrub_value(v)),
                }
            })
            .collect()
    }

    /// The outcome of the call, fit for every observer: its output, messages,
    /// issues, summary and changes scrubbed of the call's secrets, and what an
    /// attacker controls in it bounded.
    #[inline]
    pub(crate) fn outcome(&self, outcome: Outcome) -> Observed<Outcome> {
        // The hot path: a tool's output with no secret to look for is as it is.
        if self.inner.is_none() && outcome.is_ok() {
            return Observed(outcome);
        }
        self.outcome_slow(outcome)
    }

    #[inline(never)]
    fn outcome_slow(&self, outcome: Outcome) -> Observed<Outcome> {
        Observed(match outcome {
            Outcome::Ok { output } => Outcome::Ok {
                output: self.scrub_value(output),
            },
            Outcome::Refused(r) => Outcome::Refused(self.refusal(r)),
            Outcome::Error(e) => Outcome::Error(self.error(e)),
            Outcome::NeedsConfirmation {
                confirm_id,
                mut summary,
                changes,
                expires_at,
            } => {
                self.scrub_in_place(&mut summary);
                bound(&mut summary, SUMMARY_CHARS);
                Outcome::NeedsConfirmation {
                    confirm_id,
                    summary,
                    changes: self.changes(changes),
                    expires_at,
                }
            }
        })
    }

    /// A call's arguments as an observer may see them (a span field, a log):
    /// `"[redacted]"` at every sensitive path and under every key `keys` does not
    /// list, every secret scrubbed from the rest, object keys bounded.
    pub(crate) fn arguments(&self, input: &Value, keys: Option<&KeyTree>) -> Observed<Value> {
        let mut out = match self.matcher() {
            Some(m) => m.redact(input),
            None => input.clone(),
        };
        if let (Some(keys), Some(m)) = (keys, self.matcher())
            && !m.is_empty()
        {
            keys.redact_unlisted(&mut out);
        }
        Observed(bound_keys(self.scrub_value(out)))
    }

    /// What observers of a call waiting for confirmation see (see [`View`]): the
    /// input redacted by `matcher` (the tool's sensitive paths) and scrubbed of this
    /// set, the `summary` and `changes` (already redacted at sensitive paths)
    /// scrubbed and bounded. With nothing to hide (no sensitive path, no secret) and
    /// `plain_copy` false, the input is not copied (`shown: None`).
    pub(crate) fn view(
        &self,
        matcher: &Matcher,
        input: &Value,
        summary: String,
        changes: Vec<Change>,
        plain_copy: bool,
    ) -> Observed<View> {
        let hide = !matcher.is_empty() || !self.is_empty();
        let shown = (hide || plain_copy).then(|| {
            let redacted = if matcher.is_empty() {
                input.clone()
            } else {
                matcher.redact(input)
            };
            bound_keys(self.scrub_value(redacted))
        });
        self.reviewed(View {
            summary,
            changes,
            shown,
        })
    }

    /// `view` made fit for observers: scrubbed of this set, bounded. A view opened
    /// from a sealed record passes here again (with the empty set: it was scrubbed
    /// when it was made, and the seal authenticates it), so every [`View`] a
    /// surface reads comes out of a `SecretSet`.
    pub(crate) fn reviewed(&self, view: View) -> Observed<View> {
        let View {
            mut summary,
            changes,
            shown,
        } = view;
        self.scrub_in_place(&mut summary);
        bound(&mut summary, SUMMARY_CHARS);
        Observed(View {
            summary,
            changes: self.changes(changes),
            shown: shown.map(|v| self.scrub_value(v)),
        })
    }

    /// Text fit for an observer.
    pub(crate) fn text(&self, text: &str) -> Observed<String> {
        Observed(self.scrub_text(text))
    }
}

/// The runtime's count at the end of a capped `invalid` refusal: the length of its
/// message's `" (and N more)"` suffix, and whether its last issue is the
/// `"and N more issues"` one (only a refusal cut to the cap ends with it).
fn count_tail(r: &Refusal) -> Option<(usize, Option<()>)> {
    if r.code != crate::RefusalCode::Invalid {
        return None;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let suffix = r
        .message
        .rfind(" (and ")
        .filter(|&at| {
            r.message[at..]
                .strip_prefix(" (and ")
                .and_then(|t| t.strip_suffix(" more)"))
                .is_some_and(digits)
        })
        .map_or(0, |at| r.message.len() - at);
    let issue = (r.issues.len() == crate::call::outcome::MAX_ISSUES + 1
        && r.issues.last().is_some_and(|i| {
            i.path.is_empty()
                && i.message
                    .strip_prefix("and ")
                    .and_then(|t| t.strip_suffix(" more issues"))
                    .is_some_and(digits)
        }))
    .then_some(());
    (suffix > 0 || issue.is_some()).then_some((suffix, issue))
}

/// `value` with every object key cut to [`MAX_PATH_CHARS`].
fn bound_keys(mut value: Value) -> Value {
    bound_keys_in(&mut value);
    value
}

/// [`bound_keys`] in place: an object is rebuilt only when one of its own keys is
/// cut (two keys cut to the same text keep the later one's value, as a map built
/// in key order does); every other value stays where it is.
fn bound_keys_in(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let cut = |k: &str| matches!(bounded(k, MAX_PATH_CHARS), Cow::Owned(_));
            if map.keys().any(|k| cut(k)) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, mut v)| {
                        bound_keys_in(&mut v);
                        let k = match bounded(&k, MAX_PATH_CHARS) {
                            Cow::Borrowed(_) => k,
                            Cow::Owned(cut) => cut,
                        };
                        (k, v)
                    })
                    .collect();
            } else {
                map.values_mut().for_each(bound_keys_in);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_keys_in),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sensitive::SensitivePath;

    fn set(paths: &[&str], input: &Value) -> SecretSet {
        let m = Matcher::new(
            paths
                .iter()
                .map(|p| SensitivePath::parse(p).unwrap())
                .collect(),
        );
        SecretSet::of_call(&m, input, None, None)
    }

    #[test]
    fn bound_cuts_on_a_character_and_marks_the_cut() {
        let mut s = "é".repeat(10);
        bound(&mut s, 4);
        assert_eq!(s, "ééé…");
        let mut exact = "abcd".to_owned();
        bound(&mut exact, 4);
        assert_eq!(exact, "abcd");
        assert_eq!(bounded("abcdef", 3), "ab…");
    }

    #[test]
    fn an_outcome_is_scrubbed_everywhere_a_secret_can_hide() {
        let s = set(&["cvc"], &json!({"cvc": "SECRET-1", "n": 7}));
        let out = s
            .outcome(Outcome::Ok {
                output: json!({"a": "x SECRET-1 y", "SECRET-1": ["SECRET-1"]}),
            })
            .into_inner();
        assert!(!out.output().unwrap().to_string().contains("SECRET-1"));
        let err = s
            .outcome(Outcome::Error(
                ToolError::new("bad SECRET-1").with_issues(vec![Issue::new("cvc", "SECRET-1")]),
            ))
            .into_inner();
        assert!(!format!("{err:?}").contains("SECRET-1"));
    }

    #[test]
    fn a_secret_with_a_quote_is_scrubbed_before_the_message_is_withheld() {
        let secret = "abcdefgh\"q\\ijkl";
        let s = set(&["cvc"], &json!({ "cvc": secret }));
        let issues = s.issues(vec![Issue::new("cvc", format!("{secret} is wrong"))]);
        assert!(!issues[0].message.contains("abcdefgh"), "{issues:?}");
        assert!(!issues[0].message.contains("ijkl"), "{issues:?}");
    }

    #[test]
    fn a_number_written_like_a_secret_is_redacted() {
        let s = set(&["pin"], &json!({"pin": 7310}));
        assert_eq!(
            s.scrub_value(json!({"echo": 7310, "other": 7311})),
            json!({"echo": "[redacted]", "other": 7311})
        );
    }

    #[test]
    fn a_kept_view_answers_with_its_summary_and_keeps_an_exact_copy() {
        let s = set(&["cvc"], &json!({"cvc": "SECRET-1"}));
        let mut summary = String::with_capacity(64);
        summary.push_str("Pay with SECRET-1");
        let input = json!({"cvc": "SECRET-1"});
        let mut view = s.view(&Matcher::none(), &input, summary, Vec::new(), false);
        let at = std::time::SystemTime::UNIX_EPOCH;
        let asked = view.needs_confirmation("id", at).into_inner();
        let Outcome::NeedsConfirmation {
            confirm_id,
            summary,
            changes,
            expires_at,
        } = asked
        else {
            panic!("a needs_confirmation outcome");
        };
        assert_eq!(
            (confirm_id.as_str(), summary.as_str(), changes, expires_at),
            ("id", "Pay with [redacted]", Vec::new(), at)
        );
        assert_eq!(view.get().summary, "Pay with [redacted]");
        assert_eq!(view.get().summary.capacity(), view.get().summary.len());
        assert_eq!(view.compact().summary(), "Pay with [redacted]");
    }

    #[test]
    fn attacker_strings_are_bounded() {
        let long = "k".repeat(100_000);
        let r = Refusal::invalid(vec![Issue::new(long.clone(), "unknown field")]);
        let out = SecretSet::none().outcome(Outcome::Refused(r)).into_inner();
        let text = serde_json::to_string(&out).unwrap();
        assert!(text.len() < 2_000, "{}", text.len());
    }

    #[test]
    fn object_keys_are_bounded_at_every_depth_and_short_ones_kept() {
        let long = "k".repeat(MAX_PATH_CHARS + 50);
        let cut = bounded(&long, MAX_PATH_CHARS).into_owned();
        assert_ne!(cut, long);
        let input = json!({
            "short": {"inner": [{ long.clone(): 1, "ok": 2 }]},
            long.clone(): "top",
        });
        let out = bound_keys(input);
        assert_eq!(
            out,
            json!({
                "short": {"inner": [{ cut.clone(): 1, "ok": 2 }]},
                cut.clone(): "top",
            })
        );
        // Nothing to cut: the value as it came.
        let plain = json!({"a": {"b": [1, {"c": "d"}]}});
        assert_eq!(bound_keys(plain.clone()), plain);
        // Two keys cut to the same text: the later one's value (as a map built in
        // key order keeps).
        let (a, b) = (format!("{long}a"), format!("{long}b"));
        assert_eq!(bound_keys(json!({ a: 1, b: 2 })), json!({ cut: 2 }));
    }

    #[test]
    fn the_count_of_a_capped_refusal_is_not_taken_for_a_secret() {
        let s = SecretSet::from_texts(Matcher::none(), vec!["30".to_owned()]);
        let issues = (0..50)
            .map(|i| Issue::new(format!("k{i}"), "unknown field"))
            .collect();
        let r = Refusal::invalid_capped(issues, 0);
        let out = s.outcome(Outcome::Refused(r)).into_inner();
        let r = out.refusal().unwrap();
        assert!(r.message.ends_with("(and 49 more)"), "{}", r.message);
        assert_eq!(r.issues.last().unwrap().message, "and 30 more issues");
        // Elsewhere the secret is still scrubbed.
        let plain = Refusal::new(crate::RefusalCode::Invalid, "got 30 (and 30 more)");
        let out = s.outcome(Outcome::Refused(plain)).into_inner();
        assert_eq!(
            out.refusal().unwrap().message,
            "got [redacted] (and 30 more)"
        );
    }

    #[test]
    fn state_secrets_join_the_set() {
        let state: StateSecretsFn = Arc::new(|| vec!["4242424242424242".to_owned()]);
        let s = SecretSet::of_call(&Matcher::none(), &json!({}), None, Some(&state));
        assert_eq!(
            s.scrub_value(json!({"card": "4242424242424242"})),
            json!({"card": "[redacted]"})
        );
        assert_eq!(format!("{s:?}"), "SecretSet { secrets: 1 }");
    }
}
