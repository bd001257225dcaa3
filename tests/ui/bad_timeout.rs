#![allow(unused_variables)]

use toolmark::tool;

#[tool(timeout = "30 parsecs")]
async fn list() {}

fn main() {}
