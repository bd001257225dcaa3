//! WebMCP (feature `webmcp`): the page's endpoints in process (`http.rs`: origins,
//! tokens, answers, bounds, the stream) and in a real Chromium (`browser.rs`,
//! through Playwright; the example app and the test app in `app.rs`).

#[allow(unreachable_pub)]
mod app;
mod browser;
// `external.rs` allows its own dead code and `pub` items.
#[path = "../support/external.rs"]
mod external;
mod http;
#[path = "../support/logs.rs"]
mod logs;

/// The example, compiled here for its `app()`.
#[path = "../../examples/webmcp_app.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;
