//! Wizards: an ordered list of steps, each a [`Form`] in its own scope, shown one
//! at a time.
//!
//! [`Toolmark::register_wizard`] registers, for a wizard in scope `signup` with steps
//! `details` and `payment`:
//!
//! - `signup.details.fill`, `signup.payment.fill`: each step's form fill (see
//!   [`Form`] for what a fill does), in the step's scope `signup.<step>`. Only the
//!   **current** step's scope is shown; filling another step is `unknown_tool`.
//! - `signup.next`: checks the current step's values with its form's validator
//!   (`invalid`, with issues at `<step>.<path>`, when they fail) and moves to the next
//!   step. Shown on every step but the last.
//! - `signup.back`: moves to the previous step, without checking. Shown on every step
//!   but the first.
//! - `signup.submit` (only with [`Wizard::on_submit`]): checks **every** step's values
//!   (`invalid` with issues at `<step>.<path>` before any confirmation) and runs
//!   `on_submit` with all of them ([`WizardValues`]). Effect
//!   [`Effect::Consequential`] unless [`Wizard::submit_effect`] says otherwise; its
//!   confirmation shows one [`Change`](crate::Change) per step (path = the step name,
//!   `after` = its values), redacted with that step's sensitive paths. A deferred
//!   submit approved after any step's form changed is refused `stale` ("Form changed
//!   since confirmation was requested"). Shown on the last step only.
//!
//! `next`, `back` and `submit` live in transparent child scopes of the wizard's scope
//! named `_wizard-next`, `_wizard-back` and `_wizard-submit` (their own queues, shown
//! and hidden as the current step moves); those names cannot be step names. The app
//! moves between steps too, with [`Wizard::go_to`], and renders from
//! [`Wizard::subscribe`]. Disposing the wizard's scope removes every tool of the
//! wizard.
//!
//! ```
//! use serde_json::json;
//! use toolmark::{CallOptions, Caller, Form, Issue, StepOptions, ToolError, Wizard};
//!
//! #[derive(Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Details { name: String }
//! #[derive(Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Payment { card: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tm = toolmark::testing::test_toolmark();
//! let details = Form::with_validator(Details::default(), |d: &Details| {
//!     if d.name.is_empty() { Err(vec![Issue::new("name", "required")]) } else { Ok(()) }
//! });
//! let wizard = Wizard::new()
//!     .step("details", details.clone(), StepOptions::default())
//!     .step("payment", Form::new(Payment::default()), StepOptions {
//!         sensitive: vec!["card".into()],
//!         ..Default::default()
//!     })
//!     .on_submit(|_ctx, values| async move {
//!         let details: &Details = values.get("details").unwrap();
//!         Ok::<_, ToolError>(format!("signed up {}", details.name))
//!     });
//! tm.register_wizard(&tm.scope("signup"), wizard.clone()).unwrap();
//!
//! let mcp = CallOptions::new(Caller::Mcp);
//! let names: Vec<String> = tm.manifest(Caller::Mcp).into_iter().map(|t| t.name).collect();
//! assert_eq!(names, ["signup.details.fill", "signup.next"]);
//!
//! tm.call("signup.details.fill", json!({"name": "Ada"}), mcp.clone()).await;
//! tm.call("signup.next", json!({}), mcp.clone()).await;
//! assert_eq!(wizard.current(), "payment");
//! tm.call("signup.payment.fill", json!({"card": "4242"}), mcp.clone()).await;
//! let out = tm.call("signup.submit", json!({}), mcp).await; // approved by test_toolmark's handler
//! assert_eq!(out.output(), Some(&json!("signed up Ada")));
//! # }
//! ```

use std::any::Any;
use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::call::input::{decode_typed, output_to_value, schema_for, NoInput};
use crate::call::{safe_issues, scrub_error};
use crate::forms::form::{fill_spec, prefix_issues, register_specs, stale_check, value_changes};
use crate::sensitive::{Matcher, Seg, SensitivePath, StateSecretsFn};
use crate::sync::lock;
use crate::tools::spec::{ChangesFn, DecodeFn, RunFn};
use crate::{
    Decoded, Effect, Form, Issue, RegisterError, Scope, ScopeOptions, ToolContext, ToolError,
    ToolSpec, Toolmark,
};

const NEXT_SCOPE: &str = "_wizard-next";
const BACK_SCOPE: &str = "_wizard-back";
const SUBMIT_SCOPE: &str = "_wizard-submit";

/// Options of one wizard step. `..Default::default()` gives a `Write` fill and no
/// sensitive paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOptions {
    /// The effect of the step's `fill` (default [`Effect::Write`]).
    pub fill_effect: Effect,
    /// Sensitive paths of the step's values, by JSON name (`"card.cvc"`).
    pub sensitive: Vec<String>,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            fill_effect: Effect::Write,
            sensitive: Vec::new(),
        }
    }
}

/// One step, whatever its value type.
trait StepForm: Send + Sync {
    fn name(&self) -> &str;
    fn version(&self) -> u64;
    fn validate(&self) -> Result<(), Vec<Issue>>;
    /// The values now: typed (for [`WizardValues::get`]) and as JSON.
    fn snapshot(&self) -> Result<(Box<dyn Any + Send + Sync>, Value), ToolError>;
    fn json(&self) -> Value;
    /// The `Form<T>`.
    fn form(&self) -> &dyn Any;
    fn fill(&self, scope: &Scope) -> Result<(ToolSpec, Matcher), RegisterError>;
}

struct Step<T> {
    name: String,
    form: Form<T>,
    options: StepOptions,
}

impl<T> StepForm for Step<T>
where
    T: Serialize + DeserializeOwned + schemars::JsonSchema + Clone + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> u64 {
        self.form.version()
    }

    fn validate(&self) -> Result<(), Vec<Issue>> {
        self.form.validate()
    }

    fn snapshot(&self) -> Result<(Box<dyn Any + Send + Sync>, Value), ToolError> {
        let values = self.form.values();
        let json = serde_json::to_value(&values).map_err(|e| {
            ToolError::new(format!(
                "the values of step `{}` cannot be written as JSON: {e}",
                self.name
            ))
        })?;
        Ok((Box::new(values), json))
    }

    fn json(&self) -> Value {
        self.form.json().unwrap_or(Value::Null)
    }

    fn form(&self) -> &dyn Any {
        &self.form
    }

    fn fill(&self, scope: &Scope) -> Result<(ToolSpec, Matcher), RegisterError> {
        fill_spec(
            &self.form,
            scope,
            self.options.fill_effect,
            &self.options.sensitive,
        )
    }
}

/// The values of every step, given to [`Wizard::on_submit`].
///
/// `Debug` shows the step names only.
pub struct WizardValues {
    steps: Vec<(String, Box<dyn Any + Send + Sync>)>,
    json: Value,
}

impl WizardValues {
    /// The values of `step`, if it is a step of type `T`.
    pub fn get<T: 'static>(&self, step: &str) -> Option<&T> {
        self.steps
            .iter()
            .find(|(name, _)| name == step)
            .and_then(|(_, v)| v.downcast_ref::<T>())
    }

    /// Every step's values as JSON, `{"<step>": values, …}` — not redacted.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The step names, in order.
    pub fn steps(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(|(name, _)| name.as_str())
    }
}

impl fmt::Debug for WizardValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WizardValues")
            .field("steps", &self.steps().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

type WizardSubmit = Arc<
    dyn Fn(ToolContext, WizardValues) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync,
>;

#[derive(Clone)]
struct WizardConfig {
    steps: Vec<Arc<dyn StepForm>>,
    on_submit: Option<WizardSubmit>,
    submit_effect: Effect,
}

/// The scopes a registered wizard shows and hides.
struct NavScopes {
    steps: Vec<Scope>,
    next: Scope,
    back: Scope,
    submit: Option<Scope>,
}

impl NavScopes {
    fn show(&self, current: usize) {
        let last = self.steps.len().saturating_sub(1);
        for (i, s) in self.steps.iter().enumerate() {
            s.set_when(i == current);
        }
        self.next.set_when(current < last);
        self.back.set_when(current > 0);
        if let Some(s) = &self.submit {
            s.set_when(current == last);
        }
    }
}

struct Nav {
    current: usize,
    scopes: Option<NavScopes>,
}

struct WizardInner {
    config: WizardConfig,
    nav: Mutex<Nav>,
    changes: watch::Sender<usize>,
}

/// An ordered list of steps, each a [`Form`] in its own scope, shown one at a time,
/// with `next`, `back` and `submit` tools; see the [module docs](self) and
/// [`Toolmark::register_wizard`].
///
/// A handle: clones share the current step. The builder methods
/// ([`step`](Self::step), [`on_submit`](Self::on_submit),
/// [`submit_effect`](Self::submit_effect)) return a changed copy when this wizard is
/// shared (registered, or cloned), so they never change a registered wizard.
#[derive(Clone)]
pub struct Wizard {
    inner: Arc<WizardInner>,
}

impl Default for Wizard {
    fn default() -> Self {
        Wizard::new()
    }
}

impl fmt::Debug for Wizard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wizard")
            .field("steps", &self.step_names())
            .field("current", &self.current())
            .finish_non_exhaustive()
    }
}

impl Wizard {
    /// A wizard with no steps yet; add them with [`step`](Self::step).
    pub fn new() -> Self {
        Wizard::from_config(WizardConfig {
            steps: Vec::new(),
            on_submit: None,
            submit_effect: Effect::Consequential,
        })
    }

    fn from_config(config: WizardConfig) -> Self {
        Wizard {
            inner: Arc::new(WizardInner {
                config,
                nav: Mutex::new(Nav {
                    current: 0,
                    scopes: None,
                }),
                changes: watch::Sender::new(0),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut WizardConfig)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                f(&mut inner.config);
                self
            }
            None => {
                let mut config = self.inner.config.clone();
                f(&mut config);
                Wizard::from_config(config)
            }
        }
    }

    /// Add a step named `name` (a scope segment, `[A-Za-z0-9_-]+`) whose values are
    /// `form`. Steps are shown in the order they are added.
    #[must_use]
    pub fn step<T>(self, name: impl Into<String>, form: Form<T>, options: StepOptions) -> Self
    where
        T: Serialize + DeserializeOwned + schemars::JsonSchema + Clone + Send + Sync + 'static,
    {
        let step: Arc<dyn StepForm> = Arc::new(Step {
            name: name.into(),
            form,
            options,
        });
        self.edit(|c| c.steps.push(step))
    }

    /// What `<scope>.submit` runs, with every step's values; without it no `submit`
    /// tool is registered.
    #[must_use]
    pub fn on_submit<F, Fut, O>(self, f: F) -> Self
    where
        F: Fn(ToolContext, WizardValues) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Serialize,
    {
        let f = Arc::new(f);
        let submit: WizardSubmit = Arc::new(move |ctx, values| {
            let fut = f(ctx, values);
            Box::pin(async move { output_to_value(&fut.await?) })
        });
        self.edit(|c| c.on_submit = Some(submit))
    }

    /// The effect of `<scope>.submit` (default [`Effect::Consequential`]).
    #[must_use]
    pub fn submit_effect(self, effect: Effect) -> Self {
        self.edit(|c| c.submit_effect = effect)
    }

    /// The step names, in order.
    pub fn step_names(&self) -> Vec<&str> {
        self.inner.config.steps.iter().map(|s| s.name()).collect()
    }

    /// The current step's name (`""` for a wizard without steps).
    pub fn current(&self) -> &str {
        self.inner
            .config
            .steps
            .get(self.current_index())
            .map_or("", |s| s.name())
    }

    /// The current step's position (0 for the first).
    pub fn current_index(&self) -> usize {
        lock(&self.inner.nav).current
    }

    /// A watch of the current step's position, for a UI to re-render from.
    pub fn subscribe(&self) -> watch::Receiver<usize> {
        self.inner.changes.subscribe()
    }

    /// The form of `step`, if the wizard has a step of that name with values of type
    /// `T` (the same handle the step was given).
    pub fn form<T: 'static>(&self, step: &str) -> Option<Form<T>> {
        self.find(step)
            .and_then(|(_, s)| s.form().downcast_ref::<Form<T>>().cloned())
    }

    /// Make `step` the current step (the app's own navigation; nothing is checked).
    /// Returns `false` when the wizard has no such step.
    pub fn go_to(&self, step: &str) -> bool {
        match self.find(step) {
            Some((i, _)) => {
                self.inner.set_current(&mut lock(&self.inner.nav), i);
                true
            }
            None => false,
        }
    }

    /// Check every step's values with its form's validator; issues are at
    /// `<step>.<path>`.
    pub fn validate(&self) -> Result<(), Vec<Issue>> {
        self.inner.validate_all()
    }

    fn find(&self, step: &str) -> Option<(usize, &Arc<dyn StepForm>)> {
        self.inner
            .config
            .steps
            .iter()
            .enumerate()
            .find(|(_, s)| s.name() == step)
    }
}

impl WizardInner {
    fn set_current(&self, nav: &mut Nav, i: usize) {
        nav.current = i;
        if let Some(scopes) = &nav.scopes {
            scopes.show(i);
        }
        self.changes.send_replace(i);
    }

    fn validate_all(&self) -> Result<(), Vec<Issue>> {
        let mut issues = Vec::new();
        for s in &self.config.steps {
            if let Err(found) = s.validate() {
                issues.extend(prefix_issues(s.name(), found));
            }
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(issues)
        }
    }

    fn current_step(&self) -> Option<&Arc<dyn StepForm>> {
        self.config.steps.get(lock(&self.nav).current)
    }

    /// The `next` run: check the current step, then move on. The step is checked
    /// without holding the wizard's lock, so a validator may read the wizard.
    fn advance(&self) -> Result<Value, ToolError> {
        let i = lock(&self.nav).current;
        let Some(step) = self.config.steps.get(i) else {
            return Err(ToolError::new("The wizard has no steps"));
        };
        step.validate().map_err(|issues| {
            ToolError::new(format!("Step `{}` is not complete", step.name()))
                .with_issues(prefix_issues(step.name(), issues))
        })?;
        if i + 1 >= self.config.steps.len() {
            return Err(ToolError::new("This is the last step: submit the wizard"));
        }
        let mut nav = lock(&self.nav);
        if nav.current != i {
            return Err(ToolError::new(
                "The wizard moved to another step while this one was checked; look again",
            ));
        }
        self.set_current(&mut nav, i + 1);
        Ok(self.position(i + 1))
    }

    /// The `back` run.
    fn retreat(&self) -> Result<Value, ToolError> {
        let mut nav = lock(&self.nav);
        if nav.current == 0 {
            return Err(ToolError::new("This is the first step"));
        }
        let i = nav.current - 1;
        self.set_current(&mut nav, i);
        Ok(self.position(i))
    }

    fn position(&self, i: usize) -> Value {
        json!({
            "step": self.config.steps.get(i).map_or("", |s| s.name()),
            "index": i,
            "steps": self.config.steps.len(),
        })
    }
}

/// Each step's matcher under its step name, for the `{step: values}` object.
fn combined_matcher(steps: &[Arc<dyn StepForm>], matchers: &[Matcher]) -> Matcher {
    if matchers.iter().any(Matcher::is_unreadable) {
        return Matcher::unreadable();
    }
    let mut paths = Vec::new();
    for (s, m) in steps.iter().zip(matchers) {
        for p in m.paths() {
            let mut segs = vec![Seg::Key(s.name().to_owned())];
            segs.extend(p.segs().iter().cloned());
            paths.push(SensitivePath::from_segs(segs));
        }
    }
    Matcher::new(paths)
}

fn all_json(steps: &[Arc<dyn StepForm>]) -> Value {
    Value::Object(
        steps
            .iter()
            .map(|s| (s.name().to_owned(), s.json()))
            .collect::<Map<String, Value>>(),
    )
}

fn nav_decode(wizard: &Arc<WizardInner>, check_current: bool, matcher: &Matcher) -> DecodeFn {
    let wizard = Arc::clone(wizard);
    let matcher = matcher.clone();
    Arc::new(move |input: &Value, allow_unknown: bool| {
        decode_typed::<NoInput>(input, allow_unknown)?;
        if check_current && let Some(step) = wizard.current_step() {
            // As a form's submit does: a message at a sensitive path never
            // quotes the value, and no message holds a secret of any step.
            step.validate().map_err(|issues| {
                safe_issues(
                    prefix_issues(step.name(), issues),
                    &matcher,
                    &all_json(&wizard.config.steps),
                )
            })?;
        }
        Ok(Box::new(()) as Decoded)
    })
}

/// The sensitive values of every step now, for the secret set of the wizard's own
/// tools (`next`, `back`, `submit`).
fn wizard_secrets(wizard: &Arc<WizardInner>, matcher: &Matcher) -> Option<StateSecretsFn> {
    if matcher.is_empty() {
        return None;
    }
    let wizard = Arc::clone(wizard);
    let matcher = matcher.clone();
    Some(Arc::new(move || {
        matcher.secrets(&all_json(&wizard.config.steps))
    }))
}

fn nav_spec(
    name: &str,
    description: String,
    decode: DecodeFn,
    run: impl Fn(&WizardInner) -> Result<Value, ToolError> + Send + Sync + 'static,
    wizard: &Arc<WizardInner>,
    matcher: &Matcher,
) -> ToolSpec {
    let state_secrets = wizard_secrets(wizard, matcher);
    let wizard = Arc::clone(wizard);
    let run = Arc::new(run);
    let matcher = matcher.clone();
    let run: RunFn = Arc::new(move |_ctx, _decoded| {
        let out =
            run(&wizard).map_err(|e| scrub_error(e, &matcher, &all_json(&wizard.config.steps)));
        Box::pin(async move { out })
    });
    let mut spec = ToolSpec::raw(
        name.to_owned(),
        description,
        decode,
        run,
        Arc::new(schema_for::<NoInput>()),
        None,
    );
    spec.state_secrets = state_secrets;
    spec
}

fn submit_spec(
    wizard: &Arc<WizardInner>,
    on_submit: WizardSubmit,
    matcher: Matcher,
    place: &str,
) -> ToolSpec {
    let decode: DecodeFn = {
        let wizard = Arc::clone(wizard);
        let matcher = matcher.clone();
        Arc::new(move |input: &Value, allow_unknown: bool| {
            decode_typed::<NoInput>(input, allow_unknown)?;
            wizard
                .validate_all()
                .map_err(|issues| safe_issues(issues, &matcher, &all_json(&wizard.config.steps)))?;
            Ok(Box::new(()) as Decoded)
        })
    };
    let run: RunFn = {
        let wizard = Arc::clone(wizard);
        let matcher = matcher.clone();
        Arc::new(move |ctx: ToolContext, _decoded: Decoded| {
            let wizard = Arc::clone(&wizard);
            let matcher = matcher.clone();
            let on_submit = Arc::clone(&on_submit);
            Box::pin(async move {
                let mut steps = Vec::with_capacity(wizard.config.steps.len());
                let mut json = Map::new();
                for s in &wizard.config.steps {
                    let (typed, values) = s.snapshot()?;
                    steps.push((s.name().to_owned(), typed));
                    json.insert(s.name().to_owned(), values);
                }
                let json = Value::Object(json);
                wizard.validate_all().map_err(|issues| {
                    scrub_error(
                        ToolError::new("The wizard's values are not valid").with_issues(issues),
                        &matcher,
                        &json,
                    )
                })?;
                let values = WizardValues {
                    steps,
                    json: json.clone(),
                };
                on_submit(ctx, values)
                    .await
                    .map_err(|e| scrub_error(e, &matcher, &json))
            })
        })
    };
    let changes: ChangesFn = {
        let wizard = Arc::clone(wizard);
        let matcher = matcher.clone();
        Arc::new(move |_input: &Value| value_changes(&all_json(&wizard.config.steps), &matcher, ""))
    };
    let versions = {
        let wizard = Arc::clone(wizard);
        move || wizard.config.steps.iter().map(|s| s.version()).collect()
    };
    let mut spec = ToolSpec::raw(
        "submit".to_owned(),
        format!("Submit {place} with the values of every step."),
        decode,
        run,
        Arc::new(schema_for::<NoInput>()),
        None,
    )
    .summary(format!("Submit {place}"));
    spec.changes_fn = Some(changes);
    spec.stale_check = Some(stale_check(versions));
    // Every step's sensitive values are secrets of the submit (its outcome, bridge
    // and pub/sub messages), and an approval of it is never remembered.
    spec.state_secrets = wizard_secrets(wizard, &matcher);
    spec
}

impl Toolmark {
    /// Register `wizard` in `scope`: a `fill` per step in `<scope>.<step>`, and
    /// `<scope>.next`, `<scope>.back` and (with [`Wizard::on_submit`])
    /// `<scope>.submit`, shown as the current step moves; see [`Wizard`]. Every tool
    /// is registered, or none.
    ///
    /// Errors: those of [`register_form`](Self::register_form) per step, and
    /// `invalid_spec` for a wizard without steps, two steps of one name, a step named
    /// like the wizard's own scopes (`_wizard-next`, `_wizard-back`,
    /// `_wizard-submit`), or a wizard that is already registered.
    pub fn register_wizard(&self, scope: &Scope, wizard: Wizard) -> Result<(), RegisterError> {
        let inner = &wizard.inner;
        let steps = &inner.config.steps;
        let invalid = |reason: String| RegisterError::InvalidSpec {
            tool: scope.path().to_owned(),
            reason,
        };
        if steps.is_empty() {
            return Err(invalid("a wizard needs at least one step".to_owned()));
        }
        let mut seen = HashSet::new();
        for s in steps {
            if !seen.insert(s.name()) {
                return Err(invalid(format!("two steps are named `{}`", s.name())));
            }
            if [NEXT_SCOPE, BACK_SCOPE, SUBMIT_SCOPE].contains(&s.name()) {
                return Err(invalid(format!(
                    "`{}` is the name of one of the wizard's own scopes; rename the step",
                    s.name()
                )));
            }
        }
        let mut nav = lock(&inner.nav);
        if nav.scopes.as_ref().is_some_and(|s| !s.next.is_disposed()) {
            return Err(invalid("this wizard is already registered".to_owned()));
        }

        let hidden = ScopeOptions {
            when: false,
            transparent: true,
        };
        let step_scopes: Vec<Scope> = steps.iter().map(|s| scope.scope(s.name())).collect();
        let scopes = NavScopes {
            next: scope.scope_with(NEXT_SCOPE, hidden),
            back: scope.scope_with(BACK_SCOPE, hidden),
            submit: inner
                .config
                .on_submit
                .as_ref()
                .map(|_| scope.scope_with(SUBMIT_SCOPE, hidden)),
            steps: step_scopes,
        };

        let mut specs = Vec::new();
        let mut matchers = Vec::new();
        for (s, step_scope) in steps.iter().zip(&scopes.steps) {
            let (spec, matcher) = s.fill(step_scope)?;
            specs.push((spec, step_scope.clone()));
            matchers.push(matcher);
        }
        let place = if scope.path().is_empty() {
            "the wizard".to_owned()
        } else {
            format!("the `{}` wizard", scope.path())
        };
        let combined = combined_matcher(steps, &matchers);
        specs.push((
            nav_spec(
                "next",
                format!(
                    "Go to the next step of {place} (the current step's values must be complete)."
                ),
                nav_decode(inner, true, &combined),
                WizardInner::advance,
                inner,
                &combined,
            ),
            scopes.next.clone(),
        ));
        specs.push((
            nav_spec(
                "back",
                format!("Go back to the previous step of {place}."),
                nav_decode(inner, false, &combined),
                WizardInner::retreat,
                inner,
                &combined,
            ),
            scopes.back.clone(),
        ));
        if let (Some(on_submit), Some(submit_scope)) = (&inner.config.on_submit, &scopes.submit) {
            let spec = submit_spec(inner, Arc::clone(on_submit), combined.clone(), &place)
                .effect(inner.config.submit_effect);
            specs.push((spec, submit_scope.clone()));
        }
        // Shown as the current step says before any tool exists, so no other step's
        // fill is ever visible (and put back as they were if registration fails).
        let shown: Vec<&Scope> = scopes
            .steps
            .iter()
            .chain([&scopes.next, &scopes.back])
            .chain(scopes.submit.as_ref())
            .collect();
        let before: Vec<bool> = shown.iter().map(|s| s.when()).collect();
        scopes.show(nav.current);
        if let Err(e) = register_specs(self, specs) {
            for (s, when) in shown.iter().zip(before) {
                s.set_when(when);
            }
            return Err(e);
        }
        nav.scopes = Some(scopes);
        Ok(())
    }
}
