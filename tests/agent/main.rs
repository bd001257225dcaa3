//! The in-app agent adapter (`toolmark::agent`): tool lists and tool-call results
//! per provider (golden files), the name mapping (property test), the runner's
//! rules, the official Python SDKs' types, and the OpenTelemetry GenAI spans.

#[path = "../support/canary.rs"]
mod canary;
mod common;
mod example;
#[path = "../support/external.rs"]
mod external;
mod golden;
mod hardening;
#[path = "../support/logs.rs"]
mod logs;
mod names;
mod otel;
#[cfg(feature = "rig")]
mod rig;
mod run;
mod sdk;
