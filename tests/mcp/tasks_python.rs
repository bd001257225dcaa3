//! Tasks whose tools ask their client, a panicking task, a tool's error in a
//! task and per-tool task support, driven by the official Python SDK 2.3.0
//! (`tests/mcp/python_tasks_2026.py`) against `examples/mcp_conformance` over
//! HTTP on MCP 2026-07-28.

#[test]
#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn python_sdk_answers_a_tasks_questions_and_sees_how_tasks_end() {
    crate::python_2026::run_against_the_fixture("python_tasks_2026.py");
}

/// Without Python this test is reported ignored, never `ok`.
#[test]
fn the_python_tasks_test_is_reported_ignored_unless_python_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "python"),
        &["tasks_python::python_sdk_answers_a_tasks_questions_and_sees_how_tasks_end"],
    );
}
