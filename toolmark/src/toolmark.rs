//! [`Toolmark`], its builder and configuration.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

use crate::call::input::InputLimits;
use crate::call::undo::UndoEntry;
use crate::clock::{Clock, SystemClock};
use crate::confirm::store::{
    Cap, DropReason, Pending, PendingKind, PendingStore, PerCaller, Stored,
};
use crate::event::{bridge_channel, Bridge, BridgeMessage, BridgeSender, Event, Events};
use crate::scope::ScopeNode;
use crate::sensitive::{Observed, SecretSet};
use crate::sync::lock;
use crate::tools::registry::{prepare, ToolEntry};
use crate::{
    Caller, CollectError, ConfigError, ConfirmHandler, ConfirmMode, Outcome, PendingConfirmation,
    Refusal, RefusalCode, RegisterError, Scope, ScopeOptions, ToolInfo, ToolSpec,
};

/// Options of [`Toolmark::register`].
#[derive(Clone, Debug, Default)]
pub struct RegisterOptions {
    /// The scope to register into (`None`: the root, no name prefix).
    pub scope: Option<Scope>,
}

pub(crate) struct Config {
    pub(crate) confirm_handler: Option<Arc<dyn ConfirmHandler>>,
    pub(crate) modes: [ConfirmMode; 6],
    pub(crate) confirm_expiry: Duration,
    pub(crate) call_timeout: Duration,
    pub(crate) abort_grace: Duration,
    pub(crate) max_pending: usize,
    pub(crate) max_pending_per_caller: Option<usize>,
    pub(crate) bridge_capacity: usize,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) states: crate::call::context::StateMap,
    pub(crate) dev_events: bool,
    pub(crate) limits: InputLimits,
    pub(crate) allow_unknown_fields: bool,
    pub(crate) queue_bound: usize,
    pub(crate) undo_limit: usize,
    pub(crate) scrub_panics: bool,
    pub(crate) max_abandoned_sync_runs: usize,
    /// Where deferred confirmations wait (`None`: in this toolmark).
    pub(crate) store: Option<Arc<dyn crate::store::ConfirmStore>>,
    /// The seal key of stored confirmations.
    pub(crate) sealer: Option<crate::store::Sealer>,
    pub(crate) policy: Option<crate::policy::Policy>,
    /// Callers whose transport asks their client to confirm
    /// (`ToolmarkBuilder::client_confirms`): a confirmation path at registration.
    pub(crate) client_confirms: crate::CallerSet,
    /// The options declared for scopes by path (`ToolmarkBuilder::scope_at`),
    /// applied whenever such a scope is created.
    pub(crate) scopes: HashMap<String, ScopeOptions>,
    /// The scopes whose `when` flag is shared through the store
    /// (`ToolmarkBuilder::share_scope`).
    pub(crate) shared_scopes: std::collections::HashSet<String>,
    /// Whether a calling client's own decision may be remembered for its session.
    pub(crate) client_session_decisions: bool,
}

impl Config {
    pub(crate) fn mode(&self, caller: Caller) -> ConfirmMode {
        self.modes[caller as usize]
    }

    /// The handler a run's `ctx.confirm` asks for `caller`: the app's confirm
    /// handler when the caller's mode is inline; none for a human (approved
    /// unasked) or a deferred caller (`confirmation_unavailable`). When it is some,
    /// a run that reads its context may show its call's input in a request, so the
    /// call keeps that input (as it does for a tool with sensitive paths or state).
    pub(crate) fn ctx_confirm_handler(&self, caller: Caller) -> Option<&Arc<dyn ConfirmHandler>> {
        match (&self.confirm_handler, self.mode(caller)) {
            (Some(h), ConfirmMode::Inline) if caller != Caller::Human => Some(h),
            _ => None,
        }
    }

    /// An inline-mode caller without a confirm handler cannot see guarded tools.
    pub(crate) fn lacks_confirm_path(&self, caller: Caller) -> bool {
        caller != Caller::Human
            && self.mode(caller) == ConfirmMode::Inline
            && self.confirm_handler.is_none()
    }

    /// Whether nobody can answer a guarded call of `tool` (registered in `scope`)
    /// by `caller`: no confirmation path, and no policy rule that decides it
    /// without asking (an `allow` runs it, a `deny` refuses it with its reason).
    pub(crate) fn lacks_approver(
        &self,
        tool: &str,
        scope: &ScopeNode,
        effect: crate::Effect,
        caller: Caller,
    ) -> bool {
        self.lacks_confirm_path(caller)
            && !self
                .policy
                .as_ref()
                .and_then(|p| p.first_match_in(tool, scope, effect, caller))
                .is_some_and(|rule| !matches!(rule.verdict(), crate::policy::Verdict::Ask { .. }))
    }
}

/// Configures a [`Toolmark`]. Every option has a default; see [`Toolmark::builder`].
#[must_use]
pub struct ToolmarkBuilder {
    config: Config,
    mode_errors: Vec<Caller>,
    event_capacity: usize,
}

impl ToolmarkBuilder {
    /// The inline confirmation path: a [`ConfirmHandler`] (a closure or
    /// [`ConfirmQueue::handler`](crate::ConfirmQueue::handler)).
    pub fn confirm_handler(mut self, handler: impl ConfirmHandler) -> Self {
        self.config.confirm_handler = Some(Arc::new(handler));
        self
    }

    /// Set a caller's confirmation mode. Only [`Caller::InApp`] (default deferred)
    /// and [`Caller::Test`] (default inline) may be set; any other caller makes
    /// [`build`](Self::build) fail with `invalid_confirm_mode`.
    pub fn confirm_mode(mut self, caller: Caller, mode: ConfirmMode) -> Self {
        if caller.confirm_mode_configurable() {
            self.config.modes[caller as usize] = mode;
        } else {
            self.mode_errors.push(caller);
        }
        self
    }

    /// Declare that `caller`'s transport asks its own client to confirm: an MCP
    /// server with
    /// [`confirm_by_elicitation`](crate::mcp::McpServer::confirm_by_elicitation)
    /// does, for [`Caller::Mcp`]. Registration then counts that caller as a
    /// confirmation path, so a consequential or destructive tool only that
    /// caller may call registers without an app confirm handler. Whether one
    /// client has the path is still decided per client, call by call: an MCP
    /// client that answers elicitations lists and calls such a tool, one that
    /// does not has it hidden and is refused `not_allowed`.
    ///
    /// ```
    /// use toolmark::{Caller, Effect, ToolSpec, Toolmark};
    ///
    /// let tm = Toolmark::builder().client_confirms(Caller::Mcp).build().unwrap();
    /// let send = ToolSpec::new("send", "Send the newsletter")
    ///     .effect(Effect::Consequential)
    ///     .callers([Caller::Mcp])
    ///     .handler(|_ctx, _input| async { Ok(serde_json::json!("sent")) });
    /// assert!(tm.register(send, Default::default()).is_ok());
    /// ```
    pub fn client_confirms(mut self, caller: Caller) -> Self {
        if caller != Caller::Human {
            self.config.client_confirms = self.config.client_confirms.with(caller);
        }
        self
    }

    /// How long a confirmation stays open (default 10 minutes).
    pub fn confirm_expiry(mut self, expiry: Duration) -> Self {
        self.config.confirm_expiry = expiry;
        self
    }

    /// The deadline of a run with no caller signal (default 120 s).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.config.call_timeout = timeout;
        self
    }

    /// How long an aborted tool may take to stop before it is abandoned and its
    /// queue slot released (default 5 s).
    pub fn abort_grace(mut self, grace: Duration) -> Self {
        self.config.abort_grace = grace;
        self
    }

    /// The most confirmations open at once, deferred and inline (default 100); the
    /// oldest expire first.
    pub fn max_pending(mut self, max: usize) -> Self {
        self.config.max_pending = max;
        self
    }

    /// The most confirmations one caller (for example [`Caller::InApp`]) may have
    /// open at once: over it, that caller's own oldest expires. Whether set or not,
    /// one busy or hostile caller cannot push out everyone else's: when
    /// [`max_pending`](Self::max_pending) is reached, a caller holding more than this
    /// share loses its own oldest first, and the oldest of all expires only when no
    /// caller is over its share.
    ///
    /// Unset (the default), the share is 50 and is no hard bound: while nobody holds
    /// more than 50, the oldest of all expire first, and a caller alone may fill all
    /// of `max_pending`. Every confirmation pushed out by a cap is an
    /// [`Event::ConfirmationEvicted`] (and then expires like any other).
    pub fn max_pending_per_caller(mut self, max: usize) -> Self {
        self.config.max_pending_per_caller = Some(max);
        self
    }

    /// How many [`BridgeMessage`]s one [`Bridge`] subscriber may have waiting
    /// (default 1024). A subscriber that falls further behind loses the newer
    /// messages and then receives one [`BridgeMessage::Lagged`] saying how many it
    /// missed, instead of holding unbounded memory.
    pub fn bridge_capacity(mut self, capacity: usize) -> Self {
        self.config.bridge_capacity = capacity;
        self
    }

    /// The wall clock that decides expiry (default [`SystemClock`]; tests use
    /// [`ManualClock`](crate::clock::ManualClock)).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.config.clock = Arc::new(clock);
        self
    }

    /// App state for `State<T>` extractors and [`ToolContext::state`](crate::ToolContext::state).
    /// One value per type; call again for other types.
    pub fn state<T: Send + Sync + 'static>(mut self, state: T) -> Self {
        self.config.states.insert(state);
        self
    }

    /// Emit development events (`missing_confirm_handler`,
    /// `ctx_confirm_unavailable`, `tool_abandoned`). Default: on in debug builds.
    pub fn dev_events(mut self, on: bool) -> Self {
        self.config.dev_events = on;
        self
    }

    /// The deepest input nesting accepted (default 64); deeper is `invalid`.
    pub fn max_input_depth(mut self, depth: usize) -> Self {
        self.config.limits.max_depth = depth;
        self
    }

    /// The largest input accepted, in bytes of compact JSON (default 1 MiB); larger
    /// is `invalid`.
    pub fn max_input_bytes(mut self, bytes: usize) -> Self {
        self.config.limits.max_bytes = bytes;
        self
    }

    /// Accept input properties a typed tool's input does not declare (default:
    /// refused `invalid`, "unknown field").
    ///
    /// Never for a tool with sensitive paths: there a key its input schema does not
    /// list is always refused, at every depth, because serde could read it (through
    /// an alias, say) where redaction does not look.
    pub fn allow_unknown_fields(mut self, allow: bool) -> Self {
        self.config.allow_unknown_fields = allow;
        self
    }

    /// The most calls that may wait in one scope's queue (default 1024); more are
    /// refused `busy`.
    pub fn queue_bound(mut self, bound: usize) -> Self {
        self.config.queue_bound = bound;
        self
    }

    /// How many undo restorers are kept (default 100; the oldest are dropped).
    pub fn undo_limit(mut self, limit: usize) -> Self {
        self.config.undo_limit = limit;
        self
    }

    /// Install the scrubbing panic hook (default on). The hook is installed once per
    /// process, by the first toolmark built with this on, and chains to the hook set
    /// before it. A panic raised inside a run of a tool with sensitive paths (in its
    /// async body or on its sync thread) whose message contains one of that call's
    /// sensitive values is printed to stderr with each of them replaced by
    /// `[redacted]`, and is not passed to the previous hook; every other panic goes
    /// to the previous hook untouched. Like output scrubbing, it recognizes only the
    /// values as given: a transformed secret (upper-cased, sliced, re-encoded) is
    /// printed as is.
    pub fn scrub_panics(mut self, on: bool) -> Self {
        self.config.scrub_panics = on;
        self
    }

    /// How many abandoned runs of sync `#[tool]` fns may still hold their threads
    /// (default 16). A sync run that ignores its deadline is abandoned and left on
    /// its own thread (which never keeps the process from exiting); while this many
    /// are outstanding, a new call of a sync tool is refused `busy`. Each
    /// abandonment emits [`Event::SyncRunAbandoned`].
    pub fn max_abandoned_sync_runs(mut self, max: usize) -> Self {
        self.config.max_abandoned_sync_runs = max;
        self
    }

    /// Keep deferred confirmations in `store` instead of this toolmark's memory:
    /// a [`MemoryStore`](crate::store::MemoryStore) shared by several toolmarks of
    /// one process, or (feature `redis`) a `RedisStore` shared by every instance of
    /// the app. Everything a store holds is sealed: a durable store needs the
    /// builder's [`seal_key`](Self::seal_key) ([`build`](Self::build) fails
    /// `seal_key_required` without one). See [`store`](crate::store).
    pub fn confirm_store(mut self, store: impl crate::store::ConfirmStore) -> Self {
        self.config.store = Some(Arc::new(store));
        self
    }

    /// The 32-byte key that seals everything a confirmation store holds or
    /// publishes (AES-256-GCM; each sealed value is bound to the key it is stored
    /// under). Keep it secret and the same on every instance (and across
    /// restarts), or their records do not open. Required with a durable store;
    /// a store that lives in the process (`MemoryStore`) uses a random key of the
    /// process when none is given.
    pub fn seal_key(mut self, key: [u8; 32]) -> Self {
        self.config.sealer = Some(crate::store::Sealer::new(&key));
        self
    }

    /// Let a calling client's own decision (an MCP client's elicitation answer, a
    /// [`CallOptions::confirm_handler`](crate::CallOptions::confirm_handler)) be
    /// remembered for **that client's session** when it asks
    /// [`For::Session`](crate::policy::For::Session) and the call has a session id.
    /// Default: off — a client's decision answers its own call only. A client's
    /// [`For::Always`](crate::policy::For::Always) is never kept either way: only
    /// the app's handlers and approvers make decisions that outlive a session.
    pub fn client_session_decisions(mut self, on: bool) -> Self {
        self.config.client_session_decisions = on;
        self
    }

    /// The approval policy: rules that allow, deny or keep asking for calls that
    /// need the user's approval, tried in order, first match wins (see
    /// [`policy`](crate::policy)). [`build`](Self::build) fails `invalid_option`
    /// when a rule has no id, two rules share one, or a rule names an empty tool
    /// or scope.
    pub fn policy(mut self, policy: crate::policy::Policy) -> Self {
        self.config.policy = Some(policy);
        self
    }

    /// The capacity of the [`events`](Toolmark::events) broadcast (default 1024).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity;
        self
    }

    /// Declare the options of the scope at a dotted `path` (`"billing"`,
    /// `"challenges.create"`): whenever that scope is created — by
    /// `#[tool(scope = "…")]` and [`Toolmark::register_collected`],
    /// [`Toolmark::scope_at`], [`Scope::scope`], and again after it was disposed —
    /// it gets these options instead of the defaults. The usual one is a scope that
    /// starts hidden, shown later by the app or by a tool
    /// ([`ToolContext::scope_at`](crate::ToolContext::scope_at)):
    ///
    /// ```standalone_crate
    /// use toolmark::{tool, Caller, ScopeOptions, Toolmark};
    ///
    /// /// Refund a payment.
    /// #[tool(scope = "billing")]
    /// async fn refund(payment: String) -> String { format!("refunded {payment}") }
    ///
    /// # fn main() {
    /// let tm = Toolmark::builder()
    ///     .scope_at("billing", ScopeOptions::hidden()) // the billing tab is closed
    ///     .build()
    ///     .unwrap();
    /// tm.register_collected().unwrap();
    /// assert!(tm.manifest(Caller::InApp).iter().all(|t| t.name != "billing.refund"));
    ///
    /// tm.scope_at("billing").set_when(true);           // the tab opens
    /// assert!(tm.manifest(Caller::InApp).iter().any(|t| t.name == "billing.refund"));
    /// # }
    /// ```
    ///
    /// Declaring a path again replaces its options. The scopes above it keep
    /// their own (declared or default) options; a scope created with explicit
    /// options ([`Scope::scope_with`]) uses those. A path that is empty or has a
    /// segment outside `[A-Za-z0-9_-]+` fails [`build`](Self::build) with
    /// `invalid_option`.
    pub fn scope_at(mut self, path: &str, options: ScopeOptions) -> Self {
        self.config.scopes.insert(path.to_owned(), options);
        self
    }

    /// Share the `when` flag of the scope at a dotted `path` with every instance
    /// on the same [`confirm_store`](Self::confirm_store): a
    /// [`set_when`](crate::Scope::set_when) on one instance (by the app, or by a
    /// tool through [`ToolContext::scope_at`](crate::ToolContext::scope_at)) is
    /// what every instance's next listing shows, and their MCP clients get
    /// `notifications/tools/list_changed`. An instance that starts later starts
    /// with the current state. Disposal stays local to each instance. See
    /// [`scope`](crate::scope#shared-across-instances) for an example and the
    /// guarantees.
    ///
    /// [`build`](Self::build) fails `invalid_option` when the path is not a scope
    /// path, or when no store that keeps scope states (`MemoryStore`,
    /// `RedisStore`) was set.
    pub fn share_scope(mut self, path: &str) -> Self {
        self.config.shared_scopes.insert(path.to_owned());
        self
    }

    /// Build the toolmark. Fails with `invalid_confirm_mode` when a fixed caller's
    /// mode was set, or `invalid_option` for an option that cannot work.
    pub fn build(self) -> Result<Toolmark, ConfigError> {
        if let Some(caller) = self.mode_errors.first() {
            return Err(ConfigError::InvalidConfirmMode { caller: *caller });
        }
        let invalid = |option: &'static str, reason: &str| ConfigError::InvalidOption {
            option,
            reason: reason.to_owned(),
        };
        if self.config.max_pending == 0 {
            return Err(invalid("max_pending", "must be at least 1"));
        }
        if self.config.max_pending_per_caller == Some(0) {
            return Err(invalid("max_pending_per_caller", "must be at least 1"));
        }
        if self.config.bridge_capacity == 0 {
            return Err(invalid("bridge_capacity", "must be at least 1"));
        }
        if self.event_capacity == 0 {
            return Err(invalid("event_capacity", "must be at least 1"));
        }
        if self.config.limits.max_depth == 0 {
            return Err(invalid("max_input_depth", "must be at least 1"));
        }
        let sealer = match &self.config.store {
            Some(store) if store.durable() && self.config.sealer.is_none() => {
                return Err(ConfigError::SealKeyRequired);
            }
            Some(_) => match self.config.sealer.clone().or_else(crate::store::Sealer::process) {
                Some(sealer) => Some(sealer),
                None => {
                    return Err(invalid(
                        "confirm_store",
                        "the OS random source failed, so no seal key could be made: give one with `seal_key`",
                    ))
                }
            },
            None => None,
        };
        if let Some(reason) = self
            .config
            .scopes
            .keys()
            .find_map(|path| crate::scope::check_path(path).err())
        {
            return Err(invalid("scope_at", &reason));
        }
        if let Some(reason) = self
            .config
            .shared_scopes
            .iter()
            .find_map(|path| crate::scope::check_path(path).err())
        {
            return Err(invalid("share_scope", &reason));
        }
        if !self.config.shared_scopes.is_empty()
            && !self
                .config
                .store
                .as_ref()
                .is_some_and(|store| store.keeps_scopes())
        {
            return Err(invalid(
                "share_scope",
                "a shared scope needs a confirm_store that keeps scope states (MemoryStore, RedisStore)",
            ));
        }
        if let Some(Err(reason)) = self.config.policy.as_ref().map(|p| p.check()) {
            return Err(ConfigError::InvalidOption {
                option: "policy",
                reason,
            });
        }
        if self.config.scrub_panics {
            crate::call::install_panic_hook();
        }
        let shared_scopes = self.config.shared_scopes.clone();
        let shared = self
            .config
            .store
            .clone()
            .zip(sealer)
            .map(|(store, sealer)| crate::store::flow::Shared::new(store, sealer, shared_scopes));
        let (events, _) = broadcast::channel(self.event_capacity);
        let tm = Toolmark {
            inner: Arc::new(Inner {
                config: self.config,
                registry: RwLock::new(Registry::default()),
                version: AtomicU64::new(0),
                tools_version: AtomicU64::new(0),
                sorted_tools: Mutex::new(None),
                manifest_cache: Default::default(),
                root: ScopeNode::root(),
                events,
                event_subscribers: Arc::default(),
                bridge: Mutex::new(Vec::new()),
                pending: Mutex::new(PendingStore::default()),
                sweeper_started: AtomicBool::new(false),
                sweeper_wake: Arc::new(Notify::new()),
                shutdown: CancellationToken::new(),
                shut_down: AtomicBool::new(false),
                undo: Mutex::new(VecDeque::new()),
                sync_abandoned: Arc::default(),
                shared,
                remembered: Mutex::default(),
            }),
        };
        if let Some(shared) = &tm.inner.shared {
            shared.start(&tm.inner);
        }
        Ok(tm)
    }
}

impl fmt::Debug for ToolmarkBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolmarkBuilder").finish_non_exhaustive()
    }
}

/// Full name → entry. Fx hashing: keys are registered by the app, so lookups of
/// agent-chosen names only probe and cannot degrade the table.
pub(crate) use crate::tools::registry::Registry;

/// The share of `max_pending` a caller may hold before it loses its own oldest
/// first, when `max_pending_per_caller` is not set.
pub(crate) const DEFAULT_PENDING_SHARE: usize = 50;

/// One caller's manifest at one version: the list, and its JSON made on first ask.
pub(crate) struct CachedManifest {
    version: u64,
    list: Arc<[ToolInfo]>,
    json: OnceLock<Arc<str>>,
}

type ManifestCache = Mutex<Option<Arc<CachedManifest>>>;

/// Every registered tool, sorted by full name, as of one `tools_version`.
type SortedTools = Mutex<Option<(u64, Arc<[Arc<ToolEntry>]>)>>;

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) registry: RwLock<Registry>,
    /// Bumped on every change any manifest may show (tools, visibility).
    version: AtomicU64,
    /// Bumped only when tools are added or removed (the sorted list changes).
    tools_version: AtomicU64,
    sorted_tools: SortedTools,
    manifest_cache: [ManifestCache; 6],
    pub(crate) root: Arc<ScopeNode>,
    events: broadcast::Sender<Event>,
    event_subscribers: Arc<std::sync::atomic::AtomicUsize>,
    bridge: Mutex<Vec<BridgeSender>>,
    pub(crate) pending: Mutex<PendingStore>,
    sweeper_started: AtomicBool,
    sweeper_wake: Arc<Notify>,
    pub(crate) shutdown: CancellationToken,
    /// Mirrors `shutdown` for the hot path (a token check takes a lock).
    shut_down: AtomicBool,
    pub(crate) undo: Mutex<VecDeque<UndoEntry>>,
    /// Abandoned sync runs still on their threads.
    pub(crate) sync_abandoned: Arc<std::sync::atomic::AtomicUsize>,
    /// The confirmation store, when one was set.
    pub(crate) shared: Option<crate::store::flow::Shared>,
    /// Remembered approval decisions.
    pub(crate) remembered: Mutex<crate::confirm::remember::RememberedSet>,
}

/// The runtime: registered tools, their scopes, queues and confirmations.
///
/// Cheap to clone (an `Arc`); `Send + Sync`.
///
/// ```
/// use toolmark::{Caller, CallOptions, Effect, Toolmark, ToolSpec, ToolError};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let tm = Toolmark::builder().build().unwrap();
/// let math = tm.scope("math");
/// math.register(
///     ToolSpec::typed("add", "Add two numbers", |_ctx, i: Add| async move {
///         Ok::<_, ToolError>(i.a + i.b)
///     })
///     .effect(Effect::Read),
/// )
/// .unwrap();
///
/// let out = tm.call("math.add", serde_json::json!({"a": 2, "b": 3}), CallOptions::new(Caller::InApp)).await;
/// assert_eq!(out.output(), Some(&serde_json::json!(5)));
/// # }
/// ```
#[derive(Clone)]
pub struct Toolmark {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Toolmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolmark")
            .field("tools", &self.inner.read_registry().len())
            .field("pending", &lock(&self.inner.pending).len())
            .finish_non_exhaustive()
    }
}

impl Toolmark {
    /// A builder with the defaults: inapp deferred, test inline, confirm expiry 10
    /// min, call timeout 120 s, abort grace 5 s, max pending 100, system clock.
    pub fn builder() -> ToolmarkBuilder {
        let mut modes = [ConfirmMode::Inline; 6];
        for c in Caller::ALL {
            modes[c as usize] = c.default_confirm_mode();
        }
        ToolmarkBuilder {
            config: Config {
                confirm_handler: None,
                modes,
                confirm_expiry: Duration::from_secs(600),
                call_timeout: Duration::from_secs(120),
                abort_grace: Duration::from_secs(5),
                max_pending: 100,
                max_pending_per_caller: None,
                bridge_capacity: 1024,
                clock: Arc::new(SystemClock),
                states: Default::default(),
                dev_events: cfg!(debug_assertions),
                limits: InputLimits {
                    max_depth: 64,
                    max_bytes: 1 << 20,
                },
                allow_unknown_fields: false,
                queue_bound: 1024,
                undo_limit: 100,
                scrub_panics: true,
                max_abandoned_sync_runs: 16,
                store: None,
                sealer: None,
                policy: None,
                client_confirms: crate::CallerSet::EMPTY,
                scopes: HashMap::new(),
                shared_scopes: std::collections::HashSet::new(),
                client_session_decisions: false,
            },
            mode_errors: Vec::new(),
            event_capacity: 1024,
        }
    }

    /// The root-level scope `name` (created with default options if needed).
    pub fn scope(&self, name: &str) -> Scope {
        self.root().scope(name)
    }

    /// The root-level scope `name`, created with `options` if it does not exist.
    pub fn scope_with(&self, name: &str, options: ScopeOptions) -> Scope {
        self.root().scope_with(name, options)
    }

    /// The scope at a dotted path (`"challenges.create"`), creating the missing
    /// ones (with the options the builder declared for their paths, see
    /// [`ToolmarkBuilder::scope_at`], else the defaults): the same scope
    /// `#[tool(scope = "challenges.create")]` registers into.
    pub fn scope_at(&self, path: &str) -> Scope {
        if path.is_empty() {
            return self.root();
        }
        path.split('.').fold(self.root(), |s, seg| s.scope(seg))
    }

    /// The root scope (unscoped tools; it cannot be disposed).
    pub fn root(&self) -> Scope {
        Scope {
            node: Arc::clone(&self.inner.root),
            tm: Arc::downgrade(&self.inner),
        }
    }

    /// Register one tool.
    pub fn register(&self, spec: ToolSpec, options: RegisterOptions) -> Result<(), RegisterError> {
        self.inner.register(spec, options.scope.as_ref())
    }

    /// The tools `caller` can see now, sorted by full name. Built from entries
    /// computed at registration and cached until something changes; this returns a
    /// copy of the cached list (see [`manifest_shared`](Self::manifest_shared) for
    /// the list itself, without copying).
    pub fn manifest(&self, caller: Caller) -> Vec<ToolInfo> {
        self.inner.manifest(caller).list.to_vec()
    }

    /// The same list as [`manifest`](Self::manifest), shared: the cached list
    /// itself, so a read costs a reference count whatever the number of tools. The
    /// list never changes; a later change makes a new one.
    pub fn manifest_shared(&self, caller: Caller) -> Arc<[ToolInfo]> {
        Arc::clone(&self.inner.manifest(caller).list)
    }

    /// The manifest as JSON (an array of [`ToolInfo`], camelCase), serialized once
    /// per [`manifest_version`](Self::manifest_version) and caller: what a client
    /// receives, ready to send.
    ///
    /// ```
    /// # let tm = toolmark::Toolmark::builder().build().unwrap();
    /// let json = tm.manifest_json(toolmark::Caller::Mcp);
    /// assert_eq!(&*json, "[]");
    /// ```
    pub fn manifest_json(&self, caller: Caller) -> Arc<str> {
        let cached = self.inner.manifest(caller);
        Arc::clone(cached.json.get_or_init(|| {
            serde_json::to_string(&*cached.list)
                .expect("a manifest is plain JSON data")
                .into()
        }))
    }

    /// The largest input accepted, in bytes of JSON (the builder's
    /// `max_input_bytes`); transports refuse larger requests before parsing.
    pub fn max_input_bytes(&self) -> usize {
        self.inner.config.limits.max_bytes
    }

    /// A monotonically increasing number that changes whenever any manifest may
    /// have changed.
    pub fn manifest_version(&self) -> u64 {
        self.inner.version.load(Ordering::Acquire)
    }

    /// `input` for a call to `tool` as an observer may see it, built from the
    /// call's secret set: `"[redacted]"` at every sensitive path and under every key
    /// the tool's input schema does not list (serde may read an alias into a
    /// sensitive field), every other string scrubbed of the call's secrets, object
    /// keys bounded. `None` when no visible tool has that name. For adapters that
    /// record a call's arguments (traces, logs).
    pub fn redact_input(&self, tool: &str, input: &Value) -> Option<Value> {
        let entry = self.inner.lookup(tool)?;
        let input = normalize_input(input.clone());
        Some(
            entry
                .secret_set(&input)
                .arguments(&input, entry.keys.as_deref())
                .into_inner(),
        )
    }

    /// Bring the scopes shared with
    /// [`ToolmarkBuilder::share_scope`] up to date now: read every instance's
    /// states from the store and send the changes made here that are not in it
    /// yet. This happens on its own in the background (at start, on every change,
    /// and every two seconds); await it where the next listing must already agree,
    /// such as before serving. `Ok` at once when no scope is shared; `Err`
    /// (`unavailable`) when the store cannot be reached: this instance keeps its
    /// last known states and sends its changes once the store answers.
    pub async fn sync_scopes(&self) -> Result<(), crate::store::StoreError> {
        let Some(shared) = self.inner.shared.as_ref() else {
            return Ok(());
        };
        let Some(sync) = shared.scopes.as_ref() else {
            return Ok(());
        };
        shared.start(&self.inner);
        sync.sync_now(&self.inner, &*shared.store, shared.sealer())
            .await
    }

    /// Subscribe to [`Event`]s (a broadcast: a lagging subscriber loses the oldest).
    pub fn events(&self) -> Events {
        Events::new(self.inner.events.subscribe(), &self.inner.event_subscribers)
    }

    /// Subscribe to the bridge: the outcome of every deferred confirmation resolved
    /// from now on (approved, rejected, expired, dropped), in order, none lost.
    pub fn bridge(&self) -> Bridge {
        let (tx, rx) = bridge_channel(self.inner.config.bridge_capacity);
        lock(&self.inner.bridge).push(tx);
        rx
    }

    /// The open deferred confirmations, oldest first, input redacted. With a
    /// [`confirm_store`](ToolmarkBuilder::confirm_store), this process holds none in
    /// memory: use [`pending_confirmations_async`](Self::pending_confirmations_async).
    pub fn pending_confirmations(&self) -> Vec<PendingConfirmation> {
        self.inner.sweep_now();
        lock(&self.inner.pending).deferred()
    }

    /// Withdraw an open confirmation (deferred or inline): its caller gets
    /// `cancelled` (a deferred one through the bridge). Returns whether it was open.
    pub fn cancel_pending(&self, confirm_id: &str) -> bool {
        let taken = lock(&self.inner.pending).take(confirm_id);
        match taken {
            Some(p) => {
                self.inner.drop_pending(p, DropReason::Cancelled);
                true
            }
            None => false,
        }
    }

    /// Shut down: abort every running call (`cancelled`), refuse new ones, and
    /// expire every open confirmation.
    pub fn shutdown(&self) {
        self.inner.shut_down.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
        let all = lock(&self.inner.pending).take_where(|_| true);
        for p in all {
            self.inner.drop_pending(p, DropReason::Shutdown);
        }
        lock(&self.inner.undo).clear();
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.is_shut_down()
    }
}

impl Inner {
    pub(crate) fn read_registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_registry(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// A registered, visible tool.
    #[inline]
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<ToolEntry>> {
        let entry = self.read_registry().get(name).cloned()?;
        entry.scope.visible().then_some(entry)
    }

    pub(crate) fn register(
        self: &Arc<Self>,
        spec: ToolSpec,
        scope: Option<&Scope>,
    ) -> Result<(), RegisterError> {
        let node = match scope {
            Some(s) => {
                if !s.tm.ptr_eq(&Arc::downgrade(self)) {
                    return Err(RegisterError::InvalidSpec {
                        tool: spec.name.clone(),
                        reason: "the scope belongs to another Toolmark".to_owned(),
                    });
                }
                Arc::clone(&s.node)
            }
            None => Arc::clone(&self.root),
        };
        if node.is_disposed() {
            return Err(RegisterError::ScopeDisposed {
                scope: node.path.clone(),
            });
        }
        let entry = prepare(spec, &node, &self.config, &Arc::downgrade(self))?;
        self.insert(vec![entry]).map_err(|mut e| e.remove(0))
    }

    /// Insert prepared entries, all or none.
    pub(crate) fn insert(&self, entries: Vec<ToolEntry>) -> Result<(), Vec<RegisterError>> {
        let mut registry = self.write_registry();
        let mut errors = Vec::new();
        // Duplicates within the batch (one entry, the common case, has none).
        let mut seen: std::collections::HashSet<&str, rustc_hash::FxBuildHasher> =
            Default::default();
        let batch = entries.len() > 1;
        for e in &entries {
            if e.scope.is_disposed() {
                errors.push(RegisterError::ScopeDisposed {
                    scope: e.scope.path.clone(),
                });
            } else if registry.contains_key(&e.name) || (batch && !seen.insert(&e.name)) {
                errors.push(RegisterError::DuplicateTool {
                    name: e.name.to_string(),
                });
            }
        }
        drop(seen);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut names = Vec::with_capacity(entries.len());
        for e in entries {
            let e = Arc::new(e);
            e.scope.tools.fetch_add(1, Ordering::AcqRel);
            registry.insert(Arc::clone(&e));
            names.push(e);
        }
        drop(registry);
        self.bump();
        for e in &names {
            self.emit(|| Event::ToolRegistered {
                tool: e.name.to_string(),
            });
            if e.guarded() && self.config.dev_events {
                let hidden: Vec<Caller> = e
                    .callers
                    .iter()
                    .filter(|c| self.config.lacks_approver(&e.name, &e.scope, e.effect, *c))
                    .collect();
                if !hidden.is_empty() {
                    self.emit(|| Event::MissingConfirmHandler {
                        tool: e.name.to_string(),
                        callers: hidden,
                    });
                }
            }
        }
        self.emit(|| Event::ManifestChanged);
        Ok(())
    }

    pub(crate) fn register_all(
        self: &Arc<Self>,
        specs: Vec<(ToolSpec, Scope)>,
    ) -> Result<usize, CollectError> {
        let mut errors = Vec::new();
        let mut entries = Vec::new();
        for (spec, scope) in specs {
            if scope.node.is_disposed() {
                errors.push(RegisterError::ScopeDisposed {
                    scope: scope.node.path.clone(),
                });
                continue;
            }
            match prepare(spec, &scope.node, &self.config, &Arc::downgrade(self)) {
                Ok(e) => entries.push(e),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(CollectError { errors });
        }
        let n = entries.len();
        self.insert(entries)
            .map_err(|errors| CollectError { errors })?;
        Ok(n)
    }

    /// A scope was shown or hidden: the manifests change only when the scope or a
    /// descendant holds a tool.
    pub(crate) fn scope_changed(&self, node: &ScopeNode) {
        if node.has_tools() {
            self.version.fetch_add(1, Ordering::AcqRel);
            self.emit(|| Event::ManifestChanged);
        }
    }

    /// Tools were added or removed.
    fn bump(&self) {
        self.tools_version.fetch_add(1, Ordering::AcqRel);
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Scopes were disposed: unregister their tools, drop their pending
    /// confirmations and undo restorers.
    pub(crate) fn on_disposed(self: &Arc<Self>, nodes: &[Arc<ScopeNode>]) {
        let in_nodes = |n: &Arc<ScopeNode>| nodes.iter().any(|d| Arc::ptr_eq(d, n));
        let removed: Vec<Arc<str>> = {
            let mut registry = self.write_registry();
            for node in nodes {
                node.tools.store(0, Ordering::Release);
            }
            // By address: a disposed subtree may hold many scopes.
            let disposed: std::collections::HashSet<usize, rustc_hash::FxBuildHasher> =
                nodes.iter().map(|n| Arc::as_ptr(n) as usize).collect();
            registry.remove_where(|e| disposed.contains(&(Arc::as_ptr(&e.scope) as usize)))
        };
        crate::confirm::deferred::on_disposed(self, nodes);
        lock(&self.undo).retain(|u| !in_nodes(&u.scope));
        self.bump();
        for name in removed {
            self.emit(|| Event::ToolUnregistered {
                tool: name.to_string(),
            });
        }
        self.emit(|| Event::ManifestChanged);
    }

    pub(crate) fn manifest(&self, caller: Caller) -> Arc<CachedManifest> {
        let version = self.version.load(Ordering::Acquire);
        let mut cache = lock(&self.manifest_cache[caller as usize]);
        if let Some(cached) = cache.as_ref()
            && cached.version == version
        {
            return Arc::clone(cached);
        }
        let list: Arc<[ToolInfo]> = self
            .sorted_tools()
            .iter()
            .filter(|e| self.can_see(e, caller))
            .map(|e| e.info(caller))
            .collect();
        let cached = Arc::new(CachedManifest {
            version,
            list,
            json: OnceLock::new(),
        });
        *cache = Some(Arc::clone(&cached));
        cached
    }

    /// Every registered tool sorted by full name, re-sorted only when tools were
    /// added or removed (not when a scope is shown or hidden).
    pub(crate) fn sorted_tools(&self) -> Arc<[Arc<ToolEntry>]> {
        let version = self.tools_version.load(Ordering::Acquire);
        let mut sorted = lock(&self.sorted_tools);
        if let Some((v, list)) = sorted.as_ref()
            && *v == version
        {
            return Arc::clone(list);
        }
        let mut list: Vec<Arc<ToolEntry>> = self.read_registry().values().cloned().collect();
        list.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let list: Arc<[Arc<ToolEntry>]> = list.into();
        *sorted = Some((version, Arc::clone(&list)));
        list
    }

    /// Whether `caller` sees `entry` (visible scope, allowed caller, and a
    /// confirmation path when the tool needs one).
    pub(crate) fn can_see(&self, entry: &ToolEntry, caller: Caller) -> bool {
        entry.scope.visible()
            && entry.callers.contains(caller)
            && !(entry.guarded()
                && self
                    .config
                    .lacks_approver(&entry.name, &entry.scope, entry.effect, caller))
    }

    /// The tools `caller` sees when it brings a confirm handler of its own for
    /// its calls (a WebMCP page with `onConfirm`): visible and allowed, whether
    /// or not the app has a confirmation path for `caller`. Sorted by full name.
    #[cfg(feature = "webmcp")]
    pub(crate) fn manifest_with_handler(&self, caller: Caller) -> Vec<ToolInfo> {
        self.sorted_tools()
            .iter()
            .filter(|e| e.scope.visible() && e.callers.contains(caller))
            .map(|e| e.info(caller))
            .collect()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Whether anyone could observe an event: a subscriber, or a `tracing`
    /// subscriber at any level (both are single atomic loads).
    #[inline]
    pub(crate) fn wants_events(&self) -> bool {
        self.event_subscribers.load(Ordering::Acquire) > 0
            || tracing::level_enabled!(tracing::Level::ERROR)
    }

    /// Emit an event (built only when someone listens).
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        if self.wants_events() {
            self.emit_now(make());
        }
    }

    fn emit_now(&self, event: Event) {
        if event.is_development() && !self.config.dev_events {
            return;
        }
        event.trace();
        let _ = self.events.send(event);
    }

    /// Send `msg` to every bridge subscriber. Only an [`Observed`] message can be
    /// sent: it was built from the call's secret set.
    pub(crate) fn send_bridge(&self, msg: Observed<BridgeMessage>) {
        self.send_bridge_with(|| msg);
    }

    /// [`send_bridge`](Self::send_bridge), the message built only when a bridge is
    /// open.
    pub(crate) fn send_bridge_with(&self, make: impl FnOnce() -> Observed<BridgeMessage>) {
        let mut subs = lock(&self.bridge);
        if subs.is_empty() {
            return;
        }
        let msg = make().into_inner();
        subs.retain(|tx| tx.send(msg.clone()));
    }

    pub(crate) fn now(&self) -> SystemTime {
        self.config.clock.now()
    }

    /// Open a confirmation (numbered by the table: its `seq` is given there);
    /// those pushed out by the caps expire (see
    /// [`ToolmarkBuilder::max_pending_per_caller`]).
    pub(crate) fn insert_pending(self: &Arc<Self>, p: Pending) {
        self.insert_stored(Box::new(Stored::new(p)));
    }

    /// [`insert_pending`](Self::insert_pending), the record built already.
    pub(crate) fn insert_stored(self: &Arc<Self>, p: Box<Stored>) {
        let per_caller = match self.config.max_pending_per_caller {
            Some(n) => PerCaller::Hard(n),
            None => PerCaller::Share(DEFAULT_PENDING_SHARE),
        };
        let expires_at = p.expires_at();
        let (evicted, wake) = {
            let mut pending = lock(&self.pending);
            let wake = pending.wakes_sweeper(expires_at);
            (pending.insert(p, self.config.max_pending, per_caller), wake)
        };
        for (old, cap) in evicted {
            self.emit(|| Event::ConfirmationEvicted {
                confirm_id: old.id.to_string(),
                tool: old.entry.name.to_string(),
                caller: old.caller,
                reason: match cap {
                    Cap::Global => "max_pending",
                    Cap::PerCaller => "max_pending_per_caller",
                },
            });
            self.drop_pending(old, DropReason::Expired);
        }
        self.start_sweeper();
        if wake {
            self.sweeper_wake.notify_one();
        }
    }

    /// Expire what is due now.
    pub(crate) fn sweep_now(&self) {
        let now = self.now();
        let expired = lock(&self.pending).take_expired(now);
        for p in expired {
            self.drop_pending(p, DropReason::Expired);
        }
    }

    /// Finish a confirmation that was dropped without an answer: tell its waiting
    /// call (inline) or the agent through the bridge (deferred).
    pub(crate) fn drop_pending(&self, p: Pending, reason: DropReason) {
        let tool = p.entry.name.to_string();
        crate::confirm::deferred::dropped_event(self, &p.id, &tool, reason);
        match p.kind {
            PendingKind::Inline { wake } => {
                if let Some(wake) = wake {
                    let _ = wake.send(reason);
                }
            }
            PendingKind::Deferred { .. } => {
                self.send_bridge_with(|| {
                    // Fixed messages: nothing of the call is in them.
                    let outcome = SecretSet::none().outcome(Outcome::Refused(drop_refusal(reason)));
                    Observed::confirmed(&p.id, &tool, outcome)
                });
            }
        }
    }

    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeper_started.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.sweeper_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let wake = Arc::clone(&self.sweeper_wake);
        let clock_changes = self.config.clock.changes();
        let shutdown = self.shutdown.clone();
        handle.spawn(sweeper(weak, wake, clock_changes, shutdown));
    }
}

/// The refusal a dropped confirmation resolves to.
pub(crate) fn drop_refusal(reason: DropReason) -> Refusal {
    match reason {
        DropReason::Expired => Refusal::new(
            RefusalCode::ConfirmationExpired,
            "The confirmation expired before the user answered",
        ),
        DropReason::Shutdown => Refusal::new(
            RefusalCode::ConfirmationExpired,
            "The confirmation expired: the app shut down",
        ),
        DropReason::ScopeDisposed => Refusal::new(
            RefusalCode::ScopeDisposed,
            "The tool's scope was disposed before the user answered",
        ),
        DropReason::Cancelled => {
            Refusal::new(RefusalCode::Cancelled, "The confirmation was withdrawn")
        }
    }
}

/// Expires confirmations on time. Timers are only hints (approvals check the clock
/// themselves); a clock that reports its jumps (a `ManualClock`) wakes it instead.
async fn sweeper(
    weak: Weak<Inner>,
    wake: Arc<Notify>,
    mut clock_changes: Option<tokio::sync::watch::Receiver<SystemTime>>,
    shutdown: CancellationToken,
) {
    let reports_jumps = clock_changes.is_some();
    loop {
        let wait = {
            let Some(inner) = weak.upgrade() else { return };
            // Nothing the app's types do (a held input's `Drop`, its clock) stops
            // the sweeper: a panic is caught, and it tries again a second later.
            let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.sweep_now();
                let mut pending = lock(&inner.pending);
                let next = pending.next_expiry();
                // Recorded under the lock the inserts take: one expiring before it
                // wakes this loop (a clock that reports its jumps wakes it on every
                // insert, as there is no timer then).
                pending.sweep_at = if reports_jumps { None } else { next };
                drop(pending);
                match (reports_jumps, next) {
                    (false, Some(at)) => Some(at.duration_since(inner.now()).unwrap_or_default()),
                    _ => None,
                }
            }));
            swept.unwrap_or_else(|_| {
                tracing::error!(target: "toolmark", "an expiry sweep panicked; the sweeper goes on");
                lock(&inner.pending).sweep_at = None;
                Some(Duration::from_secs(1))
            })
        };
        let clock_changed = async {
            match clock_changes.as_mut() {
                Some(rx) => {
                    if rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        let timer = async {
            match wait {
                Some(d) => tokio::time::sleep(d + Duration::from_millis(1)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = wake.notified() => {}
            () = clock_changed => {}
            () = timer => {}
        }
    }
}

impl Toolmark {
    /// A state value given to the builder.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.inner.state::<T>()
    }
}

impl Inner {
    pub(crate) fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.config.states.get::<T>()
    }
}

/// A JSON null input counts as `{}`.
pub(crate) fn normalize_input(mut input: Value) -> Value {
    normalize_in_place(&mut input);
    input
}

/// [`normalize_input`] where the input is kept: a missing (`null`) input becomes
/// `{}`.
#[inline]
pub(crate) fn normalize_in_place(input: &mut Value) {
    if input.is_null() {
        *input = Value::Object(Default::default());
    }
}
