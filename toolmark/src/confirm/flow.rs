//! The confirmation steps of a call that wait on an answer in the call itself:
//! inline ([`inline_confirm`]) and mid-run ([`ctx_confirm`]); and the pieces the
//! deferred flow (`deferred.rs`) shares with them.

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::policy::{Answer, Approver, AskCtx};
use super::remember::{person_check, remember};
use super::store::{DropReason, Pending, PendingKind, Quiet};
use super::{diff_paths, Ask, ConfirmHandler, ConfirmId, ConfirmRequest, ConfirmResult, Decision};
use crate::call::context::Deadline;
use crate::call::{maybe_cancelled, safe_issues};
use crate::event::Event;
use crate::sensitive::{Matcher, Observed, SecretSet, View};
use crate::sync::lock;
use crate::toolmark::{drop_refusal, Inner};
use crate::tools::registry::ToolEntry;
use crate::tools::summary::one_line;
use crate::{
    Caller, Change, ConfirmMode, Decoded, Issue, Outcome, Refusal, RefusalCode, ToolContext,
    ToolError,
};

/// Takes a confirmation out of the store when the waiting side stops waiting, for
/// whatever reason (answered, cancelled, the call dropped).
struct OpenGuard<'a> {
    inner: &'a Inner,
    id: ConfirmId,
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        let _ = lock(&self.inner.pending).take(&self.id);
    }
}

struct Opened {
    /// Inline, as the table holds it (its text made where a request needs it).
    id: ConfirmId,
    expires_at: std::time::SystemTime,
}

/// Keep an inline confirmation open (answerable by `cancel_pending`, dropped with
/// its scope), its event showing what observers see of it (`view`, built by the
/// call's secret set; the waiting call keeps it, the table does not).
fn open(
    inner: &Arc<Inner>,
    entry: &Arc<ToolEntry>,
    caller: Caller,
    view: &Observed<View>,
    kind: PendingKind,
    ask: AskCtx,
) -> Opened {
    let id = ConfirmId::new();
    let expires_at = inner.now() + inner.config.confirm_expiry;
    inner.emit(|| Event::ConfirmationRequested {
        confirm_id: id.to_string(),
        tool: entry.name.to_string(),
        caller,
        mode: ConfirmMode::Inline,
        summary: view.get().summary.clone(),
        input: view.get().shown.clone().unwrap_or(Value::Null),
        expires_at,
    });
    inner.insert_pending(Pending {
        // Numbered by the table.
        seq: 0,
        id: id.clone(),
        entry: Arc::clone(entry),
        caller,
        expires_at,
        kind,
        ask,
    });
    Opened { id, expires_at }
}

/// The `confirmation_resolved` event; the approver's reason goes through the call's
/// secret set `set` (an approver may quote what it was asked about).
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolved(
    inner: &Inner,
    id: &str,
    entry: &ToolEntry,
    decision: &Decision,
    edited: Vec<String>,
    approver: &Approver,
    set: &SecretSet,
) {
    inner.emit(|| Event::ConfirmationResolved {
        confirm_id: id.to_owned(),
        tool: entry.name.to_string(),
        approved: decision.approved,
        edited_paths: edited,
        reason: decision.reason.as_deref().map(|r| set.text(r).into_inner()),
        approver: approver.clone(),
    });
}

pub(crate) fn rejected(decision: &Decision) -> Refusal {
    Refusal::new(
        RefusalCode::Rejected,
        decision
            .reason
            .clone()
            .unwrap_or_else(|| "The user rejected the call".to_owned()),
    )
}

/// Restore an approver's edit onto the real input and validate it.
pub(crate) fn restore_and_validate(
    inner: &Inner,
    entry: &ToolEntry,
    original: &Value,
    edited: Value,
) -> Result<(Value, Decoded), Vec<Issue>> {
    let matcher = entry.matcher();
    let restored = matcher.restore(original, edited)?;
    inner
        .validate(entry, restored)
        .map_err(|r| safe_issues(r.issues, &matcher, original))
}

/// Inline mode: ask the call's own confirm handler (`own`, from
/// [`CallOptions::confirm_handler`](crate::CallOptions::confirm_handler)) or else
/// the app's, and wait. An invalid edit asks again with
/// the same id and the issues attached, until a valid approval, a rejection, the
/// caller's signal or expiry.
///
/// A fn returning an `async` block, not an `async fn` (which keeps a second copy
/// of its arguments across every await): the call's future boxes it, and kept
/// under 1,032 bytes the box comes from the allocator's per-thread cache.
#[allow(clippy::too_many_arguments)]
// Not an `async fn`: see above (its arguments would be kept twice).
#[allow(clippy::manual_async_fn)]
pub(crate) fn inline_confirm<'a>(
    inner: &'a Arc<Inner>,
    entry: &'a Arc<ToolEntry>,
    caller: Caller,
    input: Value,
    decoded: Decoded,
    signal: Option<&'a CancellationToken>,
    own: Option<Arc<dyn ConfirmHandler>>,
    ask: AskCtx,
) -> impl Future<Output = Result<(Value, Decoded), Outcome>> + Send + 'a {
    async move {
        // Dropped quietly if the call is not run (its `Drop` may panic).
        let mut decoded = Quiet::new(decoded);
        // A call only a person of the app may approve is never put to its own client.
        let own = own.filter(|_| !ask.person);
        let approver_of = |by: Option<String>| match own {
            Some(_) => Approver::Client { caller },
            None => Approver::app(by.as_deref()),
        };
        let Some(handler) = own.clone().or_else(|| inner.config.confirm_handler.clone()) else {
            if ask.person {
                let reason = person_check(&ask, &Approver::Client { caller }).err();
                return Err(Outcome::refused(
                    RefusalCode::Rejected,
                    reason.unwrap_or_default(),
                ));
            }
            return Err(Outcome::refused(
                RefusalCode::NotAllowed,
                "No confirm handler",
            ));
        };
        let matcher = entry.matcher();
        let changes = entry.changes_for(&input, &matcher);
        // Kept for a re-ask: the changes the approver was first shown (an app's
        // changes function may read live state; most calls have none: no copy).
        let asked_changes = changes.clone();
        let set = entry.secret_set(&input);
        // What the approver sees, made by the call's secret set: for the first
        // request and, the same way from the same parts, for one asked again.
        let view_of = |changes| {
            let summary = entry.summary_for(&input, &matcher);
            set.view(&matcher, &input, summary, changes, true)
        };
        let mut view = view_of(changes);
        let (wake_tx, mut wake_rx) = oneshot::channel();
        let opened = open(
            inner,
            entry,
            caller,
            &view,
            PendingKind::Inline {
                wake: Some(wake_tx),
            },
            ask.clone(),
        );
        let _guard = OpenGuard {
            inner,
            id: opened.id.clone(),
        };
        let mut issues = Vec::new();
        loop {
            // Each request takes the view whole: the first the one made above, one
            // asked again (after an invalid edit) one made again from the first
            // changes.
            let View {
                summary,
                changes,
                shown,
            } = view.into_inner();
            let request = ConfirmRequest {
                confirm_id: opened.id.to_string(),
                tool: entry.name.to_string(),
                caller,
                summary,
                changes,
                input: shown.unwrap_or(Value::Null),
                expires_at: opened.expires_at,
                issues: std::mem::take(&mut issues),
            };
            let decision = tokio::select! {
                biased;
                reason = &mut wake_rx => {
                    return Err(Outcome::Refused(drop_refusal(reason.unwrap_or(DropReason::Expired))));
                }
                () = maybe_cancelled(signal) => {
                    return Err(Outcome::refused(RefusalCode::Cancelled, "The caller cancelled the call while it waited for confirmation"));
                }
                d = ask_handler(&handler, request) => match d {
                    Some(d) => d,
                    None => {
                        // `_guard` withdraws the confirmation.
                        return Err(Outcome::Error(ToolError::new(
                            "The confirm handler panicked; the call was not run",
                        )));
                    }
                },
            };
            let (decision, by, remember_for) = decision.into_parts();
            let approver = approver_of(by);
            if !lock(&inner.pending).contains(&opened.id) {
                let reason = wake_rx.try_recv().unwrap_or(DropReason::Expired);
                return Err(Outcome::Refused(drop_refusal(reason)));
            }
            // Expiry is checked against the clock at approval time, not only by a timer.
            if inner.now() >= opened.expires_at {
                let taken = lock(&inner.pending).take(&opened.id);
                if let Some(p) = taken {
                    inner.drop_pending(p, DropReason::Expired);
                }
                return Err(Outcome::Refused(drop_refusal(DropReason::Expired)));
            }
            if !decision.approved {
                resolved(
                    inner,
                    &opened.id,
                    entry,
                    &decision,
                    Vec::new(),
                    &approver,
                    &set,
                );
                remember(
                    inner,
                    entry,
                    caller,
                    &ask,
                    remember_for,
                    false,
                    decision.reason.as_deref().map(|r| set.text(r).into_inner()),
                    &approver,
                )
                .await;
                return Err(Outcome::Refused(rejected(&decision)));
            }
            if let Err(reason) = person_check(&ask, &approver) {
                return Err(Outcome::refused(RefusalCode::Rejected, reason));
            }
            // The tool was hidden while the user decided: it cannot run now.
            if !entry.scope.visible() {
                return Err(Outcome::Refused(hidden_refusal(entry)));
            }
            match decision.input.clone() {
                None => {
                    resolved(
                        inner,
                        &opened.id,
                        entry,
                        &decision,
                        Vec::new(),
                        &approver,
                        &set,
                    );
                    remember(
                        inner,
                        entry,
                        caller,
                        &ask,
                        remember_for,
                        true,
                        None,
                        &approver,
                    )
                    .await;
                    let Some(decoded) = decoded.take() else {
                        return Err(Outcome::Error(ToolError::new("The call's input was lost")));
                    };
                    return Ok((input, decoded));
                }
                Some(edited) => match restore_and_validate(inner, entry, &input, edited) {
                    Ok((v, d)) => {
                        let edited = diff_paths(&input, &v);
                        resolved(inner, &opened.id, entry, &decision, edited, &approver, &set);
                        remember(
                            inner,
                            entry,
                            caller,
                            &ask,
                            remember_for,
                            true,
                            None,
                            &approver,
                        )
                        .await;
                        return Ok((v, d));
                    }
                    Err(found) => {
                        issues = found;
                        view = view_of(asked_changes.clone());
                    }
                },
            }
        }
    }
}

/// Ask the handler, catching a panic in it (`None`): a panicking handler must not
/// take the call's task down.
///
/// Not an `async fn`: one would keep the request twice (its argument, and inside
/// the caught future), 184 bytes more in every waiting inline confirmation.
fn ask_handler(
    handler: &Arc<dyn ConfirmHandler>,
    request: ConfirmRequest,
) -> impl Future<Output = Option<Answer>> + Send + '_ {
    std::panic::AssertUnwindSafe(async move { handler.answer(request).await })
        .catch_unwind()
        .map(Result::ok)
}

/// A change path as the matcher reads it: a JSON Pointer (`/cards/0/cvc`, with
/// `~1` for `/` and `~0` for `~`) becomes the dotted form (`cards.0.cvc`); a dotted
/// path is kept.
fn dotted_path(path: String) -> String {
    let Some(pointer) = path.strip_prefix('/') else {
        return path;
    };
    pointer
        .split('/')
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// `ctx.confirm`: never fails, never panics.
pub(crate) async fn ctx_confirm(ctx: &ToolContext, mut ask: Ask) -> ConfirmResult {
    for change in &mut ask.changes {
        change.path = dotted_path(std::mem::take(&mut change.path));
    }
    let call = &ctx.call;
    if call.caller == Caller::Human {
        return ConfirmResult::approved(ask.changes);
    }
    let (Some(inner), Some(entry)) = (call.inner(), call.entry()) else {
        return ConfirmResult::denied("confirmation_unavailable");
    };
    let inner = &inner;
    let handler = match inner.config.ctx_confirm_handler(call.caller) {
        Some(h) => Arc::clone(h),
        None => {
            inner.emit(|| Event::CtxConfirmUnavailable {
                tool: entry.name.to_string(),
                caller: call.caller,
            });
            return ConfirmResult::denied("confirmation_unavailable");
        }
    };
    let matcher: Matcher = entry.matcher();
    // The run's secret set: the changes and summary it asks about are scrubbed of
    // it (a change's side holding a secret of the call too).
    let set = entry.secret_set(&call.input);
    let view = set.view(
        &matcher,
        &call.input,
        one_line(&ask.summary),
        matcher.redact_changes(&ask.changes),
        true,
    );
    let (wake_tx, wake_rx) = oneshot::channel();
    let opened = open(
        inner,
        entry,
        call.caller,
        &view,
        PendingKind::Inline {
            wake: Some(wake_tx),
        },
        AskCtx::default(),
    );
    let _guard = OpenGuard {
        inner,
        id: opened.id.clone(),
    };
    // The operator's answer time never counts against the run.
    let _pause = Deadline::pause(call);
    // The view itself (it is asked once): no copy.
    let View {
        summary,
        changes,
        shown,
    } = view.into_inner();
    let request = ConfirmRequest {
        confirm_id: opened.id.to_string(),
        tool: entry.name.to_string(),
        caller: call.caller,
        summary,
        changes,
        input: shown.unwrap_or(Value::Null),
        expires_at: opened.expires_at,
        issues: Vec::new(),
    };
    let signal = call.signal.token();
    let decision = tokio::select! {
        biased;
        reason = wake_rx => {
            return ConfirmResult::denied(match reason.unwrap_or(DropReason::Expired) {
                DropReason::Expired | DropReason::Shutdown => "confirmation_expired",
                DropReason::ScopeDisposed => "scope_disposed",
                DropReason::Cancelled => "cancelled",
            });
        }
        () = signal.cancelled() => return ConfirmResult::denied("cancelled"),
        d = ask_handler(&handler, request) => match d {
            Some(d) => d,
            None => return ConfirmResult::denied("confirm_handler_failed"),
        },
    };
    // Mid-run asks are attributed, never remembered.
    let (decision, by, _) = decision.into_parts();
    let approver = Approver::app(by.as_deref());
    if !lock(&inner.pending).contains(&opened.id) || inner.now() >= opened.expires_at {
        return ConfirmResult::denied("confirmation_expired");
    }
    if !decision.approved {
        resolved(
            inner,
            &opened.id,
            entry,
            &decision,
            Vec::new(),
            &approver,
            &set,
        );
        return ConfirmResult::denied(
            decision
                .reason
                .clone()
                .unwrap_or_else(|| "rejected".to_owned()),
        );
    }
    match decision.input.clone() {
        None => {
            resolved(
                inner,
                &opened.id,
                entry,
                &decision,
                Vec::new(),
                &approver,
                &set,
            );
            ConfirmResult::approved(ask.changes)
        }
        Some(edited) => match entry.matcher().restore_changes(&ask.changes, edited) {
            Ok(changes) => {
                let changes = unscrub_changes(changes, &ask.changes, &set);
                let edited: Vec<String> = changes
                    .iter()
                    .filter(|c| !ask.changes.contains(c))
                    .map(|c| c.path.clone())
                    .collect();
                resolved(inner, &opened.id, entry, &decision, edited, &approver, &set);
                ConfirmResult::approved(changes)
            }
            Err(_) => ConfirmResult::denied("invalid"),
        },
    }
}

/// An approver who sends a change side back exactly as shown (scrubbed of the
/// run's secrets) meant the original: give it back. Each edited change pairs with the
/// first unused original of the same path, as the restore does.
fn unscrub_changes(mut edited: Vec<Change>, original: &[Change], set: &SecretSet) -> Vec<Change> {
    if set.is_empty() {
        return edited;
    }
    let mut used = vec![false; original.len()];
    for change in &mut edited {
        let Some((i, orig)) = original
            .iter()
            .enumerate()
            .find(|(i, o)| !used[*i] && o.path == change.path)
        else {
            continue;
        };
        used[i] = true;
        for (side, orig_side) in [
            (&mut change.before, &orig.before),
            (&mut change.after, &orig.after),
        ] {
            if side.is_some() && *side == orig_side.clone().map(|v| set.scrub_value(v)) {
                side.clone_from(orig_side);
            }
        }
    }
    edited
}

/// The refusal of an answer to a confirmation whose tool is hidden now.
pub(crate) fn hidden_refusal(entry: &ToolEntry) -> Refusal {
    Refusal::new(
        RefusalCode::UnknownTool,
        format!(
            "`{}` is hidden now (its scope's `when` is false), so it cannot run; a deferred confirmation stays pending until the tool shows again or it expires",
            entry.name
        ),
    )
}
