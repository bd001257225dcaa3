#![allow(unused_variables)]

use toolmark::tool;

#[tool(nmae = "x", scope = "a b", read_only, consequential, callers = [robot])]
async fn list(a: &str) {}

fn main() {}
