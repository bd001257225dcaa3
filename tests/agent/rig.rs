//! The rig adapter (feature `rig`): Toolmark tools as rig `ToolDyn`s in a
//! `ToolSet`, called through `Toolmark::call`, and a rig agent driven by rig's
//! scripted `MockCompletionModel`.

use rig_core::completion::Prompt;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use rig_core::tool::{ToolCallExtensions, ToolDyn, ToolFailureKind, ToolSetError};
use serde_json::{json, Value};
use toolmark::agent::rig::{tool_set, RigTools};
use toolmark::agent::Provider;
use toolmark::{Caller, Decision};

use crate::common::{fixture, pname, SECRET_CVC, SECRET_NUMBER};

/// The text of a tool error the set returned (rig wraps it).
fn error_text(err: ToolSetError) -> String {
    err.to_string()
}

#[tokio::test]
async fn every_visible_tool_is_a_rig_tool_with_the_provider_safe_name_and_schema() {
    let (tm, _) = fixture();
    let tools = RigTools::new(&tm, Caller::InApp);
    let list = toolmark::agent::AgentTools::new(&tm, Provider::OpenAiChat).tool_list();
    let rig = tools.tools();
    assert_eq!(rig.len(), list.definitions().len());
    for (tool, def) in rig.iter().zip(list.definitions()) {
        assert_eq!(tool.name(), def["function"]["name"].as_str().unwrap());
        assert_eq!(
            tool.description(),
            def["function"]["description"].as_str().unwrap()
        );
        assert_eq!(tool.parameters(), def["function"]["parameters"]);
        assert!(!tool.name().contains('.'), "{}", tool.name());
    }
    let set = tool_set(&tm, Caller::InApp);
    assert!(set.contains(&pname(Provider::OpenAiChat, "crm.customers.get")));
    assert_eq!(set.get_tool_definitions().unwrap().len(), rig.len());
}

#[tokio::test]
async fn a_call_through_the_tool_set_runs_the_tool() {
    let (tm, _) = fixture();
    let set = tool_set(&tm, Caller::InApp);
    let get = pname(Provider::OpenAiChat, "crm.customers.get");
    let out = set.call(&get, r#"{"id": 7}"#.to_owned()).await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"id": 7, "name": "Ada Lovelace"})
    );
    // A tool's own failure is a tool error.
    let err = set
        .call(&get, r#"{"id": 404}"#.to_owned())
        .await
        .unwrap_err();
    assert!(error_text(err).contains("no customer with that id"));
}

#[tokio::test]
async fn invalid_input_is_an_error_naming_the_field() {
    let (tm, _) = fixture();
    let set = tool_set(&tm, Caller::InApp);
    let get = pname(Provider::OpenAiChat, "crm.customers.get");
    let err = set
        .call(&get, r#"{"id": "seven"}"#.to_owned())
        .await
        .unwrap_err();
    let text = error_text(err);
    assert!(text.contains("\"invalid\""), "{text}");
    assert!(text.contains("\"path\":\"id\""), "{text}");
    // Malformed JSON is an invalid result too, never a panic.
    let err = set.call(&get, "{\"id\": 7".to_owned()).await.unwrap_err();
    assert!(error_text(err).contains("not valid JSON"));

    // rig's agent loop sees it as invalid arguments, code `invalid`.
    let tool = RigTools::new(&tm, Caller::InApp)
        .tools()
        .into_iter()
        .find(|t| t.name() == get)
        .unwrap();
    let result = tool
        .call_structured(
            r#"{"id": "seven"}"#.to_owned(),
            &ToolCallExtensions::default(),
        )
        .await;
    assert!(result.outcome().is_error_kind(ToolFailureKind::InvalidArgs));
    assert!(result.model_output().contains("\"path\":\"id\""));
    let ok = tool
        .call_structured(r#"{"id": 7}"#.to_owned(), &ToolCallExtensions::default())
        .await;
    assert!(ok.model_output().contains("Ada Lovelace"));
    assert!(!ok.outcome().is_error_kind(ToolFailureKind::InvalidArgs));
}

#[tokio::test]
async fn a_consequential_call_answers_that_it_awaits_the_user_without_secrets() {
    let (tm, _) = fixture();
    let tools = RigTools::new(&tm, Caller::InApp);
    let set = tools.tool_set();
    let card = pname(Provider::OpenAiChat, "billing.add_card");
    let args = json!({"holder": "Ada", "number": SECRET_NUMBER, "cvc": SECRET_CVC});
    let out = set.call(&card, args.to_string()).await.unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "waiting_for_user");
    assert_eq!(v["summary"], "Add a card for Ada");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .contains("Do not call the tool again"));
    assert!(!out.contains(SECRET_NUMBER) && !out.contains(SECRET_CVC));

    // The user approves: the bridge's message becomes text for the conversation.
    let mut bridge = tm.bridge();
    let pending = tm.pending_confirmations();
    assert_eq!(pending.len(), 1);
    let out = tm
        .confirm_pending(&pending[0].confirm_id, Decision::approve())
        .await;
    assert!(out.is_ok());
    let msg = bridge.recv().await.unwrap();
    let text = tools.bridge_text(&msg).unwrap();
    assert!(text.contains(&card) && text.contains("approved"), "{text}");
    assert!(text.contains("card ending 1111"), "{text}");
}

#[tokio::test]
async fn a_hidden_scope_has_no_tools_in_the_set_and_an_old_set_is_refused() {
    let (tm, _) = fixture();
    let card = pname(Provider::OpenAiChat, "billing.add_card");
    let old = tool_set(&tm, Caller::InApp);
    assert!(old.contains(&card));
    tm.scope("billing").set_when(false);
    let set = tool_set(&tm, Caller::InApp);
    assert!(!set.contains(&card));
    assert!(set
        .get_tool_definitions()
        .unwrap()
        .iter()
        .all(|d| !d.name.starts_with("billing")));
    // A set built before the scope was hidden still goes through `tm.call`.
    let args = json!({"holder": "A", "number": "1", "cvc": "2"}).to_string();
    let err = old.call(&card, args).await.unwrap_err();
    assert!(error_text(err).contains("unknown_tool"));
}

#[tokio::test]
async fn a_rig_agent_with_a_scripted_model_calls_toolmark_tools() {
    let (tm, _) = fixture();
    let tools = RigTools::new(&tm, Caller::InApp);
    let get = pname(Provider::OpenAiChat, "crm.customers.get");
    let card = pname(Provider::OpenAiChat, "billing.add_card");
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("tc1", &get, json!({"id": 7})),
        MockTurn::tool_call(
            "tc2",
            &card,
            json!({"holder": "Ada", "number": SECRET_NUMBER, "cvc": SECRET_CVC}),
        ),
        MockTurn::text("Ada's card waits for your confirmation."),
    ]);
    let agent = rig_core::agent::AgentBuilder::new(model.clone())
        .tools(tools.boxed())
        .build();
    let answer = agent.prompt("add a card for customer 7").max_turns(3).await;
    assert_eq!(answer.unwrap(), "Ada's card waits for your confirmation.");

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&get.as_str()) && names.contains(&card.as_str()));
    let history = serde_json::to_string(&requests[2].chat_history).unwrap();
    assert!(history.contains("Ada Lovelace"), "the first tool ran");
    assert!(
        history.contains("waiting_for_user"),
        "the second awaits the user"
    );
    // The card number appears once: in the model's own call, not in the result.
    assert_eq!(history.matches(SECRET_NUMBER).count(), 1);
    assert_eq!(tm.pending_confirmations().len(), 1);
}
