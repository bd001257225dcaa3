//! No secret reaches Redis in clear, and a record changed in Redis never runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::AsyncCommands;
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

/// The record of `id` as stored, and a way to write it back.
async fn record(url: &str, p: &str, id: &str) -> Value {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let text: String = conn.get(format!("{p}:rec:{id}")).await.unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn write(url: &str, p: &str, id: &str, record: &Value) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = conn
        .set(format!("{p}:rec:{id}"), record.to_string())
        .await
        .unwrap();
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_tampered_with_in_redis_is_refused_and_never_runs() {
    let url = redis_url();
    let p = prefix();
    let clock = ManualClock::new();
    let (a, seen) = pay_instance(&url, &p, &clock).await;
    let mut bridge = a.bridge();

    // A changed ciphertext.
    let flipped = defer(&a, "pay", pay_input("flipped", "CVC-90210")).await;
    let mut r = record(&url, &p, &flipped).await;
    let sealed = r["sealed"].as_str().unwrap().to_owned();
    let last = sealed.chars().last().unwrap();
    let changed = format!(
        "{}{}",
        &sealed[..sealed.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    r["sealed"] = json!(changed);
    write(&url, &p, &flipped, &r).await;
    let out = a.confirm_pending(&flipped, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert!(out.refusal().unwrap().message.contains("integrity"));
    assert_eq!(next(&mut bridge).await, (flipped.clone(), out));

    // Two records' sealed inputs swapped between their ids.
    let one = defer(&a, "pay", pay_input("one", "CVC-90210")).await;
    let two = defer(&a, "pay", pay_input("two", "CVC-31337")).await;
    let (mut r1, mut r2) = (record(&url, &p, &one).await, record(&url, &p, &two).await);
    let s1 = r1["sealed"].clone();
    r1["sealed"] = r2["sealed"].clone();
    r2["sealed"] = s1;
    write(&url, &p, &one, &r1).await;
    write(&url, &p, &two, &r2).await;
    for id in [&one, &two] {
        let out = a.confirm_pending(id, Decision::approve()).await;
        assert_eq!(
            out.refusal_code(),
            Some(RefusalCode::ConfirmationExpired),
            "{out:?}"
        );
    }

    // The seal stripped, or the record pointed at another tool.
    let stripped = defer(&a, "pay", pay_input("stripped", "CVC-90210")).await;
    let mut r = record(&url, &p, &stripped).await;
    r.as_object_mut().unwrap().remove("sealed");
    write(&url, &p, &stripped, &r).await;
    let out = a.confirm_pending(&stripped, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    let runs = runs();
    a.register(guarded("create", &runs), Default::default())
        .unwrap();
    let moved = defer(&a, "pay", pay_input("moved", "CVC-90210")).await;
    let mut r = record(&url, &p, &moved).await;
    r["tool"] = json!("create");
    write(&url, &p, &moved, &r).await;
    let out = a.confirm_pending(&moved, Decision::approve()).await;
    assert_eq!(out.refusal_code(), Some(RefusalCode::ConfirmationExpired));

    assert!(seen.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(count(&runs), 0);
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test]
async fn a_durable_store_without_a_seal_key_refuses_tools_with_sensitive_paths() {
    let url = redis_url();
    let p = prefix();
    // The collected `login` tool has sensitive paths.
    let err = Toolmark::builder()
        .confirm_store(redis(&url, &p).await)
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "seal_key_required");
    assert!(err.to_string().contains("login"));
    // An in-process store needs no key.
    let tm = Toolmark::builder()
        .confirm_store(MemoryStore::new())
        .build()
        .unwrap();
    tm.register(pay(&Arc::default()), Default::default())
        .unwrap();
}

/// A `MemoryStore` without a seal key keeps a record's real input in memory only:
/// the run gets every secret, and what the store lists (its `Debug` and its JSON)
/// shows none.
#[tokio::test]
async fn a_keyless_memory_store_keeps_secrets_in_memory_only() {
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
