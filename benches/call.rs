//! `tm.call` on a trivial read tool ({a, b} → a + b) beside the direct typed call
//! (serde_json::from_value + the fn), measured in the same run.
//!
//! Run with `cargo bench --bench call`; the ratio `toolmark_call / direct_typed_call`
//! is the number to watch (goal: at most 3×).

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use toolmark::{CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn add(input: Add) -> i64 {
    input.a + input.b
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("math")
        .register(
            ToolSpec::typed("add", "Add two numbers", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(add(i))
            })
            .effect(Effect::Read),
        )
        .unwrap();
    let input = json!({"a": 2, "b": 40});

    let mut group = c.benchmark_group("call");
    group.bench_function("direct_typed_call", |b| {
        b.iter(|| {
            let v: Value = black_box(input.clone());
            let typed: Add = serde_json::from_value(v).unwrap();
            black_box(add(typed))
        })
    });
    group.bench_function("toolmark_call", |b| {
        b.to_async(&rt).iter(|| {
            let v = black_box(input.clone());
            let tm = &tm;
            async move { black_box(tm.call("math.add", v, CallOptions::new(Caller::InApp)).await) }
        })
    });
    group.bench_function("manifest_read", |b| {
        b.iter(|| black_box(tm.manifest(Caller::InApp)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
