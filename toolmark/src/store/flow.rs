//! A toolmark's link to its [`ConfirmStore`]: what the deferred flow
//! (`confirm/deferred.rs`) needs of a store, with every byte sealed on the way in
//! and opened on the way out (`seal.rs`), the tombstones of used ids, the
//! cross-instance bridge, the expiry sweeper, and the operations whose outcome a
//! fault made unknown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::seal::{Purpose, Sealer};
use super::{to_ms, CapKind, Caps, ConfirmRecord, ConfirmStore, DecisionRecord, StoreError};
use crate::confirm::deferred::{dropped, Bound, Deferred, Registration, Taken};
use crate::confirm::new_confirm_id;
use crate::confirm::policy::AskCtx;
use crate::confirm::store::{DropReason, HeldInput, Quiet, Rare};
use crate::policy::Remembered;
use crate::sensitive::{Observed, SecretSet, View};
use crate::sync::lock;
use crate::toolmark::{Inner, DEFAULT_PENDING_SHARE};
use crate::{Caller, Change, Issue, Outcome, PendingConfirmation, Refusal, RefusalCode, ToolError};

/// How often a toolmark looks for expired records in its store (the clock, not
/// this timer, decides at approval; a clock that reports its jumps wakes it too).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long past a confirmation's expiry its id is still remembered as used (a
/// tombstone in the store, and in each instance that used it or heard of it), and
/// a bridge message about it is still delivered.
pub(crate) const GRACE: Duration = Duration::from_secs(3600);

/// The most used ids an instance remembers (the ones expiring soonest are
/// forgotten first beyond it; the store's tombstones still hold them).
const MAX_USED: usize = 100_000;

/// A store operation whose outcome a fault made unknown, to settle once the store
/// answers again.
enum Limbo {
    /// A take with this token may have happened: put the record back (it was not
    /// run), so the confirmation stays answerable.
    Restore { id: String, token: String },
    /// A put may have happened, while the caller was told it did not: withdraw it.
    Withdraw { id: String },
}

/// A toolmark's link to its store.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn ConfirmStore>,
    sealer: Sealer,
    /// This toolmark's id: on the store's bus (its own messages are not delivered
    /// twice) and in the registrations its records name.
    origin: String,
    started: AtomicBool,
    rx: std::sync::Mutex<Option<broadcast::Receiver<String>>>,
    stop: CancellationToken,
    /// Scopes were disposed: this instance's records of registrations that are
    /// gone are to drop.
    disposed: AtomicBool,
    /// Held while settling (limbo, disposal), so an answer after a fault or a
    /// `dispose` waits for it.
    settling: tokio::sync::Mutex<()>,
    limbo: std::sync::Mutex<Vec<Limbo>>,
    /// Ids used here (answered, dropped) or heard of on the bus, until when (ms
    /// by the toolmark's clock): a record written back under one is refused, and a
    /// bridge message about one is delivered once.
    used: std::sync::Mutex<super::expiring::Expiring<()>>,
    /// The scopes whose `when` flag is shared through the store
    /// (`ToolmarkBuilder::share_scope`), when any.
    pub(crate) scopes: Option<super::scopes::ScopeSync>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A confirmation as sealed in a record (serialized from a [`Deferred`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordOut<'a> {
    id: &'a str,
    tool: &'a str,
    caller: Caller,
    summary: &'a str,
    changes: &'a [Change],
    #[serde(skip_serializing_if = "Option::is_none")]
    shown: Option<&'a Value>,
    input: Value,
    expires_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    form_version: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_rule: Option<&'a str>,
    person_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    registration: &'a Registration,
}

/// A confirmation opened from a record.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RecordIn {
    id: String,
    tool: String,
    caller: Caller,
    summary: String,
    changes: Vec<Change>,
    #[serde(default)]
    shown: Option<Value>,
    input: Value,
    expires_ms: u64,
    #[serde(default)]
    form_version: Option<Vec<u64>>,
    #[serde(default)]
    policy_rule: Option<String>,
    person_required: bool,
    #[serde(default)]
    session: Option<String>,
    registration: Registration,
}

/// A bridge message on the store's bus: the id in clear (to open it), the rest
/// sealed and bound to the id. The sending instance's id is in clear too, only so
/// that an instance skips its own messages without opening them (it is sealed in
/// the body as well, and nothing is delivered unless the body opens).
#[derive(Serialize, Deserialize)]
struct Wire {
    id: String,
    #[serde(default)]
    origin: String,
    sealed: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireBody {
    id: String,
    origin: String,
    tool: String,
    outcome: Value,
    expires_ms: u64,
}

/// A remembered decision as sealed (bound to `{caller}:{tool}`).
#[derive(Serialize, Deserialize)]
struct DecisionBody {
    decision: Remembered,
}

/// An outcome read back from its JSON (the statuses a resolved confirmation has).
fn outcome_from_json(v: &Value) -> Option<Outcome> {
    let issues = |v: &Value| -> Vec<Issue> {
        v.get("issues")
            .and_then(|i| serde_json::from_value(i.clone()).ok())
            .unwrap_or_default()
    };
    let message = v.get("message").and_then(Value::as_str).unwrap_or_default();
    match v.get("status")?.as_str()? {
        "ok" => Some(Outcome::Ok {
            output: v.get("output").cloned().unwrap_or(Value::Null),
        }),
        "refused" => {
            let code: RefusalCode = serde_json::from_value(v.get("code")?.clone()).ok()?;
            let mut r = Refusal::new(code, message);
            r.issues = issues(v);
            Some(Outcome::Refused(r))
        }
        "error" => Some(Outcome::Error(
            ToolError::new(message).with_issues(issues(v)),
        )),
        _ => None,
    }
}

/// The refusal of a call or an answer the store could not take.
pub(crate) fn unavailable(e: &StoreError) -> Outcome {
    tracing::warn!(target: "toolmark", error = %e, "confirmation store unavailable");
    Outcome::refused(
        RefusalCode::Unavailable,
        "The confirmation store cannot be reached; nothing was run. Try again shortly",
    )
}

/// The refusal of an answer whose take got no reply.
fn take_lost(e: &StoreError) -> Outcome {
    tracing::warn!(target: "toolmark", error = %e, "confirmation store unavailable while taking a confirmation");
    Outcome::refused(
        RefusalCode::Unavailable,
        "The confirmation store did not answer; the tool did not run. The confirmation stays answerable: answer it again once the store is back",
    )
}

fn integrity_failure() -> Observed<Outcome> {
    Observed::fixed(
        RefusalCode::ConfirmationExpired,
        "The stored confirmation failed its integrity check; it was not run",
    )
}

fn ms_to_time(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

impl Shared {
    pub(crate) fn new(
        store: Arc<dyn ConfirmStore>,
        sealer: Sealer,
        shared_scopes: std::collections::HashSet<String>,
    ) -> Self {
        let rx = store.subscribe();
        let scopes = (!shared_scopes.is_empty())
            .then(|| super::scopes::ScopeSync::new(shared_scopes, &*store));
        Shared {
            scopes,
            store,
            sealer,
            origin: new_confirm_id(),
            started: AtomicBool::new(false),
            rx: std::sync::Mutex::new(Some(rx)),
            stop: CancellationToken::new(),
            disposed: AtomicBool::new(false),
            settling: tokio::sync::Mutex::new(()),
            limbo: std::sync::Mutex::new(Vec::new()),
            used: std::sync::Mutex::default(),
        }
    }

    /// The seal every record of this store is made with.
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// Start the bus listener and the sweeper (once, when a runtime is there).
    pub(crate) fn start(&self, inner: &Arc<Inner>) {
        if self.started.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let stop = self.stop.clone();
        let shutdown = inner.shutdown.clone();
        if let Some(rx) = lock(&self.rx).take() {
            handle.spawn(listen(
                Arc::downgrade(inner),
                rx,
                stop.clone(),
                shutdown.clone(),
            ));
        }
        if self.scopes.is_some() {
            handle.spawn(super::scopes::run(
                Arc::downgrade(inner),
                stop.clone(),
                shutdown.clone(),
            ));
        }
        handle.spawn(sweep(
            Arc::downgrade(inner),
            inner.config.clock.changes(),
            stop,
            shutdown,
        ));
    }

    // ---- sealing ------------------------------------------------------------

    fn seal_record(&self, d: &Deferred) -> Option<ConfirmRecord> {
        seal_record(&self.sealer, d)
    }

    fn open_record(&self, r: &ConfirmRecord) -> Option<Deferred> {
        open_record(&self.sealer, r)
    }

    /// The storage key of a decision.
    fn decision_key(tool: &str, caller: Caller) -> String {
        format!("{}:{tool}", caller.as_str())
    }

    /// A remembered decision, sealed for the store.
    pub(crate) fn seal_decision(&self, decision: &Remembered) -> Option<DecisionRecord> {
        let key = Self::decision_key(&decision.tool, decision.caller);
        let body = DecisionBody {
            decision: decision.clone(),
        };
        Some(DecisionRecord {
            id: decision.id.clone(),
            tool: decision.tool.clone(),
            caller: decision.caller,
            sealed: self.sealer.seal_json(Purpose::Decision, &key, &body)?,
        })
    }

    /// A stored decision, when it opens under its tool and caller and agrees with
    /// the store's hints; `None` otherwise (it answers nothing).
    pub(crate) fn open_decision(&self, r: &DecisionRecord) -> Option<Remembered> {
        let key = Self::decision_key(&r.tool, r.caller);
        let opened = self
            .sealer
            .open_json::<DecisionBody>(Purpose::Decision, &key, &r.sealed)
            .map(|b| b.decision)
            .filter(|d| d.id == r.id && d.tool == r.tool && d.caller == r.caller);
        if opened.is_none() {
            tracing::warn!(target: "toolmark", tool = %crate::tools::summary::one_line(&r.tool), "a remembered decision in the confirmation store failed its integrity check and was ignored");
        }
        opened
    }

    // ---- used ids -----------------------------------------------------------

    fn mark_used(&self, id: &str, until_ms: u64) {
        let mut used = lock(&self.used);
        if used.len() >= MAX_USED && !used.contains(id) {
            used.remove_oldest();
        }
        used.insert(id, until_ms, ());
    }

    fn was_used(&self, id: &str) -> bool {
        lock(&self.used).contains(id)
    }

    fn forget_used(&self, now_ms: u64) {
        lock(&self.used).prune(now_ms);
    }

    fn used_until(d_expires: SystemTime) -> u64 {
        to_ms(d_expires + GRACE)
    }

    // ---- the flow's operations -----------------------------------------------

    /// Keep `d`, sealed; return the confirmations the caps pushed out (each with
    /// the cap's name).
    pub(crate) async fn put(
        &self,
        inner: &Inner,
        d: &Deferred,
    ) -> Result<Vec<(Deferred, &'static str)>, Outcome> {
        let Some(record) = self.seal_record(d) else {
            return Err(Outcome::refused(
                RefusalCode::Unavailable,
                "The confirmation could not be sealed (the OS random source failed); nothing was run",
            ));
        };
        let caps = Caps {
            max: inner.config.max_pending,
            per_caller: inner
                .config
                .max_pending_per_caller
                .unwrap_or(DEFAULT_PENDING_SHARE),
            hard: inner.config.max_pending_per_caller.is_some(),
        };
        let evicted = match self.store.put(record, caps).await {
            Ok(evicted) => evicted,
            Err(e) => {
                // It may have been kept while the caller is told it was not.
                lock(&self.limbo).push(Limbo::Withdraw {
                    id: d.id.to_string(),
                });
                return Err(unavailable(&e));
            }
        };
        // The sweeper is not woken: the new record expires after its next run
        // (it runs every second and on every clock jump; the clock decides at
        // approval), so a sweep now would find nothing of it, and each one is a
        // store round trip (under many approvers, back to back).
        Ok(evicted
            .into_iter()
            .filter_map(|e| {
                let Some(old) = self.open_record(&e.record) else {
                    tracing::warn!(target: "toolmark", "a confirmation pushed out of the store failed its integrity check");
                    return None;
                };
                let reason = match e.cap {
                    CapKind::Global => "max_pending",
                    CapKind::PerCaller => "max_pending_per_caller",
                };
                Some((old, reason))
            })
            .collect())
    }

    /// Take `id` out for an answer: it leaves a tombstone (a record written back
    /// under it is never taken again). `Err`: refused already (a record that does
    /// not open, a store that did not answer).
    pub(crate) async fn take(&self, inner: &Inner, id: &str) -> Result<Option<Taken>, Outcome> {
        let token = new_confirm_id();
        let keep_until = inner.now() + inner.config.confirm_expiry + GRACE;
        let record = match self.store.take(id, &token, keep_until).await {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(StoreError::Corrupt { .. }) => {
                tracing::error!(target: "toolmark", confirm_id = id, "a stored confirmation cannot be read and was refused");
                return Err(integrity_failure().into_inner());
            }
            Err(e) => {
                // The take may have happened: put it back once the store answers.
                lock(&self.limbo).push(Limbo::Restore {
                    id: id.to_owned(),
                    token,
                });
                return Err(take_lost(&e));
            }
        };
        if self.was_used(id) {
            tracing::error!(target: "toolmark", confirm_id = id, "a confirmation written back after it was used was refused");
            return Ok(None);
        }
        let Some(d) = self.open_record(&record).filter(|d| *d.id == *id) else {
            tracing::error!(target: "toolmark", confirm_id = id, "a stored confirmation failed its integrity check and was refused");
            let outcome = integrity_failure();
            self.mark_used(id, to_ms(keep_until));
            self.deliver_raw(inner, id, "", to_ms(inner.now()), &outcome)
                .await;
            return Err(outcome.into_inner());
        };
        Ok(Some(Taken {
            d,
            decoded: Quiet::none(),
            decoded_is_input: false,
            token: Some(token),
        }))
    }

    /// Use `id` once, across every instance of the store (an MCP question
    /// round's `requestState`): `Ok(true)` the first time, `Ok(false)` ever after
    /// (until `expires_at` + the grace). It is the store's own take-once: a
    /// placeholder record is put (no caps apply, it opens as no confirmation, so
    /// no listing shows it) and taken at once; the take leaves the tombstone, and
    /// of two uses racing, one takes the record.
    #[cfg(feature = "mcp")]
    pub(crate) async fn use_once(
        &self,
        id: &str,
        expires_at: SystemTime,
    ) -> Result<bool, StoreError> {
        if self.was_used(id) {
            return Ok(false);
        }
        let record = ConfirmRecord {
            id: id.to_owned(),
            seq: 0,
            caller: Caller::Mcp,
            expires_ms: to_ms(expires_at),
            sealed: String::new(),
        };
        let caps = Caps {
            max: usize::MAX,
            per_caller: usize::MAX,
            hard: false,
        };
        self.store.put(record, caps).await?;
        let token = new_confirm_id();
        let until = Self::used_until(expires_at);
        let first = self
            .store
            .take(id, &token, expires_at + GRACE)
            .await?
            .is_some();
        self.mark_used(id, until);
        Ok(first)
    }

    /// Put a taken confirmation back (its answer was refused): the store puts the
    /// very record back, from its tombstone.
    pub(crate) async fn put_back(&self, id: &str, token: &str) {
        if let Err(e) = self.store.restore(id, token).await {
            tracing::warn!(target: "toolmark", error = %e, "a refused answer's confirmation is put back once the store answers");
            lock(&self.limbo).push(Limbo::Restore {
                id: id.to_owned(),
                token: token.to_owned(),
            });
        }
    }

    /// Tell every other instance what came of `d` (sealed); its id is used.
    pub(crate) async fn publish(&self, inner: &Inner, d: &Deferred, outcome: &Observed<Outcome>) {
        self.mark_used(&d.id, Self::used_until(d.expires_at));
        let Ok(outcome) = serde_json::to_value(outcome.get()) else {
            return;
        };
        self.publish_value(inner, &d.id, &d.tool, to_ms(d.expires_at), outcome)
            .await;
    }

    async fn deliver_raw(
        &self,
        inner: &Inner,
        id: &str,
        tool: &str,
        expires_ms: u64,
        outcome: &Observed<Outcome>,
    ) {
        inner.send_bridge_with(|| Observed::confirmed(id, tool, outcome.clone()));
        if let Ok(outcome) = serde_json::to_value(outcome.get()) {
            self.publish_value(inner, id, tool, expires_ms, outcome)
                .await;
        }
    }

    async fn publish_value(
        &self,
        _inner: &Inner,
        id: &str,
        tool: &str,
        expires_ms: u64,
        outcome: Value,
    ) {
        let body = WireBody {
            id: id.to_owned(),
            origin: self.origin.clone(),
            tool: tool.to_owned(),
            outcome,
            expires_ms,
        };
        let Some(sealed) = self.sealer.seal_json(Purpose::Bridge, id, &body) else {
            return;
        };
        let wire = Wire {
            id: id.to_owned(),
            origin: self.origin.clone(),
            sealed,
        };
        if let Ok(text) = serde_json::to_string(&wire)
            && let Err(e) = self.store.publish(text).await
        {
            tracing::warn!(target: "toolmark", error = %e, "a bridge message was not published to the other instances");
        }
    }

    /// A message from the bus, when it opens, is another instance's, and is about
    /// an id not yet used here whose expiry is not long past: delivered to this
    /// toolmark's bridge. Anything else (forged, replayed, changed) is dropped.
    fn receive(&self, inner: &Inner, text: &str) {
        let Ok(wire) = serde_json::from_str::<Wire>(text) else {
            return;
        };
        // This instance's own message (every instance hears what it publishes):
        // nothing to deliver, so nothing to open. Another instance's message
        // relabelled with this origin is dropped too (its genuine copy is on the
        // bus as well); one that claims another origin is opened and checked.
        if wire.origin == self.origin {
            return;
        }
        let Some(body) = self
            .sealer
            .open_json::<WireBody>(Purpose::Bridge, &wire.id, &wire.sealed)
            .filter(|b| b.id == wire.id)
        else {
            tracing::warn!(target: "toolmark", "a bridge message on the store's bus failed its integrity check and was dropped");
            return;
        };
        if body.origin == self.origin {
            return;
        }
        let until = body
            .expires_ms
            .saturating_add(to_ms(SystemTime::UNIX_EPOCH + GRACE));
        if until <= to_ms(inner.now()) || self.was_used(&body.id) {
            tracing::debug!(target: "toolmark", "a bridge message about a confirmation used or long expired was dropped");
            return;
        }
        let Some(outcome) = outcome_from_json(&body.outcome) else {
            return;
        };
        self.mark_used(&body.id, until);
        // Another instance's observed outcome (it opened under the seal key), made
        // fit again here: bounded, like every outcome.
        let outcome = SecretSet::none().outcome(outcome);
        inner.send_bridge(Observed::confirmed(&body.id, &body.tool, outcome));
    }

    /// Scopes were disposed: drop this instance's confirmations of the
    /// registrations that are gone, in the background and, at the latest, before
    /// the next listing or answer.
    pub(crate) fn disposed(&self, inner: &Arc<Inner>) {
        self.disposed.store(true, Ordering::Release);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = Arc::clone(inner);
        handle.spawn(async move {
            if let Some(shared) = &inner.shared
                && let Err(e) = shared.settle(&inner).await {
                    tracing::debug!(target: "toolmark", error = %e, "the confirmations of disposed scopes are dropped later");
                }
        });
    }

    /// Settle what a fault or a disposal left: put back the confirmations whose
    /// take got no reply, withdraw the ones whose put got none, drop this
    /// instance's confirmations whose registration is gone.
    pub(crate) async fn settle(&self, inner: &Arc<Inner>) -> Result<(), StoreError> {
        self.start(inner);
        let _settling = self.settling.lock().await;
        let pending: Vec<Limbo> = std::mem::take(&mut *lock(&self.limbo));
        let mut left = pending.into_iter();
        while let Some(item) = left.next() {
            let done = match &item {
                Limbo::Restore { id, token } => self.store.restore(id, token).await.map(|_| ()),
                Limbo::Withdraw { id } => {
                    let token = new_confirm_id();
                    let keep_until = inner.now() + inner.config.confirm_expiry + GRACE;
                    self.store.take(id, &token, keep_until).await.map(|_| ())
                }
            };
            if let Err(e) = done {
                let mut limbo = lock(&self.limbo);
                limbo.push(item);
                limbo.extend(left);
                return Err(e);
            }
        }
        if self.disposed.swap(false, Ordering::AcqRel)
            && let Err(e) = self.drop_gone(inner).await
        {
            self.disposed.store(true, Ordering::Release);
            return Err(e);
        }
        Ok(())
    }

    /// Drop this instance's confirmations whose registration is gone
    /// (`scope_disposed`).
    async fn drop_gone(&self, inner: &Arc<Inner>) -> Result<(), StoreError> {
        let all = self.store.list().await?;
        for r in &all {
            let Some(d) = self.open_record(r) else {
                continue;
            };
            let Bound::Sealed(reg) = &d.bound else {
                continue;
            };
            if reg.origin != self.origin {
                continue;
            }
            let alive = inner
                .read_registry()
                .get(&d.tool)
                .is_some_and(|e| e.serial == reg.serial);
            if alive {
                continue;
            }
            if let Ok(Some(taken)) = self.take(inner, &d.id).await {
                dropped(inner, Some(self), &taken.d, DropReason::ScopeDisposed).await;
            }
        }
        Ok(())
    }

    /// Expire what is due by the toolmark's clock.
    async fn sweep_now(&self, inner: &Arc<Inner>) -> Result<(), StoreError> {
        let now = inner.now();
        self.forget_used(to_ms(now));
        self.settle(inner).await?;
        let expired = self.store.take_expired(now).await?;
        for r in &expired {
            match self.open_record(r) {
                // One written back after its use is not announced again.
                Some(d) if self.was_used(&d.id) => {}
                Some(d) => dropped(inner, Some(self), &d, DropReason::Expired).await,
                None => {
                    tracing::warn!(target: "toolmark", "an expired record in the confirmation store failed its integrity check");
                }
            }
        }
        Ok(())
    }

    /// The open confirmations in the store, oldest first (those that open).
    pub(crate) async fn list(
        &self,
        inner: &Arc<Inner>,
    ) -> Result<Vec<PendingConfirmation>, StoreError> {
        self.settle(inner).await?;
        self.sweep_now(inner).await?;
        let now = inner.now();
        Ok(self
            .store
            .list()
            .await?
            .iter()
            .filter_map(|r| self.open_record(r))
            .filter(|d| d.expires_at > now && !self.was_used(&d.id))
            .map(|d| d.info())
            .collect())
    }
}

/// `d` sealed into a record: the whole confirmation, bound to its id.
fn seal_record(sealer: &Sealer, d: &Deferred) -> Option<ConfirmRecord> {
    let Bound::Sealed(registration) = &d.bound else {
        return None;
    };
    let expires_ms = to_ms(d.expires_at);
    let body = RecordOut {
        id: &d.id,
        tool: &d.tool,
        caller: d.caller,
        summary: d.view.summary(),
        changes: d.view.changes(),
        shown: d.view.shown(),
        input: d.input.to_value(),
        expires_ms,
        form_version: d.form_version(),
        policy_rule: d.ask().rule.as_deref(),
        person_required: d.ask().person,
        session: d.ask().session.as_deref(),
        registration,
    };
    Some(ConfirmRecord {
        id: d.id.to_string(),
        seq: 0,
        caller: d.caller,
        expires_ms,
        sealed: sealer.seal_json(Purpose::Record, &d.id, &body)?,
    })
}

/// The confirmation in `r`, when it opens under its own id and the store's hints
/// agree with it; `None` otherwise (it is never run).
fn open_record(sealer: &Sealer, r: &ConfirmRecord) -> Option<Deferred> {
    let body: RecordIn = sealer.open_json(Purpose::Record, &r.id, &r.sealed)?;
    if body.id != r.id || body.caller != r.caller || body.expires_ms != r.expires_ms {
        return None;
    }
    Some(Deferred {
        seq: 0,
        id: crate::confirm::ConfirmId::from_text(&body.id),
        tool: Arc::from(body.tool),
        caller: body.caller,
        // Made by the secret set of its call when it was sealed; the seal
        // authenticates it. Reviewed again (bounded) on the way out.
        view: SecretSet::none()
            .reviewed(View {
                summary: body.summary,
                changes: body.changes,
                shown: body.shown,
            })
            .compact(),
        input: HeldInput::new(body.input),
        expires_at: ms_to_time(body.expires_ms),
        rare: Rare::boxed(
            AskCtx {
                rule: body.policy_rule,
                person: body.person_required,
                session: body.session,
            },
            body.form_version,
        ),
        bound: Bound::Sealed(body.registration),
    })
}

/// Entry points for the `seal_open` fuzz target (`fuzz/`): the real sealing and
/// opening of a stored record, with no store around them. Not a public API.
pub(crate) mod fuzz {
    use super::*;
    use crate::Effect;

    /// Read `record_json` as a stored record (what a store hands back) and open it
    /// under `key`, as `confirm_pending` does: the summary of the confirmation it
    /// holds, or `None` when it is refused. Never panics.
    pub(crate) fn open_record(key: &[u8; 32], record_json: &str) -> Option<String> {
        let record: ConfirmRecord = serde_json::from_str(record_json).ok()?;
        super::open_record(&Sealer::new(key), &record).map(|d| d.view.summary().to_owned())
    }

    /// A genuine stored record (its JSON) of confirmation `id`, sealed under `key`,
    /// with `summary` and `input`.
    pub(crate) fn seal_record(
        key: &[u8; 32],
        id: &str,
        summary: &str,
        input: Value,
    ) -> Option<String> {
        let d = Deferred {
            seq: 0,
            id: crate::confirm::ConfirmId::from_text(id),
            tool: Arc::from("fuzz.tool"),
            caller: Caller::InApp,
            view: SecretSet::none()
                .reviewed(View {
                    summary: summary.to_owned(),
                    changes: Vec::new(),
                    shown: None,
                })
                .compact(),
            input: HeldInput::new(input),
            expires_at: ms_to_time(1_767_225_600_000),
            rare: None,
            bound: Bound::Sealed(Registration {
                origin: "fuzz".to_owned(),
                serial: 1,
                effect: Effect::Consequential,
                sensitive: Vec::new(),
            }),
        };
        serde_json::to_string(&super::seal_record(&Sealer::new(key), &d)?).ok()
    }
}

/// Forward the other instances' bridge messages to this toolmark's subscribers.
async fn listen(
    weak: Weak<Inner>,
    mut rx: broadcast::Receiver<String>,
    stop: CancellationToken,
    shutdown: CancellationToken,
) {
    loop {
        let msg = tokio::select! {
            () = stop.cancelled() => return,
            () = shutdown.cancelled() => return,
            m = rx.recv() => m,
        };
        let Some(inner) = weak.upgrade() else { return };
        match msg {
            Ok(text) => {
                if let Some(shared) = &inner.shared {
                    let received = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        shared.receive(&inner, &text);
                    }));
                    if received.is_err() {
                        tracing::error!(target: "toolmark", "delivering a bridge message panicked; the listener goes on");
                    }
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                inner.send_bridge(Observed::lagged(missed));
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Expire records on time (every instance sweeps; a take is atomic, so each
/// record expires once). A panic in a sweep (an app's clock, say) is caught: the
/// sweeper goes on.
async fn sweep(
    weak: Weak<Inner>,
    mut clock_changes: Option<tokio::sync::watch::Receiver<std::time::SystemTime>>,
    stop: CancellationToken,
    shutdown: CancellationToken,
) {
    loop {
        {
            let Some(inner) = weak.upgrade() else { return };
            if let Some(shared) = &inner.shared {
                let swept = std::panic::AssertUnwindSafe(shared.sweep_now(&inner))
                    .catch_unwind()
                    .await;
                match swept {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::debug!(target: "toolmark", error = %e, "expiry sweep skipped");
                    }
                    Err(_) => {
                        tracing::error!(target: "toolmark", "an expiry sweep panicked; the sweeper goes on");
                    }
                }
            }
        }
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
        tokio::select! {
            () = stop.cancelled() => return,
            () = shutdown.cancelled() => return,
            () = clock_changed => {}
            () = tokio::time::sleep(SWEEP_EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{fuzz, outcome_from_json};

    #[test]
    fn a_sealed_record_opens_only_as_written() {
        let key = [3u8; 32];
        let text = fuzz::seal_record(&key, "abc", "Pay \"x\"", json!({"cvc": "CVC-1"})).unwrap();
        assert!(!text.contains("CVC-1"), "{text}");
        assert_eq!(fuzz::open_record(&key, &text).as_deref(), Some("Pay \"x\""));
        assert_eq!(fuzz::open_record(&[4u8; 32], &text), None, "another key");
        let record: Value = serde_json::from_str(&text).unwrap();
        for (field, value) in [
            ("id", json!("abd")),
            ("caller", json!("mcp")),
            ("expiresMs", json!(1)),
        ] {
            let mut changed = record.clone();
            changed[field] = value;
            assert_eq!(
                fuzz::open_record(&key, &changed.to_string()),
                None,
                "{field}"
            );
        }
        let mut extra = record.clone();
        extra["summary"] = json!("Delete one draft");
        assert_eq!(
            fuzz::open_record(&key, &extra.to_string()),
            None,
            "a field added"
        );
        // The order is the store's alone.
        let mut reordered = record;
        reordered["seq"] = json!(99);
        assert!(fuzz::open_record(&key, &reordered.to_string()).is_some());
    }
    use crate::{Outcome, Refusal, RefusalCode, ToolError};

    #[test]
    fn resolved_outcomes_read_back_from_their_json() {
        let mut refused = Refusal::new(RefusalCode::Invalid, "bad");
        refused.issues = vec![crate::Issue::new("a", "b")];
        for o in [
            Outcome::Ok {
                output: json!({"x": 1}),
            },
            Outcome::Refused(refused),
            Outcome::Error(ToolError::new("boom")),
        ] {
            let v = serde_json::to_value(&o).unwrap();
            assert_eq!(outcome_from_json(&v), Some(o));
        }
    }
}
