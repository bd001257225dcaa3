//! The Tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28) for a
//! client that declares it: a `tools/call` that has not finished within
//! [`TaskOptions::after`] (a long tool, or one waiting for the app's confirm
//! handler) answers a task (`working`) and goes on; a call that waits for its
//! client's approval (a multi round-trip confirmation) is a task in
//! `input_required` at once, its elicitation in `inputRequests`, answered with
//! `tasks/update`. `tasks/get` answers the task's state (its result once
//! `completed`, the JSON-RPC error once `failed`), `tasks/cancel` cancels the
//! call (or withdraws its confirmation).
//!
//! # A task's tool asks its client
//!
//! Inside a task, [`ToolContext::elicit`](crate::ToolContext::elicit) and
//! [`ToolContext::sample`](crate::ToolContext::sample) wait in the background:
//! the task goes `input_required` with the question in `inputRequests`
//! (`elicit-N`, `sample-N`; a tool that asks several at once, with
//! `tokio::join!`, has them all there), the client answers with `tasks/update`,
//! and the tool goes on where it waited (it is not run again). An update may
//! answer some questions: the others stay pending, and the task stays
//! `input_required` with only those. An answer counts only under the key of a
//! question still pending and only of that question's kind (an elicitation's
//! answer never answers a sampling request, nor the reverse); anything else is
//! acknowledged and answers nothing. The questions are scrubbed of the call's
//! sensitive values as every question is, and the result as every result.
//!
//! With a shared [`TaskStore`], an answer that lands on another instance than
//! the one running the tool is left in the store (sealed, bound to the task, the
//! question and the caller) and the running instance hands it to the tool
//! within [`TaskOptions::poll`]; `tasks/get` on any instance shows the question
//! answered at once.
//!
//! A question asked before the call is a task (within [`TaskOptions::after`])
//! is a multi round-trip round instead (`input_required` with a `requestState`,
//! the tool run again with the answer, as for a call that is not a task); the
//! retry may then become the task.
//!
//! # How a task ends
//!
//! A tool's own error is a `completed` task whose result is the error
//! (`isError`); a tool that panics makes the task `failed` with a JSON-RPC error
//! (`-32603`), the panic's message left out; `tasks/cancel` makes it
//! `cancelled`, whatever the tool made of its cancellation.
//!
//! # Task support per tool
//!
//! [`TaskOptions::support`] sets a tool's [`TaskSupport`]: `Optional` (the
//! default: a task when it runs long or waits), `Required` (always a task, even
//! when it ends at once; a client without the extension is answered `-32021`,
//! missing required client capability, naming the extension) or `Forbidden`
//! (never a task).
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use toolmark::mcp::{McpServer, TaskOptions, TaskSupport};
//! use toolmark::{Content, Elicited, NoInput, ToolError, ToolSpec, Toolmark};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tm = Toolmark::builder().build()?;
//! tm.scope("export").register(
//!     ToolSpec::typed("all", "Exports everything", |ctx, _: NoInput| async move {
//!         // ... long work; the call is a task by now ...
//!         let format = json!({
//!             "type": "object",
//!             "properties": {"format": {"type": "string", "enum": ["csv", "json"]}},
//!             "required": ["format"]
//!         });
//!         let format = match ctx.elicit("Which format?", format).await? {
//!             Elicited::Accept(v) => v["format"].as_str().unwrap_or("csv").to_owned(),
//!             _ => return Err(ToolError::new("no format chosen")),
//!         };
//!         Ok(Content::text(format!("exported as {format}")))
//!     })
//!     .effect(toolmark::Effect::Read),
//! )?;
//! let server = McpServer::new(tm).tasks(
//!     TaskOptions::new()
//!         .after(Duration::from_secs(1))
//!         .support("export.all", TaskSupport::Required),
//! );
//! # let _ = server;
//! # Ok(())
//! # }
//! ```
//!
//! The extension has no `tasks/result` (the 2025-11-25 revision's tasks had
//! one): a finished task's result is inlined in `tasks/get`.
//! rmcp 3.11's `Tool` has no `execution` field, so a tool's support is enforced
//! but not advertised in `tools/list`.
//!
//! A task's state lives in a [`TaskStore`]: in process memory by default, or
//! one every instance shares ([`RedisTaskStore`], feature `redis`) so that any
//! instance answers `tasks/get`, `tasks/update` and `tasks/cancel`. Every
//! record is sealed whole by the toolmark's one seal (AES-256-GCM under its seal
//! key, the record's purpose, the key it is stored under and the caller as
//! associated data): a record moved, changed
//! or read by another caller does not open. A record holds what the client was
//! sent, never more: the redacted elicitation, the result as the client gets it
//! (scrubbed of the call's secrets like every result).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures_util::future::BoxFuture;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ErrorData, InputRequest, InputRequests, InputResponses,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::store::{Purpose, Sealer, StoreError};
use crate::sync::lock;

/// Where tasks' states are kept: opaque sealed strings by key, each with a time
/// to live. Implement it for a database of your own; every instance that serves
/// the same clients must share it.
pub trait TaskStore: Send + Sync + 'static {
    /// Keep `value` under `key` for `ttl`, replacing what was there.
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: String,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The value under `key`, if it is there and has not expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
}

/// Tasks in process memory (the default): only this process answers them.
#[derive(Default)]
pub struct MemoryTaskStore {
    /// Task records by key until their expiry (pruned by time, not by a walk).
    map: Mutex<crate::store::Expiring<String, Instant>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("tasks", &lock(&self.map).len())
            .finish()
    }
}

impl TaskStore for MemoryTaskStore {
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: String,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        map.prune(now);
        map.insert(key, now + ttl, value);
        Box::pin(std::future::ready(Ok(())))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let now = Instant::now();
        let found = lock(&self.map)
            .get_until(key)
            .filter(|(until, _)| *until > now)
            .map(|(_, v)| v.clone());
        Box::pin(std::future::ready(Ok(found)))
    }
}

/// Tasks in Redis, shared by every instance (feature `redis`): one key per
/// task (`<prefix>task:<id>`, expiring with the task), its value sealed.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[derive(Clone)]
pub struct RedisTaskStore {
    conn: redis::aio::ConnectionManager,
    prefix: String,
}

#[cfg(feature = "redis")]
impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "redis")]
impl RedisTaskStore {
    /// Connect to `url` (`redis://host:port/db`); keys start with `toolmark:mcp:`.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client =
            redis::Client::open(url).map_err(|e| StoreError::unavailable(e.to_string()))?;
        let conn = redis::aio::ConnectionManager::new(client)
            .await
            .map_err(|e| StoreError::unavailable(e.to_string()))?;
        Ok(RedisTaskStore {
            conn,
            prefix: "toolmark:mcp:".to_owned(),
        })
    }

    /// Keys start with `prefix` instead (one prefix per app sharing a Redis).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

#[cfg(feature = "redis")]
impl TaskStore for RedisTaskStore {
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: String,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut conn = self.conn.clone();
        let key = format!("{}{key}", self.prefix);
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        Box::pin(async move {
            redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("PX")
                .arg(ms)
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| StoreError::unavailable(e.to_string()))
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let mut conn = self.conn.clone();
        let key = format!("{}{key}", self.prefix);
        Box::pin(async move {
            redis::cmd("GET")
                .arg(&key)
                .query_async::<Option<String>>(&mut conn)
                .await
                .map_err(|e| StoreError::unavailable(e.to_string()))
        })
    }
}

/// Whether a tool's calls may become tasks (the Tasks extension's
/// `taskSupport`), set per tool with [`TaskOptions::support`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: the call answers its result, however long it takes.
    Forbidden,
    /// A task when the call runs past [`TaskOptions::after`] or waits for its
    /// client (the default).
    #[default]
    Optional,
    /// Always a task, even when it ends at once; a client that did not declare
    /// the Tasks extension is answered `-32021` (missing required client
    /// capability, naming the extension).
    Required,
}

impl TaskSupport {
    /// The extension's name for it: `forbidden`, `optional`, `required`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// How calls become tasks ([`McpServer::tasks`](super::McpServer::tasks)).
#[derive(Clone)]
pub struct TaskOptions {
    pub(crate) after: Duration,
    pub(crate) ttl: Duration,
    pub(crate) poll: Duration,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) support: HashMap<String, TaskSupport>,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            after: Duration::from_secs(1),
            ttl: Duration::from_secs(3600),
            poll: Duration::from_millis(500),
            store: Arc::new(MemoryTaskStore::new()),
            support: HashMap::new(),
        }
    }
}

impl fmt::Debug for TaskOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskOptions")
            .field("after", &self.after)
            .field("ttl", &self.ttl)
            .field("poll", &self.poll)
            .field("support", &self.support)
            .finish_non_exhaustive()
    }
}

impl TaskOptions {
    /// The defaults: a call becomes a task after 1 s, a task is kept 1 hour,
    /// clients are asked to poll every 500 ms, states in process memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// A call still running after `after` becomes a task.
    #[must_use]
    pub fn after(mut self, after: Duration) -> Self {
        self.after = after;
        self
    }

    /// How long a task's state is kept (its `ttlMs`).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The `pollIntervalMs` a client is asked to keep (and how often a running
    /// task looks for a `tasks/cancel` made on another instance).
    #[must_use]
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// The task support of the tool `tool` ([`TaskSupport::Optional`] unless
    /// set).
    ///
    /// ```
    /// use toolmark::mcp::{TaskOptions, TaskSupport};
    /// let options = TaskOptions::new()
    ///     .support("export_all", TaskSupport::Required)
    ///     .support("ping", TaskSupport::Forbidden);
    /// assert_eq!(options.support_of("export_all"), TaskSupport::Required);
    /// assert_eq!(options.support_of("anything_else"), TaskSupport::Optional);
    /// ```
    #[must_use]
    pub fn support(mut self, tool: impl Into<String>, support: TaskSupport) -> Self {
        self.support.insert(tool.into(), support);
        self
    }

    /// The task support of `tool`.
    pub fn support_of(&self, tool: &str) -> TaskSupport {
        self.support.get(tool).copied().unwrap_or_default()
    }

    /// Keep tasks' states in `store` (shared by every instance, for `tasks/get`
    /// on any of them). The toolmark needs a seal key then, the same on every
    /// instance (`ToolmarkBuilder::seal_key`).
    #[must_use]
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }
}

/// A task's state as stored (sealed).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    pub(crate) created_ms: u64,
    pub(crate) updated_ms: u64,
    /// The tool called.
    pub(crate) tool: String,
    /// `input_required`: the elicitation (redacted) and the pending confirm id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_requests: Option<InputRequests>,
    /// `input_required` by the tool's own questions: their keys, each with
    /// the question its answer is bound to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) asked: Vec<TaskQuestion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confirm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confirm_exp: Option<u64>,
    /// `completed`: the `CallToolResult`; `failed`: the JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<JsonObject>,
}

/// A question a task's tool asked: its key in `inputRequests` and the
/// question as sent.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct TaskQuestion {
    pub(crate) key: String,
    pub(crate) question: String,
}

/// The running side of tasks: options, the seal, and this process's running
/// calls (to cancel them, and to hand their tools the answers).
pub(crate) struct Tasks {
    pub(crate) options: TaskOptions,
    pub(crate) sealer: Sealer,
    running: Mutex<HashMap<String, (CancellationToken, Arc<Asker>)>>,
}

fn key(id: &str) -> String {
    format!("task:{id}")
}

fn cancel_key(id: &str) -> String {
    format!("task-cancel:{id}")
}

/// A task's storage key bound to the caller it belongs to.
fn binding(key: &str, principal: &str) -> String {
    format!("{key}\0{principal}")
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(SystemTime::UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

fn unavailable(e: &StoreError) -> ErrorData {
    ErrorData::internal_error(format!("The task store cannot be reached: {e}"), None)
}

/// The error of a task id that is unknown, expired, or another caller's.
pub(crate) fn not_found() -> ErrorData {
    ErrorData::invalid_params("No such task (it is unknown, expired, or not yours)", None)
}

impl Tasks {
    pub(crate) fn new(options: TaskOptions, sealer: Sealer) -> Self {
        Tasks {
            options,
            sealer,
            running: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn ttl_ms(&self) -> u64 {
        u64::try_from(self.options.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Write `record` as task `id` of `principal`.
    pub(crate) async fn save(
        &self,
        id: &str,
        principal: &str,
        record: &Record,
    ) -> Result<(), StoreError> {
        let k = key(id);
        let plain =
            serde_json::to_vec(record).map_err(|e| StoreError::unavailable(e.to_string()))?;
        let sealed = self
            .sealer
            .seal(Purpose::Task, &binding(&k, principal), &plain)
            .ok_or_else(|| StoreError::unavailable("the OS random source failed"))?;
        self.options.store.put(&k, sealed, self.options.ttl).await
    }

    /// Task `id` of `principal`: `Ok(None)` when unknown, expired, changed or
    /// another caller's.
    pub(crate) async fn load(
        &self,
        id: &str,
        principal: &str,
    ) -> Result<Option<Record>, ErrorData> {
        let k = key(id);
        let Some(text) = self
            .options
            .store
            .get(&k)
            .await
            .map_err(|e| unavailable(&e))?
        else {
            return Ok(None);
        };
        Ok(self
            .sealer
            .open(Purpose::Task, &binding(&k, principal), &text)
            .and_then(|plain| serde_json::from_slice(&plain).ok()))
    }

    /// Register a call running here (so `tasks/cancel` and `tasks/update`
    /// reach it).
    pub(crate) fn started(&self, id: &str, token: CancellationToken, asker: Arc<Asker>) {
        lock(&self.running).insert(id.to_owned(), (token, asker));
    }

    /// The questions of task `id`, when it runs here.
    fn asker(&self, id: &str) -> Option<Arc<Asker>> {
        lock(&self.running).get(id).map(|(_, a)| Arc::clone(a))
    }

    pub(crate) fn finished(&self, id: &str) {
        lock(&self.running).remove(id);
    }

    /// Cancel task `id` if it runs here; else leave a mark its runner sees.
    pub(crate) async fn request_cancel(&self, id: &str, principal: &str) -> Result<(), StoreError> {
        if let Some((token, _)) = lock(&self.running).get(id) {
            token.cancel();
            return Ok(());
        }
        let k = cancel_key(id);
        let sealed = self
            .sealer
            .seal(Purpose::TaskCancel, &binding(&k, principal), b"cancel")
            .ok_or_else(|| StoreError::unavailable("the OS random source failed"))?;
        self.options.store.put(&k, sealed, self.options.ttl).await
    }

    /// Whether a `tasks/cancel` for `id` was made on another instance.
    pub(crate) async fn cancel_requested(&self, id: &str, principal: &str) -> bool {
        let k = cancel_key(id);
        match self.options.store.get(&k).await {
            Ok(Some(text)) => self
                .sealer
                .open(Purpose::TaskCancel, &binding(&k, principal), &text)
                .is_some(),
            _ => false,
        }
    }

    /// The `tasks/get` answer for `id`.
    pub(crate) fn detailed(&self, id: &str, r: &Record) -> DetailedTask {
        let mut task = Task::new(id, r.status, rfc3339(r.created_ms), rfc3339(r.updated_ms))
            .with_ttl_ms(self.ttl_ms())
            .with_poll_interval_ms(
                u64::try_from(self.options.poll.as_millis()).unwrap_or(u64::MAX),
            );
        if let Some(m) = &r.message {
            task = task.with_status_message(m.clone());
        }
        let payload = match r.status {
            TaskStatus::InputRequired => TaskPayload::InputRequired {
                input_requests: r.input_requests.clone().unwrap_or_default(),
            },
            TaskStatus::Completed => TaskPayload::Completed {
                result: r.result.clone().unwrap_or_default(),
            },
            TaskStatus::Failed => TaskPayload::Failed {
                error: r.error.clone().unwrap_or_default(),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        DetailedTask::new(task, payload)
    }

    /// The `CreateTaskResult` of a new task.
    pub(crate) fn created(&self, id: &str, r: &Record) -> CreateTaskResult {
        CreateTaskResult::new(self.detailed(id, r).task)
    }
}

/// `capabilities` with the Tasks extension declared.
pub(crate) fn advertise(
    mut capabilities: rmcp::model::ServerCapabilities,
) -> rmcp::model::ServerCapabilities {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            JsonObject::new(),
        );
    capabilities
}

/// The answer to a call of a `required` tool by a client that did not
/// declare the Tasks extension: `-32021`, naming the extension.
pub(crate) fn required_error() -> ErrorData {
    let mut required = rmcp::model::ClientCapabilities::default();
    required
        .extensions
        .get_or_insert_with(Default::default)
        .insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            JsonObject::new(),
        );
    ErrorData::missing_required_client_capability(required)
}

/// The answer for the confirmation in `responses`, if there is one.
pub(crate) fn confirm_answer(responses: &InputResponses) -> Option<rmcp::model::ElicitResult> {
    responses
        .get(super::mrtr::CONFIRM_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// A JSON object of `value` (empty when it is not one).
pub(crate) fn object(value: impl Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

/// One `tools/call` of a client that declared tasks.
pub(crate) struct Start {
    pub(crate) tm: crate::Toolmark,
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) name: String,
    pub(crate) args: Value,
    pub(crate) principal: String,
    /// How the tool's results are shaped (its output schema).
    pub(crate) shape: super::OutputShape,
    /// Confirmed through the client (a form, or the app's page) rather than by
    /// the app's handler.
    pub(crate) by_client: Option<super::mrtr::Mode>,
    /// The tool's task support (a `required` tool always answers a task).
    pub(crate) support: TaskSupport,
    /// The retry of a question round asked before the call became a task.
    pub(crate) request_state: Option<String>,
    pub(crate) input_responses: Option<InputResponses>,
    /// What the request's client declared it answers.
    pub(crate) answerable: super::mrtr::Answerable,
}

/// What a finished call makes of its task.
enum Ending {
    /// A JSON-RPC error (an unknown tool, a tool that crashed).
    Failed(ErrorData),
    /// Waits for the client's approval of the confirmation `id`.
    Asking {
        id: String,
        exp: u64,
        requests: InputRequests,
    },
    /// Cancelled by `tasks/cancel`.
    Cancelled,
    /// The result the client gets.
    Done(rmcp::model::CallToolResult),
}

/// Where a call that may become a task stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Not a task yet: a question is a multi round-trip round.
    Sync,
    /// A question went back in a round: the run is stopping, the request
    /// answers `input_required`.
    Asked,
    /// A task: a question is in the task's `inputRequests`.
    Task,
    /// The call ended.
    Done,
}

/// A question a running task's tool waits on.
struct Waiting {
    key: String,
    /// The question as sent (the text its answer is bound to).
    question: String,
    request: InputRequest,
    answer: tokio::sync::oneshot::Sender<Value>,
}

struct AskState {
    phase: Phase,
    waiting: Vec<Waiting>,
    next: usize,
}

/// The questions of one call that may become a task: before it is a task, a
/// question is a multi round-trip round (the run stops, the client retries
/// with the answer); once it is a task, the tool waits in the background and
/// its questions are the task's `inputRequests`, answered by `tasks/update`
/// here or, through the task store, on another instance. Every write of the
/// task's record by its runner goes through the one lock of this state.
pub(crate) struct Asker {
    tasks: Arc<Tasks>,
    tm: crate::Toolmark,
    id: String,
    principal: String,
    tool: String,
    created_ms: u64,
    round: Option<Arc<super::mrtr::Round>>,
    /// Cancelled by the round when it asks (the run stops).
    run_stop: CancellationToken,
    answerable: super::mrtr::Answerable,
    state: tokio::sync::Mutex<AskState>,
}

/// A question's answer in the store, for the instance its task runs on.
#[derive(Serialize, Deserialize)]
struct Mailed {
    question: String,
    value: Value,
}

fn answer_key(id: &str, key: &str) -> String {
    format!("task-answer:{id}:{key}")
}

/// Whether `value` is an answer of the kind question `key` asks.
// rmcp marks sampling deprecated (SEP-2577, a future revision); 2026-07-28 has it.
#[allow(deprecated)]
fn fits(key: &str, value: &Value) -> bool {
    if key.starts_with("sample-") {
        serde_json::from_value::<rmcp::model::CreateMessageResult>(value.clone()).is_ok()
    } else {
        serde_json::from_value::<rmcp::model::ElicitResult>(value.clone()).is_ok()
    }
}

impl Asker {
    fn live(&self, st: &AskState) -> Record {
        let mut r = Record {
            status: TaskStatus::Working,
            message: Some("The call is running".to_owned()),
            created_ms: self.created_ms,
            updated_ms: crate::store::to_ms(self.tm.inner.now()),
            tool: self.tool.clone(),
            input_requests: None,
            asked: Vec::new(),
            confirm: None,
            confirm_exp: None,
            result: None,
            error: None,
        };
        if !st.waiting.is_empty() {
            r.status = TaskStatus::InputRequired;
            r.message = Some("Waiting for the client's answers".to_owned());
            r.input_requests = Some(
                st.waiting
                    .iter()
                    .map(|w| (w.key.clone(), w.request.clone()))
                    .collect(),
            );
            r.asked = st
                .waiting
                .iter()
                .map(|w| TaskQuestion {
                    key: w.key.clone(),
                    question: w.question.clone(),
                })
                .collect();
        }
        r
    }

    async fn save_live(&self, st: &AskState) -> Result<(), StoreError> {
        self.tasks
            .save(&self.id, &self.principal, &self.live(st))
            .await
    }

    /// Past [`TaskOptions::after`]: become a task (its first record), unless
    /// the run still replays earlier rounds' answers or has asked a round
    /// (`None`: not yet).
    async fn become_task(&self) -> Result<Option<Record>, StoreError> {
        let mut st = self.state.lock().await;
        let replaying = self.round.as_ref().is_some_and(|r| !r.answered_all());
        if st.phase != Phase::Sync || replaying {
            return Ok(None);
        }
        st.phase = Phase::Task;
        let record = self.live(&st);
        self.tasks.save(&self.id, &self.principal, &record).await?;
        Ok(Some(record))
    }

    /// The tool asks `request` (`kind` is the key's prefix) and waits for the
    /// answer.
    async fn ask(&self, kind: &str, request: InputRequest) -> Result<Value, crate::ClientError> {
        let question = serde_json::to_string(&request).unwrap_or_default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let mut st = self.state.lock().await;
            if st.phase == Phase::Done {
                // The call's task ended (a confirmed call runs on in the
                // approval's own run): no task shows the question any more.
                return Err(crate::ClientError::NotSupported {
                    request: if kind == "sample" {
                        "sampling"
                    } else {
                        "elicitation"
                    },
                    reason: "the call's task has ended: nothing can show the question".to_owned(),
                });
            }
            let key = format!("{kind}-{}", st.next);
            st.next += 1;
            st.waiting.push(Waiting {
                key,
                question,
                request,
                answer: tx,
            });
            if st.phase == Phase::Task {
                self.save_live(&st)
                    .await
                    .map_err(|e| crate::ClientError::Failed {
                        reason: format!("the task store cannot be reached: {e}"),
                    })?;
            }
        }
        rx.await.map_err(|_| crate::ClientError::Cancelled)
    }

    /// Hand the answers in `responses` to the questions they answer (key and
    /// kind); the others stay pending.
    async fn deliver(&self, responses: &InputResponses) -> Result<(), ErrorData> {
        let mut st = self.state.lock().await;
        if st.phase != Phase::Task {
            return Ok(());
        }
        let before = st.waiting.len();
        let mut kept = Vec::with_capacity(before);
        for w in std::mem::take(&mut st.waiting) {
            match responses.get(&w.key).filter(|v| fits(&w.key, v)) {
                Some(v) => {
                    let _ = w.answer.send(v.clone());
                }
                None => kept.push(w),
            }
        }
        st.waiting = kept;
        if st.waiting.len() != before {
            self.save_live(&st).await.map_err(|e| unavailable(&e))?;
        }
        Ok(())
    }

    /// Take the answers another instance left in the store for this task's
    /// questions.
    async fn collect(&self) {
        let mut st = self.state.lock().await;
        if st.phase != Phase::Task || st.waiting.is_empty() {
            return;
        }
        let before = st.waiting.len();
        let mut kept = Vec::with_capacity(before);
        for w in std::mem::take(&mut st.waiting) {
            let k = answer_key(&self.id, &w.key);
            let mailed = match self.tasks.options.store.get(&k).await {
                Ok(Some(text)) => self
                    .tasks
                    .sealer
                    .open(Purpose::Task, &binding(&k, &self.principal), &text)
                    .and_then(|plain| serde_json::from_slice::<Mailed>(&plain).ok()),
                _ => None,
            };
            match mailed.filter(|m| m.question == w.question && fits(&w.key, &m.value)) {
                Some(m) => {
                    let _ = w.answer.send(m.value);
                }
                None => kept.push(w),
            }
        }
        st.waiting = kept;
        if st.waiting.len() != before
            && let Err(e) = self.save_live(&st).await
        {
            tracing::warn!(target: "toolmark::mcp", error = %e, "a task's state could not be stored");
        }
    }

    /// The call ended: its last record.
    async fn end(&self, record: &Record) {
        let mut st = self.state.lock().await;
        st.phase = Phase::Done;
        st.waiting.clear();
        if let Err(e) = self.tasks.save(&self.id, &self.principal, record).await {
            tracing::warn!(target: "toolmark::mcp", error = %e, "a task's end could not be stored");
        }
    }

    /// Before the task: the round's answer, or the round asks (the run stops).
    /// `None` once the call is a task (or there is no round).
    async fn in_round<T>(
        &self,
        ask: impl FnOnce(super::mrtr::RoundClient) -> BoxFuture<'static, Result<T, crate::ClientError>>,
    ) -> Option<Result<T, crate::ClientError>> {
        let mut st = self.state.lock().await;
        let round = self.round.as_ref().filter(|_| st.phase == Phase::Sync)?;
        let answer = ask(super::mrtr::RoundClient(Arc::clone(round))).await;
        if self.run_stop.is_cancelled() {
            st.phase = Phase::Asked;
        }
        Some(answer)
    }
}

/// A task's tool's questions ([`ToolContext::elicit`](crate::ToolContext::elicit),
/// [`ToolContext::sample`](crate::ToolContext::sample)).
struct TaskClient(Arc<Asker>);

impl crate::CallerClient for TaskClient {
    fn elicit(
        &self,
        request: crate::ElicitRequest,
    ) -> BoxFuture<'static, Result<crate::Elicited, crate::ClientError>> {
        let asker = Arc::clone(&self.0);
        Box::pin(async move {
            let r = request.clone();
            if let Some(answer) = asker
                .in_round(move |c| crate::CallerClient::elicit(&c, r))
                .await
            {
                return answer;
            }
            if !asker.answerable.elicits {
                return Err(crate::ClientError::NotSupported {
                    request: "elicitation",
                    reason:
                        "the request's client capabilities do not declare elicitation (form mode)"
                            .to_owned(),
                });
            }
            let schema = super::client::elicitation_schema(request.schema)?;
            let params = rmcp::model::ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: request.message,
                requested_schema: schema,
            };
            let value = asker
                .ask(
                    "elicit",
                    InputRequest::Elicitation(rmcp::model::ElicitRequest::new(params)),
                )
                .await?;
            super::client::elicited(value)
        })
    }

    // rmcp marks sampling deprecated (SEP-2577, a future revision); 2026-07-28 has it.
    #[allow(deprecated)]
    fn sample(
        &self,
        request: crate::SampleRequest,
    ) -> BoxFuture<'static, Result<crate::Sampled, crate::ClientError>> {
        let asker = Arc::clone(&self.0);
        Box::pin(async move {
            let r = request.clone();
            if let Some(answer) = asker
                .in_round(move |c| crate::CallerClient::sample(&c, r))
                .await
            {
                return answer;
            }
            if !asker.answerable.samples {
                return Err(crate::ClientError::NotSupported {
                    request: "sampling",
                    reason: "the request's client capabilities do not declare sampling".to_owned(),
                });
            }
            let params = super::client::sample_params(request);
            let value = asker
                .ask(
                    "sample",
                    InputRequest::CreateMessage(rmcp::model::CreateMessageRequest::new(params)),
                )
                .await?;
            serde_json::from_value::<rmcp::model::CreateMessageResult>(value)
                .map(super::client::sampled)
                .map_err(|e| crate::ClientError::Failed {
                    reason: format!("the client's answer is not a sampling result: {e}"),
                })
        })
    }
}

impl Start {
    /// Run the call; answer its result when it ends within
    /// [`TaskOptions::after`] (a task all the same for a `required` tool),
    /// else (or at once, when it waits for the client's approval) a task that
    /// goes on without the request. A question the tool asks before it is a
    /// task goes back as a multi round-trip round.
    pub(crate) async fn run(
        self,
        options: crate::CallOptions,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let id = crate::confirm::new_confirm_id();
        // The call outlives this request: its own signal, cancelled by
        // tasks/cancel; the run's (a child) also by a round that asks.
        let signal = CancellationToken::new();
        let run_stop = signal.child_token();
        let round = if self.by_client.is_none() {
            match super::mrtr::Round::open(
                &self.tasks.sealer,
                &self.tm,
                (&self.name, &self.principal, &self.args),
                self.request_state.as_deref(),
                self.input_responses.as_ref(),
                self.answerable,
                run_stop.clone(),
            )
            .await
            {
                Ok(round) => Some(round),
                Err(super::mrtr::StateError::Tampered) => return Err(super::mrtr::tampered()),
                Err(super::mrtr::StateError::Outcome(outcome)) => {
                    return Ok(super::call_result(outcome, self.shape).into())
                }
            }
        } else {
            None
        };
        let created_ms = crate::store::to_ms(self.tm.inner.now());
        let asker = Arc::new(Asker {
            tasks: Arc::clone(&self.tasks),
            tm: self.tm.clone(),
            id: id.clone(),
            principal: self.principal.clone(),
            tool: self.name.clone(),
            created_ms,
            round: round.clone(),
            run_stop: run_stop.clone(),
            answerable: self.answerable,
            state: tokio::sync::Mutex::new(AskState {
                phase: Phase::Sync,
                waiting: Vec::new(),
                next: 0,
            }),
        });
        let panicked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let options = options
            .signal(run_stop)
            .client(TaskClient(Arc::clone(&asker)))
            .on_panic(Arc::clone(&panicked));
        let (tm, name, args) = (self.tm.clone(), self.name.clone(), self.args.clone());
        let deferring = self.by_client.is_some();
        let mut call = tokio::spawn(async move {
            if deferring {
                tm.call_deferring(&name, args, options).await
            } else {
                tm.call(&name, args, options).await
            }
        });
        self.tasks.started(&id, signal.clone(), Arc::clone(&asker));
        let mut wait = self.tasks.options.after;
        let recheck = self.tasks.options.poll.min(Duration::from_millis(50));
        let working = loop {
            let joined = tokio::select! {
                r = &mut call => Some(r),
                () = tokio::time::sleep(wait) => None,
            };
            if let Some(joined) = joined {
                self.tasks.finished(&id);
                return self
                    .ended_in_time(
                        &id,
                        created_ms,
                        joined,
                        round.as_deref(),
                        &panicked,
                        &signal,
                        &asker,
                    )
                    .await;
            }
            match asker.become_task().await.map_err(|e| unavailable(&e))? {
                Some(record) => break record,
                None => wait = recheck,
            }
        };
        let created = self.tasks.created(&id, &working);
        let task_id = id.clone();
        tokio::spawn(async move {
            let joined = loop {
                tokio::select! {
                    r = &mut call => break r,
                    () = tokio::time::sleep(self.tasks.options.poll) => {
                        if self.tasks.cancel_requested(&task_id, &self.principal).await {
                            signal.cancel();
                        }
                        asker.collect().await;
                    }
                }
            };
            self.tasks.finished(&task_id);
            let ending = self.ending(joined, &signal, &panicked).await;
            asker.end(&self.record(created_ms, ending)).await;
        });
        Ok(created.into())
    }

    /// The call ended before it became a task.
    #[allow(clippy::too_many_arguments)]
    async fn ended_in_time(
        &self,
        id: &str,
        created_ms: u64,
        joined: Result<crate::Outcome, tokio::task::JoinError>,
        round: Option<&super::mrtr::Round>,
        panicked: &std::sync::atomic::AtomicBool,
        signal: &CancellationToken,
        asker: &Asker,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let mut joined = joined;
        if let (Some(round), Ok(outcome)) = (round, &joined) {
            let call = (self.name.as_str(), self.principal.as_str(), &self.args);
            match round.reply(&self.tasks.sealer, &self.tm, call) {
                // A question before the task: a round of its own.
                Some(super::mrtr::Reply::InputRequired(r)) => return Ok(r.into()),
                Some(super::mrtr::Reply::Outcome(o)) => joined = Ok(o),
                Some(super::mrtr::Reply::Tampered) => return Err(super::mrtr::tampered()),
                None => {
                    if let Some(required) = round.missing(outcome) {
                        return Err(ErrorData::missing_required_client_capability(required));
                    }
                }
            }
        }
        let required = self.support == TaskSupport::Required;
        // A crash is the task's `failed` only where there is a task.
        let no_crash = std::sync::atomic::AtomicBool::new(false);
        let crash = if required { panicked } else { &no_crash };
        let ending = self.ending(joined, signal, crash).await;
        match ending {
            Ending::Failed(e) if !required || unknown_tool(&e) => Err(e),
            Ending::Done(result) if !required => Ok(result.into()),
            Ending::Cancelled if !required => Ok(super::call_result(
                crate::Outcome::refused(crate::RefusalCode::Cancelled, "The call was cancelled"),
                self.shape,
            )
            .into()),
            ending => {
                let record = self.record(created_ms, ending);
                asker.end(&record).await;
                // The record is in the store (or the store failed: say so).
                if self.tasks.load(id, &self.principal).await?.is_none() {
                    return Err(ErrorData::internal_error(
                        "The task store cannot be reached",
                        None,
                    ));
                }
                Ok(self.tasks.created(id, &record).into())
            }
        }
    }

    async fn ending(
        &self,
        joined: Result<crate::Outcome, tokio::task::JoinError>,
        signal: &CancellationToken,
        panicked: &std::sync::atomic::AtomicBool,
    ) -> Ending {
        let crashed = joined.is_err() || panicked.load(std::sync::atomic::Ordering::SeqCst);
        if crashed && !signal.is_cancelled() {
            // A protocol-level failure, not the tool's own error: the task is
            // `failed` (the panic's message stays out: it may quote anything).
            return Ending::Failed(ErrorData::internal_error(
                "The tool crashed (it panicked) before it answered",
                None,
            ));
        }
        let outcome = joined.unwrap_or_else(|_| {
            crate::Outcome::Error(crate::ToolError::new("The call's task ended abnormally"))
        });
        ending_of(
            &self.tm,
            &self.tasks,
            outcome,
            signal,
            self.shape,
            self.by_client.as_ref(),
        )
        .await
    }

    fn record(&self, created_ms: u64, ending: Ending) -> Record {
        record_of(&self.tm, &self.name, created_ms, ending)
    }
}

fn unknown_tool(e: &ErrorData) -> bool {
    e.data
        .as_ref()
        .and_then(|d| d.get("code"))
        .and_then(Value::as_str)
        == Some("unknown_tool")
}

async fn ending_of(
    tm: &crate::Toolmark,
    tasks: &Tasks,
    outcome: crate::Outcome,
    signal: &CancellationToken,
    shape: super::OutputShape,
    by_client: Option<&super::mrtr::Mode>,
) -> Ending {
    use crate::{Outcome, RefusalCode};
    match &outcome {
        Outcome::Refused(r) if r.code == RefusalCode::UnknownTool => {
            return Ending::Failed(ErrorData::invalid_params(
                format!("Unknown tool: {}", r.message),
                Some(serde_json::json!({"code": "unknown_tool"})),
            ));
        }
        // Cancelled by tasks/cancel: whatever the tool made of it (a tool
        // that turns its question's `Cancelled` into an error, say).
        _ if signal.is_cancelled() => {
            return Ending::Cancelled;
        }
        Outcome::NeedsConfirmation {
            confirm_id,
            expires_at,
            ..
        } => {
            if let (Ok(Some(pending)), Some(mode)) = (tm.pending_by_id(confirm_id).await, by_client)
                && let Some(requests) = mode.asking(&pending, &tasks.sealer)
            {
                return Ending::Asking {
                    id: confirm_id.clone(),
                    exp: crate::store::to_ms(*expires_at),
                    requests,
                };
            }
        }
        _ => {}
    }
    Ending::Done(super::call_result(outcome, shape))
}

fn record_of(tm: &crate::Toolmark, tool: &str, created_ms: u64, ending: Ending) -> Record {
    let mut r = Record {
        status: TaskStatus::Completed,
        message: None,
        created_ms,
        updated_ms: crate::store::to_ms(tm.inner.now()),
        tool: tool.to_owned(),
        input_requests: None,
        asked: Vec::new(),
        confirm: None,
        confirm_exp: None,
        result: None,
        error: None,
    };
    match ending {
        Ending::Failed(e) => {
            r.status = TaskStatus::Failed;
            r.error = Some(object(e));
        }
        Ending::Asking { id, exp, requests } => {
            r.status = TaskStatus::InputRequired;
            r.message = Some("Waiting for the user's approval".to_owned());
            r.input_requests = Some(requests);
            r.confirm = Some(id);
            r.confirm_exp = Some(exp);
        }
        Ending::Cancelled => {
            r.status = TaskStatus::Cancelled;
            r.message = Some("The call was cancelled".to_owned());
        }
        Ending::Done(result) => {
            r.result = Some(object(result));
        }
    }
    r
}

/// `tasks/update` for a task whose tool asked questions: each answer goes to
/// the question it answers (its key, an answer of that question's kind);
/// the others stay pending. On the instance the task runs on the waiting tool
/// gets it at once; elsewhere it is left, sealed, in the task store, where the
/// task's runner takes it within [`TaskOptions::poll`].
async fn answer_questions(
    tm: &crate::Toolmark,
    tasks: &Tasks,
    id: &str,
    principal: &str,
    mut record: Record,
    responses: &InputResponses,
) -> Result<(), ErrorData> {
    if let Some(asker) = tasks.asker(id) {
        return asker.deliver(responses).await;
    }
    let mut answered = Vec::new();
    for q in &record.asked {
        let Some(value) = responses.get(&q.key).filter(|v| fits(&q.key, v)) else {
            continue;
        };
        let k = answer_key(id, &q.key);
        let plain = serde_json::to_vec(&Mailed {
            question: q.question.clone(),
            value: value.clone(),
        })
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let sealed = tasks
            .sealer
            .seal(Purpose::Task, &binding(&k, principal), &plain)
            .ok_or_else(|| ErrorData::internal_error("the OS random source failed", None))?;
        tasks
            .options
            .store
            .put(&k, sealed, tasks.options.ttl)
            .await
            .map_err(|e| unavailable(&e))?;
        answered.push(q.key.clone());
    }
    if answered.is_empty() {
        return Ok(());
    }
    record.asked.retain(|q| !answered.contains(&q.key));
    if let Some(requests) = &mut record.input_requests {
        requests.retain(|k, _| !answered.contains(k));
    }
    if record.asked.is_empty() {
        record.status = TaskStatus::Working;
        record.message = Some("Answered: the call is running".to_owned());
        record.input_requests = None;
    }
    record.updated_ms = crate::store::to_ms(tm.inner.now());
    tasks
        .save(id, principal, &record)
        .await
        .map_err(|e| unavailable(&e))
}

/// `tasks/update`: the client's answer to a task's confirmation (on the app's
/// page: that the person decided). The approved call runs in the background;
/// `tasks/get` shows it `working`, then its end. An update that decides nothing
/// is acknowledged and changes nothing.
pub(crate) async fn update(
    tm: &crate::Toolmark,
    tasks: &Arc<Tasks>,
    id: &str,
    principal: &str,
    responses: &InputResponses,
    shape: super::OutputShape,
    mode: Option<super::mrtr::Mode>,
) -> Result<(), ErrorData> {
    let Some(record) = tasks.load(id, principal).await? else {
        return Err(not_found());
    };
    if record.status == TaskStatus::InputRequired && !record.asked.is_empty() {
        return answer_questions(tm, tasks, id, principal, record, responses).await;
    }
    let (TaskStatus::InputRequired, Some(confirm), Some(mode)) =
        (record.status, record.confirm.clone(), mode)
    else {
        return Err(ErrorData::invalid_params(
            "This task is not waiting for input",
            None,
        ));
    };
    let answer = confirm_answer(responses);
    let pending = tm
        .pending_by_id(&confirm)
        .await
        .map_err(|e| unavailable(&e))?;
    let Some(pending) = pending else {
        // Expired or withdrawn meanwhile: the task ends so.
        let outcome = crate::Outcome::refused(
            crate::RefusalCode::ConfirmationExpired,
            "The confirmation expired before it was answered",
        );
        let ending = ending_of(tm, tasks, outcome, &CancellationToken::new(), shape, None).await;
        let end = record_of(tm, &record.tool, record.created_ms, ending);
        return tasks
            .save(id, principal, &end)
            .await
            .map_err(|e| unavailable(&e));
    };
    let Some((decision, approver)) = mode.decide(&tasks.sealer, &pending, answer.as_ref()).await
    else {
        // No decision yet (no answer under `confirm`, only keys this task never
        // asked, or the person has not decided on the approval page): the update
        // is acknowledged and the task stays `input_required`, asking the same
        // question, as a retry without an answer is asked again.
        return Ok(());
    };
    let mut working = record.clone();
    working.status = TaskStatus::Working;
    working.message = Some("Answered: the call is running".to_owned());
    working.input_requests = None;
    working.updated_ms = crate::store::to_ms(tm.inner.now());
    tasks
        .save(id, principal, &working)
        .await
        .map_err(|e| unavailable(&e))?;
    let (tm, tasks) = (tm.clone(), Arc::clone(tasks));
    let (id, principal) = (id.to_owned(), principal.to_owned());
    tokio::spawn(async move {
        let outcome = tm.answer_by(&confirm, decision, approver).await;
        // Answered twice at once (on two instances): the first answer's task
        // writes the end; this one leaves it alone.
        if outcome.refusal_code() == Some(crate::RefusalCode::ConfirmationExpired)
            && record
                .confirm_exp
                .is_some_and(|exp| crate::store::to_ms(tm.inner.now()) < exp)
        {
            return;
        }
        let ending = ending_of(&tm, &tasks, outcome, &CancellationToken::new(), shape, None).await;
        let end = record_of(&tm, &record.tool, record.created_ms, ending);
        if let Err(e) = tasks.save(&id, &principal, &end).await {
            tracing::warn!(target: "toolmark::mcp", error = %e, "a task's end could not be stored");
        }
    });
    Ok(())
}

/// `tasks/cancel`: cancel a running call (here or, through the store, on the
/// instance that runs it) or withdraw the confirmation a task waits for.
pub(crate) async fn cancel(
    tm: &crate::Toolmark,
    tasks: &Tasks,
    id: &str,
    principal: &str,
) -> Result<(), ErrorData> {
    let Some(mut record) = tasks.load(id, principal).await? else {
        return Err(not_found());
    };
    match record.status {
        TaskStatus::InputRequired => {
            if let Some(confirm) = &record.confirm {
                let _ = tm.cancel_pending_async(confirm).await;
            }
            if !record.asked.is_empty() {
                // The tool waits for its answers: stop it (here, or through the
                // store on the instance it runs on).
                tasks
                    .request_cancel(id, principal)
                    .await
                    .map_err(|e| unavailable(&e))?;
                record.asked.clear();
            }
            record.status = TaskStatus::Cancelled;
            record.message = Some("The call was cancelled".to_owned());
            record.input_requests = None;
            record.updated_ms = crate::store::to_ms(tm.inner.now());
            tasks
                .save(id, principal, &record)
                .await
                .map_err(|e| unavailable(&e))
        }
        TaskStatus::Working => tasks
            .request_cancel(id, principal)
            .await
            .map_err(|e| unavailable(&e)),
        _ => Ok(()),
    }
}
