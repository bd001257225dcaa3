//! Observability: the [`Event`] broadcast and the confirmation [`Bridge`].
//!
//! [`Toolmark::events`](crate::Toolmark::events) is a `tokio::sync::broadcast`: a
//! subscriber that falls more than its capacity behind loses the oldest events (its
//! next `recv` says how many). Every event is also emitted through `tracing`, target
//! `toolmark`. No event carries an unredacted sensitive value: events name the tool,
//! the caller, the status and the duration; input appears only redacted.
//!
//! [`Toolmark::bridge`](crate::Toolmark::bridge) never drops: each subscriber gets
//! every [`BridgeMessage`] sent after it subscribed, in order.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use serde::{Serialize, Serializer};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

pub use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::policy::{Approver, For};
use crate::sync::lock;
use crate::{Caller, ConfirmMode, Outcome, RefusalCode};

fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Something that happened in a [`Toolmark`](crate::Toolmark).
///
/// JSON: `{"type":"call_finished","tool":"…","caller":"inapp","status":"ok","durationMs":0.8}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Event {
    /// A tool was registered.
    ToolRegistered {
        /// Full name.
        tool: String,
    },
    /// A tool was unregistered (its scope was disposed).
    ToolUnregistered {
        /// Full name.
        tool: String,
    },
    /// What some caller's manifest shows changed (a tool came or went, a scope was
    /// shown or hidden).
    ManifestChanged,
    /// A call began to run (after validation, confirmation and queueing).
    CallStarted {
        /// Full name.
        tool: String,
        /// Who called.
        caller: Caller,
    },
    /// A call finished, whatever its outcome.
    CallFinished {
        /// Full name.
        tool: String,
        /// Who called.
        caller: Caller,
        /// `ok`, `needs_confirmation`, `refused` or `error`.
        status: &'static str,
        /// The refusal code of a refused call.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<RefusalCode>,
        /// From the call to its outcome.
        #[serde(rename = "durationMs", serialize_with = "millis")]
        duration: Duration,
    },
    /// A confirmation was requested (deferred or inline).
    ConfirmationRequested {
        /// The confirmation id.
        confirm_id: String,
        /// Full name.
        tool: String,
        /// Who called.
        caller: Caller,
        /// Deferred or inline.
        mode: ConfirmMode,
        /// The summary shown to the user.
        summary: String,
        /// The input, redacted.
        input: Value,
        /// When it expires.
        #[serde(with = "crate::clock::rfc3339")]
        expires_at: SystemTime,
    },
    /// A confirmation was answered: by an approver, by a policy rule or by a
    /// remembered decision (those two have no `confirmation_requested` before
    /// them, and their `confirm_id` is fresh). The audit trail of approvals.
    ConfirmationResolved {
        /// The confirmation id.
        confirm_id: String,
        /// Full name.
        tool: String,
        /// Approved or rejected.
        approved: bool,
        /// The paths the approver edited (paths only, never values).
        edited_paths: Vec<String>,
        /// The approver's reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Who decided (see [`policy`](crate::policy)).
        approver: Approver,
    },
    /// A decision was remembered ([`Answer::remember`](crate::policy::Answer::remember)):
    /// later calls of the tool by the caller are answered by it.
    DecisionRemembered {
        /// Its id (see [`Toolmark::remembered`](crate::Toolmark::remembered)).
        remember_id: String,
        /// Full name.
        tool: String,
        /// The caller it answers for.
        caller: Caller,
        /// Session or always.
        duration: For,
        /// Approve or reject.
        approved: bool,
    },
    /// A confirmation expired (by the clock or because `max_pending` was exceeded).
    ConfirmationExpired {
        /// The confirmation id.
        confirm_id: String,
        /// Full name.
        tool: String,
    },
    /// A confirmation was pushed out by a cap before it was answered (it then
    /// expires like any other: a `confirmation_expired` event and, for a deferred
    /// one, a bridge message follow).
    ConfirmationEvicted {
        /// The confirmation id.
        confirm_id: String,
        /// Full name.
        tool: String,
        /// Who had asked for it.
        caller: Caller,
        /// Which cap: `"max_pending_per_caller"` (a caller beyond its bound or
        /// share lost its own oldest) or `"max_pending"` (the oldest of all).
        reason: &'static str,
    },
    /// A confirmation was dropped without an answer: its scope was disposed, it was
    /// withdrawn with `cancel_pending`, or the toolmark shut down.
    ConfirmationDropped {
        /// The confirmation id.
        confirm_id: String,
        /// Full name.
        tool: String,
        /// `scope_disposed`, `cancelled` or `shutdown`.
        reason: &'static str,
    },
    /// Development: a guarded tool is hidden from inline-mode callers that have no
    /// confirm handler.
    MissingConfirmHandler {
        /// Full name.
        tool: String,
        /// The callers that do not see the tool.
        callers: Vec<Caller>,
    },
    /// Development: `ctx.confirm` was called where no confirmation is possible.
    CtxConfirmUnavailable {
        /// Full name.
        tool: String,
        /// Who called.
        caller: Caller,
    },
    /// Development: a tool ignored its aborted signal past the grace period and was
    /// abandoned.
    ToolAbandoned {
        /// Full name.
        tool: String,
        /// Who called.
        caller: Caller,
    },
    /// A sync tool's run was abandoned (its call ended, cancelled) while its thread
    /// still runs it; the thread is left to finish on its own. While
    /// `max_abandoned_sync_runs` such runs are outstanding, calls of sync tools are
    /// refused `busy`.
    SyncRunAbandoned {
        /// Full name.
        tool: String,
        /// Abandoned sync runs of this toolmark still on a thread, this one included.
        abandoned: usize,
    },
    /// A shared scope's state could not go through the confirmation store
    /// ([`ToolmarkBuilder::share_scope`](crate::ToolmarkBuilder::share_scope)).
    /// This instance keeps its last known states and its own changes, and sends
    /// them once the store answers.
    ScopeSyncFailed {
        /// The scope whose change here did not reach the other instances, or
        /// `None` when reading theirs failed (reported once per outage).
        scope: Option<String>,
        /// What failed.
        reason: String,
    },
}

impl Event {
    /// The event's type, as serialized (`"call_finished"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::ToolRegistered { .. } => "tool_registered",
            Event::ToolUnregistered { .. } => "tool_unregistered",
            Event::ManifestChanged => "manifest_changed",
            Event::CallStarted { .. } => "call_started",
            Event::CallFinished { .. } => "call_finished",
            Event::ConfirmationRequested { .. } => "confirmation_requested",
            Event::ConfirmationResolved { .. } => "confirmation_resolved",
            Event::DecisionRemembered { .. } => "decision_remembered",
            Event::ConfirmationExpired { .. } => "confirmation_expired",
            Event::ConfirmationDropped { .. } => "confirmation_dropped",
            Event::ConfirmationEvicted { .. } => "confirmation_evicted",
            Event::MissingConfirmHandler { .. } => "missing_confirm_handler",
            Event::CtxConfirmUnavailable { .. } => "ctx_confirm_unavailable",
            Event::ToolAbandoned { .. } => "tool_abandoned",
            Event::SyncRunAbandoned { .. } => "sync_run_abandoned",
            Event::ScopeSyncFailed { .. } => "scope_sync_failed",
        }
    }

    /// Whether this is a development event (on in debug builds, switchable with
    /// [`ToolmarkBuilder::dev_events`](crate::ToolmarkBuilder::dev_events)).
    pub fn is_development(&self) -> bool {
        matches!(
            self,
            Event::MissingConfirmHandler { .. }
                | Event::CtxConfirmUnavailable { .. }
                | Event::ToolAbandoned { .. }
        )
    }

    pub(crate) fn trace(&self) {
        match self {
            Event::CallStarted { .. } | Event::CallFinished { .. } => {
                tracing::debug!(target: "toolmark", kind = self.kind(), event = ?self);
            }
            _ if self.is_development() => {
                tracing::warn!(target: "toolmark", kind = self.kind(), event = ?self);
            }
            _ => tracing::info!(target: "toolmark", kind = self.kind(), event = ?self),
        }
    }
}

/// A message to the in-app agent about a deferred confirmation it started.
///
/// JSON: `{"type":"confirmed","confirmId":"…","tool":"…","outcome":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum BridgeMessage {
    /// The confirmation was resolved: approved (the outcome of the run as caller
    /// human), rejected (`rejected` with the reason), expired
    /// (`confirmation_expired`), stale, or dropped (`scope_disposed`, `cancelled`).
    Confirmed {
        /// The confirmation id.
        confirm_id: String,
        /// The tool's full name.
        tool: String,
        /// What came of it.
        outcome: Outcome,
    },
    /// This subscriber fell more than the bridge capacity behind (see
    /// [`ToolmarkBuilder::bridge_capacity`](crate::ToolmarkBuilder::bridge_capacity)):
    /// the `missed` messages after the ones already received were dropped for it.
    /// Re-read [`Toolmark::pending_confirmations`](crate::Toolmark::pending_confirmations)
    /// to catch up. JSON: `{"type":"lagged","missed":3}`.
    Lagged {
        /// How many messages were dropped.
        missed: u64,
    },
}

/// The sending side of one bridge subscription: a bounded queue and, once it was
/// full, how many messages were dropped since.
#[derive(Debug)]
pub(crate) struct BridgeSender {
    tx: mpsc::Sender<BridgeMessage>,
    lag: Arc<Mutex<Lag>>,
}

/// Dropped messages of one subscriber. While `missed > 0` every new message is
/// dropped too, so the subscriber sees: what it had, one `Lagged`, then what came
/// after it caught up — in order.
#[derive(Debug, Default)]
struct Lag {
    missed: u64,
}

/// A new bridge subscription holding at most `capacity` waiting messages.
pub(crate) fn bridge_channel(capacity: usize) -> (BridgeSender, Bridge) {
    let (tx, rx) = mpsc::channel(capacity);
    let lag = Arc::new(Mutex::new(Lag::default()));
    (
        BridgeSender {
            tx,
            lag: Arc::clone(&lag),
        },
        Bridge { rx, lag },
    )
}

impl BridgeSender {
    /// Queue `msg` (or count it as missed); `false` once the subscriber is gone.
    pub(crate) fn send(&self, msg: BridgeMessage) -> bool {
        let mut lag = lock(&self.lag);
        if lag.missed > 0 {
            lag.missed += 1;
            return !self.tx.is_closed();
        }
        match self.tx.try_send(msg) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                lag.missed = 1;
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// A subscription to the bridge: every [`BridgeMessage`] after subscribing, in
/// order. Also a `futures_core::Stream`.
///
/// A subscriber holds at most the bridge capacity (default 1024) of unread
/// messages; one that falls further behind gets, after the messages it had, one
/// [`BridgeMessage::Lagged`] saying how many it missed, then the messages that
/// come after it caught up. A subscriber that keeps up loses nothing.
#[derive(Debug)]
pub struct Bridge {
    rx: mpsc::Receiver<BridgeMessage>,
    lag: Arc<Mutex<Lag>>,
}

impl Bridge {
    /// The next message; `None` once the toolmark is gone.
    pub async fn recv(&mut self) -> Option<BridgeMessage> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    /// The next message if one is waiting.
    pub fn try_recv(&mut self) -> Option<BridgeMessage> {
        match self.rx.try_recv() {
            Ok(msg) => Some(msg),
            Err(_) => self.take_lagged(),
        }
    }

    /// Once the queue is empty: the `Lagged` message for what was dropped, if any
    /// (which also ends the lag, so new messages queue again).
    fn take_lagged(&self) -> Option<BridgeMessage> {
        let mut lag = lock(&self.lag);
        (lag.missed > 0).then(|| BridgeMessage::Lagged {
            missed: std::mem::take(&mut lag.missed),
        })
    }

    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<BridgeMessage>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(msg)) => Poll::Ready(Some(msg)),
            Poll::Ready(None) => Poll::Ready(self.take_lagged()),
            Poll::Pending => match self.take_lagged() {
                Some(msg) => Poll::Ready(Some(msg)),
                None => Poll::Pending,
            },
        }
    }
}

impl futures_core::Stream for Bridge {
    type Item = BridgeMessage;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<BridgeMessage>> {
        self.poll_message(cx)
    }
}

/// A subscription to [`Event`]s, from [`Toolmark::events`](crate::Toolmark::events).
///
/// A broadcast: a subscriber more than the capacity (default 1024) behind loses the
/// oldest events, and its next `recv` returns [`RecvError::Lagged`] with how many.
/// While no subscription exists (and no `tracing` subscriber is installed), events
/// are not even built.
#[derive(Debug)]
pub struct Events {
    rx: broadcast::Receiver<Event>,
    _counted: Subscribed,
}

#[derive(Debug)]
struct Subscribed(Arc<AtomicUsize>);

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Events {
    pub(crate) fn new(rx: broadcast::Receiver<Event>, count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Events {
            rx,
            _counted: Subscribed(Arc::clone(count)),
        }
    }

    /// The next event; `Err(Lagged(n))` when `n` were lost, `Err(Closed)` once the
    /// toolmark is gone.
    pub async fn recv(&mut self) -> Result<Event, RecvError> {
        self.rx.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Result<Event, TryRecvError> {
        self.rx.try_recv()
    }

    /// A new subscription starting from now.
    pub fn resubscribe(&self) -> Events {
        Events::new(self.rx.resubscribe(), &self._counted.0)
    }
}
