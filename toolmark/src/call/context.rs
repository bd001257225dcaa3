//! [`ToolContext`]: what a running tool can ask of the runtime, and the
//! [`State`] extractor.

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::call::client::{
    CallerClient, ClientError, ElicitRequest, Elicited, LogFn, LogLevel, LogMessage, SampleRequest,
    Sampled,
};
use crate::sensitive::scrub;
use crate::sync::lock;
use crate::toolmark::Inner;
use crate::tools::registry::ToolEntry;
use crate::{Ask, Caller, ConfirmResult, ToolError};

/// App state given to the builder with `.state(value)`, extracted by a `#[tool]`
/// parameter `State<T>` (checked at registration: `missing_state`). Derefs to `T`.
pub struct State<T>(pub Arc<T>);

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T> std::ops::Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&self.0).finish()
    }
}

/// App states by type: the builder's `.state(value)`s, or a test context's.
/// Boxed, and nothing allocated while empty: a map is part of every call's state
/// (a test context's origin), whose size every call in flight pays.
#[derive(Default)]
pub(crate) struct StateMap(Option<Box<StateTable>>);

type StateTable = std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>;

impl StateMap {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, state: T) {
        self.0
            .get_or_insert_default()
            .insert(std::any::TypeId::of::<T>(), Arc::new(state));
    }

    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.0
            .as_ref()?
            .get(&std::any::TypeId::of::<T>())
            .and_then(|s| Arc::clone(s).downcast::<T>().ok())
    }

    pub(crate) fn contains(&self, type_id: std::any::TypeId) -> bool {
        self.0.as_ref().is_some_and(|m| m.contains_key(&type_id))
    }
}

/// Progress a tool reports with [`ToolContext::progress`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Units done.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
}

pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;
pub(crate) type Restorer =
    Box<dyn FnOnce() -> futures_util::future::BoxFuture<'static, Result<(), ToolError>> + Send>;

/// A run's deadline, which `ctx.confirm` pauses while the user decides.
pub(crate) struct Deadline {
    /// The limit as given (read without the lock).
    limit: Option<Duration>,
    state: Mutex<DeadlineState>,
    changed: Notify,
}

#[derive(Clone, Copy)]
struct DeadlineState {
    /// Time left as of `since` (None: no deadline).
    left: Option<Duration>,
    /// Running since (None while paused).
    since: Option<Instant>,
    pauses: u32,
}

impl Deadline {
    /// A deadline `limit` from when it is [started](Self::start_at) (`None`: none).
    pub(crate) fn new(limit: Option<Duration>) -> Self {
        Deadline {
            limit,
            state: Mutex::new(DeadlineState {
                left: limit,
                since: None,
                pauses: 0,
            }),
            changed: Notify::new(),
        }
    }

    /// The limit as given (`None`: no deadline).
    pub(crate) fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// Start counting from `at` (when the run was first polled; a run that
    /// finishes on its first poll never needs to start it).
    pub(crate) fn start_at(&self, at: Option<Instant>) {
        let mut s = lock(&self.state);
        if s.since.is_none() && s.pauses == 0 {
            s.since = Some(at.unwrap_or_else(Instant::now));
        }
    }

    /// Has the deadline passed (now, not counting paused time)?
    pub(crate) fn is_past(&self) -> bool {
        if self.limit.is_none() {
            return false;
        }
        let s = *lock(&self.state);
        match (s.left, s.since) {
            (Some(left), Some(since)) if s.pauses == 0 => since.elapsed() >= left,
            _ => false,
        }
    }

    /// Resolves when the deadline has passed (never, if there is none).
    pub(crate) async fn expired(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let until = {
                let s = *lock(&self.state);
                match (s.left, s.since) {
                    (Some(left), Some(since)) if s.pauses == 0 => Some(since + left),
                    _ => None,
                }
            };
            match until {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {
                            let s = *lock(&self.state);
                            if s.pauses == 0 && s.since.is_some() {
                                return;
                            }
                        }
                        () = &mut changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Pause until the guard drops; the time left is kept.
    pub(crate) fn pause(call: &Arc<CallShared>) -> PauseGuard {
        let this = &call.deadline;
        {
            let mut s = lock(&this.state);
            s.pauses += 1;
            if s.pauses == 1 {
                if let (Some(left), Some(since)) = (s.left, s.since) {
                    s.left = Some(left.saturating_sub(since.elapsed()));
                }
                s.since = None;
            }
        }
        this.changed.notify_waiters();
        PauseGuard(Arc::clone(call))
    }
}

pub(crate) struct PauseGuard(Arc<CallShared>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        let deadline = &self.0.deadline;
        {
            let mut s = lock(&deadline.state);
            s.pauses = s.pauses.saturating_sub(1);
            if s.pauses == 0 {
                s.since = Some(Instant::now());
            }
        }
        deadline.changed.notify_waiters();
    }
}

/// The run's cancellation signal, created on first use (most runs never ask).
pub(crate) struct Signal {
    state: Mutex<SignalState>,
}

struct SignalState {
    token: Option<CancellationToken>,
    parent: Option<CancellationToken>,
    aborted: bool,
}

impl Signal {
    /// A signal that is also cancelled when `parent` (the caller's) is.
    pub(crate) fn new(parent: Option<CancellationToken>) -> Self {
        Signal {
            state: Mutex::new(SignalState {
                token: None,
                parent,
                aborted: false,
            }),
        }
    }

    pub(crate) fn token(&self) -> CancellationToken {
        let mut s = lock(&self.state);
        if let Some(t) = &s.token {
            return t.clone();
        }
        let t = match &s.parent {
            Some(p) => p.child_token(),
            None => CancellationToken::new(),
        };
        if s.aborted {
            t.cancel();
        }
        s.token = Some(t.clone());
        t
    }

    pub(crate) fn cancel(&self) {
        let mut s = lock(&self.state);
        s.aborted = true;
        if let Some(t) = &s.token {
            t.cancel();
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        let s = lock(&self.state);
        s.aborted
            || s.parent
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
    }
}

/// Where a run comes from: what its context can reach.
pub(crate) enum Origin {
    /// A tool call: the entry names the tool and leads to the toolmark (weakly,
    /// so a call takes no extra reference count on it).
    Tool(Arc<ToolEntry>),
    /// An undo restorer.
    Undo { inner: Arc<Inner>, tool: Arc<str> },
    /// A context made by `toolmark::testing`, reaching the scopes of the toolmark
    /// it was given, if any.
    Test {
        tool: Arc<str>,
        states: StateMap,
        scopes: Option<Weak<Inner>>,
    },
    /// No run: a thread's spare state between two calls (see [`CallShared::new_shared`]).
    Spare,
}

/// What a run can reach of its caller's client: a log sink and a client to ask
/// (both per call, from [`CallOptions`](crate::CallOptions)).
#[derive(Clone, Default)]
pub(crate) struct Reach {
    pub(crate) log: Option<LogFn>,
    pub(crate) client: Option<Arc<dyn CallerClient>>,
    /// Set when the call's tool panics (a task then ends `failed`, not with
    /// the tool's error).
    pub(crate) panicked: Option<Arc<std::sync::atomic::AtomicBool>>,
}

thread_local! {
    /// This thread's spare call state (see [`CallShared::new_shared`]): one
    /// allocation, inert, reused by the next call here.
    static SPARE: Cell<Option<Arc<CallShared>>> = const { Cell::new(None) };
}

/// Shared by a call's context clones.
pub(crate) struct CallShared {
    pub(crate) caller: Caller,
    pub(crate) origin: Origin,
    pub(crate) signal: Signal,
    /// The real input (for `ctx.confirm` requests, where it is redacted).
    pub(crate) input: Value,
    pub(crate) deadline: Deadline,
    pub(crate) progress: Option<ProgressFn>,
    /// Boxed behind one pointer: most calls have none, and a run's state stays small.
    pub(crate) reach: Option<Arc<Reach>>,
}

impl CallShared {
    fn client(&self) -> Option<Arc<dyn CallerClient>> {
        self.reach.as_ref().and_then(|r| r.client.clone())
    }

    /// The call's secret set, to scrub what a run sends out (empty for a tool
    /// without sensitive paths or state).
    pub(crate) fn secret_set(&self) -> crate::sensitive::SecretSet {
        match self.entry() {
            Some(e) => e.secret_set(&self.input),
            None => crate::sensitive::SecretSet::none(),
        }
    }

    /// The call's secrets as text (see [`secret_set`](Self::secret_set)).
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.secret_set().texts().to_vec()
    }

    pub(crate) fn tool(&self) -> &str {
        match &self.origin {
            Origin::Tool(entry) => &entry.name,
            Origin::Undo { tool, .. } | Origin::Test { tool, .. } => tool,
            Origin::Spare => "",
        }
    }

    pub(crate) fn entry(&self) -> Option<&Arc<ToolEntry>> {
        match &self.origin {
            Origin::Tool(entry) => Some(entry),
            _ => None,
        }
    }

    /// A call's state, shared with its context: in the spare allocation of this
    /// thread's last call whose context nobody kept (no allocation), else in a new
    /// one. [`recycle`](Self::recycle) gives the allocation back when the call ends.
    #[inline(always)]
    pub(crate) fn new_shared(
        caller: Caller,
        origin: Origin,
        signal: Option<&CancellationToken>,
        input: Value,
        limit: Option<Duration>,
        progress: Option<ProgressFn>,
        reach: Option<Arc<Reach>>,
    ) -> Arc<CallShared> {
        if let Ok(Some(mut spare)) = SPARE.try_with(Cell::take)
            && let Some(state) = Arc::get_mut(&mut spare)
        {
            // Field by field: what the spare holds is inert (see `recycle`), and its
            // deadline and signal are fresh, with no limit and no parent.
            state.caller = caller;
            state.origin = origin;
            if let Some(parent) = signal {
                state.signal = Signal::new(Some(parent.clone()));
            }
            state.input = input;
            if limit.is_some() {
                state.deadline = Deadline::new(limit);
            }
            state.progress = progress;
            state.reach = reach;
            return spare;
        }
        Arc::new(CallShared {
            caller,
            origin,
            signal: Signal::new(signal.cloned()),
            input,
            deadline: Deadline::new(limit),
            progress,
            reach,
        })
    }

    /// The end of a call's shared state: when no context clone outlived the call,
    /// what it holds is dropped now (the input, the entry, the client, the signal's
    /// tokens) and the allocation is kept, inert, as this thread's spare for the
    /// next call (the caller's `Arc` then only drops its count).
    #[inline]
    pub(crate) fn recycle(shared: &mut Arc<CallShared>) {
        if let Some(state) = Arc::get_mut(shared) {
            state.origin = Origin::Spare;
            state.signal = Signal::new(None);
            state.input = Value::Null;
            state.deadline = Deadline::new(None);
            state.progress = None;
            state.reach = None;
            // A thread being torn down keeps no spare.
            let _ = SPARE.try_with(|spare| spare.set(Some(Arc::clone(shared))));
        }
    }

    pub(crate) fn inner(&self) -> Option<Arc<Inner>> {
        match &self.origin {
            Origin::Tool(entry) => entry.inner.upgrade(),
            Origin::Undo { inner, .. } => Some(Arc::clone(inner)),
            Origin::Test { .. } | Origin::Spare => None,
        }
    }
}

/// What a running tool gets: who called, the cancellation signal, confirmation,
/// app state, progress and undo. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    pub(crate) call: Arc<CallShared>,
}

impl fmt::Debug for ToolContext {
    /// Never prints the input.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool", &self.call.tool())
            .field("caller", &self.call.caller)
            .field("cancelled", &self.call.signal.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// The context handed to a `#[tool]` fn that takes no `ToolContext` and no
    /// `State` (so it never reads it): shared, allocated once.
    pub(crate) fn detached() -> ToolContext {
        static DETACHED: std::sync::OnceLock<ToolContext> = std::sync::OnceLock::new();
        DETACHED
            .get_or_init(|| ToolContext {
                call: Arc::new(CallShared {
                    caller: Caller::Human,
                    origin: Origin::Test {
                        tool: Arc::from("detached"),
                        states: StateMap::default(),
                        scopes: None,
                    },
                    signal: Signal::new(None),
                    input: Value::Null,
                    deadline: Deadline::new(None),
                    progress: None,
                    reach: None,
                }),
            })
            .clone()
    }

    /// Who is calling. An approved deferred call runs as [`Caller::Human`].
    pub fn caller(&self) -> Caller {
        self.call.caller
    }

    /// The tool's full name.
    pub fn tool_name(&self) -> &str {
        self.call.tool()
    }

    /// Cancelled when the run is aborted (deadline, the caller's signal, disposal,
    /// shutdown). A tool that checks it ends early; one that ignores it is
    /// abandoned after the abort grace.
    pub fn signal(&self) -> CancellationToken {
        self.call.signal.token()
    }

    /// Whether the run has been aborted.
    pub fn is_cancelled(&self) -> bool {
        self.call.signal.is_cancelled()
    }

    /// App state given to the builder with `.state(value)`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        match &self.call.origin {
            Origin::Test { states, .. } => states.get::<T>(),
            _ => self.call.inner().and_then(|inner| inner.state::<T>()),
        }
    }

    /// The scope at a dotted `path` of the toolmark this tool runs in (created if
    /// missing, as [`Toolmark::scope_at`](crate::Toolmark::scope_at) does): a tool
    /// shows or hides what the agent may do next.
    ///
    /// ```standalone_crate
    /// use toolmark::{tool, CallOptions, Caller, ScopeOptions, ToolContext, Toolmark};
    ///
    /// /// Open the admin panel: its tools become available.
    /// #[tool(scope = "settings")]
    /// async fn open_admin(ctx: ToolContext) {
    ///     if let Some(admin) = ctx.scope_at("admin") {
    ///         admin.set_when(true);
    ///     }
    /// }
    ///
    /// /// Count the users.
    /// #[tool(scope = "admin", read_only)]
    /// async fn user_count() -> u32 { 42 }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let tm = Toolmark::builder().scope_at("admin", ScopeOptions::hidden()).build().unwrap();
    /// tm.register_collected().unwrap();
    /// let agent = CallOptions::new(Caller::InApp);
    /// assert!(tm.call("admin.user_count", serde_json::json!({}), agent.clone()).await.refusal().is_some());
    ///
    /// tm.call("settings.open_admin", serde_json::json!({}), agent.clone()).await;
    /// let count = tm.call("admin.user_count", serde_json::json!({}), agent).await;
    /// assert_eq!(count.output(), Some(&serde_json::json!(42)));
    /// # }
    /// ```
    ///
    /// `None` when the context belongs to no live toolmark: one made by
    /// [`toolmark::testing::context`](crate::testing::context) without
    /// [`TestContext::toolmark`](crate::testing::TestContext::toolmark), or a run
    /// that outlived its toolmark.
    pub fn scope_at(&self, path: &str) -> Option<crate::Scope> {
        let inner = match &self.call.origin {
            Origin::Test { scopes, .. } => scopes.as_ref().and_then(Weak::upgrade),
            _ => self.call.inner(),
        }?;
        Some(crate::Toolmark { inner }.scope_at(path))
    }

    /// Report progress (`done` of `total` units) to the caller, if it listens.
    pub fn progress(&self, done: u64, total: impl Into<Option<u64>>) {
        if let Some(p) = &self.call.progress {
            p(Progress {
                done,
                total: total.into(),
            });
        }
    }

    /// Log `message` at `level` for the caller: scrubbed of the call's sensitive
    /// values (as error messages are), then given to the call's log sink
    /// ([`CallOptions::on_log`](crate::CallOptions::on_log); an MCP client gets it
    /// as `notifications/message` when its `logging/setLevel` lets it through), or,
    /// when the call has no sink, emitted as a `tracing` event (target
    /// `toolmark::tool`, fields `tool` and `level`). Never blocks, never fails.
    ///
    /// ```
    /// use toolmark::{LogLevel, ToolContext};
    /// fn step(ctx: &ToolContext, n: usize) {
    ///     ctx.log(LogLevel::Info, format!("step {n} done"));
    /// }
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        let message = message.into();
        let set = self.call.secret_set();
        // The one way out: the message an observer reads is built by the secret set.
        let message = if set.is_empty() {
            message
        } else {
            set.text(&message).into_inner()
        };
        let tool = self.call.tool();
        match self.call.reach.as_ref().and_then(|r| r.log.as_ref()) {
            Some(sink) => sink(LogMessage {
                tool: tool.to_owned(),
                level,
                message,
            }),
            None => trace_log(tool, level, &message),
        }
    }

    /// Ask the calling client's user to fill in a form: `message` says what is
    /// asked, `schema` is the answer's JSON schema (an object whose properties
    /// are primitives: string, number, integer, boolean, enums; MCP's
    /// `elicitation/create`). The message and every string of the schema are
    /// scrubbed of the call's sensitive values. The call deadline is paused while
    /// the user answers, and the call's cancellation ends the wait
    /// ([`ClientError::Cancelled`]).
    ///
    /// A call without a client that can be asked (an in-app call, an MCP client
    /// that did not declare the `elicitation` capability) gets
    /// [`ClientError::NotSupported`] (code `not_supported`) at once.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolmark::{Elicited, ToolContext, ToolError};
    /// async fn pick_size(ctx: ToolContext) -> Result<String, ToolError> {
    ///     let schema = json!({
    ///         "type": "object",
    ///         "properties": {"size": {"type": "string", "enum": ["S", "M", "L"]}},
    ///         "required": ["size"]
    ///     });
    ///     match ctx.elicit("Which size?", schema).await? {
    ///         Elicited::Accept(answer) => Ok(answer["size"].as_str().unwrap_or("M").to_owned()),
    ///         Elicited::Decline | Elicited::Cancel => Err(ToolError::new("no size chosen")),
    ///     }
    /// }
    /// ```
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicited, ClientError> {
        self.ask_form(None, message.into(), schema).await
    }

    /// [`elicit`](Self::elicit), with the question named `key` (1 to 64 of
    /// `A-Z a-z 0-9 _ - .`, not `confirm`): on MCP 2026-07-28 it is asked under
    /// `inputRequests.<key>` instead of a numbered key (`elicit-N`), for
    /// clients that answer by name. Elsewhere the key changes nothing. A key
    /// that is not valid is [`ClientError::InvalidRequest`] (code
    /// `invalid_request`); the key is the tool's constant, never scrubbed, so
    /// it must not carry input.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolmark::{Elicited, ToolContext, ToolError};
    /// async fn greet(ctx: ToolContext) -> Result<String, ToolError> {
    ///     let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    ///     Ok(match ctx.elicit_keyed("user_name", "What is your name?", schema).await? {
    ///         Elicited::Accept(v) => format!("Hello, {}!", v["name"].as_str().unwrap_or("you")),
    ///         _ => "Hello!".to_owned(),
    ///     })
    /// }
    /// ```
    pub async fn elicit_keyed(
        &self,
        key: impl Into<String>,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicited, ClientError> {
        let key = key.into();
        crate::call::client::check_key(&key)?;
        self.ask_form(Some(key), message.into(), schema).await
    }

    async fn ask_form(
        &self,
        key: Option<String>,
        message: String,
        schema: Value,
    ) -> Result<Elicited, ClientError> {
        let Some(client) = self.call.client() else {
            return Err(ClientError::no_client("elicitation"));
        };
        let secrets = self.call.secrets();
        let request = ElicitRequest {
            message: scrub(&message, &secrets),
            schema: crate::call::scrub_output(schema, &secrets),
            key,
        };
        let signal = self.signal();
        let _paused = Deadline::pause(&self.call);
        tokio::select! {
            biased;
            () = signal.cancelled() => Err(ClientError::Cancelled),
            answer = client.elicit(request) => answer,
        }
    }

    /// Ask the calling client's model for a message (MCP's
    /// `sampling/createMessage`): `"a prompt"` is one user message, or build a
    /// [`SampleRequest`]. Every text is scrubbed of the call's sensitive values
    /// first. The call deadline keeps running; the call's cancellation ends the
    /// wait ([`ClientError::Cancelled`]).
    ///
    /// A call without a client that can be asked (an in-app call, an MCP client
    /// that did not declare the `sampling` capability) gets
    /// [`ClientError::NotSupported`] (code `not_supported`) at once.
    ///
    /// ```
    /// use toolmark::{SampleRequest, ToolContext, ToolError};
    /// async fn title(ctx: ToolContext, text: &str) -> Result<String, ToolError> {
    ///     let request = SampleRequest::new(format!("A title for: {text}")).max_tokens(20);
    ///     Ok(ctx.sample(request).await?.text)
    /// }
    /// ```
    pub async fn sample(&self, request: impl Into<SampleRequest>) -> Result<Sampled, ClientError> {
        let Some(client) = self.call.client() else {
            return Err(ClientError::no_client("sampling"));
        };
        let mut request = request.into();
        if let Some(key) = &request.key {
            crate::call::client::check_key(key)?;
        }
        let secrets = self.call.secrets();
        if !secrets.is_empty() {
            for m in &mut request.messages {
                m.text = scrub(&m.text, &secrets);
            }
            if let Some(p) = &mut request.system_prompt {
                *p = scrub(p, &secrets);
            }
        }
        let signal = self.signal();
        tokio::select! {
            biased;
            () = signal.cancelled() => Err(ClientError::Cancelled),
            answer = client.sample(request) => answer,
        }
    }

    /// Register a restorer that undoes what this run did; `tm.undo()` runs the
    /// newest one, in this tool's scope queue, under the no-signal deadline.
    pub fn on_undo<F, Fut>(&self, restorer: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        let (Some(inner), Some(entry)) = (self.call.inner(), self.call.entry()) else {
            return;
        };
        inner.push_undo(entry, Box::new(move || Box::pin(restorer())));
    }

    /// Call another tool from this run, as this run's caller, with the same checks
    /// as [`Toolmark::call`](crate::Toolmark::call) (unknown tool, caller allowed,
    /// input validated, confirmation asked when the tool needs it).
    ///
    /// A tool of this run's own scope runs inside the queue slot this run already
    /// holds (a plain `tm.call` into the same scope from a running tool is refused
    /// `busy`: it would wait for itself); a tool of another scope waits in that
    /// scope's queue. Either way the nested call is bounded by this run: when this
    /// run is aborted (deadline, signal, disposal, shutdown), the nested call is
    /// cancelled. Outside a tool run (a context from `toolmark::testing`, an undo
    /// restorer) it is refused `not_allowed`.
    ///
    /// Await it in the tool's own body: a nested call sent to another task cannot
    /// use this run's slot and waits in the queue like any call.
    pub async fn call(&self, name: &str, input: Value) -> crate::Outcome {
        let (Some(inner), Some(_)) = (self.call.inner(), self.call.entry()) else {
            return crate::Outcome::refused(
                crate::RefusalCode::NotAllowed,
                "ctx.call is only available inside a tool run",
            );
        };
        let mut opts = crate::CallOptions::new(self.call.caller).signal(self.call.signal.token());
        opts.nested = true;
        // The nested run logs to, and asks, the same client.
        opts.reach = self.call.reach.clone();
        Box::pin(inner.call(name, input, opts)).await
    }

    /// Ask the user mid-run. A human caller is approved at once; an inline
    /// caller waits on the confirm handler (bounded by the call's signal and the
    /// confirmation expiry, with the call deadline paused meanwhile); a deferred
    /// caller, or no handler, gets `approved: false`, reason
    /// `"confirmation_unavailable"`. It never fails or panics.
    pub async fn confirm(&self, ask: Ask) -> ConfirmResult {
        crate::confirm::ctx_confirm(self, ask).await
    }
}

/// A log message of a call without a log sink, as a `tracing` event.
fn trace_log(tool: &str, level: LogLevel, message: &str) {
    let name = level.as_str();
    match level {
        LogLevel::Debug => {
            tracing::debug!(target: "toolmark::tool", tool, level = name, "{message}");
        }
        LogLevel::Info | LogLevel::Notice => {
            tracing::info!(target: "toolmark::tool", tool, level = name, "{message}");
        }
        LogLevel::Warning => {
            tracing::warn!(target: "toolmark::tool", tool, level = name, "{message}");
        }
        LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
            tracing::error!(target: "toolmark::tool", tool, level = name, "{message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(
        caller: Caller,
        signal: Option<&CancellationToken>,
        input: Value,
        limit: Option<Duration>,
        progress: Option<ProgressFn>,
    ) -> Arc<CallShared> {
        CallShared::new_shared(caller, Origin::Spare, signal, input, limit, progress, None)
    }

    /// A call's state is kept for the thread's next call only when nobody else
    /// holds it, holds nothing of its call once kept, and is reused whole: the
    /// next call sees its own caller, input, deadline, signal and listener.
    #[test]
    fn a_calls_state_is_reused_holding_nothing_of_the_last_call() {
        // Whatever an earlier test left as this thread's spare.
        drop(SPARE.with(Cell::take));
        let listener = Arc::new(());
        let progress: ProgressFn = {
            let held = Arc::clone(&listener);
            Arc::new(move |_| {
                let _ = &held;
            })
        };
        let parent = CancellationToken::new();
        let mut first = state(
            Caller::Mcp,
            Some(&parent),
            Value::from("4242 4242 4242 4242"),
            None,
            Some(progress),
        );
        let at = Arc::as_ptr(&first);
        CallShared::recycle(&mut first);
        drop(first);
        // The spare keeps neither the listener nor the input nor the signal.
        assert_eq!(Arc::strong_count(&listener), 1);
        let spare = SPARE.with(Cell::take).expect("kept as the spare");
        assert_eq!(spare.input, Value::Null);
        assert!(spare.progress.is_none() && spare.reach.is_none());
        assert!(matches!(spare.origin, Origin::Spare));
        SPARE.with(|s| s.set(Some(spare)));
        parent.cancel();

        let second = state(
            Caller::InApp,
            None,
            Value::from("next"),
            Some(Duration::from_secs(3)),
            None,
        );
        assert_eq!(Arc::as_ptr(&second), at, "the same allocation");
        assert_eq!(second.caller, Caller::InApp);
        assert_eq!(second.input, Value::from("next"));
        assert_eq!(second.deadline.limit(), Some(Duration::from_secs(3)));
        assert!(
            !second.signal.is_cancelled(),
            "the last call's (cancelled) signal is not this one's"
        );
        assert!(second.progress.is_none());
    }

    /// A state a context clone still holds is not the thread's spare: the clone
    /// keeps reading its own call.
    #[test]
    fn a_state_a_context_still_holds_is_not_reused() {
        drop(SPARE.with(Cell::take));
        let mut first = state(Caller::Mcp, None, Value::from(1), None, None);
        let kept = ToolContext {
            call: Arc::clone(&first),
        };
        CallShared::recycle(&mut first);
        drop(first);
        assert!(SPARE.with(Cell::take).is_none());
        let second = state(Caller::InApp, None, Value::from(2), None, None);
        assert!(!Arc::ptr_eq(&second, &kept.call));
        assert_eq!(kept.caller(), Caller::Mcp);
        assert_eq!(kept.call.input, Value::from(1));
    }
}
