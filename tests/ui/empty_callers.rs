#![allow(unused_variables)]

use toolmark::tool;

#[tool(callers = [])]
async fn list() {}

fn main() {}
