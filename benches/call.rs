//! `tm.call` on a trivial read tool ({a, b} → a + b) beside the direct typed call
//! (serde_json::from_value + the fn), measured in the same run.
//!
//! Run with `cargo bench --bench call`. The number to watch is the ratio
//! `toolmark_call_macro / direct_typed_call` (goal: at most 3×; rmcp's cached
//! router measures 3.3× on the same kind of machine).

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use toolmark::{tool, CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn add_direct(input: Add) -> i64 {
    input.a + input.b
}

/// Add two numbers.
#[tool(scope = "math", read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected().unwrap();
    tm.scope("typed")
        .register(
            ToolSpec::typed("add", "Add two numbers", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(add_direct(i))
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
            black_box(add_direct(typed))
        })
    });
    for (label, name) in [
        ("toolmark_call_macro", "math.add"),
        ("toolmark_call_typed_spec", "typed.add"),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter(|| {
                let v = black_box(input.clone());
                let tm = &tm;
                async move { black_box(tm.call(name, v, CallOptions::new(Caller::InApp)).await) }
            })
        });
    }
    group.bench_function("manifest_read", |b| {
        b.iter(|| black_box(tm.manifest(Caller::InApp)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
