//! Confirmation round trips, measured in one run beside a plain call of the same tool
//! (the baseline): deferred (call → `needs_confirmation` → `confirm_pending` → run as
//! Human) and inline (call → confirm handler approves → run).
//!
//! Run with `cargo bench --bench confirm`; read each row as a ratio to `plain_call`.
//!
//! With `--features redis`, the same deferred round trip on a `MemoryStore` and on a
//! `RedisStore` (at `TOOLMARK_REDIS_URL`; those rows are skipped without it), and the
//! approvals per second of two instances on one Redis (asked on A, approved on B),
//! from 1, 8 and 64 concurrent approvers.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use toolmark::{CallOptions, Caller, ConfirmRequest, Decision, Effect, ToolSpec, Toolmark};

fn spec(name: &str, effect: Effect) -> ToolSpec {
    ToolSpec::new(name, "Send a message")
        .input_schema(json!({
            "type": "object",
            "properties": {"title": {"type": "string"}},
            "additionalProperties": false
        }))
        .effect(effect)
        .summary("Send \"{title}\"")
        .handler(|_ctx, input| async move { Ok(input) })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tm = rt.block_on(async {
        let tm = Toolmark::builder()
            .confirm_handler(|_req: ConfirmRequest| async { Decision::approve() })
            .build()
            .unwrap();
        tm.register(spec("plain", Effect::Write), Default::default())
            .unwrap();
        tm.register(spec("guarded", Effect::Consequential), Default::default())
            .unwrap();
        tm
    });
    let input = json!({"title": "Robotics"});

    let mut group = c.benchmark_group("confirm");
    group.bench_function("plain_call", |b| {
        b.to_async(&rt).iter(|| {
            let (tm, v) = (&tm, black_box(input.clone()));
            async move { black_box(tm.call("plain", v, CallOptions::new(Caller::InApp)).await) }
        })
    });
    group.bench_function("deferred_round_trip", |b| {
        b.to_async(&rt).iter(|| {
            let (tm, v) = (&tm, black_box(input.clone()));
            async move {
                let out = tm.call("guarded", v, CallOptions::new(Caller::InApp)).await;
                let id = out.confirm_id().expect("needs_confirmation").to_owned();
                black_box(tm.confirm_pending(&id, Decision::approve()).await)
            }
        })
    });
    group.bench_function("inline_round_trip", |b| {
        b.to_async(&rt).iter(|| {
            let (tm, v) = (&tm, black_box(input.clone()));
            async move { black_box(tm.call("guarded", v, CallOptions::new(Caller::Mcp)).await) }
        })
    });
    #[cfg(feature = "redis")]
    stores(&mut group, &rt, &input);
    group.finish();
}

/// A toolmark on `store` with `guarded` registered.
#[cfg(feature = "redis")]
fn on_store(store: impl toolmark::store::ConfirmStore) -> Toolmark {
    let tm = Toolmark::builder()
        .seal_key([7; 32])
        .confirm_store(store)
        .build()
        .unwrap();
    tm.register(spec("guarded", Effect::Consequential), Default::default())
        .unwrap();
    tm
}

#[cfg(feature = "redis")]
fn stores(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    input: &serde_json::Value,
) {
    use toolmark::store::{MemoryStore, RedisStore, RedisStoreOptions};

    async fn round_trip(
        ask: &Toolmark,
        approve: &Toolmark,
        v: serde_json::Value,
    ) -> toolmark::Outcome {
        let out = ask
            .call("guarded", v, CallOptions::new(Caller::InApp))
            .await;
        let id = out.confirm_id().expect("needs_confirmation").to_owned();
        let done = approve.confirm_pending(&id, Decision::approve()).await;
        // A refused approval (a store that timed out, say) is not a round trip.
        assert!(done.is_ok(), "the approval did not run: {done:?}");
        done
    }

    let memory = rt.block_on(async { on_store(MemoryStore::new()) });
    group.bench_function("deferred_round_trip_memory_store", |b| {
        b.to_async(rt).iter(|| {
            let (tm, v) = (&memory, black_box(input.clone()));
            async move { black_box(round_trip(tm, tm, v).await) }
        })
    });
    let Ok(url) = std::env::var("TOOLMARK_REDIS_URL") else {
        eprintln!("TOOLMARK_REDIS_URL is not set: the Redis rows are skipped");
        return;
    };
    let prefix = format!("tmbench-{}", std::process::id());
    let connect = || async {
        RedisStore::connect_with(&url, RedisStoreOptions::default().prefix(prefix.clone()))
            .await
            .expect("Redis at TOOLMARK_REDIS_URL")
    };
    let (a, b) = rt.block_on(async { (on_store(connect().await), on_store(connect().await)) });
    group.bench_function("deferred_round_trip_redis", |bench| {
        bench.to_async(rt).iter(|| {
            let (tm, v) = (&a, black_box(input.clone()));
            async move { black_box(round_trip(tm, tm, v).await) }
        })
    });
    group.throughput(criterion::Throughput::Elements(1));
    group.bench_function("approvals_two_instances_redis", |bench| {
        bench.to_async(rt).iter(|| {
            let (a, b, v) = (&a, &b, black_box(input.clone()));
            async move { black_box(round_trip(a, b, v).await) }
        })
    });
    // Concurrent approvers: `n` round trips at once (each asked on A, approved on B),
    // so the row's throughput is approvals per second with `n` clients in flight.
    for n in [1u64, 8, 64] {
        group.throughput(criterion::Throughput::Elements(n));
        group.bench_function(
            format!("approvals_two_instances_redis_concurrent/{n}"),
            |bench| {
                bench.to_async(rt).iter(|| {
                    let (a, b) = (&a, &b);
                    let calls = (0..n).map(|_| round_trip(a, b, black_box(input.clone())));
                    async move { black_box(futures_util::future::join_all(calls).await) }
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
