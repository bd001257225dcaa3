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

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(port: u16, dir: &std::path::Path) -> Server {
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

/// Wait (bounded) until something accepts connections on `port`.
async fn until_listening(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("redis-server did not start on port {port}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[cfg_attr(
    not(toolmark_client = "redis"),
    ignore = "needs redis-server: set TOOLMARK_REDIS_URL, or run .ci/run (runs every test)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_test_refuses_unavailable_then_recovers_without_loss_or_double_run() {
    // It starts (and stops) a redis-server of its own: the attribute above makes it
    // an ignored test where Redis is not expected.
    let dir = std::env::temp_dir().join(prefix());
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let server = start(port, &dir);
    until_listening(port).await;
    let url = format!("redis://127.0.0.1:{port}/");
    let options = RedisStoreOptions::default().timeout(Duration::from_millis(500));
    let instance = || async {
        let store = RedisStore::connect_with(&url, options.clone())
            .await
            .unwrap();
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

    let _server = start(port, &dir);
    until_listening(port).await;
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
    let _ = std::fs::remove_dir_all(&dir);
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
    let dir = std::env::temp_dir().join(prefix());
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let server = start(port, &dir);
    until_listening(port).await;
    let url = format!("redis://127.0.0.1:{port}/");
    let options = RedisStoreOptions::default().timeout(Duration::from_millis(500));
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let tm = Toolmark::builder()
        .seal_key(KEY)
        .confirm_store(RedisStore::connect_with(&url, options).await.unwrap())
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

    let _server = start(port, &dir);
    until_listening(port).await;
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
    let _ = std::fs::remove_dir_all(&dir);
}
