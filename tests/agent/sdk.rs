//! The official Python SDKs (`openai`, `anthropic`, `google-genai`) accept what
//! Toolmark generates: every tool definition (plain and OpenAI strict), every
//! result message and bridge message, validated with the SDKs' own typed models by
//! `tests/agent/sdk_check.py` in the venv `.ci/run` creates.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Map, Value};
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use toolmark::Decision;

use crate::common::{fixture, scripted_response};

/// The venv's python: `TOOLMARK_PYTHON`, else `.ci/venv/bin/python`. Without
/// `TOOLMARK_PYTHON` (and outside CI) the tests are reported ignored; when they run
/// without it they fail (`tests/support/external.rs`).
pub(crate) fn python() -> PathBuf {
    crate::external::python()
}

async fn generated(provider: Provider) -> Value {
    let (tm, _) = fixture();
    let mut tools = Map::new();
    let plain = AgentTools::new(&tm, provider);
    tools.insert("plain".into(), plain.tools_json());
    if matches!(provider, Provider::OpenAiChat | Provider::OpenAiResponses) {
        let strict = AgentTools::with_options(
            &tm,
            provider,
            AgentOptions {
                strict: true,
                ..AgentOptions::default()
            },
        );
        tools.insert("strict".into(), strict.tools_json());
    }
    let mut bridge = tm.bridge();
    let response = scripted_response(provider);
    let run = plain.run(&response).await;
    let id = run.calls[2].outcome.confirm_id().unwrap().to_owned();
    tm.confirm_pending(&id, Decision::approve()).await;
    let message = plain.bridge_message(&bridge.recv().await.unwrap()).unwrap();
    json!({
        "tools": tools,
        "results": run.messages,
        "bridge": message,
        "response": response,
        "calls": run.calls.len(),
    })
}

#[tokio::test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
async fn the_official_sdks_accept_every_generated_definition_and_message() {
    let python = python();
    let mut all = Map::new();
    for provider in Provider::ALL {
        all.insert(provider.as_str().into(), generated(provider).await);
    }
    let dir = std::env::temp_dir().join(format!("toolmark-agent-sdk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("generated.json");
    std::fs::write(
        &file,
        serde_json::to_vec_pretty(&Value::Object(all)).unwrap(),
    )
    .unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/sdk_check.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDKs rejected a generated value:\n{stdout}\n{stderr}"
    );
    for provider in Provider::ALL {
        assert!(
            stdout.contains(&format!("{}: ok", provider.as_str())),
            "{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
async fn a_value_the_sdks_reject_fails_the_check() {
    let python = python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/sdk_check.py");
    let dir = std::env::temp_dir().join(format!("toolmark-agent-sdk-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One mistake per provider: a misspelled key, a wrong type, a missing field.
    type Corrupt = fn(&mut Value);
    let corruptions: [(Provider, Corrupt); 4] = [
        (Provider::OpenAiChat, |g| {
            g["tools"]["plain"][0]["function"]["parameterz"] = json!({})
        }),
        (Provider::OpenAiResponses, |g| {
            g["results"][0]["call_id"] = json!(7)
        }),
        (Provider::Anthropic, |g| {
            let tool = g["tools"]["plain"][0].as_object_mut().unwrap();
            let schema = tool.remove("input_schema").unwrap();
            tool.insert("inputSchema".into(), schema);
        }),
        (Provider::Gemini, |g| {
            g["tools"]["plain"][0]["functionDeclarations"][0]["parametersSchemaJson"] = json!({})
        }),
    ];
    for (i, (provider, corrupt)) in corruptions.into_iter().enumerate() {
        let mut g = generated(provider).await;
        corrupt(&mut g);
        let file = dir.join(format!("bad-{i}.json"));
        let doc = json!({ provider.as_str(): g });
        std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
        let out = Command::new(&python)
            .arg(&script)
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{provider:?}: the corrupted value passed"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without the Python SDKs these tests are reported ignored, never `ok`.
#[test]
fn the_sdk_tests_are_reported_ignored_unless_python_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "python"),
        &[
            "sdk::the_official_sdks_accept_every_generated_definition_and_message",
            "sdk::a_value_the_sdks_reject_fails_the_check",
        ],
    );
}
