//! The official MCP Python SDK (`mcp==2.3.0`, installed by `.ci/run` into
//! `.ci/venv`) drives `examples/mcp_server` over stdio and over HTTP with
//! `tests/mcp/python_client.py`.
//!
//! The interpreter is `$TOOLMARK_PYTHON`, else `.ci/venv/bin/python`. Without
//! one the tests fail when `CI` is set and are skipped, loudly, otherwise.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn python() -> Option<PathBuf> {
    let p = match std::env::var_os("TOOLMARK_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => root().join(".ci/venv/bin/python"),
    };
    if p.exists() {
        return Some(p);
    }
    let msg = format!(
        "no Python with the MCP SDK at {} (run .ci/run, or: python3 -m venv .ci/venv && .ci/venv/bin/pip install mcp==2.3.0)",
        p.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// `target/<profile>/examples/mcp_server`, built by `cargo test` with the tests.
pub(crate) fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let bin = dir.join("examples").join("mcp_server");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --features mcp` (it builds the examples)",
        bin.display()
    );
    bin
}

fn run_client(py: &PathBuf, mode: &str, target: &str, revision: &str) {
    let out = Command::new(py)
        .arg(root().join("tests/mcp/python_client.py"))
        .arg(mode)
        .arg(target)
        .arg(revision)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client ({mode}, {revision}) failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}\n{stderr}");
}

/// Kills the server when the test ends, however it ends.
pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `examples/mcp_server --http 127.0.0.1:0 <extra>`: the server (killed
/// on drop) and its URL.
pub(crate) fn start_http(extra: &[&str], env: &[(&str, &str)]) -> (Server, String) {
    let mut child = Command::new(example())
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_owned();
        }
    };
    // Keep draining the server's stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (server, url)
}

/// The 2025-11-25 session (the client forced to `initialize`).
#[test]
fn python_sdk_over_stdio() {
    let Some(py) = python() else { return };
    run_client(&py, "stdio", example().to_str().unwrap(), "legacy");
}

#[test]
fn python_sdk_over_http() {
    let Some(py) = python() else { return };
    let (server, url) = start_http(&[], &[]);
    run_client(&py, "http", &url, "legacy");
    drop(server);
}

/// 2026-07-28: discover, list with `ttlMs`, call, invalid, confirmation by
/// multi round-trip request (approve, reject, edit, re-ask, tampered, other
/// arguments, replayed, expired), `subscriptions/listen`, tasks (completed,
/// cancelled, waiting for approval); over HTTP, a purge approved (and one
/// rejected) by a person on the app's page (URL mode); no secret in any
/// message, `requestState` included.
#[test]
fn python_sdk_2026_over_stdio() {
    let Some(py) = python() else { return };
    run_client(&py, "stdio", example().to_str().unwrap(), "2026");
}

#[test]
fn python_sdk_2026_over_http() {
    let Some(py) = python() else { return };
    let (server, url) = start_http(
        &[
            "--confirm-by-elicitation",
            "--confirm-expiry-ms",
            "1500",
            "--approval-page",
        ],
        &[],
    );
    run_client(&py, "http", &url, "2026");
    drop(server);
}
