//! The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.16`,
//! installed by `.ci/run` into `.ci/node` with the Node 22 it needs) against
//! `examples/mcp_conformance`, with `tests/mcp/conformance-expected-failures.yml`.
//!
//! Node is `$TOOLMARK_NODE`, else `.ci/node/node_modules/.bin/node`; the suite is
//! `$TOOLMARK_CONFORMANCE`, else `.ci/node/node_modules/@modelcontextprotocol/conformance/dist/index.js`.
//! Without those variables (and outside CI) the test is reported ignored; when it
//! runs without Node or the suite it fails (`tests/support/external.rs`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `examples/mcp_conformance` on a free loopback port, killed when dropped.
pub(crate) struct Server {
    child: Child,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl Server {
    pub(crate) fn start() -> Self {
        let exe = std::env::current_exe().unwrap();
        let bin = exe
            .parent()
            .and_then(|d| d.parent())
            .unwrap()
            .join("examples/mcp_conformance");
        assert!(bin.exists(), "{} is missing", bin.display());
        let mut child = Command::new(bin)
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the server printed its address")
                .unwrap();
            if let Some(u) = line.strip_prefix("listening on ") {
                break u.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[cfg_attr(
    not(toolmark_client = "conformance"),
    ignore = "needs Node and the MCP conformance suite: set TOOLMARK_NODE and TOOLMARK_CONFORMANCE, or run .ci/run (runs every test)"
)]
fn the_conformance_suite_passes_with_its_expected_failures() {
    let (node, suite) = crate::external::conformance();
    let server = Server::start();
    let url = server.url.clone();
    let out = Command::new(node)
        .arg(suite)
        .args(["server", "--url", &url, "--expected-failures"])
        .arg(root().join("tests/mcp/conformance-expected-failures.yml"))
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .find("=== SUMMARY ===")
        .map_or(&stdout[..], |i| &stdout[i..]);
    assert!(
        out.status.success(),
        "conformance failed:\n{summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for scenario in [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "logging-set-level",
        "tools-call-with-logging",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "elicitation-sep1330-enums",
        "tools-call-sampling",
        "dns-rebinding-protection",
        "resources-read-binary",
        "resources-subscribe",
        "prompts-get-embedded-resource",
        "completion-complete",
    ] {
        assert!(
            summary.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{summary}"
        );
    }
}

/// Without Node and the suite this test is reported ignored, never `ok`.
#[test]
fn the_conformance_test_is_reported_ignored_unless_the_suite_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "conformance"),
        &["conformance::the_conformance_suite_passes_with_its_expected_failures"],
    );
}
