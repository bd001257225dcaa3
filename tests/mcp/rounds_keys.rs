//! A tool names its own questions (`ToolContext::elicit_keyed`,
//! `SampleRequest::key`): on MCP 2026-07-28 each is asked under its name in
//! `inputRequests`, and only an answer under that name answers it; a key that
//! cannot name a question is `invalid_request` and asks nothing.

use rmcp::model::{
    CallToolResponse, ElicitResult, ElicitationAction, InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};
use toolmark::mcp::McpServer;
use toolmark::{ClientError, Elicited, SampleRequest, ToolError, ToolSpec, Toolmark};

use crate::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Key {
    key: String,
}

fn named_app() -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::typed(
            "greet",
            "Asks the name, then the model",
            |ctx, _: toolmark::NoInput| async move {
                let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
                let name = match ctx
                    .elicit_keyed("user_name", "What is your name?", schema)
                    .await?
                {
                    Elicited::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
                    _ => "stranger".to_owned(),
                };
                let idea = ctx
                    .sample(SampleRequest::new(format!("A greeting for {name}?")).key("greeting"))
                    .await?;
                Ok::<_, ToolError>(json!(format!("{} {name}", idea.text)))
            },
        ),
        Default::default(),
    )
    .unwrap();
    tm.register(
        ToolSpec::typed(
            "odd",
            "Asks under the key it is given",
            |ctx, k: Key| async move {
                let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
                match ctx.elicit_keyed(k.key, "X?", schema).await {
                    Err(e @ ClientError::InvalidRequest { .. }) => {
                        Ok::<_, ToolError>(json!(e.code()))
                    }
                    other => Ok(json!(format!("{other:?}"))),
                }
            },
        ),
        Default::default(),
    )
    .unwrap();
    tm
}

fn keys(r: &CallToolResponse) -> Vec<String> {
    match r {
        CallToolResponse::InputRequired(ir) => ir
            .input_requests
            .as_ref()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
        other => panic!("expected a round, got {other:?}"),
    }
}

fn state(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::InputRequired(ir) => ir.request_state.clone().unwrap(),
        other => panic!("expected a round, got {other:?}"),
    }
}

fn answer(key: &str, value: Value) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(key.to_owned(), value);
    r
}

#[tokio::test]
async fn a_tools_named_questions_are_asked_and_answered_by_name() {
    let server = McpServer::new(named_app());
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
    let first = client
        .call_tool_once(call("greet", json!({})))
        .await
        .unwrap();
    assert_eq!(keys(&first), ["user_name"]);
    let ada = serde_json::to_value(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})),
    )
    .unwrap();
    // Under the numbered key it would have had: not an answer, asked again.
    let numbered = client
        .call_tool_once(
            call("greet", json!({}))
                .with_request_state(state(&first))
                .with_input_responses(answer("elicit-0", ada.clone())),
        )
        .await
        .unwrap();
    assert_eq!(keys(&numbered), ["user_name"]);
    let named = client
        .call_tool_once(
            call("greet", json!({}))
                .with_request_state(state(&numbered))
                .with_input_responses(answer("user_name", ada)),
        )
        .await
        .unwrap();
    assert_eq!(keys(&named), ["greeting"]);
    let hello = json!({"role": "assistant", "model": "m",
                       "content": {"type": "text", "text": "Hello,"}});
    let done = client
        .call_tool_once(
            call("greet", json!({}))
                .with_request_state(state(&named))
                .with_input_responses(answer("greeting", hello)),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = &done else {
        panic!("{done:?}")
    };
    assert!(
        serde_json::to_string(result)
            .unwrap()
            .contains("Hello, Ada"),
        "{result:?}"
    );
    // A key that cannot name a question asks nothing.
    for bad in ["confirm", "has space", "", &"k".repeat(65)] {
        let r = client
            .call_tool_once(call("odd", json!({"key": bad})))
            .await
            .unwrap();
        let CallToolResponse::Complete(result) = &r else {
            panic!("{bad:?} asked: {r:?}")
        };
        assert!(
            serde_json::to_string(result)
                .unwrap()
                .contains("invalid_request"),
            "{bad:?}: {result:?}"
        );
    }
    client.cancel().await.unwrap();
}
