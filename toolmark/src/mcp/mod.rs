//! Serve a [`Toolmark`] to MCP clients (Claude Desktop, Cursor, VS Code, the MCP
//! Inspector, agent frameworks) over stdio or Streamable HTTP, built on
//! [rmcp](https://docs.rs/rmcp), the official Rust MCP SDK.
//!
//! ```no_run
//! # async fn run(tm: toolmark::Toolmark) -> std::io::Result<()> {
//! use toolmark::mcp::McpServer;
//!
//! McpServer::new(tm).serve_stdio().await
//! # }
//! ```
//!
//! What an MCP client gets:
//!
//! - **tools/list**: the manifest for [`Caller::Mcp`](crate::Caller::Mcp), sorted
//!   by name, each tool with its input schema (sensitive properties marked
//!   `writeOnly`), its output schema when known, a title, and every annotation
//!   (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`: see
//!   [Working with real clients](#working-with-real-clients)). One page by
//!   default; [`McpServer::page_size`] pages it with a cursor.
//! - **notifications/tools/list_changed** to every connected session whenever the
//!   list changes (a scope shown, hidden or disposed, a tool registered),
//!   coalesced: a burst of changes sends one notification.
//! - **tools/call**: a [`Toolmark::call`] by caller `Mcp`, cancelled by
//!   `notifications/cancelled` and by the end of the session; progress reports
//!   become `notifications/progress` when the client sent a progress token. The
//!   outcome is mapped by [`call_result`]: an `ok` output is `structuredContent`
//!   (an object; any other value is wrapped as `{"result": …}`) plus the same JSON
//!   as text; a refusal or a tool error is `isError: true` with a text naming the
//!   code, the message and every issue, so a model can correct its input, and
//!   the same `{code, message, issues}` in `_meta` under [`ERROR_META_KEY`] (and
//!   as `structuredContent` only for a tool that declares no output schema). An
//!   unknown tool is the JSON-RPC error `-32602`.
//! - **Logging**: the server declares the `logging` capability;
//!   [`ToolContext::log`](crate::ToolContext::log) messages (scrubbed of the
//!   call's secrets) become `notifications/message` at or above the level the
//!   session set with `logging/setLevel` (every level until then, or
//!   [`McpServer::log_level`]), none below; progress and log messages go out in
//!   order, before the result.
//! - **A tool asking its client**: [`ToolContext::elicit`](crate::ToolContext::elicit)
//!   is `elicitation/create` (form mode) and
//!   [`ToolContext::sample`](crate::ToolContext::sample) is
//!   `sampling/createMessage`, sent to the calling session only when its client
//!   declared that capability (otherwise the tool gets `not_supported`). On
//!   2026-07-28 both go back to the client in `input_required` rounds; a call
//!   that fails because its tool needed a capability the request's `_meta` did
//!   not declare is the JSON-RPC error `-32021` (MissingRequiredClientCapability,
//!   naming it in `data.requiredCapabilities`).
//! - **Confirmation**: consequential and destructive tools ask the app's
//!   [`ConfirmHandler`](crate::ConfirmHandler), while the call stays open. With
//!   [`McpServer::confirm_by_elicitation`] the server asks the calling client
//!   instead (`elicitation/create`); see [`Elicitation`] for when that is safe.
//!   That is a confirmation path of its own, per client: with no app handler, a
//!   client that answers elicitations lists and calls the guarded tools the
//!   policy covers, and a client that does not has them hidden (`not_allowed`).
//! - **Everything else**: resources, prompts and completions go to an rmcp
//!   handler of your own ([`McpServer::fallback_handler`]); without one they
//!   are "method not found".
//! - **Header parameters** (2026-07-28, SEP-2243): a parameter marked
//!   `x-mcp-header` in the input schema (`#[schemars(extend("x-mcp-header" =
//!   "Region"))]` on a typed tool's field) travels as an `Mcp-Param-*` HTTP
//!   header too, checked against the body's value (`-32020` when they differ);
//!   registration refuses a sensitive one, and a malformed one (`invalid_spec`).
//!
//! Over HTTP ([`McpServer::router`], [`McpServer::serve_http`]) the server checks
//! `Host` (strictly parsed) and `Origin` (loopback only unless configured), an
//! optional bearer token, the body size before parsing, and the number of live
//! sessions, each as a tower layer ([`HttpOptions`]).
//!
//! # Working with real clients
//!
//! Each of these is tested against the client named, in CI.
//!
//! - **Error results every client reads.** The TypeScript SDK and the MCP
//!   Inspector (and the desktop hosts built like them) check a result's
//!   `structuredContent` against the tool's `outputSchema` even when `isError`
//!   is set, and throw the whole result away when it does not match. So an
//!   error result of a tool with an output schema has no `structuredContent`:
//!   the model reads `"<code>: <message>"` and the issues in the text, a program
//!   reads `_meta["toolmark/error"]`.
//! - **Hints and titles on every tool.** `readOnlyHint` and `destructiveHint`
//!   come from the effect; `openWorldHint` says whether the tool reaches beyond
//!   the app (by default only consequential tools do; say otherwise with
//!   `#[tool(open_world)]` / `#[tool(closed_world)]` or
//!   [`ToolSpec::open_world`](crate::ToolSpec::open_world)); `idempotentHint`
//!   says whether a retry is harmless (by default only reads;
//!   `#[tool(idempotent)]`, [`ToolSpec::idempotent`](crate::ToolSpec::idempotent)).
//!   A tool without a `title` is listed with one made from its name
//!   (`billing.send_invoice` → `Send invoice (billing)`).
//! - **Standard schemas.** Every schema is JSON Schema 2020-12 as validators
//!   know it: schemars' number formats (`uint32`, `int64`, `double`, …) become
//!   the bounds they mean (`minimum: 0`, `maximum: 4294967295`), other unknown
//!   formats are dropped, where the schema is made — so MCP and the provider
//!   formats of [`agent`](crate::agent) send the same.
//! - **Large lists.** tools/list answers in one page (the Inspector follows at
//!   most 64 pages; a 10,000-tool server listed 100 at a time was cut short).
//!   Each tool is turned into its MCP form once; a change of what is visible
//!   costs a filter, not a rebuild.
//! - **Secrets stay out of rmcp's logs.** rmcp logs every request it receives
//!   at DEBUG (and TRACE), a `tools/call` with its arguments. The server takes
//!   the arguments out before rmcp reads the message (a layer over HTTP, the
//!   [`Quiet`] transport over stdio and [`McpServer::serve_transport`]; a call
//!   [`McpServer::serve_io`] answers itself never reaches rmcp's loop), so no
//!   log level shows them. Nothing to do, unless you serve
//!   [`McpServer::session`] on a transport yourself: then wrap the transport
//!   with [`McpServer::serve_transport`] instead, or keep the `rmcp` target
//!   below DEBUG in your subscriber (`RUST_LOG=rmcp=info`).
//! - **Oversized bodies** are a readable 413, with a length or chunked: the
//!   server reads on and throws the body away (up to 64 MiB, 30 s), answers,
//!   and closes, so a client that writes its whole body first reads the status
//!   instead of a reset connection.
//! - **Bounded sessions.** At most [`HttpOptions::max_sessions`] live sessions
//!   (default 1,024; one more `initialize` is 503 with `Retry-After`), each
//!   closed after [`HttpOptions::session_idle_timeout`] without a request
//!   (default 5 minutes): a client that vanishes without closing costs memory
//!   only that long. [`McpServer::live_sessions`] tells how many there are.
//! - **Bearer tokens and OAuth.** [`HttpOptions::bearer_token`] accepts the
//!   scheme in any case (`bearer`, RFC 7235) and refuses an empty token when the
//!   server is built ([`McpConfigError`]). Behind a token, publish RFC 9728
//!   metadata with [`HttpOptions::protected_resource`]: it is served at
//!   `/.well-known/oauth-protected-resource` ([`McpServer::well_known`] to
//!   mount it yourself) and named in every 401's `WWW-Authenticate`.
//!
//! # Protocol revisions
//!
//! One [`McpServer`] serves both revisions, over stdio and over Streamable HTTP;
//! each client gets the one it asks for (rmcp negotiates):
//!
//! | | 2025-11-25 (and older) | 2026-07-28 |
//! |---|---|---|
//! | start | `initialize`, a session (`Mcp-Session-Id` over HTTP) | `server/discover`; no session: each request carries its version, client info and capabilities in `_meta` (a version the server does not speak is the version-mismatch error, naming the ones it does) |
//! | HTTP | POST, GET (SSE), DELETE | POST only (GET and DELETE are 405); `Mcp-Method` and `Mcp-Name` checked against the body; a plain JSON reply when the call sends no notification, SSE when it does |
//! | list changes | `notifications/tools/list_changed` to the session | to a `subscriptions/listen` stream that asked for `toolsListChanged`; each `tools/list` says how long it stays fresh (`ttlMs`, [`McpServer::list_ttl`]) |
//! | a consequential call | the app's [`ConfirmHandler`](crate::ConfirmHandler) while the call waits, or an `elicitation/create` to the session ([`McpServer::confirm_by_elicitation`]) | the app's handler, or a **multi round-trip request**: `input_required` with the question and a sealed `requestState`, answered in the retry ([`Elicitation`]); or the person on the app's page ([`ApprovalPage`]) |
//! | [`ToolContext::elicit`](crate::ToolContext::elicit) | `elicitation/create` to the session | an `input_required` round (`inputRequests.elicit-N`, or the tool's own name for the question: [`ToolContext::elicit_keyed`](crate::ToolContext::elicit_keyed), [`SampleRequest::key`](crate::SampleRequest::key)); the tool runs again from the start with the answers, so ask before doing what should happen once; an answer counts only for the question (key and text) it was given for; each round's `requestState` is used once (a replay is `confirmation_expired`, on every instance sharing the [`ConfirmStore`](crate::store::ConfirmStore)); after a confirmation asked through the client, `not_supported`; without the `elicitation` capability in `_meta`, a call that fails for it is `-32021` |
//! | [`ToolContext::log`](crate::ToolContext::log) | `notifications/message` at the session's `logging/setLevel` | only for a request that opts in with `io.modelcontextprotocol/logLevel` in its `_meta` (logging is deprecated in 2026-07-28), at or above that level |
//! | long calls | progress notifications | the same, or with the Tasks extension a **task** ([`TaskOptions`]): `tasks/get`, `tasks/update`, `tasks/cancel`; a task's `ctx.elicit`/`ctx.sample` are its `inputRequests`, answered by `tasks/update` while the tool waits; per-tool [`TaskSupport`] |
//! | [`ToolContext::sample`](crate::ToolContext::sample) | `sampling/createMessage` to the session | an `input_required` round (`inputRequests.sample-N`, a `sampling/createMessage`), as `elicit`; without `sampling` in `_meta`, a call that fails for it is `-32021` |
//!
//! # Stateless deployment (three processes, one Redis, any load balancer)
//!
//! A 2026-07-28 client needs no sticky sessions: any instance can answer any
//! request once the instances share what outlives a request. Give every
//! instance the same [`RedisStore`](crate::store::RedisStore) (pending
//! confirmations, so an approval's retry may land anywhere), the same seal key
//! (the toolmark's one seal: it seals the stored confirmation records, and the
//! `requestState` handles, the approval tokens and the tasks' states too, each
//! bound to what it is and what it belongs to, so none opens as another; a
//! Redis store needs the key, and without a store and a key each process seals
//! with a key of its own and only it opens them), and the same [`TaskStore`]:
//!
//! ```no_run
//! # #[cfg(feature = "redis")]
//! # async fn run(key: [u8; 32]) -> Result<(), Box<dyn std::error::Error>> {
//! use toolmark::mcp::{Elicitation, McpServer, RedisTaskStore, TaskOptions};
//! use toolmark::store::RedisStore;
//! use toolmark::Toolmark;
//!
//! let url = "redis://10.0.0.5:6379/";
//! let tm = Toolmark::builder()
//!     .confirm_store(RedisStore::connect(url).await?)
//!     .seal_key(key) // the same 32 bytes on every instance
//!     .build()?;
//! tm.register_collected()?;
//! McpServer::new(tm)
//!     .confirm_by_elicitation(Elicitation::consequential())
//!     .tasks(TaskOptions::new().store(RedisTaskStore::connect(url).await?))
//!     .serve_http("0.0.0.0:8080".parse()?)
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! Run three of these behind any round-robin balancer. What is still per
//! process is the app's own state, scopes' visibility included: a scope shown
//! on one instance shows on the others when the app tells them (the example
//! `examples/mcp_server.rs --redis` publishes its admin flag, and every
//! instance's next tools/list agrees). 2025-11-25 clients keep their session
//! on the instance that opened it: route them sticky, or give them one instance.
//!
//! # Who approves
//!
//! A consequential or destructive call waits for one of these, checked in
//! this order:
//!
//! 1. The app's [`Policy`](crate::policy::Policy) and remembered decisions
//!    ([`policy`](crate::policy)): lasting decisions come only from the app.
//! 2. The person, on the app's own page ([`ApprovalPage`], 2026-07-28 clients
//!    that open URLs): the client is only told where to send its user; the page
//!    (the app's, behind its own login) records the decision as that person's
//!    ([`Approver::User`](crate::Approver::User)), which is what
//!    `Rule::require_person` asks for. This is the answer for a headless server
//!    a desktop client started.
//! 3. The calling client ([`Elicitation`]; off by default): its user answers a
//!    form in the client. **A client's answer is the client's word**: nothing
//!    stops a client from answering on its own, so it never satisfies a
//!    person-only rule, is recorded as [`Approver::Client`](crate::Approver::Client)
//!    and is never remembered beyond the call.
//! 4. Otherwise the app's [`ConfirmHandler`](crate::ConfirmHandler) (its own
//!    UI), while the call waits; a call no path can confirm is `not_allowed`
//!    and its tool is not listed.
//!
//! A confirmation asked through the client (2 or 3) on 2026-07-28 is a pending
//! confirmation of the one deferred flow (the toolmark's pending table or its
//! [`ConfirmStore`](crate::store::ConfirmStore)): single use, expiring by the
//! toolmark's clock, its input redacted wherever it is shown. Its
//! `requestState` is a sealed handle (the confirm id and expiry, never the
//! call's content) bound to the tool, the arguments the client sent and the
//! caller (the request's `Authorization`): a changed handle, or one sent with
//! other arguments or by another caller, fails its integrity check: the JSON-RPC
//! error `-32602` (Invalid params) with the refusal `invalid` as its `data`
//! (the issue at `requestState`); a replay or an expired one is
//! `confirmation_expired`; a retry without an answer is asked again and runs
//! nothing. The same holds for the `requestState` of a tool's own questions
//! (`ctx.elicit`, `ctx.sample`): each round is used once, through the
//! [`ConfirmStore`](crate::store::ConfirmStore)'s take-once and tombstones when
//! the toolmark has one (so on every instance sharing it), else in this
//! process's memory. A consequential tool confirmed through the client cannot
//! ask its own questions once approved: its confirmation is used, and a
//! question round's retry would run it unconfirmed, so the approved run's
//! `ctx.elicit` and `ctx.sample` get `not_supported` at once (the call answers,
//! the tool runs once).

mod approval;
mod client;
mod elicit;
mod fallback;
mod fastcall;
mod fastlist;
mod handler;
mod http;
pub(crate) mod list;
pub(crate) mod mrtr;
mod quiet;
mod result;
mod stateless;
mod stdio;
mod tasks;

use std::fmt;
use std::sync::Arc;

use crate::{LogLevel, Toolmark};

pub use approval::ApprovalPage;
pub use elicit::Elicitation;
pub use handler::McpSession;
pub use http::{HttpOptions, McpConfigError, ProtectedResource};
pub use quiet::Quiet;
pub use result::{call_result, OutputShape, ERROR_META_KEY};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use tasks::RedisTaskStore;
pub use tasks::{MemoryTaskStore, TaskOptions, TaskStore, TaskSupport};

/// The default `ttlMs` of a 2026-07-28 tools/list.
const DEFAULT_LIST_TTL_MS: u64 = 60_000;

/// Where a session's [`Toolmark`] comes from.
#[derive(Clone)]
enum Source {
    /// One Toolmark for every session.
    Shared(Toolmark),
    /// A new Toolmark per session (multi-user servers).
    PerSession(Arc<dyn Fn() -> Toolmark + Send + Sync>),
}

/// An MCP server for a [`Toolmark`]: cheap to clone, one per app.
///
/// ```no_run
/// # async fn run(tm: toolmark::Toolmark) -> std::io::Result<()> {
/// use toolmark::mcp::McpServer;
///
/// // An axum app of your own, with MCP at /mcp:
/// let app: axum::Router = axum::Router::new().nest_service("/mcp", McpServer::new(tm.clone()).router());
/// // Or standalone on 127.0.0.1:8080 (path /mcp):
/// McpServer::new(tm).serve_http("127.0.0.1:8080".parse().unwrap()).await
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(crate) config: Arc<Config>,
}

pub(crate) struct Config {
    source: Source,
    /// The shared Toolmark's catalog (one per Toolmark, shared by its sessions).
    shared_catalog: Option<Arc<list::Catalog>>,
    pub(crate) elicitation: Option<Elicitation>,
    pub(crate) page_size: usize,
    pub(crate) http: HttpOptions,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    /// A session's log level until its client sends `logging/setLevel`.
    pub(crate) log_level: LogLevel,
    /// The `ttlMs` of a 2026-07-28 tools/list.
    pub(crate) list_ttl_ms: u64,
    /// Seals a multi round-trip request's `requestState`, the approval tokens and
    /// the tasks' states: the Toolmark's one seal (its confirmation store's, else
    /// its seal key, so every instance opens them), else this process's key
    /// (`None` only if the OS random source failed: then no such round trips).
    pub(crate) handles: Option<crate::store::Sealer>,
    /// Tasks for clients that declare the extension (`None`: off).
    pub(crate) tasks: Option<Arc<tasks::Tasks>>,
    /// Approval by the person on the app's page (URL-mode elicitation).
    pub(crate) approval: Option<ApprovalPage>,
    /// The HTTP sessions alive now (shared by clones of the server).
    pub(crate) live_sessions: Arc<std::sync::atomic::AtomicUsize>,
    /// The app's own handler for the methods that are not tool methods.
    pub(crate) fallback: Option<Arc<dyn fallback::Fallback>>,
}

impl Config {
    /// Where the approval page's decisions wait: the task store when the
    /// server keeps tasks (shared by the instances that share it), else the
    /// page's own memory.
    pub(crate) fn decisions(&self, page: &ApprovalPage) -> Arc<dyn tasks::TaskStore> {
        match &self.tasks {
            Some(t) => Arc::clone(&t.options.store),
            None => Arc::clone(&page.own) as Arc<dyn tasks::TaskStore>,
        }
    }
}

impl McpServer {
    /// A server whose sessions all share `tm` (its scopes, state and queues).
    pub fn new(tm: Toolmark) -> Self {
        let catalog = list::Catalog::new(tm.clone());
        Self::build(Source::Shared(tm), Some(catalog))
    }

    /// A server that builds a new Toolmark for each session with `factory`, so
    /// each client has its own scopes, state and pending confirmations.
    pub fn per_session(factory: impl Fn() -> Toolmark + Send + Sync + 'static) -> Self {
        Self::build(Source::PerSession(Arc::new(factory)), None)
    }

    fn build(source: Source, shared_catalog: Option<Arc<list::Catalog>>) -> Self {
        // The toolmark's one seal (its store's, or its key): every instance that
        // shares them opens what another sealed. Per session: this process's key.
        let handles = match &source {
            Source::Shared(tm) => tm.sealer(),
            Source::PerSession(_) => crate::store::Sealer::process(),
        };
        McpServer {
            config: Arc::new(Config {
                source,
                shared_catalog,
                elicitation: None,
                page_size: usize::MAX,
                http: HttpOptions::default(),
                name: "toolmark".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                log_level: LogLevel::Debug,
                list_ttl_ms: DEFAULT_LIST_TTL_MS,
                tasks: handles
                    .clone()
                    .map(|h| Arc::new(tasks::Tasks::new(TaskOptions::default(), h))),
                handles,
                approval: None,
                live_sessions: Arc::default(),
                fallback: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Config)) -> Self {
        match Arc::get_mut(&mut self.config) {
            Some(c) => f(c),
            None => {
                let c = &*self.config;
                let mut copy = Config {
                    source: c.source.clone(),
                    shared_catalog: c.shared_catalog.clone(),
                    elicitation: c.elicitation.clone(),
                    page_size: c.page_size,
                    http: c.http.clone(),
                    name: c.name.clone(),
                    version: c.version.clone(),
                    instructions: c.instructions.clone(),
                    log_level: c.log_level,
                    list_ttl_ms: c.list_ttl_ms,
                    handles: c.handles.clone(),
                    tasks: c.tasks.clone(),
                    approval: c.approval.clone(),
                    live_sessions: Arc::clone(&c.live_sessions),
                    fallback: c.fallback.clone(),
                };
                f(&mut copy);
                self.config = Arc::new(copy);
            }
        }
        self
    }

    /// The name and version the server reports to clients (default: `toolmark`
    /// and this crate's version).
    #[must_use]
    pub fn server_info(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let (name, version) = (name.into(), version.into());
        self.edit(|c| {
            c.name = name;
            c.version = version;
        })
    }

    /// Instructions for the model, sent in the `initialize` result.
    #[must_use]
    pub fn instructions(self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.edit(|c| c.instructions = Some(text))
    }

    /// Tools per tools/list page (at least 1). A longer list comes in pages
    /// linked by `nextCursor`. Default: every tool in one page, as rmcp's own
    /// handler answers, because common clients stop following cursors after a
    /// number of pages (the MCP Inspector after 64) and would list a large
    /// server only in part.
    #[must_use]
    pub fn page_size(self, n: usize) -> Self {
        self.edit(|c| c.page_size = n.max(1))
    }

    /// How long a 2026-07-28 client may use a tools/list it got before it lists
    /// again (its `ttlMs`; default 60 s). A client that listens
    /// (`subscriptions/listen`) or keeps a 2025-11-25 session is told of a change
    /// at once; on another instance a change shows in that instance's next list,
    /// so a client that only caches sees it within this time.
    #[must_use]
    pub fn list_ttl(self, ttl: std::time::Duration) -> Self {
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.edit(|c| c.list_ttl_ms = ms)
    }

    /// How calls of clients that declare the Tasks extension become tasks (on by
    /// default with [`TaskOptions::default`]; see [`TaskOptions`]).
    #[must_use]
    pub fn tasks(self, options: TaskOptions) -> Self {
        self.edit(|c| {
            c.tasks = c
                .handles
                .clone()
                .map(|h| Arc::new(tasks::Tasks::new(options, h)));
        })
    }

    /// Never answer a task: every call answers its result (or an
    /// `input_required` round) on its request.
    #[must_use]
    pub fn without_tasks(self) -> Self {
        self.edit(|c| c.tasks = None)
    }

    /// The level of [`ToolContext::log`](crate::ToolContext::log) messages a
    /// session gets until its client sends `logging/setLevel` (default
    /// [`LogLevel::Debug`]: every message, as the official TypeScript SDK does).
    #[must_use]
    pub fn log_level(self, level: LogLevel) -> Self {
        self.edit(|c| c.log_level = level)
    }

    /// Ask the calling client to confirm, with `elicitation/create`, instead of
    /// the app's handler, for the tools `policy` covers. Off by default: see
    /// [`Elicitation`] for what an elicitation answer is worth.
    ///
    /// This is a confirmation path of its own, per client: without an app
    /// handler, a client that declared elicitation lists and calls the tools the
    /// policy covers; one that did not has them hidden (a call is `not_allowed`).
    /// For a tool only MCP may call, also tell the builder
    /// ([`ToolmarkBuilder::client_confirms`](crate::ToolmarkBuilder::client_confirms)`(Caller::Mcp)`),
    /// so registration counts this path.
    #[must_use]
    pub fn confirm_by_elicitation(self, policy: Elicitation) -> Self {
        self.edit(|c| c.elicitation = Some(policy))
    }

    /// Have the person approve the calls `page` covers on the app's own page
    /// (URL-mode elicitation, 2026-07-28 clients that declare it); see
    /// [`ApprovalPage`] and [`approval_router`](Self::approval_router). It takes
    /// precedence over [`confirm_by_elicitation`](Self::confirm_by_elicitation)
    /// for the tools both cover.
    #[must_use]
    pub fn approve_on_page(self, page: ApprovalPage) -> Self {
        self.edit(|c| c.approval = Some(page))
    }

    /// The app's own rmcp [`ServerHandler`](rmcp::ServerHandler) for every
    /// method that is not a tool method: resources (list, templates, read,
    /// subscribe), prompts and completions go to `handler`, and the server
    /// declares its capabilities for them beside Toolmark's tools. Tools stay
    /// Toolmark's: the handler's own tool methods are never called. One handler
    /// serves every session (share your state inside it).
    ///
    /// ```
    /// use rmcp::model::{
    ///     ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig,
    /// };
    /// use rmcp::service::RequestContext;
    /// use rmcp::{ErrorData, RoleServer, ServerHandler};
    /// use toolmark::mcp::McpServer;
    ///
    /// struct Docs;
    ///
    /// impl ServerHandler for Docs {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    ///     }
    ///
    ///     async fn list_resources(
    ///         &self,
    ///         _request: Option<PaginatedRequestParams>,
    ///         _context: RequestContext<RoleServer>,
    ///     ) -> Result<ListResourcesResult, ErrorData> {
    ///         let readme = Resource::new("docs://readme", "readme");
    ///         Ok(ListResourcesResult::with_all_items(vec![readme]))
    ///     }
    /// }
    ///
    /// # let tm = toolmark::Toolmark::builder().build().unwrap();
    /// let server = McpServer::new(tm).fallback_handler(Docs);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn fallback_handler(self, handler: impl rmcp::ServerHandler) -> Self {
        let handler: Arc<dyn fallback::Fallback> = Arc::new(handler);
        self.edit(|c| c.fallback = Some(handler))
    }

    /// The HTTP checks ([`HttpOptions`]) of [`router`](Self::router) and
    /// [`serve_http`](Self::serve_http).
    #[must_use]
    pub fn http_options(self, options: HttpOptions) -> Self {
        self.edit(|c| c.http = options)
    }

    /// A new session's handler (an rmcp [`ServerHandler`](rmcp::ServerHandler)):
    /// serve it on any rmcp transport, e.g. an in-process duplex in tests.
    pub fn session(&self) -> McpSession {
        let catalog = match (&self.config.source, &self.config.shared_catalog) {
            (Source::Shared(_), Some(c)) => Arc::clone(c),
            (Source::Shared(tm), None) => list::Catalog::new(tm.clone()),
            (Source::PerSession(f), _) => list::Catalog::new(f()),
        };
        McpSession::new(Arc::clone(&self.config), catalog)
    }

    /// Serve one session over stdin/stdout until the client disconnects
    /// ([`serve_io`](Self::serve_io) on the process's standard streams).
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serve one session over a byte stream (newline-delimited JSON-RPC, the
    /// stdio framing: a pipe, a socket, an in-process duplex) until the input
    /// ends, with a call's arguments kept out of rmcp's own logs.
    ///
    /// A self-contained 2026-07-28 `tools/call` (its version, client info and
    /// capabilities in its `_meta`, not a task) is read once and handed
    /// straight to the session, without a trip through rmcp's serve loop;
    /// every other line is parsed once, into rmcp's message type, and goes to
    /// rmcp's service for the same session (a line that is no message gets
    /// the reply rmcp's stdio transport gives it, and is never logged).
    /// Both answer the same bytes, on the same writer, one whole line at a
    /// time, and a call's progress and log messages still come before its
    /// answer.
    ///
    /// ```
    /// # async fn run(tm: toolmark::Toolmark) -> std::io::Result<()> {
    /// use toolmark::mcp::McpServer;
    ///
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// let (read, write) = tokio::io::split(server);
    /// # drop(client);
    /// McpServer::new(tm).serve_io(read, write).await
    /// # }
    /// ```
    pub async fn serve_io<R, W>(&self, read: R, write: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        stdio::serve(self, read, write).await
    }

    /// Serve one session on any rmcp transport (an in-process duplex, a
    /// socket) until the client disconnects, with a call's arguments kept out
    /// of rmcp's own logs ([`Quiet`]). For a byte stream,
    /// [`serve_io`](Self::serve_io) answers calls with less work.
    pub async fn serve_transport<T, E, A>(&self, transport: T) -> std::io::Result<()>
    where
        T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        use rmcp::ServiceExt;
        let running = self
            .session()
            .serve(Quiet::new(transport.into_transport()))
            .await
            .map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field(
                "per_session",
                &matches!(self.config.source, Source::PerSession(_)),
            )
            .field("elicitation", &self.config.elicitation)
            .field("page_size", &self.config.page_size)
            .field("http", &self.config.http)
            .finish()
    }
}

/// The MCP annotations of a tool: every hint set, from its effect and what it
/// declared (`open_world`, `idempotent`).
pub(crate) fn annotations(info: &crate::ToolInfo, title: &str) -> rmcp::model::ToolAnnotations {
    let hints = &info.annotations;
    rmcp::model::ToolAnnotations::with_title(title)
        .read_only(hints.read_only_hint)
        .destructive(hints.destructive_hint)
        .idempotent(hints.idempotent_hint)
        .open_world(hints.open_world_hint)
}
