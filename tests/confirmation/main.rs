//! Every rule of seeds/confirmation-modes.txt except the sensitive-value rules
//! (tests/sensitive) and form staleness (tests/forms).

mod caps;
mod ctx_changes;
mod ctx_confirm;
mod deferred;
mod drops;
#[path = "../support/fixtures.rs"]
mod fixtures;
mod inline;
mod registration;
mod rules;
#[path = "../support/stores.rs"]
mod stores;
pub(crate) use fixtures::guarded;

pub(crate) use stores::{on_every_store, Store};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;
use toolmark::{CallOptions, Caller, Outcome, RefusalCode};

pub(crate) fn runs() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub(crate) fn count(runs: &Arc<AtomicUsize>) -> usize {
    runs.load(Ordering::SeqCst)
}

pub(crate) fn opts(caller: Caller) -> CallOptions {
    CallOptions::new(caller)
}

pub(crate) fn code(o: &Outcome) -> Option<RefusalCode> {
    o.refusal_code()
}

pub(crate) fn json_of(o: &Outcome) -> Value {
    serde_json::to_value(o).unwrap()
}

/// A toolmark from `builder` with the guarded tool `create` registered.
pub(crate) fn create_tm(
    builder: toolmark::ToolmarkBuilder,
) -> (toolmark::Toolmark, Arc<AtomicUsize>) {
    let tm = builder.build().unwrap();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    (tm, runs)
}

/// A toolmark on a fresh `store` from `builder` with the guarded tool `create`
/// registered, or `None` (Redis absent outside CI: skip).
pub(crate) async fn create_on(
    store: Store,
    builder: toolmark::ToolmarkBuilder,
) -> Option<(toolmark::Toolmark, Arc<AtomicUsize>)> {
    let tm = store.build(builder).await?;
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    Some((tm, runs))
}

/// The open confirmations, oldest first (from the store when one is set).
pub(crate) async fn pending(tm: &toolmark::Toolmark) -> Vec<toolmark::PendingConfirmation> {
    tm.pending_confirmations_async()
        .await
        .expect("the store is reachable")
}

/// Withdraw a confirmation (from the store when one is set).
pub(crate) async fn cancel(tm: &toolmark::Toolmark, id: &str) -> bool {
    tm.cancel_pending_async(id)
        .await
        .expect("the store is reachable")
}

/// Call `name` as the in-app agent (deferred) and return the confirmation id.
pub(crate) async fn defer(tm: &toolmark::Toolmark, name: &str, input: Value) -> String {
    let out = tm.call(name, input, opts(Caller::InApp)).await;
    out.confirm_id()
        .unwrap_or_else(|| panic!("expected needs_confirmation, got {}", json_of(&out)))
        .to_owned()
}

/// Start a call in the background.
pub(crate) fn spawn_call(
    tm: &toolmark::Toolmark,
    name: &'static str,
    input: Value,
    options: CallOptions,
) -> tokio::task::JoinHandle<Outcome> {
    let tm = tm.clone();
    tokio::spawn(async move { tm.call(name, input, options).await })
}
