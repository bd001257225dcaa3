//! Confirmation stores (feature `redis`): the deferred-confirmation rules on every
//! store (`rules`), two instances on one Redis (`instances`), secrets and tampering
//! (`secrets`), and a Redis that goes away mid-test (`faults`).
//!
//! The Redis tests read `TOOLMARK_REDIS_URL` (.ci/run starts a redis-server and
//! sets it). Without it (and outside CI) they are reported ignored; under CI (`CI`
//! set) its absence fails them (`tests/support/external.rs`).

mod faults;
mod instances;
mod rules;
mod scopes_shared;
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

/// Without Redis the Redis tests are reported ignored, never `ok`.
#[test]
fn the_redis_tests_are_reported_ignored_unless_redis_is_expected() {
    stores::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "redis"),
        &[
            "instances::a_call_on_a_approved_on_b_runs_once_on_b_and_a_gets_confirmed",
            "secrets::no_sensitive_value_is_stored_or_published_in_clear",
            "faults::redis_stopped_mid_test_refuses_unavailable_then_recovers_without_loss_or_double_run",
            "rules::redis::deferred_call_returns_needs_confirmation_and_is_listed",
            "faults::remembered_decisions_through_a_fault_ask_rather_than_trust_and_recover",
            "faults::redis_killed_with_approvals_in_flight_loses_none_and_runs_each_once",
            "faults::the_first_request_after_redis_is_back_is_answered",
            "tamper::a_record_with_any_part_changed_never_runs",
            "tamper::the_listing_shows_only_what_opens",
            "tamper::two_records_swapped_whole_run_neither",
            "tamper::a_record_copied_onto_another_id_never_runs_twice",
            "tamper::a_used_record_written_back_is_refused_and_never_runs_again",
            "tamper::a_record_pushed_out_by_the_cap_and_written_back_never_runs",
            "tamper::a_forged_remembered_decision_approves_nothing",
            "tamper::a_remembered_decision_moved_to_another_tool_or_caller_answers_nothing",
            "tamper::forged_relabelled_or_replayed_bridge_messages_are_not_delivered",
        ],
    );
    // The same rules on the built-in store and a MemoryStore always run.
    let ignored = stores::external::ignored_tests();
    assert!(!ignored
        .iter()
        .any(|t| t.starts_with("rules::builtin::") || t.starts_with("rules::memory::")));
}
