//! An app's own rmcp `ServerHandler` behind Toolmark's server: resources,
//! templates, prompts and completions go to it, tools stay Toolmark's; driven by
//! rmcp's client.

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use toolmark::mcp::McpServer;

use crate::*;

/// The app's own resources, prompts and completions.
struct Docs;

impl ServerHandler for Docs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_prompts()
                .enable_completions()
                .enable_tools()
                .build(),
        )
        .with_instructions("Read docs://readme first.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "docs://readme",
            "readme",
        )]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("docs://notes/{id}", "note"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "docs://readme" {
            return Err(ErrorData::resource_not_found("no such doc", None));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text("Hello", request.uri)]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarize",
            Some("Summarize the notes"),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Please {}", request.name),
        )])
        .into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let prefix = request.argument.value;
        let values = ["alpha", "beta", "alps"]
            .iter()
            .filter(|v| v.starts_with(&prefix))
            .map(|v| (*v).to_owned())
            .collect();
        Ok(CompleteResult::new(CompletionInfo::new(values).unwrap()))
    }
}

#[tokio::test]
async fn resources_prompts_and_completions_go_to_the_apps_handler() {
    let server = McpServer::new(approving_app(&Log::default())).fallback_handler(Docs);
    let client = connect(&server, Client::default()).await;
    let info = client.peer_info().unwrap();
    let caps = &info.capabilities;
    assert!(caps.resources.is_some() && caps.prompts.is_some() && caps.completions.is_some());
    assert!(caps.tools.is_some() && caps.logging.is_some());
    assert_eq!(
        info.instructions.as_deref(),
        Some("Read docs://readme first.")
    );

    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources[0].uri, "docs://readme");
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "docs://notes/{id}");
    let read = client
        .read_resource(ReadResourceRequestParams::new("docs://readme"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents[0]).unwrap()["text"],
        "Hello"
    );
    let missing = client
        .read_resource(ReadResourceRequestParams::new("docs://nope"))
        .await;
    assert!(missing.is_err());
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "summarize");
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("summarize"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0]).unwrap()["content"]["text"],
        "Please summarize"
    );
    let done = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("summarize"),
            ArgumentInfo::new("topic", "al"),
        ))
        .await
        .unwrap();
    assert_eq!(done.completion.values, ["alpha", "alps"]);

    // Tools are still Toolmark's (the handler's own tool methods are unused).
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    let r = client
        .call_tool(call("notes.count", json!({})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"result": 3})));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_handler_those_methods_are_not_found() {
    let server = McpServer::new(approving_app(&Log::default()));
    let client = connect(&server, Client::default()).await;
    let caps = &client.peer_info().unwrap().capabilities;
    assert!(caps.resources.is_none() && caps.prompts.is_none());
    let err = client.list_all_resources().await.unwrap_err();
    assert!(format!("{err:?}").contains("-32601"), "{err:?}");
    let err = client
        .get_prompt(GetPromptRequestParams::new("x"))
        .await
        .unwrap_err();
    assert!(format!("{err:?}").contains("-32601"), "{err:?}");
    client.cancel().await.unwrap();
}
