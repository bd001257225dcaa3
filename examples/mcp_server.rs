//! A small notes app served to MCP clients.
//!
//! ```text
//! cargo run --features mcp --example mcp_server                       # stdio
//! cargo run --features mcp --example mcp_server -- --http 127.0.0.1:8931   # http://127.0.0.1:8931/mcp
//! ```
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

use toolmark::mcp::McpServer;
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

/// Turn admin mode on or off (shows or hides the admin tools).
#[tool(scope = "settings")]
async fn admin_mode(on: bool, ctx: ToolContext) -> bool {
    if let Some(admin) = ctx.scope_at("admin") {
        admin.set_when(on);
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tm = Toolmark::builder()
        .state(Notes::default())
        .scope_at("admin", ScopeOptions::hidden()) // shown by settings.admin_mode
        .confirm_handler(confirm)
        .build()?;
    tm.register_collected()?;

    let server = McpServer::new(tm).server_info("toolmark-notes", env!("CARGO_PKG_VERSION"));
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            let addr = args.get(i + 1).map_or("127.0.0.1:8931", String::as_str);
            let listener = tokio::net::TcpListener::bind(addr).await?;
            // The tests read this line for the port.
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            server.serve_listener(listener).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
