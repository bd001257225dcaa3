//! Forms: values the app owns and the user edits, that an agent may fill and
//! submit.
//!
//! A [`Form<T>`] is a cheap-to-clone handle on one value of type `T` (the form's
//! values) with a version number that every change bumps and a
//! [`tokio::sync::watch`] a UI re-renders from. The app edits it with
//! [`set`](Form::set) and [`update`](Form::update), exactly like an agent does through
//! its tools.
//!
//! [`Toolmark::register_form`] exposes a form in a scope as two ordinary tools (so the
//! scope's `when`, disposal and queue apply to them):
//!
//! - **`<scope>.fill`** (effect [`FormOptions::fill_effect`], default
//!   [`Effect::Write`]) takes a partial object: a JSON merge patch (RFC 7396) of the
//!   values. A property sets that field, an object merges into a nested struct, `null`
//!   clears a field (an `Option` becomes `None`; a required field is then missing, so
//!   the fill is refused). Its input schema is `T`'s with no `required` properties.
//!   The patch is validated *before* confirmation: it is merged onto the current
//!   values and decoded as `T`; a failure is refused `invalid` with issues at the
//!   values' paths (`card.cvc`) and the values are not touched. (The form's
//!   [validator](Form::with_validator) is not asked: it says whether the form is
//!   complete, and a form is filled a little at a time.) The run applies the patch to
//!   the values current *at run time* (the user may have typed in the meantime: only
//!   the fields the patch names change) and decodes again; if the merged values are
//!   no longer a `T`, the run ends `error` with the issues and nothing changes. A deferred fill is never `stale`: the approver approved the patch, and
//!   the patch is what is applied. A fill's output is the new values with the
//!   sensitive paths redacted (an agent never reads back a secret the user typed).
//!   Each successful fill registers an [undo](crate::Toolmark::undo) restorer that
//!   puts the previous values back, provided nobody changed the form since that fill
//!   (otherwise the undo ends `error` and the values stay as they are).
//! - **`<scope>.submit`** (effect [`FormOptions::submit_effect`], default
//!   [`Effect::Consequential`]) takes `{}` and runs [`FormOptions::on_submit`] with the
//!   current values. It is only registered when `on_submit` is given (a form without
//!   one is filled by the agent and submitted by the user). Values that fail the
//!   validator are refused `invalid` before any confirmation. Its confirmation shows
//!   one [`Change`] per top-level field of the values (`after` = the value),
//!   redacted. A deferred submit approved after the form changed — any
//!   [`set`](Form::set), [`update`](Form::update) or fill since the request, even one
//!   that restored the same values — is refused `stale` ("Form changed since
//!   confirmation was requested"); the confirmation is used up and the agent asks
//!   again.
//!
//! **Sensitive paths** ([`FormOptions::sensitive`]) are paths of `T`'s JSON form
//! (`"card.cvc"`, `"cards[].cvc"`), checked at registration against the fill's input
//! schema (`invalid_sensitive_path`). They apply to the fill's partial input (a patch
//! has the values' shape) and to the form's values: the values at those paths —
//! whether the agent filled them or the user typed them — are secrets of every call
//! of the form's tools. `"[redacted]"` in every confirmation payload, event and
//! output, scrubbed from the messages of a failing `on_submit` and from what
//! `on_submit` returns (an app that echoes the saved values shows the card as
//! `"[redacted]"`), in the bridge message of an approved submit and the pub/sub
//! message that carries it to other instances. The submit of a form with sensitive
//! paths counts as a tool with sensitive values: an approval of it is never
//! remembered ([`For`](crate::For)), since the approver saw `"[redacted]"`.
//!
//! **Undo.** Any run may register a restorer with
//! [`ToolContext::on_undo`]; [`Toolmark::undo`](crate::Toolmark::undo) pops the newest
//! one and runs it in the queue of the scope whose tool registered it, as caller
//! human with no signal, so `call_timeout` and then the abort grace bound it (a hung
//! restorer ends `cancelled` and its queue is freed). It returns `None` when the stack
//! is empty. The stack keeps the newest `undo_limit` restorers (builder option,
//! default 100; `0` keeps none), and a disposed scope's restorers are dropped with it.
//!
//! ```
//! use std::sync::atomic::{AtomicI64, Ordering};
//! use std::sync::Arc;
//! use toolmark::{CallOptions, Caller, ToolSpec, Toolmark};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tm = Toolmark::builder().undo_limit(10).build().unwrap();
//! let balance = Arc::new(AtomicI64::new(0));
//! let b = balance.clone();
//! tm.scope("bank").register(ToolSpec::new("deposit", "Deposit 5").handler(move |ctx, _input| {
//!     let b = b.clone();
//!     async move {
//!         b.fetch_add(5, Ordering::SeqCst);
//!         ctx.on_undo(move || async move {
//!             b.fetch_sub(5, Ordering::SeqCst);
//!             Ok(())
//!         });
//!         Ok(serde_json::json!("deposited"))
//!     }
//! })).unwrap();
//!
//! tm.call("bank.deposit", serde_json::json!({}), CallOptions::new(Caller::InApp)).await;
//! assert_eq!(balance.load(Ordering::SeqCst), 5);
//! assert!(tm.undo().await.unwrap().is_ok()); // runs in `bank`'s queue
//! assert_eq!(balance.load(Ordering::SeqCst), 0);
//! assert!(tm.undo().await.is_none()); // nothing left to undo
//! # }
//! ```
//!
//! Wizards (several forms shown one step at a time) are in [`Wizard`](crate::Wizard).
//!
//! ```
//! use serde_json::json;
//! use toolmark::{CallOptions, Caller, Decision, Form, FormOptions, OnSubmit, ToolError};
//!
//! #[derive(Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Signup { name: String, email: String, card: Option<Card> }
//! #[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Card { number: String, cvc: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tm = toolmark::Toolmark::builder().build().unwrap();
//! let form = Form::new(Signup::default());
//! tm.register_form(&tm.scope("signup"), form.clone(), FormOptions {
//!     sensitive: vec!["card.cvc".into()],
//!     on_submit: Some(OnSubmit::new(|_ctx, values: Signup| async move {
//!         Ok::<_, ToolError>(format!("welcome, {}", values.name))
//!     })),
//!     ..Default::default()
//! }).unwrap();
//!
//! let agent = CallOptions::new(Caller::InApp);
//! let out = tm.call("signup.fill", json!({"name": "Ada", "card": {"number": "4242", "cvc": "123"}}), agent.clone()).await;
//! assert_eq!(out.output().unwrap()["card"]["cvc"], "[redacted]");
//! assert_eq!(form.values().name, "Ada");
//!
//! // Submitting is consequential: the in-app agent gets a pending confirmation.
//! let out = tm.call("signup.submit", json!({}), agent).await;
//! let id = out.confirm_id().unwrap().to_owned();
//! let done = tm.confirm_pending(&id, Decision::approve()).await;
//! assert_eq!(done.output(), Some(&json!("welcome, Ada")));
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::call::input::{decode_typed, downcast, output_to_value, NoInput};
use crate::call::{safe_issues, scrub_error};
use crate::sensitive::{Matcher, NameMode, StateSecretsFn};
use crate::sync::lock;
use crate::tools::spec::{ChangesFn, DecodeFn, RunFn, StaleCheck};
use crate::{
    Change, Decoded, Effect, Issue, Refusal, RefusalCode, RegisterError, Scope, ToolContext,
    ToolError, ToolSpec, Toolmark,
};

/// The refusal message of a deferred submit approved after its form changed.
pub(crate) const STALE_MESSAGE: &str = "Form changed since confirmation was requested";

type Validator<T> = Arc<dyn Fn(&T) -> Result<(), Vec<Issue>> + Send + Sync>;

struct FormState<T> {
    values: T,
    version: u64,
}

struct FormInner<T> {
    state: Mutex<FormState<T>>,
    validator: Option<Validator<T>>,
    changes: watch::Sender<u64>,
}

/// Values the app owns and the user edits, which an agent may also fill and submit
/// once registered with [`Toolmark::register_form`] (see the [module docs](self)).
///
/// A handle: clones share the same values. Every change ([`set`](Self::set),
/// [`update`](Self::update), a fill, an undo) bumps [`version`](Self::version) and
/// notifies [`subscribe`](Self::subscribe)rs. `Debug` shows the version only, never
/// the values (they may hold secrets).
///
/// ```
/// use toolmark::Form;
///
/// let form = Form::new(String::from("draft"));
/// let mut changes = form.subscribe();
/// form.update(|text| text.push_str(" 2"));
/// assert_eq!(form.values(), "draft 2");
/// assert_eq!(form.version(), 1);
/// assert!(changes.has_changed().unwrap());
/// ```
pub struct Form<T> {
    inner: Arc<FormInner<T>>,
}

impl<T> Clone for Form<T> {
    fn clone(&self) -> Self {
        Form {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for Form<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Form")
            .field("version", &self.version())
            .field("validator", &self.inner.validator.is_some())
            .finish_non_exhaustive()
    }
}

impl<T> Form<T> {
    /// A form holding `initial`, at version 0, with no validator (any `T` is valid).
    pub fn new(initial: T) -> Self {
        Form::build(initial, None)
    }

    /// A form whose values must pass `validate` to be submitted: the check that the
    /// form is complete and consistent, beyond being a `T`. It is asked when a submit
    /// is requested and when it runs, and by a wizard's `next` (the current step) and
    /// `submit` (every step) — not by a fill, since a form is filled a little at a
    /// time. Return the problems as [`Issue`]s at the values' JSON paths (`"email"`,
    /// `"card.number"`); never quote a sensitive value in a message.
    ///
    /// ```
    /// use toolmark::{Form, Issue};
    ///
    /// let age = Form::with_validator(0_u8, |age: &u8| {
    ///     if *age >= 18 { Ok(()) } else { Err(vec![Issue::new("", "must be 18 or over")]) }
    /// });
    /// assert!(age.validate().is_err());
    /// age.set(30);
    /// assert!(age.validate().is_ok());
    /// ```
    pub fn with_validator<F>(initial: T, validate: F) -> Self
    where
        F: Fn(&T) -> Result<(), Vec<Issue>> + Send + Sync + 'static,
    {
        Form::build(initial, Some(Arc::new(validate)))
    }

    fn build(initial: T, validator: Option<Validator<T>>) -> Self {
        Form {
            inner: Arc::new(FormInner {
                state: Mutex::new(FormState {
                    values: initial,
                    version: 0,
                }),
                validator,
                changes: watch::Sender::new(0),
            }),
        }
    }

    /// A copy of the current values.
    pub fn values(&self) -> T
    where
        T: Clone,
    {
        lock(&self.inner.state).values.clone()
    }

    /// Read the current values without copying them. `f` runs under the form's lock:
    /// it must not call this form.
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&lock(&self.inner.state).values)
    }

    /// Replace the values (a change: the version is bumped).
    pub fn set(&self, values: T) {
        let mut state = lock(&self.inner.state);
        state.values = values;
        self.bump(&mut state);
    }

    /// Change the values in place (a change, whatever `f` does). `f` runs under the
    /// form's lock: it must not call this form.
    pub fn update(&self, f: impl FnOnce(&mut T)) {
        let mut state = lock(&self.inner.state);
        f(&mut state.values);
        self.bump(&mut state);
    }

    /// The number of changes so far (0 for a new form).
    pub fn version(&self) -> u64 {
        lock(&self.inner.state).version
    }

    /// A watch of the version, for a UI to re-render from: it changes with every
    /// change of the values (read them with [`values`](Self::values)).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Check the current values with the form's validator (`Ok` without one).
    pub fn validate(&self) -> Result<(), Vec<Issue>> {
        let state = lock(&self.inner.state);
        self.check(&state.values)
    }

    fn check(&self, values: &T) -> Result<(), Vec<Issue>> {
        match &self.inner.validator {
            Some(validate) => validate(values),
            None => Ok(()),
        }
    }

    fn bump(&self, state: &mut FormState<T>) {
        state.version += 1;
        self.inner.changes.send_replace(state.version);
    }
}

impl<T> Form<T>
where
    T: Serialize + DeserializeOwned,
{
    /// The values' JSON form.
    pub(crate) fn json(&self) -> Result<Value, ToolError> {
        to_json(&lock(&self.inner.state).values)
    }

    /// Merge `patch` onto the current values' JSON and check that the result is a
    /// `T`, without changing anything. Returns the merged JSON.
    pub(crate) fn check_patch(
        &self,
        patch: &Value,
        allow_unknown: bool,
    ) -> Result<Value, Vec<Issue>> {
        let mut merged = self.json().map_err(|e| vec![Issue::new("", e.message)])?;
        merge_patch(&mut merged, patch);
        decode_typed::<T>(&merged, allow_unknown)?;
        Ok(merged)
    }

    /// Apply `patch` to the values current now, if the result is a `T`: returns the
    /// previous values, the new version and the new values' JSON.
    fn apply_patch(&self, patch: &Value) -> Result<(T, u64, Value), ToolError> {
        let mut state = lock(&self.inner.state);
        let mut merged = to_json(&state.values)?;
        merge_patch(&mut merged, patch);
        let invalid = |issues: Vec<Issue>| {
            ToolError::new("The form's values changed and the fill no longer applies to them")
                .with_issues(issues)
        };
        // Unknown fields were already refused (or allowed) when the fill was requested.
        let values = decode_typed::<T>(&merged, true).map_err(invalid)?;
        let json = to_json(&values)?;
        let previous = std::mem::replace(&mut state.values, values);
        self.bump(&mut state);
        Ok((previous, state.version, json))
    }

    /// Put `previous` back if the form is still at `version`.
    fn restore(&self, previous: T, version: u64) -> Result<(), ToolError> {
        let mut state = lock(&self.inner.state);
        if state.version != version {
            return Err(ToolError::new(
                "The form changed since this fill; nothing was undone",
            ));
        }
        state.values = previous;
        self.bump(&mut state);
        Ok(())
    }
}

fn to_json<T: Serialize>(values: &T) -> Result<Value, ToolError> {
    serde_json::to_value(values)
        .map_err(|e| ToolError::new(format!("the form's values cannot be written as JSON: {e}")))
}

/// Apply the JSON merge patch `patch` to `target` (RFC 7396): an object patch merges
/// member by member (`null` removes a member), anything else replaces the target.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in members {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// The fill's input schema: `T`'s schema without `required`, at the top level and in
/// the objects written inline below it through `properties` (a patch may omit any
/// field; a field behind a `$ref` keeps its definition, which other places share).
pub(crate) fn patch_schema(mut schema: Value) -> Value {
    fn strip(node: &mut Value) {
        let Value::Object(map) = node else { return };
        map.remove("required");
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for prop in props.values_mut() {
                if prop.get("properties").is_some() {
                    strip(prop);
                }
            }
        }
    }
    strip(&mut schema);
    schema
}

/// Resolve `paths` (JSON names) against `schema` into a matcher; a path that does
/// not resolve is `invalid_sensitive_path` of `tool`.
pub(crate) fn sensitive_matcher(
    paths: &[String],
    schema: &Value,
    tool: &str,
) -> Result<Matcher, RegisterError> {
    crate::sensitive::resolve_all(paths, schema, NameMode::Json)
        .map(Matcher::new)
        .map_err(|(path, reason)| RegisterError::InvalidSensitivePath {
            tool: tool.to_owned(),
            path,
            reason,
        })
}

/// One change per top-level field of `values` (the whole value at `""` when it is
/// not an object), redacted with `matcher`, each under `prefix` (`""` or `step.`).
pub(crate) fn value_changes(values: &Value, matcher: &Matcher, prefix: &str) -> Vec<Change> {
    let redacted = matcher.redact(values);
    match redacted {
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| Change::new(format!("{prefix}{k}"), None, Some(v)))
            .collect(),
        other => vec![Change::new(prefix.trim_end_matches('.'), None, Some(other))],
    }
}

/// The sensitive values of `form` now (at `matcher`'s paths), for the secret set
/// of every call of a tool that works on it: its fill, its submit, a wizard's
/// steps. `None` when the form has no sensitive paths.
pub(crate) fn form_secrets<T>(form: &Form<T>, matcher: &Matcher) -> Option<StateSecretsFn>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    if matcher.is_empty() {
        return None;
    }
    let form = form.clone();
    let matcher = matcher.clone();
    Some(Arc::new(move || {
        form.json()
            .map(|values| matcher.secrets(&values))
            .unwrap_or_default()
    }))
}

/// The issues of `issues` with `step.` before each path.
pub(crate) fn prefix_issues(step: &str, issues: Vec<Issue>) -> Vec<Issue> {
    issues
        .into_iter()
        .map(|i| {
            let path = if i.path.is_empty() {
                step.to_owned()
            } else {
                format!("{step}.{}", i.path)
            };
            Issue::new(path, i.message)
        })
        .collect()
}

/// A stale check: the version is read when the confirmation is requested and
/// again at approval, which is refused `stale` when it differs.
pub(crate) fn stale_check<F>(version: F) -> StaleCheck
where
    F: Fn() -> Vec<u64> + Send + Sync + 'static,
{
    StaleCheck(Arc::new(version))
}

/// The refusal of an approval made after the form changed.
pub(crate) fn stale_refusal() -> Refusal {
    Refusal::new(RefusalCode::Stale, STALE_MESSAGE)
}

type SubmitFn<T> =
    Arc<dyn Fn(ToolContext, T) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// What a form's `submit` tool runs: an async fn of the [`ToolContext`] and the
/// form's current values, returning a serializable output or a [`ToolError`].
///
/// ```
/// use toolmark::{OnSubmit, ToolError};
///
/// let on_submit = OnSubmit::new(|_ctx, text: String| async move {
///     Ok::<_, ToolError>(text.len())
/// });
/// # let _ = on_submit;
/// ```
pub struct OnSubmit<T>(SubmitFn<T>);

impl<T: 'static> OnSubmit<T> {
    /// Wrap an async fn.
    pub fn new<F, Fut, O>(f: F) -> Self
    where
        F: Fn(ToolContext, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Serialize,
    {
        let f = Arc::new(f);
        OnSubmit(Arc::new(move |ctx, values| {
            let fut = f(ctx, values);
            Box::pin(async move { output_to_value(&fut.await?) })
        }))
    }
}

impl<T> Clone for OnSubmit<T> {
    fn clone(&self) -> Self {
        OnSubmit(Arc::clone(&self.0))
    }
}

impl<T> fmt::Debug for OnSubmit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnSubmit(..)")
    }
}

/// Options of [`Toolmark::register_form`]. `..Default::default()` gives a `Write`
/// fill, a `Consequential` submit, no sensitive paths and no `on_submit`.
pub struct FormOptions<T> {
    /// The effect of `<scope>.fill` (default [`Effect::Write`]).
    pub fill_effect: Effect,
    /// The effect of `<scope>.submit` (default [`Effect::Consequential`]: an agent's
    /// submit needs the user's confirmation).
    pub submit_effect: Effect,
    /// Sensitive paths of the values, by JSON name (`"card.cvc"`, `"cards[].cvc"`).
    pub sensitive: Vec<String>,
    /// What `<scope>.submit` runs; without it no `submit` tool is registered.
    pub on_submit: Option<OnSubmit<T>>,
}

impl<T> Default for FormOptions<T> {
    fn default() -> Self {
        FormOptions {
            fill_effect: Effect::Write,
            submit_effect: Effect::Consequential,
            sensitive: Vec::new(),
            on_submit: None,
        }
    }
}

impl<T> Clone for FormOptions<T> {
    fn clone(&self) -> Self {
        FormOptions {
            fill_effect: self.fill_effect,
            submit_effect: self.submit_effect,
            sensitive: self.sensitive.clone(),
            on_submit: self.on_submit.clone(),
        }
    }
}

impl<T> fmt::Debug for FormOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FormOptions")
            .field("fill_effect", &self.fill_effect)
            .field("submit_effect", &self.submit_effect)
            .field("sensitive", &self.sensitive)
            .field("on_submit", &self.on_submit.is_some())
            .finish()
    }
}

/// The `fill` tool of `form` in `scope` (also a wizard step's), with its matcher.
pub(crate) fn fill_spec<T>(
    form: &Form<T>,
    scope: &Scope,
    effect: Effect,
    sensitive: &[String],
) -> Result<(ToolSpec, Matcher), RegisterError>
where
    T: Serialize + DeserializeOwned + schemars::JsonSchema + Clone + Send + Sync + 'static,
{
    let full = scope.node.full_name("fill");
    let schema = patch_schema(crate::call::input::schema_for::<T>());
    let matcher = sensitive_matcher(sensitive, &schema, &full)?;
    if let Err(e) = form.json() {
        return Err(RegisterError::InvalidSpec {
            tool: full,
            reason: e.message,
        });
    }

    let decode: DecodeFn = {
        let form = form.clone();
        let matcher = matcher.clone();
        Arc::new(move |patch: &Value, allow_unknown: bool| {
            match form.check_patch(patch, allow_unknown) {
                // Validated: the run gets its copy when it starts.
                Ok(_) => Ok(crate::tools::spec::InputItself::decoded()),
                Err(issues) => {
                    // Issues may be about values the patch did not send.
                    let merged = form.json().map_or(Value::Null, |mut v| {
                        merge_patch(&mut v, patch);
                        v
                    });
                    Err(safe_issues(issues, &matcher, &merged))
                }
            }
        })
    };
    let run: RunFn = {
        let form = form.clone();
        let matcher = matcher.clone();
        Arc::new(move |ctx: ToolContext, decoded: Decoded| {
            let form = form.clone();
            let matcher = matcher.clone();
            Box::pin(async move {
                let patch = downcast::<Value>(decoded)?;
                let (previous, version, json) = form.apply_patch(&patch).map_err(|e| {
                    let merged = form.json().map_or(Value::Null, |mut v| {
                        merge_patch(&mut v, &patch);
                        v
                    });
                    scrub_error(e, &matcher, &merged)
                })?;
                let undo_form = form.clone();
                ctx.on_undo(move || async move { undo_form.restore(previous, version) });
                Ok(matcher.redact(&json))
            })
        })
    };
    let changes: ChangesFn = {
        let form = form.clone();
        Arc::new(move |patch: &Value| {
            // Before and after of each field the patch names (redacted by the runtime
            // with the fill's sensitive paths).
            let Ok(before) = form.json() else {
                return Vec::new();
            };
            let mut after = before.clone();
            merge_patch(&mut after, patch);
            let Value::Object(members) = patch else {
                return Vec::new();
            };
            members
                .keys()
                .map(|k| Change::new(k.clone(), before.get(k).cloned(), after.get(k).cloned()))
                .collect()
        })
    };

    let place = scope_label(scope);
    let mut spec = ToolSpec::raw(
        "fill".to_owned(),
        format!(
            "Fill in {place}: send only the fields to change, as a JSON merge patch of its \
             values (an object merges into the current value; null clears a field). Returns \
             the form's values."
        ),
        decode,
        run,
        Arc::new(schema),
        None,
    )
    .effect(effect)
    .sensitive(sensitive.iter().cloned())
    .summary(format!("Fill in {place}"));
    spec.changes_fn = Some(changes);
    // The values typed before this fill are secrets of the fill too.
    spec.state_secrets = form_secrets(form, &matcher);
    Ok((spec, matcher))
}

/// How a tool description names the form of `scope`.
pub(crate) fn scope_label(scope: &Scope) -> String {
    if scope.path().is_empty() {
        "the form".to_owned()
    } else {
        format!("the `{}` form", scope.path())
    }
}

/// Check that `scope` belongs to `tm` and is alive, then register every spec, all or
/// none.
pub(crate) fn register_specs(
    tm: &Toolmark,
    specs: Vec<(ToolSpec, Scope)>,
) -> Result<(), RegisterError> {
    for (spec, scope) in &specs {
        if !scope.tm.ptr_eq(&Arc::downgrade(&tm.inner)) {
            return Err(RegisterError::InvalidSpec {
                tool: scope.node.full_name(spec.name()),
                reason: "the scope belongs to another Toolmark".to_owned(),
            });
        }
    }
    tm.inner
        .register_all(specs)
        .map(|_| ())
        .map_err(|e| match e.errors.into_iter().next() {
            Some(first) => first,
            None => RegisterError::InvalidSpec {
                tool: String::new(),
                reason: "registration failed".to_owned(),
            },
        })
}

impl Toolmark {
    /// Expose `form` in `scope` as the tools `<scope>.fill` and (with
    /// [`on_submit`](FormOptions::on_submit)) `<scope>.submit`; see the
    /// [`form`](crate::form) module docs for what they do. Both are registered, or neither.
    ///
    /// Errors: those of [`register`](Self::register) (`duplicate_tool`,
    /// `invalid_name`, `scope_disposed`, `missing_confirm_handler`, …), and
    /// `invalid_sensitive_path` for a path that `T`'s JSON schema does not have.
    pub fn register_form<T>(
        &self,
        scope: &Scope,
        form: Form<T>,
        options: FormOptions<T>,
    ) -> Result<(), RegisterError>
    where
        T: Serialize + DeserializeOwned + schemars::JsonSchema + Clone + Send + Sync + 'static,
    {
        let (fill, matcher) = fill_spec(&form, scope, options.fill_effect, &options.sensitive)?;
        let mut specs = vec![(fill, scope.clone())];
        if let Some(on_submit) = options.on_submit {
            specs.push((
                submit_spec(form, scope, options.submit_effect, matcher, on_submit),
                scope.clone(),
            ));
        }
        register_specs(self, specs)
    }
}

fn submit_spec<T>(
    form: Form<T>,
    scope: &Scope,
    effect: Effect,
    matcher: Matcher,
    on_submit: OnSubmit<T>,
) -> ToolSpec
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    let decode: DecodeFn = {
        let form = form.clone();
        let matcher = matcher.clone();
        Arc::new(move |input: &Value, allow_unknown: bool| {
            decode_typed::<NoInput>(input, allow_unknown)?;
            form.validate().map_err(|issues| {
                let values = form.json().unwrap_or(Value::Null);
                safe_issues(issues, &matcher, &values)
            })?;
            Ok(Box::new(()) as Decoded)
        })
    };
    let run: RunFn = {
        let form = form.clone();
        let matcher = matcher.clone();
        Arc::new(move |ctx: ToolContext, _decoded: Decoded| {
            let form = form.clone();
            let matcher = matcher.clone();
            let on_submit = on_submit.clone();
            Box::pin(async move {
                let values = form.values();
                let json = to_json(&values)?;
                form.check(&values).map_err(|issues| {
                    scrub_error(
                        ToolError::new("The form's values are not valid").with_issues(issues),
                        &matcher,
                        &json,
                    )
                })?;
                (on_submit.0)(ctx, values)
                    .await
                    .map_err(|e| scrub_error(e, &matcher, &json))
            })
        })
    };
    // The submit carries the form's sensitive paths: the values at them are
    // secrets of every submit call (its outcome, bridge and pub/sub messages), and
    // an approval of it is never remembered.
    let state_secrets = form_secrets(&form, &matcher);
    let changes: ChangesFn = {
        let form = form.clone();
        Arc::new(move |_input: &Value| match form.json() {
            Ok(values) => value_changes(&values, &matcher, ""),
            Err(_) => Vec::new(),
        })
    };
    let place = scope_label(scope);
    let mut spec = ToolSpec::raw(
        "submit".to_owned(),
        format!("Submit {place} with its current values."),
        decode,
        run,
        Arc::new(crate::call::input::schema_for::<NoInput>()),
        None,
    )
    .effect(effect)
    .summary(format!("Submit {place}"));
    spec.changes_fn = Some(changes);
    spec.state_secrets = state_secrets;
    spec.stale_check = Some(stale_check(move || vec![form.version()]));
    spec
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The examples of RFC 7396, appendix A.
    #[test]
    fn merge_patch_follows_rfc_7396() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, expected) in cases {
            let mut t = target.clone();
            merge_patch(&mut t, &patch);
            assert_eq!(t, expected, "{target} + {patch}");
        }
    }

    #[test]
    fn the_patch_schema_requires_nothing_but_keeps_every_property() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "inline": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                "shared": {"$ref": "#/$defs/S"}
            },
            "required": ["a", "inline", "shared"],
            "$defs": {"S": {"type": "object", "properties": {"y": {}}, "required": ["y"]}}
        });
        let patched = patch_schema(schema);
        assert!(patched.get("required").is_none());
        assert!(patched["properties"]["inline"].get("required").is_none());
        assert_eq!(patched["$defs"]["S"]["required"], json!(["y"]));
        assert_eq!(patched["properties"]["a"], json!({"type": "string"}));
    }
}
