//! Confirmation round trips, measured in one run beside a plain call of the same tool
//! (the baseline): deferred (call → `needs_confirmation` → `confirm_pending` → run as
//! Human) and inline (call → confirm handler approves → run).
//!
//! Run with `cargo bench --bench confirm`; read each row as a ratio to `plain_call`.

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
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
