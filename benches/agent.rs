//! A 1,000-tool manifest converted for each provider: the cached list (every turn
//! of an agent loop while nothing changed), the first list after a change (a
//! version change with the same tools; one tool shown or hidden, with and without
//! assembling the request JSON), and, as the before figure in the same run, a
//! conversion from scratch without the per-tool cache — plain and OpenAI strict,
//! beside the baseline of the manifest itself.
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
    // A version change with the same tools (a scope without tools toggled).
    let toggled = tm.scope("other");
    // A one-tool change: a scope holding one more tool, shown or hidden.
    let extra = tm.scope("extra");
    extra
        .register(
            ToolSpec::new("tool", "One more tool")
                .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
                .effect(Effect::Read)
                .handler(|_ctx, input| async move { Ok(input) }),
        )
        .unwrap();
    let mut shown = true;
    let mut flip = || {
        shown = !shown;
        extra.set_when(shown);
    };
    let mut group = c.benchmark_group("agent_tools");
    group.sample_size(20);
    group.bench_function(BenchmarkId::new("baseline_cached_manifest", N), |b| {
        b.iter(|| black_box(tm.manifest(Caller::InApp)))
    });
    group.bench_function(BenchmarkId::new("baseline_manifest_after_change", N), |b| {
        b.iter(|| {
            flip();
            black_box(tm.manifest_shared(Caller::InApp))
        })
    });
    let strict = AgentOptions {
        strict: true,
        ..AgentOptions::default()
    };
    let agents = Provider::ALL
        .into_iter()
        .map(|p| (p.as_str().to_owned(), AgentTools::new(&tm, p)))
        .chain([(
            "openai_chat_strict".to_owned(),
            AgentTools::with_options(&tm, Provider::OpenAiChat, strict),
        )]);
    for (label, agent) in agents {
        agent.tool_list();
        group.bench_function(BenchmarkId::new(format!("cached/{label}"), N), |b| {
            b.iter(|| black_box(agent.tool_list()))
        });
        // Before the per-tool cache: every tool converted, the JSON assembled.
        group.bench_function(BenchmarkId::new(format!("uncached/{label}"), N), |b| {
            b.iter(|| black_box(agent.convert_uncached()))
        });
        group.bench_function(
            BenchmarkId::new(format!("version_change_same_tools/{label}"), N),
            |b| {
                b.iter(|| {
                    toggled.set_when(false);
                    toggled.set_when(true);
                    black_box(agent.tool_list())
                })
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("one_tool_change/{label}"), N),
            |b| {
                b.iter(|| {
                    flip();
                    black_box(agent.tool_list())
                })
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("one_tool_change_with_json/{label}"), N),
            |b| {
                b.iter(|| {
                    flip();
                    let list = agent.tool_list();
                    black_box(list.json());
                    list
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
