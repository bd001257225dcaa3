//! The manifest at 10, 1,000 and 10,000 tools: a cached read (a copy, and the shared
//! list), the first read after a change (a scope with a tool hidden and shown
//! again), and the JSON a client receives (serialized each time, and cached per
//! version) — each beside the baseline of cloning the same number of tool names, in
//! the same run.
//!
//! With `--features mcp`, rmcp 3.11 in the same run, on a `ToolRouter` holding the
//! same tools (same names, description, schema and read-only annotation): its
//! `list_all` (rmcp keeps no cached list: every read, before or after a change, is
//! this) and `list_all` serialized to JSON.
//!
//! Run with `cargo bench --features mcp --bench manifest`; divide by the tool count
//! for a per-tool figure, and read the Toolmark rows as ratios to the rmcp rows.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use std::hint::black_box;
use toolmark::{Caller, Effect, ToolSpec, Toolmark};

#[cfg(feature = "mcp")]
#[path = "common/rmcp_side.rs"]
#[allow(dead_code)]
mod rmcp_side;

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    })
}

fn toolmark_with(n: usize) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("s");
    for i in 0..n {
        scope
            .register(
                ToolSpec::new(format!("tool_{i:05}"), "A tool that adds two numbers")
                    .input_schema(schema())
                    .effect(Effect::Read)
                    .handler(|_ctx, input| async move { Ok(input) }),
            )
            .unwrap();
    }
    tm
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("manifest");
    group.sample_size(20);
    for n in [10usize, 1_000, 10_000] {
        let tm = toolmark_with(n);
        // A scope holding one tool, shown and hidden: every toggle is a real change.
        let toggled = tm.scope("other");
        toggled
            .register(
                ToolSpec::new("toggle", "A tool in a scope that is shown and hidden")
                    .handler(|_ctx, input| async move { Ok(input) }),
            )
            .unwrap();
        let names: Vec<String> = (0..n).map(|i| format!("s.tool_{i:05}")).collect();
        group.bench_with_input(BenchmarkId::new("baseline_clone_names", n), &n, |b, _| {
            b.iter(|| black_box(names.clone()))
        });
        group.bench_with_input(BenchmarkId::new("cached_read_copy", n), &n, |b, _| {
            b.iter(|| black_box(tm.manifest(Caller::InApp)))
        });
        group.bench_with_input(BenchmarkId::new("cached_read_shared", n), &n, |b, _| {
            b.iter(|| black_box(tm.manifest_shared(Caller::InApp)))
        });
        group.bench_with_input(BenchmarkId::new("after_change", n), &n, |b, _| {
            b.iter(|| {
                toggled.set_when(false);
                toggled.set_when(true);
                black_box(tm.manifest_shared(Caller::InApp))
            })
        });
        group.bench_with_input(
            BenchmarkId::new("json_serialize_each_time", n),
            &n,
            |b, _| {
                b.iter(|| black_box(serde_json::to_vec(&*tm.manifest_shared(Caller::Mcp)).unwrap()))
            },
        );
        group.bench_with_input(BenchmarkId::new("json_cached", n), &n, |b, _| {
            b.iter(|| black_box(tm.manifest_json(Caller::Mcp)))
        });
        #[cfg(feature = "mcp")]
        {
            let router = rmcp_side::router_with(n, &schema());
            assert_eq!(router.list_all().len(), n);
            group.bench_with_input(BenchmarkId::new("rmcp_list_all", n), &n, |b, _| {
                b.iter(|| black_box(router.list_all()))
            });
            group.bench_with_input(BenchmarkId::new("rmcp_list_all_json", n), &n, |b, _| {
                b.iter(|| black_box(serde_json::to_vec(&router.list_all()).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
