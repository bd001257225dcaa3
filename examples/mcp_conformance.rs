//! The tools of the MCP conformance suite's server scenarios, as Toolmark tools,
//! served over Streamable HTTP.
//!
//! ```text
//! cargo run --features mcp --example mcp_conformance -- 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:3001/mcp \
//!     --expected-failures tests/mcp/conformance-expected-failures.yml
//! ```
//!
//! Resources, prompts and completions are served by the fixture's own rmcp
//! handler behind Toolmark's tools (`McpServer::fallback_handler`); what the
//! server does not pass is listed with its reason in
//! `tests/mcp/conformance-expected-failures.yml`.
//!
//! The same server answers the 2026-07-28 scenarios of the suite's
//! `0.2.0-alpha.12` (`--spec-version 2026-07-28`: stateless, `_meta` in every
//! request) with the fixtures those scenarios name (`test_missing_capability`,
//! `test_input_required_result_*`, the Tasks extension's `slow_compute`, …);
//! see `tests/mcp/conformance-2026-expected-failures.yml`.

use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use serde_json::{json, Value};
use toolmark::mcp::{Elicitation, McpServer, TaskOptions, TaskSupport};
use toolmark::{
    Content, Effect, Elicited, LogLevel, NoInput, SampleRequest, ScopeOptions, ToolContext,
    ToolError, ToolSpec, Toolmark,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ask {
    /// The message to show the user.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Prompt {
    /// The prompt to send to the client's model.
    prompt: String,
}

/// A read tool (every fixture but `confirm_delete` and `test_confirm_then_ask`
/// only reads).
fn read<T, O, F, Fut>(name: &str, description: &str, run: F) -> ToolSpec
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
    O: serde::Serialize,
    F: Fn(ToolContext, T) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<O, ToolError>> + Send + 'static,
{
    ToolSpec::typed(name, description, run).effect(Effect::Read)
}

/// Elicit `schema` with `message` and describe the answer as text.
async fn elicit(ctx: &ToolContext, message: String, schema: Value) -> Result<String, ToolError> {
    Ok(match ctx.elicit(message, schema).await? {
        Elicited::Accept(content) => format!("action=accept, content={content}"),
        Elicited::Decline => "action=decline, content={}".to_owned(),
        Elicited::Cancel => "action=cancel, content={}".to_owned(),
    })
}

fn elicitations() -> Vec<ToolSpec> {
    vec![
        read(
            "test_elicitation",
            "Asks the user for a username and an email",
            |ctx, a: Ask| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                let answer = elicit(&ctx, a.message, schema).await?;
                Ok::<_, ToolError>(Content::text(format!("User response: {answer}")))
            },
        ),
        read(
            "test_elicitation_sep1034_defaults",
            "Asks the user a form whose fields all have defaults",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {
                            "type": "string", "description": "User status",
                            "enum": ["active", "inactive", "pending"], "default": "active"
                        },
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    },
                    "required": []
                });
                let message = "Test client default value handling - please accept with defaults";
                let answer = elicit(&ctx, message.to_owned(), schema).await?;
                Ok::<_, ToolError>(Content::text(format!("Elicitation completed: {answer}")))
            },
        ),
        read(
            "test_elicitation_sep1330_enums",
            "Asks the user a form with every kind of enum",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]},
                        "legacyEnum": {
                            "type": "string", "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {"type": "array", "items": {
                            "type": "string", "enum": ["option1", "option2", "option3"]
                        }},
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                    },
                    "required": []
                });
                let answer = elicit(&ctx, "Choose some options".to_owned(), schema).await?;
                Ok::<_, ToolError>(Content::text(format!("Elicitation completed: {answer}")))
            },
        ),
        read(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            |ctx, p: Prompt| async move {
                let answer = ctx
                    .sample(SampleRequest::new(p.prompt).max_tokens(100))
                    .await?;
                Ok::<_, ToolError>(Content::text(format!("LLM response: {}", answer.text)))
            },
        ),
    ]
}

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A 44-byte WAV header with no samples (a valid, silent file).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn content(name: &str, description: &str, make: fn() -> Content) -> ToolSpec {
    read(name, description, move |_ctx, _: NoInput| async move {
        Ok::<_, ToolError>(make())
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Whom to greet.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Compute {
    /// How long to work, in seconds.
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: String,
}

/// The `http-custom-header-server-validation` fixture: `region` travels as
/// the `Mcp-Param-Region` header too (SEP-2243), which the server checks
/// against the body.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Route {
    /// Where to route (a gateway may route on the header).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// What to look up there.
    query: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The file to delete.
    #[serde(default)]
    filename: String,
}

/// The fixtures of the 2026-07-28 scenarios (and of the Tasks extension's).
fn fixtures_2026(tm: &Toolmark) -> Result<Vec<ToolSpec>, Box<dyn std::error::Error>> {
    // `test_trigger_tool_change` shows or hides this scope: the tool list changes.
    let extra = tm.scope("extra");
    extra.register(read(
        "listed_sometimes",
        "Listed while the extra scope is shown",
        |_ctx, _: NoInput| async { Ok::<_, ToolError>(Content::text("here")) },
    ))?;
    let one_answer = |key: &'static str, message: &'static str, field: &'static str| {
        move |ctx: ToolContext, _: NoInput| async move {
            let schema = json!({
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field]
            });
            let answer = elicit(&ctx, message.to_owned(), schema).await?;
            Ok::<_, ToolError>(Content::text(format!("{key}: {answer}")))
        }
    };
    Ok(vec![
        read(
            "test_missing_capability",
            "Needs the client's sampling capability",
            |ctx, _: NoInput| async move {
                let answer = ctx.sample(SampleRequest::new("Say hello").max_tokens(20)).await?;
                Ok::<_, ToolError>(Content::text(answer.text))
            },
        ),
        read(
            "test_logging_tool",
            "Logs three messages",
            |ctx, _: NoInput| async move {
                for m in ["one", "two", "three"] {
                    ctx.log(LogLevel::Info, m);
                }
                Ok::<_, ToolError>(Content::text("logged"))
            },
        ),
        read(
            "test_streaming_elicitation",
            "Asks the user a question",
            one_answer("streaming", "What is your name?", "name"),
        ),
        read(
            "test_trigger_tool_change",
            "Shows or hides the extra scope's tool",
            move |_ctx, _: NoInput| {
                let extra = extra.clone();
                async move {
                    extra.set_when(!extra.when());
                    Ok::<_, ToolError>(Content::text("the tool list changed"))
                }
            },
        ),
        read(
            "test_input_required_result_elicitation",
            "Asks the user's name",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                });
                // Asked under the key the scenario answers (`user_name`).
                let name = match ctx.elicit_keyed("user_name", "What is your name?", schema).await? {
                    Elicited::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
                    _ => "stranger".to_owned(),
                };
                Ok::<_, ToolError>(Content::text(format!("Hello, {name}!")))
            },
        ),
        read(
            "test_input_required_result_request_state",
            "Asks for a confirmation",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"]
                });
                ctx.elicit("Please confirm", schema).await?;
                Ok::<_, ToolError>(Content::text("state-ok"))
            },
        ),
        read(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation",
            one_answer("tampered", "Please confirm", "ok"),
        ),
        read(
            "test_input_required_result_multi_round",
            "Asks two questions, one after the other",
            |ctx, _: NoInput| async move {
                let name = elicit(
                    &ctx,
                    "Step 1: What is your name?".to_owned(),
                    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                )
                .await?;
                let color = elicit(
                    &ctx,
                    "Step 2: What is your favorite color?".to_owned(),
                    json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
                )
                .await?;
                Ok::<_, ToolError>(Content::text(format!("{name}; {color}")))
            },
        ),
        read(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            |ctx, _: NoInput| async move {
                let answer = ctx
                    .sample(
                        SampleRequest::new("What is the capital of France?")
                            .max_tokens(100)
                            .key("capital_question"),
                    )
                    .await?;
                Ok::<_, ToolError>(Content::text(answer.text))
            },
        ),
        read(
            "test_input_required_result_capabilities",
            "Asks the client's model when it samples, else the user",
            |ctx, _: NoInput| async move {
                let answer = ctx
                    .sample(SampleRequest::new("Say hello").max_tokens(20))
                    .await?;
                Ok::<_, ToolError>(Content::text(answer.text))
            },
        ),
        ToolSpec::new("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }))
            .effect(Effect::Read)
            .handler(|_ctx, input| async move { Ok(json!({"received": input})) }),
        read(
            "test_custom_headers_server",
            "Looks `query` up in `region` (an Mcp-Param-Region header)",
            |_ctx, r: Route| async move {
                Ok::<_, ToolError>(Content::text(format!("{} in {}", r.query, r.region)))
            },
        ),
        // Consequential: its confirmation is a round (the client's accept),
        // then it asks a question of its own, which the approved run cannot
        // ask (`not_supported`): it says so and finishes.
        ToolSpec::typed(
            "test_confirm_then_ask",
            "Once confirmed, asks which color",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"color": {"type": "string"}},
                    "required": ["color"]
                });
                Ok::<_, ToolError>(Content::text(match ctx.elicit("Which color?", schema).await {
                    Ok(Elicited::Accept(v)) => format!("color: {}", v["color"]),
                    Ok(_) => "no color".to_owned(),
                    Err(e) => format!("asked nothing: {}", e.code()),
                }))
            },
        )
        .effect(Effect::Consequential),
        // The Tasks extension's fixtures.
        read("greet", "Greets someone", |_ctx, g: Greet| async move {
            Ok::<_, ToolError>(Content::text(format!("Hello, {}!", g.name)))
        }),
        read(
            "slow_compute",
            "Works for `seconds`, then answers",
            |_ctx, c: Compute| async move {
                tokio::time::sleep(Duration::from_secs_f64(c.seconds.clamp(0.0, 120.0))).await;
                Ok::<_, ToolError>(Content::text(format!("computed {}", c.label)))
            },
        ),
        read(
            "failing_job",
            "Fails after a second",
            |_ctx, _: NoInput| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<(), _>(ToolError::new("failing_job failed, as it always does"))
            },
        ),
        ToolSpec::typed(
            "confirm_delete",
            "Deletes an item once the user confirms (a task waiting for the answer)",
            |_ctx, d: Delete| async move {
                Ok::<_, ToolError>(Content::text(format!("deleted {}", d.filename)))
            },
        )
        .effect(Effect::Destructive),
        read(
            "multi_input",
            "Works a moment (so it is a task), then asks two questions at once",
            |ctx, _: NoInput| async move {
                tokio::time::sleep(Duration::from_millis(700)).await;
                let schema = json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
                    "required": ["name"]
                });
                let (a, b) = tokio::join!(
                    ctx.elicit("First: your name?", schema.clone()),
                    ctx.elicit("Second: your name?", schema)
                );
                let name = |e: Elicited| match e {
                    Elicited::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
                    _ => "nobody".to_owned(),
                };
                Ok::<_, ToolError>(Content::text(format!("{} and {}", name(a?), name(b?))))
            },
        ),
        read(
            "test_tool_with_task",
            "Asks the user's name (a round before the task), then answers as a task",
            |ctx, _: NoInput| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                });
                let name = match ctx.elicit("What is your name?", schema).await? {
                    Elicited::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
                    _ => "stranger".to_owned(),
                };
                Ok::<_, ToolError>(Content::text(format!("Hello, {name}!")))
            },
        ),
        read(
            "protocol_error_job",
            "Panics",
            |_ctx, _: NoInput| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if std::hint::black_box(true) {
                    panic!("protocol_error_job panics, as it always does");
                }
                Ok::<_, ToolError>(Content::text("unreachable"))
            },
        ),
    ])
}

fn app() -> Result<Toolmark, Box<dyn std::error::Error>> {
    let tm = Toolmark::builder().build()?;
    let specs = [
        content("test_simple_text", "Returns simple text", || {
            Content::text("This is a simple text response for testing.")
        }),
        content("test_image_content", "Returns an image", || {
            Content::new().image(PNG, "image/png")
        }),
        content("test_audio_content", "Returns audio", || {
            Content::new().audio(WAV, "audio/wav")
        }),
        content(
            "test_embedded_resource",
            "Returns an embedded resource",
            || {
                Content::new().resource_text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )
            },
        ),
        content(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            || {
                Content::text("Multiple content types test:")
                    .image(PNG, "image/png")
                    .resource_text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )
            },
        ),
        read(
            "test_error_handling",
            "Always fails",
            |_ctx, _: NoInput| async {
                Err::<(), _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            },
        ),
        read(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100",
            |ctx, _: NoInput| async move {
                for (i, done) in [0, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(done, 100);
                }
                Ok::<_, ToolError>(Content::text("Progress test completed"))
            },
        ),
        read(
            "test_tool_with_logging",
            "Sends three info log messages, 50 ms apart",
            |ctx, _: NoInput| async move {
                ctx.log(LogLevel::Info, "Tool execution started");
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool processing data");
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool execution completed");
                Ok::<_, ToolError>(Content::text("Logging test completed"))
            },
        ),
    ];
    for spec in specs
        .into_iter()
        .chain(elicitations())
        .chain(fixtures_2026(&tm)?)
    {
        // Toolmark runs one call at a time per scope; the suite calls tools side
        // by side (a quick `greet` while `slow_compute` works), so each tool has a
        // transparent scope of its own (its own queue, no name segment).
        let own = ScopeOptions {
            transparent: true,
            ..Default::default()
        };
        tm.scope_with(spec.name(), own).register(spec)?;
    }
    Ok(tm)
}

/// The resources, resource template, prompts and completions the suite's
/// scenarios name, served by an rmcp handler of the fixture's own behind
/// Toolmark's tools ([`McpServer::fallback_handler`]).
struct Everything;

/// How long the lists and reads may be cached (2026-07-28 `ttlMs`).
const TTL_MS: u64 = 60_000;

const TEXT_URI: &str = "test://static-text";
const BINARY_URI: &str = "test://static-binary";
const TEMPLATE: &str = "test://template/{id}/data";

fn fresh<T: serde::de::DeserializeOwned>(mut v: Value) -> Result<T, ErrorData> {
    v["ttlMs"] = json!(TTL_MS);
    v["cacheScope"] = json!("public");
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for Everything {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        fresh(json!({"resources": [
            {"uri": TEXT_URI, "name": "static-text", "description": "A static text resource",
             "mimeType": "text/plain"},
            {"uri": BINARY_URI, "name": "static-binary", "description": "A static PNG",
             "mimeType": "image/png"}
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        fresh(json!({"resourceTemplates": [
            {"uriTemplate": TEMPLATE, "name": "template-data",
             "description": "Data for an id", "mimeType": "application/json"}
        ]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let id = uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
            .filter(|id| !id.is_empty() && !id.contains('/'));
        let contents = match (uri.as_str(), id) {
            (TEXT_URI, _) => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            (BINARY_URI, _) => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            (_, Some(id)) => json!({"uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string()}),
            _ => {
                return Err(ErrorData::invalid_params(
                    "Resource not found",
                    Some(json!({"uri": uri})),
                ))
            }
        };
        let result: ReadResourceResult = fresh(json!({"contents": [contents]}))?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let arg = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
        fresh(json!({"prompts": [
            {"name": "test_simple_prompt", "description": "A prompt without arguments"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
             "arguments": [arg("arg1", "First test argument"), arg("arg2", "Second test argument")]},
            {"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource",
             "arguments": [arg("resourceUri", "URI of the resource to embed")]},
            {"name": "test_prompt_with_image", "description": "A prompt with an image"},
            {"name": "test_input_required_result_prompt",
             "description": "A prompt that asks the user for context first"}
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| {
            args.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let text = |t: String| user(json!({"type": "text", "text": t}));
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![text("This is a simple prompt for testing.".to_owned())],
            "test_prompt_with_arguments" => vec![text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            ))],
            "test_prompt_with_embedded_resource" => vec![
                user(json!({"type": "resource", "resource": {
                    "uri": arg("resourceUri"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}})),
                text("Please process the embedded resource above.".to_owned()),
            ],
            "test_prompt_with_image" => vec![
                user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
                text("Please analyze the image above.".to_owned()),
            ],
            // SEP-2322 outside a tool: the prompt asks the user first (an
            // `input_required` round); the retry carries the answer.
            "test_input_required_result_prompt" => {
                let answer = request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("context"))
                    .and_then(|v| v.get("content"))
                    .and_then(|c| c.get("context"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                match answer {
                    Some(context) => vec![text(format!("A prompt for: {context}"))],
                    None => {
                        let ask: InputRequiredResult = serde_json::from_value(json!({
                            "resultType": "input_required",
                            "inputRequests": {"context": {
                                "method": "elicitation/create",
                                "params": {
                                    "mode": "form",
                                    "message": "What context should the prompt use?",
                                    "requestedSchema": {"type": "object",
                                        "properties": {"context": {"type": "string"}},
                                        "required": ["context"]}
                                }
                            }}
                        }))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                        return Ok(GetPromptResponse::InputRequired(ask));
                    }
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown prompt: {other}"),
                    None,
                ))
            }
        };
        let result: GetPromptResult = serde_json::from_value(json!({ "messages": messages }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }

    // 2025-11-25 clients subscribe to a resource (the 2026-07-28 revision
    // drops these two); nothing here changes, so nothing is ever sent.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        _: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let prefix = request.argument.value;
        let values = ["test", "testing", "tested", "value"]
            .iter()
            .filter(|v| v.starts_with(&prefix))
            .map(|v| (*v).to_owned())
            .collect();
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    McpServer::new(app()?)
        // A call of a client that declares the Tasks extension becomes a task
        // after 500 ms (the suite's `slow_compute` works for a second; `greet`
        // answers at once, a sync result even on a busy machine).
        // `failing_job` and `test_tool_with_task` are always tasks (a client
        // without the extension is answered -32021).
        .tasks(
            TaskOptions::new()
                .after(Duration::from_millis(500))
                .support("failing_job", TaskSupport::Required)
                .support("test_tool_with_task", TaskSupport::Required),
        )
        // `confirm_delete` (the Tasks extension's fixture) asks the calling
        // client: a task in `input_required`, answered with `tasks/update`.
        .confirm_by_elicitation(
            Elicitation::consequential()
                .destructive()
                .only(["confirm_delete", "test_confirm_then_ask"]),
        )
        // Resources, prompts and completions: the fixture's own rmcp handler.
        .fallback_handler(Everything)
        .server_info("toolmark-conformance", env!("CARGO_PKG_VERSION"))
        .serve_listener(listener)
        .await?;
    Ok(())
}
