//! A tool asking its client: `ctx.elicit` (elicitation/create) and `ctx.sample`
//! (sampling/createMessage) through the calling MCP session, and both without a
//! client that can be asked.

use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::ElicitationAction;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use toolmark::mcp::McpServer;
use toolmark::{
    CallOptions, Caller, CallerClient, ClientError, Effect, ElicitRequest, Elicited, SampleRequest,
    Sampled, ToolError, ToolSpec, Toolmark,
};

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    card: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Prompt {
    prompt: String,
    card: String,
}

/// The answer of an elicitation as the tool returns it.
fn answer(e: Elicited) -> Value {
    match e {
        Elicited::Accept(content) => json!({"action": "accept", "content": content}),
        Elicited::Decline => json!({"action": "decline"}),
        Elicited::Cancel => json!({"action": "cancel"}),
    }
}

/// `ask.form` elicits a form quoting its sensitive `card` (in the message and a
/// description); `ask.nested` elicits a schema MCP cannot carry; `ask.model`
/// samples a prompt quoting its sensitive `card`. Errors are returned as data,
/// with their code.
fn ask_app(timeout: Option<Duration>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let ask = tm.scope("ask");
    let mut form = ToolSpec::typed("form", "Ask a form", |ctx, c: Card| async move {
        let schema = json!({
            "type": "object",
            "properties": {
                "size": {"type": "string", "enum": ["S", "M", "L"], "description": format!("size for {}", c.card)},
                "count": {"type": "integer", "default": 1}
            },
            "required": ["size"]
        });
        Ok::<_, ToolError>(match ctx.elicit(format!("Which size for card {}?", c.card), schema).await {
            Ok(e) => answer(e),
            Err(e) => json!({"error": e.code(), "message": e.to_string()}),
        })
    })
    .effect(Effect::Read)
    .sensitive(["card"]);
    if let Some(t) = timeout {
        form = form.timeout(t);
    }
    ask.register(form).unwrap();
    ask.register(
        ToolSpec::typed(
            "nested",
            "Ask a nested form",
            |ctx, _: toolmark::NoInput| async move {
                let schema = json!({"type": "object", "properties": {"a": {"type": "object"}}});
                let e = ctx.elicit("Nested?", schema).await.unwrap_err();
                Err::<(), _>(ToolError::from(e))
            },
        )
        .effect(Effect::Read),
    )
    .unwrap();
    ask.register(
        ToolSpec::typed(
            "model",
            "Ask the client's model",
            |ctx, p: Prompt| async move {
                let request = SampleRequest::new(format!("{} {}", p.prompt, p.card))
                    .system_prompt(format!("card is {}", p.card))
                    .max_tokens(50);
                Ok::<_, ToolError>(match ctx.sample(request).await {
                    Ok(s) => json!({"text": s.text, "model": s.model, "stop": s.stop_reason}),
                    Err(e) => json!({"error": e.code()}),
                })
            },
        )
        .effect(Effect::Read)
        .sensitive(["card"]),
    )
    .unwrap();
    tm
}

async fn form(client: &rmcp::service::RunningService<rmcp::RoleClient, Client>) -> Value {
    client
        .call_tool(call("ask.form", json!({"card": SECRET})))
        .await
        .unwrap()
        .structured_content
        .unwrap()
}

#[tokio::test]
async fn elicit_accept_returns_the_content_and_the_request_is_scrubbed() {
    let c = Client {
        elicit: Some(ElicitationAction::Accept),
        answer: Some(json!({"size": "M", "count": 2})),
        ..Client::default()
    };
    let (asked, schemas) = (c.asked.clone(), c.schemas.clone());
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    assert_eq!(
        form(&client).await,
        json!({"action": "accept", "content": {"size": "M", "count": 2}})
    );
    assert_eq!(*asked.lock().unwrap(), ["Which size for card [redacted]?"]);
    let schema = schemas.lock().unwrap()[0].clone();
    assert_eq!(
        schema["properties"]["size"]["description"],
        "size for [redacted]"
    );
    assert_eq!(schema["properties"]["size"]["enum"], json!(["S", "M", "L"]));
    assert_eq!(schema["properties"]["count"]["default"], 1);
    assert!(!schema.to_string().contains(SECRET));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn elicit_decline_and_cancel_reach_the_tool() {
    let server = McpServer::new(ask_app(None));
    for (action, expected) in [
        (ElicitationAction::Decline, "decline"),
        (ElicitationAction::Cancel, "cancel"),
    ] {
        let c = Client {
            elicit: Some(action),
            ..Client::default()
        };
        let client = connect(&server, c).await;
        assert_eq!(form(&client).await, json!({"action": expected}));
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn elicit_without_the_clients_capability_is_not_supported() {
    // Neither capability: no client at all.
    let c = Client::default();
    let asked = c.asked.clone();
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    let r = form(&client).await;
    assert_eq!(r["error"], "not_supported");
    assert!(asked.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
    // Sampling only: elicitation still not supported.
    let c = Client {
        sampling: true,
        ..Client::default()
    };
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    let r = form(&client).await;
    assert_eq!(r["error"], "not_supported");
    assert!(r["message"].as_str().unwrap().contains("elicitation"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_schema_mcp_cannot_carry_is_an_invalid_request_error() {
    let c = Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    };
    let asked = c.asked.clone();
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    let r = client
        .call_tool(call("ask.nested", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let s = r.structured_content.unwrap();
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid_request:"),
        "{s}"
    );
    assert!(asked.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn sample_asks_the_clients_model_with_the_prompt_scrubbed() {
    let c = Client {
        sampling: true,
        ..Client::default()
    };
    let sampled = c.sampled.clone();
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    let r = client
        .call_tool(call(
            "ask.model",
            json!({"prompt": "Title for", "card": SECRET}),
        ))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap(),
        json!({"text": "sampled: Title for [redacted]", "model": "test-model", "stop": "endTurn"})
    );
    let sent = sampled.lock().unwrap()[0].clone();
    assert_eq!(sent["maxTokens"], 50);
    assert_eq!(sent["systemPrompt"], "card is [redacted]");
    assert_eq!(sent["messages"][0]["role"], "user");
    assert!(!sent.to_string().contains(SECRET));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn sample_without_the_sampling_capability_is_not_supported() {
    let c = Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    };
    let client = connect(&McpServer::new(ask_app(None)), c).await;
    let r = client
        .call_tool(call("ask.model", json!({"prompt": "p", "card": SECRET})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap(),
        json!({"error": "not_supported"})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_client_elicit_and_sample_are_not_supported() {
    let tm = ask_app(None);
    let out = tm
        .call(
            "ask.form",
            json!({"card": SECRET}),
            CallOptions::new(Caller::InApp),
        )
        .await;
    assert_eq!(out.output().unwrap()["error"], "not_supported");
    let out = tm
        .call(
            "ask.model",
            json!({"prompt": "p", "card": SECRET}),
            CallOptions::new(Caller::InApp),
        )
        .await;
    assert_eq!(out.output(), Some(&json!({"error": "not_supported"})));
    assert_eq!(
        ClientError::Cancelled.code(),
        "cancelled",
        "codes are stable"
    );
}

/// A client that answers after `delay` (accepting with `{"size": "L"}`).
struct Slow {
    delay: Duration,
}

impl CallerClient for Slow {
    fn elicit(&self, _: ElicitRequest) -> BoxFuture<'static, Result<Elicited, ClientError>> {
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(Elicited::Accept(json!({"size": "L"})))
        })
    }

    fn sample(&self, r: SampleRequest) -> BoxFuture<'static, Result<Sampled, ClientError>> {
        let text = r.messages[0].text.clone();
        Box::pin(async move { Ok(Sampled::new(text, "echo")) })
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_paused_while_the_user_answers_a_form() {
    // The tool's deadline is 1 s; the user takes 10 s to answer.
    let tm = ask_app(Some(Duration::from_secs(1)));
    let out = tm
        .call(
            "ask.form",
            json!({"card": SECRET}),
            CallOptions::new(Caller::InApp).client(Slow {
                delay: Duration::from_secs(10),
            }),
        )
        .await;
    assert_eq!(
        out.output(),
        Some(&json!({"action": "accept", "content": {"size": "L"}}))
    );
    // A client implementing only what it can: sample goes through (scrubbed).
    let out = tm
        .call(
            "ask.model",
            json!({"prompt": "p", "card": SECRET}),
            CallOptions::new(Caller::InApp).client(Slow {
                delay: Duration::ZERO,
            }),
        )
        .await;
    assert_eq!(out.output().unwrap()["text"], "p [redacted]");
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_call_ends_the_wait_for_an_answer() {
    let tm = ask_app(None);
    let seen = Log::default();
    let l = seen.clone();
    tm.scope("wait")
        .register(
            ToolSpec::typed(
                "form",
                "Wait for a form",
                move |ctx, _: toolmark::NoInput| {
                    let l = l.clone();
                    async move {
                        let e = ctx.elicit("Size?", json!({"type": "object"})).await;
                        l.push(format!("{:?}", e.map_err(|e| e.code())));
                        Ok::<_, ToolError>(())
                    }
                },
            )
            .effect(Effect::Read),
        )
        .unwrap();
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        t.cancel();
    });
    let out = tm
        .call(
            "wait.form",
            json!({}),
            CallOptions::new(Caller::InApp).signal(token).client(Slow {
                delay: Duration::from_secs(3600),
            }),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(toolmark::RefusalCode::Cancelled));
    assert_eq!(seen.get(), ["Err(\"cancelled\")"]);
}
