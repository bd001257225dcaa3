//! What a tool is and the table of tools: [`ToolSpec`](crate::ToolSpec),
//! [`Effect`](crate::Effect) and [`ToolInfo`](crate::ToolInfo) (`spec`), the registry
//! and every check made at registration (`registry`), registering every `#[tool]` fn
//! the binary links (`collect`), summary templates (`summary`) and the record the
//! macro emits (`private`, reached as `::toolmark::__private`), and the one rewrite
//! that makes every exported schema standard JSON Schema 2020-12 (`schema`).
//!
//! Everything a call needs is computed here once, at registration. This module never
//! runs a tool or waits on a queue: that is the call pipeline's job.

pub(crate) mod collect;
pub(crate) mod param_headers;
pub(crate) mod private;
pub(crate) mod registry;
pub(crate) mod schema;
pub(crate) mod spec;
pub(crate) mod summary;
