//! A small notes app served to MCP clients.
//!
//! ```text
//! cargo run --features mcp --example mcp_server                       # stdio
//! cargo run --features mcp --example mcp_server -- --http 127.0.0.1:8931   # http://127.0.0.1:8931/mcp
//! ```
//!
//! Flags:
//!
//! - `--http ADDR`: Streamable HTTP on `ADDR` (path `/mcp`) instead of stdio. It
//!   serves 2026-07-28 clients statelessly and 2025-11-25 clients in sessions.
//! - `--confirm-by-elicitation`: `pay.send` is confirmed by the calling client
//!   (and its user) instead of the app's rule below: a multi round-trip request
//!   for a 2026-07-28 client (the approval may edit `to` and `amount`), an
//!   elicitation for a 2025-11-25 one.
//! - `--approval-page` (with `--http`): `notes.purge` is approved by a person on
//!   this app's own page, `/approve` (a minimal page rendered here; the data
//!   and the decision go through Toolmark's `approval_router`, nested at
//!   `/approve/api`). The client is only asked to open the page (URL-mode
//!   elicitation); the person signs in (here: a name kept in the `demo_user`
//!   cookie, standing in for the app's login) and decides.
//! - `--confirm-expiry-ms N`: how long a pending confirmation waits (default 10
//!   minutes; the tests shorten it to see one expire).
//! - `--redis URL` (needs the `redis` feature): pending confirmations in a
//!   shared `RedisStore`, sealed with the 32-byte key in `TOOLMARK_SEAL_KEY` (64
//!   hex digits, the same on every instance), and the `admin` scope shared
//!   through it (`ToolmarkBuilder::share_scope`: admin mode turned on through
//!   one instance shows the admin tools on all of them): run three of these on
//!   three ports behind any load balancer and a client may reach any of them on
//!   each request. Tasks' states are kept there too, so any instance answers
//!   `tasks/get`. `--redis-prefix P` names its keys (default `toolmark:`).
//!
//! Tools: `notes.list` (read), `notes.add` (write), `notes.purge` (destructive),
//! `pay.send` (consequential, its `card` sensitive), `slow.count` (a long call
//! with progress), `settings.admin_mode` (shows or hides the `admin` scope and
//! its `admin.stats` tool). Consequential and destructive calls ask the app's
//! confirm handler, which here is a rule standing in for the user: payments up
//! to 100 are approved, larger ones rejected, purges approved. A real app puts a
//! `ConfirmQueue` in front of its user instead.

use std::sync::Mutex;
use std::time::Duration;

use toolmark::mcp::{ApprovalPage, Elicitation, McpServer};
use toolmark::{
    tool, ConfirmRequest, Decision, ScopeOptions, State, ToolContext, ToolError, Toolmark,
};

#[derive(Default)]
struct Notes {
    items: Mutex<Vec<String>>,
}

/// List the notes.
#[tool(scope = "notes", read_only, title = "List notes")]
async fn list(notes: State<Notes>) -> Vec<String> {
    notes.items.lock().unwrap().clone()
}

/// Add a note.
#[tool(scope = "notes")]
async fn add(
    notes: State<Notes>,
    #[arg(description = "The note's text (not empty)")] text: String,
) -> Result<usize, ToolError> {
    if text.trim().is_empty() {
        return Err(ToolError::new("a note needs some text"));
    }
    let mut items = notes.items.lock().unwrap();
    items.push(text);
    Ok(items.len())
}

/// Delete every note.
#[tool(scope = "notes", destructive, summary = "Delete every note")]
async fn purge(notes: State<Notes>) -> usize {
    let mut items = notes.items.lock().unwrap();
    let n = items.len();
    items.clear();
    n
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    /// Who is paid.
    to: String,
    /// How much, in whole euros.
    amount: u32,
    /// The card number to charge.
    card: String,
}

/// Pay someone with a card.
#[tool(scope = "pay", consequential, sensitive = ["card"], summary = "Pay {amount} EUR to {to}")]
async fn send(input: Payment) -> Result<String, ToolError> {
    let last4: String = input
        .card
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Ok(format!(
        "paid {} EUR to {} with the card ending {last4}",
        input.amount, input.to
    ))
}

/// Count to `to`, one step every 50 ms, reporting progress. Stops when cancelled.
#[tool(scope = "slow", read_only)]
async fn count(ctx: ToolContext, to: u64) -> Result<u64, ToolError> {
    let signal = ctx.signal();
    for i in 1..=to {
        tokio::select! {
            () = signal.cancelled() => return Err(ToolError::new("cancelled")),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        ctx.progress(i, to);
    }
    Ok(to)
}

/// Turn admin mode on or off (shows or hides the admin tools; with `--redis`,
/// on every instance).
#[tool(scope = "settings")]
async fn admin_mode(on: bool, ctx: ToolContext) -> bool {
    if let Some(scope) = ctx.scope_at("admin") {
        scope.set_when(on);
    }
    on
}

/// How many notes there are (admin only).
#[tool(scope = "admin", read_only)]
async fn stats(notes: State<Notes>) -> usize {
    notes.items.lock().unwrap().len()
}

/// The stand-in for the user: approve payments up to 100 and purges.
async fn confirm(request: ConfirmRequest) -> Decision {
    eprintln!("confirm? {} (input {})", request.summary, request.input);
    match request.input.get("amount").and_then(|a| a.as_u64()) {
        Some(n) if n > 100 => Decision::reject_with("payments over 100 EUR need a human"),
        _ => Decision::approve(),
    }
}

/// The person signed in on the approval page: the `demo_user` cookie stands in
/// for the app's own login.
fn demo_user(parts: &axum::http::request::Parts) -> Option<String> {
    let cookies = parts
        .headers
        .get(axum::http::header::COOKIE)?
        .to_str()
        .ok()?;
    cookies
        .split(';')
        .find_map(|c| c.trim().strip_prefix("demo_user="))
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// The approval page: reads the confirmation from `/approve/api?token=…` and
/// posts the person's decision there.
async fn approval_page() -> axum::response::Html<&'static str> {
    axum::response::Html(
        r#"<!doctype html>
<meta charset="utf-8"><title>Approve</title>
<h1>Approve a call</h1>
<p id="what">Loading…</p>
<pre id="input"></pre>
<label>Your name <input id="who"></label>
<button id="yes">Approve</button> <button id="no">Reject</button>
<p id="done"></p>
<script>
const token = new URLSearchParams(location.search).get("token");
const api = "/approve/api?token=" + encodeURIComponent(token);
fetch(api).then(r => r.json()).then(c => {
  document.getElementById("what").textContent = c.error || (c.tool + ": " + c.summary);
  document.getElementById("input").textContent = JSON.stringify(c.input, null, 2);
});
async function decide(approved) {
  document.cookie = "demo_user=" + encodeURIComponent(document.getElementById("who").value);
  const r = await fetch("/approve/api", {method: "POST",
    headers: {"content-type": "application/json"},
    body: JSON.stringify({token, approved})});
  document.getElementById("done").textContent = r.ok ? "Recorded. Go back to your assistant." : (await r.json()).error;
}
document.getElementById("yes").onclick = () => decide(true);
document.getElementById("no").onclick = () => decide(false);
</script>
"#,
    )
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .map(|i| args.get(i + 1).cloned().unwrap_or_default())
}

/// `TOOLMARK_SEAL_KEY`: 64 hex digits.
fn seal_key() -> Result<[u8; 32], Box<dyn std::error::Error>> {
    let hex = std::env::var("TOOLMARK_SEAL_KEY").map_err(|_| {
        "--redis needs TOOLMARK_SEAL_KEY (64 hex digits, the same on every instance)"
    })?;
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("x"), 16))
        .collect::<Result<Vec<u8>, _>>()?;
    bytes
        .try_into()
        .map_err(|_| "TOOLMARK_SEAL_KEY must be 64 hex digits".into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let redis_url = flag(&args, "--redis");
    let mut builder = Toolmark::builder()
        .state(Notes::default())
        .scope_at("admin", ScopeOptions::hidden()) // shown by settings.admin_mode
        .confirm_handler(confirm);
    if let Some(ms) = flag(&args, "--confirm-expiry-ms") {
        builder = builder.confirm_expiry(Duration::from_millis(ms.parse()?));
    }
    let prefix = flag(&args, "--redis-prefix").unwrap_or_else(|| "toolmark:".to_owned());
    if let Some(url) = &redis_url {
        builder = with_redis(builder, url, &prefix).await?;
    }
    let tm = builder.build()?;
    tm.register_collected()?;
    // With --redis, start with the admin flag the other instances agreed on.
    tm.sync_scopes().await?;

    let mut server = McpServer::new(tm).server_info("toolmark-notes", env!("CARGO_PKG_VERSION"));
    if args.iter().any(|a| a == "--confirm-by-elicitation") {
        server = server.confirm_by_elicitation(Elicitation::consequential().edits());
    }
    if let Some(url) = &redis_url {
        server = shared_tasks(server, url, &prefix).await?;
    }
    match flag(&args, "--http") {
        Some(addr) => {
            let addr = if addr.is_empty() {
                "127.0.0.1:8931".to_owned()
            } else {
                addr
            };
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            let here = listener.local_addr()?;
            if args.iter().any(|a| a == "--approval-page") {
                // Purges are approved by a person on this app's own page.
                let page = ApprovalPage::new(
                    format!("http://{here}/approve"),
                    Elicitation::consequential()
                        .destructive()
                        .only(["notes.purge"]),
                )
                .identify(demo_user);
                server = server.approve_on_page(page);
            }
            let app = axum::Router::new()
                .nest_service("/mcp", server.router())
                .nest_service("/approve/api", server.approval_router())
                .route("/approve", axum::routing::get(approval_page));
            // The tests read this line for the port.
            eprintln!("listening on http://{here}/mcp");
            axum::serve(listener, app).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}

#[cfg(feature = "redis")]
async fn with_redis(
    builder: toolmark::ToolmarkBuilder,
    url: &str,
    prefix: &str,
) -> Result<toolmark::ToolmarkBuilder, Box<dyn std::error::Error>> {
    let options = toolmark::store::RedisStoreOptions::default().prefix(prefix);
    let store = toolmark::store::RedisStore::connect_with(url, options).await?;
    Ok(builder
        .confirm_store(store)
        .seal_key(seal_key()?)
        // Admin mode turned on through any instance shows the admin tools on all.
        .share_scope("admin"))
}

/// Tasks' states in the same Redis, so any instance answers `tasks/get`.
#[cfg(feature = "redis")]
async fn shared_tasks(
    server: McpServer,
    url: &str,
    prefix: &str,
) -> Result<McpServer, Box<dyn std::error::Error>> {
    use toolmark::mcp::{RedisTaskStore, TaskOptions};
    let store = RedisTaskStore::connect(url)
        .await?
        .prefix(format!("{prefix}mcp:"));
    Ok(server.tasks(TaskOptions::new().store(store)))
}

#[cfg(not(feature = "redis"))]
async fn with_redis(
    _builder: toolmark::ToolmarkBuilder,
    _url: &str,
    _prefix: &str,
) -> Result<toolmark::ToolmarkBuilder, Box<dyn std::error::Error>> {
    let _ = seal_key;
    Err("--redis needs the example built with the `redis` feature".into())
}

#[cfg(not(feature = "redis"))]
async fn shared_tasks(
    server: McpServer,
    _url: &str,
    _prefix: &str,
) -> Result<McpServer, Box<dyn std::error::Error>> {
    Ok(server)
}
