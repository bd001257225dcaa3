//! Steps 6–7 of a call: running a tool's future under its deadline, the caller's
//! signal, disposal and shutdown (abort → grace → abandon), and turning how the run
//! ended into an [`Outcome`]. Shared by calls, approved confirmations and undo.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use tokio::time::Instant;

use super::context::CallShared;
use super::current::RunMarker;
use super::sync_run::SyncBusy;
use crate::event::Event;
use crate::scope::ScopeNode;
use crate::sensitive::{Observed, SecretSet};
use crate::toolmark::Inner;
use crate::{Outcome, RefusalCode, ToolError};

/// More than the coarse monotonic clock's tick (a few ms on Linux).
const COARSE_TICK: Duration = Duration::from_millis(10);
/// `COARSE_TICK` in the coarse clock's ticks (2^32 a second).
const COARSE_TICK_TICKS: u64 = (1 << 32) / 100;

impl Inner {
    /// Run `fut` under the call's deadline, the caller's signal, disposal and
    /// shutdown; an aborted run gets the abort grace, then is abandoned (dropped).
    ///
    /// The deadline decides: a result that arrives after it (a tool that blocked
    /// its thread) is `cancelled`, on the first poll as in the slow path. The run's
    /// marker is current around each poll (`secrets`: the call's sensitive values,
    /// for the panic hook).
    ///
    /// A fn returning an `async` block (an `async fn` would keep a second copy of
    /// its arguments): this future is part of every call's.
    // Not an `async fn`: see above (its arguments would be kept twice).
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn run_guarded<'a, F>(
        &'a self,
        node: &'a ScopeNode,
        shared: &'a CallShared,
        signal: Option<&'a CancellationToken>,
        secrets: Option<Arc<[String]>>,
        fut: F,
    ) -> impl Future<Output = RunEnd> + Send + 'a
    where
        F: Future<Output = Result<Value, ToolError>> + Send + 'a,
    {
        async move {
            let mut marker =
                RunMarker::new(Some(node), secrets.filter(|_| self.config.scrub_panics));
            let mut fut = std::pin::pin!(AssertUnwindSafe(fut).catch_unwind());
            let limit = shared.deadline.limit();
            // The first poll is timed on the coarse monotonic clock (a few ns a read,
            // no lock): reading tokio's clock twice per call cost more than the rest
            // of the run. It only has to tell a poll that blocked past a deadline of
            // seconds from one that did not.
            let t0 = limit.map(|_| coarsetime::Instant::now_without_cache_update().as_ticks());
            // Fast path: a tool that finishes on its first poll needs no timer. (The
            // poll's result is not kept across the slow path's await.)
            if let Poll::Ready(r) = std::future::poll_fn(|cx| {
                let _entered = marker.enter();
                Poll::Ready(fut.as_mut().poll(cx))
            })
            .await
            {
                if let (Some(limit), Some(t0)) = (limit, t0) {
                    // Compared in ticks: the conversion is paid only by a poll that
                    // took longer than a tick.
                    let ticks = coarsetime::Instant::now_without_cache_update()
                        .as_ticks()
                        .saturating_sub(t0);
                    if (ticks > COARSE_TICK_TICKS || limit.is_zero())
                        && first_poll_took(t0) >= limit
                    {
                        return RunEnd::Aborted(Abort::Deadline);
                    }
                }
                return RunEnd::from_result(r);
            }
            let marked = Marked {
                marker: &mut marker,
                fut: fut.as_mut(),
            };
            // The deadline counts from before the first poll: time a blocking first
            // poll took counts against it.
            let started = t0.map(|t0| Instant::now() - first_poll_took(t0));
            Box::pin(self.run_slow(node, shared, signal, started, marked)).await
        }
    }

    pub(super) async fn run_slow<F>(
        &self,
        node: &ScopeNode,
        shared: &CallShared,
        signal: Option<&CancellationToken>,
        started: Option<Instant>,
        fut: F,
    ) -> RunEnd
    where
        F: Future<Output = Result<Result<Value, ToolError>, Box<dyn Any + Send>>> + Send,
    {
        let mut fut = std::pin::pin!(fut);
        shared.deadline.start_at(started);
        let aborted = || {
            if signal.is_some_and(CancellationToken::is_cancelled) {
                Some(Abort::Signal)
            } else if node.is_disposed() {
                Some(Abort::Disposed)
            } else if self.is_shut_down() {
                Some(Abort::Shutdown)
            } else if shared.deadline.is_past() {
                Some(Abort::Deadline)
            } else {
                None
            }
        };
        let why = tokio::select! {
            biased;
            r = &mut fut => {
                // Aborted (or past the deadline) before the result was seen:
                // cancelled, whatever it returned.
                return match aborted() {
                    Some(why) => RunEnd::Aborted(why),
                    None => RunEnd::from_result(r),
                };
            }
            () = shared.deadline.expired() => Abort::Deadline,
            () = maybe_cancelled(signal) => Abort::Signal,
            () = node.dispose_token.cancelled() => Abort::Disposed,
            () = self.shutdown.cancelled() => Abort::Shutdown,
        };
        shared.signal.cancel();
        tokio::select! {
            biased;
            _ = &mut fut => {}
            () = tokio::time::sleep(self.config.abort_grace) => {
                self.emit(|| Event::ToolAbandoned {
                    tool: shared.tool().to_owned(),
                    caller: shared.caller,
                });
            }
        }
        RunEnd::Aborted(why)
    }
}

/// How long the first poll took, by the coarse clock from `t0` (its ticks). The
/// coarse clock ticks every few ms, so a poll of a microsecond can read as one
/// tick: less than `COARSE_TICK` counts as no time at all.
fn first_poll_took(t0: u64) -> Duration {
    let ticks = coarsetime::Instant::now_without_cache_update()
        .as_ticks()
        .saturating_sub(t0);
    Duration::from(coarsetime::Duration::from_ticks(ticks)).saturating_sub(COARSE_TICK)
}

/// A run's future with its marker made current around each poll.
pub(super) struct Marked<'m, F> {
    pub(super) marker: &'m mut RunMarker,
    pub(super) fut: std::pin::Pin<&'m mut F>,
}

impl<F: Future> Future for Marked<'_, F> {
    type Output = F::Output;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _entered = this.marker.enter();
        this.fut.as_mut().poll(cx)
    }
}

pub(crate) async fn maybe_cancelled(signal: Option<&CancellationToken>) {
    match signal {
        Some(s) => s.cancelled().await,
        None => std::future::pending().await,
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Abort {
    Deadline,
    Signal,
    Disposed,
    Shutdown,
}

pub(crate) enum RunEnd {
    Done(Result<Value, ToolError>),
    Panicked(String),
    Aborted(Abort),
    /// Refused before the tool's body ran (too many abandoned sync runs).
    Busy(String),
}

impl RunEnd {
    #[inline]
    fn from_result(r: Result<Result<Value, ToolError>, Box<dyn Any + Send>>) -> Self {
        match r {
            Ok(done) => RunEnd::Done(done),
            Err(payload) => match payload.downcast::<SyncBusy>() {
                Ok(busy) => RunEnd::Busy(busy.0),
                Err(payload) => RunEnd::Panicked(panic_message(payload.as_ref())),
            },
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Turn how a run ended into its outcome, fit for every observer: output, error and
/// panic messages go through the call's secret set (the one way out).
pub(crate) fn finish(end: RunEnd, set: &SecretSet) -> Observed<Outcome> {
    let outcome = match end {
        RunEnd::Done(Ok(output)) => Outcome::Ok { output },
        RunEnd::Busy(message) => Outcome::refused(RefusalCode::Busy, message),
        RunEnd::Done(Err(e)) => Outcome::Error(e),
        RunEnd::Panicked(msg) => {
            Outcome::Error(ToolError::new(format!("the tool panicked: {msg}")))
        }
        RunEnd::Aborted(why) => {
            let message = match why {
                Abort::Deadline => "The call ran past its deadline and was cancelled",
                Abort::Signal => "The caller cancelled the call",
                Abort::Disposed => "The tool's scope was disposed while the call ran",
                Abort::Shutdown => "The app shut down while the call ran",
            };
            return Observed::fixed(RefusalCode::Cancelled, message);
        }
    };
    set.outcome(outcome)
}
