//! Golden files: each provider's tool list (plain and OpenAI strict), the result
//! messages for a scripted response, and the bridge message after an approval.

use serde_json::{json, Value};
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use toolmark::Decision;

use crate::common::{fixture, golden, leaks, scripted_response};

#[test]
fn tool_lists_match_the_golden_files() {
    let (tm, _) = fixture();
    for provider in Provider::ALL {
        let agent = AgentTools::new(&tm, provider);
        golden(&format!("{}.tools", provider.as_str()), &agent.tools_json());
        let list = agent.tool_list();
        assert_eq!(
            list.definitions().len(),
            tm.manifest(toolmark::Caller::InApp).len()
        );
        assert_eq!(list.provider(), provider);
        assert_eq!(list.version(), tm.manifest_version());
    }
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses] {
        let options = AgentOptions {
            strict: true,
            ..AgentOptions::default()
        };
        let agent = AgentTools::with_options(&tm, provider, options);
        let list = agent.tool_list();
        golden(&format!("{}.tools.strict", provider.as_str()), list.json());
        // The map tool cannot be strict, and says why.
        let reasons: Vec<Value> = list
            .not_strict()
            .iter()
            .map(|(tool, reason)| json!({"tool": tool, "reason": reason}))
            .collect();
        golden(
            &format!("{}.not_strict", provider.as_str()),
            &Value::Array(reasons),
        );
    }
}

#[tokio::test]
async fn results_and_bridge_messages_match_the_golden_files() {
    for provider in Provider::ALL {
        let (tm, _) = fixture();
        let mut bridge = tm.bridge();
        let agent = AgentTools::new(&tm, provider);
        let run = agent.run(&scripted_response(provider)).await;
        let statuses: Vec<&str> = run.calls.iter().map(|c| c.outcome.status()).collect();
        assert_eq!(
            statuses,
            ["ok", "refused", "needs_confirmation", "error", "refused"],
            "{provider:?}"
        );
        let messages = Value::Array(run.messages.clone());
        assert!(!leaks(&messages.to_string()), "{provider:?} leaks a secret");
        golden(&format!("{}.results", provider.as_str()), &messages);

        let id = run.calls[2].outcome.confirm_id().unwrap().to_owned();
        let approved = tm.confirm_pending(&id, Decision::approve()).await;
        assert!(approved.is_ok(), "{approved:?}");
        let msg = bridge.recv().await.unwrap();
        let message = agent.bridge_message(&msg).unwrap();
        assert!(!leaks(&message.to_string()));
        golden(&format!("{}.bridge", provider.as_str()), &message);
    }
}
