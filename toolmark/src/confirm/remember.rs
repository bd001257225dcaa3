//! The runtime side of approval policies: the check made before asking
//! ([`before_asking`]), the remembered decisions, and the `Toolmark` methods that
//! list and revoke them. The types and the rules are documented in
//! [`policy`](super::policy).

use std::collections::VecDeque;
use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::new_confirm_id;
use super::policy::{Approver, AskCtx, For, Verdict};
use crate::event::Event;
use crate::store::StoreError;
use crate::sync::lock;
use crate::toolmark::Inner;
use crate::tools::registry::ToolEntry;
use crate::{Caller, Effect, Outcome, Refusal, RefusalCode, Toolmark};

/// The most remembered decisions kept; the oldest is dropped first.
pub(crate) const MAX_REMEMBERED: usize = 4096;

/// A remembered decision, as listed by [`Toolmark::remembered`] (and kept by a
/// [`ConfirmStore`](crate::store::ConfirmStore) for a [`For::Always`] decision):
/// no input value, no session id, nothing secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Remembered {
    /// Its id (for [`Toolmark::forget`]).
    pub id: String,
    /// The tool's full name.
    pub tool: String,
    /// The caller whose calls it answers.
    pub caller: Caller,
    /// The tool's effect when the decision was made: it covers the tool only while
    /// the tool has this effect.
    pub effect: Effect,
    /// How long it lasts.
    pub duration: For,
    /// Whether it is bound to one client session (a [`For::Session`] decision
    /// made on a call with a session id). The id itself is not listed.
    pub session_bound: bool,
    /// Approve (`true`) or reject.
    pub approved: bool,
    /// The reason of a remembered rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who made the decision.
    pub approver: Approver,
    /// When it was made (by the toolmark's clock).
    #[serde(with = "crate::clock::rfc3339")]
    pub created_at: SystemTime,
}

struct Entry {
    info: Remembered,
    /// The session of a `For::Session` decision (`None`: calls without a session).
    session: Option<String>,
}

impl Remembered {
    /// Whether it answers a call of `entry` by `caller`: the same tool, caller and
    /// effect; an approval only while the tool has no sensitive paths (an approval
    /// of a tool with some is never remembered, so the approver saw none) and,
    /// when `person` is needed, only one a person made. A rejection always counts.
    fn answers(&self, entry: &ToolEntry, caller: Caller, person: bool) -> bool {
        *self.tool == *entry.name
            && self.caller == caller
            && self.effect == entry.effect
            && (!self.approved || !entry.has_sensitive())
            && (!person || !self.approved || self.approver.is_person())
    }
}

impl Entry {
    fn covers(
        &self,
        entry: &ToolEntry,
        caller: Caller,
        session: Option<&str>,
        person: bool,
    ) -> bool {
        self.info.answers(entry, caller, person)
            && match self.info.duration {
                For::Always => true,
                For::Session => self.session.as_deref() == session,
            }
    }
}

/// The remembered decisions of one Toolmark, oldest first.
#[derive(Default)]
pub(crate) struct RememberedSet {
    entries: VecDeque<Entry>,
}

impl fmt::Debug for RememberedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RememberedSet")
            .field("len", &self.entries.len())
            .finish()
    }
}

impl RememberedSet {
    /// The newest decision that covers a call (for a person-only call, an approval
    /// counts only when a person made it; a rejection always counts).
    fn find(
        &self,
        entry: &ToolEntry,
        caller: Caller,
        session: Option<&str>,
        person: bool,
    ) -> Option<&Remembered> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.covers(entry, caller, session, person))
            .map(|e| &e.info)
    }

    fn insert(&mut self, entry: Entry) {
        // A new decision replaces the one for the same tool, caller and duration
        // (and session).
        self.entries.retain(|e| {
            !(e.info.tool == entry.info.tool
                && e.info.caller == entry.info.caller
                && e.info.duration == entry.info.duration
                && e.session == entry.session)
        });
        while self.entries.len() >= MAX_REMEMBERED {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }
}

/// What the policy and the remembered decisions say about a call before anyone is
/// asked.
pub(crate) enum Gate {
    /// Run it now, as its own caller.
    Run,
    /// Refused.
    Done(Outcome),
    /// Ask, with this context.
    Ask(AskCtx),
}

fn resolved_without_asking(
    inner: &Inner,
    entry: &ToolEntry,
    approved: bool,
    reason: Option<String>,
    approver: Approver,
) {
    inner.emit(|| Event::ConfirmationResolved {
        confirm_id: new_confirm_id(),
        tool: entry.name.to_string(),
        approved,
        edited_paths: Vec::new(),
        reason,
        approver,
    });
}

/// Step 4a of a call that needs an approval: the policy's first matching rule,
/// then a remembered decision kept in this process, else ask. With a
/// confirmation store, only the policy is checked here: the remembered decisions
/// (some in the store) are looked up by [`remembered_gate`], asynchronously.
#[inline]
pub(crate) fn before_asking(
    inner: &Inner,
    entry: &ToolEntry,
    caller: Caller,
    session: Option<&str>,
) -> Gate {
    let mut ask = AskCtx {
        rule: None,
        person: false,
        session: session.map(str::to_owned),
    };
    if let Some(rule) = inner
        .config
        .policy
        .as_ref()
        .and_then(|p| p.first_match_in(&entry.name, &entry.scope, entry.effect, caller))
    {
        let by = || Approver::Policy {
            rule: rule.id().to_owned(),
        };
        match rule.verdict() {
            Verdict::Allow => {
                resolved_without_asking(inner, entry, true, None, by());
                return Gate::Run;
            }
            Verdict::Deny { reason } => {
                resolved_without_asking(inner, entry, false, Some(reason.clone()), by());
                return Gate::Done(Outcome::Refused(Refusal::new(
                    RefusalCode::Rejected,
                    reason.clone(),
                )));
            }
            Verdict::Ask { person } => {
                ask.rule = Some(rule.id().to_owned());
                ask.person = *person;
            }
        }
    }
    if inner.shared.is_some() {
        return Gate::Ask(ask);
    }
    let found = local(inner, entry, caller, &ask);
    apply(inner, entry, ask, found)
}

/// The newest decision this process remembers that covers the call.
fn local(inner: &Inner, entry: &ToolEntry, caller: Caller, ask: &AskCtx) -> Option<Remembered> {
    let set = lock(&inner.remembered);
    if set.entries.is_empty() {
        return None;
    }
    set.find(entry, caller, ask.session.as_deref(), ask.person)
        .cloned()
}

/// Step 4a's remembered decisions with a confirmation store: the newest of this
/// process's (session) decisions and the store's [`For::Always`] one. A store that
/// cannot be reached leaves only this process's: the call is asked (never run on
/// a decision that may have been revoked).
pub(crate) async fn remembered_gate(
    inner: &Inner,
    entry: &ToolEntry,
    caller: Caller,
    ask: AskCtx,
) -> Gate {
    let mut found = local(inner, entry, caller, &ask);
    if let Some(shared) = &inner.shared {
        let stored = shared
            .store
            .remembered_for(&entry.name, caller)
            .await
            .map(|r| r.and_then(|r| shared.open_decision(&r)));
        match stored {
            Ok(Some(stored))
                if stored.answers(entry, caller, ask.person)
                    && found
                        .as_ref()
                        .is_none_or(|f| stored.created_at >= f.created_at) =>
            {
                found = Some(stored);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(target: "toolmark", error = %e, "remembered decisions in the confirmation store could not be read; asking");
            }
        }
    }
    apply(inner, entry, ask, found)
}

/// Answer with a remembered decision, or ask.
fn apply(inner: &Inner, entry: &ToolEntry, ask: AskCtx, found: Option<Remembered>) -> Gate {
    let Some(found) = found else {
        return Gate::Ask(ask);
    };
    let approver = Approver::Remembered {
        id: found.id.clone(),
        by: Box::new(found.approver),
    };
    if found.approved {
        resolved_without_asking(inner, entry, true, None, approver);
        Gate::Run
    } else {
        let reason = found.reason.unwrap_or_else(|| {
            format!(
                "The user rejected calls of `{}` (remembered decision {})",
                entry.name, found.id
            )
        });
        resolved_without_asking(inner, entry, false, Some(reason.clone()), approver);
        Gate::Done(Outcome::Refused(Refusal::new(
            RefusalCode::Rejected,
            reason,
        )))
    }
}

/// Refuse an approval that a person-only call did not get from a person.
pub(crate) fn person_check(ask: &AskCtx, approver: &Approver) -> Result<(), String> {
    if !ask.person || approver.is_person() {
        return Ok(());
    }
    let rule = ask.rule.as_deref().unwrap_or("");
    Err(match approver {
        Approver::Client { caller } => format!(
            "Policy rule `{rule}` needs the approval of a person of the app; the calling client ({caller}) cannot approve this call"
        ),
        _ => format!(
            "Policy rule `{rule}` needs the approval of a person of the app: the app must say who approved (Decision::by)"
        ),
    })
}

/// Remember an approver's decision when asked to: never an approval of a tool with
/// sensitive paths (see the `policy` docs), and never a calling client's decision
/// beyond its own call (at most its session, when the app opts in). A
/// [`For::Always`] decision goes to the confirmation store when there is one
/// (sealed, shared by every instance); a store that cannot be reached keeps
/// nothing (the decision still answers this call).
///
/// Synchronous but for a store's write: what it returns is ready at once unless
/// a [`For::Always`] decision goes to the store (then it is that write, boxed).
/// An `async fn` here was a 416-byte future kept in every waiting inline
/// confirmation's, though most decisions are not remembered at all.
#[allow(clippy::too_many_arguments)]
pub(crate) fn remember<'a>(
    inner: &'a Inner,
    entry: &'a ToolEntry,
    caller: Caller,
    ask: &AskCtx,
    duration: Option<For>,
    approved: bool,
    reason: Option<String>,
    approver: &Approver,
) -> Remembering<'a> {
    let Some(duration) = duration else {
        return Remembering(None);
    };
    if let Approver::Client { .. } = approver {
        // A client's (or a call's own handler's) answer decides its own call; the
        // app may let it cover that client's session, never more.
        let session_ok = duration == For::Session
            && ask.session.is_some()
            && inner.config.client_session_decisions;
        if !session_ok {
            tracing::debug!(
                target: "toolmark",
                tool = %entry.name,
                "a calling client's decision is not remembered beyond its call"
            );
            return Remembering(None);
        }
    }
    if approved && entry.has_sensitive() {
        tracing::debug!(
            target: "toolmark",
            tool = %entry.name,
            "an approval of a tool with sensitive paths is not remembered"
        );
        return Remembering(None);
    }
    let session = match duration {
        For::Session => ask.session.clone(),
        For::Always => None,
    };
    let info = Remembered {
        id: new_confirm_id(),
        tool: entry.name.to_string(),
        caller,
        effect: entry.effect,
        duration,
        session_bound: session.is_some(),
        approved,
        reason: if approved { None } else { reason },
        approver: approver.clone(),
        created_at: inner.now(),
    };
    let event = Event::DecisionRemembered {
        remember_id: info.id.clone(),
        tool: info.tool.clone(),
        caller,
        duration,
        approved,
    };
    match (&inner.shared, duration) {
        (Some(shared), For::Always) => {
            let Some(record) = shared.seal_decision(&info) else {
                tracing::warn!(target: "toolmark", tool = %entry.name, "the decision was not remembered: it could not be sealed");
                return Remembering(None);
            };
            let write = shared.store.remember(record);
            Remembering(Some(Box::pin(async move {
                if let Err(e) = write.await {
                    tracing::warn!(target: "toolmark", error = %e, tool = %entry.name, "the decision was not remembered: the confirmation store cannot be reached");
                    return;
                }
                inner.emit(|| event);
            })))
        }
        _ => {
            lock(&inner.remembered).insert(Entry { info, session });
            inner.emit(|| event);
            Remembering(None)
        }
    }
}

/// What [`remember`] leaves to wait for: nothing, or a store's write (the
/// decision's event follows it).
#[must_use = "a decision for the store is written only when this is awaited"]
pub(crate) struct Remembering<'a>(
    Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>>,
);

impl std::future::Future for Remembering<'_> {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = self.get_mut();
        match &mut this.0 {
            None => std::task::Poll::Ready(()),
            Some(write) => {
                let polled = write.as_mut().poll(cx);
                if polled.is_ready() {
                    this.0 = None;
                }
                polled
            }
        }
    }
}

impl Toolmark {
    /// The remembered decisions (made with [`Answer::remember`](crate::policy::Answer::remember))
    /// this process keeps, oldest first. With a confirmation store, the
    /// [`For::Always`] ones are in the store: list every one with
    /// [`remembered_async`](Self::remembered_async).
    pub fn remembered(&self) -> Vec<Remembered> {
        lock(&self.inner.remembered)
            .entries
            .iter()
            .map(|e| e.info.clone())
            .collect()
    }

    /// Every remembered decision, oldest first: this process's and, with a
    /// confirmation store, the store's [`For::Always`] decisions (made on any
    /// instance). Fails only when the store cannot be reached (`unavailable`).
    pub async fn remembered_async(&self) -> Result<Vec<Remembered>, StoreError> {
        let mut all = self.remembered();
        if let Some(shared) = &self.inner.shared {
            let stored = shared.store.remembered().await?;
            all.extend(stored.iter().filter_map(|r| shared.open_decision(r)));
            all.sort_by_key(|r| r.created_at);
        }
        Ok(all)
    }

    /// Revoke the remembered decision `id` this process keeps: later calls it
    /// covered ask again. Whether there was one. A [`For::Always`] decision in a
    /// confirmation store is revoked with [`forget_async`](Self::forget_async).
    pub fn forget(&self, id: &str) -> bool {
        let mut set = lock(&self.inner.remembered);
        let before = set.entries.len();
        set.entries.retain(|e| e.info.id != id);
        set.entries.len() != before
    }

    /// Revoke the remembered decision `id`, wherever it is kept: in this process
    /// or (a [`For::Always`] decision) in the confirmation store, for every
    /// instance at once. Whether there was one. Fails only when the store cannot be
    /// reached (`unavailable`).
    pub async fn forget_async(&self, id: &str) -> Result<bool, StoreError> {
        if self.forget(id) {
            return Ok(true);
        }
        match &self.inner.shared {
            Some(shared) => shared.store.forget(id).await,
            None => Ok(false),
        }
    }

    /// A client session ended (the MCP adapter calls this when one closes): forget
    /// the [`For::Session`] decisions made on calls with this session id. Returns how
    /// many were forgotten.
    pub fn end_session(&self, session: &str) -> usize {
        let mut set = lock(&self.inner.remembered);
        let before = set.entries.len();
        set.entries.retain(|e| {
            !(e.info.duration == For::Session && e.session.as_deref() == Some(session))
        });
        before - set.entries.len()
    }
}
