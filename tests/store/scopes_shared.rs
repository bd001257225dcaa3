//! Scope visibility shared across instances (`ToolmarkBuilder::share_scope`): two
//! toolmarks on one store — a `MemoryStore` in one process, and Redis — where a
//! scope hidden on A is missing from B's next list; an instance that starts late;
//! forged, replayed, relabelled and reordered states written straight into the
//! store (an attacker with write access, without the seal key) change nothing; a
//! store that goes away leaves every instance with its last known state and an
//! event, and the change goes through once it is back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::json;
use tokio::sync::broadcast;
use toolmark::store::{
    Caps, ConfirmRecord, ConfirmStore, DecisionRecord, Evicted, MemoryStore, RedisStoreOptions,
    ScopeRecord, StoreError,
};
use toolmark::{
    Caller, ConfigError, Event, ScopeOptions, ToolError, ToolSpec, Toolmark, ToolmarkBuilder,
};

use crate::faults::OwnRedis;
use crate::*;

const ADMIN: &str = "admin.stats";
const BILLING: &str = "billing.refund";

fn tool(name: &str) -> ToolSpec {
    ToolSpec::new(name, "A tool").handler(|_ctx, _input| async { Ok::<_, ToolError>(json!(1)) })
}

/// An instance on `store`: `admin.stats` (the `admin` scope starts hidden) and
/// `billing.refund` (`billing` starts shown), both scopes shared.
fn instance_with(builder: ToolmarkBuilder, store: impl ConfirmStore) -> Toolmark {
    let tm = builder
        .confirm_store(store)
        .scope_at("admin", ScopeOptions::hidden())
        .share_scope("admin")
        .share_scope("billing")
        .build()
        .unwrap();
    tm.scope_at("admin").register(tool("stats")).unwrap();
    tm.scope_at("billing").register(tool("refund")).unwrap();
    tm
}

fn instance(store: impl ConfirmStore) -> Toolmark {
    instance_with(Toolmark::builder().seal_key(KEY), store)
}

fn shows(tm: &Toolmark, name: &str) -> bool {
    tm.manifest(Caller::Mcp).iter().any(|t| t.name == name)
}

/// Wait (bounded) until `cond` holds: what another instance sent comes on the
/// store's bus.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The events received so far.
fn drain(events: &mut toolmark::Events) -> Vec<Event> {
    let mut out = Vec::new();
    while let Some(e) = events.recv().now_or_never().and_then(Result::ok) {
        out.push(e);
    }
    out
}

/// A state as the store's bus carries it.
fn wire(record: &ScopeRecord) -> String {
    json!({ "scope": record }).to_string()
}

async fn record(store: &dyn ConfirmStore, path: &str) -> ScopeRecord {
    store
        .scopes()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("a state of {path} in the store"))
}

// ---- in one process (MemoryStore) ------------------------------------------

#[tokio::test(start_paused = true)]
async fn memory_a_scope_hidden_on_one_instance_is_gone_from_the_others_next_list() {
    let store = MemoryStore::new();
    let (a, b) = (instance(store.clone()), instance(store.clone()));
    assert!(!shows(&a, ADMIN) && !shows(&b, ADMIN));
    let mut events_b = b.events();
    let version_b = b.manifest_version();

    a.scope_at("admin").set_when(true);
    assert!(shows(&a, ADMIN), "shown at once where it was changed");
    until("B shows admin (from the bus)", || shows(&b, ADMIN)).await;
    assert!(b.manifest_version() > version_b);
    assert!(drain(&mut events_b)
        .iter()
        .any(|e| matches!(e, Event::ManifestChanged)));

    a.scope_at("admin").set_when(false);
    until("B hides admin", || !shows(&b, ADMIN)).await;
    // Either instance may change it; the other follows.
    b.scope_at("billing").set_when(false);
    until("A hides billing", || !shows(&a, BILLING)).await;
    b.scope_at("billing").set_when(true);
    until("A shows billing", || shows(&a, BILLING)).await;

    // Setting the state every instance already has sends nothing.
    let seq = |store: MemoryStore| async move {
        store.scopes().await.unwrap().iter().map(|r| r.seq).max()
    };
    let before = seq(store.clone()).await;
    a.scope_at("billing").set_when(true);
    a.sync_scopes().await.unwrap();
    assert_eq!(seq(store.clone()).await, before);

    // A burst on one instance ends where it ended there, on every instance.
    for i in 0..7 {
        a.scope_at("admin").set_when(i % 2 == 0);
    }
    a.sync_scopes().await.unwrap();
    b.sync_scopes().await.unwrap();
    assert!(shows(&a, ADMIN) && shows(&b, ADMIN));
}

#[tokio::test(start_paused = true)]
async fn memory_an_instance_that_starts_late_starts_with_the_current_state() {
    let store = MemoryStore::new();
    let a = instance(store.clone());
    a.scope_at("admin").set_when(true);
    a.scope_at("billing").set_when(false);
    a.sync_scopes().await.unwrap();

    let c = instance(store.clone());
    c.sync_scopes().await.unwrap();
    assert!(shows(&c, ADMIN) && !shows(&c, BILLING));
    // Without awaiting it: its task reads the store when it starts.
    let d = instance(store.clone());
    until("D shows admin", || shows(&d, ADMIN) && !shows(&d, BILLING)).await;

    // A shared scope created after the state is known starts with it (not with
    // the hidden it was declared with).
    let e = Toolmark::builder()
        .seal_key(KEY)
        .confirm_store(store.clone())
        .scope_at("admin", ScopeOptions::hidden())
        .share_scope("admin")
        .build()
        .unwrap();
    e.sync_scopes().await.unwrap();
    e.scope_at("admin").register(tool("stats")).unwrap();
    assert!(shows(&e, ADMIN));

    // Disposal stays local; the scope made again starts with the shared state.
    a.scope_at("admin").dispose();
    assert!(!shows(&a, ADMIN));
    c.sync_scopes().await.unwrap();
    assert!(shows(&c, ADMIN), "C keeps its admin tools");
    a.scope_at("admin").register(tool("stats")).unwrap();
    assert!(shows(&a, ADMIN));
}

#[tokio::test(start_paused = true)]
async fn memory_forged_relabelled_replayed_and_reordered_states_change_nothing() {
    let store = MemoryStore::new();
    let (a, b) = (instance(store.clone()), instance(store.clone()));
    let admin = a.scope_at("admin");
    admin.set_when(true);
    a.sync_scopes().await.unwrap();
    let s1 = record(&store, "admin").await;
    admin.set_when(false);
    a.sync_scopes().await.unwrap();
    let s2 = record(&store, "admin").await;
    admin.set_when(true);
    a.sync_scopes().await.unwrap();
    let s3 = record(&store, "admin").await;
    assert!(s1.seq < s2.seq && s2.seq < s3.seq);
    admin.set_when(false);
    a.sync_scopes().await.unwrap();
    b.sync_scopes().await.unwrap();
    assert!(!shows(&b, ADMIN));

    let attack = |r: ScopeRecord| {
        let store = store.clone();
        async move { store.publish(wire(&r)).await.unwrap() }
    };
    // Replayed: an older "shown" (on the bus, as it was).
    attack(s3.clone()).await;
    // Renumbered: the older "shown" under a number above every other.
    attack(ScopeRecord {
        seq: 1_000_000,
        ..s3.clone()
    })
    .await;
    // Relabelled: admin's "hidden" passed off as billing's.
    attack(ScopeRecord {
        path: "billing".into(),
        seq: 1_000_001,
        ..s2.clone()
    })
    .await;
    // Forged: bytes that were never sealed, and a state sealed under another key.
    attack(ScopeRecord {
        sealed: "1:000000000000000000000000:00".into(),
        seq: 1_000_002,
        ..s3.clone()
    })
    .await;
    let m = instance_with(Toolmark::builder().seal_key([9; 32]), store.clone());
    m.scope_at("admin").set_when(true);
    m.scope_at("billing").set_when(false);
    m.sync_scopes().await.unwrap();
    assert!(
        shows(&m, ADMIN),
        "the other key's instance changed itself only"
    );
    // Every message is handled once the runtime idles (the paused clock moves
    // only then), the periodic reads too.
    tokio::time::sleep(Duration::from_secs(5)).await;
    b.sync_scopes().await.unwrap();
    assert!(!shows(&b, ADMIN), "nothing showed admin on B");
    assert!(shows(&b, BILLING), "nothing hid billing on B");

    // Reordered: a fresh instance (same key, store of its own) hears the three
    // in the wrong order and keeps the newest (s3: shown), not the last heard.
    let other = MemoryStore::new();
    let c = instance(other.clone());
    c.sync_scopes().await.unwrap();
    for r in [&s3, &s1, &s2] {
        other.publish(wire(r)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(shows(&c, ADMIN), "the newest of the three (shown) wins");
}

/// A store in front of a `MemoryStore` that can be taken away: every operation
/// fails `unavailable` and its bus hears nothing while `down`.
#[derive(Clone)]
struct Flaky {
    inner: MemoryStore,
    down: Arc<AtomicBool>,
    /// Refuse `remember` only (every other operation goes through).
    no_remember: Arc<AtomicBool>,
    bus: broadcast::Sender<String>,
    scopes: bool,
}

impl Flaky {
    fn new(inner: &MemoryStore) -> Flaky {
        let (bus, _) = broadcast::channel(64);
        let mut rx = inner.subscribe();
        let down = Arc::new(AtomicBool::new(false));
        let (tx, gate) = (bus.clone(), Arc::clone(&down));
        tokio::spawn(async move {
            while let Ok(m) = rx.recv().await {
                if !gate.load(Ordering::SeqCst) {
                    let _ = tx.send(m);
                }
            }
        });
        Flaky {
            inner: inner.clone(),
            down,
            no_remember: Arc::new(AtomicBool::new(false)),
            bus,
            scopes: true,
        }
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn refuse_remember(&self, refuse: bool) {
        self.no_remember.store(refuse, Ordering::SeqCst);
    }

    fn up(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::unavailable("connection refused"))
        } else {
            Ok(())
        }
    }
}

macro_rules! through {
    ($self:ident, $call:expr) => {{
        let up = $self.up();
        Box::pin(async move {
            up?;
            $call.await
        })
    }};
}

impl ConfirmStore for Flaky {
    fn durable(&self) -> bool {
        false
    }
    fn put(&self, r: ConfirmRecord, caps: Caps) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
        through!(self, self.inner.put(r, caps))
    }
    fn take<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        keep_until: SystemTime,
    ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
        through!(self, self.inner.take(id, token, keep_until))
    }
    fn restore<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        through!(self, self.inner.restore(id, token))
    }
    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        through!(self, self.inner.list())
    }
    fn take_expired(
        &self,
        now: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        through!(self, self.inner.take_expired(now))
    }
    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>> {
        through!(self, self.inner.publish(message))
    }
    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.bus.subscribe()
    }
    fn remember(&self, d: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        if self.no_remember.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::unavailable("write refused")) });
        }
        through!(self, self.inner.remember(d))
    }
    fn remembered_for<'a>(
        &'a self,
        tool: &'a str,
        caller: Caller,
    ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>> {
        through!(self, self.inner.remembered_for(tool, caller))
    }
    fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>> {
        through!(self, self.inner.remembered())
    }
    fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        through!(self, self.inner.forget(id))
    }
    fn keeps_scopes(&self) -> bool {
        self.scopes
    }
    fn next_scope_seq(&self, at_least: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        through!(self, self.inner.next_scope_seq(at_least))
    }
    fn put_scope(&self, record: ScopeRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        through!(self, self.inner.put_scope(record))
    }
    fn scopes(&self) -> BoxFuture<'_, Result<Vec<ScopeRecord>, StoreError>> {
        through!(self, self.inner.scopes())
    }
}

fn failures(events: &[Event]) -> Vec<Option<String>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ScopeSyncFailed { scope, reason } => {
                assert!(reason.contains("unavailable"), "{reason}");
                Some(scope.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn memory_an_outage_keeps_each_instance_on_its_last_state_then_the_change_goes_through() {
    let store = MemoryStore::new();
    let (fa, fb) = (Flaky::new(&store), Flaky::new(&store));
    let (a, b) = (instance(fa.clone()), instance(fb.clone()));
    a.scope_at("admin").set_when(true);
    until("B shows admin", || shows(&b, ADMIN)).await;
    let mut events_a = a.events();

    // A cannot reach the store: its change shows there only, with an event.
    fa.set_down(true);
    a.scope_at("admin").set_when(false);
    assert!(!shows(&a, ADMIN));
    tokio::time::sleep(Duration::from_secs(10)).await; // several resync periods
    let err = a.sync_scopes().await.unwrap_err();
    assert_eq!(err.code(), "unavailable");
    let seen = failures(&drain(&mut events_a));
    assert!(seen.contains(&Some("admin".to_owned())), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|s| s.is_none()).count(),
        1,
        "a failing read is reported once per outage: {seen:?}"
    );
    b.sync_scopes().await.unwrap();
    assert!(shows(&b, ADMIN), "B keeps the last state it knows");
    assert!(!shows(&a, ADMIN), "A keeps its own change");

    // Back: A's change goes through to B.
    fa.set_down(false);
    a.sync_scopes().await.unwrap();
    until("B hides admin", || !shows(&b, ADMIN)).await;

    // A change made on a cut-off instance loses to a newer one another instance
    // stored meanwhile.
    fa.set_down(true);
    a.scope_at("admin").set_when(true);
    b.scope_at("admin").set_when(true);
    b.scope_at("admin").set_when(false);
    b.sync_scopes().await.unwrap();
    fa.set_down(false);
    a.sync_scopes().await.unwrap();
    b.sync_scopes().await.unwrap();
    assert!(
        !shows(&a, ADMIN) && !shows(&b, ADMIN),
        "B's newer change wins"
    );

    // The other side down: B keeps its state and does not hear A.
    fb.set_down(true);
    a.scope_at("billing").set_when(false);
    a.sync_scopes().await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(shows(&b, BILLING));
    fb.set_down(false);
    until("B hides billing once back", || !shows(&b, BILLING)).await;
}

#[tokio::test]
async fn share_scope_needs_a_store_that_keeps_scope_states_and_a_valid_path() {
    let invalid = |r: Result<Toolmark, ConfigError>| match r {
        Err(ConfigError::InvalidOption { option, .. }) => option,
        other => panic!("expected invalid_option, got {other:?}"),
    };
    assert_eq!(
        invalid(Toolmark::builder().share_scope("admin").build()),
        "share_scope"
    );
    let store = MemoryStore::new();
    assert_eq!(
        invalid(
            Toolmark::builder()
                .confirm_store(store.clone())
                .share_scope("a..b")
                .build()
        ),
        "share_scope"
    );
    let mut keeps_none = Flaky::new(&store);
    keeps_none.scopes = false;
    assert_eq!(
        invalid(
            Toolmark::builder()
                .confirm_store(keeps_none)
                .share_scope("admin")
                .build()
        ),
        "share_scope"
    );
    // Not shared: the flag stays in each instance.
    let a = Toolmark::builder()
        .confirm_store(store.clone())
        .build()
        .unwrap();
    let b = Toolmark::builder().confirm_store(store).build().unwrap();
    a.scope("admin").register(tool("stats")).unwrap();
    b.scope("admin").register(tool("stats")).unwrap();
    a.scope("admin").set_when(false);
    a.sync_scopes().await.unwrap();
    b.sync_scopes().await.unwrap();
    assert!(shows(&b, ADMIN));
}

// ---- across processes (Redis) -----------------------------------------------

async fn redis_instance(url: &str, prefix: &str) -> Toolmark {
    instance(redis(url, prefix).await)
}

async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn hget(conn: &mut redis::aio::MultiplexedConnection, key: &str, field: &str) -> String {
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(conn)
        .await
        .unwrap()
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_scope_hidden_on_a_is_gone_from_b_next_list_and_a_late_starter_agrees() {
    let url = redis_url();
    let p = prefix();
    let a = redis_instance(&url, &p).await;
    let b = redis_instance(&url, &p).await;
    a.sync_scopes().await.unwrap();
    b.sync_scopes().await.unwrap();

    a.scope_at("admin").set_when(true);
    until("B shows admin (Redis pub/sub)", || shows(&b, ADMIN)).await;
    a.scope_at("admin").set_when(false);
    until("B hides admin", || !shows(&b, ADMIN)).await;
    b.scope_at("billing").set_when(false);
    until("A hides billing", || !shows(&a, BILLING)).await;
    a.scope_at("admin").set_when(true);
    until("B shows admin again", || shows(&b, ADMIN)).await;

    let c = redis_instance(&url, &p).await;
    c.sync_scopes().await.unwrap();
    assert!(
        shows(&c, ADMIN) && !shows(&c, BILLING),
        "the late starter agrees"
    );

    // What Redis holds is sealed: the flag is not in clear.
    let mut conn = raw(&url).await;
    let stored = hget(&mut conn, &format!("{p}:scopes"), "admin").await;
    let rec: ScopeRecord = serde_json::from_str(&stored).unwrap();
    assert_eq!(rec.path, "admin");
    for clear in ["when", "true", "false"] {
        assert!(!stored.contains(clear), "{stored}");
    }
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_states_written_straight_into_redis_change_nothing() {
    let url = redis_url();
    let p = prefix();
    let a = redis_instance(&url, &p).await;
    let b = redis_instance(&url, &p).await;
    let mut conn = raw(&url).await;
    let (states, seqs, channel) = (
        format!("{p}:scopes"),
        format!("{p}:scopes:seq"),
        format!("{p}:bridge"),
    );
    a.scope_at("admin").set_when(true);
    a.sync_scopes().await.unwrap();
    let shown = hget(&mut conn, &states, "admin").await;
    a.scope_at("admin").set_when(false);
    a.sync_scopes().await.unwrap();
    let hidden = hget(&mut conn, &states, "admin").await;
    let newest = hget(&mut conn, &seqs, "admin").await;
    b.sync_scopes().await.unwrap();
    assert!(!shows(&b, ADMIN));

    let set = |field: &'static str, value: String, seq: u64| {
        let (states, seqs, url) = (states.clone(), seqs.clone(), url.clone());
        async move {
            let mut conn = raw(&url).await;
            let _: () = redis::pipe()
                .cmd("HSET")
                .arg(&states)
                .arg(field)
                .arg(value)
                .cmd("HSET")
                .arg(&seqs)
                .arg(field)
                .arg(seq)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    };
    let publish = |message: String| {
        let (channel, url) = (channel.clone(), url.clone());
        async move {
            let mut conn = raw(&url).await;
            let _: i64 = redis::cmd("PUBLISH")
                .arg(channel)
                .arg(message)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    };
    let as_record = |json: &str| serde_json::from_str::<ScopeRecord>(json).unwrap();

    // Rolled back: the older "shown" written back over the newest.
    set("admin", shown.clone(), as_record(&shown).seq).await;
    b.sync_scopes().await.unwrap();
    assert!(
        !shows(&b, ADMIN),
        "a running instance ignores an older state"
    );
    assert_eq!(
        hget(&mut conn, &seqs, "admin").await,
        newest,
        "and puts the newest it knows back"
    );
    let late = redis_instance(&url, &p).await;
    late.sync_scopes().await.unwrap();
    assert!(!shows(&late, ADMIN));

    // Replayed on the bus, renumbered, relabelled, forged.
    publish(json!({ "scope": as_record(&shown) }).to_string()).await;
    let mut renumbered = as_record(&shown);
    renumbered.seq = 1_000_000;
    publish(json!({ "scope": renumbered }).to_string()).await;
    let mut relabelled = as_record(&hidden);
    relabelled.path = "billing".into();
    relabelled.seq = 1_000_001;
    set(
        "billing",
        serde_json::to_string(&relabelled).unwrap(),
        relabelled.seq,
    )
    .await;
    publish(json!({ "scope": relabelled }).to_string()).await;
    let forged =
        json!({"path": "admin", "seq": 1_000_002, "sealed": "1:000000000000000000000000:00"});
    publish(json!({ "scope": forged }).to_string()).await;
    publish(json!({"scope": {"path": "admin", "seq": 5, "when": true}}).to_string()).await;
    publish("not json".to_owned()).await;
    // Redis delivers in order: once B heard a later legitimate change, it has
    // handled every message above.
    a.scope_at("billing").set_when(false);
    until("B hides billing", || !shows(&b, BILLING)).await;
    a.scope_at("billing").set_when(true);
    until("B shows billing", || shows(&b, BILLING)).await;
    b.sync_scopes().await.unwrap();
    assert!(!shows(&b, ADMIN), "nothing showed admin on B");
    assert!(shows(&b, BILLING), "nothing hid billing on B");
    assert!(!shows(&a, ADMIN) && shows(&a, BILLING));
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_keeps_each_instance_on_its_last_state_then_the_change_goes_through() {
    let (own, server) = OwnRedis::start_first().await;
    let url = &own.url;
    let options = RedisStoreOptions::default().timeout(Duration::from_secs(2));
    let connect = || async {
        instance(
            toolmark::store::RedisStore::connect_with(url, options.clone())
                .await
                .unwrap(),
        )
    };
    let (a, b) = (connect().await, connect().await);
    a.scope_at("admin").set_when(true);
    until("B shows admin", || shows(&b, ADMIN)).await;
    let mut events_a = a.events();

    drop(server);
    a.scope_at("admin").set_when(false);
    assert!(!shows(&a, ADMIN), "A shows its change at once");
    assert_eq!(a.sync_scopes().await.unwrap_err().code(), "unavailable");
    assert!(b.sync_scopes().await.is_err());
    assert!(shows(&b, ADMIN), "B keeps the last state it knows");
    // The change's own failure comes from the background send.
    let mut seen = failures(&drain(&mut events_a));
    for _ in 0..100 {
        if seen.contains(&Some("admin".to_owned())) {
            break;
        }
        if let Ok(Ok(e)) = tokio::time::timeout(Duration::from_millis(100), events_a.recv()).await {
            seen.extend(failures(&[e]));
        }
    }
    assert!(seen.contains(&Some("admin".to_owned())), "{seen:?}");

    let _server = own.start().await;
    for _ in 0..100 {
        if a.sync_scopes().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    a.sync_scopes().await.unwrap();
    for _ in 0..100 {
        if b.sync_scopes().await.is_ok() && !shows(&b, ADMIN) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !shows(&b, ADMIN),
        "A's change reached B once Redis was back"
    );
}

/// A `For::Always` decision goes to the store: the `decision_remembered` event
/// follows a write the store took, never one it refused (the call it answered
/// still runs either way, and nothing is kept on a failed write).
#[tokio::test]
async fn memory_a_decision_the_store_refuses_is_not_announced_and_one_it_keeps_is() {
    use toolmark::policy::{answering, For};
    let store = MemoryStore::new();
    let flaky = Flaky::new(&store);
    let tm = Toolmark::builder()
        .seal_key(KEY)
        .confirm_store(flaky.clone())
        .confirm_handler(answering(|_req| async {
            toolmark::Decision::approve()
                .by("user-1")
                .remember(For::Always)
        }))
        .build()
        .unwrap();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let mut events = tm.events();
    let remembered = |events: &mut toolmark::Events| {
        drain(events)
            .into_iter()
            .filter(|e| matches!(e, Event::DecisionRemembered { .. }))
            .count()
    };

    // The store refuses the write only (its reads work): the call runs, nothing
    // is kept, nothing is announced.
    flaky.refuse_remember(true);
    assert!(tm
        .call("create", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(count(&runs), 1);
    assert_eq!(
        remembered(&mut events),
        0,
        "a refused write is not announced"
    );
    assert!(tm.remembered_async().await.unwrap().is_empty());

    // The store takes it: one event, one decision kept, and it answers the next call.
    flaky.refuse_remember(false);
    assert!(tm
        .call("create", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(remembered(&mut events), 1);
    assert_eq!(tm.remembered_async().await.unwrap().len(), 1);
    assert!(tm
        .call("create", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(count(&runs), 3);
    assert_eq!(remembered(&mut events), 0, "answered, not remembered again");
}
