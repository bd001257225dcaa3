//! `toolmark::mcp` driven by rmcp's own client over an in-process duplex, and its
//! HTTP router driven as a tower service.

// rmcp marks logging and sampling deprecated (SEP-2577, a future revision); the
// revisions the server speaks have both.
#![allow(deprecated)]

mod ask;
mod attack_2026;
#[path = "../support/canary.rs"]
mod canary;
mod canary_2026;
mod conformance;
mod conformance_2026;
mod elicit_path;
#[path = "../support/external.rs"]
mod external;
mod fallback;
mod fastcall;
mod http;
mod http_2026;
#[cfg(feature = "redis")]
mod instances;
mod listen;
mod load;
mod logging;
#[path = "../support/logs.rs"]
mod logs;
mod oversize;
mod python;
mod python_2026;
mod quiet_logs;
mod rounds_confirmed;
mod rounds_fallback;
mod rounds_headers;
mod rounds_keys;
mod rounds_replay;
mod scopes_shared;

mod session;
mod stateless;
mod stdio_fast;
mod stdio_front;
mod tasks_ask;
mod tasks_canary;
mod tasks_python;
mod typescript;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProtocolVersion, SamplingCapability, SamplingContent,
    SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::{Decision, Effect, ToolError, ToolSpec, Toolmark};

pub(crate) use crate::logs::Logs;

pub(crate) const SECRET: &str = "4111-1111-SECRET-42";

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Note {
    /// The note's text.
    pub(crate) text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Payment {
    pub(crate) to: String,
    pub(crate) amount: u32,
    pub(crate) card: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Wait {
    pub(crate) steps: u64,
}

/// How many requests rmcp's serve loop received since the last call (its
/// DEBUG line "received request"); the canary secret is in none of its lines.
pub(crate) fn rmcp_requests(logs: &Logs) -> usize {
    let text = logs.take();
    assert!(!text.contains(SECRET), "a secret in rmcp's logs: {text}");
    text.matches("received request").count()
}

/// A builder whose app handler must never be asked: the client confirms (over
/// elicitation or a multi round-trip request).
pub(crate) fn client_confirms(builder: toolmark::ToolmarkBuilder) -> toolmark::ToolmarkBuilder {
    builder.confirm_handler(|_req: toolmark::ConfirmRequest| async {
        panic!("the app's handler is not asked: the client confirms")
    })
}

/// The app the tests serve: read, write, consequential (sensitive `card`),
/// destructive, a long call, and a scope `extra` to show and hide.
pub(crate) fn app(builder: toolmark::ToolmarkBuilder, log: &Log) -> Toolmark {
    let tm = builder.build().unwrap();
    let notes = tm.scope("notes");
    notes
        .register(
            ToolSpec::typed(
                "count",
                "Count the notes",
                |_ctx, _: toolmark::NoInput| async { Ok::<_, ToolError>(3) },
            )
            .effect(Effect::Read)
            .title("Count notes")
            .output_schema(json!({"type": "integer"})),
        )
        .unwrap();
    notes
        .register(
            ToolSpec::typed("add", "Add a note", |_ctx, n: Note| async move {
                if n.text.is_empty() {
                    return Err(ToolError::new("empty note"));
                }
                Ok(json!({"id": 4, "text": n.text}))
            })
            .effect(Effect::Write),
        )
        .unwrap();
    let l = log.clone();
    notes
        .register(
            ToolSpec::typed(
                "purge",
                "Delete every note",
                move |_ctx, _: toolmark::NoInput| {
                    let l = l.clone();
                    async move {
                        l.push("purged");
                        Ok::<_, ToolError>(json!({"deleted": 3}))
                    }
                },
            )
            .effect(Effect::Destructive)
            .summary("Delete every note"),
        )
        .unwrap();
    let l = log.clone();
    tm.scope("pay")
        .register(
            ToolSpec::typed("send", "Pay someone", move |_ctx, p: Payment| {
                let l = l.clone();
                async move {
                    l.push(format!("paid {} to {}", p.amount, p.to));
                    // A careless tool echoing the secret: scrubbed by the core.
                    if p.to == "echo" {
                        return Err(ToolError::new(format!("card {} declined", p.card)));
                    }
                    Ok::<_, ToolError>(json!({"paid": p.amount}))
                }
            })
            .effect(Effect::Consequential)
            .sensitive(["card"])
            .summary("Pay {amount} to {to}"),
        )
        .unwrap();
    let l = log.clone();
    tm.scope("slow")
        .register(
            ToolSpec::typed("wait", "Wait, reporting progress", move |ctx, w: Wait| {
                let l = l.clone();
                async move {
                    l.push("wait started");
                    let signal = ctx.signal();
                    for i in 0..w.steps {
                        ctx.progress(i + 1, w.steps);
                        tokio::select! {
                            () = signal.cancelled() => {
                                l.push("wait cancelled");
                                return Err(ToolError::new("cancelled"));
                            }
                            () = tokio::time::sleep(std::time::Duration::from_millis(10)) => {}
                        }
                    }
                    Ok::<_, ToolError>(json!({"waited": w.steps}))
                }
            })
            .effect(Effect::Read),
        )
        .unwrap();
    tm.scope("extra")
        .register(
            ToolSpec::typed("ping", "Ping", |_ctx, _: toolmark::NoInput| async {
                Ok::<_, ToolError>("pong")
            })
            .effect(Effect::Read),
        )
        .unwrap();
    tm
}

/// An app whose confirm handler approves unless the payee is `nobody`.
pub(crate) fn approving_app(log: &Log) -> Toolmark {
    let l = log.clone();
    app(
        Toolmark::builder().confirm_handler(move |req: toolmark::ConfirmRequest| {
            l.push(format!("app asked: {}", req.summary));
            let reject = req.input["to"] == "nobody";
            async move {
                if reject {
                    Decision::reject_with("not to nobody")
                } else {
                    Decision::approve()
                }
            }
        }),
        log,
    )
}

/// A shared, cloneable log.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub(crate) fn get(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A progress notification as the client saw it: (progress, total).
pub(crate) type ProgressSeen = (f64, Option<f64>);

/// What the test client records; it answers elicitations with `elicit` (and
/// `answer` as the content of an accept) and, when `sampling`, sampling requests
/// with `"sampled: "` and the prompt.
#[derive(Clone, Default)]
pub(crate) struct Client {
    pub(crate) elicit: Option<ElicitationAction>,
    pub(crate) answer: Option<Value>,
    pub(crate) sampling: bool,
    /// Declares the Tasks extension (2026-07-28).
    pub(crate) tasks: bool,
    /// Declares URL-mode elicitation (besides form mode).
    pub(crate) url: bool,
    /// What the user does with a URL-mode elicitation's link before the client
    /// answers (the links are kept in `urls`).
    pub(crate) on_url:
        Option<Arc<dyn Fn(String) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>>,
    pub(crate) urls: Arc<Mutex<Vec<String>>>,
    /// The requested schemas of the elicitations, as sent.
    pub(crate) schemas: Arc<Mutex<Vec<Value>>>,
    /// The sampling requests, as sent.
    pub(crate) sampled: Arc<Mutex<Vec<Value>>>,
    /// The `notifications/message` params, as sent.
    pub(crate) logs: Arc<Mutex<Vec<Value>>>,
    pub(crate) list_changed: Arc<AtomicUsize>,
    pub(crate) progress: Arc<Mutex<Vec<ProgressSeen>>>,
    pub(crate) asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicit.is_some() {
            caps.elicitation = Some(if self.url {
                ElicitationCapability::new()
                    .with_form(Default::default())
                    .with_url(Default::default())
            } else {
                ElicitationCapability::default()
            });
        }
        if self.sampling {
            caps.sampling = Some(SamplingCapability::default());
        }
        if self.tasks {
            caps.extensions.get_or_insert_with(Default::default).insert(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                Default::default(),
            );
        }
        ClientConfig::new(caps, Implementation::new("toolmark-test", "0"))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::UrlElicitationParams { url, .. } = &request {
            self.urls.lock().unwrap().push(url.clone());
            if let Some(f) = &self.on_url {
                f(url.clone()).await;
            }
        }
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = &request
        {
            self.asked.lock().unwrap().push(message.clone());
            self.schemas
                .lock()
                .unwrap()
                .push(serde_json::to_value(requested_schema).unwrap());
        }
        let action = self.elicit.clone().unwrap_or(ElicitationAction::Decline);
        let mut result = ElicitResult::new(action.clone());
        if action == ElicitationAction::Accept {
            result.content = self.answer.clone();
        }
        Ok(result)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampled
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
        let prompt = params
            .messages
            .iter()
            .filter_map(|m| match &m.content {
                SamplingContent::Single(SamplingMessageContentBlock::Text(t)) => {
                    Some(t.text.clone())
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" / ");
        let mut result = CreateMessageResult::new(
            SamplingMessage::assistant_text(format!("sampled: {prompt}")),
            "test-model".to_owned(),
        );
        result.stop_reason = Some(CreateMessageResult::STOP_REASON_END_TURN.to_owned());
        Ok(result)
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.total));
    }
}

/// Serve one session of `server` and connect `client` to it in-process.
pub(crate) async fn connect(
    server: &McpServer,
    client: Client,
) -> RunningService<RoleClient, Client> {
    let (a, b) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    client.serve(b).await.expect("client connects")
}

pub(crate) fn call(name: &str, args: Value) -> CallToolRequestParams {
    let p = CallToolRequestParams::new(name.to_owned());
    match args {
        Value::Object(o) => p.with_arguments(o),
        _ => p,
    }
}

/// `pay.send` (the guarded tool with the sensitive `card`) as `client` calls it.
pub(crate) async fn pay(
    client: &RunningService<RoleClient, Client>,
    to: &str,
    amount: u64,
    card: &str,
) -> rmcp::model::CallToolResult {
    client
        .call_tool(call(
            "pay.send",
            json!({"to": to, "amount": amount, "card": card}),
        ))
        .await
        .unwrap()
}

/// The whole result as the client received it, as JSON.
pub(crate) fn wire(r: &CallToolResult) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("resultType");
    v
}
