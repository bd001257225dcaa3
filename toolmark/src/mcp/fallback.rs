//! The app's own rmcp [`ServerHandler`] behind Toolmark's: every method that is
//! not a tool method (resources, resource templates, prompts, completions,
//! resource subscriptions) goes to it, so one server serves both.

use futures_util::future::BoxFuture;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ResultType, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

type Answer<'a, T> = BoxFuture<'a, Result<T, ErrorData>>;

/// A [`ServerHandler`] with its type erased: what [`McpServer::fallback_handler`](super::McpServer::fallback_handler) keeps.
pub(crate) trait Fallback: Send + Sync + 'static {
    fn info(&self) -> ServerConfig;
    fn complete(
        &self,
        r: CompleteRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
    fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;
    fn list_prompts(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;
    fn list_resources(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;
    fn subscribe(&self, r: SubscribeRequestParams, c: RequestContext<RoleServer>)
        -> Answer<'_, ()>;
    fn unsubscribe(
        &self,
        r: UnsubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
}

// resources/subscribe and unsubscribe are marked deprecated by rmcp (the
// 2026-07-28 revision replaces them); 2025-11-25 clients use them.
#[allow(deprecated)]
impl<H: ServerHandler> Fallback for H {
    fn info(&self) -> ServerConfig {
        ServerHandler::get_info(self)
    }
    fn complete(
        &self,
        r: CompleteRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, r, c))
    }
    fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, r, c))
    }
    fn list_prompts(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, r, c))
    }
    fn list_resources(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, r, c))
    }
    fn list_resource_templates(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(self, r, c))
    }
    fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, r, c))
    }
    fn subscribe(
        &self,
        r: SubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, r, c))
    }
    fn unsubscribe(
        &self,
        r: UnsubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, r, c))
    }
}

/// Toolmark's capabilities plus the fallback's non-tool ones (resources,
/// prompts, completions); the tools and logging capabilities stay Toolmark's.
pub(crate) fn merge(ours: &mut ServerCapabilities, theirs: ServerCapabilities) {
    ours.resources = theirs.resources;
    ours.prompts = theirs.prompts;
    ours.completions = theirs.completions;
}

/// A result the app's handler built: it says it is complete (`resultType`,
/// which 2026-07-28 requires and rmcp strips for older clients) even when the
/// handler built it without (from JSON, say).
trait Completed {
    fn completed(self) -> Self;
}

macro_rules! completed {
    ($($t:ty),*) => {$(
        impl Completed for $t {
            fn completed(mut self) -> Self {
                self.result_type.get_or_insert(ResultType::COMPLETE);
                self
            }
        }
    )*};
}

completed!(
    CompleteResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult
);

impl Completed for GetPromptResponse {
    fn completed(self) -> Self {
        match self {
            GetPromptResponse::Complete(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                GetPromptResponse::Complete(r)
            }
            other => other,
        }
    }
}

impl Completed for ReadResourceResponse {
    fn completed(self) -> Self {
        match self {
            ReadResourceResponse::Complete(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                ReadResourceResponse::Complete(r)
            }
            other => other,
        }
    }
}

impl Completed for () {
    fn completed(self) -> Self {}
}

/// The fallback's answer, or "method not found" (`-32601`) without one.
macro_rules! forward {
    ($name:ident, $params:ty, $result:ty, $method:ty) => {
        pub(crate) async fn $name(
            fallback: Option<&dyn Fallback>,
            request: $params,
            context: RequestContext<RoleServer>,
        ) -> Result<$result, ErrorData> {
            match fallback {
                Some(f) => f.$name(request, context).await.map(Completed::completed),
                None => Err(ErrorData::method_not_found::<$method>()),
            }
        }
    };
}

use rmcp::model::{
    CompleteRequestMethod, GetPromptRequestMethod, ListPromptsRequestMethod,
    ListResourceTemplatesRequestMethod, ListResourcesRequestMethod, ReadResourceRequestMethod,
    SubscribeRequestMethod, UnsubscribeRequestMethod,
};

forward!(
    complete,
    CompleteRequestParams,
    CompleteResult,
    CompleteRequestMethod
);
forward!(
    get_prompt,
    GetPromptRequestParams,
    GetPromptResponse,
    GetPromptRequestMethod
);
forward!(
    list_prompts,
    Option<PaginatedRequestParams>,
    ListPromptsResult,
    ListPromptsRequestMethod
);
forward!(
    list_resources,
    Option<PaginatedRequestParams>,
    ListResourcesResult,
    ListResourcesRequestMethod
);
forward!(
    list_resource_templates,
    Option<PaginatedRequestParams>,
    ListResourceTemplatesResult,
    ListResourceTemplatesRequestMethod
);
forward!(
    read_resource,
    ReadResourceRequestParams,
    ReadResourceResponse,
    ReadResourceRequestMethod
);
forward!(
    subscribe,
    SubscribeRequestParams,
    (),
    SubscribeRequestMethod
);
forward!(
    unsubscribe,
    UnsubscribeRequestParams,
    (),
    UnsubscribeRequestMethod
);
