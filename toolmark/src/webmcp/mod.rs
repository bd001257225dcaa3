//! Browser agents (WebMCP): the app's own page offers its tools to the agent in
//! the browser, through `document.modelContext`.
//!
//! [WebMCP](https://webmachinelearning.github.io/webmcp/) lets a page register
//! tools (`document.modelContext.registerTool({name, description, inputSchema,
//! annotations, execute})`) that an agent in the browser lists and calls.
//! [`WebMcp`] gives the app an axum `Router` serving a small JS module, the
//! *shim* (`webmcp.js`, shipped in this crate: no build step, no npm package),
//! and the endpoints it calls. The three lines an axum app adds:
//!
//! ```no_run
//! # async fn run(tm: toolmark::Toolmark, app: axum::Router) {
//! use toolmark::webmcp::WebMcp;
//!
//! let app = app.nest("/toolmark", WebMcp::new(tm).router());
//! # let _ = app;
//! # }
//! ```
//!
//! and, in the page's HTML (the app's own dialog, optional, through `onConfirm`):
//!
//! ```html
//! <script type="module" src="/toolmark/webmcp.js"></script>
//! <script>
//!   window.toolmarkWebMcp = { onConfirm: (request) => myDialog(request) };
//! </script>
//! ```
//!
//! # What the page gets
//!
//! - **Tools**: the manifest for [`Caller::WebMcp`](crate::Caller::WebMcp),
//!   registered with each tool's description, input schema (sensitive properties
//!   marked `writeOnly`) and annotations. Chromium reads `readOnlyHint` (effect
//!   read), `consequentialHint` (consequential and destructive tools: it ignores
//!   `destructiveHint`) and `untrustedContentHint` (open-world); Toolmark's own
//!   hints are passed along beside them.
//! - **Names** the browser keeps: Chromium registers only names matching
//!   `[A-Za-z0-9_.-]{1,128}`; any other name is refused (through the promise
//!   `registerTool` returns, which a page that does not await it never sees) and
//!   the tool never appears. Toolmark's dotted names fit as they are; a longer
//!   one is cut to a stable, reversible form (`…_1a2b3c4d`, as for the LLM
//!   providers' formats), never onto another tool's name, and calls map back.
//!   No tool is lost silently: the shim awaits every registration, then reads
//!   `getTools()`, and reports every tool the browser did not keep (a
//!   `console.error` in the page, a `warn` on the `toolmark` tracing target in
//!   the app, and `toolmarkWebMcp.refused`, each with the browser's reason).
//! - **Scopes follow the UI**: a scope shown, hidden or disposed registers or
//!   unregisters its tools at once. The page holds one server-sent event stream
//!   (a new one replaces the old); after a reconnect it gets the whole list
//!   again and registers only the difference, never a tool twice.
//! - **Calls**: `execute(input)` calls the app as caller `WebMcp`, bound to the
//!   page's session (decisions remembered for a session are this page's only).
//!   The result has WebMCP's shape ([`tool_result`]): `content` text,
//!   `structuredContent`, and `isError` with the refusal code for refusals and
//!   errors, so an agent can fix an invalid input. It is the outcome Toolmark
//!   gives every caller, sensitive values already scrubbed. The abort signal the
//!   browser passes to `execute` cancels the call.
//! - **Confirmation in the page**: WebMCP calls confirm inline. While the call is
//!   open, the page's `onConfirm(request, {signal})` is asked with the redacted
//!   [`ConfirmRequest`](crate::ConfirmRequest) (`"[redacted]"` at sensitive
//!   paths) and resolves to `{approved, input?, reason?}`: the app renders its own
//!   dialog (Toolmark ships no UI). An edited `input` goes through the same
//!   restore and re-validation as every approval (a `"[redacted]"` left in place
//!   keeps the real value; an invalid edit asks again with the issues); a
//!   rejection's `reason` reaches the agent. Where the browser offers
//!   `requestUserInteraction` to `execute`, the dialog runs inside it. When the
//!   call ends first (the agent aborts, the confirmation expires), `signal`
//!   aborts so the app can close its dialog. The page's answer decides that call
//!   alone: it is never remembered (lasting decisions come only from the app's
//!   own approvers), and a page's `onConfirm` is asked instead of the app's
//!   [`ConfirmHandler`](crate::ConfirmHandler) for that page's calls.
//! - **A page without `onConfirm`** has no confirmation path of its own: its
//!   agent does not see consequential or destructive tools (unless the app has
//!   another path for `WebMcp`: its [`ConfirmHandler`](crate::ConfirmHandler) or
//!   a policy that decides without asking), and the development event
//!   `missing_confirm_handler` names each tool hidden (the page's console says so
//!   too). Setting `toolmarkWebMcp.onConfirm` later re-syncs the page.
//! - **No WebMCP in the browser**: the shim logs a clear console message and does
//!   nothing. A polyfill such as `@mcp-b/webmcp-polyfill` loaded before it
//!   provides `document.modelContext`; `navigator.modelContext` (older drafts) is
//!   used when `document.modelContext` is absent.
//!
//! # The endpoints trust only their own page
//!
//! Every endpoint but the script requires a same-origin `Origin` (and, where the
//! browser sends it, `Sec-Fetch-Site: same-origin`), the shim's own header, and —
//! except the one that opens a page session — the page's token, minted when the
//! page loads and sent as a header, never in a URL. Calls and confirmation
//! answers are bound to that page: a page cannot answer another page's
//! confirmation. Bodies are bounded (the toolmark's input limit plus 16 KiB), and
//! so are open calls per page and page sessions. Like the MCP server, only
//! loopback `Host`s are accepted until [`WebMcp::allowed_hosts`] names the app's
//! own.
//!
//! The endpoints sit inside the app's own router, so the app's own layers
//! (login, sessions, CSRF) apply to them as to the page: nest the router where
//! the page's user is authenticated.
//!
//! # What this proves, and what it does not
//!
//! A confirmation through `onConfirm` proves that *something on the page*
//! approved: the app's dialog, as the page renders it. A browser agent drives the
//! page: one that can click the app's buttons can click *Approve* too. WebMCP
//! agents act through tools, and the browser mediates what they may do, but an
//! agent that also automates the page (as test harnesses and some assistants
//! do) is not kept out of the dialog by anything in this module. For approvals
//! that must come from the person, put approval outside what the agent drives:
//! leave `onConfirm` unset and give the toolmark a
//! [`ConfirmHandler`](crate::ConfirmHandler) that asks on another channel (a
//! device, a second factor, a person with a [`policy`](crate::policy) rule that
//! requires one), or ask in a browser-owned prompt through
//! `requestUserInteraction`, which the shim uses where it is offered.
//!
//! Threat model, in short: another origin (a page in another tab, an iframe
//! elsewhere, DNS rebinding) cannot open a page session, call, read a stream or
//! answer (`Origin`, `Host`, the custom header a cross-origin request cannot send
//! without a preflight that is never granted); a request without the page's
//! token, or with another page's, runs nothing; a flood of bodies, calls or pages
//! is bounded. Code running *in* the app's origin (the app's own scripts, an
//! XSS) is the page and can do what the page does — as it can with the app's own
//! UI. Sensitive values never reach the page: confirmation requests carry
//! `"[redacted]"`, and results are scrubbed by the same path as every caller's.
//!
//! Not a wasm32 build: the shim is plain JavaScript; the server side is this
//! module.

mod http;
mod list;
mod page;
mod result;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::Toolmark;

pub use result::tool_result;

/// The app's page's WebMCP endpoints for a [`Toolmark`]: cheap to clone, one per
/// app. [`router`](Self::router) gives the axum `Router` to nest.
///
/// ```no_run
/// # async fn run(tm: toolmark::Toolmark) -> std::io::Result<()> {
/// use toolmark::webmcp::WebMcp;
///
/// let page = axum::routing::get(|| async { axum::response::Html(
///     r#"<script type="module" src="/toolmark/webmcp.js"></script>"#) });
/// let app = axum::Router::new()
///     .route("/", page)
///     .nest("/toolmark", WebMcp::new(tm).router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
#[derive(Clone)]
pub struct WebMcp {
    shared: Arc<Shared>,
}

/// The options of a [`WebMcp`].
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) hosts: Option<Vec<String>>,
    pub(crate) body_limit: Option<usize>,
    pub(crate) max_pages: usize,
    pub(crate) max_open_calls: usize,
    pub(crate) page_idle: Duration,
}

pub(crate) struct Shared {
    pub(crate) catalog: list::Catalog,
    pub(crate) pages: page::Pages,
    pub(crate) options: Options,
    pub(crate) body_limit: usize,
}

impl WebMcp {
    /// The endpoints for `tm`'s tools, with the default checks.
    pub fn new(tm: Toolmark) -> Self {
        let options = Options {
            hosts: None,
            body_limit: None,
            max_pages: 1000,
            max_open_calls: 4,
            page_idle: Duration::from_secs(600),
        };
        Self::with(tm, options)
    }

    fn with(tm: Toolmark, options: Options) -> Self {
        let body_limit = options
            .body_limit
            .unwrap_or_else(|| tm.max_input_bytes().saturating_add(16 * 1024));
        WebMcp {
            shared: Arc::new(Shared {
                catalog: list::Catalog::new(tm),
                pages: page::Pages::new(),
                options,
                body_limit,
            }),
        }
    }

    fn edit(self, f: impl FnOnce(&mut Options)) -> Self {
        let mut options = self.shared.options.clone();
        f(&mut options);
        Self::with(self.shared.catalog.tm.clone(), options)
    }

    /// The `Host` values accepted (`"app.example.com"`: any port;
    /// `"app.example.com:8443"`: that port only), replacing the loopback
    /// defaults (`localhost`, `127.0.0.1`, `[::1]`). The `Origin` must still be
    /// the page's own: the same host and port as `Host`.
    #[must_use]
    pub fn allowed_hosts(self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        self.edit(|o| o.hosts = Some(hosts))
    }

    /// The largest request body accepted, in bytes (413 above it, before
    /// parsing). Default: the toolmark's `max_input_bytes` plus 16 KiB.
    #[must_use]
    pub fn max_body_bytes(self, bytes: usize) -> Self {
        self.edit(|o| o.body_limit = Some(bytes))
    }

    /// How many calls one page may have open at once (default 4; at least 1);
    /// one more is refused with 429. Browsers keep about six connections per
    /// origin, and each open call holds one while its confirmation is asked: a
    /// page needs one more for the answer.
    #[must_use]
    pub fn max_open_calls(self, n: usize) -> Self {
        self.edit(|o| o.max_open_calls = n.max(1))
    }

    /// How many page sessions are kept (default 1000; at least 1). At the bound
    /// the longest idle page (no stream, no call) makes room; when every page is
    /// busy a new one is refused with 503.
    #[must_use]
    pub fn max_pages(self, n: usize) -> Self {
        self.edit(|o| o.max_pages = n.max(1))
    }

    /// How long a page with no open stream or call keeps its session (default 10
    /// minutes). The shim of a page whose session ended opens a new one.
    #[must_use]
    pub fn page_idle(self, idle: Duration) -> Self {
        self.edit(|o| o.page_idle = idle)
    }

    /// An axum `Router` serving the shim at `/webmcp.js` and its endpoints: nest
    /// it where the page loads it from (`app.nest("/toolmark", webmcp.router())`
    /// serves `/toolmark/webmcp.js`). The shim finds its endpoints beside its own
    /// URL. Host and Origin checks are tower layers; add your own with
    /// `.layer(…)`.
    pub fn router(&self) -> Router {
        http::router(Arc::clone(&self.shared))
    }

    /// The shim's source (what `/webmcp.js` serves), for apps that bundle or
    /// serve it themselves — from the same directory as the endpoints.
    pub fn script() -> &'static str {
        http::SCRIPT
    }

    /// The Toolmark this serves.
    pub fn toolmark(&self) -> &Toolmark {
        &self.shared.catalog.tm
    }
}

impl fmt::Debug for WebMcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebMcp")
            .field("options", &self.shared.options)
            .field("body_limit", &self.shared.body_limit)
            .finish_non_exhaustive()
    }
}
