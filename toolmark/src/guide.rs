//! The guide: Toolmark topic by topic, one chapter per module. Every example is a
//! doctest that runs with the crate's tests (`cargo test -p toolmark --all-features
//! --doc`), so what you read here compiles and works as shown.
//!
//! Read [`tools`] first; then the chapters your app needs.
//!
//! | chapter | what it covers |
//! |---|---|
//! | [`tools`] | adding Toolmark, `#[tool]`, dynamic tools, registration, the manifest, calls and outcomes, `ToolContext`, events |
//! | [`confirmation`] | callers and modes, deferred and inline confirmation, the rules, policies and remembered decisions, **who approves** (a recipe per situation, headless MCP servers included) |
//! | [`security`] | sensitive paths, redaction and restore, what is guaranteed and what is not |
//! | [`scopes`] | scopes, scopes that start hidden, tools that show scopes, queues and deadlines |
//! | [`forms`] | forms, wizards and undo |
//! | [`mcp`] | serving MCP clients over stdio and HTTP (feature `mcp`) |
//! | [`agents`] | in-app agents: OpenAI, Anthropic and Gemini tool formats, the agent loop, rig |
//! | [`webmcp`] | tools in the app's own web page (browser agents) |
//! | [`instances`] | many instances: confirmation stores, Redis, sealing |
//! | [`testing`] | testing your tools, and running Toolmark's own suite |
//!
//! Measurements are in the repository's `BENCHMARKS.md`; a map of the code is in
//! its `ARCHITECTURE.md`.

#[doc = include_str!("../guide/tools.md")]
pub mod tools {}

#[doc = include_str!("../guide/confirmation.md")]
pub mod confirmation {}

#[doc = include_str!("../guide/security.md")]
pub mod security {}

#[doc = include_str!("../guide/scopes.md")]
pub mod scopes {}

#[doc = include_str!("../guide/forms.md")]
pub mod forms {}

#[doc = include_str!("../guide/mcp.md")]
pub mod mcp {}

#[doc = include_str!("../guide/agents.md")]
pub mod agents {}

#[doc = include_str!("../guide/webmcp.md")]
pub mod webmcp {}

#[doc = include_str!("../guide/instances.md")]
pub mod instances {}

#[doc = include_str!("../guide/testing.md")]
pub mod testing {}
