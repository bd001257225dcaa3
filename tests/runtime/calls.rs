//! The call pipeline (§6): lookup, allow, validate, outcomes, manifest, events,
//! and bad input.

use std::time::Duration;

use serde_json::{json, Value};
use toolmark::{
    CallOptions, Caller, CallerSet, Effect, Event, Outcome, RefusalCode, ToolError, ToolSpec,
    Toolmark,
};

use crate::common::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct NewChallenge {
    title: String,
    cards: Vec<Card>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Card {
    number: String,
    cvc: u32,
}

fn create() -> ToolSpec {
    ToolSpec::typed(
        "create",
        "Create a challenge",
        |_ctx, i: NewChallenge| async move {
            Ok::<_, ToolError>(json!({"title": i.title, "cards": i.cards.len()}))
        },
    )
}

#[tokio::test]
async fn an_unknown_tool_is_refused_unknown_tool() {
    let tm = tm();
    for name in ["nope", "", "a..b", "💥", &"x".repeat(10_000)] {
        let out = tm.call(name, empty(), as_inapp()).await;
        assert_eq!(code(&out), Some(RefusalCode::UnknownTool), "{name:.20}");
        assert!(
            out.refusal().unwrap().message.len() < 300,
            "the message does not echo a huge name"
        );
    }
}

#[tokio::test]
async fn a_caller_the_tool_does_not_allow_is_refused_not_allowed() {
    let tm = tm();
    tm.register(
        add("add").callers([Caller::Human, Caller::InApp]),
        Default::default(),
    )
    .unwrap();
    let out = tm
        .call(
            "add",
            json!({"a": 1, "b": 2}),
            CallOptions::new(Caller::Mcp),
        )
        .await;
    assert_eq!(code(&out), Some(RefusalCode::NotAllowed));
    assert!(
        names(&tm, Caller::Mcp).is_empty(),
        "nor does it see the tool"
    );
    assert_eq!(names(&tm, Caller::InApp), ["add"]);
    assert!(tm
        .call("add", json!({"a": 1, "b": 2}), as_inapp())
        .await
        .is_ok());
    assert_eq!(
        CallerSet::from([Caller::Human]).iter().collect::<Vec<_>>(),
        [Caller::Human]
    );
}

#[tokio::test]
async fn invalid_input_is_refused_with_issues_and_paths() {
    let tm = tm();
    tm.register(create(), Default::default()).unwrap();
    let out = tm
        .call(
            "create",
            json!({"title": "Robotics", "cards": [{"number": "4242", "cvc": 123}, {"number": "1", "cvc": "abc"}]}),
            as_inapp(),
        )
        .await;
    let refusal = out.refusal().expect("refused");
    assert_eq!(refusal.code, RefusalCode::Invalid);
    assert_eq!(refusal.issues.len(), 1);
    assert_eq!(refusal.issues[0].path, "cards.1.cvc");
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["status"], "refused");
    assert_eq!(json["code"], "invalid");
    assert_eq!(json["issues"][0]["path"], "cards.1.cvc");

    let out = tm.call("create", json!({"cards": []}), as_inapp()).await;
    let issues = &out.refusal().unwrap().issues;
    assert_eq!(issues[0].path, "");
    assert!(issues[0].message.contains("title"), "{}", issues[0].message);
}

#[tokio::test]
async fn an_undeclared_property_is_an_unknown_field() {
    let tm = tm();
    tm.register(create(), Default::default()).unwrap();
    let out = tm
        .call(
            "create",
            json!({"title": "t", "cards": [{"number": "1", "cvc": 1, "pin": 5}], "extra": 1}),
            as_inapp(),
        )
        .await;
    let issues = &out.refusal().unwrap().issues;
    let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(paths, ["cards.0.pin", "extra"]);
    assert!(issues.iter().all(|i| i.message == "unknown field"));

    let lenient = Toolmark::builder()
        .allow_unknown_fields(true)
        .build()
        .unwrap();
    lenient.register(create(), Default::default()).unwrap();
    let out = lenient
        .call(
            "create",
            json!({"title": "t", "cards": [], "extra": 1}),
            as_inapp(),
        )
        .await;
    assert!(out.is_ok());
}

#[tokio::test]
async fn a_missing_or_null_input_counts_as_empty_object() {
    let tm = tm();
    tm.register(echo("e"), Default::default()).unwrap();
    assert_eq!(ok(&tm.call("e", Value::Null, as_inapp()).await), &json!({}));
}

#[tokio::test]
async fn bad_input_gets_a_clear_refusal_and_the_runtime_keeps_serving() {
    let tm = tm();
    tm.register(create(), Default::default()).unwrap();
    tm.register(add("add"), Default::default()).unwrap();

    // Not an object.
    for input in [json!([1, 2]), json!("text"), json!(7), json!(true)] {
        let out = tm.call("add", input, as_inapp()).await;
        let r = out.refusal().unwrap();
        assert_eq!(r.code, RefusalCode::Invalid);
        assert!(
            r.issues[0].message.contains("JSON object"),
            "{}",
            r.issues[0].message
        );
    }
    // 10 MB.
    let big = json!({"title": "x".repeat(10 << 20), "cards": []});
    let out = tm.call("create", big, as_inapp()).await;
    assert!(out.refusal().unwrap().issues[0]
        .message
        .contains("larger than"));
    // Deeply nested (built without recursion; dropped by serde_json iteratively enough at this depth).
    let mut deep = json!(1);
    for _ in 0..1000 {
        deep = json!({ "a": deep });
    }
    let out = tm
        .call("create", json!({"title": deep, "cards": []}), as_inapp())
        .await;
    assert!(out.refusal().unwrap().issues[0]
        .message
        .contains("nested deeper"));
    // Still serving.
    assert_eq!(
        ok(&tm.call("add", json!({"a": 20, "b": 22}), as_inapp()).await),
        &json!(42)
    );
}

#[tokio::test]
async fn dynamic_tools_are_validated_against_their_json_schema() {
    let tm = tm();
    tm.register(
        ToolSpec::new("note", "Take a note")
            .input_schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "minLength": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["text"],
                "additionalProperties": false
            }))
            .handler(|_ctx, input| async move { Ok(input["text"].clone()) }),
        Default::default(),
    )
    .unwrap();
    let out = tm
        .call("note", json!({"text": "", "tags": ["a", 2]}), as_inapp())
        .await;
    let r = out.refusal().unwrap();
    assert_eq!(r.code, RefusalCode::Invalid);
    let mut paths: Vec<&str> = r.issues.iter().map(|i| i.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["tags.1", "text"]);
    assert_eq!(
        ok(&tm.call("note", json!({"text": "hi"}), as_inapp()).await),
        &json!("hi")
    );
    // A schema that is not a JSON Schema is a registration error.
    let err = tm
        .register(
            ToolSpec::new("bad", "Bad schema")
                .input_schema(json!({"type": 12}))
                .handler(|_ctx, i| async move { Ok(i) }),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
}

#[test]
fn registration_errors_are_typed_with_codes() {
    let tm = tm();
    tm.register(add("add"), Default::default()).unwrap();
    let dup = tm.register(add("add"), Default::default()).unwrap_err();
    assert_eq!(dup.code(), "duplicate_tool");
    assert!(dup.to_string().contains("already registered"));
    for bad in ["", "a.b", "has space", "ünï"] {
        let err = tm.register(add(bad), Default::default()).unwrap_err();
        assert_eq!(err.code(), "invalid_name", "{bad:?}");
    }
    let err = tm
        .register(ToolSpec::new("nohandler", "No handler"), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
    let err = tm
        .register(add("needs").needs_state::<String>(), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "missing_state");
}

#[tokio::test]
async fn the_manifest_is_sorted_by_full_name_with_schemas_and_hints() {
    let tm = tm();
    tm.scope("z").register(echo("last")).unwrap();
    tm.scope("a").register(add("sum")).unwrap();
    tm.register(
        echo("wipe").effect(Effect::Destructive).title("Wipe"),
        Default::default(),
    )
    .unwrap();
    let m = tm.manifest(Caller::InApp);
    let names: Vec<&str> = m.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a.sum", "wipe", "z.last"]);
    let sum = serde_json::to_value(&m[0]).unwrap();
    assert_eq!(sum["inputSchema"]["properties"]["a"]["type"], "integer");
    assert_eq!(
        sum["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        sum["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false,
               "openWorldHint": false, "idempotentHint": true})
    );
    assert_eq!(sum["needsConfirmation"], false);
    let wipe = serde_json::to_value(&m[1]).unwrap();
    assert_eq!(wipe["title"], "Wipe");
    assert_eq!(wipe["effect"], "destructive");
    assert_eq!(wipe["annotations"]["destructiveHint"], true);
    assert_eq!(wipe["needsConfirmation"], true);
    // Human never confirms.
    let human = tm.manifest(Caller::Human);
    assert!(!human.iter().any(|t| t.needs_confirmation));
    // The schema is built once: every read shares it.
    let again = tm.manifest(Caller::InApp);
    assert!(std::sync::Arc::ptr_eq(
        &m[0].input_schema,
        &again[0].input_schema
    ));
}

#[tokio::test]
async fn outcomes_serialize_exactly_as_the_spec_says() {
    let tm = tm();
    tm.register(add("add"), Default::default()).unwrap();
    let out = tm.call("add", json!({"a": 1, "b": 2}), as_inapp()).await;
    assert_eq!(
        serde_json::to_value(&out).unwrap(),
        json!({"status": "ok", "output": 3})
    );
    let out = tm.call("nope", empty(), as_inapp()).await;
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["status"], "refused");
    assert_eq!(v["code"], "unknown_tool");
    assert!(v["message"].is_string());
    assert!(v.get("issues").is_none(), "no empty issues list");
    let e = Outcome::Error(ToolError::new("boom"));
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"status": "error", "message": "boom"})
    );
}

#[tokio::test]
async fn events_report_registration_and_calls_without_raw_input() {
    let tm = tm();
    let mut events = tm.events();
    tm.scope("s").register(echo("e")).unwrap();
    let out = tm
        .call("s.e", json!({"secret-ish": "do-not-log"}), as_inapp())
        .await;
    assert!(out.is_ok());
    let mut kinds = Vec::new();
    while let Ok(e) = events.try_recv() {
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            !json.contains("do-not-log"),
            "events carry no raw input: {json}"
        );
        assert!(!format!("{e:?}").contains("do-not-log"));
        if let Event::CallFinished {
            status, duration, ..
        } = &e
        {
            assert_eq!(*status, "ok");
            assert!(*duration < Duration::from_secs(5));
        }
        kinds.push(e.kind());
    }
    assert_eq!(
        kinds,
        [
            "tool_registered",
            "manifest_changed",
            "call_started",
            "call_finished"
        ]
    );
}

#[tokio::test]
async fn tool_context_gives_caller_name_state_and_progress() {
    let tm = Toolmark::builder()
        .state(String::from("app state"))
        .build()
        .unwrap();
    tm.scope("ctx")
        .register(
            ToolSpec::new("probe", "Reads its context")
                .needs_state::<String>()
                .handler(|ctx, _| async move {
                    ctx.progress(1, 2);
                    let state = ctx.state::<String>().unwrap();
                    Ok(json!({
                        "caller": ctx.caller(),
                        "tool": ctx.tool_name(),
                        "state": *state,
                        "cancelled": ctx.is_cancelled(),
                        "debug_has_input": format!("{ctx:?}").contains("hidden"),
                    }))
                }),
        )
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let out = tm
        .call(
            "ctx.probe",
            json!({"x": "hidden"}),
            CallOptions::new(Caller::Tour)
                .on_progress(move |p| s.lock().unwrap().push((p.done, p.total))),
        )
        .await;
    assert_eq!(
        ok(&out),
        &json!({"caller": "tour", "tool": "ctx.probe", "state": "app state", "cancelled": false, "debug_has_input": false})
    );
    assert_eq!(*seen.lock().unwrap(), [(1, Some(2))]);
}

#[test]
fn toolmark_is_cheap_to_clone_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Toolmark>();
    assert_send_sync::<toolmark::Scope>();
    assert_send_sync::<toolmark::ToolContext>();
}
