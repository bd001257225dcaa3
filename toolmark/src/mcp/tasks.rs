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
    CreateTaskResult, DetailedTask, ErrorData, InputRequests, InputResponses, JsonObject, Task,
    TaskPayload, TaskStatus,
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
    map: Mutex<HashMap<String, (String, Instant)>>,
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
        map.retain(|_, (_, until)| *until > now);
        map.insert(key.to_owned(), (value, now + ttl));
        Box::pin(std::future::ready(Ok(())))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let now = Instant::now();
        let found = lock(&self.map)
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(v, _)| v.clone());
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

/// How calls become tasks ([`McpServer::tasks`](super::McpServer::tasks)).
#[derive(Clone)]
pub struct TaskOptions {
    pub(crate) after: Duration,
    pub(crate) ttl: Duration,
    pub(crate) poll: Duration,
    pub(crate) store: Arc<dyn TaskStore>,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            after: Duration::from_secs(1),
            ttl: Duration::from_secs(3600),
            poll: Duration::from_millis(500),
            store: Arc::new(MemoryTaskStore::new()),
        }
    }
}

impl fmt::Debug for TaskOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskOptions")
            .field("after", &self.after)
            .field("ttl", &self.ttl)
            .field("poll", &self.poll)
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

/// The running side of tasks: options, the seal, and this process's running
/// calls (to cancel them).
pub(crate) struct Tasks {
    pub(crate) options: TaskOptions,
    pub(crate) sealer: Sealer,
    running: Mutex<HashMap<String, CancellationToken>>,
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

    /// Register a call running here (so `tasks/cancel` reaches it).
    pub(crate) fn started(&self, id: &str, token: CancellationToken) {
        lock(&self.running).insert(id.to_owned(), token);
    }

    pub(crate) fn finished(&self, id: &str) {
        lock(&self.running).remove(id);
    }

    /// Cancel task `id` if it runs here; else leave a mark its runner sees.
    pub(crate) async fn request_cancel(&self, id: &str, principal: &str) -> Result<(), StoreError> {
        if let Some(token) = lock(&self.running).get(id) {
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
}

/// What a finished call makes of its task.
enum Ending {
    /// A JSON-RPC error (an unknown tool).
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

impl Start {
    /// Run the call; answer its result when it ends within
    /// [`TaskOptions::after`], else (or at once, when it waits for the client's
    /// approval) a task that goes on without the request.
    pub(crate) async fn run(
        self,
        options: crate::CallOptions,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let id = crate::confirm::new_confirm_id();
        // The call outlives this request: its own signal, cancelled by tasks/cancel.
        let signal = CancellationToken::new();
        let options = options.signal(signal.clone());
        let (tm, name, args) = (self.tm.clone(), self.name.clone(), self.args.clone());
        let deferring = self.by_client.is_some();
        let mut call = tokio::spawn(async move {
            if deferring {
                tm.call_deferring(&name, args, options).await
            } else {
                tm.call(&name, args, options).await
            }
        });
        self.tasks.started(&id, signal.clone());
        let created_ms = crate::store::to_ms(self.tm.inner.now());
        let first = tokio::select! {
            r = &mut call => Some(r),
            () = tokio::time::sleep(self.tasks.options.after) => None,
        };
        if let Some(joined) = first {
            self.tasks.finished(&id);
            return match self.ending(joined, &signal).await {
                Ending::Failed(e) => Err(e),
                Ending::Done(result) => Ok(result.into()),
                Ending::Cancelled => Ok(super::call_result(
                    crate::Outcome::refused(
                        crate::RefusalCode::Cancelled,
                        "The call was cancelled",
                    ),
                    self.shape,
                )
                .into()),
                asking @ Ending::Asking { .. } => {
                    let record = self.record(created_ms, asking);
                    self.tasks
                        .save(&id, &self.principal, &record)
                        .await
                        .map_err(|e| unavailable(&e))?;
                    Ok(self.tasks.created(&id, &record).into())
                }
            };
        }
        let working = Record {
            status: TaskStatus::Working,
            message: Some("The call is running".to_owned()),
            created_ms,
            updated_ms: created_ms,
            tool: self.name.clone(),
            input_requests: None,
            confirm: None,
            confirm_exp: None,
            result: None,
            error: None,
        };
        self.tasks
            .save(&id, &self.principal, &working)
            .await
            .map_err(|e| unavailable(&e))?;
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
                    }
                }
            };
            self.tasks.finished(&task_id);
            let ending = self.ending(joined, &signal).await;
            let record = self.record(created_ms, ending);
            if let Err(e) = self.tasks.save(&task_id, &self.principal, &record).await {
                tracing::warn!(target: "toolmark::mcp", error = %e, "a task's end could not be stored");
            }
        });
        Ok(created.into())
    }

    async fn ending(
        &self,
        joined: Result<crate::Outcome, tokio::task::JoinError>,
        signal: &CancellationToken,
    ) -> Ending {
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
        Outcome::Refused(r) if r.code == RefusalCode::Cancelled && signal.is_cancelled() => {
            return Ending::Cancelled;
        }
        Outcome::NeedsConfirmation {
            confirm_id,
            expires_at,
            ..
        } => {
            if let (Ok(Some(pending)), Some(mode)) = (tm.pending_by_id(confirm_id).await, by_client)
            {
                if let Some(requests) = mode.asking(&pending, &tasks.sealer) {
                    return Ending::Asking {
                        id: confirm_id.clone(),
                        exp: crate::store::to_ms(*expires_at),
                        requests,
                    };
                }
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
