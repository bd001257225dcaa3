//! Approvals: the deferred flow (an in-app agent, the bridge) and the inline flow
//! (an MCP-style caller waiting on a ConfirmQueue the UI renders), with a secret
//! that never reaches the approver.
//!
//! Run it with `cargo run --example approvals`.

use serde_json::json;
use toolmark::{
    tool, BridgeMessage, CallOptions, Caller, ConfirmQueue, Decision, ToolError, Toolmark,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    payee: String,
    amount_cents: u64,
    card: Card,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Card {
    number: String,
    cvc: String,
}

/// Pay someone with a card.
#[tool(
    scope = "billing",
    consequential,
    sensitive = "card.cvc",
    summary = "Pay {payee} {amount_cents} cents"
)]
async fn pay(input: Payment) -> Result<String, ToolError> {
    let last4 = &input.card.number[input.card.number.len().saturating_sub(4)..];
    // The real secret arrives here, never "[redacted]".
    assert_ne!(input.card.cvc, "[redacted]");
    Ok(format!(
        "paid {} cents to {} with card …{last4}",
        input.amount_cents, input.payee
    ))
}

fn payment(payee: &str) -> serde_json::Value {
    json!({"payee": payee, "amount_cents": 1250, "card": {"number": "4242424242424242", "cvc": "737"}})
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let queue = ConfirmQueue::new();
    let tm = Toolmark::builder()
        .confirm_handler(queue.handler())
        .build()?;
    tm.register_collected()?;

    // ── Deferred: the in-app agent gets needs_confirmation at once ──────────────
    println!("Deferred (in-app agent):");
    let mut bridge = tm.bridge();
    let out = tm
        .call(
            "billing.pay",
            payment("Ada"),
            CallOptions::new(Caller::InApp),
        )
        .await;
    println!("  agent gets:   {}", serde_json::to_string(&out)?);
    for p in tm.pending_confirmations() {
        println!("  app renders:  \"{}\" input {}", p.summary, p.input);
    }
    // The user edits the payee and approves; the cvc placeholder is restored.
    let mut edited = tm.pending_confirmations()[0].input.clone();
    edited["payee"] = json!("Ada Lovelace");
    let id = out.confirm_id().unwrap().to_owned();
    let ran = tm
        .confirm_pending(&id, Decision::approve_with(edited))
        .await;
    println!("  approved:     {}", serde_json::to_string(&ran)?);
    if let Some(BridgeMessage::Confirmed { outcome, .. }) = bridge.recv().await {
        println!(
            "  bridge:       the agent learns {}",
            serde_json::to_string(&outcome)?
        );
    }

    // ── Inline: an MCP client's call stays open while the UI asks ────────────────
    println!("\nInline (MCP client):");
    let mut updates = queue.subscribe();
    let call = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call(
                "billing.pay",
                payment("Grace"),
                CallOptions::new(Caller::Mcp),
            )
            .await
        }
    });
    let request = updates.wait_for(|p| !p.is_empty()).await?[0].clone();
    println!(
        "  UI renders:   \"{}\" input {}",
        request.summary, request.input
    );
    queue.approve(&request.confirm_id, None)?;
    println!("  MCP client:   {}", serde_json::to_string(&call.await?)?);

    // A rejection's reason reaches the agent.
    let call = tokio::spawn({
        let tm = tm.clone();
        async move {
            tm.call(
                "billing.pay",
                payment("Mallory"),
                CallOptions::new(Caller::Mcp),
            )
            .await
        }
    });
    let request = updates.wait_for(|p| !p.is_empty()).await?[0].clone();
    queue.reject_with(&request.confirm_id, "Unknown payee")?;
    println!("  rejected:     {}", serde_json::to_string(&call.await?)?);
    Ok(())
}
