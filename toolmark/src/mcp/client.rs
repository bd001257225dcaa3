//! What a running tool sends to, and asks of, the calling MCP client:
//! `notifications/progress` and `notifications/message` (in order, before the
//! result), `elicitation/create` and `sampling/createMessage`.
// rmcp marks logging and sampling deprecated (SEP-2577, a future revision); the
// revisions this server speaks (up to 2025-11-25) have both.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, Role, SamplingContent, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::{ElicitationMode, Peer};
use rmcp::RoleServer;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::sync::lock;
use crate::{
    CallerClient, ClientError, ElicitRequest, Elicited, LogLevel, LogMessage, Progress,
    SampleRequest, SampleRole, Sampled,
};

/// The rmcp level of a [`LogLevel`].
pub(crate) fn to_rmcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// The [`LogLevel`] of an rmcp level.
pub(crate) fn from_rmcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// A session's log level (`logging/setLevel`): messages below it are dropped.
#[derive(Clone)]
pub(crate) struct SessionLevel(Arc<AtomicU8>);

impl SessionLevel {
    pub(crate) fn new(level: LogLevel) -> Self {
        SessionLevel(Arc::new(AtomicU8::new(level as u8)))
    }

    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    pub(crate) fn lets_through(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

enum Note {
    Progress(Progress),
    Log(LogMessage),
}

/// One call's notifications to its client, sent in order by a task started on
/// the first one (most calls send none).
pub(crate) struct Notes {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    open: Mutex<Option<(mpsc::UnboundedSender<Note>, JoinHandle<()>)>>,
    closed: std::sync::atomic::AtomicBool,
}

impl Notes {
    pub(crate) fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Arc<Self> {
        Arc::new(Notes {
            peer,
            token,
            open: Mutex::new(None),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub(crate) fn progress(&self, p: Progress) {
        if self.token.is_some() {
            self.send(Note::Progress(p));
        }
    }

    pub(crate) fn log(&self, m: LogMessage) {
        self.send(Note::Log(m));
    }

    fn send(&self, note: Note) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut open = lock(&self.open);
        let (tx, _) = open.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let task = tokio::spawn(forward(self.peer.clone(), self.token.clone(), rx));
            (tx, task)
        });
        let _ = tx.send(note);
    }

    /// Wait (a bounded time) until every note sent so far has gone out; later
    /// ones (from a tool that kept its context) are dropped.
    pub(crate) async fn flush(&self) {
        self.closed.store(true, Ordering::Release);
        let open = lock(&self.open).take();
        if let Some((tx, task)) = open {
            drop(tx);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), task).await;
        }
    }
}

async fn forward(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    mut rx: mpsc::UnboundedReceiver<Note>,
) {
    while let Some(note) = rx.recv().await {
        let sent = match note {
            Note::Progress(p) => {
                let Some(token) = &token else { continue };
                let mut note = ProgressNotificationParam::new(token.clone(), p.done as f64);
                if let Some(total) = p.total {
                    note = note.with_total(total as f64);
                }
                peer.notify_progress(note).await
            }
            Note::Log(m) => {
                let param = LoggingMessageNotificationParam::new(
                    to_rmcp(m.level),
                    Value::String(m.message),
                )
                .with_logger(m.tool);
                peer.notify_logging_message(param).await
            }
        };
        if sent.is_err() {
            break;
        }
    }
}

/// The calling session, as the client a tool asks ([`CallerClient`]): only what
/// the client declared (`elicitation` in form mode, `sampling`).
pub(crate) struct McpClient {
    pub(crate) peer: Peer<RoleServer>,
}

impl McpClient {
    /// A client for `peer` when it declared elicitation or sampling.
    pub(crate) fn of(peer: &Peer<RoleServer>) -> Option<Self> {
        (can_elicit(peer) || can_sample(peer)).then(|| McpClient { peer: peer.clone() })
    }
}

fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

fn can_sample(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.sampling.is_some())
}

fn failed(e: impl std::fmt::Display) -> ClientError {
    ClientError::Failed {
        reason: e.to_string(),
    }
}

impl CallerClient for McpClient {
    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'static, Result<Elicited, ClientError>> {
        let peer = self.peer.clone();
        Box::pin(async move {
            if !can_elicit(&peer) {
                return Err(ClientError::NotSupported {
                    request: "elicitation",
                    reason: "the MCP client did not declare the elicitation capability (form mode)"
                        .to_owned(),
                });
            }
            let schema = elicitation_schema(request.schema)?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: request.message,
                requested_schema: schema,
            };
            let answer = peer.create_elicitation(params).await.map_err(failed)?;
            Ok(match answer.action {
                ElicitationAction::Accept => {
                    Elicited::Accept(answer.content.unwrap_or(Value::Object(Default::default())))
                }
                ElicitationAction::Decline => Elicited::Decline,
                _ => Elicited::Cancel,
            })
        })
    }

    fn sample(&self, request: SampleRequest) -> BoxFuture<'static, Result<Sampled, ClientError>> {
        let peer = self.peer.clone();
        Box::pin(async move {
            if !can_sample(&peer) {
                return Err(ClientError::NotSupported {
                    request: "sampling",
                    reason: "the MCP client did not declare the sampling capability".to_owned(),
                });
            }
            let answer = peer
                .create_message(sample_params(request))
                .await
                .map_err(failed)?;
            Ok(sampled(answer))
        })
    }
}

/// The form schema of an elicitation, as MCP allows it (an object schema whose
/// properties are primitives); every way a tool's question reaches a client
/// checks it here.
pub(crate) fn elicitation_schema(schema: Value) -> Result<ElicitationSchema, ClientError> {
    serde_json::from_value(schema).map_err(|e| ClientError::InvalidRequest {
        reason: format!(
            "the elicitation schema must be an object schema whose properties are primitives \
             (string, number, integer, boolean, enums): {e}"
        ),
    })
}

/// A client's answer to an elicitation asked in a multi round-trip round or a
/// task (`inputResponses`), as the tool gets it.
pub(crate) fn elicited(answer: Value) -> Result<Elicited, ClientError> {
    let answer = serde_json::from_value::<rmcp::model::ElicitResult>(answer).map_err(|e| {
        ClientError::Failed {
            reason: format!("the client's answer is not an elicitation result: {e}"),
        }
    })?;
    Ok(match answer.action {
        ElicitationAction::Accept => Elicited::Accept(answer.content.unwrap_or(Value::Null)),
        ElicitationAction::Decline => Elicited::Decline,
        _ => Elicited::Cancel,
    })
}

/// The `sampling/createMessage` parameters of a [`SampleRequest`] (sent to a
/// session, or in a 2026-07-28 `input_required` round).
pub(crate) fn sample_params(request: SampleRequest) -> CreateMessageRequestParams {
    let messages = request
        .messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                SampleRole::User => Role::User,
                SampleRole::Assistant => Role::Assistant,
            };
            SamplingMessage::new(role, m.text)
        })
        .collect();
    let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
    params.system_prompt = request.system_prompt;
    params.temperature = request.temperature;
    params
}

/// The [`Sampled`] of a client's `sampling/createMessage` answer: its text blocks,
/// joined by newlines.
pub(crate) fn sampled(answer: CreateMessageResult) -> Sampled {
    let text = match &answer.message.content {
        SamplingContent::Single(block) => text_of(block).unwrap_or_default().to_owned(),
        SamplingContent::Multiple(blocks) => blocks
            .iter()
            .filter_map(text_of)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let mut sampled = Sampled::new(text, answer.model);
    sampled.stop_reason = answer.stop_reason;
    sampled
}

fn text_of(block: &SamplingMessageContentBlock) -> Option<&str> {
    match block {
        SamplingMessageContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}
