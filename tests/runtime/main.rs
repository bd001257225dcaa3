//! Integration tests of the runtime core: scopes (§5), calls (§6), queues and
//! deadlines. Time rules run on tokio's paused clock.

mod calls;
mod common;
mod escapes;
mod queues;
mod scopes;
