//! Property tests over random inputs, sensitive-path sets and approver edits,
//! through the public API: no secret in any payload toward an approver or an
//! observer; "[redacted]" never reaches a tool; an approval that edits nothing
//! restores exactly the original input.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{json, Value};
use toolmark::{CallOptions, Caller, ConfirmRequest, Decision, Effect, ToolSpec, Toolmark};

/// Cards with unique secret markers; other fields public.
fn cards() -> impl Strategy<Value = Vec<(String, u32)>> {
    prop::collection::vec(("[0-9]{4}", 0u32..1000), 0..5)
}

fn build_input(cards: &[(String, u32)], title: &str) -> (Value, Vec<String>) {
    let mut secrets = Vec::new();
    let cards: Vec<Value> = cards
        .iter()
        .enumerate()
        .map(|(i, (number, n))| {
            let cvc = format!("SECRET-CVC-{i}-{n}");
            secrets.push(cvc.clone());
            json!({"number": number, "cvc": cvc, "meta": {"nick": format!("card {i}")}})
        })
        .collect();
    let pin = format!("SECRET-PIN-{}", cards.len());
    secrets.push(pin.clone());
    (json!({"title": title, "pin": pin, "cards": cards}), secrets)
}

type Seen = Arc<Mutex<Vec<Value>>>;

fn tool(seen: &Seen, paths: Vec<&'static str>) -> ToolSpec {
    let seen = seen.clone();
    ToolSpec::new("pay", "Pay")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "pin": {"type": "string"},
                "cards": {"type": "array", "items": {"type": "object", "properties": {
                    "number": {"type": "string"},
                    "cvc": {"type": "string"},
                    "meta": {"type": "object", "properties": {"nick": {"type": "string"}}}
                }}}
            }
        }))
        .effect(Effect::Consequential)
        .sensitive(paths)
        .summary("{title} {pin}")
        .handler(move |_ctx, input| {
            let seen = seen.clone();
            async move {
                if input.to_string().contains("[redacted]") {
                    return Err(toolmark::ToolError::new("a placeholder reached the tool"));
                }
                let message = format!("declined: {}", input["pin"]);
                seen.lock().unwrap().push(input);
                Err(toolmark::ToolError::new(message))
            }
        })
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, .. ProptestConfig::default() })]

    #[test]
    fn no_secret_reaches_an_approver_or_observer(cards in cards(), title in "[a-z ]{0,12}", edit_row in any::<prop::sample::Index>(), inline in any::<bool>()) {
        let (input, secrets) = build_input(&cards, &title);
        let seen: Seen = Arc::default();
        let shown: Arc<Mutex<Vec<ConfirmRequest>>> = Arc::default();
        let s = shown.clone();
        let tm = Toolmark::builder()
            .confirm_handler(move |req: ConfirmRequest| {
                s.lock().unwrap().push(req.clone());
                async move { Decision::approve_with(req.input) }
            })
            .build()
            .unwrap();
        tm.register(tool(&seen, vec!["cards[].cvc", "pin"]), Default::default()).unwrap();
        let mut observed = Vec::new();
        rt().block_on(async {
            let mut events = tm.events();
            let mut bridge = tm.bridge();
            let caller = if inline { Caller::Mcp } else { Caller::InApp };
            let out = tm.call("pay", input.clone(), CallOptions::new(caller)).await;
            observed.push(serde_json::to_string(&out).unwrap());
            observed.push(format!("{out:?}"));
            if let Some(id) = out.confirm_id() {
                observed.push(serde_json::to_string(&tm.pending_confirmations()).unwrap());
                // The approver sends the public input back, maybe editing one
                // row's public field (that row's secret must then be re-entered).
                let mut edit = tm.pending_confirmations()[0].input.clone();
                if let Some(rows) = edit["cards"].as_array_mut().filter(|r| !r.is_empty()) {
                    let i = edit_row.index(rows.len());
                    rows[i]["meta"]["nick"] = json!("edited");
                }
                let result = tm.confirm_pending(id, Decision::approve_with(edit)).await;
                observed.push(serde_json::to_string(&result).unwrap());
                while let Some(m) = bridge.try_recv() {
                    observed.push(serde_json::to_string(&m).unwrap());
                }
            }
            while let Ok(e) = events.try_recv() {
                observed.push(serde_json::to_string(&e).unwrap());
                observed.push(format!("{e:?}"));
            }
        });
        for req in shown.lock().unwrap().iter() {
            observed.push(serde_json::to_string(req).unwrap());
            observed.push(format!("{req:?}"));
        }
        for text in &observed {
            for secret in &secrets {
                prop_assert!(!text.contains(secret.as_str()), "{} leaked in {}", secret, text);
            }
        }
        // The runs got real input: no placeholder, secrets intact.
        for ran in seen.lock().unwrap().iter() {
            prop_assert!(!ran.to_string().contains("[redacted]"));
            prop_assert_eq!(&ran["pin"], &input["pin"]);
        }
    }

    #[test]
    fn an_unedited_approval_restores_exactly_the_original_input(cards in cards(), title in "[a-z]{0,8}", path_set in 0usize..4) {
        let (input, _) = build_input(&cards, &title);
        let paths = [vec![], vec!["pin"], vec!["cards[].cvc"], vec!["cards[].cvc", "pin", "cards[].meta"]][path_set].clone();
        let seen: Seen = Arc::default();
        let tm = Toolmark::builder().build().unwrap();
        tm.register(tool(&seen, paths), Default::default()).unwrap();
        rt().block_on(async {
            let out = tm.call("pay", input.clone(), CallOptions::new(Caller::InApp)).await;
            let id = out.confirm_id().unwrap().to_owned();
            let public = tm.pending_confirmations()[0].input.clone();
            tm.confirm_pending(&id, Decision::approve_with(public)).await;
        });
        prop_assert_eq!(&seen.lock().unwrap()[0], &input);
    }
}
