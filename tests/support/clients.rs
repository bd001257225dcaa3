// The real clients and services tests drive, and the environment variables that
// say where each one is. One table, read by two places:
//
// - `build.rs` (the suite package's build script, `include!`s this file) sets
//   `cfg(toolmark_client = "<name>")` for every client that is expected: all of
//   them when `CI` is set, otherwise each one whose variables are all set. A test
//   that needs a client carries
//   `#[cfg_attr(not(toolmark_client = "<name>"), ignore = "…")]`, so without it
//   libtest shows it as `ignored, <reason>` instead of `ok`.
// - `tests/support/external.rs` (the accessors tests call) `include!`s it too.
//
// A new client: add a row here, an accessor in external.rs, the install step in
// `.ci/run` (which exports the variable), and the attribute on its tests.
//
// (No `//!` docs and no `use`: this file is included into other files.)

/// A real client or service a test drives.
#[allow(dead_code)]
struct ExternalClient {
    /// The `cfg(toolmark_client = "…")` value.
    name: &'static str,
    /// The variables that say where it is: the client is expected when all are set
    /// (or when `CI` is set).
    vars: &'static [&'static str],
}

#[allow(dead_code)]
const EXTERNAL_CLIENTS: &[ExternalClient] = &[
    // redis-server: TOOLMARK_REDIS_URL=redis://127.0.0.1:PORT/
    ExternalClient {
        name: "redis",
        vars: &["TOOLMARK_REDIS_URL"],
    },
    // The venv with the official Python SDKs (mcp==2.3.0; openai, anthropic,
    // google-genai): TOOLMARK_PYTHON=.ci/venv/bin/python
    ExternalClient {
        name: "python",
        vars: &["TOOLMARK_PYTHON"],
    },
    // Node 22 (TypeScript SDK clients): TOOLMARK_NODE=.ci/node/node_modules/.bin/node
    ExternalClient {
        name: "node",
        vars: &["TOOLMARK_NODE"],
    },
    // The MCP conformance suite on Node: TOOLMARK_NODE and TOOLMARK_CONFORMANCE
    // (its dist/index.js).
    ExternalClient {
        name: "conformance",
        vars: &["TOOLMARK_NODE", "TOOLMARK_CONFORMANCE"],
    },
    // The MCP conformance suite's alpha with the 2026-07-28 server scenarios
    // (0.2.0-alpha.12, in .ci/node-next): TOOLMARK_NODE and TOOLMARK_CONFORMANCE_2026
    // (its dist/index.js).
    ExternalClient {
        name: "conformance-2026",
        vars: &["TOOLMARK_NODE", "TOOLMARK_CONFORMANCE_2026"],
    },
    // The official TypeScript SDK client (`@modelcontextprotocol/sdk` 1.x) and the
    // MCP Inspector CLI (`@modelcontextprotocol/inspector`) on Node 22:
    // TOOLMARK_NODE and TOOLMARK_NODE_MODULES (the node_modules holding both,
    // .ci/node/node_modules).
    ExternalClient {
        name: "typescript",
        vars: &["TOOLMARK_NODE", "TOOLMARK_NODE_MODULES"],
    },
    // A Chromium binary for browser tests: TOOLMARK_CHROMIUM=/usr/bin/chromium
    ExternalClient {
        name: "chromium",
        vars: &["TOOLMARK_CHROMIUM"],
    },
];
