//! The deferred-confirmation steps on a [`ConfirmStore`]: store the call, answer
//! it (on any instance), list, withdraw and expire; the bridge across instances.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

use super::seal::{Sealed, Sealer};
use super::{to_ms, CapKind, Caps, ConfirmRecord, ConfirmStore, StoreError};
use crate::confirm::flow::{hidden_refusal, rejected, resolved, restore_and_validate};
use crate::confirm::new_confirm_id;
use crate::confirm::policy::{Approver, AskCtx, For};
use crate::confirm::remember::{person_check, remember};
use crate::confirm::store::DropReason;
use crate::event::Event;
use crate::sensitive::{Observed, SecretSet};
use crate::sync::lock;
use crate::toolmark::{drop_refusal, Inner, DEFAULT_PENDING_SHARE};
use crate::tools::registry::ToolEntry;
use crate::{
    Caller, ConfirmMode, Decision, Decoded, Issue, Outcome, PendingConfirmation, Refusal,
    RefusalCode, RegisterError, ToolError, Toolmark,
};

/// How often a toolmark looks for expired records in its store (the clock, not
/// this timer, decides at approval; a clock that reports its jumps wakes it too).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A toolmark's link to its store.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn ConfirmStore>,
    pub(crate) sealer: Option<Sealer>,
    /// This toolmark's id on the store's bus (its own messages are not delivered
    /// twice).
    origin: String,
    started: AtomicBool,
    rx: std::sync::Mutex<Option<broadcast::Receiver<String>>>,
    wake: Arc<Notify>,
    stop: CancellationToken,
    /// Tools of disposed scopes whose stored confirmations are still to drop.
    disposed: std::sync::Mutex<Vec<Arc<str>>>,
    /// Held while they are dropped, so a listing or an answer after `dispose`
    /// waits for it.
    settling: tokio::sync::Mutex<()>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A bridge message on the store's bus.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    origin: String,
    confirm_id: String,
    tool: String,
    outcome: Value,
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
fn unavailable(e: &StoreError) -> Outcome {
    tracing::warn!(target: "toolmark", error = %e, "confirmation store unavailable");
    Outcome::refused(
        RefusalCode::Unavailable,
        "The confirmation store cannot be reached; nothing was run. Try again shortly",
    )
}

fn unknown_id() -> Outcome {
    Outcome::refused(
        RefusalCode::ConfirmationExpired,
        "No confirmation is pending with this id: it was already used, it expired, or it never existed",
    )
}

impl Shared {
    pub(crate) fn new(store: Arc<dyn ConfirmStore>, sealer: Option<Sealer>) -> Self {
        let rx = store.subscribe();
        Shared {
            store,
            sealer,
            origin: new_confirm_id(),
            started: AtomicBool::new(false),
            rx: std::sync::Mutex::new(Some(rx)),
            wake: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
            disposed: std::sync::Mutex::new(Vec::new()),
            settling: tokio::sync::Mutex::new(()),
        }
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
                self.origin.clone(),
                stop.clone(),
                shutdown.clone(),
            ));
        }
        handle.spawn(sweep(
            Arc::downgrade(inner),
            Arc::clone(&self.wake),
            inner.config.clock.changes(),
            stop,
            shutdown,
        ));
    }

    /// Deliver a resolution to this toolmark's bridge subscribers, then to every
    /// other instance's.
    async fn deliver(
        &self,
        inner: &Inner,
        confirm_id: &str,
        tool: &str,
        outcome: &Observed<Outcome>,
    ) {
        inner.send_bridge(Observed::confirmed(confirm_id, tool, outcome.clone()));
        let Ok(outcome) = serde_json::to_value(outcome.get()) else {
            return;
        };
        let wire = Wire {
            origin: self.origin.clone(),
            confirm_id: confirm_id.to_owned(),
            tool: tool.to_owned(),
            outcome,
        };
        if let Ok(text) = serde_json::to_string(&wire) {
            if let Err(e) = self.store.publish(text).await {
                tracing::warn!(target: "toolmark", error = %e, "a bridge message was not published to the other instances");
            }
        }
    }

    /// A record dropped without an answer: its event, and the agent is told.
    async fn drop_record(&self, inner: &Inner, r: &ConfirmRecord, reason: DropReason) {
        match reason {
            DropReason::Expired | DropReason::Shutdown => {
                inner.emit(|| Event::ConfirmationExpired {
                    confirm_id: r.id.clone(),
                    tool: r.tool.clone(),
                });
            }
            DropReason::ScopeDisposed | DropReason::Cancelled => {
                inner.emit(|| Event::ConfirmationDropped {
                    confirm_id: r.id.clone(),
                    tool: r.tool.clone(),
                    reason: if reason == DropReason::Cancelled {
                        "cancelled"
                    } else {
                        "scope_disposed"
                    },
                });
            }
        }
        let outcome = SecretSet::none().outcome(Outcome::Refused(drop_refusal(reason)));
        self.deliver(inner, &r.id, &r.tool, &outcome).await;
    }

    /// Drop the stored confirmations of the tools of disposed scopes
    /// (`scope_disposed`) that no scope registered again.
    pub(crate) async fn settle_disposed(&self, inner: &Inner) -> Result<(), StoreError> {
        let _settling = self.settling.lock().await;
        let names: HashSet<Arc<str>> = std::mem::take(&mut *lock(&self.disposed))
            .into_iter()
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        let all = match self.store.list().await {
            Ok(all) => all,
            Err(e) => {
                // Tried again by the next listing or answer.
                lock(&self.disposed).extend(names);
                return Err(e);
            }
        };
        for r in all.iter().filter(|r| names.contains(r.tool.as_str())) {
            if inner.read_registry().contains_key(r.tool.as_str()) {
                continue;
            }
            if let Some(r) = self.store.take(&r.id).await? {
                self.drop_record(inner, &r, DropReason::ScopeDisposed).await;
            }
        }
        Ok(())
    }

    /// Expire what is due by the toolmark's clock.
    async fn sweep_now(&self, inner: &Inner) -> Result<(), StoreError> {
        let expired = self.store.take_expired(inner.now()).await?;
        for r in &expired {
            self.drop_record(inner, r, DropReason::Expired).await;
        }
        Ok(())
    }

    /// The real input of a record: opened from its seal (checking its tool and
    /// caller), or the stored input when nothing was sealed. `None`: tampered.
    fn real_input(&self, r: &ConfirmRecord) -> Option<Value> {
        match (&self.sealer, &r.sealed) {
            (Some(sealer), Some(text)) => {
                let sealed = sealer.open(&r.id, text)?;
                (sealed.tool == r.tool && sealed.caller == r.caller).then_some(sealed.input)
            }
            // A key is set: every record is sealed; one without a seal was changed.
            (Some(_), None) => None,
            // The input has nothing to redact, or a store in this process kept the
            // real one in memory.
            (None, None) => Some(r.in_memory.0.clone().unwrap_or_else(|| r.input.clone())),
            // Sealed under a key this toolmark does not have.
            (None, Some(_)) => None,
        }
    }
}

/// Forward the other instances' bridge messages to this toolmark's subscribers.
async fn listen(
    weak: Weak<Inner>,
    mut rx: broadcast::Receiver<String>,
    origin: String,
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
                let Ok(wire) = serde_json::from_str::<Wire>(&text) else {
                    continue;
                };
                if wire.origin == origin {
                    continue;
                }
                if let Some(outcome) = outcome_from_json(&wire.outcome) {
                    // Another instance's observed outcome; bounded again here.
                    let outcome = SecretSet::none().outcome(outcome);
                    inner.send_bridge(Observed::confirmed(&wire.confirm_id, &wire.tool, outcome));
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
/// record expires once).
async fn sweep(
    weak: Weak<Inner>,
    wake: Arc<Notify>,
    mut clock_changes: Option<tokio::sync::watch::Receiver<std::time::SystemTime>>,
    stop: CancellationToken,
    shutdown: CancellationToken,
) {
    loop {
        {
            let Some(inner) = weak.upgrade() else { return };
            if let Some(shared) = &inner.shared {
                if let Err(e) = shared.sweep_now(&inner).await {
                    tracing::debug!(target: "toolmark", error = %e, "expiry sweep skipped");
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
            () = wake.notified() => {}
            () = clock_changed => {}
            () = tokio::time::sleep(SWEEP_EVERY) => {}
        }
    }
}

/// A durable store without a seal key takes no tool with sensitive paths.
pub(crate) fn check_register(inner: &Inner, entry: &ToolEntry) -> Result<(), RegisterError> {
    match &inner.shared {
        Some(s) if s.sealer.is_none() && s.store.durable() && entry.has_sensitive() => {
            Err(RegisterError::SealKeyRequired {
                tool: entry.name.to_string(),
            })
        }
        _ => Ok(()),
    }
}

/// Deferred mode on a store: store the call (sealed) and return
/// `needs_confirmation`; the tool has not run.
pub(crate) async fn defer(
    inner: &Arc<Inner>,
    entry: &Arc<ToolEntry>,
    caller: Caller,
    input: Value,
    _decoded: Decoded,
    ask: AskCtx,
) -> Outcome {
    let Some(shared) = &inner.shared else {
        return crate::confirm::defer(inner, entry, caller, input, _decoded, ask);
    };
    shared.start(inner);
    let matcher = entry.matcher();
    let redacted = matcher.redact(&input);
    let summary = entry.summary_for(&input, &matcher);
    let changes = entry.changes_for(&input, &matcher);
    let id = new_confirm_id();
    let now = inner.now();
    let expires_at = now + inner.config.confirm_expiry;
    // Without a seal key, a store that is not durable keeps the real input in
    // process memory (never serialized), as the built-in store does.
    let in_memory = super::InMemory(
        (shared.sealer.is_none() && entry.has_sensitive() && !shared.store.durable())
            .then(|| input.clone()),
    );
    let sealed = match &shared.sealer {
        Some(sealer) => {
            let Some(text) = sealer.seal(
                &id,
                &Sealed {
                    tool: entry.name.to_string(),
                    caller,
                    input,
                },
            ) else {
                return Outcome::refused(
                    RefusalCode::Unavailable,
                    "The confirmation could not be sealed (the OS random source failed); nothing was run",
                );
            };
            Some(text)
        }
        None if entry.has_sensitive() && shared.store.durable() => {
            // Registration refuses this; a secret never reaches the store in clear.
            return Outcome::refused(
                RefusalCode::NotAllowed,
                "This tool has sensitive values and the app gave no seal key for its durable confirmation store",
            );
        }
        None => None,
    };
    let record = ConfirmRecord {
        id: id.clone(),
        seq: 0,
        tool: entry.name.to_string(),
        caller,
        summary: summary.clone(),
        changes: changes.clone(),
        input: redacted.clone(),
        sealed,
        created_ms: to_ms(now),
        expires_ms: to_ms(expires_at),
        form_version: entry.stale_check.as_ref().map(|c| c.version()),
        policy_rule: ask.rule.clone(),
        person_required: ask.person,
        in_memory,
        session_bound: ask.session.is_some(),
    };
    let caps = Caps {
        max: inner.config.max_pending,
        per_caller: inner
            .config
            .max_pending_per_caller
            .unwrap_or(DEFAULT_PENDING_SHARE),
        hard: inner.config.max_pending_per_caller.is_some(),
    };
    let evicted = match shared.store.put(record, caps).await {
        Ok(e) => e,
        Err(e) => return unavailable(&e),
    };
    inner.emit(|| Event::ConfirmationRequested {
        confirm_id: id.clone(),
        tool: entry.name.to_string(),
        caller,
        mode: ConfirmMode::Deferred,
        summary: summary.clone(),
        input: redacted,
        expires_at,
    });
    for old in evicted {
        inner.emit(|| Event::ConfirmationEvicted {
            confirm_id: old.record.id.clone(),
            tool: old.record.tool.clone(),
            caller: old.record.caller,
            reason: match old.cap {
                CapKind::Global => "max_pending",
                CapKind::PerCaller => "max_pending_per_caller",
            },
        });
        shared
            .drop_record(inner, &old.record, DropReason::Expired)
            .await;
    }
    shared.wake.notify_one();
    Outcome::NeedsConfirmation {
        confirm_id: id,
        summary,
        changes,
        expires_at,
    }
}

/// `confirm_pending` on a store: the same rules as in memory, on any instance.
pub(crate) async fn confirm_pending(
    inner: &Arc<Inner>,
    shared: &Shared,
    confirm_id: &str,
    decision: Decision,
    approver: &Approver,
    remember_for: Option<For>,
) -> Outcome {
    shared.start(inner);
    if let Err(e) = shared.settle_disposed(inner).await {
        return unavailable(&e);
    }
    let record = match shared.store.take(confirm_id).await {
        Ok(Some(r)) => r,
        Ok(None) => return unknown_id(),
        Err(e) => return unavailable(&e),
    };
    // Expiry is checked against the clock at approval time.
    if inner.now() >= record.expires_at() {
        shared
            .drop_record(inner, &record, DropReason::Expired)
            .await;
        return Outcome::Refused(drop_refusal(DropReason::Expired));
    }
    let Some(input) = shared.real_input(&record) else {
        tracing::error!(target: "toolmark", confirm_id, "a stored confirmation failed its integrity check and was refused");
        let outcome = Observed::fixed(
            RefusalCode::ConfirmationExpired,
            "The stored confirmation failed its integrity check; it was not run",
        );
        shared
            .deliver(inner, &record.id, &record.tool, &outcome)
            .await;
        return outcome.into_inner();
    };
    let Some(entry) = inner.read_registry().get(record.tool.as_str()).cloned() else {
        // Not registered here (yet): wait for an instance that has it, or expiry.
        let _ = shared.store.restore(record).await;
        return Outcome::refused(
            RefusalCode::UnknownTool,
            "The confirmation's tool is not registered on this instance; it stays pending",
        );
    };
    if !entry.scope.visible() {
        if entry.scope.is_disposed() {
            shared
                .drop_record(inner, &record, DropReason::ScopeDisposed)
                .await;
            return Outcome::Refused(drop_refusal(DropReason::ScopeDisposed));
        }
        if let Err(e) = shared.store.restore(record).await {
            return unavailable(&e);
        }
        return Outcome::Refused(hidden_refusal(&entry));
    }
    // What the policy asked of the approver. The call's session id is not stored:
    // a decision remembered for the session of a call that had one is not kept.
    let ask = AskCtx {
        rule: record.policy_rule.clone(),
        person: record.person_required,
        session: None,
    };
    let remember_for = remember_for.filter(|d| {
        let keep = !(*d == For::Session && record.session_bound);
        if !keep {
            tracing::debug!(target: "toolmark", tool = %record.tool, "a session decision on a stored confirmation of a call with a session id is not remembered");
        }
        keep
    });
    if !decision.approved {
        resolved(inner, confirm_id, &entry, &decision, Vec::new(), approver);
        remember(
            inner,
            &entry,
            record.caller,
            &ask,
            remember_for,
            false,
            decision.reason.clone(),
            approver,
        )
        .await;
        let outcome = SecretSet::none().outcome(Outcome::Refused(rejected(&decision)));
        shared
            .deliver(inner, confirm_id, &record.tool, &outcome)
            .await;
        return outcome.into_inner();
    }
    if let Err(reason) = person_check(&ask, approver) {
        // Not an answer this confirmation can take: it stays open for one that is.
        if let Err(e) = shared.store.restore(record).await {
            return unavailable(&e);
        }
        return Outcome::refused(RefusalCode::NotAllowed, reason);
    }
    let version = entry.stale_check.as_ref().map(|c| c.version());
    if version != record.form_version {
        resolved(inner, confirm_id, &entry, &decision, Vec::new(), approver);
        let outcome =
            SecretSet::none().outcome(Outcome::Refused(crate::forms::form::stale_refusal()));
        shared
            .deliver(inner, confirm_id, &record.tool, &outcome)
            .await;
        return outcome.into_inner();
    }
    let (run_input, run_decoded, edited) = match decision.input.clone() {
        None => match inner.validate(&entry, input) {
            Ok((v, d)) => (v, d, Vec::new()),
            Err(r) => return r.into(),
        },
        Some(edited) => match restore_and_validate(inner, &entry, &input, edited) {
            Ok((v, d)) => {
                let paths = crate::confirm::diff_paths(&input, &v);
                (v, d, paths)
            }
            Err(issues) => {
                // A refused decision does not use up the id.
                if let Err(e) = shared.store.restore(record).await {
                    return unavailable(&e);
                }
                return Outcome::Refused(Refusal::invalid(issues));
            }
        },
    };
    resolved(inner, confirm_id, &entry, &decision, edited, approver);
    remember(
        inner,
        &entry,
        record.caller,
        &ask,
        remember_for,
        true,
        None,
        approver,
    )
    .await;
    let outcome = inner.call_as_human(&entry, run_input, run_decoded).await;
    shared
        .deliver(inner, confirm_id, &record.tool, &outcome)
        .await;
    outcome.into_inner()
}

/// The tools of disposed scopes: their stored confirmations are dropped
/// (`scope_disposed`), in the background and, at the latest, before the next
/// listing or answer.
pub(crate) fn on_disposed(inner: &Arc<Inner>, tools: Vec<Arc<str>>) {
    let Some(shared) = &inner.shared else { return };
    if tools.is_empty() {
        return;
    }
    lock(&shared.disposed).extend(tools);
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let inner = Arc::clone(inner);
    handle.spawn(async move {
        if let Some(shared) = &inner.shared {
            if let Err(e) = shared.settle_disposed(&inner).await {
                tracing::debug!(target: "toolmark", error = %e, "the confirmations of disposed scopes are dropped later");
            }
        }
    });
}

fn info(r: ConfirmRecord) -> PendingConfirmation {
    PendingConfirmation {
        expires_at: r.expires_at(),
        confirm_id: r.id,
        tool: r.tool,
        caller: r.caller,
        summary: r.summary,
        changes: r.changes,
        input: r.input,
    }
}

impl Toolmark {
    /// The open deferred confirmations, oldest first, input redacted — from the
    /// confirmation store when one is set (every instance's), else from this
    /// toolmark. Fails only when the store cannot be reached (`unavailable`).
    ///
    /// With a store, use this rather than
    /// [`pending_confirmations`](Self::pending_confirmations), which lists only
    /// what this process holds in memory.
    pub async fn pending_confirmations_async(
        &self,
    ) -> Result<Vec<PendingConfirmation>, StoreError> {
        let Some(shared) = &self.inner.shared else {
            return Ok(self.pending_confirmations());
        };
        shared.start(&self.inner);
        shared.settle_disposed(&self.inner).await?;
        shared.sweep_now(&self.inner).await?;
        let now = crate::store::to_ms(self.inner.now());
        Ok(shared
            .store
            .list()
            .await?
            .into_iter()
            .filter(|r| r.expires_ms > now)
            .map(info)
            .collect())
    }

    /// Withdraw an open confirmation (deferred, from the store when one is set, or
    /// inline): its caller gets `cancelled` (a deferred one through the bridge, on
    /// every instance). Returns whether it was open.
    pub async fn cancel_pending_async(&self, confirm_id: &str) -> Result<bool, StoreError> {
        if self.cancel_pending(confirm_id) {
            return Ok(true);
        }
        let Some(shared) = &self.inner.shared else {
            return Ok(false);
        };
        shared.start(&self.inner);
        shared.settle_disposed(&self.inner).await?;
        match shared.store.take(confirm_id).await? {
            Some(r) => {
                shared
                    .drop_record(&self.inner, &r, DropReason::Cancelled)
                    .await;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::outcome_from_json;
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

#[cfg(test)]
mod register_tests {
    use futures_util::future::BoxFuture;
    use serde_json::json;

    use crate::store::{Caps, ConfirmRecord, ConfirmStore, Evicted, MemoryStore, StoreError};
    use crate::{ToolSpec, Toolmark};

    /// A `MemoryStore` that says it is durable, like an app's own database store.
    struct Durable(MemoryStore);

    impl ConfirmStore for Durable {
        fn put(
            &self,
            r: ConfirmRecord,
            c: Caps,
        ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
            self.0.put(r, c)
        }
        fn take<'a>(
            &'a self,
            id: &'a str,
        ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
            self.0.take(id)
        }
        fn restore(&self, r: ConfirmRecord) -> BoxFuture<'_, Result<(), StoreError>> {
            self.0.restore(r)
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
            self.0.list()
        }
        fn take_expired(
            &self,
            now: std::time::SystemTime,
        ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
            self.0.take_expired(now)
        }
        fn publish(&self, m: String) -> BoxFuture<'_, Result<(), StoreError>> {
            self.0.publish(m)
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<String> {
            self.0.subscribe()
        }
        fn remember(&self, d: crate::policy::Remembered) -> BoxFuture<'_, Result<(), StoreError>> {
            self.0.remember(d)
        }
        fn remembered_for<'a>(
            &'a self,
            tool: &'a str,
            caller: crate::Caller,
        ) -> BoxFuture<'a, Result<Option<crate::policy::Remembered>, StoreError>> {
            self.0.remembered_for(tool, caller)
        }
        fn remembered(&self) -> BoxFuture<'_, Result<Vec<crate::policy::Remembered>, StoreError>> {
            self.0.remembered()
        }
        fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
            self.0.forget(id)
        }
    }

    fn secret_tool() -> ToolSpec {
        ToolSpec::new("pay", "Pay")
            .input_schema(json!({"type": "object", "properties": {"pin": {"type": "string"}}}))
            .sensitive(["pin"])
            .handler(|_ctx, _input| async { Ok(json!(null)) })
    }

    #[test]
    fn a_keyless_durable_store_refuses_tools_with_sensitive_paths_only() {
        let tm = Toolmark::builder()
            .confirm_store(Durable(MemoryStore::new()))
            .build()
            .unwrap();
        let err = tm.register(secret_tool(), Default::default()).unwrap_err();
        assert_eq!(err.code(), "seal_key_required");
        let plain = ToolSpec::new("add", "Add").handler(|_ctx, _input| async { Ok(json!(1)) });
        tm.register(plain, Default::default()).unwrap();
        // Not durable: no key needed.
        let tm = Toolmark::builder()
            .confirm_store(MemoryStore::new())
            .build()
            .unwrap();
        tm.register(secret_tool(), Default::default()).unwrap();
    }

    #[cfg(feature = "durable")]
    #[test]
    fn with_a_seal_key_a_durable_store_takes_them() {
        let tm = Toolmark::builder()
            .confirm_store(Durable(MemoryStore::new()))
            .seal_key([1; 32])
            .build()
            .unwrap();
        tm.register(secret_tool(), Default::default()).unwrap();
    }
}
