//! Redis stopped mid-test: calls and approvals are refused `unavailable` (never a
//! panic, never a run), then everything recovers when Redis is back: no double
//! run, and no confirmation stored before the fault is lost.
//!
//! The test starts its own redis-server (append-only file, fsync always) on a
//! free loopback port, so it can kill and restart it.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use toolmark::store::{RedisStore, RedisStoreOptions};
use toolmark::{Caller, Decision, RefusalCode, Toolmark};

use crate::*;

pub(crate) struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One fault test at a time: each stops and restarts a redis-server on its own port,
/// and a port one test just freed must not be handed to another test's server
/// (the restart would then find the port taken and talk to the other's data).
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Start a redis-server on `port` keeping its data in `dir`, and wait until it
/// answers; a server that exits instead (the port is taken) fails the test, so a
/// test never talks to a server that is not its own.
pub(crate) async fn start(port: u16, dir: &std::path::Path) -> Server {
    let mut server = spawn(port, dir);
    until_listening(port).await;
    if let Ok(Some(status)) = server.child.try_wait() {
        panic!("redis-server on port {port} exited ({status}): is the port taken?");
    }
    server
}

fn spawn(port: u16, dir: &std::path::Path) -> Server {
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "yes", "--appendfsync", "always"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server runs");
    Server { child }
}

/// Wait (bounded) until the redis-server on `port` answers `PING` with `PONG`: it
/// accepts connections before it has loaded its append-only file, and answers
/// `-LOADING` until then.
async fn until_listening(port: u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for _ in 0..400 {
        if let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            let mut reply = [0u8; 16];
            let answered = async {
                conn.write_all(b"*1\r\n$4\r\nPING\r\n").await?;
                let n = conn.read(&mut reply).await?;
                Ok::<_, std::io::Error>(n)
            };
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), answered).await {
                if reply[..n].starts_with(b"+PONG") {
                    return;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("redis-server did not start on port {port}");
}

/// A free loopback port below Linux's ephemeral range (32768–60999), so that no
/// outgoing connection of this process takes it while its server is stopped.
pub(crate) fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let seed = RandomState::new().hash_one(std::process::id());
    (0..2_000u64)
        .map(|i| 20_000 + ((seed.wrapping_add(i.wrapping_mul(7_919))) % 12_000) as u16)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free loopback port between 20000 and 32000")
}

/// A fault test's own redis-server: a fresh data directory, a free loopback port,
/// one such test at a time (see [`ONE_AT_A_TIME`]). The directory goes when this
/// does.
pub(crate) struct OwnRedis {
    pub(crate) url: String,
    port: u16,
    dir: std::path::PathBuf,
    _one: tokio::sync::MutexGuard<'static, ()>,
}

impl OwnRedis {
    /// Wait for this test's turn, and start its server.
    pub(crate) async fn start_first() -> (OwnRedis, Server) {
        let dir = std::env::temp_dir().join(prefix());
        std::fs::create_dir_all(&dir).unwrap();
        let one = ONE_AT_A_TIME.lock().await;
        let port = free_port();
        let server = start(port, &dir).await;
        let own = OwnRedis {
            url: format!("redis://127.0.0.1:{port}/"),
            port,
            dir,
            _one: one,
        };
        (own, server)
    }

    /// A store on this server. Refusals come from refused connections, at once; the
    /// timeout only bounds a slow answer, which a loaded machine (fsync always) can
    /// give.
    pub(crate) async fn store(&self) -> RedisStore {
        let options = RedisStoreOptions::default().timeout(Duration::from_secs(5));
        RedisStore::connect_with(&self.url, options).await.unwrap()
    }

    /// Start the server again (after its [`Server`] was dropped), on the same port
    /// and data.
    pub(crate) async fn start(&self) -> Server {
        start(self.port, &self.dir).await
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_test_refuses_unavailable_then_recovers_without_loss_or_double_run() {
    // It starts (and stops) a redis-server of its own: the attribute above makes it
    // an ignored test where Redis is not expected.
    let (own, server) = OwnRedis::start_first().await;
    let instance = || async {
        let store = own.store().await;
        let tm = Toolmark::builder()
            .seal_key(KEY)
            .confirm_store(store)
            .build()
            .unwrap();
        let runs = runs();
        tm.register(guarded("create", &runs), Default::default())
            .unwrap();
        (tm, runs)
    };
    let (a, runs_a) = instance().await;
    let (b, runs_b) = instance().await;
    let mut bridge_a = a.bridge();
    let stored = defer(&a, "create", json!({"title": "before the fault"})).await;

    drop(server);
    let call = a
        .call("create", json!({"title": "during"}), opts(Caller::InApp))
        .await;
    assert_eq!(
        call.refusal_code(),
        Some(RefusalCode::Unavailable),
        "{call:?}"
    );
    let approve = b.confirm_pending(&stored, Decision::approve()).await;
    assert_eq!(
        approve.refusal_code(),
        Some(RefusalCode::Unavailable),
        "{approve:?}"
    );
    assert_eq!(
        b.pending_confirmations_async().await.unwrap_err().code(),
        "unavailable"
    );
    assert_eq!(count(&runs_a) + count(&runs_b), 0);

    let _server = own.start().await;
    // The connections come back on their own.
    let mut pending = None;
    for _ in 0..100 {
        if let Ok(list) = b.pending_confirmations_async().await {
            pending = Some(list);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pending = pending.expect("B reconnected");
    // A reconnects too (its heartbeat brings its bridge subscription back).
    let mut back = false;
    for _ in 0..100 {
        if a.pending_confirmations_async().await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(back, "A reconnected");
    assert_eq!(
        pending
            .iter()
            .map(|p| p.confirm_id.clone())
            .collect::<Vec<_>>(),
        vec![stored.clone()],
        "the confirmation stored before the fault is still there; the refused call left none"
    );
    let out = b.confirm_pending(&stored, Decision::approve()).await;
    assert_eq!(
        out.output().unwrap()["input"],
        json!({"title": "before the fault"})
    );
    let again = a.confirm_pending(&stored, Decision::approve()).await;
    assert_eq!(again.refusal_code(), Some(RefusalCode::ConfirmationExpired));
    assert_eq!(
        (count(&runs_a), count(&runs_b)),
        (0, 1),
        "one run, no double run"
    );
    // A's subscription came back too: it hears B's approval.
    assert_eq!(next(&mut bridge_a).await, (stored, out));
}

/// Remembered decisions through a fault: a `For::Always` decision that cannot be
/// read is not trusted blindly (the call is asked), one that cannot be written is
/// not kept (the call it answered still runs), and the decision stored before the
/// fault answers again once Redis is back.
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_decisions_through_a_fault_ask_rather_than_trust_and_recover() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use toolmark::policy::{answering, For};
    let (own, server) = OwnRedis::start_first().await;
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let tm = Toolmark::builder()
        .seal_key(KEY)
        .confirm_store(own.store().await)
        .confirm_handler(answering(move |_req| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Decision::approve().by("user-1").remember(For::Always) }
        }))
        .build()
        .unwrap();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let call = || tm.call("create", json!({}), opts(Caller::Mcp));
    assert!(call().await.is_ok());
    assert!(call().await.is_ok());
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "answered by the stored decision"
    );
    let kept = tm.remembered_async().await.unwrap();
    assert_eq!(kept.len(), 1);

    drop(server);
    // The decision cannot be read: the call is asked (and runs on this answer).
    assert!(call().await.is_ok());
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(
        tm.remembered_async().await.unwrap_err().code(),
        "unavailable"
    );
    assert_eq!(
        tm.forget_async(&kept[0].id).await.unwrap_err().code(),
        "unavailable"
    );

    let _server = own.start().await;
    let mut back = None;
    for _ in 0..100 {
        if let Ok(list) = tm.remembered_async().await {
            back = Some(list);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(back.expect("reconnected"), kept, "kept through the fault");
    assert!(call().await.is_ok());
    assert_eq!(asked.load(Ordering::SeqCst), 2, "answered by it again");
    assert_eq!(count(&runs), 4);
}

/// Redis killed (SIGKILL) while approvals are in flight, then started again from
/// its append-only file: every approval either ran (once) or was refused
/// `unavailable` with the confirmation still answerable, so answering the refused
/// ones again runs each of them once. Nothing is "used up and not run".
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_with_approvals_in_flight_loses_none_and_runs_each_once() {
    use std::collections::HashMap;
    use std::sync::Mutex;
    // It starts (and kills) a redis-server of its own: the attribute above makes it
    // run only where redis-server is expected.
    let (own, mut server) = OwnRedis::start_first().await;
    let tm = Toolmark::builder()
        .seal_key(KEY)
        .max_pending(1000)
        .confirm_store(own.store().await)
        .build()
        .unwrap();
    // Each run is counted per title.
    let ran: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let seen = ran.clone();
    tm.register(
        toolmark::ToolSpec::new("create", "Create")
            .input_schema(json!({"type": "object", "properties": {"title": {"type": "string"}}}))
            .effect(toolmark::Effect::Consequential)
            .handler(move |_ctx, input| {
                let seen = seen.clone();
                async move {
                    let title = input["title"].as_str().unwrap_or_default().to_owned();
                    *seen.lock().unwrap().entry(title).or_default() += 1;
                    Ok(json!("done"))
                }
            }),
        Default::default(),
    )
    .unwrap();
    const N: usize = 200;
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(defer(&tm, "create", json!({"title": format!("t{i}")})).await);
    }
    let mut handles = Vec::new();
    for id in ids.clone() {
        let tm = tm.clone();
        handles.push(tokio::spawn(async move {
            let out = tm.confirm_pending(&id, Decision::approve()).await;
            (id, out)
        }));
    }
    // Kill it while the approvals run.
    tokio::time::sleep(Duration::from_millis(15)).await;
    let _ = server.child.kill();
    let _ = server.child.wait();
    let mut refused = Vec::new();
    let mut ok = 0;
    for h in handles {
        let (id, out) = h.await.unwrap();
        match out.refusal_code() {
            None => {
                assert!(out.is_ok(), "{out:?}");
                ok += 1;
            }
            Some(RefusalCode::Unavailable) => {
                let message = &out.refusal().unwrap().message;
                assert!(
                    message.contains("did not run") || message.contains("nothing was run"),
                    "{message}"
                );
                refused.push(id);
            }
            Some(other) => panic!("an approval in flight was refused {other:?}: {out:?}"),
        }
    }
    eprintln!(
        "{ok} approvals ran before the fault, {} were refused `unavailable`",
        refused.len()
    );
    server = own.start().await;
    // Every refused approval, answered again once Redis is back, runs.
    for id in &refused {
        let mut out = None;
        for _ in 0..200 {
            let o = tm.confirm_pending(id, Decision::approve()).await;
            if o.refusal_code() != Some(RefusalCode::Unavailable) {
                out = Some(o);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let out = out.expect("Redis came back");
        assert!(
            out.is_ok(),
            "a refused approval is answerable again: {out:?}"
        );
    }
    let ran = ran.lock().unwrap().clone();
    assert_eq!(
        ran.len(),
        N,
        "every confirmation ran ({ok} at once, {} after the fault)",
        refused.len()
    );
    assert!(ran.values().all(|n| *n == 1), "each exactly once: {ran:?}");
    // Nothing is left pending.
    assert!(tm.pending_confirmations_async().await.unwrap().is_empty());
    drop(server);
}

/// Redis stopped long enough for the store's own reconnects to fail, then started
/// again: the very next request is answered, not refused `unavailable` for the
/// outage before it (the connection manager hands a request its last failed
/// reconnect; the store sends it once more on the new connection). Three outages,
/// one kind of request after each (a listing, a call that needs confirmation, an
/// approval), so that a request that happens to land while a reconnect is under
/// way cannot hide the failure.
#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_after_redis_is_back_is_answered() {
    let (own, mut server) = OwnRedis::start_first().await;
    let tm = Toolmark::builder()
        .seal_key(KEY)
        .confirm_store(own.store().await)
        .build()
        .unwrap();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    let first = defer(&tm, "create", json!({"title": "before"})).await;
    let mut second = None;
    for round in 0..3 {
        drop(server);
        // While it is down: refused, nothing runs.
        assert_eq!(
            tm.pending_confirmations_async().await.unwrap_err().code(),
            "unavailable"
        );
        // Long enough for the reconnects this refusal and the heartbeat start to
        // fail too (each gives up within a few hundred milliseconds).
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        server = own.start().await;
        match round {
            0 => {
                let pending = tm.pending_confirmations_async().await;
                let ids: Vec<_> = pending
                    .expect("the first listing after the outage is answered")
                    .into_iter()
                    .map(|p| p.confirm_id)
                    .collect();
                assert_eq!(ids, vec![first.clone()]);
            }
            1 => {
                let out = tm
                    .call("create", json!({"title": "after"}), opts(Caller::InApp))
                    .await;
                second = Some(
                    out.confirm_id()
                        .unwrap_or_else(|| panic!("the first call after the outage: {out:?}"))
                        .to_owned(),
                );
            }
            _ => {
                let out = tm.confirm_pending(&first, Decision::approve()).await;
                assert!(out.is_ok(), "the first approval after the outage: {out:?}");
            }
        }
    }
    assert_eq!(count(&runs), 1, "the approved one ran once");
    let left: Vec<_> = list(&tm).await.into_iter().map(|p| p.confirm_id).collect();
    assert_eq!(left, vec![second.unwrap()]);
    drop(server);
}
