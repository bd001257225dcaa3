//! The MCP conformance suite's 2026-07-28 server scenarios
//! (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, installed by `.ci/run` into
//! `.ci/node-next`, run on the Node 22 of `.ci/node`) against
//! `examples/mcp_conformance` over Streamable HTTP, on the stateless 2026-07-28
//! wire (no `initialize`, no session: `_meta` in every request), with
//! `tests/mcp/conformance-2026-expected-failures.yml`.
//!
//! Node is `$TOOLMARK_NODE`, else `.ci/node/node_modules/.bin/node`; the suite is
//! `$TOOLMARK_CONFORMANCE_2026`, else
//! `.ci/node-next/node_modules/@modelcontextprotocol/conformance/dist/index.js`.
//! Without those variables (and outside CI) the test is reported ignored; when it
//! runs without Node or the suite it fails (`tests/support/external.rs`).
//!
//! The suite runs every server scenario that applies to 2026-07-28 (`--suite all
//! --spec-version 2026-07-28`: the required ones and the pending ones) and, beside
//! it, the Tasks extension's scenarios one by one (`--force`: an extension is not
//! on the spec's timeline). A scenario (or one check of it) that fails, or warns, is
//! allowed only when the expected-failures file names it with its reason, and the
//! suite fails the run when a listed one starts passing; the file and the
//! summaries are printed in the test's output.

use std::process::Command;

/// The Tasks extension's scenarios: not on the spec's timeline, so the suite runs
/// them only one by one, with `--force`.
const TASKS_SCENARIOS: &[&str] = &[
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

#[test]
#[cfg_attr(
    not(toolmark_client = "conformance-2026"),
    ignore = "needs Node and the MCP conformance suite 0.2.0-alpha.12: set TOOLMARK_NODE and TOOLMARK_CONFORMANCE_2026, or run .ci/run (runs every test)"
)]
fn the_2026_07_28_scenarios_pass_with_their_expected_failures() {
    let (node, suite) = crate::external::conformance_2026();
    let server = crate::conformance::Server::start();
    let expected =
        crate::conformance::root().join("tests/mcp/conformance-2026-expected-failures.yml");
    // The expected failures and their reasons, visible in the test's output.
    println!(
        "expected failures ({}):\n{}",
        expected.display(),
        std::fs::read_to_string(&expected).unwrap()
    );
    let run = |args: &[&str]| {
        let out = Command::new(&node)
            .arg(&suite)
            .args([
                "server",
                "--url",
                &server.url,
                "--spec-version",
                "2026-07-28",
            ])
            .args(args)
            .arg("--expected-failures")
            .arg(&expected)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let summary = stdout
            .find("=== SUMMARY ===")
            .map_or(&stdout[..], |i| &stdout[i..])
            .to_owned();
        let failed = (!out.status.success()).then(|| {
            format!(
                "the 2026-07-28 conformance scenarios failed ({args:?}):\n{summary}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (summary, failed)
    };
    // Every server scenario on the 2026-07-28 timeline (the required ones and the
    // pending ones) and, beside it, the Tasks extension's one after another (they
    // wait on tasks that work for seconds).
    let (main, tasks) = std::thread::scope(|s| {
        let tasks = s.spawn(|| {
            TASKS_SCENARIOS
                .iter()
                .map(|scenario| run(&["--scenario", scenario, "--force"]))
                .collect::<Vec<_>>()
        });
        (run(&["--suite", "all"]), tasks.join().unwrap())
    });
    let results: Vec<_> = std::iter::once(main).chain(tasks).collect();
    for (summary, _) in &results {
        println!("{summary}");
    }
    let failures: Vec<&String> = results.iter().filter_map(|(_, f)| f.as_ref()).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    let summary = &results[0].0;
    for scenario in [
        "server-stateless",
        "tools-list",
        "tools-call-error",
        "dns-rebinding-protection",
        "http-header-validation",
        "json-schema-2020-12",
        "input-required-result-basic-sampling",
        "input-required-result-request-state",
        "input-required-result-multi-round",
        "input-required-result-tampered-state",
        "input-required-result-capability-check",
        "input-required-result-non-tool-request",
        "http-custom-header-server-validation",
        "resources-templates-read",
        "prompts-get-with-args",
        "completion-complete",
        "caching",
    ] {
        assert!(
            summary.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{summary}"
        );
    }
    assert_eq!(results.len(), 1 + TASKS_SCENARIOS.len());
}

/// Without Node and the suite this test is reported ignored, never `ok`.
#[test]
fn the_2026_conformance_test_is_reported_ignored_unless_the_suite_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "conformance-2026"),
        &["conformance_2026::the_2026_07_28_scenarios_pass_with_their_expected_failures"],
    );
}
