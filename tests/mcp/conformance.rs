//! The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.16`,
//! installed by `.ci/run` into `.ci/node` with the Node 22 it needs) against
//! `examples/mcp_conformance`, with `tests/mcp/conformance-expected-failures.yml`.
//!
//! Node is `$TOOLMARK_NODE`, else `.ci/node/node_modules/.bin/node`; the suite is
//! `$TOOLMARK_CONFORMANCE`, else `.ci/node/node_modules/@modelcontextprotocol/conformance/dist/index.js`.
//! Without them the test fails when `CI` is set and is skipped, loudly, otherwise.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tool(var: &str, default: &str) -> Option<PathBuf> {
    let p = std::env::var_os(var).map_or_else(|| root().join(default), PathBuf::from);
    if p.exists() {
        return Some(p);
    }
    let msg = format!("{} not found (${var}); run .ci/run", p.display());
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

#[test]
fn the_conformance_suite_passes_with_its_expected_failures() {
    let Some(node) = tool("TOOLMARK_NODE", ".ci/node/node_modules/.bin/node") else {
        return;
    };
    let Some(suite) = tool(
        "TOOLMARK_CONFORMANCE",
        ".ci/node/node_modules/@modelcontextprotocol/conformance/dist/index.js",
    ) else {
        return;
    };
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
    let out = Command::new(node)
        .arg(suite)
        .args(["server", "--url", &url, "--expected-failures"])
        .arg(root().join("tests/mcp/conformance-expected-failures.yml"))
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
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
    ] {
        assert!(
            summary.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{summary}"
        );
    }
}
