//! A complete in-app agent loop over an OpenAI-compatible endpoint, through a real
//! client library (`async-openai`), with Toolmark giving the model its tools.
//!
//! ```text
//! cargo run --features openai --example agent_loop
//! ```
//!
//! (The feature `openai` of the examples package adds the `async-openai` client.)
//!
//! Without configuration it starts a scripted "model" on 127.0.0.1 and talks to
//! it, so it runs without a network or a key. The script shows: the tool list
//! (dotted names mapped to `shop__orders__lookup`), a normal call, an invalid call
//! the model corrects, a consequential call that waits for the user (the model is
//! told not to retry), the user's approval, and the bridge's message appended to
//! the conversation. With `OPENAI_API_KEY` set (and optionally `OPENAI_BASE_URL`,
//! `OPENAI_MODEL`) it talks to that provider instead.

use std::sync::Arc;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use async_openai::Client;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolmark::agent::{AgentTools, Provider};
use toolmark::{Decision, Effect, ToolError, ToolSpec, Toolmark};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The order number.
    id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewCard {
    /// Name on the card.
    holder: String,
    /// Card number.
    number: String,
    /// Security code.
    cvc: String,
}

/// The app's tools.
fn app() -> Toolmark {
    let tm = Toolmark::builder().build().expect("default configuration");
    tm.scope_at("shop.orders")
        .register(
            ToolSpec::typed(
                "lookup",
                "Look up an order by number.",
                |_ctx, l: Lookup| async move {
                    Ok::<_, ToolError>(json!({"id": l.id, "status": "shipped", "items": 2}))
                },
            )
            .effect(Effect::Read),
        )
        .expect("valid tool");
    tm.scope("shop")
        .register(
            ToolSpec::typed(
                "status",
                "Report the shop's status.",
                |_ctx, _: toolmark::NoInput| async { Ok::<_, ToolError>("open") },
            )
            .effect(Effect::Read),
        )
        .expect("valid tool");
    tm.scope("billing")
        .register(
            ToolSpec::typed(
                "add_card",
                "Add a payment card.",
                |_ctx, c: NewCard| async move {
                    if c.cvc.len() < 3 {
                        return Err(ToolError::new("the security code is too short"));
                    }
                    let last4: String = c
                        .number
                        .chars()
                        .rev()
                        .take(4)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    Ok(format!("card of {} ending {last4} added", c.holder))
                },
            )
            .effect(Effect::Consequential)
            .sensitive(["number", "cvc"])
            .summary("Add a card for {holder}"),
        )
        .expect("valid tool");
    tm
}

/// The agent loop: ask the model, run its tool calls, append the results; when
/// the model is done and a call waits for the user, the user decides and the
/// bridge's message goes into the conversation. Returns the conversation.
pub(crate) async fn agent_loop(
    client: &Client<OpenAIConfig>,
    model: &str,
    tm: &Toolmark,
    prompt: &str,
) -> Result<Vec<Value>, Box<dyn std::error::Error + Send + Sync>> {
    let agent = AgentTools::new(tm, Provider::OpenAiChat);
    let mut bridge = tm.bridge();
    let mut messages = vec![
        json!({"role": "system", "content": "You help the user with their shop account."}),
        json!({"role": "user", "content": prompt}),
    ];
    for _turn in 0..8 {
        // The tool list is converted once per manifest version, so asking each turn is free.
        let request: CreateChatCompletionRequest = serde_json::from_value(json!({
            "model": model,
            "messages": messages,
            "tools": agent.tools_json(),
        }))?;
        let response: CreateChatCompletionResponse = client.chat().create(request).await?;
        let response = serde_json::to_value(&response)?;
        let reply = response["choices"][0]["message"].clone();
        println!("model: {}", short(&reply));
        messages.push(reply);

        let run = agent.run(&response).await;
        for call in &run.calls {
            println!("  {} → {}", call.tool, call.outcome.status());
        }
        if !run.is_empty() {
            messages.extend(run.messages);
            continue;
        }
        // The model's turn is over. Anything waiting for the user? Here the
        // "user" approves; an app shows `summary` (secrets redacted) and asks.
        let pending = tm.pending_confirmations();
        if pending.is_empty() {
            return Ok(messages);
        }
        for p in pending {
            println!("user approves: {}", p.summary);
            tm.confirm_pending(&p.confirm_id, Decision::approve()).await;
        }
        while let Some(msg) = bridge.try_recv() {
            if let Some(message) = agent.bridge_message(&msg) {
                println!("bridge: {}", short(&message));
                messages.push(message);
            }
        }
    }
    Err("the model did not finish in 8 turns".into())
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// The card number the scripted model sends; it must never come back to it.
pub(crate) const CARD: &str = "4242424242424242";

/// A scripted OpenAI-compatible "model" on 127.0.0.1: its base URL.
pub(crate) async fn scripted_model() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(body) = read_request(&mut socket).await else {
                    return;
                };
                let reply = match serde_json::from_slice::<Value>(&body) {
                    Ok(request) => script(&request),
                    Err(e) => Err(format!("bad request JSON: {e}")),
                };
                let (status, body) = match reply {
                    Ok(message) => ("200 OK", completion(message)),
                    Err(e) => (
                        "400 Bad Request",
                        json!({"error": {"message": e, "type": "invalid_request_error"}}),
                    ),
                };
                let body = body.to_string();
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(format!("http://{addr}/v1"))
}

/// One HTTP/1.1 request's body (enough HTTP for a loopback test server).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = socket.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(buf[end + 4..end + 4 + len].to_vec());
        }
        if buf.len() > 4 << 20 {
            return None;
        }
    }
}

fn completion(message: Value) -> Value {
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}

/// The scripted model: answers by what the conversation holds so far.
fn script(request: &Value) -> Result<Value, String> {
    let messages = request["messages"].as_array().ok_or("no messages")?;
    let names: Vec<&str> = request["tools"]
        .as_array()
        .ok_or("no tools")?
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for needed in ["shop__orders__lookup", "shop__status", "billing__add_card"] {
        if !names.contains(&needed) {
            return Err(format!("tool {needed} missing from {names:?}"));
        }
    }
    let tool_results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    if tool_results.iter().any(|c| c.contains(CARD)) {
        return Err("a tool result carried the card number".into());
    }
    let turns = messages.iter().filter(|m| m["role"] == "assistant").count();
    let last = messages.last().ok_or("empty conversation")?;
    Ok(match turns {
        // A normal call and one with a wrong argument type.
        0 => json!({"role": "assistant", "content": null, "tool_calls": [
            call("call_status", "shop__status", json!({})),
            call("call_lookup", "shop__orders__lookup", json!({"id": "seven"})),
        ]}),
        // Corrects the invalid call; adds a card (waits for the user).
        1 if tool_results.iter().any(|c| c.contains("\"invalid\"")) => {
            json!({"role": "assistant", "content": null, "tool_calls": [
                call("call_lookup_2", "shop__orders__lookup", json!({"id": 7})),
                call("call_card", "billing__add_card",
                     json!({"holder": "Ada", "number": CARD, "cvc": "123"})),
            ]})
        }
        2 if tool_results.iter().any(|c| c.contains("waiting_for_user")) => json!({
            "role": "assistant",
            "content": "Order 7 has shipped. I asked you to confirm adding the card."
        }),
        3 if last["role"] == "user"
            && last["content"]
                .as_str()
                .is_some_and(|c| c.contains("approved")) =>
        {
            json!({"role": "assistant", "content": "Your card is added."})
        }
        _ => return Err(format!("unexpected conversation at turn {turns}: {last}")),
    })
}

/// The loop against the scripted model; returns the conversation.
pub(crate) async fn run_scripted() -> Result<Vec<Value>, Box<dyn std::error::Error + Send + Sync>> {
    let base = scripted_model().await?;
    let client = Client::with_config(
        OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key("scripted"),
    );
    let tm = Arc::new(app());
    agent_loop(
        &client,
        "scripted",
        &tm,
        "Where is order 7? And add my card 4242…",
    )
    .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let messages = match std::env::var("OPENAI_API_KEY") {
        Ok(key) => {
            let mut config = OpenAIConfig::new().with_api_key(key);
            if let Ok(base) = std::env::var("OPENAI_BASE_URL") {
                config = config.with_api_base(base);
            }
            let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
            let prompt = format!(
                "Where is order 7? Then add my card: holder Ada, number {CARD}, security code 123."
            );
            agent_loop(&Client::with_config(config), &model, &app(), &prompt).await?
        }
        Err(_) => run_scripted().await?,
    };
    println!("{} messages in the conversation", messages.len());
    Ok(())
}
