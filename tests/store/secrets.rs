//! No secret reaches Redis in clear, and a record changed in Redis never runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolmark::clock::ManualClock;
use toolmark::store::MemoryStore;
use toolmark::{Decision, RefusalCode, Toolmark};

use crate::*;

/// A `#[tool]` with sensitive paths, collected into this test binary: a durable
/// store without a seal key refuses to build.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Login {
    user: String,
    password: String,
}

/// Log in.
#[toolmark::tool(consequential, sensitive = ["password"])]
async fn login(input: Login) -> Result<String, toolmark::ToolError> {
    let _ = input.password;
    Ok(input.user)
}

const SECRETS: [&str; 4] = ["PIN-7310", "CVC-90210", "CVC-31337", "CVC-EDITED-4242"];

use crate::stores::dump;

async fn pay_instance(
    url: &str,
    p: &str,
    clock: &ManualClock,
) -> (Toolmark, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tm = Toolmark::builder()
        .clock(clock.clone())
        .seal_key(KEY)
        .confirm_store(redis(url, p).await)
        .build()
        .unwrap();
    tm.register(pay(&seen), Default::default()).unwrap();
    (tm, seen)
}

fn pay_input(title: &str, cvc: &str) -> Value {
    json!({"title": title, "pin": "PIN-7310", "cards": [{"number": "4111", "cvc": cvc}]})
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_sensitive_value_is_stored_or_published_in_clear() {
    let url = redis_url();
    let p = prefix();
    let clock = ManualClock::new();
    let (a, _) = pay_instance(&url, &p, &clock).await;
    let (b, seen_b) = pay_instance(&url, &p, &clock).await;
    // Everything published on the bridge channel, read by a plain subscriber.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe(format!("{p}:bridge")).await.unwrap();
    let mut published = pubsub.into_on_message();

    let approved = defer(&a, "pay", pay_input("approved", "CVC-90210")).await;
    let edited = defer(&a, "pay", pay_input("edited", "CVC-31337")).await;
    let rejected = defer(&a, "pay", pay_input("rejected", "CVC-31337")).await;
    let invalid = defer(&a, "pay", pay_input("invalid", "CVC-90210")).await;
    let expiring = defer(&a, "pay", pay_input("expiring", "CVC-90210")).await;
    let left = defer(&a, "pay", pay_input("left pending", "CVC-31337")).await;
    let mut all = dump(&url, &p).await;

    assert!(b
        .confirm_pending(&approved, Decision::approve())
        .await
        .is_ok());
    // An approver re-enters one secret and leaves the other "[redacted]".
    let edit = json!({"title": "edited", "pin": "[redacted]", "cards": [{"number": "4111", "cvc": "CVC-EDITED-4242"}]});
    assert!(b
        .confirm_pending(&edited, Decision::approve_with(edit))
        .await
        .is_ok());
    b.confirm_pending(&rejected, Decision::reject()).await;
    // An invalid edit puts the record back: it must go back sealed.
    let bad = b
        .confirm_pending(
            &invalid,
            Decision::approve_with(json!({"title": 5, "pin": "[redacted]", "cards": []})),
        )
        .await;
    assert_eq!(bad.refusal_code(), Some(RefusalCode::Invalid));
    all.extend(dump(&url, &p).await);
    clock.advance(Duration::from_secs(601));
    let late = b.confirm_pending(&expiring, Decision::approve()).await;
    assert_eq!(late.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    let _ = left;
    all.extend(dump(&url, &p).await);

    // The runs got the real values.
    let seen = seen_b.lock().unwrap().clone();
    assert_eq!(seen[0]["cards"][0]["cvc"], "CVC-90210");
    assert_eq!(seen[1]["cards"][0]["cvc"], "CVC-EDITED-4242");
    assert_eq!(seen[1]["pin"], "PIN-7310");

    assert!(
        all.iter().any(|line| line.contains(":rec:")),
        "records were dumped"
    );
    for line in &all {
        for secret in SECRETS {
            assert!(!line.contains(secret), "{secret} stored in clear: {line}");
        }
    }
    let mut messages = 0;
    while let Ok(Some(msg)) = tokio::time::timeout(
        Duration::from_millis(500),
        futures_util::StreamExt::next(&mut published),
    )
    .await
    {
        let text: String = msg.get_payload().unwrap();
        for secret in SECRETS {
            assert!(
                !text.contains(secret),
                "{secret} published in clear: {text}"
            );
        }
        messages += 1;
    }
    assert!(messages >= 4, "the resolutions were published ({messages})");
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test]
async fn a_durable_store_requires_a_seal_key_and_an_in_process_one_does_not() {
    let url = redis_url();
    let p = prefix();
    let err = Toolmark::builder()
        .confirm_store(redis(&url, &p).await)
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "seal_key_required");
    assert!(err.to_string().contains("seal_key"), "{err}");
    // An in-process store needs no key: it seals with a key of the process.
    let tm = Toolmark::builder()
        .confirm_store(MemoryStore::new())
        .build()
        .unwrap();
    tm.register(pay(&Arc::default()), Default::default())
        .unwrap();
}

/// A `MemoryStore` without a seal key seals with the process's key: the run gets
/// every secret, and what the store holds (its `Debug` and its JSON) shows none.
#[tokio::test]
async fn a_keyless_memory_store_holds_no_secret_in_clear() {
    use toolmark::store::ConfirmStore;
    let store = MemoryStore::new();
    let tm = Toolmark::builder()
        .confirm_store(store.clone())
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    tm.register(pay(&seen), Default::default()).unwrap();
    let input = json!({
        "title": "Robotics",
        "pin": SECRETS[0],
        "cards": [{"number": "4242", "cvc": SECRETS[1]}]
    });
    let id = tm
        .call("pay", input.clone(), opts(toolmark::Caller::InApp))
        .await
        .confirm_id()
        .unwrap()
        .to_owned();
    let records = store.list().await.unwrap();
    let shown = format!("{records:?} {}", serde_json::to_string(&records).unwrap());
    for secret in SECRETS {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(tm.confirm_pending(&id, Decision::approve()).await.is_ok());
    assert_eq!(
        seen.lock().unwrap()[0],
        input,
        "the run gets the real input"
    );
}
