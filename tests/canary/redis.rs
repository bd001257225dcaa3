//! The Redis store: two instances on one Redis (sealed records, the cross-instance
//! bridge), a raw subscriber on the bridge channel, and a dump of every key after
//! each case. Needs `TOOLMARK_REDIS_URL`; without it the test says so loudly and
//! skips, except under CI (`CI` set), where it fails.

use futures_util::StreamExt;
use proptest::test_runner::TestCaseError;
use serde_json::json;
use toolmark::store::{RedisStore, RedisStoreOptions};
use toolmark::{CallOptions, Caller, Decision, Toolmark};

use crate::app::{app, Card, Signup};
use crate::canary;
use crate::core::{check, outcome_text, Observer};
use crate::{in_ci, plants, runner};

const KEY: [u8; 32] = *b"canary-seal-key-0123456789abcdef";

async fn dump(url: &str, prefix: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut out = String::new();
    for k in keys {
        let dumped: Vec<u8> = redis::cmd("DUMP")
            .arg(&k)
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        out.push_str(&k);
        out.push(' ');
        out.push_str(&String::from_utf8_lossy(&dumped));
        out.push('\n');
    }
    out
}

#[test]
fn redis_store_and_pub_sub() {
    let Some(url) = std::env::var("TOOLMARK_REDIS_URL").ok() else {
        assert!(
            !in_ci(),
            "TOOLMARK_REDIS_URL is not set under CI: the Redis canary cannot run"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED redis_store_and_pub_sub: TOOLMARK_REDIS_URL is not set !!!!!!!!\n"
        );
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let prefix = format!("tm-canary-{}", std::process::id());
    let build = |url: String, prefix: String| async move {
        let store = RedisStore::connect_with(&url, RedisStoreOptions::default().prefix(&prefix))
            .await
            .expect("the test Redis is reachable");
        app(Toolmark::builder().seal_key(KEY).confirm_store(store))
    };
    let (one, two, messages) = rt.block_on(async {
        let one = build(url.clone(), prefix.clone()).await;
        let two = build(url.clone(), prefix.clone()).await;
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut pubsub = client.get_async_pubsub().await.unwrap();
        pubsub.subscribe(format!("{prefix}:bridge")).await.unwrap();
        (
            one,
            two,
            std::cell::RefCell::new(Some(pubsub.into_on_message())),
        )
    });
    let observe_one = std::cell::RefCell::new(rt.block_on(async { Observer::new(&one.tm) }));
    let observe_two = std::cell::RefCell::new(rt.block_on(async { Observer::new(&two.tm) }));
    let _ = trace.take();
    let mut run = runner(24);
    let result = run.run(&plants(), |p| {
        let (mut c, secret) = p.canary();
        let mut seen = rt.block_on(async {
            let mut seen = Vec::new();
            let number = c.variant(p.kind.wrapping_add(1));
            one.signup.set(Signup {
                name: "Ada".to_owned(),
                card: Some(Card {
                    number: number.clone(),
                    cvc: secret.clone(),
                }),
            });
            two.signup.set(one.signup.values());
            let agent = CallOptions::new(Caller::InApp);
            let asked = [
                one.tm
                    .call(
                        "vault.pay",
                        p.pay_input("Ada", &secret, &number),
                        agent.clone(),
                    )
                    .await,
                one.tm.call("signup.submit", json!({}), agent.clone()).await,
                one.tm
                    .call(
                        "vault.labels",
                        json!({"labels": {secret.clone(): number}}),
                        agent,
                    )
                    .await,
            ];
            seen.push((
                "a Redis dump with pending records",
                dump(&url, &prefix).await,
            ));
            for out in asked {
                seen.extend(outcome_text(&out));
                if let Some(id) = out.confirm_id() {
                    // Approved on the other instance: the bridge crosses Redis.
                    let done = two.tm.confirm_pending(id, Decision::approve()).await;
                    seen.extend(outcome_text(&done));
                }
            }
            // The raw pub/sub messages.
            let mut stream = messages.borrow_mut().take().expect("the subscription");
            while let Ok(Some(msg)) =
                tokio::time::timeout(std::time::Duration::from_millis(300), stream.next()).await
            {
                let payload: Vec<u8> = msg.get_payload().unwrap_or_default();
                seen.push((
                    "a pub/sub message",
                    String::from_utf8_lossy(&payload).into_owned(),
                ));
            }
            *messages.borrow_mut() = Some(stream);
            seen.push(("a Redis dump", dump(&url, &prefix).await));
            seen
        });
        seen.extend(one.seen.take());
        seen.extend(two.seen.take());
        seen.extend(rt.block_on(async { observe_one.borrow_mut().take(&one.tm, &trace) }));
        seen.extend(rt.block_on(async { observe_two.borrow_mut().take(&two.tm, &trace) }));
        check(&c, &seen).map_err(|e| TestCaseError::fail(format!("{e}")))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
