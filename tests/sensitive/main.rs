//! The sensitive-value rules of seeds/confirmation-modes.txt, end to end: what an
//! approver or observer receives never holds a secret, and what a tool receives
//! never holds a placeholder.

mod caps;
mod capture;
#[path = "../support/fixtures.rs"]
mod fixtures;
mod key_props;
mod keys;
#[path = "../support/logs.rs"]
mod logs;
mod maps;
mod payloads;
mod properties;
mod registration;
mod restore;
#[path = "../support/stores.rs"]
mod stores;

pub(crate) use stores::{on_every_store, Store};

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{CallOptions, Caller, ConfirmRequest, Decision, Outcome, ToolSpec, Toolmark};

pub(crate) const REDACTED: &str = "[redacted]";

/// A consequential "pay" tool whose cards' cvc (and the pin) are sensitive; it
/// records every input it runs with.
pub(crate) fn pay(seen: &Arc<Mutex<Vec<Value>>>) -> ToolSpec {
    fixtures::pay_with(seen, |_| json!("paid"))
}

pub(crate) fn input() -> Value {
    json!({
        "title": "Robotics",
        "pin": "pin-9876",
        "cards": [
            {"number": "4242", "cvc": "cvc-111"},
            {"number": "5555", "cvc": "cvc-222"}
        ]
    })
}

pub(crate) fn redacted_input() -> Value {
    json!({
        "title": "Robotics",
        "pin": REDACTED,
        "cards": [
            {"number": "4242", "cvc": REDACTED},
            {"number": "5555", "cvc": REDACTED}
        ]
    })
}

pub(crate) fn seen() -> Arc<Mutex<Vec<Value>>> {
    Arc::new(Mutex::new(Vec::new()))
}

pub(crate) fn deferred_tm(seen: &Arc<Mutex<Vec<Value>>>) -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(pay(seen), Default::default()).unwrap();
    tm
}

/// [`deferred_tm`] on a fresh `store`, or `None` (Redis absent outside CI: skip).
pub(crate) async fn deferred_on(store: Store, seen: &Arc<Mutex<Vec<Value>>>) -> Option<Toolmark> {
    let tm = store.build(Toolmark::builder()).await?;
    tm.register(pay(seen), Default::default()).unwrap();
    Some(tm)
}

/// A toolmark whose inline handler answers with `answer(request)`, recording the
/// requests it was shown.
pub(crate) fn inline_tm(
    seen: &Arc<Mutex<Vec<Value>>>,
    shown: &Arc<Mutex<Vec<ConfirmRequest>>>,
    answer: impl Fn(&ConfirmRequest) -> Decision + Send + Sync + 'static,
) -> Toolmark {
    let shown = shown.clone();
    let tm = Toolmark::builder()
        .confirm_handler(move |req: ConfirmRequest| {
            let decision = answer(&req);
            shown.lock().unwrap().push(req);
            async move { decision }
        })
        .build()
        .unwrap();
    tm.register(pay(seen), Default::default()).unwrap();
    tm
}

pub(crate) fn inapp() -> CallOptions {
    CallOptions::new(Caller::InApp)
}

pub(crate) fn json_of<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_string(t).unwrap()
}

pub(crate) fn issues_of(o: &Outcome) -> Vec<(String, String)> {
    o.refusal()
        .map(|r| {
            r.issues
                .iter()
                .map(|i| (i.path.clone(), i.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}
