//! A to-do app whose own page offers its tools to browser agents (WebMCP).
//!
//! ```text
//! cargo run --features webmcp --example webmcp_app -- --http 127.0.0.1:8932
//! ```
//!
//! (`--all-features` works too.)
//!
//! Open <http://127.0.0.1:8932/> in a browser with WebMCP (Chromium with
//! `--enable-features=WebMCP`). The page loads `/toolmark/webmcp.js`, which
//! registers the tools below into `document.modelContext`; a browser agent lists
//! and calls them. Consequential and destructive calls wait for the page's own
//! approve/reject dialog (`toolmarkWebMcp.onConfirm`). The "Show archive" button
//! shows the `archive` scope, whose tool appears for the agent at once.
//!
//! Tools: `todos.list` (read), `todos.add`, `todos.clear` (destructive),
//! `premium.upgrade` (consequential; the card number is sensitive: the dialog
//! shows `[redacted]`, the tool gets the real number) and `archive.list` (in a
//! scope hidden until the button shows it).

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use axum::Router;
use toolmark::webmcp::WebMcp;
use toolmark::{tool, Scope, ScopeOptions, State, ToolError, Toolmark};

/// The app's state: the to-dos and what was archived.
#[derive(Default)]
pub struct Todos {
    items: Mutex<Vec<Todo>>,
    archived: Mutex<Vec<Todo>>,
    plan: Mutex<Option<String>>,
}

/// One to-do.
#[derive(Clone, serde::Serialize)]
pub struct Todo {
    id: u32,
    title: String,
}

impl Todos {
    /// The to-dos now.
    pub fn items(&self) -> Vec<Todo> {
        self.items.lock().unwrap().clone()
    }

    /// The premium plan, once upgraded.
    pub fn plan(&self) -> Option<String> {
        self.plan.lock().unwrap().clone()
    }
}

/// List the to-dos.
#[tool(scope = "todos", read_only, title = "List to-dos")]
async fn list(todos: State<Todos>) -> Vec<Todo> {
    todos.items()
}

/// Add a to-do.
#[tool(scope = "todos", summary = "Add \"{title}\"")]
async fn add(
    #[arg(description = "What to do")] title: String,
    todos: State<Todos>,
) -> Result<Todo, ToolError> {
    let title = title.trim().to_owned();
    if title.is_empty() {
        return Err(ToolError::new("A to-do needs a title"));
    }
    let mut items = todos.items.lock().unwrap();
    let id = items.iter().map(|t| t.id).max().unwrap_or(0) + 1;
    let todo = Todo { id, title };
    items.push(todo.clone());
    Ok(todo)
}

/// Delete every to-do (they move to the archive).
#[tool(scope = "todos", destructive, summary = "Delete every to-do")]
async fn clear(todos: State<Todos>) -> usize {
    let items: Vec<Todo> = std::mem::take(&mut *todos.items.lock().unwrap());
    let n = items.len();
    todos.archived.lock().unwrap().extend(items);
    n
}

/// The upgrade a premium plan needs.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Upgrade {
    /// `monthly` or `yearly`.
    plan: String,
    /// The card to charge (12 to 19 digits).
    card_number: String,
}

/// Upgrade to a premium plan, charging a card.
#[tool(
    scope = "premium",
    consequential,
    sensitive = "card_number",
    summary = "Upgrade to the {plan} plan"
)]
async fn upgrade(input: Upgrade, todos: State<Todos>) -> Result<String, ToolError> {
    let digits = input.card_number.len();
    if !(12..=19).contains(&digits) || !input.card_number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::new("The card number must be 12 to 19 digits"));
    }
    if input.plan != "monthly" && input.plan != "yearly" {
        return Err(ToolError::new("The plan is `monthly` or `yearly`"));
    }
    *todos.plan.lock().unwrap() = Some(input.plan.clone());
    let last4 = &input.card_number[digits - 4..];
    Ok(format!(
        "Upgraded to {}: charged the card ending in {last4}",
        input.plan
    ))
}

/// List the archived to-dos.
#[tool(scope = "archive", read_only)]
async fn archived(todos: State<Todos>) -> Vec<Todo> {
    todos.archived.lock().unwrap().clone()
}

/// The app: its page, its own JSON API for the page's buttons, and the WebMCP
/// endpoints at `/toolmark`. Returns the router, the toolmark and the state.
pub fn app() -> (Router, Toolmark, Arc<Todos>) {
    let tm = Toolmark::builder()
        .state(Todos::default())
        .build()
        .expect("valid configuration");
    let todos = tm.state::<Todos>().expect("the state was given");
    // Hidden until the page's button shows it.
    let archive = tm.scope_with(
        "archive",
        ScopeOptions {
            when: false,
            ..ScopeOptions::default()
        },
    );
    tm.register_collected_where(|r| {
        ["todos.", "premium.", "archive."]
            .iter()
            .any(|p| r.full_name().starts_with(p))
    })
    .expect("the tools register");
    let api = {
        let todos = Arc::clone(&todos);
        let archive = archive.clone();
        Router::new()
            .route(
                "/api/todos",
                get(move || {
                    let todos = Arc::clone(&todos);
                    async move {
                        let json = serde_json::to_string(&todos.items()).unwrap_or_default();
                        ([("content-type", "application/json")], json).into_response()
                    }
                }),
            )
            .route(
                "/api/archive/show",
                post({
                    let archive = archive.clone();
                    move |h: HeaderMap| archive_toggle(archive.clone(), true, h)
                }),
            )
            .route(
                "/api/archive/hide",
                post(move |h: HeaderMap| archive_toggle(archive.clone(), false, h)),
            )
    };
    let router = Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .merge(api)
        .nest("/toolmark", WebMcp::new(tm.clone()).router());
    (router, tm, todos)
}

/// The page's buttons. The app's own API takes only its page's requests, like
/// the WebMCP endpoints: a header another origin cannot send without a CORS
/// preflight, which this app never grants.
async fn archive_toggle(
    archive: Scope,
    show: bool,
    headers: HeaderMap,
) -> (StatusCode, &'static str) {
    if headers.get("x-todo-app").and_then(|v| v.to_str().ok()) != Some("1") {
        return (StatusCode::FORBIDDEN, "not from the app's page");
    }
    archive.set_when(show);
    (StatusCode::OK, if show { "shown" } else { "hidden" })
}

#[allow(dead_code)] // the tests include this file for `app()` and never call main
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let addr = match args.iter().position(|a| a == "--http") {
        Some(i) => args.get(i + 1).map_or("127.0.0.1:8932", String::as_str),
        None => "127.0.0.1:8932",
    };
    let (router, _tm, _todos) = app();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("listening on http://{}/", listener.local_addr()?);
    axum::serve(listener, router).await
}

/// The page: the app's own UI, its confirmation dialog, and the one line that
/// loads the shim.
const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>To-dos</title>
<style>
  body { font: 16px system-ui, sans-serif; max-width: 40em; margin: 2em auto; }
  dialog { max-width: 34em; }
  textarea { width: 100%; font: 13px monospace; }
</style>
</head>
<body>
<h1>To-dos</h1>
<ul id="todos"></ul>
<button id="archive-show">Show archive</button>
<button id="archive-hide">Hide archive</button>

<dialog id="confirm">
  <form method="dialog">
    <p><strong id="confirm-summary"></strong></p>
    <p>Tool <code id="confirm-tool"></code> asks for your approval. You may edit its input:</p>
    <textarea id="confirm-input" rows="6"></textarea>
    <p id="confirm-issues"></p>
    <label>Reason (if you reject) <input id="confirm-reason"></label>
    <p>
      <button id="confirm-approve" value="approve">Approve</button>
      <button id="confirm-reject" value="reject">Reject</button>
    </p>
  </form>
</dialog>

<script type="module" src="/toolmark/webmcp.js"></script>
<script>
  // The app's own dialog: Toolmark ships no UI. The request is already redacted.
  window.toolmarkWebMcp = {
    onConfirm(request, { signal }) {
      const dialog = document.getElementById("confirm");
      const shown = JSON.stringify(request.input, null, 2);
      document.getElementById("confirm-summary").textContent = request.summary;
      document.getElementById("confirm-tool").textContent = request.tool;
      document.getElementById("confirm-input").value = shown;
      document.getElementById("confirm-issues").textContent =
        request.issues.map((i) => `${i.path}: ${i.message}`).join("; ");
      document.getElementById("confirm-reason").value = "";
      dialog.showModal();
      return new Promise((resolve) => {
        signal?.addEventListener("abort", () => dialog.close("cancelled"), { once: true });
        dialog.addEventListener("close", function done() {
          dialog.removeEventListener("close", done);
          if (dialog.returnValue !== "approve") {
            const reason = document.getElementById("confirm-reason").value;
            resolve({ approved: false, reason: reason || "Rejected in the app" });
            return;
          }
          const edited = document.getElementById("confirm-input").value;
          if (edited === shown) {
            resolve({ approved: true });
          } else {
            try {
              resolve({ approved: true, input: JSON.parse(edited) });
            } catch (_) {
              resolve({ approved: false, reason: "The edited input was not JSON" });
            }
          }
        });
      });
    },
  };

  async function refresh() {
    const todos = await (await fetch("/api/todos")).json();
    const ul = document.getElementById("todos");
    ul.replaceChildren(...todos.map((t) => {
      const li = document.createElement("li");
      li.textContent = t.title;
      return li;
    }));
  }
  for (const [id, path] of [["archive-show", "/api/archive/show"], ["archive-hide", "/api/archive/hide"]]) {
    document.getElementById(id).addEventListener("click", () =>
      fetch(path, { method: "POST", headers: { "X-Todo-App": "1" } }));
  }
  refresh();
  setInterval(refresh, 1000);
</script>
</body>
</html>
"#;
