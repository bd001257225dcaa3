//! The official MCP Python SDK (`mcp==2.3.0`, installed by `.ci/run` into
//! `.ci/venv`) drives `examples/mcp_server` over stdio and over HTTP with
//! `tests/mcp/python_client.py`, at 2025-11-25 (the client forced to
//! `initialize`) and at 2026-07-28.
//!
//! The interpreter is `$TOOLMARK_PYTHON`, else `.ci/venv/bin/python`. Without
//! `TOOLMARK_PYTHON` (and outside CI) the tests are reported ignored; when they run
//! without the interpreter they fail (`tests/support/external.rs`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn python() -> PathBuf {
    crate::external::python()
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
    let mut before = Vec::new();
    let url = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!(
                "the server exited before printing its address: {}",
                before.join("\n")
            );
        };
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_owned();
        }
        before.push(line);
    };
    // Keep draining the server's stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (server, url)
}

/// The 2025-11-25 session (the client forced to `initialize`).
#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_over_stdio() {
    let py = python();
    run_client(&py, "stdio", example().to_str().unwrap(), "legacy");
}

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_over_http() {
    let py = python();
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
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_2026_over_stdio() {
    let py = python();
    run_client(&py, "stdio", example().to_str().unwrap(), "2026");
}

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_2026_over_http() {
    let py = python();
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

/// Without the Python SDKs these tests are reported ignored, never `ok`.
#[test]
fn the_python_tests_are_reported_ignored_unless_python_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "python"),
        &[
            "python::python_sdk_over_stdio",
            "python::python_sdk_over_http",
            "python::python_sdk_2026_over_stdio",
            "python::python_sdk_2026_over_http",
        ],
    );
}
