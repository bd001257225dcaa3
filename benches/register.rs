//! Registration: 10,000 typed tools (`ToolSpec::typed`) and 10,000 dynamic tools
//! (`ToolSpec::new` with a JSON schema) into a fresh Toolmark, beside the baseline of
//! building the same specs without registering them, in the same run.
//!
//! With `--features mcp`, rmcp 3.11 in the same run: the same 10,000 typed tools
//! added to a `ToolRouter` as its `#[tool]` macro builds them (`rmcp_add`: prebuilt
//! routes added, beside `typed`; `rmcp_build_and_add`: routes built and added,
//! beside `typed_build_and_register`).
//!
//! Run with `cargo bench --features mcp --bench register`; divide by 10,000 for a
//! per-tool figure, and read the Toolmark rows as ratios to their rmcp rows. Drops
//! are not timed (criterion drops the outputs after the clock stops).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;
use std::hint::black_box;
use toolmark::{Effect, ToolError, ToolSpec, Toolmark};

#[cfg(feature = "mcp")]
#[path = "common/rmcp_side.rs"]
#[allow(dead_code)]
mod rmcp_side;

const N: usize = 10_000;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Add {
    a: i64,
    b: i64,
}

fn typed_specs() -> Vec<ToolSpec> {
    (0..N)
        .map(|i| {
            ToolSpec::typed(
                format!("add_{i}"),
                "Add two numbers",
                |_ctx, i: Add| async move { Ok::<_, ToolError>(i.a + i.b) },
            )
            .effect(Effect::Read)
        })
        .collect()
}

fn dynamic_specs() -> Vec<ToolSpec> {
    (0..N)
        .map(|i| {
            ToolSpec::new(format!("add_{i}"), "Add two numbers")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                }))
                .handler(|_ctx, input| async move { Ok(input) })
        })
        .collect()
}

fn register_all(specs: Vec<ToolSpec>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("math");
    for spec in specs {
        scope.register(spec).unwrap();
    }
    tm
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("register_10k");
    group.sample_size(10);
    group.bench_function("baseline_build_typed_specs", |b| {
        b.iter(|| black_box(typed_specs()))
    });
    group.bench_function("typed", |b| {
        b.iter_batched(
            typed_specs,
            |s| black_box(register_all(s)),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("typed_build_and_register", |b| {
        b.iter_batched(
            || (),
            |()| black_box(register_all(typed_specs())),
            BatchSize::PerIteration,
        )
    });
    #[cfg(feature = "mcp")]
    {
        group.bench_function("rmcp_add", |b| {
            b.iter_batched(
                || rmcp_side::typed_routes(N),
                |r| black_box(rmcp_side::register_all(r)),
                BatchSize::PerIteration,
            )
        });
        group.bench_function("rmcp_build_and_add", |b| {
            b.iter_batched(
                || (),
                |()| black_box(rmcp_side::register_all(rmcp_side::typed_routes(N))),
                BatchSize::PerIteration,
            )
        });
    }
    group.bench_function("dynamic", |b| {
        b.iter_batched(
            dynamic_specs,
            |s| black_box(register_all(s)),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
