//! A deferred confirmation asked for a call whose caller answers it in another
//! request, possibly on another instance: MCP's multi round-trip requests
//! (2026-07-28), URL-mode approval pages and tasks. A narrow crate-internal face
//! over the one deferred flow (`confirm/deferred.rs`: the built-in table, or the
//! toolmark's [`ConfirmStore`](crate::store::ConfirmStore) when one is set, every
//! record sealed there):
//!
//! - [`Toolmark::call_deferring`]: make the call; a guarded tool that needs the
//!   user's approval is kept as pending and answers `needs_confirmation` (id and
//!   expiry) whatever the caller's mode. Everything else (a policy's or a
//!   remembered decision, a refusal, a tool that needs no confirmation) is the
//!   call's outcome as usual.
//! - [`Toolmark::pending_by_id`]: what the approver is shown (redacted).
//! - [`Toolmark::answer_by`]: answer it once, by id, saying who answered. Nothing
//!   is remembered from such an answer: a client's word decides its own call only
//!   (whatever `client_session_decisions` says), and a person's answer on the
//!   app's page decides that confirmation only.
//! - [`Toolmark::sealer`]: the toolmark's one seal, for what these requests
//!   carry (a `requestState`, a page token, a task record): the same key and the
//!   same associated-data discipline as every stored record.

use futures_util::FutureExt;

use crate::confirm::policy::Approver;
use crate::store::{Sealer, StoreError};
use crate::{CallOptions, Decision, Outcome, PendingConfirmation, Toolmark};

impl Toolmark {
    /// [`call`](Toolmark::call), with any confirmation this call needs deferred.
    pub(crate) async fn call_deferring(
        &self,
        name: &str,
        input: serde_json::Value,
        mut options: CallOptions,
    ) -> Outcome {
        options.defer = true;
        let options = options.without_confirm_handler();
        self.call(name, input, options).await
    }

    /// The pending confirmation `id` as an approver sees it (input redacted), or
    /// `None` when it was used, expired, withdrawn or never existed.
    pub(crate) async fn pending_by_id(
        &self,
        id: &str,
    ) -> Result<Option<PendingConfirmation>, StoreError> {
        Ok(self
            .pending_confirmations_async()
            .await?
            .into_iter()
            .find(|p| p.confirm_id == id))
    }

    /// Answer the pending confirmation `id` as `approver` (single use: a second
    /// answer is `confirmation_expired`), through the one deferred flow. Never
    /// remembered.
    pub(crate) async fn answer_by(
        &self,
        id: &str,
        decision: Decision,
        approver: Approver,
    ) -> Outcome {
        let answer = super::deferred::answer(&self.inner, id, decision, &approver, None);
        // As with `confirm_pending`: nothing an app type does escapes (a panic while
        // dropping a held input is caught and logged).
        std::panic::AssertUnwindSafe(answer)
            .catch_unwind()
            .await
            .map(crate::sensitive::Observed::into_inner)
            .unwrap_or_else(|_| {
                tracing::error!(target: "toolmark", confirm_id = id, "answering a confirmation panicked; the panic was caught");
                Outcome::Error(crate::ToolError::new(
                    "Answering the confirmation failed unexpectedly",
                ))
            })
    }

    /// The seal of this toolmark: its confirmation store's (the app's key, or the
    /// process key a store that does not outlive the process seals with), else the
    /// app's key, else the process key. `None` only when the OS random source
    /// failed and the app gave no key.
    pub(crate) fn sealer(&self) -> Option<Sealer> {
        match &self.inner.shared {
            Some(shared) => Some(shared.sealer().clone()),
            None => self.inner.config.sealer.clone().or_else(Sealer::process),
        }
    }
}
