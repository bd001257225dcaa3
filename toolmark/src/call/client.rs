//! What a running tool can send to, or ask of, the client behind its call:
//! log messages ([`LogLevel`], [`LogMessage`]) and requests ([`CallerClient`]:
//! a form to fill in, a message from the client's model). Transport-neutral: a
//! transport that can reach its client (MCP) plugs in per call through
//! [`CallOptions::on_log`](crate::CallOptions::on_log) and
//! [`CallOptions::client`](crate::CallOptions::client).

use std::fmt;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::ToolError;

/// The severity of a [`ToolContext::log`](crate::ToolContext::log) message: the
/// syslog levels (RFC 5424) that MCP uses, from least to most severe.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// General information.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name as MCP writes it (`"debug"` … `"emergency"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A log message from a running tool, as a call's log sink
/// ([`CallOptions::on_log`](crate::CallOptions::on_log)) receives it: already
/// scrubbed of the call's sensitive values.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogMessage {
    /// The tool's full name.
    pub tool: String,
    /// The severity.
    pub level: LogLevel,
    /// The text, with every sensitive value of the call's input `"[redacted]"`.
    pub message: String,
}

pub(crate) type LogFn = std::sync::Arc<dyn Fn(LogMessage) + Send + Sync>;

/// A form to ask the calling client's user to fill in
/// ([`ToolContext::elicit`](crate::ToolContext::elicit)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitRequest {
    /// What the user is asked, scrubbed of the call's sensitive values.
    pub message: String,
    /// The JSON schema of the answer: an object schema whose properties are
    /// primitives (string, number, integer, boolean, enums), as MCP allows.
    pub schema: Value,
    /// The name the tool gave the question
    /// ([`ToolContext::elicit_keyed`](crate::ToolContext::elicit_keyed)): its
    /// key in an MCP 2026-07-28 `input_required` round. `None`: the transport
    /// names it (`elicit-N`).
    pub key: Option<String>,
}

/// Whether `key` can name a question: 1 to 64 of `A-Z a-z 0-9 _ - .`, and not
/// `confirm` (the key of a confirmation round).
pub(crate) fn check_key(key: &str) -> Result<(), ClientError> {
    let ok = (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && key != "confirm";
    if ok {
        Ok(())
    } else {
        Err(ClientError::InvalidRequest {
            reason: format!(
                "a question's key is 1 to 64 letters, digits, `_`, `-` or `.`, and not \
                 `confirm` (got {} bytes)",
                key.len()
            ),
        })
    }
}

/// The user's answer to an [`ElicitRequest`].
#[derive(Clone, Debug, PartialEq)]
pub enum Elicited {
    /// The user filled in the form: the content, as the client sent it (check it
    /// as you would any input: the client may not enforce the schema).
    Accept(Value),
    /// The user said no.
    Decline,
    /// The user dismissed the form without choosing.
    Cancel,
}

/// Who speaks in a [`SampleMessage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleRole {
    /// The user (the prompt).
    User,
    /// The assistant (an earlier answer).
    Assistant,
}

/// One text message of a [`SampleRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleMessage {
    /// Who speaks.
    pub role: SampleRole,
    /// The text.
    pub text: String,
}

impl SampleMessage {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        SampleMessage {
            role: SampleRole::User,
            text: text.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        SampleMessage {
            role: SampleRole::Assistant,
            text: text.into(),
        }
    }
}

/// A request for a message from the calling client's model
/// ([`ToolContext::sample`](crate::ToolContext::sample); MCP's
/// `sampling/createMessage`). `"a prompt".into()` is one user message.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SampleRequest {
    /// The conversation, oldest first.
    pub messages: Vec<SampleMessage>,
    /// A system prompt, if any.
    pub system_prompt: Option<String>,
    /// The most tokens the model may produce (default 1024).
    pub max_tokens: u32,
    /// The sampling temperature, if any.
    pub temperature: Option<f32>,
    /// The name the tool gave the question ([`key`](Self::key)): its key in
    /// an MCP 2026-07-28 `input_required` round. `None`: the transport names
    /// it (`sample-N`).
    pub key: Option<String>,
}

impl SampleRequest {
    /// A request with one user message, `prompt`.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self::conversation([SampleMessage::user(prompt)])
    }

    /// A request with these messages, oldest first.
    pub fn conversation(messages: impl IntoIterator<Item = SampleMessage>) -> Self {
        SampleRequest {
            messages: messages.into_iter().collect(),
            system_prompt: None,
            max_tokens: 1024,
            temperature: None,
            key: None,
        }
    }

    /// Name the question `key` (1 to 64 of `A-Z a-z 0-9 _ - .`): on MCP
    /// 2026-07-28 it is asked under `inputRequests.<key>` instead of a
    /// numbered key, for clients that answer by name. A key that is not valid
    /// fails the request with [`ClientError::InvalidRequest`].
    ///
    /// ```
    /// let request = toolmark::SampleRequest::new("The capital of France?").key("capital_question");
    /// assert_eq!(request.key.as_deref(), Some("capital_question"));
    /// ```
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The most tokens the model may produce.
    #[must_use]
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// A system prompt.
    #[must_use]
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.system_prompt = Some(text.into());
        self
    }

    /// The sampling temperature.
    #[must_use]
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }
}

impl From<&str> for SampleRequest {
    fn from(prompt: &str) -> Self {
        SampleRequest::new(prompt)
    }
}

impl From<String> for SampleRequest {
    fn from(prompt: String) -> Self {
        SampleRequest::new(prompt)
    }
}

/// The client model's answer to a [`SampleRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sampled {
    /// The answer's text (its text blocks, joined by newlines).
    pub text: String,
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why the model stopped (`"endTurn"`, `"maxTokens"`, …), when the client says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// An answer `text` from `model`.
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> Self {
        Sampled {
            text: text.into(),
            model: model.into(),
            stop_reason: None,
        }
    }

    /// This answer with the model's stop reason.
    #[must_use]
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }
}

/// Why asking the calling client failed ([`ToolContext::elicit`](crate::ToolContext::elicit),
/// [`ToolContext::sample`](crate::ToolContext::sample)). A tool can `?` it into a
/// [`ToolError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientError {
    /// Nobody can be asked: the call came without a client (an in-app call, a
    /// test), or the client did not declare the capability (MCP's `elicitation`
    /// or `sampling`).
    NotSupported {
        /// What was asked: `"elicitation"` or `"sampling"`.
        request: &'static str,
        /// Why it cannot be asked.
        reason: String,
    },
    /// The request cannot be sent as given (an elicitation schema that is not a
    /// flat object of primitives, say).
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// The call was cancelled (or its session ended) while waiting for the answer.
    Cancelled,
    /// The client answered with an error, or the connection failed.
    Failed {
        /// The client's or the transport's error.
        reason: String,
    },
}

impl ClientError {
    /// The stable code: `"not_supported"`, `"invalid_request"`, `"cancelled"` or
    /// `"client_failed"`.
    pub fn code(&self) -> &'static str {
        match self {
            ClientError::NotSupported { .. } => "not_supported",
            ClientError::InvalidRequest { .. } => "invalid_request",
            ClientError::Cancelled => "cancelled",
            ClientError::Failed { .. } => "client_failed",
        }
    }

    /// [`ClientError::NotSupported`] for a call without a client.
    pub(crate) fn no_client(request: &'static str) -> Self {
        ClientError::NotSupported {
            request,
            reason: "this call came without a client that can be asked".to_owned(),
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::NotSupported { request, reason } => {
                write!(f, "not_supported: {request} is not available: {reason}")
            }
            ClientError::InvalidRequest { reason } => write!(f, "invalid_request: {reason}"),
            ClientError::Cancelled => f.write_str(
                "cancelled: the call was cancelled while waiting for the client's answer",
            ),
            ClientError::Failed { reason } => {
                write!(f, "client_failed: the client could not answer: {reason}")
            }
        }
    }
}

impl std::error::Error for ClientError {}

impl From<ClientError> for ToolError {
    fn from(e: ClientError) -> Self {
        ToolError::new(e.to_string())
    }
}

/// The client behind one call, which a running tool can ask
/// ([`ToolContext::elicit`](crate::ToolContext::elicit),
/// [`ToolContext::sample`](crate::ToolContext::sample)). A transport gives one per
/// call with [`CallOptions::client`](crate::CallOptions::client); `toolmark::mcp`
/// gives the calling MCP session. Requests arrive already scrubbed of the
/// call's sensitive values. Each method defaults to
/// [`ClientError::NotSupported`], so a transport implements what it can.
pub trait CallerClient: Send + Sync + 'static {
    /// Ask the user to fill in a form.
    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'static, Result<Elicited, ClientError>> {
        let _ = request;
        Box::pin(std::future::ready(Err(ClientError::NotSupported {
            request: "elicitation",
            reason: "the client cannot be asked to fill in a form".to_owned(),
        })))
    }

    /// Ask the client's model for a message.
    fn sample(&self, request: SampleRequest) -> BoxFuture<'static, Result<Sampled, ClientError>> {
        let _ = request;
        Box::pin(std::future::ready(Err(ClientError::NotSupported {
            request: "sampling",
            reason: "the client's model cannot be asked".to_owned(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::{testing, Caller};

    struct Echo;

    impl CallerClient for Echo {
        fn elicit(&self, r: ElicitRequest) -> BoxFuture<'static, Result<Elicited, ClientError>> {
            Box::pin(std::future::ready(Ok(Elicited::Accept(
                json!({"asked": r.message}),
            ))))
        }
    }

    #[tokio::test]
    async fn a_test_context_logs_to_its_sink_and_asks_its_client() {
        let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
        let s = Arc::clone(&seen);
        let ctx = testing::context(Caller::Test)
            .tool_name("t.x")
            .on_log(move |m| s.lock().unwrap().push(m))
            .client(Echo)
            .build();
        ctx.log(LogLevel::Notice, "hi");
        assert_eq!(
            *seen.lock().unwrap(),
            [LogMessage {
                tool: "t.x".to_owned(),
                level: LogLevel::Notice,
                message: "hi".to_owned()
            }]
        );
        assert_eq!(
            ctx.elicit("Size?", json!({"type": "object"})).await,
            Ok(Elicited::Accept(json!({"asked": "Size?"})))
        );
        // Echo implements elicit only: sample is not supported.
        let e = ctx.sample("p").await.unwrap_err();
        assert_eq!(e.code(), "not_supported");
        assert!(e.to_string().starts_with("not_supported: sampling"));
        // Without a client, neither is.
        let bare = testing::context(Caller::Test).build();
        let e = bare.elicit("Size?", json!({})).await.unwrap_err();
        assert_eq!(e.code(), "not_supported");
        assert_eq!(
            ToolError::from(e).message,
            "not_supported: elicitation is not available: this call came without a client that can be asked"
        );
    }

    #[test]
    fn levels_are_ordered_and_named_as_mcp_writes_them() {
        assert!(LogLevel::ALL.windows(2).all(|w| w[0] < w[1]));
        for level in LogLevel::ALL {
            assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
        }
        assert_eq!(LogLevel::Warning.to_string(), "warning");
    }
}
