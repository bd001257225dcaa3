//! Maps: keys under a sensitive path are secrets too (issue paths show them as
//! "[redacted]", messages are scrubbed of them), and `[]` also means "every value
//! of a map" (`wallet[].cvc` on a `HashMap<String, Card>`) in registration checks,
//! `writeOnly` marks, redaction and restore.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{Caller, Decision, Effect, RefusalCode, ToolSpec, Toolmark};

use crate::*;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Vault {
    name: String,
    vault: HashMap<String, String>,
}

#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Card {
    holder: String,
    cvc: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Wallet {
    wallet: HashMap<String, Card>,
}

fn vault_tm() -> Toolmark {
    let tm = Toolmark::builder().build().unwrap();
    tm.register(
        ToolSpec::typed("open", "Open the vault", |_ctx, v: Vault| async move {
            let keys: Vec<&String> = v.vault.keys().collect();
            Err::<Value, _>(toolmark::ToolError::new(format!("no entry among {keys:?}")))
        })
        .sensitive(["vault"]),
        Default::default(),
    )
    .unwrap();
    tm
}

#[tokio::test]
async fn map_keys_under_a_sensitive_path_stay_out_of_issue_paths_and_messages() {
    let tm = vault_tm();
    let out = tm
        .call(
            "open",
            json!({"name": "n", "vault": {"KEY-secret": 5, "other": "x"}}),
            inapp(),
        )
        .await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::Invalid), "{out:?}");
    let issues = issues_of(&out);
    assert_eq!(issues[0].0, "vault.[redacted]", "{issues:?}");
    let text = format!("{out:?} {}", json_of(&out));
    assert!(!text.contains("KEY-secret"), "{text}");
    // A tool's message naming a key is scrubbed.
    let out = tm
        .call(
            "open",
            json!({"name": "n", "vault": {"KEY-secret": "v"}}),
            inapp(),
        )
        .await;
    let text = format!("{out:?} {}", json_of(&out));
    assert!(text.contains("no entry among"), "{text}");
    assert!(!text.contains("KEY-secret"), "{text}");
}

fn wallet_tm(
    seen: &Arc<Mutex<Vec<HashMap<String, Card>>>>,
) -> Result<Toolmark, toolmark::RegisterError> {
    let tm = Toolmark::builder().build().unwrap();
    let seen = seen.clone();
    tm.register(
        ToolSpec::typed("pay", "Pay", move |_ctx, w: Wallet| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(w.wallet);
                Ok(json!("paid"))
            }
        })
        .effect(Effect::Consequential)
        .sensitive(["wallet[].cvc"]),
        Default::default(),
    )?;
    Ok(tm)
}

#[tokio::test]
async fn brackets_step_into_every_value_of_a_map() {
    let seen = Arc::default();
    let tm = wallet_tm(&seen).expect("wallet[].cvc resolves on a map");
    // writeOnly on the map's values.
    let info = tm.manifest(Caller::Human);
    let schema = info[0].input_schema.to_string();
    assert!(schema.contains("\"writeOnly\":true"), "{schema}");
    let input = json!({"wallet": {
        "home": {"holder": "Ada", "cvc": "cvc-111"},
        "work": {"holder": "Bob", "cvc": "cvc-222"}
    }});
    let out = tm.call("pay", input, inapp()).await;
    let id = out.confirm_id().expect("pending").to_owned();
    let pending = tm.pending_confirmations();
    assert_eq!(
        pending[0].input,
        json!({"wallet": {
            "home": {"holder": "Ada", "cvc": REDACTED},
            "work": {"holder": "Bob", "cvc": REDACTED}
        }})
    );
    assert!(!format!("{pending:?}").contains("cvc-"));
    // Sending the redacted input back restores every value by its key.
    let edit = pending[0].input.clone();
    let out = tm.confirm_pending(&id, Decision::approve_with(edit)).await;
    assert!(out.is_ok(), "{out:?}");
    let ran = seen.lock().unwrap();
    assert_eq!(ran[0]["home"].cvc, "cvc-111");
    assert_eq!(ran[0]["work"].cvc, "cvc-222");
}
