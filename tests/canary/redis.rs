//! The Redis store: two instances on one Redis (sealed records, the cross-instance
//! bridge), a raw subscriber on the bridge channel, and a dump of every key after
//! each case. Needs `TOOLMARK_REDIS_URL`: without it (and outside CI) the tests are
//! reported ignored, and under CI they fail (`tests/support/external.rs`).

use futures_util::StreamExt;
use serde_json::json;
use toolmark::store::{RedisStore, RedisStoreOptions};
use toolmark::{CallOptions, Caller, Toolmark};

use crate::app::app;
use crate::canary::{self, Canary};
use crate::core::{check, Observer};
use crate::external;
use crate::stores::deferred_on_a_store;
use crate::{plants, runner};

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

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[test]
fn redis_store_and_pub_sub() {
    let url = external::redis_url();
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
            // Kept on one (records in Redis), listed and answered on two (the
            // bridge crosses Redis).
            let mut seen = deferred_on_a_store(&one, &two, p, &mut c, &secret).await;
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
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A dump of a pending record in Redis holds no secret (the records are sealed);
/// the per-case dump above sees the store after every answer, this one before.
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[test]
fn redis_records_while_pending() {
    let url = external::redis_url();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let prefix = format!("tm-canary-pending-{}", std::process::id());
    rt.block_on(async {
        let store = RedisStore::connect_with(&url, RedisStoreOptions::default().prefix(&prefix))
            .await
            .expect("the test Redis is reachable");
        let one = app(Toolmark::builder().seal_key(KEY).confirm_store(store));
        let mut c = Canary::new();
        let secret = c.secret();
        let number = c.secret();
        let out = one
            .tm
            .call(
                "vault.pay",
                json!({"holder": "Ada", "cvc": secret, "cards": [{"label": "a", "number": number}]}),
                CallOptions::new(Caller::InApp),
            )
            .await;
        assert!(out.confirm_id().is_some(), "{out:?}");
        let dumped = dump(&url, &prefix).await;
        assert!(dumped.contains("tm-canary-pending"), "{dumped}");
        c.assert_absent("a Redis dump with a pending record", dumped);
        let pending = one.tm.pending_confirmations_async().await.unwrap();
        c.assert_absent_in("the store's pending list", &pending);
    });
}
