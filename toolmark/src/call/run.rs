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
    /// A restorer's run (undo). A call's run takes the same two steps,
    /// [`first_poll`] then [`run_on`](Self::run_on), inside `run_call`'s own
    /// future: one nested future fewer per call.
    ///
    /// A fn returning an `async` block (an `async fn` would keep a second copy of
    /// its arguments).
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
            let mut fut = std::pin::pin!(fut);
            let limit = shared.deadline.limit();
            let t0 = match std::future::poll_fn(|cx| {
                Poll::Ready(first_poll(&mut marker, limit, fut.as_mut(), cx))
            })
            .await
            {
                Polled::Ended(end) => return end,
                Polled::Pending(t0) => t0,
            };
            Box::pin(self.run_on(node, shared, signal, t0, &mut marker, fut.as_mut())).await
        }
    }

    /// A run that pended on its [first poll](first_poll), polled on under its
    /// deadline, the caller's signal, disposal and shutdown (boxed by its callers:
    /// only a run that does not finish at once pays for it). `t0` is when the first
    /// poll began, on the coarse clock (`None`: no deadline).
    pub(super) async fn run_on<F>(
        &self,
        node: &ScopeNode,
        shared: &CallShared,
        signal: Option<&CancellationToken>,
        t0: Option<u64>,
        marker: &mut RunMarker,
        fut: std::pin::Pin<&mut F>,
    ) -> RunEnd
    where
        F: Future<Output = Result<Value, ToolError>> + Send,
    {
        // The deadline counts from before the first poll: time a blocking first
        // poll took counts against it.
        let started = t0.map(|t0| Instant::now() - first_poll_took(t0));
        let mut caught = std::pin::pin!(AssertUnwindSafe(fut).catch_unwind());
        let marked = Marked {
            marker,
            fut: caught.as_mut(),
        };
        self.run_slow(node, shared, signal, started, marked).await
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

/// How a run's first poll went.
pub(crate) enum Polled {
    /// It finished (or panicked, or its poll ran past the deadline): no timer needed.
    Ended(RunEnd),
    /// It pends: poll it on with [`Inner::run_on`], from `t0` (the first poll's
    /// start on the coarse clock; `None` without a deadline).
    Pending(Option<u64>),
}

/// A run's first poll, synchronous: `marker` current around it, a panic caught.
///
/// A result that arrives after the deadline (a tool that blocked its thread) is
/// `cancelled`, as in the slow path. The poll is timed on the coarse monotonic
/// clock (a few ns a read, no lock): reading tokio's clock twice per call cost more
/// than the rest of the run. It only has to tell a poll that blocked past a
/// deadline of seconds from one that did not.
#[inline]
pub(crate) fn first_poll<F>(
    marker: &mut RunMarker,
    limit: Option<Duration>,
    fut: std::pin::Pin<&mut F>,
    cx: &mut std::task::Context<'_>,
) -> Polled
where
    F: Future<Output = Result<Value, ToolError>>,
{
    let t0 = limit.map(|_| coarsetime::Instant::now_without_cache_update().as_ticks());
    let polled = {
        let _entered = marker.enter();
        std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx)))
    };
    let r = match polled {
        Ok(Poll::Pending) => return Polled::Pending(t0),
        Ok(Poll::Ready(done)) => Ok(done),
        Err(payload) => Err(payload),
    };
    if let (Some(limit), Some(t0)) = (limit, t0) {
        // Compared in ticks: the conversion is paid only by a poll that took longer
        // than a tick.
        let ticks = coarsetime::Instant::now_without_cache_update()
            .as_ticks()
            .saturating_sub(t0);
        if (ticks > COARSE_TICK_TICKS || limit.is_zero()) && first_poll_took(t0) >= limit {
            return Polled::Ended(RunEnd::Aborted(Abort::Deadline));
        }
    }
    Polled::Ended(RunEnd::from_result(r))
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
