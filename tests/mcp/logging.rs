//! `ctx.log`: `notifications/message` at or above the session's level (set by
//! `logging/setLevel`), scrubbed of the call's secrets; a tracing event when
//! the call has no log sink.

use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::{CallOptions, Caller, Effect, LogLevel, LogMessage, ToolError, ToolSpec, Toolmark};

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Charge {
    card: String,
}

/// `talk.levels` logs its level's name at every level, least severe first;
/// `talk.charge` logs a message quoting its sensitive `card`.
fn talk_app() -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let talk = tm.scope("talk");
    talk.register(
        ToolSpec::typed(
            "levels",
            "Log at every level",
            |ctx, _: toolmark::NoInput| async move {
                for level in LogLevel::ALL {
                    ctx.log(level, level.as_str());
                }
                Ok::<_, ToolError>("logged")
            },
        )
        .effect(Effect::Read),
    )
    .unwrap();
    talk.register(
        ToolSpec::typed("charge", "Log a charge", |ctx, c: Charge| async move {
            ctx.log(LogLevel::Warning, format!("charging card {} now", c.card));
            Ok::<_, ToolError>("charged")
        })
        .effect(Effect::Write)
        .sensitive(["card"]),
    )
    .unwrap();
    tm
}

fn seen(logs: &Arc<Mutex<Vec<Value>>>) -> Vec<Value> {
    std::mem::take(&mut *logs.lock().unwrap())
}

#[tokio::test]
async fn the_server_declares_logging_and_answers_set_level_with_an_empty_result() {
    let client = connect(&McpServer::new(talk_app()), Client::default()).await;
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.logging.is_some());
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn log_messages_at_or_above_the_session_level_reach_the_client_and_none_below() {
    let c = Client::default();
    let logs = c.logs.clone();
    let client = connect(&McpServer::new(talk_app()), c).await;
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    client
        .call_tool(call("talk.levels", json!({})))
        .await
        .unwrap();
    // Every message is sent before the result.
    let got = seen(&logs);
    let levels: Vec<&str> = got.iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(
        levels,
        ["warning", "error", "critical", "alert", "emergency"]
    );
    assert_eq!(
        got[0],
        json!({"level": "warning", "logger": "talk.levels", "data": "warning"})
    );
    // Lowering the level lets everything through.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    client
        .call_tool(call("talk.levels", json!({})))
        .await
        .unwrap();
    assert_eq!(seen(&logs).len(), 8);
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Emergency))
        .await
        .unwrap();
    client
        .call_tool(call("talk.levels", json!({})))
        .await
        .unwrap();
    assert_eq!(
        seen(&logs),
        [json!({"level": "emergency", "logger": "talk.levels", "data": "emergency"})]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_level_is_per_session_and_the_server_default_applies_until_set() {
    let server = McpServer::new(talk_app()).log_level(LogLevel::Error);
    let (c1, c2) = (Client::default(), Client::default());
    let (l1, l2) = (c1.logs.clone(), c2.logs.clone());
    let a = connect(&server, c1).await;
    let b = connect(&server, c2).await;
    a.set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    a.call_tool(call("talk.levels", json!({}))).await.unwrap();
    b.call_tool(call("talk.levels", json!({}))).await.unwrap();
    assert_eq!(seen(&l1).len(), 8);
    let levels: Vec<Value> = seen(&l2).iter().map(|l| l["level"].clone()).collect();
    assert_eq!(
        levels,
        [
            json!("error"),
            json!("critical"),
            json!("alert"),
            json!("emergency")
        ]
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test]
async fn a_secret_in_a_log_message_is_scrubbed() {
    let c = Client::default();
    let logs = c.logs.clone();
    let client = connect(&McpServer::new(talk_app()), c).await;
    client
        .call_tool(call("talk.charge", json!({"card": SECRET})))
        .await
        .unwrap();
    let got = seen(&logs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["data"], "charging card [redacted] now");
    assert!(!got[0].to_string().contains(SECRET));
    client.cancel().await.unwrap();
}

/// A tracing event: (target, level, message, fields).
type Seen = (String, tracing::Level, String, Vec<(String, String)>);

/// The tracing events seen.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<Seen>>>);

struct Visit<'a>(&'a mut String, &'a mut Vec<(String, String)>);

impl tracing::field::Visit for Visit<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.1.push((field.name().to_owned(), value.to_owned()));
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        } else {
            self.1.push((field.name().to_owned(), format!("{value:?}")));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let (mut message, mut fields) = (String::new(), Vec::new());
        event.record(&mut Visit(&mut message, &mut fields));
        let meta = event.metadata();
        self.0
            .lock()
            .unwrap()
            .push((meta.target().to_owned(), *meta.level(), message, fields));
    }
}

#[tokio::test]
async fn without_a_log_sink_ctx_log_is_a_scrubbed_tracing_event() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let _guard = crate::logs::scoped(tracing_subscriber::registry().with(events.clone()));
    let tm = talk_app();
    let out = tm
        .call(
            "talk.charge",
            json!({"card": SECRET}),
            CallOptions::new(Caller::InApp),
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    let got: Vec<_> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.0 == "toolmark::tool")
        .cloned()
        .collect();
    assert_eq!(got.len(), 1, "{got:?}");
    let (_, level, message, fields) = &got[0];
    assert_eq!(*level, tracing::Level::WARN);
    assert_eq!(message, "charging card [redacted] now");
    assert!(fields.contains(&("tool".to_owned(), "talk.charge".to_owned())));
    assert!(fields.contains(&("level".to_owned(), "warning".to_owned())));
    // With a sink, the sink gets it and tracing does not.
    events.0.lock().unwrap().clear();
    let sink: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let s = Arc::clone(&sink);
    let out = tm
        .call(
            "talk.charge",
            json!({"card": SECRET}),
            CallOptions::new(Caller::InApp).on_log(move |m| s.lock().unwrap().push(m)),
        )
        .await;
    assert!(out.is_ok());
    let sink = sink.lock().unwrap();
    assert_eq!(sink.len(), 1);
    assert_eq!(sink[0].tool, "talk.charge");
    assert_eq!(sink[0].level, LogLevel::Warning);
    assert_eq!(sink[0].message, "charging card [redacted] now");
    assert!(!events
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|e| e.0 == "toolmark::tool"));
}

#[tokio::test]
async fn a_nested_call_logs_to_the_same_sink() {
    let tm = talk_app();
    tm.scope("outer")
        .register(
            ToolSpec::typed(
                "run",
                "Run talk.levels",
                |ctx, _: toolmark::NoInput| async move {
                    ctx.log(LogLevel::Info, "outer");
                    let o = ctx.call("talk.levels", json!({})).await;
                    Ok::<_, ToolError>(o.is_ok())
                },
            )
            .effect(Effect::Read),
        )
        .unwrap();
    let sink: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let s = Arc::clone(&sink);
    let out = tm
        .call(
            "outer.run",
            json!({}),
            CallOptions::new(Caller::InApp).on_log(move |m| s.lock().unwrap().push(m)),
        )
        .await;
    assert_eq!(out.output(), Some(&json!(true)));
    let sink = sink.lock().unwrap();
    assert_eq!(sink.len(), 9);
    assert_eq!(
        (sink[0].tool.as_str(), sink[0].message.as_str()),
        ("outer.run", "outer")
    );
    assert_eq!(sink[1].tool, "talk.levels");
}
