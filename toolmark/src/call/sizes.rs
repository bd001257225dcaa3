//! The sizes of a call's future and of what it holds, in bytes: whoever awaits
//! `tm.call` (a spawned task's cell, an adapter's future) holds it whole, so its size
//! is memory per call in flight. Read by the `counts` bench's `sizes` workload (the
//! bench profile's figures) and checked by this module's test.

use std::panic::AssertUnwindSafe;
use std::pin::pin;

use futures_util::FutureExt;
use serde_json::Value;

use super::context::{CallShared, Deadline, Signal};
use super::run::{Marked, RunEnd};
use super::{prepare, CallOptions, Front, Held, Stops, ToolFuture};
use crate::call::current::RunMarker;
use crate::sensitive::{Observed, SecretSet};
use crate::{Caller, Outcome, Refusal, Toolmark};

/// The sizes of a call of the tool `name` with `input` (a valid input of a tool
/// that builds its run in one step, such as a `#[tool]` fn or a
/// `ToolSpec::typed` tool): `tm.call`'s future, then what it holds, one line each.
/// `None` when there is no such tool or the input does not decode.
pub(crate) fn call_sizes(
    tm: &Toolmark,
    name: &str,
    input: &Value,
) -> Option<Vec<(&'static str, usize)>> {
    use std::mem::{size_of, size_of_val};
    let inner = &tm.inner;
    let entry = inner.lookup(name)?;
    let node = &entry.scope;
    let opts = || CallOptions::new(Caller::InApp);
    let stops = Stops {
        inner,
        node,
        signal: None,
    };
    let tokens = stops.tokens();
    let mut sizes = vec![
        (
            "tm.call future",
            size_of_val(&tm.call(name, input.clone(), opts())),
        ),
        ("Outcome", size_of::<Outcome>()),
        ("Observed<Outcome>", size_of::<Observed<Outcome>>()),
        ("Refusal", size_of::<Refusal>()),
        ("Value", size_of::<Value>()),
        ("Front", size_of::<Front>()),
        ("CallOptions", size_of::<CallOptions>()),
        ("CallShared", size_of::<CallShared>()),
        ("Deadline", size_of::<Deadline>()),
        ("Signal", size_of::<Signal>()),
        ("Held", size_of::<Held>()),
        ("LocalCall", size_of::<super::LocalCall>()),
        ("SecretSet", size_of::<SecretSet>()),
        ("RunEnd", size_of::<RunEnd>()),
        ("ToolFuture (RUN_INLINE = 96)", size_of::<ToolFuture>()),
        (
            "acquire_slow future (boxed)",
            size_of_val(&inner.acquire_slow(node, None)),
        ),
        (
            "gate wait future",
            size_of_val(&node.queue.acquire_until(&tokens, stops)),
        ),
        (
            "queue wait (no signal, inline)",
            size_of_val(&super::QueueWait::new(inner, node)),
        ),
    ];
    let mut kept = input.clone();
    let held = inner.hold(
        std::sync::Arc::clone(&entry),
        Caller::InApp,
        None,
        None,
        None,
        &mut kept,
    );
    let mut run = pin!(prepare(&held, false).ok()?);
    sizes.push((
        "run_call future",
        size_of_val(&inner.run_call(&held, run.as_mut(), None, false, SecretSet::none())),
    ));
    // What a run's slow path reads (built there for a context-less tool).
    let mut built = None;
    let shared = held.full(None, held.limit(inner, None), &mut built);
    sizes.push((
        "run_guarded future",
        size_of_val(&inner.run_guarded(node, shared, None, None, run.as_mut())),
    ));
    let mut marker = RunMarker::new(Some(node), None);
    let mut caught = pin!(AssertUnwindSafe(run.as_mut()).catch_unwind());
    let marked = Marked {
        marker: &mut marker,
        fut: caught.as_mut(),
    };
    sizes.push((
        "run_slow future (boxed)",
        size_of_val(&inner.run_slow(node, shared, None, None, marked)),
    ));
    let decoded = (entry.decode)(input, true).ok()?;
    sizes.push((
        "confirm_and_run future (boxed: a slow call's run path)",
        size_of_val(&*inner.call_slow(
            Front::Run {
                entry: std::sync::Arc::clone(&entry),
                input: input.clone(),
                decoded,
                ask: None,
                set: SecretSet::none(),
            },
            opts(),
        )),
    ));
    let decoded = (entry.decode)(input, true).ok()?;
    sizes.push((
        "call_stored future (boxed: a call answered with a store)",
        size_of_val(&*inner.call_slow(
            Front::Store {
                entry: std::sync::Arc::clone(&entry),
                input: input.clone(),
                decoded,
                ask: plain_ask(),
                set: SecretSet::none(),
            },
            opts(),
        )),
    ));
    let decoded = (entry.decode)(input, true).ok()?;
    sizes.push((
        "inline_confirm future (boxed: a call waiting for its approval)",
        size_of_val(&crate::confirm::inline_confirm(
            inner,
            &entry,
            Caller::InApp,
            input.clone(),
            decoded,
            None,
            None,
            plain_ask(),
        )),
    ));
    Some(sizes)
}

/// The size of the future a call on a confirmation store boxes to keep a deferred
/// confirmation (`defer_stored`), for a tool `name` of `tm` (which has a store) and
/// a valid `input`. `None` without a store or such a tool.
/// The context of a call asked with no policy rule, by anyone, outside a session.
fn plain_ask() -> crate::confirm::policy::AskCtx {
    crate::confirm::policy::AskCtx {
        rule: None,
        person: false,
        session: None,
    }
}

#[cfg(test)]
fn defer_stored_size(tm: &Toolmark, name: &str, input: &Value) -> Option<usize> {
    let inner = &tm.inner;
    let shared = inner.shared.as_ref()?;
    let entry = inner.lookup(name)?;
    let decoded = (entry.decode)(input, true).ok()?;
    let set = SecretSet::none();
    let fut = crate::confirm::deferred::defer_stored(
        inner,
        shared,
        &entry,
        Caller::InApp,
        input.clone(),
        decoded,
        plain_ask(),
        &set,
    );
    Some(std::mem::size_of_val(&fut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolError, ToolSpec};

    #[test]
    fn a_stored_confirmations_box_fits_the_allocators_cache() {
        let tm = Toolmark::builder()
            .confirm_store(crate::store::MemoryStore::new())
            .build()
            .unwrap();
        tm.scope("math")
            .register(ToolSpec::typed("add", "Add", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(i.a + i.b)
            }))
            .unwrap();
        let size = defer_stored_size(&tm, "math.add", &serde_json::json!({"a": 2, "b": 40}))
            .expect("a toolmark with a store");
        // 1,464 bytes while it was an `async fn` (its arguments kept twice) and an
        // eviction's delivery was kept inline: past glibc's per-thread cache
        // (1,032 bytes), so every deferred call on a store took the allocator's
        // slow path for it.
        assert!(size <= 1032, "defer_stored's future grew to {size} bytes");
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }

    #[test]
    fn a_plain_calls_future_stays_small() {
        let tm = Toolmark::builder().build().unwrap();
        tm.scope("math")
            .register(ToolSpec::typed("add", "Add", |_ctx, i: Add| async move {
                Ok::<_, ToolError>(i.a + i.b)
            }))
            .unwrap();
        let sizes = call_sizes(&tm, "math.add", &serde_json::json!({"a": 2, "b": 40})).unwrap();
        for (what, bytes) in &sizes {
            println!("{what}: {bytes} bytes");
        }
        // Every call in flight holds this much (a spawned call is a task cell of
        // it): 1,224 bytes before the call's async fns became async blocks, 744
        // before the slot and the run's first poll were one synchronous step, 728
        // while a context-less run's state was a whole `CallShared`, 560 before the
        // run was written once into its pinned place (an `Option`'s 8 bytes for two
        // copies of the 112-byte run fewer), 568 before the rarely set options went
        // out of line and a context-less run's time limit was derived rather than
        // kept, 504 while the run's state held its own copy of the input (beside
        // the call's argument it was moved from, whose bytes an `async` block
        // keeps) and the run's locals lived across more than one await (rustc
        // keeps such a local, or a `match` scrutinee an await sits in, beside every
        // state). At 376, `benches/scopes.rs`'s spawned call (the call and a few
        // words) is a 512-byte task cell (tokio's cells are whole 128-byte lines),
        // not 640. The test and bench profiles lay it out alike (rustc 1.95).
        let call = sizes[0].1;
        assert!(call <= 376, "tm.call's future grew to {call} bytes");
        // What it holds on the plain path: the run's state and the run, inline.
        let size = |what: &str| sizes.iter().find(|(w, _)| *w == what).unwrap().1;
        assert!(
            call >= size("Held") + size("ToolFuture (RUN_INLINE = 96)") + size("run_call future")
        );
        // A call without a signal waits for its queue in its own future, allocating
        // nothing: that wait fits in the room the run's other states leave, so the
        // run's future is no larger for it than with a boxed wait.
        assert!(size("queue wait (no signal, inline)") <= 24);
        assert!(size("run_call future") <= 112);
        // The run's state borrows the input the call was given (kept in the call's
        // own future) instead of holding a copy.
        assert!(size("Held") <= 32);
        // A call past its front (a dynamic tool, an inline confirmation) boxes the
        // future of its own path only, small enough for the allocator's per-thread
        // cache (glibc's tcache serves up to 1,032 bytes; one future for every slow
        // path was 1,136 bytes and took the allocator's slow path on every call).
        assert!(size("confirm_and_run future (boxed: a slow call's run path)") <= 1032);
        assert!(size("call_stored future (boxed: a call answered with a store)") <= 1032);
        // So does a call waiting for an inline approval (1,376 bytes while its fn
        // and its handler's were `async fn`s, each keeping its arguments twice).
        assert!(size("inline_confirm future (boxed: a call waiting for its approval)") <= 1032);
    }
}
