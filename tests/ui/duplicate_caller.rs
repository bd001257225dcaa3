#![allow(unused_variables)]

use toolmark::tool;

#[tool(callers = [mcp, inapp, mcp])]
async fn list() {}

fn main() {}
