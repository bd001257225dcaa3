//! The app every canary case drives: tools whose inputs hold secrets (at sensitive
//! paths, under a serde alias, as map keys, in rows), a form and a wizard with
//! sensitive fields, all of them careless enough to echo what they get.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolmark::{
    CallOptions, Caller, ConfirmRequest, Decision, Effect, Form, FormOptions, Issue, LogLevel,
    OnSubmit, StepOptions, ToolContext, ToolError, ToolSpec, Toolmark, ToolmarkBuilder, Wizard,
};

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Pay {
    pub(crate) holder: String,
    #[serde(alias = "security_code")]
    pub(crate) cvc: String,
    #[serde(default)]
    pub(crate) cards: Vec<Row>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Row {
    pub(crate) label: String,
    #[serde(alias = "pan")]
    pub(crate) number: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Note {
    pub(crate) title: String,
    pub(crate) secret: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Labels {
    /// Names to values; both are secret.
    pub(crate) labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Signup {
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) card: Option<Card>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Card {
    pub(crate) number: String,
    pub(crate) cvc: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Payment {
    #[serde(default)]
    pub(crate) card: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Done {
    #[serde(default)]
    pub(crate) note: String,
}

/// Everything the app's confirm handler was shown, and the log sink's messages.
#[derive(Clone, Default)]
pub(crate) struct Seen {
    pub(crate) requests: Arc<Mutex<Vec<ConfirmRequest>>>,
    pub(crate) logs: Arc<Mutex<Vec<String>>>,
}

impl Seen {
    /// What was seen since the last call, as text, and forget it.
    pub(crate) fn take(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for r in std::mem::take(&mut *self.requests.lock().unwrap()) {
            out.push(("a confirm request", serde_json::to_string(&r).unwrap()));
            out.push(("a confirm request (Debug)", format!("{r:?}")));
        }
        for l in std::mem::take(&mut *self.logs.lock().unwrap()) {
            out.push(("a log message", l));
        }
        out
    }

    /// Call options for `caller` with the log sink.
    pub(crate) fn options(&self, caller: Caller) -> CallOptions {
        let logs = self.logs.clone();
        CallOptions::new(caller).on_log(move |m| logs.lock().unwrap().push(format!("{m:?}")))
    }
}

/// The app: its toolmark, its form and wizard, what it was shown.
pub(crate) struct App {
    pub(crate) tm: Toolmark,
    pub(crate) signup: Form<Signup>,
    pub(crate) payment: Form<Payment>,
    pub(crate) wizard: Wizard,
    pub(crate) seen: Seen,
}

async fn echo_pay(ctx: ToolContext, p: Pay) -> Result<Value, ToolError> {
    ctx.log(LogLevel::Info, format!("paying with {}", p.cvc));
    if p.holder == "fail" {
        return Err(ToolError::new(format!("card {} declined", p.cvc))
            .with_issues(vec![Issue::new("cvc", format!("{} is wrong", p.cvc))]));
    }
    Ok(json!({"paid": p.holder, "echo": p, "note": format!("cvc was {}", p.cvc)}))
}

/// Build the app on `builder` (its confirm handler is set here: it approves and
/// records what it was shown).
pub(crate) fn app(builder: ToolmarkBuilder) -> App {
    let seen = Seen::default();
    let requests = seen.requests.clone();
    let tm = builder
        .confirm_handler(move |req: ConfirmRequest| {
            requests.lock().unwrap().push(req);
            async { Decision::approve() }
        })
        .build()
        .unwrap();
    let vault = tm.scope("vault");
    vault
        .register(
            ToolSpec::typed("pay", "Pay with a card", echo_pay)
                .effect(Effect::Consequential)
                .sensitive(["cvc", "cards[].number"])
                .summary("Pay for {holder} (cvc {cvc})"),
        )
        .unwrap();
    vault
        .register(
            ToolSpec::typed("note", "Keep a note", |_ctx, n: Note| async move {
                Ok::<_, ToolError>(format!("noted {}: {}", n.title, n.secret))
            })
            .effect(Effect::Write)
            .sensitive(["secret"]),
        )
        .unwrap();
    vault
        .register(
            ToolSpec::typed("labels", "Set labels", |_ctx, l: Labels| async move {
                Ok::<_, ToolError>(json!({"set": l.labels}))
            })
            .effect(Effect::Consequential)
            .sensitive(["labels"]),
        )
        .unwrap();

    let signup = Form::new(Signup::default());
    tm.register_form(
        &tm.scope("signup"),
        signup.clone(),
        FormOptions {
            sensitive: vec!["card.number".into(), "card.cvc".into()],
            on_submit: Some(OnSubmit::new(|_ctx, v: Signup| async move {
                Ok::<_, ToolError>(json!({"saved": v}))
            })),
            ..Default::default()
        },
    )
    .unwrap();

    let payment = Form::with_validator(Payment::default(), |p: &Payment| {
        if p.card.ends_with('!') {
            Err(vec![Issue::new(
                "card",
                format!("{} is not a card number", p.card),
            )])
        } else {
            Ok(())
        }
    });
    let wizard = Wizard::new()
        .step(
            "payment",
            payment.clone(),
            StepOptions {
                sensitive: vec!["card".into()],
                ..Default::default()
            },
        )
        .step("done", Form::new(Done::default()), StepOptions::default())
        .on_submit(|_ctx, values| async move { Ok::<_, ToolError>(values.json().clone()) });
    tm.register_wizard(&tm.scope("checkout"), wizard.clone())
        .unwrap();
    App {
        tm,
        signup,
        payment,
        wizard,
        seen,
    }
}
