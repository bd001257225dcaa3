//! A tool asking its client on MCP 2026-07-28 (`ctx.sample` and `ctx.elicit` in
//! `input_required` rounds, `-32021` for a capability the request did not declare),
//! driven by the official Python SDK 2.3.0 (`tests/mcp/python_asks_2026.py`)
//! against `examples/mcp_conformance` over HTTP.

use std::process::Command;

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_answers_a_tools_questions_on_2026() {
    run_against_the_fixture("python_asks_2026.py");
}

/// Without Python this test is reported ignored, never `ok`.
#[test]
fn the_python_2026_test_is_reported_ignored_unless_python_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "python"),
        &["python_2026::python_sdk_answers_a_tools_questions_on_2026"],
    );
}

/// Run `tests/mcp/<script>` with the Python SDK against `examples/mcp_conformance`
/// over HTTP; it must print `all checks passed`.
pub(crate) fn run_against_the_fixture(script: &str) {
    let python = crate::external::python();
    let server = crate::conformance::Server::start();
    let out = Command::new(python)
        .arg(crate::conformance::root().join("tests/mcp").join(script))
        .arg(&server.url)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}\n{stderr}");
}
