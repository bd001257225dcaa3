//! The in-process surfaces, 10,000 cases: core calls by every caller (deferred and
//! inline confirmation, approval with the placeholder sent back), forms, wizards,
//! and the agent runner on every provider with `record_io`.

use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use toolmark::agent::{AgentOptions, AgentTools, Provider, ToolCallRequest};
use toolmark::{Bridge, Caller, Decision, Events, Outcome, Toolmark};

use crate::app::{app, App, Card, Payment, Signup};
use crate::canary::{self, Canary};
use crate::{plants, runner, Plant};

/// What an observer of `tm` has seen since the last look.
pub(crate) struct Observer {
    events: Events,
    bridge: Bridge,
}

impl Observer {
    pub(crate) fn new(tm: &Toolmark) -> Observer {
        Observer {
            events: tm.events(),
            bridge: tm.bridge(),
        }
    }

    /// Events, bridge messages, the pending list and the tracing capture since the
    /// last look, as text.
    pub(crate) fn take(
        &mut self,
        tm: &Toolmark,
        trace: &canary::Capture,
    ) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(("an event", serde_json::to_string(&e).unwrap()));
            out.push(("an event (Debug)", format!("{e:?}")));
        }
        while let Some(m) = self.bridge.try_recv() {
            out.push(("a bridge message", serde_json::to_string(&m).unwrap()));
            out.push(("a bridge message (Debug)", format!("{m:?}")));
        }
        let pending = tm.pending_confirmations();
        out.push(("the pending list", serde_json::to_string(&pending).unwrap()));
        out.push(("the pending list (Debug)", format!("{pending:?}")));
        out.push(("tracing at TRACE", trace.take()));
        out
    }
}

/// Fails the case on the first leak in `seen`.
pub(crate) fn check(c: &Canary, seen: &[(&str, String)]) -> Result<(), TestCaseError> {
    for (what, text) in seen {
        c.check(what, text).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

/// An outcome as an observer reads it (JSON and `Debug`).
pub(crate) fn outcome_text(out: &Outcome) -> Vec<(&'static str, String)> {
    vec![
        ("an outcome", serde_json::to_string(out).unwrap()),
        ("an outcome (Debug)", format!("{out:?}")),
    ]
}

fn caller_of(p: Plant) -> Caller {
    [Caller::InApp, Caller::Mcp, Caller::Human, Caller::Test][usize::from(p.pick) % 4]
}

/// `vault.pay` (and `note`, `labels`) called by any caller; a deferred one
/// answered with the redacted input sent back, or an edit.
async fn core_call(
    app: &App,
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let tm = &app.tm;
    let mut seen = Vec::new();
    let number = c.variant(p.kind.wrapping_add(1));
    let holder = if p.pick.is_multiple_of(7) {
        "fail"
    } else {
        "Ada"
    };
    let caller = caller_of(p);
    let out = tm
        .call(
            "vault.pay",
            p.pay_input(holder, secret, &number),
            app.seen.options(caller),
        )
        .await;
    seen.extend(outcome_text(&out));
    if let Some(id) = out.confirm_id() {
        // The approver sends back what it was shown, or edits a field.
        let shown = tm
            .pending_confirmations()
            .into_iter()
            .find(|pc| pc.confirm_id == id)
            .map(|pc| pc.input);
        let decision = match (p.pick % 3, shown) {
            (0, Some(input)) => Decision::approve_with(input),
            (1, _) => Decision::reject_with("no"),
            _ => Decision::approve(),
        };
        let done = tm.confirm_pending(id, decision).await;
        seen.extend(outcome_text(&done));
    }
    let note = tm
        .call(
            "vault.note",
            json!({"title": "t", "secret": secret}),
            app.seen.options(caller),
        )
        .await;
    seen.extend(outcome_text(&note));
    // A map whose keys and values are secret, and a wrong type under the secret.
    let labels = tm
        .call(
            "vault.labels",
            json!({"labels": {secret: number.clone(), "x": 5}}),
            app.seen.options(caller),
        )
        .await;
    seen.extend(outcome_text(&labels));
    let wrong = tm
        .call(
            "vault.pay",
            json!({"holder": 1, p.cvc_key(): secret, "cards": [{"label": 2, "number": secret}]}),
            app.seen.options(caller),
        )
        .await;
    seen.extend(outcome_text(&wrong));
    seen
}

/// The signup form: a fill with the secrets, an agent's submit (deferred or
/// inline), its approval.
async fn form(app: &App, p: Plant, c: &mut Canary, secret: &str) -> Vec<(&'static str, String)> {
    let tm = &app.tm;
    let mut seen = Vec::new();
    let number = c.variant(p.kind.wrapping_add(3));
    let caller = caller_of(p);
    if p.pick.is_multiple_of(2) {
        // Filled by the agent.
        let out = tm
            .call(
                "signup.fill",
                json!({"name": "Ada", "card": {"number": number, "cvc": secret}}),
                app.seen.options(caller),
            )
            .await;
        seen.extend(outcome_text(&out));
    } else {
        // Typed by the user.
        app.signup.set(Signup {
            name: "Ada".to_owned(),
            card: Some(Card {
                number: number.clone(),
                cvc: secret.to_owned(),
            }),
        });
    }
    // A fill that fails to decode, next to the secrets typed before.
    let bad = tm
        .call(
            "signup.fill",
            json!({"card": {"number": 5}}),
            app.seen.options(caller),
        )
        .await;
    seen.extend(outcome_text(&bad));
    let out = tm
        .call("signup.submit", json!({}), app.seen.options(caller))
        .await;
    seen.extend(outcome_text(&out));
    if let Some(id) = out.confirm_id() {
        let done = tm.confirm_pending(id, Decision::approve()).await;
        seen.extend(outcome_text(&done));
    }
    seen
}

/// The checkout wizard: the payment step filled (or typed), `next` (its validator
/// quotes a value it refuses), `submit`.
async fn wizard(app: &App, p: Plant, _c: &mut Canary, secret: &str) -> Vec<(&'static str, String)> {
    let tm = &app.tm;
    let mut seen = Vec::new();
    app.wizard.go_to("payment");
    let caller = caller_of(p);
    let refused = p.pick.is_multiple_of(3);
    let card = if refused {
        format!("{secret}!")
    } else {
        secret.to_owned()
    };
    if p.pick.is_multiple_of(2) {
        let out = tm
            .call(
                "checkout.payment.fill",
                json!({"card": card}),
                app.seen.options(caller),
            )
            .await;
        seen.extend(outcome_text(&out));
    } else {
        app.payment.set(Payment { card });
    }
    let next = tm
        .call("checkout.next", json!({}), app.seen.options(caller))
        .await;
    seen.extend(outcome_text(&next));
    let submit = tm
        .call("checkout.submit", json!({}), app.seen.options(caller))
        .await;
    seen.extend(outcome_text(&submit));
    if let Some(id) = submit.confirm_id() {
        let done = tm.confirm_pending(id, Decision::approve()).await;
        seen.extend(outcome_text(&done));
    }
    let back = tm
        .call("checkout.back", json!({}), app.seen.options(caller))
        .await;
    seen.extend(outcome_text(&back));
    seen
}

/// The agent runner with `record_io`, on the provider this plant picks, calling
/// `vault.pay` with the cvc under the plant's key; then the bridge's message for
/// it.
async fn agent(
    app: &App,
    agents: &[AgentTools],
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let tm = &app.tm;
    let mut seen = Vec::new();
    let agent = &agents[usize::from(p.pick) % agents.len()];
    let mut bridge = tm.bridge();
    let name = agent
        .tool_list()
        .names()
        .to_provider("vault.pay")
        .unwrap()
        .to_owned();
    let number = c.variant(p.kind.wrapping_add(2));
    let holder = if p.pick.is_multiple_of(5) {
        "fail"
    } else {
        "Ada"
    };
    let run = agent
        .run_calls(vec![ToolCallRequest {
            id: Some(format!("call_{}", p.pick)),
            name,
            arguments: Ok(p.pay_input(holder, secret, &number)),
        }])
        .await;
    for call in &run.calls {
        seen.extend(outcome_text(&call.outcome));
        seen.push(("a provider result", call.result.to_string()));
    }
    seen.push((
        "the provider messages",
        Value::Array(run.messages.clone()).to_string(),
    ));
    if let Some(id) = run.calls[0].outcome.confirm_id() {
        tm.confirm_pending(id, Decision::approve()).await;
        while let Some(msg) = bridge.try_recv() {
            if let Some(m) = agent.bridge_message(&msg) {
                seen.push(("a bridge message for the model", m.to_string()));
            }
        }
    }
    seen
}

#[test]
fn core_surfaces() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let app = rt.block_on(async { app(Toolmark::builder().scrub_panics(true)) });
    let agents: Vec<AgentTools> = Provider::ALL
        .into_iter()
        .map(|provider| {
            AgentTools::with_options(
                &app.tm,
                provider,
                AgentOptions {
                    record_io: true,
                    strict: provider == Provider::OpenAiChat,
                    ..AgentOptions::default()
                },
            )
        })
        .collect();
    let observer = std::cell::RefCell::new(rt.block_on(async { Observer::new(&app.tm) }));
    let _ = trace.take();
    let mut run = runner(10_000);
    let result = run.run(&(plants(), 0u8..4), |(p, surface)| {
        let (mut c, secret) = p.canary();
        let mut seen = rt.block_on(async {
            match surface {
                0 => core_call(&app, p, &mut c, &secret).await,
                1 => form(&app, p, &mut c, &secret).await,
                2 => wizard(&app, p, &mut c, &secret).await,
                _ => agent(&app, &agents, p, &mut c, &secret).await,
            }
        });
        seen.extend(app.seen.take());
        seen.extend(rt.block_on(async { observer.borrow_mut().take(&app.tm, &trace) }));
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_canary_finds_a_secret_that_reaches_an_observer() {
    // The harness itself: a tool without sensitive paths echoes a planted secret,
    // and the check must see it in the outcome and in the trace.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    rt.block_on(async {
        let tm = Toolmark::builder().build().unwrap();
        tm.register(
            toolmark::ToolSpec::new("leak", "Leaks")
                .effect(toolmark::Effect::Read)
                .handler(|_ctx, input| async move {
                    tracing::info!(target: "app", "got {input}");
                    Ok(input)
                }),
            Default::default(),
        )
        .unwrap();
        let mut c = Canary::new();
        let s = c.secret();
        let out = tm
            .call(
                "leak",
                json!({"x": s}),
                toolmark::CallOptions::new(Caller::InApp),
            )
            .await;
        assert!(c
            .check("outcome", serde_json::to_string(&out).unwrap())
            .is_err());
        assert!(c.check("trace", trace.take()).is_err());
    });
}
