//! No value a tool's decode reads may lie outside what redaction sees: a key the
//! input schema does not list (a serde alias, a case variant, a key a flattened or
//! tagged type would read) is refused `invalid` at every depth for a tool with
//! sensitive paths, and the secret it carries reaches nobody.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{
    tool, CallOptions, Caller, ConfirmRequest, Decision, Effect, Outcome, RefusalCode, ToolSpec,
    Toolmark,
};

use crate::capture::{Capture, Logs};

/// What every observer of one toolmark saw: outcomes, the pending list, inline
/// requests, events, bridge messages and logs, as one text.
pub(crate) struct Observed {
    pub(crate) tm: Toolmark,
    pub(crate) shown: Arc<Mutex<Vec<ConfirmRequest>>>,
    pub(crate) events: toolmark::Events,
    pub(crate) bridge: toolmark::Bridge,
    pub(crate) logs: Logs,
    pub(crate) text: String,
}

impl Observed {
    /// A toolmark whose inline handler approves (recording what it was shown).
    pub(crate) fn new(
        logs: Logs,
        build: impl FnOnce(toolmark::ToolmarkBuilder) -> Toolmark,
    ) -> Self {
        let shown: Arc<Mutex<Vec<ConfirmRequest>>> = Arc::default();
        let record = shown.clone();
        let tm = build(
            Toolmark::builder().confirm_handler(move |req: ConfirmRequest| {
                record.lock().unwrap().push(req);
                async { Decision::approve() }
            }),
        );
        let events = tm.events();
        let bridge = tm.bridge();
        Observed {
            tm,
            shown,
            events,
            bridge,
            logs,
            text: String::new(),
        }
    }

    /// Call `name` with `input` as `caller`, and record everything seen.
    pub(crate) async fn call(&mut self, name: &str, input: Value, caller: Caller) -> Outcome {
        let out = self.tm.call(name, input, CallOptions::new(caller)).await;
        self.note(&out);
        if let Some(id) = out.confirm_id() {
            let approved = self.tm.confirm_pending(id, Decision::approve()).await;
            self.note(&approved);
        }
        out
    }

    fn note(&mut self, out: &Outcome) {
        use std::fmt::Write as _;
        let _ = write!(
            self.text,
            "\n{out:?}\n{}",
            serde_json::to_string(out).unwrap()
        );
        for p in self.tm.pending_confirmations() {
            let _ = write!(self.text, "\n{p:?}\n{}", serde_json::to_string(&p).unwrap());
        }
    }

    /// Everything seen so far, events, bridge, requests and logs included.
    pub(crate) fn all(&mut self) -> String {
        use std::fmt::Write as _;
        let mut text = std::mem::take(&mut self.text);
        for r in self.shown.lock().unwrap().drain(..) {
            let _ = write!(text, "\n{r:?}\n{}", serde_json::to_string(&r).unwrap());
        }
        while let Ok(e) = self.events.try_recv() {
            let _ = write!(text, "\n{e:?}");
        }
        while let Some(m) = self.bridge.try_recv() {
            let _ = write!(text, "\n{m:?}");
        }
        text.push_str(&self.logs.text());
        text
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Card {
    pub(crate) holder: String,
    #[serde(alias = "cvv")]
    pub(crate) cvc: String,
}

/// Pay with a card.
#[tool(consequential, sensitive = "cvc", summary = "Pay {holder} (cvc {cvc})")]
pub(crate) async fn pay(input: Card) -> Result<String, String> {
    Err(format!("declined: cvc {} for {}", input.cvc, input.holder))
}

fn typed_pay() -> ToolSpec {
    ToolSpec::typed("pay", "Pay with a card", |_ctx, card: Card| async move {
        Err::<String, _>(toolmark::ToolError::new(format!(
            "declined: cvc {} for {}",
            card.cvc, card.holder
        )))
    })
    .effect(Effect::Consequential)
    .sensitive(["cvc"])
    .summary("Pay {holder} (cvc {cvc})")
}

fn with_macro(b: toolmark::ToolmarkBuilder) -> Toolmark {
    let tm = b.build().unwrap();
    tm.register_collected_where(|c| c.module_path == "sensitive::keys")
        .unwrap();
    tm
}

fn with_typed(b: toolmark::ToolmarkBuilder) -> Toolmark {
    let tm = b.build().unwrap();
    tm.register(typed_pay(), Default::default()).unwrap();
    tm
}

fn assert_unknown_field(out: &Outcome, path: &str) {
    let r = out
        .refusal()
        .unwrap_or_else(|| panic!("expected a refusal, got {out:?}"));
    assert_eq!(r.code, RefusalCode::Invalid, "{out:?}");
    assert!(
        r.issues
            .iter()
            .any(|i| i.path == path && i.message == "unknown field"),
        "{out:?}"
    );
}

#[tokio::test]
async fn an_alias_key_is_refused_and_its_secret_reaches_nobody() {
    let (capture, logs) = Capture::new();
    let _guard = crate::logs::scoped(capture);
    for build in [with_macro as fn(_) -> _, with_typed] {
        for allow_unknown in [false, true] {
            let mut seen = Observed::new(logs.clone(), |b| {
                build(b.allow_unknown_fields(allow_unknown))
            });
            let input = json!({"holder": "Ada", "cvv": "S3CRET"});
            for caller in [Caller::Mcp, Caller::InApp] {
                let out = seen.call("pay", input.clone(), caller).await;
                assert_unknown_field(&out, "cvv");
            }
            assert!(seen.tm.pending_confirmations().is_empty());
            let all = seen.all();
            assert!(!all.contains("S3CRET"), "{all}");
            // The listed key still works and is redacted as before.
            let out = seen
                .call(
                    "pay",
                    json!({"holder": "Ada", "cvc": "S3CRET"}),
                    Caller::Mcp,
                )
                .await;
            assert!(matches!(out, Outcome::Error(_)), "{out:?}");
            let all = seen.all();
            assert!(all.contains("declined: cvc [redacted] for Ada"), "{all}");
            assert!(!all.contains("S3CRET"), "{all}");
        }
    }
}
