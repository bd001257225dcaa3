//! A consequential tool confirmed by a multi round-trip request (MCP
//! 2026-07-28) that, once approved, asks its client a question of its own
//! (`ctx.elicit` / `ctx.sample`): the approved run is not asked through a
//! second round (its confirmation is used; a round's retry would run it
//! unconfirmed). The question fails at once with `not_supported`, the tool
//! decides what to do with that, and the call answers once: it never hangs
//! and never runs twice.

use rmcp::model::{
    CallToolResponse, ElicitResult, ElicitationAction, InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use toolmark::mcp::{Elicitation, McpServer};
use toolmark::{ClientError, Effect, Elicited, ToolError, ToolSpec, Toolmark};

use crate::*;

fn deploy_app(log: &Log) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    let l = log.clone();
    tm.register(
        ToolSpec::typed(
            "deploy",
            "Deploys, then asks the region",
            move |ctx: toolmark::ToolContext, _: toolmark::NoInput| {
                let l = l.clone();
                async move {
                    l.push("run");
                    let schema =
                        json!({"type": "object", "properties": {"region": {"type": "string"}}});
                    let region = match ctx.elicit("Which region?", schema).await {
                        Ok(Elicited::Accept(v)) => v["region"].to_string(),
                        Ok(_) => "none".to_owned(),
                        Err(e) => {
                            l.push(format!("asked: {}", e.code()));
                            return Err(ToolError::from(e));
                        }
                    };
                    l.push(format!("deployed to {region}"));
                    Ok::<_, ToolError>(json!("deployed"))
                }
            },
        )
        .effect(Effect::Consequential)
        .summary("Deploy"),
        Default::default(),
    )
    .unwrap();
    let l = log.clone();
    tm.register(
        ToolSpec::typed(
            "publish",
            "Publishes a title the client's model writes, falling back to a default",
            move |ctx: toolmark::ToolContext, _: toolmark::NoInput| {
                let l = l.clone();
                async move {
                    let title = match ctx.sample(toolmark::SampleRequest::new("A title?")).await {
                        Ok(s) => s.text,
                        Err(ClientError::NotSupported { .. }) => "Untitled".to_owned(),
                        Err(e) => return Err(ToolError::from(e)),
                    };
                    l.push(format!("published {title}"));
                    Ok::<_, ToolError>(json!(title))
                }
            },
        )
        .effect(Effect::Consequential)
        .summary("Publish"),
        Default::default(),
    )
    .unwrap();
    tm
}

fn approve(state: String) -> (String, InputResponses) {
    let mut r = InputResponses::new();
    r.insert(
        "confirm".to_owned(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap(),
    );
    (state, r)
}

#[tokio::test(start_paused = true)]
async fn a_question_after_an_mrtr_confirmation_is_not_supported_at_once_and_runs_once() {
    let log = Log::default();
    let server =
        McpServer::new(deploy_app(&log)).confirm_by_elicitation(Elicitation::consequential());
    let (a, b) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client {
        elicit: Some(ElicitationAction::Accept),
        sampling: true,
        ..Client::default()
    }
    .serve_with_lifecycle(
        b,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap();
    for (tool, expect_error, done) in [
        ("deploy", true, "asked: not_supported"),
        ("publish", false, "published Untitled"),
    ] {
        let first = client.call_tool_once(call(tool, json!({}))).await.unwrap();
        let CallToolResponse::InputRequired(ir) = &first else {
            panic!("the confirmation round: {first:?}")
        };
        let keys: Vec<_> = ir
            .input_requests
            .as_ref()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["confirm"]);
        let (state, responses) = approve(ir.request_state.clone().unwrap());
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            client.call_tool_once(
                call(tool, json!({}))
                    .with_request_state(state)
                    .with_input_responses(responses),
            ),
        )
        .await
        .expect("the approved call answers, it does not wait for a question")
        .unwrap();
        let CallToolResponse::Complete(result) = &answered else {
            panic!("no second round after the confirmation: {answered:?}")
        };
        assert_eq!(result.is_error, Some(expect_error), "{result:?}");
        if expect_error {
            let text = serde_json::to_string(result).unwrap();
            assert!(text.contains("not_supported"), "{text}");
        }
        assert!(log.get().iter().any(|l| l == done), "{:?}", log.get());
    }
    assert_eq!(
        log.get(),
        ["run", "asked: not_supported", "published Untitled"],
        "each approved tool ran once"
    );
    client.cancel().await.unwrap();
}
