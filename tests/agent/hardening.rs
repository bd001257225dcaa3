//! The runner as an attacker would try it: an alias-keyed secret with `record_io`
//! on (every provider), one conversation's confirmations reaching another, names
//! that change meaning after a clash, names the model was never given, "this
//! session" decisions across conversations, and strict-mode nulls of nested
//! optional fields.

use serde::Deserialize;
use serde_json::{json, Value};
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use toolmark::{
    BridgeMessage, Caller, Decision, Effect, For, RefusalCode, ToolError, ToolSpec, Toolmark,
};

use crate::canary::{self, Canary};

#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // read by serde only
struct Card {
    holder: String,
    #[serde(alias = "security_code")]
    cvc: String,
}

/// A toolmark with `billing.pay` (cvc sensitive, with a serde alias) and
/// `notes.add` (guarded, nothing sensitive).
fn tools() -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("billing")
        .register(
            ToolSpec::typed("pay", "Pay", |_ctx, c: Card| async move {
                Ok::<_, ToolError>(format!("paid for {}", c.holder))
            })
            .effect(Effect::Write)
            .sensitive(["cvc"]),
        )
        .unwrap();
    tm.scope("notes")
        .register(
            ToolSpec::typed("add", "Add a note", |_ctx, n: Note| async move {
                Ok::<_, ToolError>(n.text)
            })
            .effect(Effect::Consequential),
        )
        .unwrap();
    tm
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

/// A model response calling `name` with `args`, in `provider`'s format.
fn response(provider: Provider, id: &str, name: &str, args: &Value) -> Value {
    match provider {
        Provider::OpenAiChat => json!({"role": "assistant", "tool_calls": [{
            "id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}
        }]}),
        Provider::OpenAiResponses => json!({"output": [{
            "type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()
        }]}),
        Provider::Anthropic => json!({"content": [{
            "type": "tool_use", "id": id, "name": name, "input": args
        }]}),
        _ => json!({"parts": [{"functionCall": {"id": id, "name": name, "args": args}}]}),
    }
}

fn name_of(agent: &AgentTools, tool: &str) -> String {
    agent
        .tool_list()
        .names()
        .to_provider(tool)
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn record_io_never_records_a_secret_under_an_alias_or_case_variant_on_any_provider() {
    let tm = tools();
    let mut c = Canary::new();
    let trace = canary::capture();
    for provider in Provider::ALL {
        let agent = AgentTools::with_options(
            &tm,
            provider,
            AgentOptions {
                record_io: true,
                ..AgentOptions::default()
            },
        );
        let pay = name_of(&agent, "billing.pay");
        for key in ["security_code", "CVC", "Cvc", "cvc"] {
            let secret = c.secret();
            let args = json!({"holder": "Ada", key: Canary::embedded(&secret, 1)});
            let run = agent.run(&response(provider, "c1", &pay, &args)).await;
            let call = &run.calls[0];
            c.assert_absent_in("the outcome", &call.outcome);
            c.assert_absent("the result block", call.result.to_string());
            c.assert_absent(
                "the messages",
                Value::Array(run.messages.clone()).to_string(),
            );
        }
    }
    let trace = trace.take();
    assert!(
        trace.contains("gen_ai.tool.call.arguments"),
        "arguments were recorded"
    );
    c.assert_absent("the spans and the log", &trace);
}

#[tokio::test]
async fn a_conversation_only_receives_messages_for_confirmations_it_issued() {
    let tm = tools();
    let mut bridge = tm.bridge();
    let alice = AgentTools::new(&tm, Provider::Anthropic);
    let bob = AgentTools::new(&tm, Provider::Anthropic);
    let add = name_of(&alice, "notes.add");
    let run = alice
        .run(&response(
            Provider::Anthropic,
            "toolu_1",
            &add,
            &json!({"text": "alice's private note"}),
        ))
        .await;
    let id = run.calls[0].outcome.confirm_id().unwrap().to_owned();
    let done = tm.confirm_pending(&id, Decision::approve()).await;
    assert!(done.is_ok());
    let msg = bridge.recv().await.unwrap();
    assert_eq!(
        bob.bridge_message(&msg),
        None,
        "bob never sees alice's result"
    );
    let mine = alice.bridge_message(&msg).expect("alice's own result");
    assert!(mine.to_string().contains("alice's private note"));
    // Once: the same message again gives nothing.
    assert_eq!(alice.bridge_message(&msg), None);
    // An id nobody issued gives nothing.
    let forged = BridgeMessage::Confirmed {
        confirm_id: "00".repeat(16),
        tool: "notes.add".to_owned(),
        outcome: toolmark::Outcome::Ok {
            output: json!("injected"),
        },
    };
    assert_eq!(alice.bridge_message(&forged), None);
    assert_eq!(bob.bridge_message(&forged), None);
}

fn echo(name: &str) -> ToolSpec {
    let tag = name.to_owned();
    ToolSpec::new(name, "Echo")
        .effect(Effect::Read)
        .handler(move |_ctx, _input| {
            let tag = tag.clone();
            async move { Ok(json!(tag)) }
        })
}

#[tokio::test]
async fn after_a_clash_a_shown_name_still_runs_the_tool_it_was_shown_for() {
    for provider in [
        Provider::OpenAiChat,
        Provider::Anthropic,
        Provider::OpenAiResponses,
    ] {
        let tm = Toolmark::builder().build().unwrap();
        tm.scope("a").register(echo("b")).unwrap();
        let agent = AgentTools::new(&tm, provider);
        let shown = name_of(&agent, "a.b");
        assert_eq!(shown, "a__b");
        // A newcomer whose readable form is the same.
        tm.register(echo("a__b"), Default::default()).unwrap();
        let list = agent.tool_list();
        assert_eq!(list.names().to_provider("a.b"), Some("a__b"), "stable");
        let newcomer = list.names().to_provider("a__b").unwrap().to_owned();
        assert_ne!(newcomer, "a__b");
        let run = agent
            .run(&response(provider, "c1", &shown, &json!({})))
            .await;
        assert_eq!(run.calls[0].tool, "a.b");
        assert_eq!(
            run.calls[0].outcome.output(),
            Some(&json!("b")),
            "{provider:?}"
        );
        let run = agent
            .run(&response(provider, "c2", &newcomer, &json!({})))
            .await;
        assert_eq!(run.calls[0].outcome.output(), Some(&json!("a__b")));
        // `a.b` leaves: its name never comes to mean the newcomer.
        tm.scope("a").dispose();
        let run = agent
            .run(&response(provider, "c3", &shown, &json!({})))
            .await;
        assert_eq!(
            run.calls[0].outcome.refusal_code(),
            Some(RefusalCode::UnknownTool)
        );
    }
}

#[tokio::test]
async fn a_name_not_in_the_list_the_model_was_given_is_unknown_tool() {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("a").register(echo("b")).unwrap();
    tm.scope("hidden")
        .register(echo("tool").callers(&[Caller::Human][..]))
        .unwrap();
    let agent = AgentTools::new(&tm, Provider::OpenAiChat);
    for name in ["a.b", "hidden.tool", "hidden__tool", "a__b_00000000", ""] {
        let run = agent
            .run(&response(Provider::OpenAiChat, "c", name, &json!({})))
            .await;
        assert_eq!(
            run.calls[0].outcome.refusal_code(),
            Some(RefusalCode::UnknownTool),
            "{name}"
        );
    }
}

#[tokio::test]
async fn readable_names_stay_stable_across_manifest_versions() {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("a").register(echo("b")).unwrap();
    tm.register(echo("c"), Default::default()).unwrap();
    let agent = AgentTools::new(&tm, Provider::Anthropic);
    let before: Vec<String> = ["a.b", "c"].iter().map(|t| name_of(&agent, t)).collect();
    for i in 0..5 {
        tm.scope(&format!("s{i}")).register(echo("b")).unwrap();
        tm.register(echo(&format!("a__b{i}")), Default::default())
            .unwrap();
    }
    tm.register(echo("a__b"), Default::default()).unwrap();
    let after: Vec<String> = ["a.b", "c"].iter().map(|t| name_of(&agent, t)).collect();
    assert_eq!(before, after);
}

#[cfg(feature = "rig")]
#[tokio::test]
async fn rig_after_a_clash_a_shown_name_still_runs_the_tool_it_was_shown_for() {
    use toolmark::agent::rig::RigTools;
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("a").register(echo("b")).unwrap();
    let rig = RigTools::new(&tm, Caller::InApp);
    let set = rig.tool_set();
    tm.register(echo("a__b"), Default::default()).unwrap();
    let out = set.call("a__b", "{}".to_owned()).await.unwrap();
    assert_eq!(out, "b");
    // A set built now still means `a.b` by `a__b`.
    let out = rig.tool_set().call("a__b", "{}".to_owned()).await.unwrap();
    assert_eq!(out, "b");
}

#[tokio::test]
async fn this_session_decisions_in_one_conversation_do_not_cover_another() {
    let tm = tools();
    let session = |id: &str| AgentOptions {
        session: Some(id.to_owned()),
        ..AgentOptions::default()
    };
    let one = AgentTools::with_options(&tm, Provider::OpenAiChat, session("conv-1"));
    let two = AgentTools::with_options(&tm, Provider::OpenAiChat, session("conv-2"));
    let add = name_of(&one, "notes.add");
    async fn call(agent: &AgentTools, add: &str, id: &str) -> toolmark::Outcome {
        let r = response(Provider::OpenAiChat, id, add, &json!({"text": "hi"}));
        agent.run(&r).await.calls.remove(0).outcome
    }
    let first = call(&one, &add, "c1").await;
    let id = first.confirm_id().expect("asked").to_owned();
    let done = tm
        .confirm_pending(&id, Decision::approve().remember(For::Session))
        .await;
    assert!(done.is_ok());
    assert!(
        call(&one, &add, "c2").await.is_ok(),
        "the same conversation"
    );
    assert!(
        call(&two, &add, "c3").await.confirm_id().is_some(),
        "another conversation is asked"
    );
}

#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    /// Tags of the order (required here).
    tags: Vec<String>,
    lines: Vec<Line>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Line {
    sku: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    note: Option<String>,
}

#[tokio::test]
async fn strict_nulls_of_nested_optional_fields_are_dropped_by_schema_position() {
    let tm = Toolmark::builder().build().unwrap();
    tm.scope("shop")
        .register(
            ToolSpec::typed("order", "Order", |_ctx, o: Order| async move {
                Ok::<_, ToolError>(o.lines.len())
            })
            .effect(Effect::Write),
        )
        .unwrap();
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses] {
        let agent = AgentTools::with_options(
            &tm,
            provider,
            AgentOptions {
                strict: true,
                ..AgentOptions::default()
            },
        );
        assert!(agent.tool_list().not_strict().is_empty());
        let order = name_of(&agent, "shop.order");
        let args = json!({
            "tags": ["a"],
            "lines": [{"sku": "x", "tags": null, "note": null}, {"sku": "y", "tags": ["t"], "note": null}]
        });
        let run = agent.run(&response(provider, "c", &order, &args)).await;
        assert_eq!(
            run.calls[0].outcome.output(),
            Some(&json!(2)),
            "{:?}",
            run.calls[0].outcome
        );
        // A null at a required property is not dropped: the decode says so.
        let args = json!({"tags": null, "lines": []});
        let run = agent.run(&response(provider, "c", &order, &args)).await;
        let refusal = run.calls[0].outcome.refusal().expect("refused");
        assert_eq!(refusal.issues[0].path, "tags");
    }
}
