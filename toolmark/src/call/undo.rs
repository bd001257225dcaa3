//! Undo: restorers registered by runs with [`ToolContext::on_undo`](crate::ToolContext::on_undo),
//! run newest first by [`Toolmark::undo`].
//!
//! A restorer runs in the queue of the scope whose tool registered it, as caller
//! human with no signal, so the no-signal deadline (`call_timeout`, then the abort
//! grace) applies: a hung restorer cannot hold its queue. The stack keeps at most
//! `undo_limit` restorers (default 100; the oldest are dropped); restorers of a
//! disposed scope are dropped with it.

use std::sync::Arc;

use serde_json::Value;

use crate::call::context::{CallShared, Deadline, Origin, Restorer, Signal};
use crate::call::finish;
use crate::scope::ScopeNode;
use crate::sensitive::SecretSet;
use crate::sync::lock;
use crate::toolmark::Inner;
use crate::tools::registry::ToolEntry;
use crate::{Caller, Outcome, RefusalCode, Toolmark};

pub(crate) struct UndoEntry {
    pub(crate) scope: Arc<ScopeNode>,
    pub(crate) tool: Arc<str>,
    pub(crate) restorer: Restorer,
}

impl Inner {
    pub(crate) fn push_undo(&self, entry: &ToolEntry, restorer: Restorer) {
        if self.config.undo_limit == 0 || entry.scope.is_disposed() {
            return;
        }
        let mut stack = lock(&self.undo);
        stack.push_back(UndoEntry {
            scope: Arc::clone(&entry.scope),
            tool: Arc::clone(&entry.name),
            restorer,
        });
        while stack.len() > self.config.undo_limit {
            stack.pop_front();
        }
    }
}

impl Toolmark {
    /// Run the newest undo restorer. `None` when there is nothing to undo;
    /// otherwise its outcome (`ok` with `null` output, `error`, or `cancelled`
    /// when it ran past the deadline).
    pub async fn undo(&self) -> Option<Outcome> {
        let entry = lock(&self.inner.undo).pop_back()?;
        Some(self.inner.run_restorer(entry).await)
    }

    /// How many restorers wait on the undo stack.
    pub fn undo_depth(&self) -> usize {
        lock(&self.inner.undo).len()
    }
}

impl Inner {
    async fn run_restorer(self: &Arc<Self>, undo: UndoEntry) -> Outcome {
        let node = &undo.scope;
        if node.is_disposed() {
            return Outcome::refused(
                RefusalCode::ScopeDisposed,
                format!("Scope `{}` was disposed; its undo is gone", node.path),
            );
        }
        let _permit = tokio::select! {
            biased;
            () = node.dispose_token.cancelled() => {
                return Outcome::refused(RefusalCode::ScopeDisposed, "The scope was disposed before the undo ran");
            }
            permit = node.queue.acquire() => permit,
        };
        let shared = CallShared {
            caller: Caller::Human,
            origin: Origin::Undo {
                inner: Arc::clone(self),
                tool: Arc::clone(&undo.tool),
            },
            signal: Signal::new(None),
            input: Value::Null,
            deadline: Deadline::new(Some(self.config.call_timeout)),
            progress: None,
            reach: None,
        };
        let restorer = undo.restorer;
        let fut = async move { restorer().await.map(|()| Value::Null) };
        let end = self.run_guarded(node, &shared, None, None, fut).await;
        finish(end, &SecretSet::none()).into_inner()
    }
}
