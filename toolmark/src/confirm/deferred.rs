//! The deferred confirmation, once for every store: a `needs_confirmation` call
//! is kept ([`defer`]), listed, answered with `confirm_pending` (on any instance),
//! withdrawn or expired. Every rule is here; where it is kept is the backend's
//! business only:
//!
//! - the **built-in table** (no store set): the toolmark's own memory, holding
//!   the decoded input as well (nothing leaves the process, nothing is sealed);
//! - a **[`ConfirmStore`](crate::store::ConfirmStore)**: the whole confirmation
//!   sealed and bound to its id (`store/flow.rs` seals, opens and keeps the
//!   tombstones; nothing read back is trusted unless it opens).

use std::sync::Arc;
use std::time::SystemTime;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::flow::{hidden_refusal, rejected, resolved, restore_and_validate};
use super::policy::{Answer, Approver, AskCtx, For};
use super::remember::{person_check, remember};
use super::store::{DropReason, HeldInput, Quiet, Rare, Stored};
use super::{diff_paths, ConfirmId, PendingConfirmation};
use crate::event::Event;
use crate::sensitive::{CompactView, Observed, SecretSet};
use crate::store::flow::Shared;
use crate::sync::lock;
use crate::toolmark::{drop_refusal, Inner};
use crate::tools::registry::{EntrySensitive, ToolEntry};
use crate::tools::spec::InputItself;
use crate::{
    Caller, ConfirmMode, Decision, Decoded, Effect, Outcome, Refusal, RefusalCode, Toolmark,
};

/// The tool registration a confirmation belongs to: it runs on that registration
/// only, never on a tool registered again under the same name.
pub(crate) enum Bound {
    /// The entry itself (the built-in table).
    Entry(Arc<ToolEntry>),
    /// As named in a sealed record.
    Sealed(Registration),
}

/// A registration as a sealed record names it: the instance that made it and its
/// serial there, and what the approver was shown it is (its effect and sensitive
/// paths), which another instance's registration of the name must match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) origin: String,
    pub(crate) serial: u64,
    pub(crate) effect: Effect,
    pub(crate) sensitive: Vec<String>,
}

impl Registration {
    pub(crate) fn of(origin: &str, entry: &ToolEntry) -> Self {
        Registration {
            origin: origin.to_owned(),
            serial: entry.serial,
            effect: entry.effect,
            sensitive: sensitive_shape(entry),
        }
    }
}

/// The sensitive paths of a tool, as compared across instances (a tool whose paths
/// are read by a function compares as such).
pub(crate) fn sensitive_shape(entry: &ToolEntry) -> Vec<String> {
    match &entry.sensitive {
        EntrySensitive::Static(m) => {
            let mut paths: Vec<String> = m.paths().iter().map(ToString::to_string).collect();
            paths.sort();
            paths
        }
        EntrySensitive::Dynamic { .. } => vec!["(read by a function)".to_owned()],
    }
}

/// One deferred confirmation, as the flow trusts it: held in this process, or
/// opened from its seal.
pub(crate) struct Deferred {
    /// The built-in table's order (given when it is inserted; 0 in a store).
    pub(crate) seq: u64,
    pub(crate) id: ConfirmId,
    pub(crate) tool: Arc<str>,
    pub(crate) caller: Caller,
    /// What observers see of it (summary, changes, the input redacted): built by
    /// the call's secret set, or opened from a record sealed with one; kept small
    /// (the table holds it as it is).
    pub(crate) view: CompactView,
    /// The real input.
    pub(crate) input: HeldInput,
    pub(crate) expires_at: SystemTime,
    /// The policy context and the form version, when it has either.
    pub(crate) rare: Option<Box<Rare>>,
    pub(crate) bound: Bound,
}

impl Deferred {
    pub(crate) fn info(&self) -> PendingConfirmation {
        PendingConfirmation {
            confirm_id: String::from(&*self.id),
            tool: String::from(&*self.tool),
            caller: self.caller,
            summary: self.view.summary().to_owned(),
            changes: self.view.changes().to_vec(),
            input: match self.view.shown() {
                Some(shown) => shown.clone(),
                None => self.input.to_value(),
            },
            expires_at: self.expires_at,
        }
    }

    /// The policy context it was asked under.
    pub(crate) fn ask(&self) -> &AskCtx {
        Rare::ask(&self.rare)
    }

    /// The form (or wizard) version the call was made at.
    pub(crate) fn form_version(&self) -> Option<&[u64]> {
        Rare::form_version(&self.rare)
    }
}

/// A confirmation taken out for an answer.
pub(crate) struct Taken {
    pub(crate) d: Deferred,
    /// The decoded input (the built-in table keeps it).
    pub(crate) decoded: Quiet<Decoded>,
    pub(crate) decoded_is_input: bool,
    /// The store's take token (to put it back).
    pub(crate) token: Option<String>,
}

/// What a deferred call keeps: what observers see of it (built by the call's
/// secret set `set`: the pending list, the event, the outcome and the stored
/// record all read this one view), when it expires, the form version, the policy
/// context and the registration; and its `needs_confirmation` outcome, made from
/// the same view.
#[inline(always)]
fn keep(
    inner: &Inner,
    entry: &Arc<ToolEntry>,
    caller: Caller,
    input: Value,
    ask: AskCtx,
    bound: Bound,
    set: &SecretSet,
) -> (Deferred, Observed<Outcome>) {
    let matcher = entry.matcher();
    let summary = entry.summary_for(&input, &matcher);
    let changes = entry.changes_for(&input, &matcher);
    // Nothing to hide: the input itself is what an approver sees (kept once).
    let mut view = set.view(&matcher, &input, summary, changes, false);
    let id = ConfirmId::new();
    let expires_at = inner.now() + inner.config.confirm_expiry;
    // The summary as made goes to the outcome; the view keeps an exact copy, so
    // compacting it copies nothing again.
    let outcome = view.needs_confirmation(&id, expires_at);
    let form_version = entry.stale_check.as_ref().map(|c| c.version());
    let d = Deferred {
        seq: 0,
        id,
        tool: Arc::clone(&entry.name),
        caller,
        view: view.compact(),
        input: HeldInput::new(input),
        expires_at,
        rare: Rare::boxed(ask, form_version),
        bound,
    };
    (d, outcome)
}

fn requested(inner: &Inner, d: &Deferred) {
    inner.emit(|| Event::ConfirmationRequested {
        confirm_id: String::from(&*d.id),
        tool: String::from(&*d.tool),
        caller: d.caller,
        mode: ConfirmMode::Deferred,
        summary: d.view.summary().to_owned(),
        input: d.info().input,
        expires_at: d.expires_at,
    });
}

/// Deferred mode, the built-in table: keep the call and return
/// `needs_confirmation`; the tool has not run.
pub(crate) fn defer(
    inner: &Arc<Inner>,
    entry: &Arc<ToolEntry>,
    caller: Caller,
    input: Value,
    decoded: Decoded,
    ask: AskCtx,
    set: &SecretSet,
) -> Observed<Outcome> {
    // Numbered (`seq`) by the table when it is inserted.
    let (d, outcome) = keep(
        inner,
        entry,
        caller,
        input,
        ask,
        Bound::Entry(Arc::clone(entry)),
        set,
    );
    requested(inner, &d);
    // A decoded value that is the input itself (a dynamic tool's marker, or a
    // typed tool's `Value`) is not kept twice: the input is.
    let decoded_is_input = decoded.is::<InputItself>() || decoded.is::<Value>();
    let decoded = if decoded_is_input {
        Quiet::none()
    } else {
        Quiet::new(decoded)
    };
    inner.insert_stored(Stored::deferred(
        d,
        Arc::clone(entry),
        decoded,
        decoded_is_input,
    ));
    outcome
}

/// Deferred mode on a confirmation store: keep the call, sealed, and return
/// `needs_confirmation`; the tool has not run.
///
/// A fn returning an `async` block (an `async fn` keeps its arguments twice): its
/// caller boxes it, and under 1,032 bytes the box comes from the allocator's
/// per-thread cache.
#[allow(clippy::too_many_arguments)]
// Not an `async fn`: see above (its arguments would be kept twice).
#[allow(clippy::manual_async_fn)]
pub(crate) fn defer_stored<'a>(
    inner: &'a Arc<Inner>,
    shared: &'a Shared,
    entry: &'a Arc<ToolEntry>,
    caller: Caller,
    input: Value,
    decoded: Decoded,
    ask: AskCtx,
    set: &'a SecretSet,
) -> impl std::future::Future<Output = Observed<Outcome>> + Send + 'a {
    async move {
        // The store decodes again at approval (on any instance).
        Quiet::new(decoded);
        shared.start(inner);
        let bound = Bound::Sealed(Registration::of(shared.origin(), entry));
        let (d, outcome) = keep(inner, entry, caller, input, ask, bound, set);
        // A store of the app's own that panics refuses the call; it never takes the
        // caller's task down.
        let put = std::panic::AssertUnwindSafe(shared.put(inner, &d)).catch_unwind();
        let evicted = match put.await {
            Ok(Ok(evicted)) => evicted,
            Ok(Err(outcome)) => return SecretSet::none().outcome(outcome),
            Err(_) => {
                tracing::error!(target: "toolmark", "the confirmation store panicked; the call was refused");
                return Observed::fixed(
                    RefusalCode::Unavailable,
                    "The confirmation store failed; nothing was run. Try again shortly",
                );
            }
        };
        requested(inner, &d);
        for (old, reason) in evicted {
            inner.emit(|| Event::ConfirmationEvicted {
                confirm_id: String::from(&*old.id),
                tool: String::from(&*old.tool),
                caller: old.caller,
                reason,
            });
            // Boxed: eviction is rare, and its delivery's future would be kept
            // in every stored call's.
            Box::pin(dropped(inner, Some(shared), &old, DropReason::Expired)).await;
        }
        outcome
    }
}

/// A confirmation dropped without an answer: its event, and the agent is told
/// through the bridge (on every instance, with a store).
pub(crate) async fn dropped(
    inner: &Inner,
    shared: Option<&Shared>,
    d: &Deferred,
    reason: DropReason,
) {
    dropped_event(inner, &d.id, &d.tool, reason);
    let outcome = SecretSet::none().outcome(Outcome::Refused(drop_refusal(reason)));
    deliver(inner, shared, d, &outcome).await;
}

/// The event of a confirmation dropped without an answer.
pub(crate) fn dropped_event(inner: &Inner, id: &str, tool: &str, reason: DropReason) {
    match reason {
        DropReason::Expired | DropReason::Shutdown => inner.emit(|| Event::ConfirmationExpired {
            confirm_id: id.to_owned(),
            tool: tool.to_owned(),
        }),
        DropReason::ScopeDisposed | DropReason::Cancelled => {
            inner.emit(|| Event::ConfirmationDropped {
                confirm_id: id.to_owned(),
                tool: tool.to_owned(),
                reason: if reason == DropReason::Cancelled {
                    "cancelled"
                } else {
                    "scope_disposed"
                },
            });
        }
    }
}

/// What came of a confirmation, to the agent: this toolmark's bridge and, with a
/// store, every other instance's.
pub(crate) async fn deliver(
    inner: &Inner,
    shared: Option<&Shared>,
    d: &Deferred,
    outcome: &Observed<Outcome>,
) {
    deliver_here(inner, d, outcome);
    if let Some(shared) = shared {
        shared.publish(inner, d, outcome).await;
    }
}

/// What came of a confirmation, to this toolmark's bridge (the part of
/// [`deliver`] that never waits).
fn deliver_here(inner: &Inner, d: &Deferred, outcome: &Observed<Outcome>) {
    inner.send_bridge_with(|| Observed::confirmed(&d.id, &d.tool, outcome.clone()));
}

/// Where the confirmations of a toolmark are kept.
#[derive(Clone, Copy)]
enum Backend<'a> {
    Builtin,
    Store(&'a Shared),
}

impl<'a> Backend<'a> {
    fn of(inner: &'a Inner) -> Self {
        match &inner.shared {
            Some(shared) => Backend::Store(shared),
            None => Backend::Builtin,
        }
    }

    fn shared(self) -> Option<&'a Shared> {
        match self {
            Backend::Builtin => None,
            Backend::Store(shared) => Some(shared),
        }
    }

    /// Put back a confirmation whose answer was refused: it stays pending, in its
    /// place.
    async fn put_back(self, inner: &Inner, taken: Taken) {
        match self {
            Backend::Builtin => {
                let Taken {
                    d,
                    decoded,
                    decoded_is_input,
                    ..
                } = taken;
                if let Bound::Entry(entry) = &d.bound {
                    let entry = Arc::clone(entry);
                    let record = Stored::deferred(d, entry, decoded, decoded_is_input);
                    lock(&inner.pending).reinsert(record);
                }
            }
            Backend::Store(shared) => {
                let Taken {
                    d, token, decoded, ..
                } = taken;
                drop(decoded);
                if let Some(token) = token {
                    shared.put_back(&d.id, &token).await;
                }
            }
        }
    }
}

/// Take `id` out of the built-in table for an answer (single use).
#[inline(always)]
fn take_builtin(inner: &Inner, id: &str) -> Option<Taken> {
    let taken = lock(&inner.pending).take_deferred(id);
    taken.and_then(Stored::into_taken)
}

/// Whether a confirmation's registration is here to run it.
enum Belongs {
    /// This entry is the registration (or, from another instance, one with the
    /// same effect and sensitive paths).
    Here(Arc<ToolEntry>),
    /// This instance's registration is gone (its scope was disposed): the
    /// confirmation is dropped.
    Gone,
    /// Another instance's registration, and this one has none of the name: it
    /// stays pending for an instance that has.
    Elsewhere,
    /// Another instance's registration, and the tool of that name here is not
    /// what the approver was shown.
    Changed,
}

fn belongs(inner: &Inner, shared: Option<&Shared>, d: &Deferred) -> Belongs {
    match &d.bound {
        // A tool leaves the registry only with its scope's disposal, and a name is
        // taken again only after: the entry is registered while its scope lives.
        Bound::Entry(entry) if entry.scope.is_disposed() => Belongs::Gone,
        Bound::Entry(entry) => Belongs::Here(Arc::clone(entry)),
        Bound::Sealed(reg) => {
            let now = inner.read_registry().get(&d.tool).cloned();
            let mine = shared.is_some_and(|s| s.origin() == reg.origin);
            match now {
                None if mine => Belongs::Gone,
                None => Belongs::Elsewhere,
                Some(e) if mine => {
                    if e.serial == reg.serial {
                        Belongs::Here(e)
                    } else {
                        Belongs::Gone
                    }
                }
                Some(e) => {
                    if e.effect == reg.effect && sensitive_shape(&e) == reg.sensitive {
                        Belongs::Here(e)
                    } else {
                        Belongs::Changed
                    }
                }
            }
        }
    }
}

fn unknown_id() -> Observed<Outcome> {
    Observed::fixed(
        RefusalCode::ConfirmationExpired,
        "No confirmation is pending with this id: it was already used, it expired, or it never existed",
    )
}

impl Toolmark {
    /// Answer a deferred confirmation. An approval runs the tool as caller
    /// [`Human`](Caller::Human) (an edited input is restored and re-validated first)
    /// and returns the run's outcome; a rejection returns `rejected` with the
    /// reason. Either way the agent also gets a
    /// [`BridgeMessage::Confirmed`](crate::BridgeMessage::Confirmed). An id that was used, expired or never existed
    /// is `confirmation_expired`; an invalid edit is `invalid` and leaves the
    /// confirmation open for another answer. While the tool's scope is hidden
    /// (`when` false, here or above), any answer is refused `unknown_tool` and the
    /// confirmation stays pending until the tool shows again or it expires
    /// ([`cancel_pending`](Self::cancel_pending) withdraws it).
    ///
    /// A confirmation runs only on the tool registration it was asked for: once
    /// that tool's scope is disposed, the confirmation is dropped (the agent is told
    /// `scope_disposed`) and an answer is refused `confirmation_expired`, even when
    /// a tool of the same name was registered again. On another instance (with a
    /// store), it runs only on a tool of the name with the effect and sensitive
    /// paths the approver was shown (else `confirmation_expired`, nothing run).
    ///
    /// `decision` may say who decided and whether to remember it
    /// (`Decision::approve().by("user-42").remember(For::Session)`, see
    /// [`policy`](crate::policy)). When the policy needs a person to approve this
    /// call, an approval without an identity is refused `not_allowed` and the
    /// confirmation stays open.
    ///
    /// With a confirmation store that cannot be reached, the answer is refused
    /// `unavailable`: the tool did not run, and the confirmation stays answerable
    /// (see [`store`](crate::store#when-the-store-goes-away)).
    ///
    /// Nothing an app type does escapes this call: a panic while dropping a held
    /// input (its `Drop`) is caught and logged.
    pub async fn confirm_pending(&self, confirm_id: &str, decision: impl Into<Answer>) -> Outcome {
        let (decision, by, remember_for) = decision.into().into_parts();
        let approver = Approver::app(by.as_deref());
        let answer = answer(&self.inner, confirm_id, decision, &approver, remember_for);
        std::panic::AssertUnwindSafe(answer)
            .catch_unwind()
            .await
            .map(Observed::into_inner)
            .unwrap_or_else(|_| {
                tracing::error!(target: "toolmark", confirm_id, "answering a confirmation panicked; the panic was caught");
                Outcome::Error(crate::ToolError::new(
                    "Answering the confirmation failed unexpectedly",
                ))
            })
    }

    /// The open deferred confirmations, oldest first, input redacted — from the
    /// confirmation store when one is set (every instance's), else from this
    /// toolmark. Fails only when the store cannot be reached (`unavailable`).
    ///
    /// With a store, use this rather than
    /// [`pending_confirmations`](Self::pending_confirmations), which lists only
    /// what this process holds in memory.
    pub async fn pending_confirmations_async(
        &self,
    ) -> Result<Vec<PendingConfirmation>, crate::store::StoreError> {
        match &self.inner.shared {
            None => Ok(self.pending_confirmations()),
            Some(shared) => shared.list(&self.inner).await,
        }
    }

    /// Withdraw an open confirmation (deferred, from the store when one is set, or
    /// inline): its caller gets `cancelled` (a deferred one through the bridge, on
    /// every instance). Returns whether it was open.
    pub async fn cancel_pending_async(
        &self,
        confirm_id: &str,
    ) -> Result<bool, crate::store::StoreError> {
        if self.cancel_pending(confirm_id) {
            return Ok(true);
        }
        let Some(shared) = &self.inner.shared else {
            return Ok(false);
        };
        shared.settle(&self.inner).await?;
        match shared.take(&self.inner, confirm_id).await {
            Ok(Some(taken)) => {
                dropped(&self.inner, Some(shared), &taken.d, DropReason::Cancelled).await;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(outcome) if outcome.refusal_code() == Some(RefusalCode::Unavailable) => {
                Err(crate::store::StoreError::unavailable(
                    "the confirmation store did not answer; the confirmation stays pending",
                ))
            }
            // A record that does not open was refused (and is gone).
            Err(_) => Ok(false),
        }
    }
}

/// `confirm_pending`, on whichever backend (and the answers of another request,
/// `confirm/external.rs`).
pub(crate) async fn answer(
    inner: &Arc<Inner>,
    id: &str,
    decision: Decision,
    approver: &Approver,
    remember_for: Option<For>,
) -> Observed<Outcome> {
    let backend = Backend::of(inner);
    let shared = backend.shared();
    if let Some(shared) = shared
        && let Err(e) = shared.settle(inner).await
    {
        return SecretSet::none().outcome(crate::store::flow::unavailable(&e));
    }
    // Take it out for this answer (single use); `Err`: refused already. The
    // built-in table's take does not wait: made in place, with no future of its
    // own around it (the taken confirmation is moved once less).
    let mut taken = match backend {
        Backend::Builtin => match take_builtin(inner, id) {
            Some(taken) => taken,
            None => return unknown_id(),
        },
        Backend::Store(shared) => match shared.take(inner, id).await {
            Ok(Some(taken)) => taken,
            Ok(None) => return unknown_id(),
            Err(outcome) => return SecretSet::none().outcome(outcome),
        },
    };
    // Expiry is checked against the clock at approval time, not only by a timer.
    if inner.now() >= taken.d.expires_at {
        dropped(inner, shared, &taken.d, DropReason::Expired).await;
        return SecretSet::none().outcome(Outcome::Refused(drop_refusal(DropReason::Expired)));
    }
    // The registration it was asked for, and only that one, runs it.
    let entry = match belongs(inner, shared, &taken.d) {
        Belongs::Here(entry) => entry,
        Belongs::Gone => {
            dropped(inner, shared, &taken.d, DropReason::ScopeDisposed).await;
            return SecretSet::none()
                .outcome(Outcome::Refused(drop_refusal(DropReason::ScopeDisposed)));
        }
        Belongs::Elsewhere => {
            backend.put_back(inner, taken).await;
            return Observed::fixed(
                RefusalCode::UnknownTool,
                "The confirmation's tool is not registered on this instance; it stays pending",
            );
        }
        Belongs::Changed => {
            let outcome = Observed::fixed(
                RefusalCode::ConfirmationExpired,
                "The tool registered under this name now is not the one this confirmation was asked for (its effect or sensitive paths changed); it was not run",
            );
            deliver(inner, shared, &taken.d, &outcome).await;
            return outcome;
        }
    };
    // A hidden tool is unknown, to an approver too: the confirmation waits (it is
    // not used up) until the tool shows again or it expires.
    if !entry.scope.visible() {
        backend.put_back(inner, taken).await;
        return SecretSet::none().outcome(Outcome::Refused(hidden_refusal(&entry)));
    }
    // Every outcome from here on is built by the call's secret set (a reason, an
    // issue or the run's output may quote a secret of the held input).
    let set = entry.secret_set_held(&taken.d.input);
    let d = &taken.d;
    if !decision.approved {
        resolved(inner, id, &entry, &decision, Vec::new(), approver, &set);
        remember(
            inner,
            &entry,
            d.caller,
            d.ask(),
            remember_for,
            false,
            decision.reason.as_deref().map(|r| set.text(r).into_inner()),
            approver,
        )
        .await;
        let outcome = set.outcome(Outcome::Refused(rejected(&decision)));
        deliver(inner, shared, d, &outcome).await;
        return outcome;
    }
    if let Err(reason) = person_check(d.ask(), approver) {
        // Not an answer this confirmation can take: it stays open for one that is.
        backend.put_back(inner, taken).await;
        return set.outcome(Outcome::refused(RefusalCode::NotAllowed, reason));
    }
    // A form (or wizard) changed since the call: `stale`.
    if entry.stale_check.as_ref().map(|c| c.version()).as_deref() != d.form_version() {
        resolved(inner, id, &entry, &decision, Vec::new(), approver, &set);
        let outcome = set.outcome(Outcome::Refused(crate::forms::form::stale_refusal()));
        deliver(inner, shared, d, &outcome).await;
        return outcome;
    }
    let (run_input, run_decoded, edited) = match decision.input.clone() {
        None => match taken.decoded.take() {
            Some(decoded) => (taken.d.input.take_value(), decoded, Vec::new()),
            None if taken.decoded_is_input => {
                // The input rebuilt once (moved out); the run's copy is made from
                // it when the run starts: no second rebuild.
                (
                    taken.d.input.take_value(),
                    InputItself::decoded(),
                    Vec::new(),
                )
            }
            None => match inner.validate(&entry, taken.d.input.to_value()) {
                Ok((v, decoded)) => (v, decoded, Vec::new()),
                Err(refusal) => {
                    // Valid when it was asked; not with this registration.
                    let outcome = set.outcome(Outcome::Refused(refusal));
                    deliver(inner, shared, &taken.d, &outcome).await;
                    return outcome;
                }
            },
        },
        Some(edited) => {
            let original = taken.d.input.to_value();
            match restore_and_validate(inner, &entry, &original, edited) {
                Ok((v, decoded)) => {
                    let paths = diff_paths(&original, &v);
                    (v, decoded, paths)
                }
                Err(issues) => {
                    // A refused decision does not use up the id.
                    backend.put_back(inner, taken).await;
                    return set.outcome(Outcome::Refused(Refusal::invalid(issues)));
                }
            }
        }
    };
    // The decoded value stored with the call is not the one that runs (an edit).
    drop(taken.decoded.take().map(Quiet::new));
    let d = &taken.d;
    resolved(inner, id, &entry, &decision, edited, approver, &set);
    // Only a decision to remember has anything to keep (no future otherwise).
    if remember_for.is_some() {
        remember(
            inner,
            &entry,
            d.caller,
            d.ask(),
            remember_for,
            true,
            None,
            approver,
        )
        .await;
    }
    // The approved run, written out here (not a future of its own, moved into
    // this one): caller human, no signal (the no-signal deadline applies). Its
    // run and state are dropped at the end of this block, before its outcome is
    // delivered (a run cut off by its deadline is cancelled by that drop: what it
    // holds is released before the agent is told).
    let outcome = {
        let started = inner.wants_events().then(tokio::time::Instant::now);
        let mut run_input = run_input;
        let keep = inner.run_reads_input(&entry, Caller::Human);
        let run_decoded = crate::tools::spec::for_run(run_decoded, &mut run_input, keep);
        let held = inner.hold(
            Arc::clone(&entry),
            Caller::Human,
            None,
            None,
            None,
            &mut run_input,
        );
        let fut = std::pin::pin!(crate::tools::private::ToolFuture::from((entry.run)(
            held.ctx(),
            run_decoded
        )));
        let outcome = inner
            .run_call(&held, fut, None, false, held.secret_set())
            .await;
        inner.call_finished(&entry.name, Caller::Human, started, outcome.get());
        outcome
    };
    match shared {
        Some(_) => deliver(inner, shared, d, &outcome).await,
        // This toolmark's bridge only: nothing to wait for.
        None => deliver_here(inner, d, &outcome),
    }
    outcome
}

/// The tools of disposed scopes: the built-in table drops their confirmations at
/// once; a store's are dropped in the background and, at the latest, before the
/// next listing or answer on this instance.
pub(crate) fn on_disposed(inner: &Arc<Inner>, nodes: &[Arc<crate::scope::ScopeNode>]) {
    let in_nodes = |n: &Arc<crate::scope::ScopeNode>| nodes.iter().any(|d| Arc::ptr_eq(d, n));
    let gone = lock(&inner.pending).take_where(|p| in_nodes(&p.entry.scope));
    for p in gone {
        inner.drop_pending(p, DropReason::ScopeDisposed);
    }
    if let Some(shared) = &inner.shared {
        shared.disposed(inner);
    }
}
