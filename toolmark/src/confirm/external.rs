//! A deferred confirmation asked for a call whose caller answers it in another
//! request, possibly on another instance: MCP's multi round-trip requests
//! (2026-07-28), URL-mode approval pages and tasks. A narrow crate-internal face
//! over the one deferred flow (the built-in pending table, or the toolmark's
//! [`ConfirmStore`](crate::store::ConfirmStore) when one is set):
//!
//! - [`Toolmark::call_deferring`]: make the call; a guarded tool that needs the
//!   user's approval is stored as pending and answers `needs_confirmation` (id
//!   and expiry) whatever the caller's mode. Everything else (a policy's or a
//!   remembered decision, a refusal, a tool that needs no confirmation) is the
//!   call's outcome as usual.
//! - [`Toolmark::pending_by_id`]: what the approver is shown (redacted).
//! - [`Toolmark::answer_by`]: answer it once, by id, saying who answered; an
//!   answer from a client or a call's own path is never remembered.

use crate::confirm::policy::Approver;
use crate::store::StoreError;
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
        options.confirm = None;
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
    /// answer is `confirmation_expired`). Never remembered.
    pub(crate) async fn answer_by(
        &self,
        id: &str,
        decision: Decision,
        approver: Approver,
    ) -> Outcome {
        self.answer_pending(id, decision, approver, None).await
    }
}
