//! Two toolmarks (instances of one app) on one Redis, each with its own
//! connection: a confirmation asked on one is listed and approved on the other.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolmark::clock::ManualClock;
use toolmark::{Decision, Event, Outcome, RefusalCode, Toolmark, ToolmarkBuilder};

use crate::*;

/// An instance on the shared Redis under `prefix`, with `create` registered.
async fn instance(
    url: &str,
    prefix: &str,
    builder: ToolmarkBuilder,
) -> (Toolmark, Arc<std::sync::atomic::AtomicUsize>) {
    let tm = builder
        .seal_key(KEY)
        .confirm_store(redis(url, prefix).await)
        .build()
        .unwrap();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    (tm, runs)
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_on_a_approved_on_b_runs_once_on_b_and_a_gets_confirmed() {
    let url = redis_url();
    let p = prefix();
    let (a, runs_a) = instance(&url, &p, Toolmark::builder()).await;
    let (b, runs_b) = instance(&url, &p, Toolmark::builder()).await;
    let mut bridge_a = a.bridge();
    let mut bridge_b = b.bridge();
    let id = defer(&a, "create", json!({"title": "Robotics"})).await;
    assert_eq!(ids(&b).await, vec![id.clone()], "B lists A's confirmation");
    let out = b.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.output().unwrap()["caller"], "human");
    assert_eq!((count(&runs_a), count(&runs_b)), (0, 1));
    assert_eq!(next(&mut bridge_a).await, (id.clone(), out.clone()));
    assert_eq!(next(&mut bridge_b).await, (id.clone(), out));
    // Exactly once on each bridge.
    tokio::task::yield_now().await;
    assert!(bridge_a.try_recv().is_none());
    let again = a.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(again.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs_a) + count(&runs_b), 1);
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_approvals_over_both_instances_run_exactly_once() {
    let url = redis_url();
    let p = prefix();
    let (a, runs_a) = instance(&url, &p, Toolmark::builder()).await;
    let (b, runs_b) = instance(&url, &p, Toolmark::builder()).await;
    let id = defer(&a, "create", json!({})).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(200));
    let mut handles = Vec::new();
    for i in 0..200 {
        let tm = if i % 2 == 0 { a.clone() } else { b.clone() };
        let (id, barrier) = (id.clone(), barrier.clone());
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
    assert_eq!(oks, 1);
    assert_eq!(count(&runs_a) + count(&runs_b), 1);
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_outlives_the_instance_that_asked() {
    let url = redis_url();
    let p = prefix();
    let (a, _) = instance(&url, &p, Toolmark::builder()).await;
    let id = defer(&a, "create", json!({"title": "Chess"})).await;
    drop(a);
    // The restarted instance: a new toolmark, a new connection.
    let (a2, runs) = instance(&url, &p, Toolmark::builder()).await;
    let pending = list(&a2).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].confirm_id, id);
    assert_eq!(pending[0].summary, "Create challenge \"Chess\"");
    let out = a2.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.output().unwrap()["input"], json!({"title": "Chess"}));
    assert_eq!(count(&runs), 1);
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_is_decided_by_the_injected_clock_on_every_instance() {
    let url = redis_url();
    let p = prefix();
    let clock = ManualClock::new();
    let (a, _) = instance(&url, &p, Toolmark::builder().clock(clock.clone())).await;
    let (b, runs_b) = instance(&url, &p, Toolmark::builder().clock(clock.clone())).await;
    let mut bridge_b = b.bridge();
    let id = defer(&a, "create", json!({})).await;
    let other = defer(&a, "create", json!({})).await;
    // Redis's own TTL is far away in real time; the clock jumped past expiry.
    clock.advance(Duration::from_secs(601));
    let out = b.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(count(&runs_b), 0);
    // The other one is expired by a sweeper (A's or B's) and B's agent is told.
    let mut told = Vec::new();
    while told.len() < 2 {
        let (confirm_id, outcome) = next(&mut bridge_b).await;
        assert_eq!(
            outcome.refusal_code(),
            Some(RefusalCode::ConfirmationExpired)
        );
        told.push(confirm_id);
    }
    told.sort();
    let mut both = vec![id, other];
    both.sort();
    assert_eq!(told, both);
    assert!(list(&a).await.is_empty());
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_evicts_the_oldest_across_instances() {
    let url = redis_url();
    let p = prefix();
    let (a, _) = instance(&url, &p, Toolmark::builder().max_pending(3)).await;
    let (b, _) = instance(&url, &p, Toolmark::builder().max_pending(3)).await;
    let mut bridge_a = a.bridge();
    let mut events_b = b.events();
    let first = defer(&a, "create", json!({"n": 0})).await;
    let second = defer(&b, "create", json!({"n": 1})).await;
    let third = defer(&a, "create", json!({"n": 2})).await;
    let fourth = defer(&b, "create", json!({"n": 3})).await;
    assert_eq!(ids(&a).await, vec![second, third, fourth.clone()]);
    // B evicted A's oldest: B's events say so, A's agent is told over the bridge.
    let evicted = std::iter::from_fn(|| events_b.try_recv().ok())
        .find_map(|e| match e {
            Event::ConfirmationEvicted {
                confirm_id, reason, ..
            } => Some((confirm_id, reason)),
            _ => None,
        })
        .expect("an eviction event on B");
    assert_eq!(evicted, (first.clone(), "max_pending"));
    let (confirm_id, outcome) = next(&mut bridge_a).await;
    assert_eq!(confirm_id, first);
    assert_eq!(
        outcome.refusal_code(),
        Some(RefusalCode::ConfirmationExpired)
    );
    let late = a.confirm_pending(&first, Decision::approve()).await;
    assert_eq!(late.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert!(a
        .confirm_pending(&fourth, Decision::approve())
        .await
        .is_ok());
}
