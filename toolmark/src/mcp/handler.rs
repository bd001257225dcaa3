//! One MCP session: rmcp's [`ServerHandler`] over a [`Toolmark`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::client::{from_rmcp, McpClient, Notes, SessionLevel};
use super::elicit::ElicitHandler;
use super::fallback;
use super::list::{Catalog, McpTool};
use super::result::{call_result, OutputShape};
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
    /// The level `logging/setLevel` set for this session.
    level: SessionLevel,
    /// This session's id for decisions remembered `For::Session` (random, made
    /// here; ended with the session).
    session: Arc<str>,
    /// Counts this session among the router's live ones while it lives.
    pub(crate) slot: Option<super::http::SessionSlot>,
}

impl Drop for McpSession {
    /// The client session ended: decisions remembered for it end too.
    fn drop(&mut self) {
        self.catalog.tm.end_session(&self.session);
    }
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession").finish_non_exhaustive()
    }
}

impl McpSession {
    pub(crate) fn new(config: Arc<Config>, catalog: Arc<Catalog>) -> Self {
        let level = SessionLevel::new(config.log_level);
        McpSession {
            config,
            catalog,
            level,
            session: Arc::from(crate::confirm::new_confirm_id()),
            slot: None,
        }
    }

    /// The tools this session lists now to a client that does not answer
    /// elicitations (built once per manifest version and shared by the
    /// sessions of one Toolmark).
    pub fn tools(&self) -> Arc<Vec<rmcp::model::Tool>> {
        Arc::new(self.tools_for(false))
    }

    /// The tools this session lists now to a client that answers elicitations
    /// (`elicits`: with [`McpServer::confirm_by_elicitation`](super::McpServer::confirm_by_elicitation),
    /// also the guarded tools the server confirms by asking it), or to one that
    /// does not.
    pub fn tools_for(&self, elicits: bool) -> Vec<rmcp::model::Tool> {
        let listing = self.catalog.listing(self.config.elicitation.as_ref());
        let tools = listing.for_client(elicits);
        tools.iter().map(|t| t.tool.clone()).collect()
    }

    /// The Toolmark this session calls.
    pub fn toolmark(&self) -> &crate::Toolmark {
        &self.catalog.tm
    }
}

impl McpSession {
    /// The app's own handler for the methods that are not tool methods.
    fn fallback(&self) -> Option<&dyn super::fallback::Fallback> {
        self.config.fallback.as_deref()
    }
}

/// Whether the session's client declared it answers elicitations.
fn elicits(peer: &rmcp::service::Peer<RoleServer>) -> bool {
    !peer.supported_elicitation_modes().is_empty()
}

fn bad_cursor() -> ErrorData {
    ErrorData::invalid_params("Invalid cursor: list the tools again from the start", None)
}

// rmcp marks logging deprecated (SEP-2577, a future revision); the revisions
// this server speaks (up to 2025-11-25) have it.
#[allow(deprecated)]
impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
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
        if let Some(fallback) = &self.config.fallback {
            let theirs = fallback.info();
            super::fallback::merge(&mut info.capabilities, theirs.capabilities);
            if info.instructions.is_none() {
                info.instructions = theirs.instructions;
            }
        }
        info
    }

    // Every method that is not a tool method goes to the app's own handler
    // (`McpServer::fallback_handler`), or is "method not found".

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        fallback::complete(self.fallback(), request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        fallback::get_prompt(self.fallback(), request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        fallback::list_prompts(self.fallback(), request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        fallback::list_resources(self.fallback(), request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        fallback::list_resource_templates(self.fallback(), request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        fallback::read_resource(self.fallback(), request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        fallback::subscribe(self.fallback(), request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        fallback::unsubscribe(self.fallback(), request, context).await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MAX_VERSION))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.level.set(from_rmcp(request.level));
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.catalog
            .add_peer(context.peer, self.config.elicitation.clone());
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listing = self.catalog.listing(self.config.elicitation.as_ref());
        // A client that answers elicitations also sees the guarded tools this
        // server confirms by asking it.
        let tools = listing.for_client(elicits(&context.peer));
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= tools.len())
                .ok_or_else(bad_cursor)?,
        };
        let end = start.saturating_add(self.config.page_size).min(tools.len());
        let page = tools[start..end].iter().map(|t| t.tool.clone()).collect();
        let mut result = ListToolsResult::with_all_items(page);
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let entry = self.catalog.tm.inner.lookup(name);
        // Taken out of the message before rmcp logged it (see `quiet`).
        let input = super::quiet::arguments(request.arguments, &mut context)
            .map_or(Value::Null, Value::Object);
        // notifications/cancelled and the session's end both cancel `ct`.
        let mut options = CallOptions::new(Caller::Mcp)
            .signal(context.ct.clone())
            .session(self.session.to_string());
        // Progress and log messages go out in order, before the result.
        let token = context.meta.get_progress_token();
        let listens = token.is_some();
        let notes = Notes::new(context.peer.clone(), token);
        if listens {
            let n = Arc::clone(&notes);
            options = options.on_progress(move |p| n.progress(p));
        }
        let (n, level) = (Arc::clone(&notes), self.level.clone());
        options = options.on_log(move |m| {
            if level.lets_through(m.level) {
                n.log(m);
            }
        });
        if let Some(client) = McpClient::of(&context.peer) {
            options = options.client(client);
        }
        if let (Some(policy), Some(e)) = (&self.config.elicitation, &entry) {
            if policy.covers(name, e.effect) && elicits(&context.peer) {
                options = options.confirm_handler(ElicitHandler {
                    peer: context.peer.clone(),
                });
            }
        }
        let outcome = self.catalog.tm.call(name, input, options).await;
        notes.flush().await;
        if outcome.refusal_code() == Some(RefusalCode::UnknownTool) {
            let message = outcome
                .refusal()
                .map_or_else(String::new, |r| r.message.clone());
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {message}"),
                Some(serde_json::json!({"code": "unknown_tool"})),
            ));
        }
        let shape = entry.map_or(OutputShape::Undeclared, |e| McpTool::of(&e).shape);
        Ok(call_result(outcome, shape).into())
    }
}
