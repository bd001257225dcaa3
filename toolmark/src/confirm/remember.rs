//! The runtime side of approval policies: the check made before asking
//! ([`before_asking`]), the remembered decisions, and the `Toolmark` methods that
//! list and revoke them. The types and the rules are documented in
//! [`policy`](super::policy).

use std::collections::VecDeque;
use std::fmt;
use std::time::SystemTime;

use serde::Serialize;

use super::new_confirm_id;
use super::policy::{Approver, AskCtx, For, Verdict};
use crate::event::Event;
use crate::sync::lock;
use crate::toolmark::Inner;
use crate::tools::registry::ToolEntry;
use crate::{Caller, Outcome, Refusal, RefusalCode, Toolmark};

/// The most remembered decisions kept; the oldest is dropped first.
pub(crate) const MAX_REMEMBERED: usize = 4096;

/// A remembered decision, as listed by [`Toolmark::remembered`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Remembered {
    /// Its id (for [`Toolmark::forget`]).
    pub id: String,
    /// The tool's full name.
    pub tool: String,
    /// The caller whose calls it answers.
    pub caller: Caller,
    /// How long it lasts.
    pub duration: For,
    /// Whether it is bound to one client session (a [`For::Session`] decision
    /// made on a call with a session id). The id itself is not listed.
    pub session_bound: bool,
    /// Approve (`true`) or reject.
    pub approved: bool,
    /// The reason of a remembered rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
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

impl Entry {
    fn covers(&self, tool: &str, caller: Caller, session: Option<&str>) -> bool {
        self.info.tool == tool
            && self.info.caller == caller
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
        tool: &str,
        caller: Caller,
        session: Option<&str>,
        person: bool,
    ) -> Option<&Remembered> {
        self.entries
            .iter()
            .rev()
            .find(|e| {
                e.covers(tool, caller, session)
                    && (!person || !e.info.approved || e.info.approver.is_person())
            })
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
/// then a remembered decision, else ask.
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
        .and_then(|p| p.first_match(&entry.name, entry.effect, caller))
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
    let found = {
        let set = lock(&inner.remembered);
        if set.entries.is_empty() {
            None
        } else {
            set.find(&entry.name, caller, session, ask.person).cloned()
        }
    };
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
/// sensitive paths (see the `policy` docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn remember(
    inner: &Inner,
    entry: &ToolEntry,
    caller: Caller,
    ask: &AskCtx,
    duration: Option<For>,
    approved: bool,
    reason: Option<String>,
    approver: &Approver,
) {
    let Some(duration) = duration else { return };
    if approved && entry.has_sensitive() {
        tracing::debug!(
            target: "toolmark",
            tool = %entry.name,
            "an approval of a tool with sensitive paths is not remembered"
        );
        return;
    }
    let session = match duration {
        For::Session => ask.session.clone(),
        For::Always => None,
    };
    let info = Remembered {
        id: new_confirm_id(),
        tool: entry.name.to_string(),
        caller,
        duration,
        session_bound: session.is_some(),
        approved,
        reason: if approved { None } else { reason },
        approver: approver.clone(),
        created_at: inner.now(),
    };
    inner.emit(|| Event::DecisionRemembered {
        remember_id: info.id.clone(),
        tool: info.tool.clone(),
        caller,
        duration,
        approved,
    });
    lock(&inner.remembered).insert(Entry { info, session });
}

impl Toolmark {
    /// The remembered decisions (made with [`Answer::remember`](crate::policy::Answer::remember)),
    /// oldest first.
    pub fn remembered(&self) -> Vec<Remembered> {
        lock(&self.inner.remembered)
            .entries
            .iter()
            .map(|e| e.info.clone())
            .collect()
    }

    /// Revoke the remembered decision `id`: later calls it covered ask again.
    /// Whether there was one.
    pub fn forget(&self, id: &str) -> bool {
        let mut set = lock(&self.inner.remembered);
        let before = set.entries.len();
        set.entries.retain(|e| e.info.id != id);
        set.entries.len() != before
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
