//! The confirmation stores a test runs on: the built-in one (no store set), a
//! `MemoryStore`, and (feature `redis`) Redis. [`on_every_store!`] generates a test
//! once per store; on Redis, after the test, every key it wrote and everything in
//! it is scanned for the values the tests use as secrets ([`SECRETS`]): none may be
//! there in clear.
//!
//! The Redis tests read `TOOLMARK_REDIS_URL` (.ci/run starts a redis-server and
//! sets it). Without it (and outside CI) libtest reports them `ignored, needs
//! redis-server …` (the mechanism of `external.rs`); under CI (`CI` set) its
//! absence fails them.
//!
//! Shared by several test targets (`#[path]`): not every target uses every item.
#![allow(dead_code, unreachable_pub, unused_macros, unused_imports)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use toolmark::store::MemoryStore;
use toolmark::{Toolmark, ToolmarkBuilder};

/// The seal key every test instance shares.
pub const KEY: [u8; 32] = *b"0123456789abcdef0123456789abcdef";

/// The values tests give sensitive paths: a scan of Redis after every Redis test
/// must never find one.
pub const SECRETS: &[&str] = &[
    "PIN-7310",
    "CVC-90210",
    "CVC-31337",
    "CVC-EDITED-4242",
    "PW-SECRET-5150",
    // tests/sensitive
    "pin-9876",
    "cvc-111",
    "cvc-222",
    // tests/forms (the signup form's card number)
    "4242424242424242",
];

/// Which store a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// No store set: the toolmark keeps deferred confirmations in itself.
    Builtin,
    /// A `MemoryStore`.
    Memory,
    /// A `RedisStore` (feature `redis`).
    Redis,
}

/// One store, shared by every instance built on it (as instances of an app
/// share one Redis).
#[derive(Clone)]
pub enum Backing {
    /// No store: every instance keeps its own.
    Builtin,
    /// One `MemoryStore`, cloned into each instance.
    Memory(MemoryStore),
    /// A Redis URL and a key prefix no other test uses; each instance connects.
    #[cfg(feature = "redis")]
    Redis { url: String, prefix: String },
}

tokio::task_local! {
    /// The Redis prefixes a test wrote under (scanned after it).
    static WRITTEN: Arc<Mutex<Vec<String>>>;
}

#[path = "external.rs"]
pub mod external;

/// The Redis URL (`$TOOLMARK_REDIS_URL`). Only a test marked
/// `#[cfg_attr(not(toolmark_client = "redis"), ignore = …)]` may ask (the
/// `redis` tests `on_every_store!` generates are): without Redis it is reported
/// ignored, and when it runs without one it fails.
pub fn redis_url() -> String {
    external::redis_url()
}

/// A key prefix no other test uses.
pub fn prefix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "tmtest-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

impl Store {
    /// Whether records outlive the process (Redis).
    pub fn durable(self) -> bool {
        self == Store::Redis
    }

    /// A fresh store (a new Redis prefix). `None` only for Redis in a build
    /// without the `redis` feature.
    pub fn open(self) -> Option<Backing> {
        Some(match self {
            Store::Builtin => Backing::Builtin,
            Store::Memory => Backing::Memory(MemoryStore::new()),
            #[cfg(feature = "redis")]
            Store::Redis => {
                let url = redis_url();
                let prefix = prefix();
                // Built outside a Redis test's task: nobody would scan it.
                WRITTEN
                    .try_with(|w| w.lock().unwrap().push(prefix.clone()))
                    .expect("a Redis toolmark is built inside `stores::run`");
                Backing::Redis { url, prefix }
            }
            #[cfg(not(feature = "redis"))]
            Store::Redis => {
                eprintln!("\n!!!!!!!! SKIPPED: built without the `redis` feature !!!!!!!!\n");
                return None;
            }
        })
    }

    /// `builder` on a fresh store of this kind (seal key set), or `None`: skip.
    pub async fn builder(self, builder: ToolmarkBuilder) -> Option<ToolmarkBuilder> {
        Some(self.open()?.builder(builder).await)
    }

    /// A toolmark on a fresh store of this kind, or `None`: skip.
    pub async fn build(self, builder: ToolmarkBuilder) -> Option<Toolmark> {
        Some(self.open()?.build(builder).await)
    }
}

impl Backing {
    /// `builder` with this store (a new connection for Redis, with the seal key;
    /// a `MemoryStore` needs none and gets none: the toolmark seals with a key of
    /// the process — tests/store runs it with a key as well).
    pub async fn builder(&self, builder: ToolmarkBuilder) -> ToolmarkBuilder {
        match self {
            Backing::Builtin => builder,
            Backing::Memory(store) => builder.confirm_store(store.clone()),
            #[cfg(feature = "redis")]
            Backing::Redis { url, prefix } => builder.seal_key(KEY).confirm_store(
                toolmark::store::RedisStore::connect_with(
                    url,
                    toolmark::store::RedisStoreOptions::default().prefix(prefix),
                )
                .await
                .expect("the test Redis is reachable"),
            ),
        }
    }

    /// A toolmark on this store.
    pub async fn build(&self, builder: ToolmarkBuilder) -> Toolmark {
        self.builder(builder).await.build().unwrap()
    }
}

/// Run `test` on `store`; on Redis, then scan every key it wrote for [`SECRETS`].
pub async fn run<F: Future<Output = ()>>(store: Store, test: impl FnOnce(Store) -> F) {
    let written: Arc<Mutex<Vec<String>>> = Arc::default();
    WRITTEN.scope(written.clone(), test(store)).await;
    #[cfg(feature = "redis")]
    if store == Store::Redis {
        let prefixes = written.lock().unwrap().clone();
        if prefixes.is_empty() {
            return;
        }
        let url = redis_url();
        for p in prefixes {
            for line in dump(&url, &p).await {
                for secret in SECRETS {
                    assert!(
                        !line.contains(secret),
                        "a secret is in Redis in clear: {line}"
                    );
                }
            }
        }
    }
}

/// Every key under `prefix` and everything it holds, as text, one line a key.
#[cfg(feature = "redis")]
pub async fn dump(url: &str, prefix: &str) -> Vec<String> {
    use redis::AsyncCommands;
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = {
        let mut iter = conn
            .scan_match::<_, String>(format!("{prefix}*"))
            .await
            .unwrap();
        let mut keys = Vec::new();
        while let Some(k) = futures_util::StreamExt::next(&mut iter).await {
            keys.push(k.unwrap());
        }
        keys
    };
    let mut out = Vec::new();
    for k in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&k)
            .query_async(&mut conn)
            .await
            .unwrap();
        let text = match kind.as_str() {
            "string" => conn.get::<_, String>(&k).await.unwrap(),
            "zset" => conn
                .zrange_withscores::<_, Vec<(String, f64)>>(&k, 0, -1)
                .await
                .unwrap()
                .into_iter()
                .map(|(m, s)| format!("{m}={s}"))
                .collect::<Vec<_>>()
                .join(","),
            "hash" => conn
                .hgetall::<_, Vec<(String, String)>>(&k)
                .await
                .unwrap()
                .into_iter()
                .map(|(f, v)| format!("{f}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            other => panic!("unexpected key type {other} at {k}"),
        };
        out.push(format!("{k} => {text}"));
    }
    out
}

/// Generate each `async fn name(store: Store)` as one test per store, in the
/// modules `builtin`, `memory` and (feature `redis`) `redis`.
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        mod builtin {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { $crate::stores::run($crate::stores::Store::Builtin, super::$name).await })*
        }
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { $crate::stores::run($crate::stores::Store::Memory, super::$name).await })*
        }
        #[cfg(feature = "redis")]
        mod redis {
            $(#[cfg_attr(not(toolmark_client = "redis"), ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { $crate::stores::run($crate::stores::Store::Redis, super::$name).await })*
        }
    };
}
pub(crate) use on_every_store;

/// Generate each `async fn name(store: Store)` as one test per store that
/// instances can share (`memory` and, with feature `redis`, `redis`): the built-in
/// store belongs to one toolmark.
macro_rules! on_shared_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { $crate::stores::run($crate::stores::Store::Memory, super::$name).await })*
        }
        #[cfg(feature = "redis")]
        mod redis {
            $(#[cfg_attr(not(toolmark_client = "redis"), ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { $crate::stores::run($crate::stores::Store::Redis, super::$name).await })*
        }
    };
}
pub(crate) use on_shared_stores;
