//! Integration tests of the runtime core: scopes, calls, the manifest, queues and
//! deadlines. Time rules run on tokio's paused clock.

mod calls;
mod common;
mod escapes;
mod manifest;
mod queues;
mod scopes;
