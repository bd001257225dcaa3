//! One MCP session: rmcp's [`ServerHandler`] over a [`Toolmark`].

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::model::{
    CancelTaskParams, GetTaskParams, GetTaskResult, SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::client::{from_rmcp, McpClient, Notes, SessionLevel};
use super::elicit::ElicitHandler;
use super::fallback;
use super::list::{Catalog, Listing, McpTool};
use super::mrtr;
use super::result::{call_result, OutputShape};
use super::stateless;
use super::tasks;
use super::Config;
use crate::{CallOptions, Caller, RefusalCode};

/// The newest MCP revision this server speaks (stateless: no `initialize`).
const MAX_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;
/// The newest revision with an `initialize` handshake and sessions: what an
/// `initialize` from a client that asks for a newer one falls back to.
const MAX_SESSION_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

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
    /// What the `Mcp` caller saw when each `subscriptions/listen` not yet
    /// served was accepted, oldest first. rmcp acknowledges a stream before it
    /// calls [`ServerHandler::listen`], so a client may change the tools in
    /// between (it has the acknowledgment); the stream measures from here, and
    /// that change is notified, not lost.
    listens: Mutex<VecDeque<Arc<Listing>>>,
}

/// At most this many accepted `subscriptions/listen` streams wait for rmcp to
/// start them (a stream whose acknowledgment could not be sent leaves its entry:
/// the next stream takes it, older than its own, so at worst it notifies once
/// more, never less).
const PENDING_LISTENS: usize = 16;

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
            listens: Mutex::new(VecDeque::new()),
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

    /// How a 2026-07-28 request's confirmation of `name` goes through its
    /// client, if it does: the app's page when it covers the tool and the client
    /// opens URLs, else a form when the elicitation policy covers it.
    fn client_mode(
        &self,
        name: &str,
        effect: crate::Effect,
        caps: Option<&rmcp::model::ClientCapabilities>,
    ) -> Option<mrtr::Mode> {
        // Only a call that needs the user's approval is confirmed at all.
        if !matches!(
            effect,
            crate::Effect::Consequential | crate::Effect::Destructive
        ) || self.config.handles.is_none()
            || (self.config.approval.is_none() && self.config.elicitation.is_none())
        {
            return None;
        }
        let caps = caps?.elicitation.as_ref()?;
        if let Some(page) = &self.config.approval
            && page.policy.covers(name, effect)
            && caps.url.is_some()
        {
            return Some(mrtr::Mode::Page {
                page: page.clone(),
                store: self.config.decisions(page),
            });
        }
        let policy = self.config.elicitation.as_ref()?;
        if !policy.covers(name, effect) || (caps.form.is_none() && caps.url.is_some()) {
            return None;
        }
        let schema = policy
            .allows_edits()
            .then(|| self.get_tool(name).map(|t| t.input_schema))
            .flatten();
        Some(mrtr::Mode::Form(schema))
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
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.config.tasks.is_some() {
            capabilities = tasks::advertise(capabilities);
        }
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.config.name.clone(),
                self.config.version.clone(),
            ))
            .with_protocol_version(MAX_SESSION_VERSION);
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

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Called before rmcp acknowledges the stream: what the client sees now
        // is where the stream starts.
        let mut listens = crate::sync::lock(&self.listens);
        if listens.len() < PENDING_LISTENS {
            listens.push_back(self.catalog.listing(self.config.elicitation.as_ref()));
        }
        drop(listens);
        stateless::accepted(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // The oldest: never newer than this stream's own start.
        let from = crate::sync::lock(&self.listens).pop_front();
        stateless::listen(
            Arc::clone(&self.catalog),
            self.config.elicitation.clone(),
            subscription,
            from,
        )
        .await;
        Ok(())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.config.tasks.as_ref().ok_or_else(tasks::not_found)?;
        let principal = mrtr::principal(&context);
        let record = tasks
            .load(&request.task_id, &principal)
            .await?
            .ok_or_else(tasks::not_found)?;
        Ok(GetTaskResult::new(
            tasks.detailed(&request.task_id, &record),
        ))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.config.tasks.as_ref().ok_or_else(tasks::not_found)?;
        let principal = mrtr::principal(&context);
        let Some(record) = tasks.load(&request.task_id, &principal).await? else {
            return Err(tasks::not_found());
        };
        let entry = self.catalog.tm.inner.lookup(&record.tool);
        let shape = entry
            .as_ref()
            .map_or(OutputShape::Undeclared, |e| McpTool::of(e).shape);
        let caps = context.client_capabilities();
        let mode = entry.and_then(|e| self.client_mode(&record.tool, e.effect, caps.as_ref()));
        tasks::update(
            &self.catalog.tm,
            tasks,
            &request.task_id,
            &principal,
            &request.input_responses,
            shape,
            mode,
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.config.tasks.as_ref().ok_or_else(tasks::not_found)?;
        let principal = mrtr::principal(&context);
        tasks::cancel(&self.catalog.tm, tasks, &request.task_id, &principal).await
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let entry = self.catalog.tm.inner.lookup(name)?;
        Some(McpTool::of(&entry).tool.clone())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listing = self.catalog.listing(self.config.elicitation.as_ref());
        // A client that answers elicitations also sees the guarded tools this
        // server confirms by asking it.
        let tools = listing.for_client(if stateless::is_modern(&context) {
            // 2026-07-28: the capabilities the request's `_meta` declares.
            context
                .client_capabilities()
                .is_some_and(|c| c.elicitation.is_some())
        } else {
            elicits(&context.peer)
        });
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
        if stateless::is_modern(&context) {
            stateless::cache_hints(&mut result, self.config.list_ttl_ms);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp spawns this future by value and tokio moves it into its task: the
        // call's own state (several KB: the pipeline, a confirmation round) is
        // boxed once here, so what moves is a pointer.
        Box::pin(self.call_tool_boxed(request, context)).await
    }
}

impl McpSession {
    /// `tools/call`, boxed by [`ServerHandler::call_tool`].
    async fn call_tool_boxed(
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
        let modern = stateless::is_modern(&context);
        // 2026-07-28: log messages only for a request that opts in with a level
        // in its `_meta`; a session's level otherwise.
        let level = if modern {
            context
                .meta
                .log_level()
                .map(|l| SessionLevel::new(from_rmcp(l)))
        } else {
            Some(self.level.clone())
        };
        if let Some(level) = level {
            let n = Arc::clone(&notes);
            options = options.on_log(move |m| {
                if level.lets_through(m.level) {
                    n.log(m);
                }
            });
        }
        if let Some(client) = McpClient::of(&context.peer) {
            options = options.client(client);
        }
        let effect = entry.as_ref().map(|e| e.effect);
        let shape = entry
            .as_ref()
            .map_or(OutputShape::Undeclared, |e| McpTool::of(e).shape);
        // 2026-07-28: the client's capabilities are in each request's `_meta`
        // (read once per call).
        let caps = if modern {
            context.client_capabilities()
        } else {
            None
        };
        let mode = effect.and_then(|e| self.client_mode(name, e, caps.as_ref()));
        if let Some(tasks) = &self.config.tasks {
            let support = tasks.options.support_of(name);
            let declared = caps.as_ref().is_some_and(|c| c.supports_tasks());
            if support == tasks::TaskSupport::Required && !declared && entry.is_some() {
                return Err(tasks::required_error());
            }
            if declared && support != tasks::TaskSupport::Forbidden {
                let start = tasks::Start {
                    tm: self.catalog.tm.clone(),
                    tasks: Arc::clone(tasks),
                    name: name.to_owned(),
                    args: input,
                    principal: mrtr::principal(&context),
                    shape,
                    by_client: mode,
                    support,
                    request_state: request.request_state,
                    input_responses: request.input_responses,
                    answerable: mrtr::Answerable::of(caps.as_ref()),
                };
                return start.run(options).await;
            }
        }
        let legacy_elicits = !modern
            && elicits(&context.peer)
            && effect.is_some_and(|e| {
                self.config
                    .elicitation
                    .as_ref()
                    .is_some_and(|p| p.covers(name, e))
            });
        // 2026-07-28: ctx.elicit and ctx.sample go back to the client in rounds
        // of their own; a capability the request did not declare is not asked.
        let round = match &self.config.handles {
            Some(sealer) if modern && mode.is_none() => {
                let stop = context.ct.child_token();
                let principal = mrtr::principal(&context);
                match mrtr::Round::open(
                    sealer,
                    &self.catalog.tm,
                    (name, &principal, &input),
                    request.request_state.as_deref(),
                    request.input_responses.as_ref(),
                    mrtr::Answerable::of(caps.as_ref()),
                    stop.clone(),
                )
                .await
                {
                    Ok(round) => {
                        options = options
                            .signal(stop)
                            .client(mrtr::RoundClient(Arc::clone(&round)));
                        Some((round, principal, input.clone()))
                    }
                    Err(mrtr::StateError::Tampered) => return Err(mrtr::tampered()),
                    Err(mrtr::StateError::Outcome(outcome)) => {
                        return Ok(call_result(outcome, shape).into())
                    }
                }
            }
            _ => None,
        };
        let legacy_page = self.config.approval.as_ref().filter(|p| {
            !modern
                && effect.is_some_and(|e| p.policy.covers(name, e))
                && context
                    .peer
                    .supported_elicitation_modes()
                    .contains(&rmcp::service::ElicitationMode::Url)
        });
        let outcome = match (mode, &self.config.handles, legacy_page) {
            // 2026-07-28: confirmation by a multi round-trip request.
            (Some(mode), Some(sealer), _) => {
                let call = mrtr::Call {
                    tm: &self.catalog.tm,
                    sealer,
                    name,
                    args: input,
                    principal: mrtr::principal(&context),
                    request_state: request.request_state,
                    input_responses: request.input_responses,
                    mode,
                };
                match call.run(options).await {
                    mrtr::Reply::InputRequired(r) => {
                        notes.flush().await;
                        return Ok(r.into());
                    }
                    mrtr::Reply::Outcome(o) => o,
                    mrtr::Reply::Tampered => return Err(mrtr::tampered()),
                }
            }
            // 2025-11-25: the person on the app's page; the session's client
            // is told where (URL mode) while the call waits.
            (None, Some(sealer), Some(page)) => {
                super::approval::legacy(
                    &self.catalog.tm,
                    page,
                    sealer,
                    self.config.decisions(page),
                    &context.peer,
                    name,
                    input,
                    options,
                    context.ct.clone(),
                )
                .await
            }
            // 2025-11-25: the session's client is asked while the call waits.
            _ if legacy_elicits => {
                options = options.confirm_handler(ElicitHandler {
                    peer: context.peer.clone(),
                });
                self.catalog.tm.call(name, input, options).await
            }
            _ => self.catalog.tm.call(name, input, options).await,
        };
        notes.flush().await;
        let outcome = match (round, &self.config.handles) {
            (Some((round, principal, args)), Some(sealer)) => {
                match round.reply(sealer, &self.catalog.tm, (name, &principal, &args)) {
                    Some(mrtr::Reply::InputRequired(r)) => return Ok(r.into()),
                    Some(mrtr::Reply::Outcome(o)) => o,
                    Some(mrtr::Reply::Tampered) => return Err(mrtr::tampered()),
                    None => match round.missing(&outcome) {
                        // The tool failed for want of a capability the request's
                        // client did not declare.
                        Some(required) => {
                            return Err(ErrorData::missing_required_client_capability(required))
                        }
                        None => outcome,
                    },
                }
            }
            _ => outcome,
        };
        if outcome.refusal_code() == Some(RefusalCode::UnknownTool) {
            let message = outcome
                .refusal()
                .map_or_else(String::new, |r| r.message.clone());
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {message}"),
                Some(serde_json::json!({"code": "unknown_tool"})),
            ));
        }
        Ok(call_result(outcome, shape).into())
    }
}
