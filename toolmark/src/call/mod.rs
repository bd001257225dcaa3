//! The call pipeline: what happens between `tm.call(name, input, options)` and its
//! [`Outcome`], one step per function. It owns the order of the checks, the scope
//! queue, the deadline and the outcome; it reads tools from `tools/`, asks
//! `confirm/` for approvals and `sensitive/` for redaction, and never speaks a
//! protocol (adapters call it through the public API).
//!
//! 1. lookup — unknown or hidden → `unknown_tool`
//! 2. allow — the caller is allowed, and has a confirmation path if needed → `not_allowed`
//! 3. validate — limits, then the typed decode → `invalid` with issues
//! 4. confirm — guarded tool, non-human caller: the app's policy, then a remembered
//!    decision (allow → run, deny → `rejected`), else deferred → `needs_confirmation`;
//!    inline → the confirm handler
//! 5. enqueue — the scope's FIFO (`busy`, `scope_disposed`, `cancelled`)
//! 6. run — under the deadline; abort → grace → abandon
//! 7. outcome — ok / error / refused, events
//!
//! Steps 1–4 are [`Inner::front`] (synchronous), 5 is [`Inner::acquire_now`] over the
//! scope's [`gate`], 6–7 are in [`run`]. Beside them: [`context`] (what a running
//! tool sees), [`input`] (decode and limits), [`outcome`] (what a call returns) and
//! [`undo`] (restorers, run through the same queue and deadline as calls, which is
//! why undo lives here and not with forms).
//!
//! Every call in flight holds `tm.call`'s future whole (a spawned call is a task of
//! that size), so the plain path (allowed, not guarded, its run done on the first
//! poll) keeps only what it needs across its awaits: the run's state (which
//! borrows the call's input where the call was given it), the run inline, its
//! queue permit and marker, or (while its scope is busy) its place in line (the
//! slot is taken and the run first polled in synchronous steps, no future of
//! their own). Every other path (a confirmation, a wait that watches a signal, a
//! run that does not finish at once) is boxed when taken.
//! The hot fns return `async` blocks rather than being `async fn`s (which keep a
//! second copy of their arguments), and every local in them lives across one
//! await at most (rustc keeps a local that lives across two, or a `match`
//! scrutinee an await sits in, beside every state). [`sizes`] prints the layout's
//! parts (the `counts` bench's `sizes` workload).

pub(crate) mod client;
pub(crate) mod context;
pub(crate) mod current;
pub(crate) mod gate;
pub(crate) mod input;
pub(crate) mod outcome;
mod run;
mod sizes;
pub(crate) mod sync_run;
pub(crate) mod undo;

pub(crate) use current::install_panic_hook;
pub(crate) use run::{finish, maybe_cancelled};
use run::{first_poll, Polled};

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::client::{CallerClient, LogMessage};
use crate::call::context::{CallShared, Deadline, Origin, Progress, ProgressFn, Reach, Signal};
use crate::call::gate::GatePermit;
use crate::call::input::{check_limits, json_type, UnknownCheck};
use crate::call::outcome::MAX_ISSUES;
use crate::confirm::remember::{before_asking, remembered_gate, Gate};
use crate::event::Event;
use crate::scope::ScopeNode;
use crate::sensitive::{Matcher, Observed, SecretSet};
use crate::toolmark::{normalize_in_place, normalize_input, Inner};
use crate::tools::registry::ToolEntry;
use crate::{
    Caller, ConfirmHandler, ConfirmMode, Decoded, Issue, Outcome, Refusal, RefusalCode,
    ToolContext, ToolError, Toolmark,
};

/// How a call is made: who calls, and optionally the caller's cancellation signal,
/// a progress listener, a log sink, a client the tool can ask, and a confirm
/// handler for this call only.
#[derive(Clone)]
pub struct CallOptions {
    pub(crate) caller: Caller,
    /// Made by `ctx.call`: may run inside the queue slot an enclosing run holds.
    pub(crate) nested: bool,
    /// Defer this call's confirmation (`needs_confirmation`) whatever the
    /// caller's mode: a transport that asks its client in another round trip
    /// (MCP's multi round-trip requests, see `confirm/external.rs`).
    pub(crate) defer: bool,
    pub(crate) signal: Option<CancellationToken>,
    /// The log sink and the client to ask.
    pub(crate) reach: Option<Arc<Reach>>,
    /// What few calls set, out of line: a call's future holds its options for the
    /// whole call, so every call in flight is 40 bytes smaller (see
    /// `call::sizes`).
    pub(crate) rare: Option<Arc<RareOptions>>,
}

/// The options of a [`CallOptions`] that few calls set.
#[derive(Clone, Default)]
pub(crate) struct RareOptions {
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) confirm: Option<Arc<dyn ConfirmHandler>>,
    /// The client session the call belongs to (for session-remembered decisions).
    pub(crate) session: Option<Arc<str>>,
}

impl CallOptions {
    /// A call by `caller`, with no signal: the run gets the `call_timeout` deadline.
    pub fn new(caller: Caller) -> Self {
        CallOptions {
            caller,
            nested: false,
            defer: false,
            signal: None,
            reach: None,
            rare: None,
        }
    }

    /// The rarely set options, to set one.
    fn rare_mut(&mut self) -> &mut RareOptions {
        Arc::make_mut(self.rare.get_or_insert_with(Arc::default))
    }

    /// The progress listener.
    pub(crate) fn progress(&self) -> Option<ProgressFn> {
        self.rare.as_ref().and_then(|r| r.progress.clone())
    }

    /// The confirm handler for this call only.
    pub(crate) fn confirm(&self) -> Option<&Arc<dyn ConfirmHandler>> {
        self.rare.as_ref().and_then(|r| r.confirm.as_ref())
    }

    /// The client session.
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.session.as_deref())
    }

    /// Drop the confirm handler for this call only.
    pub(crate) fn without_confirm_handler(mut self) -> Self {
        if self.confirm().is_some() {
            self.rare_mut().confirm = None;
        }
        self
    }

    /// The caller's cancellation signal. A caller that passes one owns the
    /// deadline: no `call_timeout` applies, and cancelling it aborts the call (a
    /// queued call never runs).
    #[must_use]
    pub fn signal(mut self, token: CancellationToken) -> Self {
        self.signal = Some(token);
        self
    }

    /// Listen to the tool's [`ToolContext::progress`] reports.
    #[must_use]
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.rare_mut().progress = Some(Arc::new(f));
        self
    }

    /// Ask `handler`, instead of the app's [`ConfirmHandler`], when this call
    /// needs an inline confirmation (a transport that asks its own client, such
    /// as MCP elicitation). The answer goes through the same checks as the app
    /// handler's (expiry, restore and re-validation of an edited input); a
    /// caller whose confirmations are deferred still gets `needs_confirmation`.
    #[must_use]
    pub fn confirm_handler(mut self, handler: impl ConfirmHandler) -> Self {
        self.rare_mut().confirm = Some(Arc::new(handler));
        self
    }

    /// Receive the tool's [`ToolContext::log`] messages (already scrubbed of the
    /// call's sensitive values) instead of their `tracing` events: a transport
    /// forwards them to its client (MCP's `notifications/message`). A nested
    /// [`ToolContext::call`] logs to the same sink.
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(LogMessage) + Send + Sync + 'static) -> Self {
        Arc::make_mut(self.reach.get_or_insert_with(Arc::default)).log = Some(Arc::new(f));
        self
    }

    /// The client behind this call, which the tool can ask with
    /// [`ToolContext::elicit`] and [`ToolContext::sample`] (without one, both
    /// return [`ClientError::NotSupported`](crate::ClientError::NotSupported)).
    /// `toolmark::mcp` gives the calling MCP session. A nested
    /// [`ToolContext::call`] asks the same client.
    #[must_use]
    pub fn client(mut self, client: impl CallerClient) -> Self {
        Arc::make_mut(self.reach.get_or_insert_with(Arc::default)).client = Some(Arc::new(client));
        self
    }

    /// Raise `flag` when the tool panics (how a transport tells a crashed run
    /// from a tool's own error: the outcome of both is `Outcome::Error`).
    #[must_use]
    #[cfg(feature = "mcp")]
    pub(crate) fn on_panic(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Arc::make_mut(self.reach.get_or_insert_with(Arc::default)).panicked = Some(flag);
        self
    }

    /// The client session this call belongs to (an MCP session id, say): a
    /// decision remembered [`For::Session`](crate::policy::For::Session) on a call
    /// of this session covers later calls of the same session only, until
    /// [`Toolmark::end_session`]. Without one, calls share one session that lasts
    /// as long as the Toolmark. The id is kept out of events and listings.
    #[must_use]
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.rare_mut().session = Some(Arc::from(id.into()));
        self
    }

    /// The caller.
    pub fn caller(&self) -> Caller {
        self.caller
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("caller", &self.caller)
            .field("signal", &self.signal.is_some())
            .field("confirm_handler", &self.confirm().is_some())
            .field(
                "log_sink",
                &self.reach.as_ref().is_some_and(|r| r.log.is_some()),
            )
            .field(
                "client",
                &self.reach.as_ref().is_some_and(|r| r.client.is_some()),
            )
            .field("session", &self.session_id().is_some())
            .finish_non_exhaustive()
    }
}

impl Toolmark {
    /// Call the tool `name` with `input` (a JSON object; `null` counts as `{}`).
    ///
    /// Never fails and never panics: every problem is an [`Outcome`] (`refused`
    /// with a code, or `error` when the tool itself failed or panicked).
    ///
    /// From inside a running tool, a call into a tool of the same scope (whose
    /// queue slot the running tool holds) would wait for itself: it is refused
    /// `busy` at once. A tool calls a tool of its own scope with
    /// [`ToolContext::call`] instead.
    pub fn call<'a>(
        &'a self,
        name: &'a str,
        input: Value,
        options: CallOptions,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        self.inner.call(name, input, options)
    }

    /// The sizes of a call's future and of what it holds (for the `counts` bench;
    /// not part of the API).
    #[doc(hidden)]
    pub fn __call_sizes(&self, name: &str, input: &Value) -> Option<Vec<(&'static str, usize)>> {
        sizes::call_sizes(self, name, input)
    }
}

fn short(name: &str) -> &str {
    match name.char_indices().nth(120) {
        Some((i, _)) => &name[..i],
        None => name,
    }
}

/// Issues at sensitive locations never quote the value; no issue carries a secret
/// of `input` (whose sensitive paths are `matcher`).
pub(crate) fn safe_issues(issues: Vec<Issue>, matcher: &Matcher, input: &Value) -> Vec<Issue> {
    SecretSet::of_call(matcher, input, None, None).issues(issues)
}

/// The `invalid` refusal for `issues`: cut to the first few (the rest counted),
/// then kept free of the call's secrets.
pub(crate) fn refuse_issues(mut issues: Vec<Issue>, set: &SecretSet) -> Refusal {
    let more = issues.len().saturating_sub(MAX_ISSUES);
    issues.truncate(MAX_ISSUES);
    Refusal::invalid_capped(set.issues(issues), more)
}

/// A tool's error with the secrets of `input` scrubbed from its message and issues.
pub(crate) fn scrub_error(e: ToolError, matcher: &Matcher, input: &Value) -> ToolError {
    SecretSet::of_call(matcher, input, None, None).error(e)
}

/// A value with the call's `secrets` scrubbed from every string (values and object
/// keys), as [`SecretSet::scrub_value`] does.
pub(crate) fn scrub_output(output: Value, secrets: &[String]) -> Value {
    if secrets.is_empty() {
        return output;
    }
    SecretSet::from_texts(Matcher::none(), secrets.to_vec()).scrub_value(output)
}

impl ToolEntry {
    /// The secret set of a call of this tool with `input` (see
    /// [`SecretSet`]): nothing to build for a tool without sensitive paths or state.
    #[inline]
    pub(crate) fn secret_set(&self, input: &Value) -> SecretSet {
        if !self.has_sensitive() {
            return SecretSet::none();
        }
        SecretSet::of_call(
            &self.matcher(),
            input,
            self.keys.as_deref(),
            self.state_secrets(),
        )
    }

    /// [`secret_set`](Self::secret_set) of a held (deferred) input: rebuilt only for
    /// a tool with sensitive paths or state.
    pub(crate) fn secret_set_held(&self, input: &crate::confirm::store::HeldInput) -> SecretSet {
        if !self.has_sensitive() {
            return SecretSet::none();
        }
        self.secret_set(&input.to_value())
    }
}

/// What ends a call's wait for its scope's queue, in this order: the scope's
/// disposal, the toolmark's shutdown, the caller's signal; and a full queue.
struct Stops<'a> {
    inner: &'a Inner,
    node: &'a ScopeNode,
    signal: Option<&'a CancellationToken>,
}

impl<'a> Stops<'a> {
    /// The tokens whose cancellation wakes a waiting call to look at its stops: the
    /// scope's disposal and the toolmark's shutdown (the same for every call of the
    /// scope, watched once by its gate).
    fn tokens(&self) -> [&'a CancellationToken; 2] {
        [&self.node.dispose_token, &self.inner.shutdown]
    }
}

impl crate::call::gate::Ends for Stops<'_> {
    type Why = Refusal;

    fn stop(&self) -> Option<Refusal> {
        if self.node.is_disposed() {
            Some(disposed(self.node))
        } else if self.inner.is_shut_down()
            || self.signal.is_some_and(CancellationToken::is_cancelled)
        {
            Some(cancelled_before_run())
        } else {
            None
        }
    }

    fn full(&self, waiting: usize) -> Option<Refusal> {
        let bound = self.inner.config.queue_bound;
        (waiting >= bound).then(|| {
            Refusal::new(
                RefusalCode::Busy,
                format!(
                    "Scope `{}` has {} calls waiting; try again later",
                    self.node.path, bound
                ),
            )
        })
    }
}

/// The wait for its scope's queue of a call without a signal of its own: what
/// `acquire_slow` waits for, ended by the scope's disposal or the toolmark's
/// shutdown, in three words (the tokens it watches and its [`Stops`] are rebuilt
/// from `inner` and `node` on each poll), so that a waiting call allocates nothing
/// for its wait.
struct QueueWait<'a> {
    inner: &'a Inner,
    node: &'a ScopeNode,
    place: crate::call::gate::Place,
}

impl<'a> QueueWait<'a> {
    fn new(inner: &'a Inner, node: &'a ScopeNode) -> Self {
        QueueWait {
            inner,
            node,
            place: Default::default(),
        }
    }
}

impl<'a> Future for QueueWait<'a> {
    type Output = Result<GatePermit<'a>, Refusal>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        let ends = Stops {
            inner: this.inner,
            node: this.node,
            signal: None,
        };
        this.node
            .queue
            .poll_acquire(&mut this.place, &ends.tokens(), &ends, cx)
    }
}

impl Drop for QueueWait<'_> {
    fn drop(&mut self) {
        self.node.queue.abandon(&mut self.place);
    }
}

/// A call's wait for its scope's slot, awaited once whichever it is: inline for a
/// call without a signal ([`QueueWait`]), boxed for one with a signal (it watches
/// the signal too). Not a `futures_util` `Either`: with one, the plain path (which
/// never builds a wait) measured ~20 instructions more per call (`benches/counts.rs`).
enum SlotWait<'a> {
    Queue(QueueWait<'a>),
    Boxed(Pin<Box<dyn Future<Output = Result<GatePermit<'a>, Refusal>> + Send + 'a>>),
}

impl<'a> Future for SlotWait<'a> {
    type Output = Result<GatePermit<'a>, Refusal>;

    #[inline]
    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            SlotWait::Queue(wait) => Pin::new(wait).poll(cx),
            SlotWait::Boxed(wait) => wait.as_mut().poll(cx),
        }
    }
}

/// What steps 1–4 decided.
enum Front {
    /// Shape and limits checked, to be decoded and built into its run in one step
    /// (tools that can, and need no confirmation from this caller). Small: the
    /// run's state is built where it stays, in the call's future.
    Prepared {
        entry: Arc<ToolEntry>,
        /// The decode must track unknown fields.
        track: bool,
    },
    /// Run now (possibly after an inline confirmation).
    Run {
        entry: Arc<ToolEntry>,
        input: Value,
        decoded: Decoded,
        /// Ask inline first, with this context.
        ask: Option<crate::confirm::policy::AskCtx>,
        set: SecretSet,
    },
    /// Done already: refused, or `needs_confirmation`.
    Done(Observed<Outcome>),
    /// A call to answer with the remembered decisions of the toolmark's
    /// confirmation store, or ask (deferred: put it in the store).
    Store {
        entry: Arc<ToolEntry>,
        input: Value,
        decoded: Decoded,
        ask: crate::confirm::policy::AskCtx,
        set: SecretSet,
    },
}

impl Inner {
    /// A call, end to end. Every way it can end is an [`Observed`] outcome, built
    /// through the call's secret set; the plain value is taken out only here, as it
    /// leaves.
    ///
    /// Written as a fn returning an `async` block, not an `async fn`: an `async
    /// fn` keeps a second copy of its arguments across every await, and this
    /// future is held whole by whoever awaits it (a spawned task's cell). What
    /// it holds across its await is the plain path's only (the call's state, its
    /// run, the queue and run futures); every other path is boxed.
    // Not an `async fn`: see above (its arguments would be kept twice).
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn call<'a>(
        self: &'a Arc<Self>,
        name: &'a str,
        mut input: Value,
        opts: CallOptions,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        async move {
            let started = self.wants_events().then(tokio::time::Instant::now);
            let caller = opts.caller;
            // Steps 1–4. No await in this `match` but the boxed one: its scrutinee
            // (a `Front`) is not kept in the future.
            // On the plain path the input stays where it came (the run's state reads
            // it there); every other path takes it.
            let (entry, track) = match self.front(name, &mut input, &opts) {
                Front::Prepared { entry, track } => (entry, track),
                Front::Done(outcome) => return self.leave(name, caller, started, outcome),
                // Boxed: a confirmation's states (and the inline and store paths)
                // stay out of every call's future.
                front => {
                    let outcome = self.call_slow(front, opts).await;
                    return self.leave(name, caller, started, outcome);
                }
            };
            // The run's state and the run, built where they stay (not moved after).
            let held = self.hold(
                entry,
                caller,
                opts.signal.as_ref(),
                opts.progress(),
                opts.reach,
                &mut input,
            );
            // The run is written once into its pinned place (matched and bound,
            // it was moved there through two copies).
            let mut slot = std::pin::pin!(None::<ToolFuture>);
            match prepare(&held, track) {
                Ok(run) => slot.set(Some(run)),
                Err(outcome) => return self.leave(name, caller, started, outcome),
            }
            let Some(run) = slot.as_mut().as_pin_mut() else {
                return self.leave(name, caller, started, missing_run());
            };
            let outcome = self
                .run_call(
                    &held,
                    run,
                    opts.signal.as_ref(),
                    opts.nested,
                    held.secret_set(),
                )
                .await;
            self.leave(name, caller, started, outcome)
        }
    }

    /// The plain outcome of a call, as it leaves (after its `call_finished` event).
    #[inline(always)]
    fn leave(
        &self,
        name: &str,
        caller: Caller,
        started: Option<tokio::time::Instant>,
        outcome: Observed<Outcome>,
    ) -> Outcome {
        let outcome: Outcome = outcome.into_inner();
        self.call_finished(name, caller, started, &outcome);
        outcome
    }

    /// The paths of [`call`](Self::call) past a [`Front::Store`] or a
    /// [`Front::Run`]: the remembered decisions, asking, deferring, then the run.
    ///
    /// Each path is boxed as its own future, so that a call pays for the box of
    /// its path only: one future for both was 1,136 bytes (the store path's
    /// locals beside the run's), too large for the allocator's per-thread cache,
    /// and its allocation alone cost more than the rest of a plain call's steps.
    fn call_slow<'a>(
        self: &'a Arc<Self>,
        front: Front,
        opts: CallOptions,
    ) -> Pin<Box<dyn Future<Output = Observed<Outcome>> + Send + 'a>> {
        match front {
            Front::Run {
                entry,
                input,
                decoded,
                ask,
                set,
            } => Box::pin(self.confirm_and_run(entry, input, decoded, ask, opts, set)),
            Front::Store {
                entry,
                input,
                decoded,
                ask,
                set,
            } => Box::pin(self.call_stored(entry, input, decoded, ask, opts, set)),
            // `call` answers `Done` and runs `Prepared` itself; both are matched
            // here so that this stays total (a separate enum for the slow paths
            // cost the fast path ~70 instructions per call in layout).
            Front::Done(outcome) => Box::pin(std::future::ready(outcome)),
            // A prepared call here would be a caller's mistake, answered as such
            // rather than run a second way.
            Front::Prepared { .. } => Box::pin(std::future::ready(Observed::fixed(
                RefusalCode::Cancelled,
                "internal: a prepared call on the slow path",
            ))),
        }
    }

    /// A [`Front::Store`] call: the remembered decisions (some in the toolmark's
    /// confirmation store), then ask, defer or run.
    async fn call_stored(
        self: &Arc<Self>,
        entry: Arc<ToolEntry>,
        input: Value,
        decoded: Decoded,
        ask: crate::confirm::policy::AskCtx,
        opts: CallOptions,
        set: SecretSet,
    ) -> Observed<Outcome> {
        let caller = opts.caller;
        match Box::pin(remembered_gate(self, &entry, caller, ask)).await {
            Gate::Done(outcome) => set.outcome(outcome),
            Gate::Ask(ask) if opts.defer || self.config.mode(caller) == ConfirmMode::Deferred => {
                match &self.shared {
                    Some(shared) => {
                        Box::pin(crate::confirm::deferred::defer_stored(
                            self, shared, &entry, caller, input, decoded, ask, &set,
                        ))
                        .await
                    }
                    None => crate::confirm::defer(self, &entry, caller, input, decoded, ask, &set),
                }
            }
            // Boxed: one future of `confirm_and_run`, polled through a box, for
            // every path that runs.
            Gate::Ask(ask) => {
                Box::pin(self.confirm_and_run(entry, input, decoded, Some(ask), opts, set)).await
            }
            Gate::Run => {
                Box::pin(self.confirm_and_run(entry, input, decoded, None, opts, set)).await
            }
        }
    }

    /// Steps 4b–7: ask inline when `ask` says so, then enqueue and run.
    async fn confirm_and_run(
        self: &Arc<Self>,
        entry: Arc<ToolEntry>,
        input: Value,
        decoded: Decoded,
        ask: Option<crate::confirm::policy::AskCtx>,
        opts: CallOptions,
        set: SecretSet,
    ) -> Observed<Outcome> {
        let caller = opts.caller;
        let asked = ask.is_some();
        let confirmed = if let Some(ask) = ask {
            // Boxed: keeps the hot path's future small.
            Box::pin(crate::confirm::inline_confirm(
                self,
                &entry,
                caller,
                input,
                decoded,
                opts.signal.as_ref(),
                opts.confirm().cloned(),
                ask,
            ))
            .await
        } else {
            Ok((input, decoded))
        };
        match confirmed {
            // 5–7. enqueue, run, outcome
            Ok((input, decoded)) => {
                // An approver may have edited the input: its secrets are the run's
                // (read from the held input below).
                let mut input = input;
                let keep = self.run_reads_input(&entry, caller);
                let decoded = crate::tools::spec::for_run(decoded, &mut input, keep);
                let run = Arc::clone(&entry.run);
                let held = self.hold(
                    entry,
                    caller,
                    opts.signal.as_ref(),
                    opts.progress(),
                    opts.reach,
                    &mut input,
                );
                let fut = std::pin::pin!(ToolFuture::from(run(held.ctx(), decoded)));
                let set = if asked { held.secret_set() } else { set };
                self.run_call(&held, fut, opts.signal.as_ref(), opts.nested, set)
                    .await
            }
            Err(outcome) => set.outcome(outcome),
        }
    }

    /// The `call_finished` event of a call that began at `started` (`None`: nobody
    /// was listening when it began).
    #[inline]
    pub(crate) fn call_finished(
        &self,
        tool: &str,
        caller: Caller,
        started: Option<tokio::time::Instant>,
        outcome: &Outcome,
    ) {
        if let Some(started) = started {
            self.emit(|| Event::CallFinished {
                tool: short(tool).to_owned(),
                caller,
                status: outcome.status(),
                code: outcome.refusal_code(),
                duration: started.elapsed(),
            });
        }
    }

    /// Steps 1–4, synchronous: lookup, allow, validate, and the deferred
    /// confirmation (an inline one is awaited by the caller).
    ///
    /// A call that goes on to the plain path (`Front::Prepared`) leaves `input`
    /// where it is (normalized); every other outcome takes it.
    fn front(self: &Arc<Self>, name: &str, input: &mut Value, opts: &CallOptions) -> Front {
        let caller = opts.caller;
        if self.is_shut_down() {
            return Front::Done(Observed::fixed(
                RefusalCode::Cancelled,
                "The app has shut down",
            ));
        }
        // 1. lookup
        let Some(entry) = self.lookup(name) else {
            return Front::Done(SecretSet::none().outcome(Outcome::refused(
                RefusalCode::UnknownTool,
                format!("No tool named `{}` is available now", short(name)),
            )));
        };
        normalize_in_place(input);
        // 2. allow
        if let Err(r) = self.allow(&entry, caller, opts.confirm().is_some() || opts.defer) {
            return Front::Done(entry.secret_set(input).outcome(r.into()));
        }
        let inline = entry.guarded() && caller != Caller::Human;
        // 3. validate — in one step with building the run, when nothing needs
        // confirming and the tool can (one allocation fewer); the call's secret set
        // is read where an outcome is built (a refusal here, the run's end there)
        if !inline && entry.prepare.is_some() {
            return self.validate_ready(entry, input);
        }
        let input = std::mem::take(input);
        // The call's secret set: every outcome below is built through it.
        let set = entry.secret_set(&input);
        let (input, decoded) = match self.validate_with(&entry, input, &set) {
            Ok(v) => v,
            Err(r) => return Front::Done(set.outcome(r.into())),
        };
        // 4. confirm: the policy and remembered decisions first, then ask
        let ask = if inline {
            match before_asking(self, &entry, caller, opts.session_id()) {
                Gate::Run => None,
                Gate::Done(outcome) => return Front::Done(set.outcome(outcome)),
                // With a store, the remembered decisions are looked up there.
                Gate::Ask(ask) if self.shared.is_some() => {
                    return Front::Store {
                        entry,
                        input,
                        decoded,
                        ask,
                        set,
                    };
                }
                Gate::Ask(ask)
                    if opts.defer || self.config.mode(caller) == ConfirmMode::Deferred =>
                {
                    return Front::Done(crate::confirm::defer(
                        self, &entry, caller, input, decoded, ask, &set,
                    ));
                }
                Gate::Ask(ask) => Some(ask),
            }
        } else {
            None
        };
        Front::Run {
            entry,
            input,
            decoded,
            ask,
            set,
        }
    }

    fn allow(&self, entry: &ToolEntry, caller: Caller, own_handler: bool) -> Result<(), Refusal> {
        if !entry.callers.contains(caller) {
            return Err(Refusal::new(
                RefusalCode::NotAllowed,
                format!("Tool `{}` cannot be called by {caller}", entry.name),
            ));
        }
        if entry.guarded()
            && !own_handler
            && self
                .config
                .lacks_approver(&entry.name, &entry.scope, entry.effect, caller)
        {
            self.emit(|| Event::MissingConfirmHandler {
                tool: entry.name.to_string(),
                callers: vec![caller],
            });
            return Err(Refusal::new(
                RefusalCode::NotAllowed,
                format!(
                    "Tool `{}` needs the user's confirmation and the app has no confirm handler for {caller}",
                    entry.name
                ),
            ));
        }
        Ok(())
    }

    /// Object shape and limits; whether the decode must track unknown fields.
    #[inline]
    fn check_shape(
        &self,
        entry: &ToolEntry,
        input: &Value,
        set: Option<&SecretSet>,
    ) -> Result<bool, Refusal> {
        if !input.is_object() {
            return Err(Refusal::invalid(vec![Issue::new(
                "",
                format!("the input must be a JSON object, not {}", json_type(input)),
            )]));
        }
        let limits = self.config.limits;
        check_limits(input, limits).map_err(|i| Refusal::invalid(vec![i]))?;
        let must_track = entry.unknown == UnknownCheck::Track;
        if let Some(keys) = &entry.keys {
            let found = keys.check(input, MAX_ISSUES);
            if !found.issues.is_empty() {
                let issues = match set {
                    Some(set) => set.issues(found.issues),
                    None => entry.secret_set(input).issues(found.issues),
                };
                return Err(Refusal::invalid_capped(issues, found.more));
            }
        }
        Ok(must_track && !self.config.allow_unknown_fields)
    }

    /// Limits, object shape, then the tool's own decode step.
    pub(crate) fn validate(
        &self,
        entry: &ToolEntry,
        input: Value,
    ) -> Result<(Value, Decoded), Refusal> {
        let input = normalize_input(input);
        let set = entry.secret_set(&input);
        self.validate_with(entry, input, &set)
    }

    /// [`validate`](Self::validate) of a normalized `input` whose secret set is `set`.
    fn validate_with(
        &self,
        entry: &ToolEntry,
        input: Value,
        set: &SecretSet,
    ) -> Result<(Value, Decoded), Refusal> {
        let track = self.check_shape(entry, &input, Some(set))?;
        match (entry.decode)(&input, !track) {
            Ok(decoded) => Ok((input, decoded)),
            Err(issues) => Err(refuse_issues(
                crate::call::input::every_issue(entry, &input, issues),
                set,
            )),
        }
    }

    /// The shape and limits of a call to decode and build in one step
    /// (`ToolEntry::prepare`, see [`prepare`]). A refusal is built through the
    /// call's secret set, read then.
    fn validate_ready(&self, entry: Arc<ToolEntry>, input: &Value) -> Front {
        match self.check_shape(&entry, input, None) {
            Ok(track) => Front::Prepared { entry, track },
            Err(r) => Front::Done(entry.secret_set(input).outcome(r.into())),
        }
    }

    /// Take the scope's queue slot when it is free; [`Slot::Taken`] when the call
    /// has to wait for it in FIFO order (`acquire_slow`: bounded; abandoned on
    /// disposal, shutdown or the caller's signal). Synchronous: only a call that
    /// waits builds a future for it.
    ///
    /// When the slot is held by a run polled on this thread (the caller is, or is
    /// inside, a running tool of this scope), waiting would never end: a `nested`
    /// call (`ctx.call`) runs inside that slot ([`Slot::Nested`]), any other is
    /// refused `busy`.
    #[inline]
    fn acquire_now<'a>(
        &self,
        node: &'a ScopeNode,
        signal: Option<&CancellationToken>,
        nested: bool,
    ) -> Result<Slot<'a>, Refusal> {
        if node.is_disposed() {
            return Err(disposed(node));
        }
        if signal.is_some_and(CancellationToken::is_cancelled) {
            return Err(cancelled_before_run());
        }
        match node.queue.try_acquire() {
            Some(permit) => Ok(Slot::Free(permit)),
            None if current::holds_slot(node) => {
                if nested {
                    Ok(Slot::Nested)
                } else {
                    Err(busy_in_own_scope(node))
                }
            }
            None => Ok(Slot::Taken),
        }
    }

    /// The wait for the queue of a call with a signal of its own (boxed by its
    /// caller: it watches the signal too). A call without one waits in a
    /// [`QueueWait`], kept in the call's own future.
    async fn acquire_slow<'a>(
        &self,
        node: &'a ScopeNode,
        signal: Option<&CancellationToken>,
    ) -> Result<GatePermit<'a>, Refusal> {
        // Disposal and shutdown are watched once by the gate (their flags are set
        // before their tokens are cancelled); the caller's own signal by this call.
        let ends = Stops {
            inner: self,
            node,
            signal,
        };
        let tokens = ends.tokens();
        tokio::select! {
            biased;
            r = node.queue.acquire_until(&tokens, ends) => r,
            () = maybe_cancelled(signal) => Err(cancelled_before_run()),
        }
    }

    /// The run's state: shared with its `ToolContext` when the tool reads one,
    /// else only what the call's own steps read, kept in the call's own future.
    #[inline(always)]
    pub(crate) fn hold<'i>(
        &self,
        entry: Arc<ToolEntry>,
        caller: Caller,
        signal: Option<&CancellationToken>,
        progress: Option<ProgressFn>,
        reach: Option<Arc<Reach>>,
        input: &'i mut Value,
    ) -> Held<'i> {
        if entry.uses_context {
            let limit = self.limit_for(&entry, signal);
            Held::Shared(SharedCall(CallShared::new_shared(
                caller,
                Origin::Tool(entry),
                signal,
                std::mem::take(input),
                limit,
                progress,
                reach,
            )))
        } else {
            // No context reads the progress listener: it is dropped here.
            Held::Local(LocalCall {
                entry,
                caller,
                input,
                reach,
            })
        }
    }

    /// A run's time limit: none when the caller gave a signal (it owns the
    /// deadline), else the tool's `timeout` or the app's `call_timeout`.
    #[inline]
    fn limit_for(&self, entry: &ToolEntry, signal: Option<&CancellationToken>) -> Option<Duration> {
        match signal {
            Some(_) => None,
            None => Some(entry.timeout.unwrap_or(self.config.call_timeout)),
        }
    }

    /// Whether the call reads its input once the run has started: for its secret
    /// set (a tool with sensitive paths or state), or for a `ctx.confirm` request
    /// (a run that reads its context, by a caller whose `ctx.confirm` asks the
    /// confirm handler). Otherwise the input moves into the run (see
    /// `tools::spec::for_run`).
    #[inline]
    pub(crate) fn run_reads_input(&self, entry: &ToolEntry, caller: Caller) -> bool {
        entry.has_sensitive()
            || (entry.uses_context && self.config.ctx_confirm_handler(caller).is_some())
    }

    /// Steps 5–7: queue, run, outcome. `set` is the call's secret set when it is
    /// known already (else it is read from the run's input).
    ///
    /// A fn returning an `async` block (not an `async fn`, which would keep a
    /// second copy of its arguments): this future is part of every call's.
    // Not an `async fn`: see above (its arguments would be kept twice).
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn run_call<'a>(
        &'a self,
        held: &'a Held,
        mut fut: Pin<&'a mut ToolFuture>,
        signal: Option<&'a CancellationToken>,
        nested: bool,
        set: SecretSet,
    ) -> impl Future<Output = Observed<Outcome>> + Send + 'a {
        // Each local below lives across one await at most (rustc keeps a local that
        // lives across two beside every state), so the run's states share bytes.
        async move {
            // The slot: one synchronous step on the plain path (no await); a call
            // that waits for it waits in one await (only the wait is kept across it).
            let permit = 'slot: {
                let wait = {
                    let Some(entry) = held.entry() else {
                        return missing_tool();
                    };
                    let node = &entry.scope;
                    match self.acquire_now(node, signal, nested) {
                        Ok(Slot::Free(permit)) => break 'slot Some(permit),
                        Ok(Slot::Nested) => break 'slot None,
                        // Without a signal to watch, the wait is three words, kept
                        // here; with one, boxed: only a call that waits builds it.
                        Ok(Slot::Taken) => match signal {
                            None => SlotWait::Queue(QueueWait::new(self, node)),
                            Some(_) => SlotWait::Boxed(Box::pin(self.acquire_slow(node, signal))),
                        },
                        Err(r) => return set.outcome(r.into()),
                    }
                };
                match wait.await {
                    Ok(permit) => Some(permit),
                    Err(r) => return set.outcome(r.into()),
                }
            };
            // The call's secrets, for its panic messages (only a tool with sensitive
            // paths or state has any).
            let mut marker = {
                let Some(entry) = held.entry() else {
                    return missing_tool();
                };
                self.emit(|| Event::CallStarted {
                    tool: entry.name.to_string(),
                    caller: held.caller(),
                });
                current::RunMarker::new(
                    Some(&entry.scope),
                    set.shared_texts().filter(|_| self.config.scrub_panics),
                )
            };
            // The run's first poll, synchronous; its result and the limit are not
            // kept beside a pending run's states (matched here, read again there).
            let t0 = match self
                .first_poll_now(held, signal, &mut marker, fut.as_mut())
                .await
            {
                Polled::Ended(end) => return self.end_run(held, end, set),
                Polled::Pending(t0) => t0,
            };
            // Its run waits for something: a call queued behind it parks rather than
            // spin (see `Gate::spin_for_grant`).
            let end = self
                .run_pending(held, signal, t0, permit.is_some(), &mut marker, fut)
                .await;
            self.end_run(held, end, set)
        }
    }

    /// The run's first poll, in the caller's await (for its task's context):
    /// synchronous, under the limit read here (and read again by a run that
    /// pends, so that it is not kept beside the pending run's states).
    #[inline(always)]
    fn first_poll_now<'a>(
        &self,
        held: &Held,
        signal: Option<&CancellationToken>,
        marker: &'a mut current::RunMarker,
        mut run: Pin<&'a mut ToolFuture>,
    ) -> impl Future<Output = Polled> + Send + 'a {
        let limit = held.limit(self, signal);
        std::future::poll_fn(move |cx| {
            std::task::Poll::Ready(first_poll(&mut *marker, limit, run.as_mut(), cx))
        })
    }

    /// The rest of a run that pends on its first poll, boxed with the whole of what
    /// it needs (a context-less run's deadline and signal are built only now). A
    /// run that holds its scope's slot (`holds`) marks it: a call queued behind it
    /// parks rather than spin (see `Gate::spin_for_grant`).
    fn run_pending<'a>(
        &'a self,
        held: &'a Held,
        signal: Option<&'a CancellationToken>,
        t0: Option<u64>,
        holds: bool,
        marker: &'a mut current::RunMarker,
        fut: Pin<&'a mut ToolFuture>,
    ) -> Pin<Box<dyn Future<Output = crate::call::run::RunEnd> + Send + 'a>> {
        // A held state without a tool never gets here (its call was refused before
        // its slot); kept total without a panic.
        let Some(entry) = held.entry() else {
            return Box::pin(std::future::ready(crate::call::run::RunEnd::Aborted(
                crate::call::run::Abort::Shutdown,
            )));
        };
        let node: &ScopeNode = &entry.scope;
        if holds {
            node.queue.holder_waits();
        }
        Box::pin(async move {
            let limit = held.limit(self, signal);
            let mut built = None;
            let shared = held.full(signal, limit, &mut built);
            self.run_on(node, shared, signal, t0, marker, fut).await
        })
    }

    /// The outcome of a run that ended (`end`), built through the call's secret set.
    #[inline(always)]
    fn end_run(
        &self,
        held: &Held,
        end: crate::call::run::RunEnd,
        set: SecretSet,
    ) -> Observed<Outcome> {
        if matches!(end, crate::call::run::RunEnd::Panicked(_))
            && let Some(flag) = held.reach().and_then(|r| r.panicked.as_ref())
        {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // The state a tool works on may have changed while the call waited or ran
        // (the user typed another card): its secrets now are secrets of the outcome.
        let set = match held.entry().and_then(|e| e.state_secrets()) {
            Some(state) => set.with_more(read_state(state)),
            None => set,
        };
        finish(end, &set)
    }
}

/// Decode the held input and build the run in one step (`ToolEntry::prepare`): the
/// run, or the `invalid` refusal built through the call's secret set.
#[inline]
fn prepare(held: &Held, track: bool) -> Result<ToolFuture, Observed<Outcome>> {
    let Some(entry) = held.entry() else {
        return Err(missing_tool());
    };
    let Some(prepare) = entry.prepare.as_ref() else {
        return Err(Observed::fixed(
            RefusalCode::Cancelled,
            "internal: no prepare step",
        ));
    };
    match prepare(held.input(), !track, held.ctx()) {
        Ok(fut) => Ok(fut),
        Err(issues) => Err(refuse_prepared(entry, held.input(), issues)),
    }
}

/// The refusal of a run without a tool (never happens: kept total without a panic).
#[cold]
fn missing_tool() -> Observed<Outcome> {
    Observed::fixed(RefusalCode::Cancelled, "internal: a call without a tool")
}

/// The refusal of a call whose run is not where it was just put (never happens:
/// kept total without a panic).
#[cold]
fn missing_run() -> Observed<Outcome> {
    Observed::fixed(RefusalCode::Cancelled, "internal: a call without a run")
}

#[cold]
fn refuse_prepared(entry: &ToolEntry, input: &Value, issues: Vec<Issue>) -> Observed<Outcome> {
    let set = entry.secret_set(input);
    let issues = crate::call::input::every_issue(entry, input, issues);
    set.outcome(refuse_issues(issues, &set).into())
}

/// The secrets of a tool's state now; a panicking reader gives none (the set still
/// holds those read before the run).
fn read_state(state: &crate::sensitive::StateSecretsFn) -> Vec<String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state())).unwrap_or_default()
}

/// What [`Inner::acquire_now`] found of a scope's queue slot.
enum Slot<'a> {
    /// Free: taken.
    Free(GatePermit<'a>),
    /// Held by the running tool this nested call (`ctx.call`) comes from: the call
    /// runs inside that slot.
    Nested,
    /// Taken by another run: wait for it.
    Taken,
}

#[cold]
fn busy_in_own_scope(node: &ScopeNode) -> Refusal {
    Refusal::new(
        RefusalCode::Busy,
        format!(
            "This call was made from inside a running tool of scope `{}`, \
             which holds that scope's queue slot: a `tm.call` into the same \
             scope would wait for itself. Call the tool with \
             `ctx.call(name, input)` from the running tool instead",
            node.path
        ),
    )
}

fn disposed(node: &ScopeNode) -> Refusal {
    Refusal::new(
        RefusalCode::ScopeDisposed,
        format!("Scope `{}` was disposed before the call ran", node.path),
    )
}

fn cancelled_before_run() -> Refusal {
    Refusal::new(
        RefusalCode::Cancelled,
        "The call was cancelled before it ran",
    )
}

/// A tool's run, not yet polled (inline when small, see `tools/private.rs`).
pub(crate) use crate::tools::private::ToolFuture;

/// A run's state and how its context reaches it.
pub(crate) enum Held<'i> {
    /// The tool reads its `ToolContext`, which shares this.
    Shared(SharedCall),
    /// The tool never reads a context: nothing to share.
    Local(LocalCall<'i>),
}

/// The state of a run whose tool never reads its context: only what the call's
/// own steps read (its first poll, its outcome). A run that pends builds the rest
/// ([`to_shared`](Self::to_shared)) in its boxed slow path.
pub(crate) struct LocalCall<'i> {
    entry: Arc<ToolEntry>,
    caller: Caller,
    /// For the call's secret set and the run's decode (empty when the input moved
    /// into the run): where the call's input is kept (the call's own future).
    input: &'i Value,
    reach: Option<Arc<Reach>>,
}

impl LocalCall<'_> {
    /// The run's full state, for its slow path (its deadline, the signal it
    /// cancels on an abort, its tool's name in events).
    fn to_shared(&self, signal: Option<&CancellationToken>, limit: Option<Duration>) -> CallShared {
        CallShared {
            caller: self.caller,
            origin: Origin::Tool(Arc::clone(&self.entry)),
            signal: Signal::new(signal.cloned()),
            input: Value::Null,
            deadline: Deadline::new(limit),
            progress: None,
            reach: None,
        }
    }
}

/// A run's state shared with its context; when the call ends, kept for this
/// thread's next call if no context clone outlived it (`CallShared::recycle`).
pub(crate) struct SharedCall(Arc<CallShared>);

impl Drop for SharedCall {
    fn drop(&mut self) {
        CallShared::recycle(&mut self.0);
    }
}

impl Held<'_> {
    /// The call's secret set, read from the held input (none without a tool).
    #[inline(always)]
    pub(crate) fn secret_set(&self) -> SecretSet {
        match self.entry() {
            Some(entry) => entry.secret_set(self.input()),
            None => SecretSet::none(),
        }
    }

    fn entry(&self) -> Option<&Arc<ToolEntry>> {
        match self {
            Held::Shared(s) => s.0.entry(),
            Held::Local(l) => Some(&l.entry),
        }
    }

    fn input(&self) -> &Value {
        match self {
            Held::Shared(s) => &s.0.input,
            Held::Local(l) => l.input,
        }
    }

    fn caller(&self) -> Caller {
        match self {
            Held::Shared(s) => s.0.caller,
            Held::Local(l) => l.caller,
        }
    }

    /// The run's time limit, `None` for none (`signal`: the call's, as given to
    /// [`Inner::hold`]).
    fn limit(&self, inner: &Inner, signal: Option<&CancellationToken>) -> Option<Duration> {
        match self {
            Held::Shared(s) => s.0.deadline.limit(),
            // Derived, not kept: a call's future holds its state for the whole call.
            Held::Local(l) => inner.limit_for(&l.entry, signal),
        }
    }

    fn reach(&self) -> Option<&Arc<Reach>> {
        match self {
            Held::Shared(s) => s.0.reach.as_ref(),
            Held::Local(l) => l.reach.as_ref(),
        }
    }

    /// The run's full state: shared already, or built into `built` from a
    /// context-less run's (see [`LocalCall::to_shared`]).
    fn full<'a>(
        &'a self,
        signal: Option<&CancellationToken>,
        limit: Option<Duration>,
        built: &'a mut Option<CallShared>,
    ) -> &'a CallShared {
        match self {
            Held::Shared(s) => &s.0,
            Held::Local(l) => built.insert(l.to_shared(signal, limit)),
        }
    }

    pub(crate) fn ctx(&self) -> ToolContext {
        match self {
            Held::Shared(s) => ToolContext {
                call: Arc::clone(&s.0),
            },
            Held::Local(_) => ToolContext::detached(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use serde_json::json;

    use crate::{CallOptions, Caller, Effect, ToolSpec, Toolmark};

    type Ran = Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

    /// A toolmark with one write tool `s.run` that records each run's `id` and,
    /// when its input has `"hold": true`, waits until `go` is notified; and a
    /// spawner of its calls.
    fn holding_app() -> (
        Toolmark,
        Arc<tokio::sync::Notify>,
        Ran,
        impl Fn(serde_json::Value) -> tokio::task::JoinHandle<crate::Outcome>,
    ) {
        let tm = Toolmark::builder().build().unwrap();
        let go = Arc::new(tokio::sync::Notify::new());
        let ran = Ran::default();
        let (wait, log) = (Arc::clone(&go), Arc::clone(&ran));
        tm.scope("s")
            .register(ToolSpec::new("run", "Run").effect(Effect::Write).handler(
                move |_ctx, input| {
                    let (go, log) = (Arc::clone(&wait), Arc::clone(&log));
                    async move {
                        log.lock().unwrap().push(input["id"].clone());
                        if input["hold"] == true {
                            go.notified().await;
                        }
                        Ok(input)
                    }
                },
            ))
            .unwrap();
        let call = {
            let tm = tm.clone();
            move |input: serde_json::Value| {
                let tm = tm.clone();
                tokio::spawn(async move {
                    tm.call("s.run", input, CallOptions::new(Caller::InApp))
                        .await
                })
            }
        };
        (tm, go, ran, call)
    }

    /// A run whose first poll is pending marks its scope's gate, so that calls
    /// queued behind it park rather than spin; the mark goes with the gate.
    #[tokio::test(start_paused = true)]
    async fn a_run_that_waits_marks_its_scope_so_waiters_park() {
        let (tm, go, _, call) = holding_app();
        let entry = tm.inner.lookup("s.run").unwrap();
        let waits = || entry.scope.queue.holder_waits.load(Ordering::Relaxed);
        let call = call(json!({"id": 1, "hold": true}));
        for _ in 0..100 {
            if waits() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(waits(), "the run waits: its scope is marked");
        go.notify_one();
        assert!(call.await.unwrap().is_ok());
        assert!(!waits(), "released with the gate");
    }

    /// A call without a signal waits for its queue in its own future (no boxed
    /// wait): dropped while it waits, it leaves the queue and never runs, and the
    /// call behind it runs once the holder ends; a disposal ends such a wait.
    #[tokio::test(start_paused = true)]
    async fn a_queued_call_without_a_signal_leaves_its_queue_when_dropped() {
        let (tm, go, ran, call) = holding_app();
        let holder = call(json!({"id": 1, "hold": true}));
        tokio::task::yield_now().await;
        let dropped = call(json!({"id": 2}));
        let behind = call(json!({"id": 3}));
        tokio::task::yield_now().await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        go.notify_one();
        assert!(holder.await.unwrap().is_ok());
        let behind = tokio::time::timeout(std::time::Duration::from_secs(5), behind).await;
        assert!(behind.expect("the call behind ran").unwrap().is_ok());
        assert_eq!(*ran.lock().unwrap(), [json!(1), json!(3)]);

        let holder = call(json!({"id": 4, "hold": true}));
        tokio::task::yield_now().await;
        let queued = call(json!({"id": 5}));
        tokio::task::yield_now().await;
        tm.scope("s").dispose();
        let out = queued.await.unwrap();
        assert_eq!(
            out.refusal().map(|r| r.code),
            Some(crate::RefusalCode::ScopeDisposed)
        );
        assert!(!holder.await.unwrap().is_ok());
        assert_eq!(*ran.lock().unwrap(), [json!(1), json!(3), json!(4)]);
    }
}
