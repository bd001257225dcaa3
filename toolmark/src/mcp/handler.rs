//! One MCP session: rmcp's [`ServerHandler`] over a [`Toolmark`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::elicit::ElicitHandler;
use super::list::Catalog;
use super::result::call_result;
use super::Config;
use crate::{CallOptions, Caller, RefusalCode};

/// The newest MCP revision this server speaks: the last one with an
/// `initialize` handshake and sessions.
const MAX_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// One MCP session's handler (from [`McpServer::session`](super::McpServer::session)):
/// an rmcp [`ServerHandler`] to serve on any rmcp transport.
pub struct McpSession {
    config: Arc<Config>,
    catalog: Arc<Catalog>,
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession").finish_non_exhaustive()
    }
}

impl McpSession {
    pub(crate) fn new(config: Arc<Config>, catalog: Arc<Catalog>) -> Self {
        McpSession { config, catalog }
    }

    /// The tools this session lists now (built once per manifest version and
    /// shared by the sessions of one Toolmark).
    pub fn tools(&self) -> Arc<Vec<rmcp::model::Tool>> {
        self.catalog.listing().tools.clone()
    }

    /// The Toolmark this session calls.
    pub fn toolmark(&self) -> &crate::Toolmark {
        &self.catalog.tm
    }
}

fn bad_cursor() -> ErrorData {
    ErrorData::invalid_params("Invalid cursor: list the tools again from the start", None)
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.config.name.clone(),
            self.config.version.clone(),
        ))
        .with_protocol_version(MAX_VERSION);
        if let Some(text) = &self.config.instructions {
            info = info.with_instructions(text.clone());
        }
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MAX_VERSION))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.catalog.add_peer(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listing = self.catalog.listing();
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= listing.tools.len())
                .ok_or_else(bad_cursor)?,
        };
        let end = (start + self.config.page_size).min(listing.tools.len());
        let mut result = ListToolsResult::with_all_items(listing.tools[start..end].to_vec());
        if end < listing.tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let listing = self.catalog.listing();
        let name = request.name.as_ref();
        let known = listing.known.get(name).cloned();
        let input = request.arguments.map_or(Value::Null, Value::Object);
        // notifications/cancelled and the session's end both cancel `ct`.
        let mut options = CallOptions::new(Caller::Mcp).signal(context.ct.clone());
        let mut forward = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::Progress>();
            let peer = context.peer.clone();
            forward = Some(tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let mut note = ProgressNotificationParam::new(token.clone(), p.done as f64);
                    if let Some(total) = p.total {
                        note = note.with_total(total as f64);
                    }
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            }));
            options = options.on_progress(move |p| {
                let _ = tx.send(p);
            });
        }
        if let (Some(policy), Some(k)) = (&self.config.elicitation, &known) {
            if policy.covers(name, k.effect)
                && !context.peer.supported_elicitation_modes().is_empty()
            {
                options = options.confirm_handler(ElicitHandler {
                    peer: context.peer.clone(),
                });
            }
        }
        let outcome = self.catalog.tm.call(name, input, options).await;
        if let Some(f) = forward {
            // Every progress report is sent before the result.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), f).await;
        }
        if outcome.refusal_code() == Some(RefusalCode::UnknownTool) {
            let message = outcome
                .refusal()
                .map_or_else(String::new, |r| r.message.clone());
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {message}"),
                Some(serde_json::json!({"code": "unknown_tool"})),
            ));
        }
        Ok(call_result(outcome, known.is_some_and(|k| k.wrap)).into())
    }
}
