//! Confirmation by MCP elicitation: the calling client is asked.

use std::collections::BTreeSet;
use std::fmt::Write;

use futures_util::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use rmcp::RoleServer;

use crate::{ConfirmHandler, ConfirmRequest, Decision, Effect};

/// Which calls [`McpServer::confirm_by_elicitation`](super::McpServer::confirm_by_elicitation)
/// confirms by asking the calling client (`elicitation/create`) instead of the
/// app's [`ConfirmHandler`].
///
/// **An elicitation answer is only as trustworthy as the client.** The client
/// shows the question to its user, but nothing stops a client (or an agent
/// framework driving it) from answering "accept" on its own. Use it where the
/// MCP client *is* the user's own confirmation surface (a desktop app the user
/// watches), never as the only guard of something you could not undo. That is
/// why it is off by default, covers consequential tools only unless you widen
/// it, and covers destructive tools only when you say so with
/// [`Elicitation::destructive`].
///
/// The message shows the call's summary and its changes, redacted: a sensitive
/// value is `"[redacted]"`, never in clear. Accept approves; decline or cancel
/// rejects with a reason the agent sees. A client that did not declare the
/// elicitation capability is not asked: the app's handler answers (a tool is
/// `not_allowed` when the app has none, and hidden from tools/list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elicitation {
    destructive: bool,
    tools: Option<BTreeSet<String>>,
    edits: bool,
}

impl Default for Elicitation {
    fn default() -> Self {
        Elicitation::consequential()
    }
}

impl Elicitation {
    /// Consequential tools only (not destructive ones).
    pub fn consequential() -> Self {
        Elicitation {
            destructive: false,
            tools: None,
            edits: false,
        }
    }

    /// Also destructive tools: the client's answer is then all that stands
    /// between an agent and a deletion. Only for clients you trust to ask the user.
    #[must_use]
    pub fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    /// Only these tools (full names); others ask the app's handler.
    #[must_use]
    pub fn only(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Let the person edit the call's plain fields when approving (2026-07-28
    /// clients): the confirmation is a form of the input's top-level strings,
    /// numbers and booleans that are not sensitive, each with its value. The
    /// edited input is validated again before the tool runs; a sensitive value
    /// is never in the form and keeps its real value.
    #[must_use]
    pub fn edits(mut self) -> Self {
        self.edits = true;
        self
    }

    /// Whether approvals may edit the input (see [`edits`](Self::edits)).
    pub fn allows_edits(&self) -> bool {
        self.edits
    }

    /// Whether a call of `tool` with `effect` is confirmed by elicitation.
    pub fn covers(&self, tool: &str, effect: Effect) -> bool {
        let by_effect = match effect {
            Effect::Consequential => true,
            Effect::Destructive => self.destructive,
            _ => false,
        };
        by_effect && self.tools.as_ref().is_none_or(|t| t.contains(tool))
    }
}

/// A per-call confirm handler that asks the calling client.
pub(crate) struct ElicitHandler {
    pub(crate) peer: Peer<RoleServer>,
}

/// The question put to the client: the summary, then one line per change.
pub(crate) fn message(request: &ConfirmRequest) -> String {
    let mut text = format!("Allow `{}`? {}", request.tool, request.summary);
    for c in &request.changes {
        let show = |v: &Option<serde_json::Value>| {
            v.as_ref()
                .map_or_else(|| "(none)".to_owned(), ToString::to_string)
        };
        let _ = write!(
            text,
            "\n- {}: {} → {}",
            c.path,
            show(&c.before),
            show(&c.after)
        );
    }
    text
}

impl ConfirmHandler for ElicitHandler {
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, Decision> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message(&request),
                requested_schema: ElicitationSchema::new(Default::default()),
            };
            match peer.create_elicitation(params).await {
                Ok(answer) => match answer.action {
                    ElicitationAction::Accept => Decision::approve(),
                    ElicitationAction::Decline => {
                        Decision::reject_with("The user declined the call in the MCP client")
                    }
                    _ => Decision::reject_with("The user cancelled the confirmation"),
                },
                Err(e) => {
                    tracing::debug!(target: "toolmark::mcp", error = %e, "elicitation failed");
                    Decision::reject_with("The confirmation could not be asked: the client did not answer the elicitation")
                }
            }
        })
    }
}
