//! The official MCP Python SDK (`mcp==2.3.0`, installed by `.ci/run` into
//! `.ci/venv`) drives `examples/mcp_server` over stdio and over HTTP with
//! `tests/mcp/python_client.py`.
//!
//! The interpreter is `$TOOLMARK_PYTHON`, else `.ci/venv/bin/python`. Without
//! `TOOLMARK_PYTHON` (and outside CI) the tests are reported ignored; when they run
//! without the interpreter they fail (`tests/support/external.rs`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    crate::external::python()
}

/// `target/<profile>/examples/mcp_server`, built by `cargo test` with the tests.
fn example() -> PathBuf {
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

fn run_client(py: &PathBuf, mode: &str, target: &str) {
    let out = Command::new(py)
        .arg(root().join("tests/mcp/python_client.py"))
        .arg(mode)
        .arg(target)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client ({mode}) failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}\n{stderr}");
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_over_stdio() {
    let py = python();
    run_client(&py, "stdio", example().to_str().unwrap());
}

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_over_http() {
    let py = python();
    let mut child = Command::new(example())
        .args(["--http", "127.0.0.1:0"])
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
    run_client(&py, "http", &url);
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
        ],
    );
}
