//! [`ConfirmQueue`]: an inline confirmation path a UI renders from.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::policy::Answer;
use super::{ConfirmHandler, ConfirmRequest, Decision};
use crate::sync::lock;
use crate::{Refusal, RefusalCode};

/// A list of open inline confirmations that the app renders and answers.
///
/// Give [`handler`](Self::handler) to the builder's `confirm_handler`; render
/// [`pending`](Self::pending) (re-render whenever [`subscribe`](Self::subscribe)
/// changes) and call [`approve`](Self::approve) / [`reject`](Self::reject).
///
/// ```
/// use toolmark::{ConfirmQueue, Toolmark};
///
/// let queue = ConfirmQueue::new();
/// let tm = Toolmark::builder().confirm_handler(queue.handler()).build().unwrap();
/// let mut updates = queue.subscribe();
/// // In the UI: on `updates.changed()`, render `queue.pending()`; on a click,
/// // `queue.approve(&id, None)` or `queue.reject(&id)`.
/// # let _ = (tm, updates.borrow_and_update());
/// ```
#[derive(Clone)]
pub struct ConfirmQueue {
    inner: Arc<QueueInner>,
}

struct QueueInner {
    entries: Mutex<Vec<QueueEntry>>,
    tx: watch::Sender<Vec<ConfirmRequest>>,
    seq: AtomicU64,
}

struct QueueEntry {
    seq: u64,
    request: ConfirmRequest,
    answer: oneshot::Sender<Answer>,
}

impl QueueInner {
    fn publish(&self, entries: &[QueueEntry]) {
        let list: Vec<ConfirmRequest> = entries.iter().map(|e| e.request.clone()).collect();
        self.tx.send_replace(list);
    }

    fn answer(&self, id: &str, decision: Answer) -> Result<(), Refusal> {
        let mut entries = lock(&self.entries);
        let Some(pos) = entries.iter().position(|e| e.request.confirm_id == id) else {
            return Err(Refusal::new(
                RefusalCode::ConfirmationExpired,
                "No open confirmation has this id: it was answered, expired or withdrawn",
            ));
        };
        let entry = entries.remove(pos);
        self.publish(&entries);
        drop(entries);
        entry.answer.send(decision).map_err(|_| {
            Refusal::new(
                RefusalCode::ConfirmationExpired,
                "The call stopped waiting for this confirmation",
            )
        })
    }

    fn remove_seq(&self, seq: u64) {
        let mut entries = lock(&self.entries);
        if let Some(pos) = entries.iter().position(|e| e.seq == seq) {
            entries.remove(pos);
            self.publish(&entries);
        }
    }
}

impl ConfirmQueue {
    /// An empty queue.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(Vec::new());
        ConfirmQueue {
            inner: Arc::new(QueueInner {
                entries: Mutex::new(Vec::new()),
                tx,
                seq: AtomicU64::new(0),
            }),
        }
    }

    /// The confirm handler to give the builder: each request waits in this queue
    /// until answered (or until the call stops waiting: expiry, cancellation).
    pub fn handler(&self) -> QueueHandler {
        QueueHandler {
            inner: Arc::clone(&self.inner),
        }
    }

    /// The open requests, oldest first (redacted).
    pub fn pending(&self) -> Vec<ConfirmRequest> {
        self.inner.tx.borrow().clone()
    }

    /// Approve `id`, optionally with an edited input (re-validated; an invalid edit
    /// puts the request back with its issues). `Err(confirmation_expired)` when no
    /// open request has this id.
    pub fn approve(&self, id: &str, input: Option<Value>) -> Result<(), Refusal> {
        self.inner.answer(
            id,
            Decision {
                approved: true,
                input,
                reason: None,
            }
            .into(),
        )
    }

    /// Reject `id`.
    pub fn reject(&self, id: &str) -> Result<(), Refusal> {
        self.inner.answer(id, Decision::reject().into())
    }

    /// Reject `id` with a reason the agent will see.
    pub fn reject_with(&self, id: &str, reason: impl Into<String>) -> Result<(), Refusal> {
        self.inner.answer(id, Decision::reject_with(reason).into())
    }

    /// Answer `id` with a decision that may say who made it and whether to
    /// remember it (`Decision::approve().by("user-42")`, see
    /// [`policy`](crate::policy)). `Err(confirmation_expired)` when no open request
    /// has this id.
    pub fn answer(&self, id: &str, answer: impl Into<Answer>) -> Result<(), Refusal> {
        self.inner.answer(id, answer.into())
    }

    /// A `watch` of the open requests, for a UI to re-render from.
    pub fn subscribe(&self) -> watch::Receiver<Vec<ConfirmRequest>> {
        self.inner.tx.subscribe()
    }
}

impl Default for ConfirmQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ConfirmQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfirmQueue")
            .field("pending", &self.inner.tx.borrow().len())
            .finish()
    }
}

/// The [`ConfirmHandler`] of a [`ConfirmQueue`].
#[derive(Clone)]
pub struct QueueHandler {
    inner: Arc<QueueInner>,
}

impl fmt::Debug for QueueHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueHandler")
    }
}

/// Removes the queue entry when the waiting call stops waiting.
struct EntryGuard {
    inner: Arc<QueueInner>,
    seq: u64,
}

impl Drop for EntryGuard {
    fn drop(&mut self) {
        self.inner.remove_seq(self.seq);
    }
}

impl ConfirmHandler for QueueHandler {
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision> {
        let answer = self.answer(request);
        Box::pin(async move { answer.await.into_parts().0 })
    }

    fn answer(&self, request: ConfirmRequest) -> BoxFuture<'static, Answer> {
        let inner = Arc::clone(&self.inner);
        let seq = inner.seq.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut entries = lock(&inner.entries);
            // Asked again for the same id (after an invalid edit): replace it.
            entries.retain(|e| e.request.confirm_id != request.confirm_id);
            entries.push(QueueEntry {
                seq,
                request,
                answer: tx,
            });
            inner.publish(&entries);
        }
        let guard = EntryGuard { inner, seq };
        Box::pin(async move {
            let answer = rx.await.unwrap_or_else(|_| Decision::reject().into());
            drop(guard);
            answer
        })
    }
}
