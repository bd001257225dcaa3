//! A 1,000-tool manifest converted for each provider: the cached list (every turn
//! of an agent loop while nothing changed), the first conversion after a change,
//! and OpenAI strict conversion — beside the baseline of a cached manifest read in
//! the same run.
//!
//! Run with `cargo bench --bench agent`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use std::hint::black_box;
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use toolmark::{Caller, Effect, ToolSpec, Toolmark};

const N: usize = 1_000;

fn toolmark_with(n: usize) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    for i in 0..n {
        // Dotted names (mapped for OpenAI and Anthropic), nested and optional fields.
        tm.scope_at(&format!("area_{}.group_{}", i % 10, i % 7))
            .register(
                ToolSpec::new(format!("tool_{i:05}"), "Create a record with an address")
                    .input_schema(json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "Name"},
                            "count": {"type": "integer", "format": "uint32", "minimum": 0},
                            "address": {"type": "object", "properties": {
                                "street": {"type": "string"}, "zip": {"type": "string"}
                            }, "required": ["street"]}
                        },
                        "required": ["name"]
                    }))
                    .effect(Effect::Write)
                    .handler(|_ctx, input| async move { Ok(input) }),
            )
            .unwrap();
    }
    tm
}

fn bench(c: &mut Criterion) {
    let tm = toolmark_with(N);
    let toggled = tm.scope("other");
    let mut group = c.benchmark_group("agent_tools");
    group.sample_size(20);
    group.bench_function(BenchmarkId::new("baseline_cached_manifest", N), |b| {
        b.iter(|| black_box(tm.manifest(Caller::InApp)))
    });
    group.bench_function(BenchmarkId::new("baseline_manifest_after_change", N), |b| {
        b.iter(|| {
            toggled.set_when(false);
            toggled.set_when(true);
            black_box(tm.manifest(Caller::InApp))
        })
    });
    for provider in Provider::ALL {
        let agent = AgentTools::new(&tm, provider);
        agent.tool_list();
        group.bench_function(
            BenchmarkId::new(format!("cached/{}", provider.as_str()), N),
            |b| b.iter(|| black_box(agent.tool_list())),
        );
        group.bench_function(
            BenchmarkId::new(format!("after_change/{}", provider.as_str()), N),
            |b| {
                b.iter(|| {
                    toggled.set_when(false);
                    toggled.set_when(true);
                    black_box(agent.tool_list())
                })
            },
        );
    }
    let strict = AgentTools::with_options(
        &tm,
        Provider::OpenAiChat,
        AgentOptions {
            strict: true,
            ..AgentOptions::default()
        },
    );
    group.bench_function(
        BenchmarkId::new("after_change/openai_chat_strict", N),
        |b| {
            b.iter(|| {
                toggled.set_when(false);
                toggled.set_when(true);
                black_box(strict.tool_list())
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
