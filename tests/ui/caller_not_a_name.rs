#![allow(unused_variables)]

use toolmark::tool;

#[tool(callers = [inapp, "mcp"])]
async fn list() {}

fn main() {}
