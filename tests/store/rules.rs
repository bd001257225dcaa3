//! The deferred-confirmation rules of tests/confirmation, each run on every store:
//! the built-in one (no store set), a `MemoryStore`, and Redis.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::store::MemoryStore;
use toolmark::{Caller, ConfirmMode, Decision, Outcome, RefusalCode, Toolmark, ToolmarkBuilder};

use crate::*;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Backend {
    Builtin,
    Memory,
    Redis,
}

impl Backend {
    /// A toolmark on this store (seal key set). Always `Some`: the Redis tests are
    /// reported ignored where Redis is not expected.
    pub(crate) async fn build(self, builder: ToolmarkBuilder) -> Option<Toolmark> {
        let builder = builder.seal_key(KEY);
        let builder = match self {
            Backend::Builtin => builder,
            Backend::Memory => builder.confirm_store(MemoryStore::new()),
            Backend::Redis => {
                let url = redis_url();
                builder.confirm_store(redis(&url, &prefix()).await)
            }
        };
        Some(builder.build().unwrap())
    }
}

macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        mod builtin {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Builtin).await })*
        }
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Memory).await })*
        }
        mod redis {
            $(#[cfg_attr(not(toolmark_client = "redis"), ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Redis).await })*
        }
    };
}

on_every_store!(
    deferred_call_returns_needs_confirmation_and_is_listed,
    approval_runs_as_human_and_the_bridge_delivers_the_outcome,
    an_invalid_edit_keeps_the_id_and_a_valid_one_runs,
    a_rejection_and_its_reason_reach_the_agent,
    a_confirm_id_is_single_use,
    fifty_concurrent_approvals_run_once,
    expiry_is_decided_by_the_clock_at_approval,
    expiry_sends_a_bridge_message_when_the_clock_moves,
    at_most_max_pending_and_the_oldest_go_first,
    one_caller_cannot_push_out_another_callers,
    a_flooding_caller_over_its_share_loses_its_own_oldest,
    disposal_drops_the_scopes_confirmations,
    cancel_withdraws_a_confirmation,
    a_hidden_tools_confirmation_stays_pending,
    sensitive_values_are_redacted_for_approvers_and_restored_for_the_run,
    a_stale_form_submit_is_refused,
);

async fn deferred_call_returns_needs_confirmation_and_is_listed(b: Backend) {
    let clock = ManualClock::new();
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let out = tm
        .call("create", json!({"title": "Robotics"}), opts(Caller::InApp))
        .await;
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["status"], "needs_confirmation");
    assert_eq!(v["summary"], "Create challenge \"Robotics\"");
    assert_eq!(v["expiresAt"], "2026-01-01T00:10:00.000Z");
    assert_eq!(count(&runs), 0);
    let pending = list(&tm).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].confirm_id, v["confirmId"].as_str().unwrap());
    assert_eq!(pending[0].tool, "create");
    assert_eq!(pending[0].caller, Caller::InApp);
    assert_eq!(pending[0].summary, "Create challenge \"Robotics\"");
    assert_eq!(pending[0].input, json!({"title": "Robotics"}));
    assert_eq!(
        pending[0].expires_at,
        clock.now_for_test() + Duration::from_secs(600)
    );
}

/// `ManualClock`'s now.
trait Now {
    fn now_for_test(&self) -> std::time::SystemTime;
}

impl Now for ManualClock {
    fn now_for_test(&self) -> std::time::SystemTime {
        toolmark::clock::Clock::now(self)
    }
}

async fn approval_runs_as_human_and_the_bridge_delivers_the_outcome(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({"title": "Robotics"})).await;
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.output().unwrap()["caller"], "human");
    assert_eq!(count(&runs), 1);
    assert_eq!(next(&mut bridge).await, (id, out));
    assert!(list(&tm).await.is_empty());
}

async fn an_invalid_edit_keeps_the_id_and_a_valid_one_runs(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let id = defer(&tm, "create", json!({"title": "Robotics"})).await;
    let bad = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": 5})))
        .await;
    assert_eq!(bad.refusal_code(), Some(RefusalCode::Invalid));
    assert_eq!(ids(&tm).await, vec![id.clone()], "not used up");
    let good = tm
        .confirm_pending(&id, Decision::approve_with(json!({"title": "Chess"})))
        .await;
    assert_eq!(good.output().unwrap()["input"], json!({"title": "Chess"}));
    assert_eq!(count(&runs), 1);
}

async fn a_rejection_and_its_reason_reach_the_agent(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    let out = tm
        .confirm_pending(&id, Decision::reject_with("Not this week"))
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Rejected));
    assert_eq!(out.refusal().unwrap().message, "Not this week");
    assert_eq!(next(&mut bridge).await, (id, out));
    assert_eq!(count(&runs), 0);
}

async fn a_confirm_id_is_single_use(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let id = defer(&tm, "create", json!({})).await;
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    let again = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(again.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    let unknown = tm
        .confirm_pending("00000000000000000000000000000000", Decision::approve())
        .await;
    assert_eq!(
        unknown.refusal_code(),
        Some(RefusalCode::ConfirmationExpired)
    );
    assert_eq!(count(&runs), 1);
}

async fn fifty_concurrent_approvals_run_once(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let id = defer(&tm, "create", json!({})).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut handles = Vec::new();
    for _ in 0..50 {
        let (tm, id, barrier) = (tm.clone(), id.clone(), barrier.clone());
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            tm.confirm_pending(&id, Decision::approve()).await
        }));
    }
    let mut oks = 0;
    for h in handles {
        match h.await.unwrap() {
            Outcome::Ok { .. } => oks += 1,
            other => assert_eq!(other.refusal_code(), Some(RefusalCode::ConfirmationExpired)),
        }
    }
    assert_eq!((oks, count(&runs)), (1, 1));
}

async fn expiry_is_decided_by_the_clock_at_approval(b: Backend) {
    let clock = ManualClock::new();
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder().clock(clock.clone())).await else {
        return;
    };
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let late = defer(&tm, "create", json!({})).await;
    clock.advance(Duration::from_secs(599));
    let in_time = defer(&tm, "create", json!({})).await;
    assert!(tm
        .confirm_pending(&in_time, Decision::approve())
        .await
        .is_ok());
    clock.advance(Duration::from_secs(2));
    let out = tm.confirm_pending(&late, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 1);
}

async fn expiry_sends_a_bridge_message_when_the_clock_moves(b: Backend) {
    let clock = ManualClock::new();
    let Some(tm) = b
        .build(
            Toolmark::builder()
                .clock(clock.clone())
                .confirm_expiry(Duration::from_secs(60)),
        )
        .await
    else {
        return;
    };
    tm.register(guarded("create", &runs()), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    clock.advance(Duration::from_secs(59));
    assert_eq!(ids(&tm).await, vec![id.clone()]);
    assert!(bridge.try_recv().is_none());
    clock.advance(Duration::from_secs(2));
    let (confirm_id, outcome) = next(&mut bridge).await;
    assert_eq!(confirm_id, id);
    assert_eq!(
        outcome.refusal_code(),
        Some(RefusalCode::ConfirmationExpired)
    );
    assert!(list(&tm).await.is_empty());
}

async fn at_most_max_pending_and_the_oldest_go_first(b: Backend) {
    let Some(tm) = b.build(Toolmark::builder().max_pending(10)).await else {
        return;
    };
    tm.register(guarded("create", &runs()), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let mut all = Vec::new();
    for n in 0..11 {
        all.push(defer(&tm, "create", json!({"n": n})).await);
    }
    assert_eq!(ids(&tm).await, all[1..].to_vec(), "oldest first");
    let (confirm_id, outcome) = next(&mut bridge).await;
    assert_eq!(confirm_id, all[0]);
    assert_eq!(
        outcome.refusal_code(),
        Some(RefusalCode::ConfirmationExpired)
    );
    let evicted = tm.confirm_pending(&all[0], Decision::approve()).await;
    assert_eq!(
        evicted.refusal_code(),
        Some(RefusalCode::ConfirmationExpired)
    );
    assert!(tm
        .confirm_pending(&all[10], Decision::approve())
        .await
        .is_ok());
}

async fn one_caller_cannot_push_out_another_callers(b: Backend) {
    let Some(tm) = b
        .build(
            Toolmark::builder()
                .confirm_mode(Caller::Test, ConfirmMode::Deferred)
                .max_pending(10)
                .max_pending_per_caller(4),
        )
        .await
    else {
        return;
    };
    let (theirs, mine, [test, inapp]) = three_then_mine(&tm, 9).await;
    assert_eq!(test, theirs, "untouched");
    assert_eq!(inapp, mine[5..].to_vec(), "a hard bound of 4");
}

async fn cancel_withdraws_a_confirmation(b: Backend) {
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(guarded("create", &runs()), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "create", json!({})).await;
    assert!(tm.cancel_pending_async(&id).await.unwrap());
    assert!(!tm.cancel_pending_async(&id).await.unwrap());
    let (_, outcome) = next(&mut bridge).await;
    assert_eq!(outcome.refusal_code(), Some(RefusalCode::Cancelled));
    let late = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(late.refusal_code(), Some(RefusalCode::ConfirmationExpired));
}

async fn a_hidden_tools_confirmation_stays_pending(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    let scope = tm.scope("billing");
    scope.register(guarded("send", &runs)).unwrap();
    let id = defer(&tm, "billing.send", json!({"title": "x"})).await;
    scope.set_when(false);
    for decision in [Decision::approve(), Decision::reject()] {
        let refused = tm.confirm_pending(&id, decision).await;
        assert_eq!(refused.refusal_code(), Some(RefusalCode::UnknownTool));
    }
    assert_eq!(ids(&tm).await, vec![id.clone()], "not used up");
    scope.set_when(true);
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(count(&runs), 1);
}

async fn sensitive_values_are_redacted_for_approvers_and_restored_for_the_run(b: Backend) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    tm.register(pay(&seen), Default::default()).unwrap();
    let input = json!({
        "title": "Rent", "pin": "4321",
        "cards": [{"number": "4111", "cvc": "987"}, {"number": "5500", "cvc": "654"}]
    });
    let id = defer(&tm, "pay", input.clone()).await;
    let shown = list(&tm).await.remove(0);
    assert_eq!(
        shown.input,
        json!({
            "title": "Rent", "pin": "[redacted]",
            "cards": [{"number": "4111", "cvc": "[redacted]"}, {"number": "5500", "cvc": "[redacted]"}]
        })
    );
    assert_eq!(shown.summary, "Pay \"Rent\" with pin [redacted]");
    // The approver edits the title and sends the public input back.
    let mut edited = shown.input.clone();
    edited["title"] = json!("Rent (March)");
    let out = tm
        .confirm_pending(&id, Decision::approve_with(edited))
        .await;
    assert!(out.is_ok(), "{out:?}");
    let mut expected = input;
    expected["title"] = json!("Rent (March)");
    assert_eq!(seen.lock().unwrap().clone(), vec![expected]);
}

#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
struct Profile {
    name: String,
}

async fn a_stale_form_submit_is_refused(b: Backend) {
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    let form = toolmark::Form::new(Profile {
        name: "Ada".to_owned(),
    });
    let submitted = Arc::new(Mutex::new(Vec::new()));
    let log = submitted.clone();
    tm.register_form(
        &tm.scope("profile"),
        form.clone(),
        toolmark::FormOptions {
            on_submit: Some(toolmark::OnSubmit::new(move |_ctx, p: Profile| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(p.name);
                    Ok::<_, toolmark::ToolError>(json!(null))
                }
            })),
            ..Default::default()
        },
    )
    .unwrap();
    let stale = defer(&tm, "profile.submit", json!({})).await;
    form.set(Profile {
        name: "Grace".to_owned(),
    });
    let fresh = defer(&tm, "profile.submit", json!({})).await;
    let out = tm.confirm_pending(&stale, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Stale));
    assert_eq!(
        out.refusal().unwrap().message,
        "Form changed since confirmation was requested"
    );
    assert!(tm
        .confirm_pending(&fresh, Decision::approve())
        .await
        .is_ok());
    assert_eq!(submitted.lock().unwrap().clone(), vec!["Grace".to_owned()]);
}

async fn a_flooding_caller_over_its_share_loses_its_own_oldest(b: Backend) {
    let Some(tm) = b
        .build(Toolmark::builder().confirm_mode(Caller::Test, ConfirmMode::Deferred))
        .await
    else {
        return;
    };
    let (theirs, mine, [test, inapp]) = three_then_mine(&tm, 150).await;
    assert_eq!(test, theirs, "untouched");
    assert_eq!(inapp, mine[53..].to_vec());
}

async fn disposal_drops_the_scopes_confirmations(b: Backend) {
    let runs = runs();
    let Some(tm) = b.build(Toolmark::builder()).await else {
        return;
    };
    let scope = tm.scope("challenges");
    scope.register(guarded("create", &runs)).unwrap();
    tm.register(guarded("other", &runs), Default::default())
        .unwrap();
    let mut bridge = tm.bridge();
    let id = defer(&tm, "challenges.create", json!({})).await;
    let other = defer(&tm, "other", json!({})).await;
    scope.dispose();
    let (confirm_id, outcome) = next(&mut bridge).await;
    assert_eq!(confirm_id, id);
    assert_eq!(outcome.refusal_code(), Some(RefusalCode::ScopeDisposed));
    assert_eq!(ids(&tm).await, vec![other]);
    let late = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(late.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs), 0);
}

/// Registers `create`, defers three calls by `Test` ("theirs") then `mine` by
/// `InApp`; returns both lists of ids and the pending ids of each caller after.
async fn three_then_mine(
    tm: &Toolmark,
    mine: usize,
) -> (Vec<String>, Vec<String>, [Vec<String>; 2]) {
    tm.register(guarded("create", &runs()), Default::default())
        .unwrap();
    let mut theirs = Vec::new();
    for n in 0..3 {
        let out = tm.call("create", json!({"n": n}), opts(Caller::Test)).await;
        theirs.push(out.confirm_id().unwrap().to_owned());
    }
    let mut ids = Vec::new();
    for n in 0..mine {
        ids.push(defer(tm, "create", json!({"n": n})).await);
    }
    let pending = list(tm).await;
    let of = |c: Caller| -> Vec<String> {
        pending
            .iter()
            .filter(|p| p.caller == c)
            .map(|p| p.confirm_id.clone())
            .collect()
    };
    (theirs, ids, [of(Caller::Test), of(Caller::InApp)])
}
