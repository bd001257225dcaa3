//! The TypeScript side of MCP: the official TypeScript SDK client
//! (`@modelcontextprotocol/sdk` 1.x, `tests/mcp/ts_client.cjs`) and the MCP
//! Inspector CLI (`@modelcontextprotocol/inspector`), both installed by `.ci/run`
//! into `.ci/node`, against `examples/mcp_server` over stdio and HTTP, and the
//! Inspector against `examples/mcp_many` listing 10,000 tools.
//!
//! Node is `$TOOLMARK_NODE`, else `.ci/node/node_modules/.bin/node`; the packages
//! are in `$TOOLMARK_NODE_MODULES`, else `.ci/node/node_modules`. Without both
//! variables (and outside CI) the tests are reported ignored; when they run
//! without the client they fail (`tests/support/external.rs`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Node and the node_modules holding the SDK and the Inspector.
fn node() -> (PathBuf, PathBuf) {
    crate::external::typescript()
}

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --features mcp` (it builds the examples)",
        bin.display()
    );
    bin
}

/// A server child killed when the test ends, however it ends.
struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `bin args… --http 127.0.0.1:0` and read its URL.
fn http_server(bin: &Path, args: &[&str]) -> Server {
    let mut child = Command::new(bin)
        .args(args)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server(child, url)
}

fn ts_client(node: &Path, modules: &Path, args: &[&str]) {
    let out = Command::new(node)
        .arg(root().join("tests/mcp/ts_client.cjs"))
        .arg(modules)
        .args(args)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "TypeScript SDK client ({args:?}):\n{stdout}\n{stderr}"
    );
}

#[cfg_attr(
    not(toolmark_client = "typescript"),
    ignore = "needs Node 22 with the MCP TypeScript SDK and Inspector: set TOOLMARK_NODE and TOOLMARK_NODE_MODULES, or run .ci/run (runs every test)"
)]
#[test]
fn typescript_sdk_over_stdio() {
    let (node, modules) = node();
    let bin = example("mcp_server");
    ts_client(&node, &modules, &["stdio", bin.to_str().unwrap()]);
}

#[cfg_attr(
    not(toolmark_client = "typescript"),
    ignore = "needs Node 22 with the MCP TypeScript SDK and Inspector: set TOOLMARK_NODE and TOOLMARK_NODE_MODULES, or run .ci/run (runs every test)"
)]
#[test]
fn typescript_sdk_over_http() {
    let (node, modules) = node();
    let server = http_server(&example("mcp_server"), &[]);
    ts_client(&node, &modules, &["http", &server.1]);
}

/// One Inspector CLI run: `target` is the server command or URL. Returns its
/// JSON output and its stderr.
fn inspector(node: &Path, modules: &Path, target: &[&str], method: &[&str]) -> (Value, String) {
    let home = std::env::temp_dir().join(format!("toolmark-inspector-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(node)
        .arg(modules.join("@modelcontextprotocol/inspector/clients/cli/build/index.js"))
        .args(target)
        .args(method)
        .env("HOME", &home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .stdin(Stdio::null())
        .output()
        .expect("the Inspector runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("Inspector output is not JSON ({e}):\n{stdout}\n{stderr}"));
    (json, stderr)
}

fn inspector_checks(node: &Path, modules: &Path, target: &[&str]) {
    let (list, stderr) = inspector(node, modules, target, &["--method", "tools/list"]);
    assert!(
        !stderr.contains("unknown format"),
        "ajv warned about the schemas:\n{stderr}"
    );
    let tools = list["tools"].as_array().expect("a tools list");
    assert!(tools.len() >= 5, "{list}");
    for t in tools {
        assert!(t["title"].as_str().is_some_and(|s| !s.is_empty()), "{t}");
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(t["annotations"][hint].is_boolean(), "{hint} of {t}");
        }
    }
    // A tool with an output schema failing: an error result the Inspector shows,
    // not "data must have required property 'result'".
    for (args, code) in [
        (&["--tool-arg", "text=  "][..], "tool_error"),
        (&["--tool-arg", "txt=x"][..], "invalid"),
    ] {
        let mut method = vec!["--method", "tools/call", "--tool-name", "notes.add"];
        method.extend_from_slice(args);
        let (r, stderr) = inspector(node, modules, target, &method);
        assert!(
            r.get("error").is_none(),
            "the Inspector failed the call: {r}\n{stderr}"
        );
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&format!("{code}: ")), "{r}");
        assert_eq!(r["_meta"]["toolmark/error"]["code"], code, "{r}");
    }
    let (r, _) = inspector(
        node,
        modules,
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "notes.add",
            "--tool-arg",
            "text=milk",
        ],
    );
    assert_eq!(r["structuredContent"]["result"], 1, "{r}");
}

#[cfg_attr(
    not(toolmark_client = "typescript"),
    ignore = "needs Node 22 with the MCP TypeScript SDK and Inspector: set TOOLMARK_NODE and TOOLMARK_NODE_MODULES, or run .ci/run (runs every test)"
)]
#[test]
fn mcp_inspector_cli_over_stdio() {
    let (node, modules) = node();
    let bin = example("mcp_server");
    inspector_checks(&node, &modules, &[bin.to_str().unwrap()]);
}

#[cfg_attr(
    not(toolmark_client = "typescript"),
    ignore = "needs Node 22 with the MCP TypeScript SDK and Inspector: set TOOLMARK_NODE and TOOLMARK_NODE_MODULES, or run .ci/run (runs every test)"
)]
#[test]
fn mcp_inspector_cli_over_http() {
    let (node, modules) = node();
    let server = http_server(&example("mcp_server"), &[]);
    inspector_checks(&node, &modules, &[&server.1, "--transport", "http"]);
}

/// 10,000 tools list whole in the Inspector (it follows at most 64 pages), and
/// one of them runs.
#[cfg_attr(
    not(toolmark_client = "typescript"),
    ignore = "needs Node 22 with the MCP TypeScript SDK and Inspector: set TOOLMARK_NODE and TOOLMARK_NODE_MODULES, or run .ci/run (runs every test)"
)]
#[test]
fn mcp_inspector_lists_10_000_tools() {
    let (node, modules) = node();
    let server = http_server(&example("mcp_many"), &["--tools", "10000"]);
    let target = [server.1.as_str(), "--transport", "http"];
    let (list, stderr) = inspector(&node, &modules, &target, &["--method", "tools/list"]);
    let tools = list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no list: {list}\n{stderr}"));
    assert_eq!(tools.len(), 10_000);
    assert_eq!(tools[9_999]["name"], "bulk.tool_09999");
    let (r, _) = inspector(
        &node,
        &modules,
        &target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "bulk.tool_04242",
            "--tool-arg",
            "a=40",
            "b=2",
        ],
    );
    assert_eq!(r["structuredContent"]["sum"], 42, "{r}");
}

/// Without Node and the TypeScript packages these tests are reported ignored,
/// never `ok`.
#[test]
fn the_typescript_tests_are_reported_ignored_unless_typescript_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "typescript"),
        &[
            "typescript::typescript_sdk_over_stdio",
            "typescript::typescript_sdk_over_http",
            "typescript::mcp_inspector_cli_over_stdio",
            "typescript::mcp_inspector_cli_over_http",
            "typescript::mcp_inspector_lists_10_000_tools",
        ],
    );
}
