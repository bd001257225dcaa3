//! Quick start: an app exposes a few of its own functions as tools, and a scripted
//! "agent" reads the manifest and calls them.
//!
//! Run it with `cargo run --example quickstart`.

use std::sync::Mutex;

use serde_json::{json, Value};
use toolmark::{
    tool, CallOptions, Caller, Decision, Outcome, ScopeOptions, State, ToolContext, ToolError,
    Toolmark,
};

/// The app's own state: a board of challenges.
#[derive(Default)]
struct Board {
    challenges: Mutex<Vec<Challenge>>,
}

#[derive(Clone, serde::Serialize, schemars::JsonSchema)]
struct Challenge {
    title: String,
    days: u32,
}

/// List the challenges on the board.
#[tool(scope = "challenges", read_only)]
async fn list(board: State<Board>) -> Vec<Challenge> {
    board.challenges.lock().unwrap().clone()
}

/// Open the "new challenge" dialog: its tools become available.
#[tool(scope = "challenges")]
async fn open_create(ctx: ToolContext) -> String {
    if let Some(dialog) = ctx.scope_at("challenges.create") {
        dialog.set_when(true);
    }
    "the create dialog is open".to_owned()
}

/// Create a challenge.
#[tool(scope = "challenges.create", summary = "Create challenge \"{title}\"")]
async fn fill(
    board: State<Board>,
    #[arg(description = "What the challenge is called")] title: String,
    #[arg(description = "How many days it runs (1 to 90)")] days: u32,
) -> Result<Challenge, ToolError> {
    if !(1..=90).contains(&days) {
        return Err(ToolError::new("a challenge runs for 1 to 90 days"));
    }
    let challenge = Challenge { title, days };
    board.challenges.lock().unwrap().push(challenge.clone());
    Ok(challenge)
}

/// Remove every challenge from the board.
#[tool(scope = "challenges", destructive, summary = "Delete all challenges")]
async fn clear(board: State<Board>) -> usize {
    let mut challenges = board.challenges.lock().unwrap();
    let n = challenges.len();
    challenges.clear();
    n
}

/// The scripted agent's move: call `tool` as the in-app agent and print the outcome.
async fn act(tm: &Toolmark, step: &str, tool: &str, input: Value) -> Outcome {
    let out = tm.call(tool, input, CallOptions::new(Caller::InApp)).await;
    show(step, &out);
    out
}

/// Print what `Caller::InApp` may call now.
fn print_manifest(tm: &Toolmark, title: &str) {
    println!("{title}");
    for tool in tm.manifest(Caller::InApp) {
        let confirm = if tool.needs_confirmation {
            ", needs confirmation"
        } else {
            ""
        };
        println!(
            "  {:<30} {:?}{confirm} — {}",
            tool.name, tool.effect, tool.description
        );
    }
}

fn show(step: &str, outcome: &Outcome) {
    let text = match outcome {
        Outcome::Ok { output } => format!("ok → {output}"),
        Outcome::NeedsConfirmation {
            summary,
            confirm_id,
            ..
        } => format!(
            "needs confirmation: \"{summary}\" (id {}…)",
            &confirm_id[..8]
        ),
        Outcome::Refused(r) => format!("refused {}: {}", r.code, r.message),
        Outcome::Error(e) => format!("error: {}", e.message),
    };
    println!("  {step:<34} {text}");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The app: its state, and every #[tool] in the binary. The create dialog starts
    // closed: its scope is hidden until `challenges.open_create` opens it.
    let tm = Toolmark::builder()
        .state(Board::default())
        .scope_at("challenges.create", ScopeOptions::hidden())
        .build()?;
    let registered = tm.register_collected()?;
    println!("Registered {registered} tools.\n");
    print_manifest(&tm, "The in-app agent sees:");

    // The agent opens the dialog: a tool that shows a scope.
    println!("\nThe agent calls:");
    act(
        &tm,
        "open the create dialog",
        "challenges.open_create",
        json!({}),
    )
    .await;
    print_manifest(&tm, "\nNow it sees:");
    let fill_schema = tm
        .manifest(Caller::InApp)
        .into_iter()
        .find(|t| t.name == "challenges.create.fill")
        .map(|t| t.input_schema)
        .unwrap_or_default();
    println!("\n  input schema of challenges.create.fill:\n  {fill_schema}\n");

    println!("The agent calls:");
    act(
        &tm,
        "fill Robotics, 30 days",
        "challenges.create.fill",
        json!({"title": "Robotics", "days": 30}),
    )
    .await;
    act(
        &tm,
        "fill Chess, \"three\" days",
        "challenges.create.fill",
        json!({"title": "Chess", "days": "three"}),
    )
    .await;
    act(
        &tm,
        "fill Chess, 400 days",
        "challenges.create.fill",
        json!({"title": "Chess", "days": 400}),
    )
    .await;
    act(&tm, "list", "challenges.list", json!({})).await;

    // The create dialog closes: its tools disappear, then come back.
    let create = tm.scope_at("challenges.create");
    create.set_when(false);
    println!("\nThe create dialog closes (scope hidden):");
    let names: Vec<String> = tm
        .manifest(Caller::InApp)
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("  manifest: {names:?}");
    act(
        &tm,
        "fill Go, 7 days",
        "challenges.create.fill",
        json!({"title": "Go", "days": 7}),
    )
    .await;
    create.set_when(true);
    println!("The dialog opens again:");
    act(
        &tm,
        "fill Go, 7 days",
        "challenges.create.fill",
        json!({"title": "Go", "days": 7}),
    )
    .await;

    // A destructive call waits for the user (deferred mode for in-app agents).
    println!("\nA destructive call:");
    let mut bridge = tm.bridge();
    let out = act(&tm, "clear", "challenges.clear", json!({})).await;
    let id = out
        .confirm_id()
        .expect("clear needs confirmation")
        .to_owned();
    println!("  (the app shows a card; the user clicks Approve)");
    let approved = tm.confirm_pending(&id, Decision::approve()).await;
    show("approved, runs as human", &approved);
    if let Some(msg) = bridge.recv().await {
        println!("  bridge → agent: {}", serde_json::to_string(&msg)?);
    }
    act(&tm, "list", "challenges.list", json!({})).await;
    Ok(())
}
