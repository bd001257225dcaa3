//! 100,000 calls spread over 1, 10 and 1,000 scopes on a 2-worker runtime, beside
//! the same 100,000 units of direct work (`serde_json::from_value`, the addition,
//! `serde_json::to_value`) spawned the same way, in the same run.
//!
//! Every call is its own task, spawned at once: call `i` goes to scope `i % S`, whose
//! tool (`s<k>.add`, a `ToolSpec::typed` write tool) runs its calls one at a time in
//! arrival order (the scope's queue), while the scopes run in parallel. The direct
//! side spawns one task per unit of work too, so the ratio is what a call adds to the
//! work and the spawn. Before measuring, one round checks that every call answered
//! `ok` and that each scope ran exactly its own calls, each once (the tasks start on
//! two workers, so the order they reach their scope in is not the order they were
//! spawned in, and is not checked here: `tests/runtime/queues.rs` checks the
//! queue's order).
//!
//! Run with `cargo bench --bench scopes`; read each `toolmark/S` row as a ratio to
//! `direct/S` (goal: at most 2× at every scope count).
//!
//! For instruction counts (exact on a noisy machine), `SCOPES_COUNT=<side>:<S>:<rounds>`
//! (`side` = `direct` or `toolmark`) skips criterion and runs that many rounds of one
//! side at `S` scopes on the same runtime, after one untimed round: run it under
//! `valgrind --tool=callgrind` with two round counts and take the difference. With
//! `SCOPES_ROUNDS` set too, each round's wall-clock time is printed (stderr).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolmark::{CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};

const CALLS: usize = 100_000;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// A toolmark with one `add` tool in each of `scopes` scopes (queues long enough to
/// hold every call at once). With `seen`, each tool records the `a` of each call it
/// runs, per scope (the order check).
fn toolmark(scopes: usize, seen: Option<Arc<Vec<Mutex<Vec<i64>>>>>) -> (Toolmark, Vec<String>) {
    let tm = Toolmark::builder().queue_bound(CALLS).build().unwrap();
    let names = (0..scopes)
        .map(|s| {
            let seen = seen.clone();
            tm.scope(&format!("s{s}"))
                .register(
                    ToolSpec::typed("add", "Add two numbers", move |_ctx, i: Add| {
                        if let Some(seen) = &seen {
                            seen[s].lock().unwrap().push(i.a);
                        }
                        async move { Ok::<_, ToolError>(i.a + i.b) }
                    })
                    .effect(Effect::Write),
                )
                .unwrap();
            format!("s{s}.add")
        })
        .collect();
    (tm, names)
}

/// All `CALLS` calls spawned at once, call `i` to scope `i % names.len()`; every
/// outcome must be `ok`.
async fn calls(tm: &Toolmark, names: &Arc<Vec<String>>) {
    let tasks: Vec<_> = (0..CALLS)
        .map(|i| {
            let (tm, names) = (tm.clone(), Arc::clone(names));
            tokio::spawn(async move {
                let name = &names[i % names.len()];
                let input = json!({"a": i as i64, "b": 40});
                tm.call(name, input, CallOptions::new(Caller::InApp)).await
            })
        })
        .collect();
    for task in tasks {
        let outcome = task.await.unwrap();
        assert!(outcome.is_ok());
        black_box(outcome);
    }
}

/// The same work by hand, one task per unit.
async fn direct() {
    let tasks: Vec<_> = (0..CALLS)
        .map(|i| {
            tokio::spawn(async move {
                let input = json!({"a": i as i64, "b": 40});
                let add: Add = serde_json::from_value(black_box(input)).unwrap();
                serde_json::to_value(add.a + add.b).unwrap()
            })
        })
        .collect();
    for task in tasks {
        black_box::<Value>(task.await.unwrap());
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `SCOPES_COUNT` mode (see the header); `false` when it is not set.
fn count_mode() -> bool {
    let Ok(spec) = std::env::var("SCOPES_COUNT") else {
        return false;
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let [side, scopes, rounds] = parts[..] else {
        panic!("SCOPES_COUNT is <direct|toolmark>:<scopes>:<rounds>, not {spec}");
    };
    let (scopes, rounds): (usize, usize) = (scopes.parse().unwrap(), rounds.parse().unwrap());
    let rt = runtime();
    let (tm, names) = toolmark(scopes, None);
    let names = Arc::new(names);
    for round in 0..=rounds {
        let started = std::time::Instant::now();
        match side {
            "direct" => rt.block_on(direct()),
            "toolmark" => rt.block_on(calls(&tm, &names)),
            _ => panic!("SCOPES_COUNT side is direct or toolmark, not {side}"),
        }
        if std::env::var_os("SCOPES_ROUNDS").is_some() {
            eprintln!("round {round}: {:?}", started.elapsed());
        }
    }
    true
}

fn bench(c: &mut Criterion) {
    if count_mode() {
        return;
    }
    let rt = runtime();
    let mut group = c.benchmark_group("scopes");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for scopes in [1usize, 10, 1_000] {
        // The check: every call ok, each scope ran exactly its own calls, once each.
        let seen: Arc<Vec<Mutex<Vec<i64>>>> =
            Arc::new((0..scopes).map(|_| Mutex::new(Vec::new())).collect());
        let (tm, names) = toolmark(scopes, Some(Arc::clone(&seen)));
        let names = Arc::new(names);
        rt.block_on(calls(&tm, &names));
        for (s, ran) in seen.iter().enumerate() {
            let mut ran = ran.lock().unwrap().clone();
            ran.sort_unstable();
            let made: Vec<i64> = (s..CALLS).step_by(scopes).map(|i| i as i64).collect();
            assert_eq!(ran, made, "scope s{s} ran exactly its own calls");
        }
        drop(tm);

        let (tm, names) = toolmark(scopes, None);
        let names = Arc::new(names);
        group.bench_function(BenchmarkId::new("direct", scopes), |b| {
            b.to_async(&rt).iter(direct)
        });
        group.bench_function(BenchmarkId::new("toolmark", scopes), |b| {
            b.to_async(&rt).iter(|| calls(&tm, &names))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
