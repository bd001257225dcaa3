//! Workloads for instruction counting under callgrind (exact and repeatable, where
//! wall-clock time on a shared machine is not): each runs one piece of work `N`
//! times after a warm-up, so subtracting a run with `N = 0` leaves the work alone.
//!
//! ```sh
//! cargo bench --bench counts --no-run        # prints the binary's path
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     target/release/deps/counts-<hash> register 10000
//! callgrind_annotate /tmp/cg.out | head -40
//! ```
//!
//! Workloads: `register N` (N `ToolSpec::typed` tools into a fresh Toolmark),
//! `specs N` (building the same specs without registering them: the baseline),
//! `call N` (N `tm.call("math.add", {a, b})` of a `#[tool]` fn),
//! `invalid N` (N calls of `math.add` whose input has a wrong type: the slow decode).

use serde_json::json;
use std::hint::black_box;
use toolmark::{tool, CallOptions, Caller, Effect, ToolError, ToolSpec, Toolmark};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Add {
    a: i64,
    b: i64,
}

/// Add two numbers.
#[tool(scope = "math", read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn typed_specs(n: usize) -> Vec<ToolSpec> {
    (0..n)
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

fn register(specs: Vec<ToolSpec>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let scope = tm.scope("math");
    for spec in specs {
        scope.register(spec).unwrap();
    }
    tm
}

fn calls(n: usize, input: &serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected().unwrap();
    rt.block_on(async {
        for _ in 0..10 {
            black_box(
                tm.call("math.add", input.clone(), CallOptions::new(Caller::InApp))
                    .await,
            );
        }
        for _ in 0..n {
            black_box(
                tm.call(
                    "math.add",
                    black_box(input.clone()),
                    CallOptions::new(Caller::InApp),
                )
                .await,
            );
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    // Warm-up: first-use costs (schema caches, lazy statics) stay out of the count.
    black_box(register(typed_specs(1)));
    match args.first().map(String::as_str) {
        Some("register") => {
            let specs = typed_specs(n);
            black_box(register(specs));
        }
        Some("specs") => {
            black_box(typed_specs(n));
        }
        Some("call") => calls(n, &json!({"a": 2, "b": 40})),
        Some("invalid") => calls(n, &json!({"a": "two", "b": 40})),
        // `cargo bench` runs every bench target: nothing to do without a workload.
        _ => eprintln!("usage: counts register|specs|call|invalid [N]"),
    }
}
