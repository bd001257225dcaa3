//! Hardening, tried as an attacker and a new user would: each test is one finding of
//! the adversarial review, through the public API only (the `#[tool]` macro and
//! `ToolSpec`), with variants beside the reported example.

mod bounds;
mod leaks;
mod limits;

use serde_json::Value;
use toolmark::{CallOptions, Caller, Toolmark};

/// Everything an observer could see of `value`, as JSON text.
pub(crate) fn json_of<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

pub(crate) fn inapp() -> CallOptions {
    CallOptions::new(Caller::InApp)
}

/// A deferred-mode toolmark with the `#[tool]` fns of module `module` registered.
pub(crate) fn with_tools(module: &str) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected_where(|c| c.module_path == module)
        .unwrap();
    tm
}

/// Asserts that `secret` appears in none of `texts`.
pub(crate) fn assert_absent(secret: &str, texts: &[(&str, String)]) {
    for (what, text) in texts {
        assert!(
            !text.contains(secret),
            "secret {secret:?} leaked in {what}: {text}"
        );
    }
}

pub(crate) fn schema_of(tm: &Toolmark, name: &str) -> Value {
    tm.manifest(Caller::InApp)
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} not in the manifest"))
        .input_schema
        .as_ref()
        .clone()
}
