//! Three `examples/mcp_server` processes on loopback sharing one Redis (their
//! confirmations, tasks and admin flag), driven by the official Python SDK
//! through a round-robin proxy that sends each request to the next instance
//! (`tests/mcp/python_instances.py`): list, call, a confirmation by multi
//! round-trip request approved on another instance than the one that asked, a
//! task polled (and one cancelled) across instances, a scope shown and hidden
//! through one instance and seen by the others' next list. Then every key and
//! value under the run's prefix is read back: the card number is in none.
//!
//! Needs `TOOLMARK_REDIS_URL` (.ci/run starts a redis-server) and the Python SDK
//! (`TOOLMARK_PYTHON`): without both (and outside CI) it is reported ignored; when
//! it runs without them it fails (`tests/support/external.rs`).

use std::process::Command;

use super::python::{python, root, start_http};
use crate::external::redis_url;

/// The card number `python_client.py` sends.
const CARD: &str = "4111-2222-3333-9876";

/// Every key under `prefix` with every value it holds, as text.
async fn dump(conn: &mut redis::aio::MultiplexedConnection, prefix: &str) -> Vec<(String, String)> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .unwrap();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        let cmd = match kind.as_str() {
            "string" => redis::cmd("GET").arg(&key).clone(),
            "hash" => redis::cmd("HGETALL").arg(&key).clone(),
            "zset" => redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .clone(),
            "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).clone(),
            "set" => redis::cmd("SMEMBERS").arg(&key).clone(),
            other => panic!("a key of type {other}: {key}"),
        };
        let value: redis::Value = cmd.query_async(conn).await.unwrap();
        out.push((key, format!("{value:?}")));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(toolmark_client = "redis", toolmark_client = "python")),
    ignore = "needs redis-server and the Python SDKs: set TOOLMARK_REDIS_URL and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
async fn three_instances_one_redis_any_instance_answers() {
    let url = redis_url();
    let py = python();
    let prefix = format!("mcp26-instances-{}:", std::process::id());
    let key = "5a".repeat(32);
    let env = [("TOOLMARK_SEAL_KEY", key.as_str())];
    let args = [
        "--redis",
        url.as_str(),
        "--redis-prefix",
        prefix.as_str(),
        "--confirm-by-elicitation",
    ];
    let servers: Vec<_> = (0..3).map(|_| start_http(&args, &env)).collect();
    let urls: Vec<&str> = servers.iter().map(|(_, u)| u.as_str()).collect();
    let out = tokio::task::spawn_blocking({
        let urls: Vec<String> = urls.iter().map(|u| (*u).to_owned()).collect();
        move || {
            Command::new(py)
                .current_dir(root().join("tests/mcp"))
                .arg("python_instances.py")
                .args(&urls)
                .output()
                .expect("python runs")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "python instances failed:\n{stdout}\n{stderr}"
    );
    drop(servers);

    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stored = dump(&mut conn, &prefix).await;
    assert!(
        stored.iter().any(|(k, _)| k.contains("task:")),
        "the tasks' states are in Redis: {stored:?}"
    );
    for (k, v) in &stored {
        assert!(
            !k.contains(CARD) && !v.contains(CARD),
            "the card number is stored: {k}"
        );
        // Nor a part of it long enough to matter.
        assert!(
            !v.contains("2222-3333"),
            "part of the card number is stored: {k}"
        );
    }
    let keys: Vec<String> = stored.into_iter().map(|(k, _)| k).collect();
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// Without Redis and the Python SDKs this test is reported ignored, never `ok`.
#[test]
fn the_instances_test_is_reported_ignored_unless_redis_and_python_are_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(all(toolmark_client = "redis", toolmark_client = "python")),
        &["instances::three_instances_one_redis_any_instance_answers"],
    );
}
