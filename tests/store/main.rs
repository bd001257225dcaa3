//! Confirmation stores (feature `redis`): the deferred-confirmation rules on every
//! store (`rules`), two instances on one Redis (`instances`), secrets and tampering
//! (`secrets`), and a Redis that goes away mid-test (`faults`).
//!
//! The Redis tests read `TOOLMARK_REDIS_URL` (.ci/run starts a redis-server and
//! sets it). Without it they are skipped with a loud message, except under CI
//! (`CI` set), where its absence fails them.

mod faults;
mod instances;
mod rules;
mod secrets;
mod tamper;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolmark::store::{RedisStore, RedisStoreOptions};
use toolmark::{
    Bridge, BridgeMessage, CallOptions, Caller, Outcome, PendingConfirmation, ToolSpec, Toolmark,
};

#[path = "../support/fixtures.rs"]
mod fixtures;
#[path = "../support/stores.rs"]
mod stores;
pub(crate) use fixtures::guarded;

pub(crate) use stores::{prefix, redis_url, KEY};

/// A new connection to the test Redis under `prefix`.
pub(crate) async fn redis(url: &str, prefix: &str) -> RedisStore {
    RedisStore::connect_with(url, RedisStoreOptions::default().prefix(prefix))
        .await
        .expect("the test Redis is reachable")
}

/// A consequential tool with sensitive values (`pin`, `cards[].cvc`) that records
/// the inputs it ran with and returns only the title.
pub(crate) fn pay(seen: &Arc<Mutex<Vec<Value>>>) -> ToolSpec {
    fixtures::pay_with(seen, |input| json!({"paid": input["title"].clone()}))
}

pub(crate) fn runs() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub(crate) fn count(runs: &Arc<AtomicUsize>) -> usize {
    runs.load(Ordering::SeqCst)
}

pub(crate) fn opts(caller: Caller) -> CallOptions {
    CallOptions::new(caller)
}

/// Call `name` as the in-app agent (deferred) and return the confirmation id.
pub(crate) async fn defer(tm: &Toolmark, name: &str, input: Value) -> String {
    let out = tm.call(name, input, opts(Caller::InApp)).await;
    out.confirm_id()
        .unwrap_or_else(|| panic!("expected needs_confirmation, got {out:?}"))
        .to_owned()
}

/// The pending confirmations (from the store when there is one).
pub(crate) async fn list(tm: &Toolmark) -> Vec<PendingConfirmation> {
    tm.pending_confirmations_async()
        .await
        .expect("the store is reachable")
}

pub(crate) async fn ids(tm: &Toolmark) -> Vec<String> {
    list(tm).await.into_iter().map(|p| p.confirm_id).collect()
}

/// The next bridge message (bounded wait: it comes over the network).
pub(crate) async fn next(bridge: &mut Bridge) -> (String, Outcome) {
    match tokio::time::timeout(Duration::from_secs(10), bridge.recv())
        .await
        .expect("a bridge message within 10 s")
        .expect("the bridge is open")
    {
        BridgeMessage::Confirmed {
            confirm_id,
            outcome,
            ..
        } => (confirm_id, outcome),
        other => panic!("expected a confirmed message, got {other:?}"),
    }
}
