//! `#[tool]` end to end: the schemas it generates, the forms of parameters and
//! returns, summaries, scopes, registration errors, and calling the fn directly.
//!
//! Each fixture module is registered alone with `register_collected_where`, filtered
//! by `module_path`, so fixtures stay apart.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use toolmark::{CallOptions, Caller, Outcome, RefusalCode, Toolmark};

/// A toolmark (approving inline handler) with the tools of fixture module `module`.
fn toolmark_with(module: &str) -> Toolmark {
    let tm = toolmark::testing::test_toolmark_builder()
        .state(state::Counter::default())
        .build()
        .unwrap();
    register(&tm, module).unwrap();
    tm
}

/// Registers the tools of fixture module `module` (`macro_tools::<module>`).
fn register(tm: &Toolmark, module: &str) -> Result<usize, toolmark::CollectError> {
    let path = format!("macro_tools::{module}");
    tm.register_collected_where(|c| c.module_path == path)
}

/// The input schema of `name` as `caller` sees it.
fn input_schema(tm: &Toolmark, name: &str) -> Value {
    let info = tm.manifest(Caller::Human);
    let tool = info
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    (*tool.input_schema).clone()
}

/// Every property name marked `"writeOnly": true` anywhere in `schema`.
fn write_only(schema: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    for (k, p) in props {
                        if p.get("writeOnly") == Some(&Value::Bool(true)) {
                            out.insert(k.clone());
                        }
                    }
                }
                map.values().for_each(|c| walk(c, out));
            }
            Value::Array(items) => items.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(schema, &mut out);
    out
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

async fn call(tm: &Toolmark, name: &str, input: Value, caller: Caller) -> Outcome {
    tm.call(name, input, CallOptions::new(caller)).await
}

/// Nested structs, an enum, `Option` and `Vec`.
mod shapes {
    use toolmark::tool;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Address {
        pub(crate) street: String,
        pub(crate) city: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum Plan {
        Free,
        Pro,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Signup {
        pub(crate) name: String,
        pub(crate) address: Address,
        pub(crate) plan: Plan,
        pub(crate) nickname: Option<String>,
        pub(crate) tags: Vec<String>,
    }

    /// Sign someone up.
    ///
    /// Second paragraph.
    #[tool(scope = "shapes", title = "Sign up")]
    pub(crate) async fn signup(input: Signup) -> String {
        let plan = match input.plan {
            Plan::Free => "free",
            Plan::Pro => "pro",
        };
        format!(
            "{} in {} on {plan} ({}, {:?}, {} tags)",
            input.name,
            input.address.city,
            input.address.street,
            input.nickname,
            input.tags.len()
        )
    }
}

#[tokio::test]
async fn schema_of_nested_struct_enum_option_and_vec() {
    let tm = toolmark_with("shapes");
    assert_eq!(
        input_schema(&tm, "shapes.signup"),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Signup",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/Address"},
                "plan": {"$ref": "#/$defs/Plan"},
                "nickname": {"type": ["string", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name", "address", "plan", "tags"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"}
                    },
                    "required": ["street", "city"]
                },
                "Plan": {"type": "string", "enum": ["free", "pro"]}
            }
        })
    );
    let info = &tm.manifest(Caller::Human)[0];
    assert_eq!(info.description, "Sign someone up.\n\nSecond paragraph.");
    assert_eq!(info.title.as_deref(), Some("Sign up"));
    assert_eq!(
        info.output_schema.as_deref(),
        Some(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "string",
            "type": "string"
        }))
    );
    let out = call(
        &tm,
        "shapes.signup",
        json!({
            "name": "Ada",
            "address": {"street": "1 Loop", "city": "London"},
            "plan": "pro",
            "tags": ["a"]
        }),
        Caller::Mcp,
    )
    .await;
    assert_eq!(
        out.output(),
        Some(&json!("Ada in London on pro (1 Loop, None, 1 tags)"))
    );
}

/// Serde renames: `rename_all` is mapped automatically, an explicit rename needs
/// `json:`.
mod renamed {
    use toolmark::tool;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Billing {
        pub(crate) postal_code: String,
        pub(crate) country: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Payment {
        pub(crate) card_number: String,
        pub(crate) holder_name: String,
        #[serde(rename = "CVV2")]
        pub(crate) security_code: String,
        pub(crate) billing: Option<Billing>,
        pub(crate) previous_cards: Vec<String>,
    }

    /// Pay.
    #[tool(
        scope = "renamed",
        consequential,
        sensitive = ["card_number", "json:CVV2", "billing.postal_code"],
        sensitive = "previous_cards[]"
    )]
    pub(crate) async fn pay(input: Payment) -> usize {
        input.card_number.len()
            + input.holder_name.len()
            + input.security_code.len()
            + input
                .billing
                .map_or(0, |b| b.postal_code.len() + b.country.len())
            + input.previous_cards.len()
    }
}

#[tokio::test]
async fn renamed_fields_are_marked_write_only() {
    let tm = toolmark_with("renamed");
    let schema = input_schema(&tm, "renamed.pay");
    let props = schema["properties"].as_object().unwrap();
    let keys: BTreeSet<String> = props.keys().cloned().collect();
    assert_eq!(
        keys,
        names(&[
            "CVV2",
            "billing",
            "cardNumber",
            "holderName",
            "previousCards"
        ])
    );
    assert_eq!(
        write_only(&schema),
        names(&["CVV2", "cardNumber", "postalCode"])
    );
    // `[]`: each element is write-only.
    assert_eq!(props["previousCards"]["items"]["writeOnly"], json!(true));
    assert_eq!(props["cardNumber"]["writeOnly"], json!(true));
    assert_eq!(props["CVV2"]["writeOnly"], json!(true));
    assert!(props["holderName"].get("writeOnly").is_none());
}

/// An explicit `#[serde(rename)]` named by its Rust field: found at registration.
mod rename_without_json {
    use toolmark::tool;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Login {
        #[serde(rename = "pass-word")]
        pub(crate) password: String,
    }

    #[tool(scope = "rename_without_json", sensitive = "password")]
    pub(crate) async fn login(input: Login) -> usize {
        input.password.len()
    }
}

#[test]
fn explicit_rename_named_by_rust_field_is_invalid_sensitive_path() {
    let tm = toolmark::testing::test_toolmark();
    let err = register(&tm, "rename_without_json").unwrap_err();
    assert_eq!(err.code(), "invalid_sensitive_path");
    assert!(tm.manifest(Caller::Human).is_empty());
}

/// The plain-arguments form.
mod args {
    use toolmark::tool;

    /// Add two numbers.
    #[tool(scope = "args", read_only, sensitive = "secret", summary = "{a} + {b}")]
    pub(crate) async fn add(
        #[arg(description = "The first term")] a: i64,
        b: Option<i64>,
        secret: Option<String>,
    ) -> i64 {
        a + b.unwrap_or_default() + i64::from(secret.is_some())
    }
}

#[tokio::test]
async fn plain_arguments_become_a_generated_input() {
    let tm = toolmark_with("args");
    assert_eq!(
        input_schema(&tm, "args.add"),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "AddInput",
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "The first term"},
                "b": {"type": ["integer", "null"]},
                "secret": {"type": ["string", "null"], "writeOnly": true}
            },
            "required": ["a"]
        })
    );
    let out = call(
        &tm,
        "args.add",
        json!({"a": 40, "b": 1, "secret": "s"}),
        Caller::Mcp,
    )
    .await;
    assert_eq!(out.output(), Some(&json!(42)));
    let out = call(&tm, "args.add", json!({"a": 1}), Caller::Mcp).await;
    assert_eq!(out.output(), Some(&json!(1)));
    // A direct call keeps the original signature.
    assert_eq!(args::add(2, Some(3), None).await, 5);
}

/// `State<T>` extractors.
mod state {
    use std::sync::atomic::{AtomicU64, Ordering};

    use toolmark::{tool, State, ToolContext};

    #[derive(Default)]
    pub(crate) struct Counter {
        pub(crate) count: AtomicU64,
    }

    /// Count up.
    #[tool(scope = "state")]
    pub(crate) async fn bump(counter: State<Counter>, ctx: ToolContext, by: u64) -> String {
        let now = counter.count.fetch_add(by, Ordering::SeqCst) + by;
        format!("{now} by {}", ctx.caller())
    }
}

#[tokio::test]
async fn state_is_extracted_from_the_builder() {
    let tm = toolmark_with("state");
    let out = call(&tm, "state.bump", json!({"by": 2}), Caller::Mcp).await;
    assert_eq!(out.output(), Some(&json!("2 by mcp")));
    let out = call(&tm, "state.bump", json!({"by": 3}), Caller::Test).await;
    assert_eq!(out.output(), Some(&json!("5 by test")));
    // Called directly, with a test context holding the state.
    let ctx = toolmark::testing::context(Caller::Test).build();
    let counter = toolmark::State(std::sync::Arc::new(state::Counter::default()));
    assert_eq!(state::bump(counter, ctx, 7).await, "7 by test");
}

/// A tool needing a state the builder lacks, beside a valid one.
mod needs_state {
    use toolmark::{tool, State};

    pub(crate) struct Missing;

    #[tool(scope = "needs_state")]
    pub(crate) async fn uses(missing: State<Missing>) {
        let _: &Missing = &missing;
    }

    #[tool(scope = "needs_state")]
    pub(crate) async fn fine() {}
}

#[test]
fn missing_state_registers_nothing() {
    let tm = toolmark::testing::test_toolmark();
    let err = register(&tm, "needs_state").unwrap_err();
    assert_eq!(err.code(), "missing_state");
    assert_eq!(err.errors.len(), 1);
    assert!(tm.manifest(Caller::Human).is_empty());
}

/// Two tools with one full name.
mod dup {
    use toolmark::tool;

    #[tool(scope = "dup", name = "same")]
    pub(crate) async fn first() {}

    #[tool(scope = "dup", name = "same")]
    pub(crate) async fn second() {}

    #[tool(scope = "dup")]
    pub(crate) async fn other() {}
}

#[test]
fn duplicate_tool_registers_nothing() {
    let tm = toolmark::testing::test_toolmark();
    let err = register(&tm, "dup").unwrap_err();
    assert_eq!(err.code(), "duplicate_tool");
    assert!(tm.manifest(Caller::Human).is_empty());
}

/// A sync fn.
mod sync {
    use toolmark::tool;

    /// Count the words, on the blocking pool.
    #[tool(scope = "sync", read_only)]
    pub(crate) fn words(text: String) -> (usize, String) {
        (
            text.split_whitespace().count(),
            format!("{:?}", std::thread::current().id()),
        )
    }
}

#[tokio::test]
async fn sync_fn_runs_on_the_blocking_pool() {
    let tm = toolmark_with("sync");
    let out = call(
        &tm,
        "sync.words",
        json!({"text": "one two three"}),
        Caller::Mcp,
    )
    .await;
    let here = format!("{:?}", std::thread::current().id());
    let output = out.output().unwrap();
    assert_eq!(output[0], json!(3));
    assert_ne!(output[1], json!(here), "ran on the runtime thread");
    // Called directly, it runs right here.
    assert_eq!(sync::words("a b".to_owned()), (2, here));
}

/// Summaries and results.
mod payments {
    use toolmark::{tool, Issue, ToolContext, ToolError};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Card {
        pub(crate) number: String,
        pub(crate) cvc: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Payment {
        pub(crate) amount: u64,
        pub(crate) payee: String,
        pub(crate) cards: Vec<Card>,
    }

    /// Pay someone.
    #[tool(
        scope = "payments",
        consequential,
        sensitive = "cards[].cvc",
        summary = "Pay {amount} to \"{payee}\" (cvc {cards.0.cvc})"
    )]
    pub(crate) async fn pay(input: Payment, ctx: ToolContext) -> Result<String, ToolError> {
        if input.payee.is_empty() {
            return Err(ToolError::new("no payee")
                .with_issues(vec![Issue::new("payee", "name someone to pay")]));
        }
        let card = input.cards.first().map_or("", |c| c.number.as_str());
        Ok(format!(
            "{} paid {} with {card} ({})",
            ctx.caller(),
            input.amount,
            input.cards.len()
        ))
    }
}

fn payment(payee: &str) -> Value {
    json!({
        "amount": 42,
        "payee": payee,
        "cards": [{"number": "4242", "cvc": "123"}]
    })
}

#[tokio::test]
async fn summary_is_filled_for_a_deferred_confirmation() {
    let tm = toolmark_with("payments");
    let out = call(&tm, "payments.pay", payment("Ada"), Caller::InApp).await;
    let Outcome::NeedsConfirmation { summary, .. } = out else {
        panic!("expected needs_confirmation, got {out:?}");
    };
    assert_eq!(summary, "Pay 42 to \"Ada\" (cvc [redacted])");
}

#[tokio::test]
async fn tool_error_keeps_its_issues() {
    let tm = toolmark_with("payments");
    let out = call(&tm, "payments.pay", payment(""), Caller::Human).await;
    let Outcome::Error(err) = out else {
        panic!("expected error, got {out:?}");
    };
    assert_eq!(err.message, "no payee");
    assert_eq!(
        err.issues,
        vec![toolmark::Issue::new("payee", "name someone to pay")]
    );
    let ok = call(&tm, "payments.pay", payment("Ada"), Caller::Human).await;
    assert_eq!(ok.output(), Some(&json!("human paid 42 with 4242 (1)")));
}

#[tokio::test]
async fn invalid_input_reports_issue_paths() {
    let tm = toolmark_with("payments");
    let input = json!({
        "amount": 1,
        "payee": "Ada",
        "cards": [{"number": "4242", "cvc": 123}]
    });
    let out = call(&tm, "payments.pay", input, Caller::Human).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    let issues = &out.refusal().unwrap().issues;
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].path, "cards.0.cvc");
}

#[tokio::test]
async fn tool_fn_can_be_called_directly() {
    let ctx = toolmark::testing::context(Caller::Test).build();
    let input = payments::Payment {
        amount: 5,
        payee: "Bob".to_owned(),
        cards: Vec::new(),
    };
    assert_eq!(
        payments::pay(input, ctx).await.unwrap(),
        "test paid 5 with  (0)"
    );
}

/// Tools in several scopes.
mod scoped {
    use toolmark::tool;

    #[tool(scope = "a.b", read_only)]
    pub(crate) async fn one() -> u8 {
        1
    }

    #[tool(scope = "a.b", name = "two")]
    pub(crate) fn second() -> u8 {
        2
    }

    #[tool(scope = "a.c")]
    pub(crate) async fn three() -> u8 {
        3
    }

    #[tool]
    pub(crate) async fn root_tool() -> u8 {
        0
    }
}

#[tokio::test]
async fn collected_tools_land_in_their_scopes() {
    let tm = toolmark::testing::test_toolmark();
    assert_eq!(register(&tm, "scoped").unwrap(), 4);
    let listed = |tm: &Toolmark| -> Vec<String> {
        tm.manifest(Caller::Mcp)
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(
        listed(&tm),
        ["a.b.one", "a.b.two", "a.c.three", "root_tool"]
    );
    assert_eq!(
        call(&tm, "a.b.two", json!({}), Caller::Mcp).await.output(),
        Some(&json!(2))
    );

    tm.scope_at("a.b").set_when(false);
    assert_eq!(listed(&tm), ["a.c.three", "root_tool"]);
    let hidden = call(&tm, "a.b.one", json!({}), Caller::Mcp).await;
    assert_eq!(hidden.refusal_code(), Some(RefusalCode::UnknownTool));

    tm.scope_at("a.b").set_when(true);
    assert_eq!(
        call(&tm, "a.b.one", json!({}), Caller::Mcp).await.output(),
        Some(&json!(1))
    );
}

/// Callers, effects and timeouts.
mod options {
    use toolmark::tool;

    #[tool(scope = "options", callers = [human, mcp], destructive, timeout = "1m 30s")]
    pub(crate) async fn wipe() {}
}

#[tokio::test]
async fn callers_and_effect_reach_the_manifest() {
    let tm = toolmark_with("options");
    assert!(tm.manifest(Caller::InApp).is_empty());
    let info = &tm.manifest(Caller::Mcp)[0];
    assert_eq!(info.name, "options.wipe");
    assert_eq!(info.effect, toolmark::Effect::Destructive);
    assert!(info.annotations.destructive_hint);
    let out = call(&tm, "options.wipe", json!({}), Caller::InApp).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::NotAllowed));
    let out = call(&tm, "options.wipe", json!({}), Caller::Human).await;
    assert_eq!(out.output(), Some(&json!(null)));
}

mod renamed_summary {
    use toolmark::tool;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Transfer {
        pub(crate) payee_name: String,
        pub(crate) account_number: String,
    }

    /// Transfer money.
    #[tool(
        scope = "renamed_summary",
        consequential,
        sensitive = "account_number",
        summary = "Send to {payee_name} ({account_number})"
    )]
    pub(crate) async fn transfer(input: Transfer) -> usize {
        input.payee_name.len()
    }
}

#[tokio::test]
async fn summary_placeholders_name_rust_fields_mapped_to_json_names() {
    let tm = toolmark_with("renamed_summary");
    let out = call(
        &tm,
        "renamed_summary.transfer",
        json!({"payeeName": "Ada", "accountNumber": "DE00 1234"}),
        Caller::InApp,
    )
    .await;
    let Outcome::NeedsConfirmation { summary, .. } = out else {
        panic!("expected needs_confirmation, got {out:?}");
    };
    assert_eq!(summary, "Send to Ada ([redacted])");
}

mod no_input {
    use toolmark::tool;

    /// Ping.
    #[tool(scope = "no_input", read_only)]
    pub(crate) async fn ping() -> &'static str {
        "pong"
    }
}

#[tokio::test]
async fn a_tool_without_input_takes_the_empty_object_and_refuses_extra_properties() {
    let tm = toolmark_with("no_input");
    let schema = input_schema(&tm, "no_input.ping");
    assert_eq!(schema["type"], "object");
    assert!(schema.get("description").is_none(), "{schema}");
    assert!(call(&tm, "no_input.ping", json!({}), Caller::Mcp)
        .await
        .is_ok());
    assert!(call(&tm, "no_input.ping", Value::Null, Caller::Mcp)
        .await
        .is_ok());
    let out = call(&tm, "no_input.ping", json!({"x": 1}), Caller::Mcp).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid));
    let lenient = toolmark::testing::test_toolmark_builder()
        .allow_unknown_fields(true)
        .build()
        .unwrap();
    register(&lenient, "no_input").unwrap();
    assert!(
        call(&lenient, "no_input.ping", json!({"x": 1}), Caller::Mcp)
            .await
            .is_ok()
    );
}

mod contextless {
    use toolmark::tool;

    /// Never finishes and takes no context: it cannot see its signal.
    #[tool(scope = "contextless", timeout = "10s")]
    pub(crate) async fn hang() {
        std::future::pending::<()>().await;
    }

    /// Finishes at once.
    #[tool(scope = "contextless", read_only)]
    pub(crate) async fn quick(n: u32) -> u32 {
        n + 1
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_without_a_context_is_still_bound_by_its_deadline_and_queue() {
    let tm = toolmark_with("contextless");
    let t0 = tokio::time::Instant::now();
    let hung = tokio::spawn({
        let tm = tm.clone();
        async move { call(&tm, "contextless.hang", json!({}), Caller::Mcp).await }
    });
    tokio::task::yield_now().await;
    // Queued behind the hung call in the same scope: runs once it is abandoned.
    let out = call(&tm, "contextless.quick", json!({"n": 1}), Caller::Mcp).await;
    assert_eq!(out.output(), Some(&json!(2)));
    assert_eq!(
        t0.elapsed(),
        std::time::Duration::from_secs(15),
        "10 s deadline + 5 s grace"
    );
    assert_eq!(
        hung.await.unwrap().refusal_code(),
        Some(RefusalCode::Cancelled)
    );
}

/// A context-less run keeps only what its call reads until it pends; then its
/// deadline, its caller's signal and its name in events are all still there.
#[tokio::test(start_paused = true)]
async fn a_pending_run_without_a_context_answers_its_callers_signal_and_is_named_when_abandoned() {
    let tm = toolmark::testing::test_toolmark_builder()
        .abort_grace(std::time::Duration::from_secs(2))
        .dev_events(true)
        .build()
        .unwrap();
    register(&tm, "contextless").unwrap();
    let mut events = tm.events();
    let signal = tokio_util::sync::CancellationToken::new();
    let t0 = tokio::time::Instant::now();
    let hung = tokio::spawn({
        let tm = tm.clone();
        let signal = signal.clone();
        async move {
            tm.call(
                "contextless.hang",
                json!({}),
                CallOptions::new(Caller::InApp).signal(signal),
            )
            .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    signal.cancel();
    let out = hung.await.unwrap();
    assert_eq!(out.refusal_code(), Some(RefusalCode::Cancelled));
    // The caller's signal owns the deadline (no `timeout` applies): cancelled at
    // 3 s, abandoned after the 2 s grace.
    assert_eq!(t0.elapsed(), std::time::Duration::from_secs(5));
    let mut abandoned = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let toolmark::Event::ToolAbandoned { tool, caller } = e {
            abandoned.push((tool, caller));
        }
    }
    assert_eq!(
        abandoned,
        [("contextless.hang".to_owned(), Caller::InApp)],
        "one tool_abandoned event, naming the tool and its caller"
    );
}

/// Plain arguments of type `serde_json::Value`, in each way it is written.
mod value_args {
    use serde_json::Value;
    use toolmark::tool;

    /// A `Value` beside another argument.
    #[tool(scope = "value_args", read_only)]
    pub(crate) async fn mixed(data: Value, n: i64) -> Value {
        serde_json::json!([data, n])
    }

    /// A `Value` alone.
    #[tool(scope = "value_args", read_only)]
    pub(crate) async fn alone(data: Value) -> Value {
        data
    }

    /// Written with its path.
    #[tool(scope = "value_args", read_only)]
    pub(crate) async fn pathed(data: serde_json::Value) -> Value {
        data
    }

    /// Written with a leading `::`.
    #[tool(scope = "value_args", read_only)]
    pub(crate) async fn rooted(data: ::serde_json::Value) -> Value {
        data
    }
}

#[tokio::test]
async fn a_value_argument_is_a_field_like_any_plain_argument() {
    let tm = toolmark_with("value_args");
    let schema = input_schema(&tm, "value_args.mixed");
    assert_eq!(schema["type"], json!("object"));
    assert_eq!(
        schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["data".to_owned(), "n".to_owned()])
    );
    assert_eq!(schema["required"], json!(["data", "n"]));
    let out = call(
        &tm,
        "value_args.mixed",
        json!({"data": {"x": 1}, "n": 2}),
        Caller::Mcp,
    )
    .await;
    assert_eq!(out.output(), Some(&json!([{"x": 1}, 2])));

    for name in ["value_args.alone", "value_args.pathed", "value_args.rooted"] {
        let schema = input_schema(&tm, name);
        assert_eq!(
            schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["data".to_owned()]),
            "{name}: {schema}"
        );
        assert_eq!(schema["required"], json!(["data"]), "{name}");
        let out = call(&tm, name, json!({"data": [1, "two"]}), Caller::Mcp).await;
        assert_eq!(out.output(), Some(&json!([1, "two"])), "{name}: {out:?}");
        // The input is the object of arguments: an unknown key is refused.
        let out = call(&tm, name, json!({"data": 1, "other": 2}), Caller::Mcp).await;
        assert_eq!(
            out.refusal_code(),
            Some(RefusalCode::Invalid),
            "{name}: {out:?}"
        );
    }
}
