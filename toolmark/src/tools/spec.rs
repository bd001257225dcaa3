//! Tool definitions: [`ToolSpec`] (dynamic tools and the macro's output), [`Effect`],
//! and what the manifest shows of a tool, [`ToolInfo`].

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CallerSet, Issue, ToolContext, ToolError};

/// What running a tool does to the world.
///
/// Serialized lowercase. [`Consequential`](Effect::Consequential) and
/// [`Destructive`](Effect::Destructive) calls need the user's confirmation unless the
/// caller is [`Human`](crate::Caller::Human).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Reads only.
    Read,
    /// Changes app state in a way the user can see and easily revert (the default).
    #[default]
    Write,
    /// Has consequences beyond the app (sends, pays, publishes): needs confirmation.
    Consequential,
    /// Deletes or destroys: needs confirmation.
    Destructive,
}

impl Effect {
    /// Whether calls need the user's confirmation (consequential or destructive).
    pub const fn needs_confirmation(self) -> bool {
        matches!(self, Effect::Consequential | Effect::Destructive)
    }

    /// Whether a tool of this effect reaches beyond the app by default (MCP's
    /// `openWorldHint`): only [`Consequential`](Effect::Consequential) ones,
    /// whose consequences are outside the app by definition (sends, pays,
    /// publishes). Reads, writes and deletions touch the app's own data unless
    /// the tool says otherwise (`#[tool(open_world)]`, [`ToolSpec::open_world`]).
    pub const fn open_world(self) -> bool {
        matches!(self, Effect::Consequential)
    }

    /// Whether a tool of this effect is idempotent by default (MCP's
    /// `idempotentHint`): only [`Read`](Effect::Read) ones. A write, a send or a
    /// deletion may or may not be; say so with `#[tool(idempotent)]` or
    /// [`ToolSpec::idempotent`].
    pub const fn idempotent(self) -> bool {
        matches!(self, Effect::Read)
    }

    /// The lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Consequential => "consequential",
            Effect::Destructive => "destructive",
        }
    }
}

/// A tool's input, decoded and validated, waiting to be run.
///
/// The decode step is separate from the run so that validation happens before
/// confirmation and the input is decoded once.
pub type Decoded = Box<dyn Any + Send>;

/// The [`Decoded`] of a tool whose run takes its JSON input as it is (a dynamic
/// tool, a form's fill): the decode only validates, and the run gets a copy of the
/// input when it starts ([`for_run`]). A box of this zero-sized marker allocates
/// nothing, so a call that never runs (deferred, refused by the policy) copies
/// nothing.
pub(crate) struct InputItself;

impl InputItself {
    /// The marker, boxed (no allocation).
    pub(crate) fn decoded() -> Decoded {
        Box::new(InputItself)
    }
}

/// The value a run takes: `decoded`, or, when the decode kept the input itself
/// ([`InputItself`]), the input. `keep` says whether the call still reads its
/// input once the run starts (a tool with sensitive paths or state: its secret set
/// is read from it): then the run gets a copy; else the input moves into the run
/// and the call keeps `null` (one copy of the input, not two).
#[inline]
pub(crate) fn for_run(decoded: Decoded, input: &mut Value, keep: bool) -> Decoded {
    if decoded.is::<InputItself>() {
        if keep {
            Box::new(input.clone())
        } else {
            Box::new(std::mem::take(input))
        }
    } else {
        decoded
    }
}

pub(crate) type DecodeFn = Arc<dyn Fn(&Value, bool) -> Result<Decoded, Vec<Issue>> + Send + Sync>;
pub(crate) type RunFn =
    Arc<dyn Fn(ToolContext, Decoded) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;
/// Decode and build the run in one step (tools that can: typed and `#[tool]`).
pub(crate) type PrepareFn = Arc<
    dyn Fn(&Value, bool, ToolContext) -> Result<crate::tools::private::ToolFuture, Vec<Issue>>
        + Send
        + Sync,
>;
pub(crate) type ChangesFn = Arc<dyn Fn(&Value) -> Vec<crate::Change> + Send + Sync>;
pub(crate) type SensitiveFn = Arc<dyn Fn() -> Result<Vec<String>, String> + Send + Sync>;
/// A form's (or wizard's) version: read when a deferred confirmation is requested
/// and again at approval, which is refused (`stale`) when it changed in between.
#[derive(Clone)]
pub(crate) struct StaleCheck(pub(crate) Arc<dyn Fn() -> Vec<u64> + Send + Sync>);

impl StaleCheck {
    /// The version now.
    pub(crate) fn version(&self) -> Vec<u64> {
        (self.0)()
    }
}

/// A `State<T>` a tool extracts: checked at registration (`missing_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateNeed {
    /// The state type.
    pub type_id: TypeId,
    /// Its name, for errors.
    pub type_name: &'static str,
}

impl StateNeed {
    /// The need for a `State<T>`.
    pub fn of<T: 'static>() -> Self {
        StateNeed {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

#[derive(Clone)]
pub(crate) enum Handler {
    /// Input validated against the declared JSON schema, passed as a `Value`
    /// (the run takes the input out of its `Decoded`).
    Dynamic(RunFn),
    /// A typed decode step and a run over the decoded value.
    Typed {
        decode: DecodeFn,
        run: RunFn,
        prepare: Option<PrepareFn>,
    },
}

#[derive(Clone)]
pub(crate) enum SensitiveSource {
    /// Paths given up front; `rust_names` when they name Rust fields (the macro).
    Static {
        paths: Vec<String>,
        rust_names: bool,
    },
    /// A fallible function read at request and at approval time.
    Dynamic(SensitiveFn),
}

/// A tool definition without the macro: for server-declared tools, plugins, and
/// closures.
///
/// ```
/// use serde_json::json;
/// use toolmark::{Effect, ToolSpec};
///
/// let spec = ToolSpec::new("echo", "Echo the text back")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" } },
///         "required": ["text"]
///     }))
///     .effect(Effect::Read)
///     .handler(|_ctx, input| async move { Ok(input["text"].clone()) });
/// # let _ = spec;
/// ```
///
/// A typed tool, with the schema generated by schemars:
///
/// ```
/// use toolmark::{ToolError, ToolSpec};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// let spec = ToolSpec::typed("add", "Add two numbers", |_ctx, input: Add| async move {
///     Ok::<_, ToolError>(input.a + input.b)
/// });
/// # let _ = spec;
/// ```
#[derive(Clone)]
pub struct ToolSpec {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) input_schema: Option<Arc<Value>>,
    pub(crate) output_schema: Option<Arc<Value>>,
    pub(crate) effect: Effect,
    /// `None`: the effect's default ([`Effect::open_world`]).
    pub(crate) open_world: Option<bool>,
    /// `None`: the effect's default ([`Effect::idempotent`]).
    pub(crate) idempotent: Option<bool>,
    pub(crate) callers: CallerSet,
    pub(crate) sensitive: SensitiveSource,
    pub(crate) summary: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) states: Vec<StateNeed>,
    pub(crate) handler: Option<Handler>,
    pub(crate) stale_check: Option<StaleCheck>,
    pub(crate) changes_fn: Option<ChangesFn>,
    /// The sensitive values of the state the tool works on (a form's values): part
    /// of every call's secret set.
    pub(crate) state_secrets: Option<crate::sensitive::StateSecretsFn>,
    /// Summary placeholders name Rust fields (the macro), mapped to JSON names at
    /// registration.
    pub(crate) rust_names: bool,
    /// The handler reads its `ToolContext` (false only for `#[tool]` fns that take
    /// neither a context nor a state: their calls skip allocating one).
    pub(crate) uses_context: bool,
}

impl ToolSpec {
    /// A tool named `name` (one segment, `[A-Za-z0-9_-]+`) described by `description`.
    ///
    /// Defaults: effect [`Effect::Write`], every caller allowed, input schema
    /// `{"type":"object"}`, no sensitive paths. Give it a [`handler`](Self::handler).
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: None,
            output_schema: None,
            effect: Effect::Write,
            open_world: None,
            idempotent: None,
            callers: CallerSet::ALL,
            sensitive: SensitiveSource::Static {
                paths: Vec::new(),
                rust_names: false,
            },
            summary: None,
            timeout: None,
            states: Vec::new(),
            handler: None,
            stale_check: None,
            changes_fn: None,
            state_secrets: None,
            rust_names: false,
            uses_context: true,
        }
    }

    /// A typed tool: the input is decoded into `T` (with issues and paths on
    /// failure) and its JSON schema is generated by schemars (draft 2020-12), once.
    pub fn typed<T, O, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        run: F,
    ) -> Self
    where
        T: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        O: Serialize,
        F: Fn(ToolContext, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        /// The run of `input`: `run`'s future, its output as JSON.
        fn start<T, O, F, Fut>(
            run: &F,
            ctx: ToolContext,
            input: T,
        ) -> BoxFuture<'static, Result<Value, ToolError>>
        where
            O: Serialize,
            F: Fn(ToolContext, T) -> Fut,
            Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        {
            let fut = run(ctx, input);
            Box::pin(async move { crate::call::input::output_to_value(&fut.await?) })
        }
        let schema = crate::call::input::shared_schema_for::<T>();
        // `run` held once; the run and prepare fns share it.
        let run = Arc::new(run);
        let for_prepare = Arc::clone(&run);
        let run_fn: RunFn =
            Arc::new(
                move |ctx, decoded| match crate::call::input::take::<T>(decoded) {
                    Ok(input) => start(&*run, ctx, input),
                    Err(e) => Box::pin(async move { Err(e) }),
                },
            );
        /// The run of `input`, inline when it fits (the one-step call path).
        fn start_inline<T, O, F, Fut>(
            run: &F,
            ctx: ToolContext,
            input: T,
        ) -> crate::tools::private::ToolFuture
        where
            O: Serialize,
            F: Fn(ToolContext, T) -> Fut,
            Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        {
            let fut = run(ctx, input);
            crate::tools::private::tool_future(async move {
                crate::call::input::output_to_value(&fut.await?)
            })
        }
        let prepare: PrepareFn = Arc::new(move |value: &Value, allow_unknown: bool, ctx| {
            match crate::call::input::decode_typed::<T>(value, allow_unknown) {
                Ok(input) => Ok(start_inline(&*for_prepare, ctx, input)),
                Err(issues) => Err(issues),
            }
        });
        let mut spec = ToolSpec::new(name, description);
        spec.input_schema = Some(schema);
        spec.handler = Some(Handler::Typed {
            decode: Arc::new(crate::call::input::decode::<T>),
            run: run_fn,
            prepare: Some(prepare),
        });
        spec
    }

    /// The JSON Schema of the input (an object schema). Dynamic tools' inputs are
    /// validated against it (the `jsonschema` crate); sensitive paths are checked
    /// against it at registration. Kept standard JSON Schema 2020-12: a format
    /// outside that vocabulary is dropped (schemars' integer formats become the
    /// bounds they mean, `"uint8"` → `minimum: 0, maximum: 255`).
    #[must_use]
    pub fn input_schema(mut self, mut schema: Value) -> Self {
        crate::tools::schema::standardize(&mut schema);
        self.input_schema = Some(Arc::new(schema));
        self
    }

    /// The JSON Schema of the output, shown as the manifest's `outputSchema`
    /// (made standard the same way as [`input_schema`](Self::input_schema)).
    #[must_use]
    pub fn output_schema(mut self, mut schema: Value) -> Self {
        crate::tools::schema::standardize(&mut schema);
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// A human title (the manifest's `title`).
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The tool's effect (default [`Effect::Write`]).
    #[must_use]
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// Whether the tool reaches beyond the app, into an open world of things it
    /// does not own (other people's inboxes, a payment network, the web), or only
    /// the app's own data (a closed world): MCP's `openWorldHint`. Default: the
    /// effect's ([`Effect::open_world`]: only consequential tools are open).
    ///
    /// ```
    /// use toolmark::{Effect, ToolSpec};
    ///
    /// // Reads the web: a read that is open-world.
    /// let fetch = ToolSpec::new("fetch_page", "Fetch a web page")
    ///     .effect(Effect::Read)
    ///     .open_world(true);
    /// # let _ = fetch;
    /// ```
    #[must_use]
    pub fn open_world(mut self, open: bool) -> Self {
        self.open_world = Some(open);
        self
    }

    /// Whether calling the tool again with the same input has no further effect
    /// (setting a value, deleting by id): MCP's `idempotentHint`, which lets a
    /// client retry safely. Default: the effect's ([`Effect::idempotent`]: only
    /// reads).
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// The callers allowed to call it (default: all).
    #[must_use]
    pub fn callers(mut self, callers: impl Into<CallerSet>) -> Self {
        self.callers = callers.into();
        self
    }

    /// Sensitive input paths, by JSON property name: `seg(.seg|[])*`, `[]` matching
    /// any array index (`"cards[].cvc"`) and any value of a map (`"wallet[].cvc"` on
    /// a `HashMap<String, Card>`). Checked against the input schema at registration
    /// (`invalid_sensitive_path`).
    ///
    /// A tool with sensitive paths refuses (`invalid`, "unknown field") every input
    /// key its schema does not list, at every depth, whatever
    /// [`allow_unknown_fields`](crate::ToolmarkBuilder::allow_unknown_fields) says;
    /// keys inside a sensitive map are secrets too (`[redacted]` in issue paths).
    ///
    /// The values at these paths (and any value under a key the schema does not
    /// list, which serde could read into one by an alias) are the call's secrets:
    /// everything that leaves the runtime toward an observer — the outcome, the
    /// bridge message, events, `tracing` fields, provider results, MCP results,
    /// refusal issues, recorded span arguments — is built with them scrubbed
    /// (`"[redacted]"`), the tool's own output and error messages included.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolmark::{CallOptions, Caller, Effect, ToolSpec, Toolmark};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let tm = Toolmark::builder().build().unwrap();
    /// tm.register(
    ///     ToolSpec::new("check", "Check a PIN")
    ///         .input_schema(json!({"type": "object", "properties": {"pin": {"type": "string"}}}))
    ///         .effect(Effect::Read)
    ///         .sensitive(["pin"])
    ///         // A careless tool that echoes its input.
    ///         .handler(|_ctx, input| async move { Ok(json!({"you sent": input})) }),
    ///     Default::default(),
    /// ).unwrap();
    /// let out = tm.call("check", json!({"pin": "7310"}), CallOptions::new(Caller::InApp)).await;
    /// assert_eq!(out.output(), Some(&json!({"you sent": {"pin": "[redacted]"}})));
    /// // A key the schema does not list is refused, its value never shown.
    /// let out = tm.call("check", json!({"PIN": "7310"}), CallOptions::new(Caller::InApp)).await;
    /// assert!(!serde_json::to_string(&out).unwrap().contains("7310"));
    /// # }
    /// ```
    #[must_use]
    pub fn sensitive<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sensitive = SensitiveSource::Static {
            paths: paths.into_iter().map(Into::into).collect(),
            rust_names: false,
        };
        self
    }

    /// Sensitive paths read from a fallible function, at request and at approval
    /// time. When it fails (or yields a malformed path) the whole input counts as
    /// sensitive.
    #[must_use]
    pub fn sensitive_fn<F>(mut self, paths: F) -> Self
    where
        F: Fn() -> Result<Vec<String>, String> + Send + Sync + 'static,
    {
        self.sensitive = SensitiveSource::Dynamic(Arc::new(paths));
        self
    }

    /// The confirmation summary template: `{field}` (or `{a.b}`) is replaced by
    /// the input's value there (`"[redacted]"` at a sensitive path); `{{` and `}}`
    /// are literal braces. Without one, the title or the description is the summary.
    #[must_use]
    pub fn summary(mut self, template: impl Into<String>) -> Self {
        self.summary = Some(template.into());
        self
    }

    /// The tool's own deadline, replacing the builder's `call_timeout` for its runs
    /// that have no caller signal.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Declare a `State<T>` the handler reads with [`ToolContext::state`]; checked
    /// at registration (`missing_state`).
    #[must_use]
    pub fn needs_state<T: Send + Sync + 'static>(mut self) -> Self {
        self.states.push(StateNeed::of::<T>());
        self
    }

    /// The handler of a dynamic tool: it gets the validated input as JSON.
    #[must_use]
    pub fn handler<F, Fut>(mut self, run: F) -> Self
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let run = Arc::new(run);
        // One box per run: the handler's future is awaited inside it (called at the
        // first poll, as the run starts).
        self.handler = Some(Handler::Dynamic(Arc::new(move |ctx, decoded: Decoded| {
            let run = Arc::clone(&run);
            Box::pin(async move {
                let input = crate::call::input::downcast::<Value>(decoded)?;
                run(ctx, input).await
            })
        })));
        self
    }

    /// The tool's name (one segment).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tool's effect.
    pub fn get_effect(&self) -> Effect {
        self.effect
    }

    pub(crate) fn raw(
        name: String,
        description: String,
        decode: DecodeFn,
        run: RunFn,
        input_schema: Arc<Value>,
        prepare: Option<PrepareFn>,
    ) -> Self {
        let mut spec = ToolSpec::new(name, description);
        spec.input_schema = Some(input_schema);
        spec.handler = Some(Handler::Typed {
            decode,
            run,
            prepare,
        });
        spec
    }
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("effect", &self.effect)
            .field("callers", &self.callers)
            .finish_non_exhaustive()
    }
}

/// MCP-style behaviour hints of a tool, every one set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool only reads (effect `read`).
    pub read_only_hint: bool,
    /// The tool may destroy data (effect `destructive`).
    pub destructive_hint: bool,
    /// The tool reaches beyond the app ([`ToolSpec::open_world`]; by default
    /// only consequential tools).
    pub open_world_hint: bool,
    /// Calling again with the same input has no further effect
    /// ([`ToolSpec::idempotent`]; by default only reads).
    pub idempotent_hint: bool,
}

/// One tool as a caller sees it in the manifest.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// The full name (`challenges.create.fill`).
    pub name: String,
    /// A human title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    pub description: String,
    /// The input's JSON Schema (2020-12), sensitive properties marked `writeOnly`.
    pub input_schema: Arc<Value>,
    /// The output's JSON Schema, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// The effect.
    pub effect: Effect,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Whether a call from this caller needs the user's confirmation.
    pub needs_confirmation: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{for_run, Decoded, InputItself};

    #[test]
    fn a_run_gets_a_copy_of_the_input_for_the_marker_and_any_other_value_as_it_is() {
        let original = json!({"title": "hi", "tags": ["a"]});
        let mut input = original.clone();
        let run = for_run(InputItself::decoded(), &mut input, true);
        assert_eq!(run.downcast_ref::<Value>(), Some(&original));
        assert_eq!(input, original, "the call keeps its input");
        let own: Decoded = Box::new(7_u32);
        let run = for_run(own, &mut input, false);
        assert_eq!(run.downcast_ref::<u32>(), Some(&7));
        assert_eq!(input, original, "a decoded value leaves the input alone");
    }

    #[test]
    fn the_input_moves_into_the_run_when_the_call_no_longer_reads_it() {
        let original = json!({"title": "hi"});
        let mut input = original.clone();
        let run = for_run(InputItself::decoded(), &mut input, false);
        assert_eq!(run.downcast_ref::<Value>(), Some(&original));
        assert_eq!(input, Value::Null, "moved, not copied");
    }

    #[test]
    fn the_marker_allocates_nothing() {
        assert_eq!(std::mem::size_of::<InputItself>(), 0);
    }
}
