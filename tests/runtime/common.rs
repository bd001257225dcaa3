//! Shared fixtures.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{CallOptions, Caller, Effect, Outcome, RefusalCode, ToolSpec, Toolmark};

pub(crate) fn tm() -> Toolmark {
    Toolmark::builder().build().unwrap()
}

pub(crate) fn as_inapp() -> CallOptions {
    CallOptions::new(Caller::InApp)
}

/// A read tool that returns its input.
pub(crate) fn echo(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("Echo ({name})"))
        .effect(Effect::Read)
        .handler(|_ctx, input| async move { Ok(input) })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Add {
    pub(crate) a: i64,
    pub(crate) b: i64,
}

pub(crate) fn add(name: &str) -> ToolSpec {
    ToolSpec::typed(name, "Add two numbers", |_ctx, i: Add| async move {
        Ok::<_, toolmark::ToolError>(i.a + i.b)
    })
    .effect(Effect::Read)
}

pub(crate) fn code(outcome: &Outcome) -> Option<RefusalCode> {
    outcome.refusal_code()
}

pub(crate) fn names(tm: &Toolmark, caller: Caller) -> Vec<String> {
    tm.manifest(caller).into_iter().map(|t| t.name).collect()
}

/// A log shared by tools and the test.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub(crate) fn get(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub(crate) fn ok(outcome: &Outcome) -> &Value {
    match outcome {
        Outcome::Ok { output } => output,
        other => panic!("expected ok, got {}", serde_json::to_string(other).unwrap()),
    }
}

pub(crate) fn empty() -> Value {
    json!({})
}
