//! Forms, wizards and undo, step by step: an in-app agent fills a profile form (and
//! the user undoes it), then walks a two-step signup wizard whose submit needs the
//! user's confirmation — once refused `stale` because the user edited the form in the
//! meantime, then approved.
//!
//! Run it with `cargo run --example form_wizard`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolmark::{
    CallOptions, Caller, Decision, Form, FormOptions, Issue, Outcome, StepOptions, ToolError,
    Toolmark, Wizard,
};

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Profile {
    name: String,
    #[serde(default)]
    bio: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Details {
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Payment {
    #[serde(default)]
    card_number: String,
    #[serde(default)]
    cvc: String,
}

fn show(what: &str, outcome: &Outcome) {
    let v = serde_json::to_value(outcome).unwrap_or(Value::Null);
    let status = v["status"].as_str().unwrap_or("?");
    match status {
        "ok" => println!("  {what}: ok → {}", v["output"]),
        "needs_confirmation" => {
            println!("  {what}: needs confirmation: {}", v["summary"]);
            for change in v["changes"].as_array().into_iter().flatten() {
                println!(
                    "      {} = {}",
                    change["path"].as_str().unwrap_or(""),
                    change["after"]
                );
            }
        }
        "refused" => {
            let code = v["code"].as_str().unwrap_or("?");
            println!(
                "  {what}: refused {code} — {}",
                v["message"].as_str().unwrap_or("")
            );
        }
        _ => println!("  {what}: {v}"),
    }
}

fn manifest(tm: &Toolmark) -> String {
    let names: Vec<String> = tm
        .manifest(Caller::InApp)
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.join(", ")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tm = Toolmark::builder().build()?;
    let agent = CallOptions::new(Caller::InApp);

    // 1. A plain form: the agent fills it, the user undoes the fill.
    println!("1. A profile form the user and the agent both edit");
    let profile = Form::new(Profile {
        name: "Ada".into(),
        bio: None,
    });
    tm.register_form(
        &tm.scope("profile"),
        profile.clone(),
        FormOptions::default(),
    )?;
    println!("  tools: {}", manifest(&tm));
    let out = tm
        .call(
            "profile.fill",
            json!({"bio": "Wrote the first program"}),
            agent.clone(),
        )
        .await;
    show("agent fills the bio (a JSON merge patch)", &out);
    let out = tm
        .call("profile.fill", json!({"name": null}), agent.clone())
        .await;
    show("agent clears the required name", &out);
    println!(
        "  the form now: {:?} (version {})",
        profile.values(),
        profile.version()
    );
    if let Some(out) = tm.undo().await {
        show("user presses undo", &out);
    }
    println!(
        "  the form now: {:?} (version {})",
        profile.values(),
        profile.version()
    );

    // 2. A wizard: details, then payment.
    println!("\n2. A signup wizard: details → payment → submit");
    let details = Form::with_validator(Details::default(), |d: &Details| {
        if d.email.contains('@') {
            Ok(())
        } else {
            Err(vec![Issue::new("email", "must be an email address")])
        }
    });
    let payment = Form::new(Payment::default());
    let wizard = Wizard::new()
        .step("details", details.clone(), StepOptions::default())
        .step(
            "payment",
            payment.clone(),
            StepOptions {
                sensitive: vec!["card_number".into(), "cvc".into()],
                ..Default::default()
            },
        )
        .on_submit(|ctx, values| async move {
            let details: &Details = values.get("details").ok_or("no details step")?;
            println!(
                "  >> on_submit runs as {} for {}",
                ctx.caller(),
                details.email
            );
            Ok::<_, ToolError>(json!({"account": details.email}))
        });
    tm.register_wizard(&tm.scope("signup"), wizard.clone())?;
    println!(
        "  current step: {}; tools: {}",
        wizard.current(),
        manifest(&tm)
    );

    let out = tm
        .call("signup.payment.fill", json!({"cvc": "737"}), agent.clone())
        .await;
    show("agent fills a step that is not current", &out);
    let out = tm.call("signup.next", json!({}), agent.clone()).await;
    show("agent moves on too early", &out);
    let out = tm
        .call(
            "signup.details.fill",
            json!({"name": "Ada", "email": "ada@example.com"}),
            agent.clone(),
        )
        .await;
    show("agent fills the details", &out);
    let out = tm.call("signup.next", json!({}), agent.clone()).await;
    show("agent moves on", &out);
    println!(
        "  current step: {}; tools: {}",
        wizard.current(),
        manifest(&tm)
    );
    let out = tm
        .call(
            "signup.payment.fill",
            json!({"card_number": "4242424242424242", "cvc": "737"}),
            agent.clone(),
        )
        .await;
    show("agent fills the payment (secrets stay redacted)", &out);

    let out = tm.call("signup.submit", json!({}), agent.clone()).await;
    show("agent submits", &out);
    let first = out.confirm_id().unwrap_or_default().to_owned();
    println!("  (meanwhile the user fixes a typo in the email)");
    details.update(|d| d.email = "ada@lovelace.org".into());
    let out = tm.confirm_pending(&first, Decision::approve()).await;
    show("user approves the old request", &out);

    let out = tm.call("signup.submit", json!({}), agent.clone()).await;
    show("agent submits again", &out);
    let second = out.confirm_id().unwrap_or_default().to_owned();
    let out = tm.confirm_pending(&second, Decision::approve()).await;
    show("user approves", &out);
    Ok(())
}
