//! Approval policies, sticky decisions and the audit of who approved.
//!
//! A consequential or destructive call from a caller other than
//! [`Human`](crate::Caller::Human) needs the user's approval. Before anyone is
//! asked, the runtime decides in this order:
//!
//! 1. **The app's [`Policy`]** (given to
//!    [`ToolmarkBuilder::policy`](crate::ToolmarkBuilder::policy)): its rules are
//!    tried in the order they were added and **the first rule that matches the
//!    call wins**. A rule matches by tool (an exact full name with [`Rule::tool`],
//!    or every tool registered in a scope or its descendants with [`Rule::scope`],
//!    transparent scopes included), by [`Effect`] and by [`Caller`]; a rule with no
//!    condition of a kind matches every value of it.
//!    - [`Rule::allow`]: the call runs at once, as its own caller, nobody is asked.
//!    - [`Rule::deny`]: the call is refused `rejected` with the rule's reason.
//!    - [`Rule::ask`]: go on to step 2 (what happens when no rule matches).
//!    - [`Rule::require_person`]: like `ask`, but only **a person of the app** may
//!      approve (see below).
//! 2. **A remembered decision** ([`Answer::remember`]) of the same tool, the same
//!    caller and, for [`For::Session`], the same session: it answers in place of the
//!    approver. A policy `deny` or `allow` is never overridden by one.
//! 3. **Ask**, as without a policy: deferred (`needs_confirmation`) or inline (the
//!    confirm handler).
//!
//! A policy only governs calls that need an approval: it is not consulted for
//! read and write tools, nor for [`Human`](crate::Caller::Human) calls, nor for
//! [`ToolContext::confirm`](crate::ToolContext::confirm) asks made during a run.
//! It changes what a manifest lists in one case only: an inline caller with no
//! confirm handler (nobody to ask) does not see guarded tools, except those the
//! policy decides without asking — an `allow` rule lists the tool and runs its
//! calls as the caller, a `deny` rule lists it and refuses its calls with the
//! rule's reason. Such a tool also registers without a confirm handler.
//!
//! # Who approved
//!
//! Every answer is attributed, and the attribution is in the
//! [`confirmation_resolved`](crate::Event::ConfirmationResolved) event as an
//! [`Approver`], so the app has an audit trail:
//!
//! - [`Approver::User`]: an answer through the app's own path (its
//!   [`ConfirmHandler`](crate::ConfirmHandler), a [`ConfirmQueue`](crate::ConfirmQueue)
//!   or [`Toolmark::confirm_pending`](crate::Toolmark::confirm_pending)) that
//!   carries the approver's identity, an opaque id the app passes with
//!   [`Decision::by`]. The id is never interpreted, only recorded.
//! - [`Approver::App`]: an answer through the app's path without an identity.
//! - [`Approver::Client`]: the answer of a confirm handler the *call* brought
//!   ([`CallOptions::confirm_handler`](crate::CallOptions::confirm_handler), which
//!   is how the MCP adapter asks its client by elicitation). The runtime attributes
//!   it by where the answer came from, not by what it says: an identity such a
//!   handler passes with [`Decision::by`] is ignored, so a client cannot pass
//!   itself off as a person of the app.
//! - [`Approver::Policy`]: a policy rule, by its id.
//! - [`Approver::Remembered`]: a remembered decision, by its id, with the
//!   approver who made it.
//!
//! A [`Rule::require_person`] call is never put to the calling client: its own
//! confirm handler is skipped and the app's handler is asked (inline), or the app
//! answers with `confirm_pending` (deferred). The approval counts only when it is an
//! [`Approver::User`] (the app's path *and* an identity): any other approval is
//! refused `rejected` (an inline call) or `not_allowed` with the confirmation left
//! open for an answer with an identity (a deferred call). With no app handler, an
//! inline call is refused `rejected` without asking anyone. A remembered approval
//! covers such a call only when a person made it.
//!
//! # Remembered decisions
//!
//! `Decision::approve().remember(For::Session)` (or a rejection) makes the answer
//! sticky: later calls of **the same tool by the same caller** are answered by it,
//! without asking. [`For::Session`] lasts until the Toolmark is dropped or, for a
//! call made with a session id ([`CallOptions::session`](crate::CallOptions::session),
//! the MCP client session), until [`Toolmark::end_session`](crate::Toolmark::end_session) for that id; it covers
//! only calls of that same session (calls with no session id form one session of
//! their own). [`For::Always`] covers the tool and caller in every session, until
//! it is forgotten. A decision covers the tool only while it has the effect it had
//! when the decision was made, and a remembered approval only while the tool has
//! no sensitive paths, as when it was made (a tool registered again with some is
//! asked again). [`Toolmark::remembered`](crate::Toolmark::remembered) lists them, [`Toolmark::forget`](crate::Toolmark::forget)
//! revokes one. A new decision for the same tool, caller and session replaces the
//! old one; at most 4096 are kept, the oldest dropped first.
//!
//! # Who may make a lasting decision
//!
//! Only the app: its [`ConfirmHandler`](crate::ConfirmHandler), a
//! [`ConfirmQueue`](crate::ConfirmQueue) and
//! [`Toolmark::confirm_pending`](crate::Toolmark::confirm_pending) (with or without
//! an approver identity). The answer of a confirm handler the *call* brought — how
//! the MCP adapter asks its client by elicitation — decides that call alone:
//! `remember` in it is dropped, an approval and a rejection alike, so a client can
//! neither let later calls of other sessions skip the app's approver nor block
//! them. With
//! [`ToolmarkBuilder::client_session_decisions`](crate::ToolmarkBuilder::client_session_decisions)
//! the app lets a client's [`For::Session`] answer cover that client's own session
//! (calls with the same session id); a client's [`For::Always`] is never kept.
//! Answers to [`ToolContext::confirm`](crate::ToolContext::confirm) are never
//! remembered.
//!
//! # Across instances
//!
//! With a [`ConfirmStore`](crate::store::ConfirmStore) set
//! ([`ToolmarkBuilder::confirm_store`](crate::ToolmarkBuilder::confirm_store)):
//!
//! - **Shared**: [`For::Always`] decisions are kept in the store, sealed under the
//!   app's seal key and bound to their tool and caller (see
//!   [`store`](crate::store#one-seal)) — tool, caller, effect, approve or reject
//!   (and its reason), approver, time and id; never an input value, a secret or a
//!   session id. A decision written into the store without the key, or moved to
//!   another tool or caller, answers nothing. Every instance on the store, and one
//!   built after a restart, is answered by them and lists them
//!   ([`Toolmark::remembered_async`](crate::Toolmark::remembered_async));
//!   [`Toolmark::forget_async`](crate::Toolmark::forget_async) on any instance
//!   revokes one for all. This holds for an inline answer and for a
//!   `confirm_pending` answer to a stored confirmation alike. Each guarded call by a
//!   non-human caller reads the store once before asking; when the store cannot be
//!   read the call is asked, never run on a decision that may have been revoked.
//! - **Not shared**: [`For::Session`] decisions stay in the process that took the
//!   answer ([`Toolmark::remembered`](crate::Toolmark::remembered) and
//!   [`Toolmark::forget`](crate::Toolmark::forget) see only these). A stored
//!   confirmation keeps its call's session id (sealed), so a `For::Session` answer
//!   to it covers that session on the instance that took the answer.
//! - The [`Policy`] is not stored: give every instance the same one. A stored
//!   confirmation keeps the rule that asked for it and whether a person must
//!   approve it.
//!
//! **A tool with sensitive input paths never gets a remembered approval.** The
//! approver is shown `"[redacted]"` where a secret is (a card number, a password),
//! so they never see it: an approval that covered later calls would let a call
//! with a *different* secret (another card, another account's password) run
//! without anyone having approved it, and nothing the approver saw would tell the
//! two apart. Comparing the secrets themselves would mean keeping them (or
//! something derived from them) beyond the call, which nothing else in Toolmark
//! does. So for such a tool `remember` is ignored on an approval: this call is
//! approved, the next one asks again. A remembered *rejection* is kept, since it
//! can never let anything run.
//!
//! ```
//! use serde_json::json;
//! use toolmark::policy::{answering, Answer, Approver, For, Policy, Rule};
//! use toolmark::{CallOptions, Caller, Decision, Effect, Event, ToolError, ToolSpec, Toolmark};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let policy = Policy::new()
//!     // First match wins: this rule must come before the broader one below.
//!     .rule(Rule::allow("drafts").tool("mail.save_draft"))
//!     .rule(Rule::deny("no-mcp-deletes", "Deleting is done in the app").effect(Effect::Destructive).caller(Caller::Mcp))
//!     .rule(Rule::require_person("payments").scope("pay"));
//!
//! let tm = Toolmark::builder()
//!     .policy(policy)
//!     // The app's approver: a real app asks its user and says who answered.
//!     .confirm_handler(answering(|_req| async {
//!         Decision::approve().by("user-42").remember(For::Session)
//!     }))
//!     .build()
//!     .unwrap();
//! for (name, effect) in [("save_draft", Effect::Consequential), ("send", Effect::Consequential)] {
//!     tm.scope("mail").register(
//!         ToolSpec::new(name, "Mail")
//!             .effect(effect)
//!             .handler(|_ctx, _input| async { Ok::<_, ToolError>(json!("done")) }),
//!     ).unwrap();
//! }
//! let mut events = tm.events();
//! let opts = || CallOptions::new(Caller::Mcp).session("session-1");
//!
//! // Allowed by the policy: nobody is asked.
//! assert!(tm.call("mail.save_draft", json!({}), opts()).await.is_ok());
//! // Asked once, approved by user-42 and remembered for this session...
//! assert!(tm.call("mail.send", json!({}), opts()).await.is_ok());
//! // ...so the second call is answered by the remembered decision.
//! assert!(tm.call("mail.send", json!({}), opts()).await.is_ok());
//! assert_eq!(tm.remembered().len(), 1);
//!
//! let mut approvers = Vec::new();
//! while let Ok(event) = events.try_recv() {
//!     if let Event::ConfirmationResolved { approver, .. } = event {
//!         approvers.push(approver);
//!     }
//! }
//! assert_eq!(approvers[0], Approver::Policy { rule: "drafts".into() });
//! assert_eq!(approvers[1], Approver::User { id: "user-42".into() });
//! assert!(matches!(&approvers[2], Approver::Remembered { by, .. } if **by == approvers[1]));
//!
//! // The MCP session ends: what it remembered goes with it.
//! assert_eq!(tm.end_session("session-1"), 1);
//! # let _ = Answer::from(Decision::approve());
//! # }
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::remember::Remembered;
use super::{ConfirmHandler, ConfirmRequest, Decision};
use crate::scope::ScopeNode;
use crate::{Caller, CallerSet, Effect};
use futures_util::future::BoxFuture;
use std::future::Future;

/// The app's approval policy: rules tried in order, the first match wins. See the
/// [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    /// A policy with no rules (every call that needs an approval asks).
    pub fn new() -> Self {
        Policy::default()
    }

    /// This policy with `rule` added after the others (so tried after them).
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// The rules, in the order they are tried.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The first rule that matches a call of `tool` (full name) with `effect` by
    /// `caller`, if any, judging scopes by the tool's name (see [`Rule::matches`]).
    pub fn first_match(&self, tool: &str, effect: Effect, caller: Caller) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(tool, effect, caller))
    }

    /// The first rule that matches a call of `tool`, registered in `scope`: what
    /// the runtime asks, judging scopes by membership.
    pub(crate) fn first_match_in(
        &self,
        tool: &str,
        scope: &ScopeNode,
        effect: Effect,
        caller: Caller,
    ) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.matches_in(tool, Some(scope), effect, caller))
    }

    /// Why this policy cannot work: a rule without an id, two rules with one id
    /// (the audit names rules by id), or an empty tool name or scope.
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for rule in &self.rules {
            if rule.id.trim().is_empty() {
                return Err("a rule has an empty id".to_owned());
            }
            if !seen.insert(rule.id.as_str()) {
                return Err(format!("two rules have the id `{}`", rule.id));
            }
            if rule.tools.iter().any(|t| match t {
                ToolMatch::Name(s) | ToolMatch::Scope(s) => s.is_empty(),
            }) {
                return Err(format!("rule `{}` names an empty tool or scope", rule.id));
            }
        }
        Ok(())
    }
}

/// What a matching [`Rule`] decides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// Run without asking.
    Allow,
    /// Refuse `rejected` with this reason (the agent sees it).
    Deny {
        /// The reason in the refusal.
        reason: String,
    },
    /// Ask as usual (remembered decisions apply).
    Ask {
        /// Only a person of the app may approve: not the calling client, and only
        /// with an identity ([`Decision::by`]).
        person: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ToolMatch {
    Name(String),
    Scope(String),
}

/// One rule of a [`Policy`]: conditions on the tool, the effect and the caller,
/// and a [`Verdict`].
///
/// Conditions of one kind are alternatives (`.tool("a").tool("b")` matches either);
/// conditions of different kinds must all hold (`.scope("pay").caller(Caller::Mcp)`
/// matches MCP calls of tools under `pay`). A rule with no condition matches
/// every call that needs an approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    id: String,
    tools: Vec<ToolMatch>,
    effects: Vec<Effect>,
    callers: CallerSet,
    verdict: Verdict,
}

impl Rule {
    fn new(id: impl Into<String>, verdict: Verdict) -> Self {
        Rule {
            id: id.into(),
            tools: Vec::new(),
            effects: Vec::new(),
            callers: CallerSet::EMPTY,
            verdict,
        }
    }

    /// A rule that lets matching calls run without asking. `id` names it in the
    /// audit ([`Approver::Policy`]).
    pub fn allow(id: impl Into<String>) -> Self {
        Rule::new(id, Verdict::Allow)
    }

    /// A rule that refuses matching calls `rejected` with `reason`.
    pub fn deny(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Rule::new(
            id,
            Verdict::Deny {
                reason: reason.into(),
            },
        )
    }

    /// A rule that asks (what happens without a rule): useful before a broader
    /// `allow` or `deny`, to keep some calls asking.
    pub fn ask(id: impl Into<String>) -> Self {
        Rule::new(id, Verdict::Ask { person: false })
    }

    /// A rule that asks and accepts only the approval of a person of the app
    /// ([`Approver::User`]): never the calling client's own answer.
    pub fn require_person(id: impl Into<String>) -> Self {
        Rule::new(id, Verdict::Ask { person: true })
    }

    /// Also match the tool with this full name.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tools.push(ToolMatch::Name(name.into()));
        self
    }

    /// Also match every tool registered in the scope with this path or in one of
    /// its descendants (`"pay"` matches `pay.send` and `pay.cards.add`, not
    /// `payroll.run` nor a root tool `pay`). Membership counts, not the name: the
    /// tools of a [transparent](crate::ScopeOptions::transparent) scope `github`
    /// keep their own names (`delete_repo`) and are matched by `.scope("github")`.
    /// A scope's path names every scope from the root, transparent ones included
    /// (`"tools.github"` for `github` inside a transparent `tools`); the prefix its
    /// tools' names carry (`"github"` there) matches too.
    #[must_use]
    pub fn scope(mut self, path: impl Into<String>) -> Self {
        let mut path: String = path.into();
        while path.ends_with('.') {
            path.pop();
        }
        self.tools.push(ToolMatch::Scope(path));
        self
    }

    /// Also match tools with this effect.
    #[must_use]
    pub fn effect(mut self, effect: Effect) -> Self {
        if !self.effects.contains(&effect) {
            self.effects.push(effect);
        }
        self
    }

    /// Also match calls by this caller.
    #[must_use]
    pub fn caller(mut self, caller: Caller) -> Self {
        self.callers = self.callers.with(caller);
        self
    }

    /// The rule's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the rule decides.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// Whether the rule matches a call of `tool` with `effect` by `caller`, judging
    /// a [`scope`](Self::scope) condition by the tool's name alone (its prefix):
    /// the runtime, which knows where a tool is registered, also matches the tools
    /// of transparent scopes by membership.
    pub fn matches(&self, tool: &str, effect: Effect, caller: Caller) -> bool {
        self.matches_in(tool, None, effect, caller)
    }

    pub(crate) fn matches_in(
        &self,
        tool: &str,
        scope: Option<&ScopeNode>,
        effect: Effect,
        caller: Caller,
    ) -> bool {
        let tool_ok = self.tools.is_empty()
            || self.tools.iter().any(|m| match m {
                ToolMatch::Name(n) => n == tool,
                ToolMatch::Scope(p) => {
                    tool.strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
                        || scope.is_some_and(|s| s.within(p))
                }
            });
        tool_ok
            && (self.effects.is_empty() || self.effects.contains(&effect))
            && (self.callers.is_empty() || self.callers.contains(caller))
    }
}

/// How long a remembered decision lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum For {
    /// This session: calls with the same session id (see
    /// [`CallOptions::session`](crate::CallOptions::session)) until
    /// [`Toolmark::end_session`](crate::Toolmark::end_session); calls without one until the Toolmark is dropped.
    Session,
    /// Every session, until forgotten.
    Always,
}

/// Who made a decision, as recorded in
/// [`Event::ConfirmationResolved`](crate::Event::ConfirmationResolved).
///
/// JSON: `{"kind":"user","id":"user-42"}`, `{"kind":"app"}`,
/// `{"kind":"client","caller":"mcp"}`, `{"kind":"policy","rule":"drafts"}`,
/// `{"kind":"remembered","id":"…","by":{…}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Approver {
    /// A person of the app, by the opaque id the app passed with [`Decision::by`].
    User {
        /// The app's id for the person.
        id: String,
    },
    /// The app's confirm handler or `confirm_pending`, without an identity.
    App,
    /// The calling client, through the confirm handler the call brought (MCP
    /// elicitation).
    Client {
        /// Who called.
        caller: Caller,
    },
    /// A rule of the app's [`Policy`].
    Policy {
        /// The rule's id.
        rule: String,
    },
    /// A remembered decision.
    Remembered {
        /// The remembered decision's id (see [`Toolmark::remembered`](crate::Toolmark::remembered)).
        id: String,
        /// Who made it.
        by: Box<Approver>,
    },
}

impl Approver {
    /// Whether this is a person of the app: a [`User`](Approver::User), or a
    /// remembered decision a user made.
    pub fn is_person(&self) -> bool {
        match self {
            Approver::User { .. } => true,
            Approver::Remembered { by, .. } => by.is_person(),
            _ => false,
        }
    }

    /// The attribution of an answer from the app's own path.
    pub(crate) fn app(by: Option<&str>) -> Self {
        match by {
            Some(id) => Approver::User { id: id.to_owned() },
            None => Approver::App,
        }
    }
}

/// A [`Decision`] with who made it and whether to remember it: what
/// [`Decision::by`] and [`Decision::remember`] give. A confirm handler made with
/// [`answering`] returns one, [`Toolmark::confirm_pending`](crate::Toolmark::confirm_pending) and
/// [`ConfirmQueue::answer`](crate::ConfirmQueue::answer) take one; a plain
/// `Decision` converts into one with neither.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    decision: Decision,
    by: Option<String>,
    remember: Option<For>,
}

impl Answer {
    /// Record `id` (opaque: the app's user id, say) as who made this decision.
    #[must_use]
    pub fn by(mut self, id: impl Into<String>) -> Self {
        self.by = Some(id.into());
        self
    }

    /// Make this decision sticky for later calls of the same tool by the same
    /// caller (see the [module docs](self) for what it covers, and why never an
    /// approval of a tool with sensitive paths).
    #[must_use]
    pub fn remember(mut self, duration: For) -> Self {
        self.remember = Some(duration);
        self
    }

    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The approver identity passed with [`by`](Self::by).
    pub fn approver_id(&self) -> Option<&str> {
        self.by.as_deref()
    }

    /// How long to remember it, if at all.
    pub fn remembered_for(&self) -> Option<For> {
        self.remember
    }

    /// The decision, the identity, the remembering.
    pub(crate) fn into_parts(self) -> (Decision, Option<String>, Option<For>) {
        (self.decision, self.by, self.remember)
    }
}

/// A confirm handler from a closure that resolves with an [`Answer`] (who
/// decided, whether to remember it): give it to
/// [`ToolmarkBuilder::confirm_handler`](crate::ToolmarkBuilder::confirm_handler).
/// A closure that resolves with a plain [`Decision`] is a handler as it is.
///
/// ```
/// use toolmark::policy::{answering, For};
/// use toolmark::{Decision, Toolmark};
///
/// let tm = Toolmark::builder()
///     .confirm_handler(answering(|_req| async {
///         Decision::approve().by("user-42").remember(For::Session)
///     }))
///     .build()
///     .unwrap();
/// # drop(tm);
/// ```
pub fn answering<F, Fut>(f: F) -> Answering<F>
where
    F: Fn(ConfirmRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    Answering(f)
}

/// The handler made by [`answering`].
#[derive(Clone)]
pub struct Answering<F>(F);

impl<F> fmt::Debug for Answering<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Answering")
    }
}

impl<F, Fut> ConfirmHandler for Answering<F>
where
    F: Fn(ConfirmRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision> {
        let fut = (self.0)(request);
        Box::pin(async move { fut.await.decision })
    }

    fn answer(&self, request: ConfirmRequest) -> BoxFuture<'static, Answer> {
        Box::pin((self.0)(request))
    }
}

impl From<Decision> for Answer {
    fn from(decision: Decision) -> Self {
        Answer {
            decision,
            by: None,
            remember: None,
        }
    }
}

impl Decision {
    /// This decision, made by `id` (an opaque approver identity the app chooses,
    /// recorded as [`Approver::User`] in the audit event).
    pub fn by(self, id: impl Into<String>) -> Answer {
        Answer::from(self).by(id)
    }

    /// This decision, remembered for later calls of the same tool by the same
    /// caller (see [`policy`](self)).
    pub fn remember(self, duration: For) -> Answer {
        Answer::from(self).remember(duration)
    }
}

/// What a call that needs an approval carries into the asking: the matching rule
/// (if an `ask` rule matched), whether a person must approve, and the call's
/// session id. Kept with a deferred confirmation until it is answered.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct AskCtx {
    pub(crate) rule: Option<String>,
    pub(crate) person: bool,
    pub(crate) session: Option<String>,
}

impl fmt::Debug for AskCtx {
    /// The session id stays out of debug output (it may authenticate a session).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AskCtx")
            .field("rule", &self.rule)
            .field("person", &self.person)
            .field("session", &self.session.is_some())
            .finish()
    }
}
