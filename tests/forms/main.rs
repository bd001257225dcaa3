//! Forms, wizards and undo (§8): `Form<T>`, `register_form` (fill as a JSON merge
//! patch, submit, `stale`), the sensitive paths of forms in confirmation payloads,
//! wizards, and `tm.undo()`. Time rules run on tokio's paused clock.

#[path = "../support/stores.rs"]
mod stores;

mod fill;
mod leaks;
mod payloads;
mod submit;
mod undo;
mod wizard;

use std::sync::{Arc, Mutex};

pub(crate) use stores::{on_every_store, Store};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolmark::{
    CallOptions, Caller, Form, FormOptions, Issue, OnSubmit, Outcome, RefusalCode, ToolError,
    Toolmark,
};

/// A signup form's values: `name` is required in the JSON form, the rest optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Signup {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) email: String,
    #[serde(default)]
    pub(crate) age: Option<u32>,
    #[serde(default)]
    pub(crate) card: Option<Card>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Card {
    pub(crate) number: String,
    pub(crate) cvc: String,
}

/// Complete when there is a name and the email has an `@`.
pub(crate) fn signup_form() -> Form<Signup> {
    Form::with_validator(Signup::default(), |s: &Signup| {
        let mut issues = Vec::new();
        if s.name.is_empty() {
            issues.push(Issue::new("name", "required"));
        }
        if !s.email.contains('@') {
            issues.push(Issue::new("email", "must be an email address"));
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(issues)
        }
    })
}

pub(crate) fn ada() -> Signup {
    Signup {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
        age: Some(36),
        card: Some(Card {
            number: "4242424242424242".to_owned(),
            cvc: "737".to_owned(),
        }),
    }
}

/// Everything `on_submit` was called with.
#[derive(Clone, Default)]
pub(crate) struct Submitted(Arc<Mutex<Vec<(Caller, Signup)>>>);

impl Submitted {
    pub(crate) fn get(&self) -> Vec<(Caller, Signup)> {
        self.0.lock().unwrap().clone()
    }

    /// An `on_submit` that records the caller and values and returns the name.
    pub(crate) fn on_submit(&self) -> OnSubmit<Signup> {
        let log = self.0.clone();
        OnSubmit::new(move |ctx, values: Signup| {
            let log = log.clone();
            async move {
                let name = values.name.clone();
                log.lock().unwrap().push((ctx.caller(), values));
                Ok::<_, ToolError>(json!({"welcome": name}))
            }
        })
    }
}

/// The signup form registered in scope `signup` with `card.cvc` and `card.number`
/// sensitive and a recording `on_submit`.
pub(crate) fn signup(tm: &Toolmark) -> (Form<Signup>, Submitted) {
    let form = signup_form();
    let submitted = Submitted::default();
    tm.register_form(
        &tm.scope("signup"),
        form.clone(),
        FormOptions {
            sensitive: vec!["card.cvc".into(), "card.number".into()],
            on_submit: Some(submitted.on_submit()),
            ..Default::default()
        },
    )
    .unwrap();
    (form, submitted)
}

pub(crate) fn tm() -> Toolmark {
    Toolmark::builder().build().unwrap()
}

pub(crate) fn opts(caller: Caller) -> CallOptions {
    CallOptions::new(caller)
}

pub(crate) fn code(o: &Outcome) -> Option<RefusalCode> {
    o.refusal_code()
}

pub(crate) fn json_of<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

/// The JSON text of `v` without its random or time-dependent fields (`confirmId`,
/// `expiresAt`, `durationMs`), to search for leaked secrets without false alarms.
pub(crate) fn public_text<T: Serialize>(v: &T) -> String {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("confirmId");
                map.remove("expiresAt");
                map.remove("confirm_id");
                map.remove("expires_at");
                map.remove("durationMs");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = json_of(v);
    strip(&mut v);
    v.to_string()
}

pub(crate) fn names(tm: &Toolmark, caller: Caller) -> Vec<String> {
    tm.manifest(caller).into_iter().map(|t| t.name).collect()
}

pub(crate) fn issues(o: &Outcome) -> Vec<(String, String)> {
    o.refusal()
        .map(|r| {
            r.issues
                .iter()
                .map(|i| (i.path.clone(), i.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}
