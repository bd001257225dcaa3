//! Tests that drive a real client or service (redis-server, the Python SDKs, Node
//! and the MCP conformance suite, Chromium): one mechanism, so that the test command
//! never says `ok` for a test that did not run.
//!
//! Such a test carries one attribute naming the client (the names and their
//! variables are the table in `tests/support/clients.rs`):
//!
//! ```ignore
//! #[cfg_attr(not(toolmark_client = "python"), ignore = "needs the Python SDKs: set TOOLMARK_PYTHON, or run .ci/run (runs every test)")]
//! #[test]
//! fn python_sdk_over_stdio() {
//!     let python = external::python(); // the interpreter; fails the test if missing
//!     …
//! }
//! ```
//!
//! The suite's build script sets `cfg(toolmark_client = "…")` for every client that
//! is expected: under CI (`CI` set) all of them, otherwise each one whose variables
//! are set. So:
//!
//! - on a fresh clone, `cargo test --workspace --all-features` lists such a test as
//!   `ignored, needs …` (and counts it in the summary's `ignored`), with the one
//!   command that runs everything: `.ci/run`, which installs the clients, exports
//!   their variables and runs the whole suite under `CI`;
//! - when it runs (its variables set, `CI` set, or `-- --include-ignored`), the
//!   accessors below hand it the client, and a client that is not there **fails**
//!   the test with what to install: nothing passes without having run.
//!
//! Shared by several test targets (`#[path]`): not every target uses every item.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

include!("clients.rs");

/// The repository root (the suite package's directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Called by every accessor: a test that reaches `client` while the suite was not
/// built expecting it, and was not run with `--ignored`/`--include-ignored`, lacks
/// its attribute. It fails here, so it can never pass without its client.
fn require(client: &str, built_expecting: bool) {
    let asked = std::env::args().any(|a| a == "--ignored" || a == "--include-ignored");
    assert!(
        built_expecting || asked,
        "this test drives {client} but is not marked: add \
         #[cfg_attr(not(toolmark_client = \"{client}\"), ignore = \"needs …: run .ci/run\")] \
         (tests/support/external.rs)"
    );
}

/// `$var` if set, else `default` under the repository root; it must exist.
fn path_of(var: &str, default: &str, what: &str) -> PathBuf {
    let path = match std::env::var_os(var) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root().join(default),
    };
    assert!(
        path.exists(),
        "{what} is not at {} (${var}): run .ci/run, which installs it and runs every test",
        path.display()
    );
    path
}

/// The Redis URL, `$TOOLMARK_REDIS_URL` (`.ci/run` starts a throwaway
/// redis-server and sets it).
pub fn redis_url() -> String {
    require("redis", cfg!(toolmark_client = "redis"));
    match std::env::var("TOOLMARK_REDIS_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "TOOLMARK_REDIS_URL is not set: start a redis-server and set \
             TOOLMARK_REDIS_URL=redis://127.0.0.1:PORT/, or run .ci/run (it starts one and \
             runs every test)"
        ),
    }
}

/// The Python with the official SDKs (`mcp==2.3.0`, `openai`, `anthropic`,
/// `google-genai`): `$TOOLMARK_PYTHON`, else `.ci/venv/bin/python`.
pub fn python() -> PathBuf {
    require("python", cfg!(toolmark_client = "python"));
    path_of(
        "TOOLMARK_PYTHON",
        ".ci/venv/bin/python",
        "the Python venv with the MCP and provider SDKs",
    )
}

/// Node 22: `$TOOLMARK_NODE`, else `.ci/node/node_modules/.bin/node`.
pub fn node() -> PathBuf {
    require("node", cfg!(toolmark_client = "node"));
    path_of(
        "TOOLMARK_NODE",
        ".ci/node/node_modules/.bin/node",
        "Node 22",
    )
}

/// Node and the MCP conformance suite's entry point: `$TOOLMARK_NODE` (else
/// `.ci/node/node_modules/.bin/node`) and `$TOOLMARK_CONFORMANCE` (else
/// `.ci/node/node_modules/@modelcontextprotocol/conformance/dist/index.js`).
pub fn conformance() -> (PathBuf, PathBuf) {
    require("conformance", cfg!(toolmark_client = "conformance"));
    let node = path_of(
        "TOOLMARK_NODE",
        ".ci/node/node_modules/.bin/node",
        "Node 22",
    );
    let suite = path_of(
        "TOOLMARK_CONFORMANCE",
        ".ci/node/node_modules/@modelcontextprotocol/conformance/dist/index.js",
        "the MCP conformance suite",
    );
    (node, suite)
}

/// Node and the MCP conformance suite's alpha with the 2026-07-28 scenarios:
/// `$TOOLMARK_NODE` (else `.ci/node/node_modules/.bin/node`) and
/// `$TOOLMARK_CONFORMANCE_2026` (else
/// `.ci/node-next/node_modules/@modelcontextprotocol/conformance/dist/index.js`).
pub fn conformance_2026() -> (PathBuf, PathBuf) {
    require(
        "conformance-2026",
        cfg!(toolmark_client = "conformance-2026"),
    );
    let node = path_of(
        "TOOLMARK_NODE",
        ".ci/node/node_modules/.bin/node",
        "Node 22",
    );
    let suite = path_of(
        "TOOLMARK_CONFORMANCE_2026",
        ".ci/node-next/node_modules/@modelcontextprotocol/conformance/dist/index.js",
        "the MCP conformance suite 0.2.0-alpha.12 (2026-07-28 scenarios)",
    );
    (node, suite)
}

/// Node and the node_modules holding the TypeScript SDK (`@modelcontextprotocol/sdk`
/// 1.x) and the MCP Inspector CLI: `$TOOLMARK_NODE` (else
/// `.ci/node/node_modules/.bin/node`) and `$TOOLMARK_NODE_MODULES` (else
/// `.ci/node/node_modules`).
pub fn typescript() -> (PathBuf, PathBuf) {
    require("typescript", cfg!(toolmark_client = "typescript"));
    let node = path_of(
        "TOOLMARK_NODE",
        ".ci/node/node_modules/.bin/node",
        "Node 22",
    );
    let modules = path_of(
        "TOOLMARK_NODE_MODULES",
        ".ci/node/node_modules",
        "the node_modules with the TypeScript SDK and the Inspector",
    );
    for (file, what) in [
        (
            "@modelcontextprotocol/sdk/package.json",
            "the MCP TypeScript SDK",
        ),
        (
            "@modelcontextprotocol/inspector/clients/cli/build/index.js",
            "the MCP Inspector CLI",
        ),
    ] {
        assert!(
            modules.join(file).exists(),
            "{what} is not in {} ($TOOLMARK_NODE_MODULES): run .ci/run, which installs it \
             and runs every test",
            modules.display()
        );
    }
    (node, modules)
}

/// A Chromium binary: `$TOOLMARK_CHROMIUM`, else `chromium` on the `PATH`.
pub fn chromium() -> PathBuf {
    require("chromium", cfg!(toolmark_client = "chromium"));
    if let Some(p) = std::env::var_os("TOOLMARK_CHROMIUM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.exists(),
            "Chromium is not at {} ($TOOLMARK_CHROMIUM): run .ci/run",
            p.display()
        );
        return p;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.exists())
        .expect("no chromium on the PATH ($TOOLMARK_CHROMIUM): run .ci/run")
}

/// The tests of this test binary that libtest reports as ignored (it lists them;
/// nothing runs).
pub fn ignored_tests() -> Vec<String> {
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--list", "--ignored", "--format", "terse"])
        .output()
        .expect("the test binary lists its tests");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Checks the mechanism on this binary: each of `tests` (full test names) is
/// reported `ignored` exactly when the suite was built without its client
/// (`expected`: `cfg!(toolmark_client = "…")`).
pub fn assert_ignored_unless_expected(expected: bool, tests: &[&str]) {
    let ignored = ignored_tests();
    for test in tests {
        let is_ignored = ignored.iter().any(|t| t == test);
        assert_eq!(
            is_ignored,
            !expected,
            "{test}: ignored = {is_ignored}, but its client is {}expected (ignored: {ignored:?})",
            if expected { "" } else { "not " }
        );
    }
}
