//! The runner's rules: ids matched, malformed arguments corrected, confirmation not
//! retried, strict nulls dropped, scope order kept, visibility followed, and the
//! conversion cached per manifest version.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use toolmark::{Decision, Effect, Outcome, RefusalCode, ToolError, ToolSpec, Toolmark};

use crate::common::{fixture, leaks, pname, scripted_response};

fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn malformed_arguments_become_an_invalid_result_the_model_can_correct() {
    let (tm, _) = fixture();
    let agent = AgentTools::new(&tm, Provider::OpenAiChat);
    let get = pname(Provider::OpenAiChat, "crm.customers.get");
    for bad in [
        "{\"id\": 7",
        "[7]",
        "\"seven\"",
        "{\"id\": \"seven\"}",
        "nul",
    ] {
        let reply = json!({"role": "assistant", "tool_calls": [chat_call("c1", &get, bad)]});
        let run = agent.run(&reply).await;
        assert_eq!(
            run.calls[0].outcome.refusal_code(),
            Some(RefusalCode::Invalid),
            "{bad}"
        );
        let content: Value =
            serde_json::from_str(run.messages[0]["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["code"], "invalid", "{bad}");
        assert!(!content["issues"].as_array().unwrap().is_empty(), "{bad}");
    }
    // The corrected call then runs.
    let reply = json!({"role": "assistant", "tool_calls": [chat_call("c2", &get, "{\"id\":7}")]});
    let run = agent.run(&reply).await;
    assert_eq!(
        run.calls[0].outcome.output(),
        Some(&json!({"id": 7, "name": "Ada Lovelace"}))
    );
}

#[tokio::test]
async fn results_are_matched_by_call_id_for_every_provider() {
    for provider in Provider::ALL {
        let (tm, _) = fixture();
        let agent = AgentTools::new(&tm, provider);
        let response = scripted_response(provider);
        let run = agent.run(&response).await;
        let asked: Vec<Option<String>> = agent
            .tool_calls(&response)
            .into_iter()
            .map(|c| c.id)
            .collect();
        let answered: Vec<Option<String>> = run.calls.iter().map(|c| c.call_id.clone()).collect();
        assert_eq!(asked, answered, "{provider:?}");
        for c in &run.calls {
            let id = c.call_id.clone().map(Value::String);
            let got = match provider {
                Provider::OpenAiChat => c.result.get("tool_call_id").cloned(),
                Provider::OpenAiResponses => c.result.get("call_id").cloned(),
                Provider::Anthropic => c.result.get("tool_use_id").cloned(),
                Provider::Gemini => c.result["functionResponse"].get("id").cloned(),
                _ => unreachable!(),
            };
            assert_eq!(got, id, "{provider:?}");
        }
    }
}

#[tokio::test]
async fn a_call_waiting_for_the_user_says_do_not_retry_with_the_redacted_summary() {
    let (tm, _) = fixture();
    let agent = AgentTools::new(&tm, Provider::Anthropic);
    let run = agent.run(&scripted_response(Provider::Anthropic)).await;
    let waiting = &run.calls[2];
    assert_eq!(waiting.outcome.status(), "needs_confirmation");
    assert_eq!(waiting.result["is_error"], false);
    let content: Value = serde_json::from_str(waiting.result["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["status"], "waiting_for_user");
    assert_eq!(content["summary"], "Add a card for Ada");
    assert!(content["message"]
        .as_str()
        .unwrap()
        .contains("Do not call the tool again"));
    // The model never sees the confirm id: only the user approves.
    let id = waiting.outcome.confirm_id().unwrap();
    assert!(!waiting.result.to_string().contains(id));
    assert!(!leaks(&run.messages[0].to_string()));
}

#[tokio::test]
async fn rejected_and_expired_decisions_become_messages_in_the_provider_format() {
    let (tm, clock) = fixture();
    let mut bridge = tm.bridge();
    let agent = AgentTools::new(&tm, Provider::Gemini);
    let run = agent.run(&scripted_response(Provider::Gemini)).await;
    let id = run.calls[2].outcome.confirm_id().unwrap().to_owned();
    let out = tm
        .confirm_pending(&id, Decision::reject_with("not this card"))
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Rejected));
    let msg = agent.bridge_message(&bridge.recv().await.unwrap()).unwrap();
    assert_eq!(msg["role"], "user");
    let text = msg["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("rejected"), "{text}");
    assert!(text.contains("call fc_3"), "{text}");

    // A second confirmation that expires.
    let run = agent.run(&scripted_response(Provider::Gemini)).await;
    assert!(run.calls[2].outcome.confirm_id().is_some());
    clock.advance(std::time::Duration::from_secs(24 * 3600));
    let msg = tokio::time::timeout(std::time::Duration::from_secs(5), bridge.recv())
        .await
        .unwrap()
        .unwrap();
    let text = agent.bridge_message(&msg).unwrap()["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("expired"), "{text}");
}

#[tokio::test]
async fn strict_mode_drops_the_nulls_the_model_must_send_for_optional_fields() {
    let (tm, _) = fixture();
    let options = AgentOptions {
        strict: true,
        ..AgentOptions::default()
    };
    let agent = AgentTools::with_options(&tm, Provider::OpenAiResponses, options);
    let create = pname(Provider::OpenAiResponses, "crm.customers.create");
    let args = json!({
        "name": "Ada", "email": null, "plan": "free", "seats": null, "tags": [],
        "address": {"street": "1 A St", "city": "London", "zip": null}
    });
    let response = json!({"output": [{"type": "function_call", "call_id": "c1", "name": create,
        "arguments": args.to_string()}]});
    let run = agent.run(&response).await;
    let out = run.calls[0].outcome.output().cloned();
    assert_eq!(
        out.as_ref().map(|o| &o["city"]),
        Some(&json!("London")),
        "{:?}",
        run.calls[0].outcome
    );
}

#[tokio::test]
async fn calls_into_one_scope_keep_the_models_order() {
    let tm = Toolmark::builder().build().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&log);
    tm.scope("notes")
        .register(
            ToolSpec::new("append", "Append a line")
                .effect(Effect::Write)
                .input_schema(json!({"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}))
                .handler(move |_ctx, input| {
                    let l = Arc::clone(&l);
                    async move {
                        tokio::task::yield_now().await;
                        l.lock().unwrap().push(input["line"].as_i64().unwrap());
                        Ok::<_, ToolError>(json!(null))
                    }
                }),
        )
        .unwrap();
    let agent = AgentTools::new(&tm, Provider::OpenAiChat);
    let calls: Vec<Value> = (0..20)
        .map(|i| {
            chat_call(
                &format!("c{i}"),
                "notes__append",
                &format!("{{\"line\":{i}}}"),
            )
        })
        .collect();
    let run = agent.run(&json!({"tool_calls": calls})).await;
    assert!(run.calls.iter().all(|c| c.outcome.is_ok()));
    assert_eq!(*log.lock().unwrap(), (0..20).collect::<Vec<i64>>());
}

#[tokio::test]
async fn hidden_tools_leave_the_next_list_and_are_refused() {
    let (tm, _) = fixture();
    let agent = AgentTools::new(&tm, Provider::Anthropic);
    let before = agent.tool_list();
    assert!(
        Arc::ptr_eq(&before, &agent.tool_list()),
        "cached while the manifest is unchanged"
    );
    let billing = tm.scope("billing");
    billing.set_when(false);
    let after = agent.tool_list();
    assert!(!Arc::ptr_eq(&before, &after));
    assert!(after.names().to_provider("billing.add_card").is_none());
    let reply = json!({"content": [{"type": "tool_use", "id": "t1", "name": "billing__add_card",
        "input": {"holder": "A", "number": "1", "cvc": "2"}}]});
    let run = agent.run(&reply).await;
    assert_eq!(
        run.calls[0].outcome.refusal_code(),
        Some(RefusalCode::UnknownTool)
    );
    assert_eq!(run.messages[0]["content"][0]["is_error"], true);
}

#[tokio::test]
async fn responses_without_tool_calls_run_nothing() {
    let (tm, _) = fixture();
    for provider in Provider::ALL {
        let agent = AgentTools::new(&tm, provider);
        for reply in [
            json!({}),
            json!(null),
            json!([]),
            json!({"choices": []}),
            json!("text"),
        ] {
            let run = agent.run(&reply).await;
            assert!(
                run.is_empty() && run.messages.is_empty(),
                "{provider:?} {reply}"
            );
        }
    }
    let agent = AgentTools::new(&tm, Provider::OpenAiChat);
    let run = agent
        .run(&json!({"tool_calls": [{"id": 1, "function": 7}]}))
        .await;
    assert!(matches!(run.calls[0].outcome, Outcome::Refused(_)));
}
