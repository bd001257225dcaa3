#![allow(unused_variables)]

use toolmark::tool;

#[tool(callers = "mcp")]
async fn list() {}

fn main() {}
